# vLLM 0.33.0 against libattn on random CPU batches: the multimodal PrefixLM, R-SWA and per-request
# causal fields of TRITON_ATTN and FLASH_ATTN (mm_prefix_range_tensor, mm_prefix_query_range_tensor,
# rswa_prefix_lens, rswa_window, rswa_window_tensor, causal). Exits 1 on a mismatch. Run with the
# vLLM venv python, ATTN_LIBRARY=<build>/libattn.so.1, from anywhere. The model flags are set on
# the stand-in model config vLLM reads them from (model_arch_config.rswa_window, is_mm_prefix_lm).
import sys, os, importlib, numpy as np
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "bindings", "python")); sys.path.insert(0, here)
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
import torch, libattn
import vllm_compare as vc_mod
from vllm.config import set_current_vllm_config
from vllm.v1.kv_cache_interface import FullAttentionSpec
from vllm.v1.attention.backend import CommonAttentionMetadata as CAM
env = vc_mod.vllm_env(1)
cfgs = vc_mod.VllmConfigs(env)
vc = cfgs.get(256, 8192, 0)
arch = vc.model_config.model_arch_config
try:
    arch.rswa_window = 64; arch.is_mm_prefix_lm = True
except Exception as e:
    object.__setattr__(arch, "rswa_window", 64); object.__setattr__(arch, "is_mm_prefix_lm", True)
print("model", vc.model_config.rswa_window, vc.model_config.is_mm_prefix_lm)
lib = libattn.load(os.environ["ATTN_LIBRARY"])
rng = np.random.default_rng(0)
mismatch = 0; nonnone = {}
for trial in range(200):
    n = int(rng.integers(1, 6)); bs = 16
    q = rng.integers(1, 24, n).astype(np.int32); ctx = rng.integers(0, 80, n).astype(np.int32)
    seq = (q + ctx).astype(np.int32); qsl = np.concatenate([[0], np.cumsum(q)]).astype(np.int32)
    width = int((seq.max() + bs - 1) // bs) + 1
    bt = np.arange(n * width, dtype=np.int32).reshape(n, width)
    slots = np.arange(qsl[-1], dtype=np.int64)
    d = {}
    for r in range(n):
        if rng.random() < 0.6:
            k = int(rng.integers(1, 4)); lst = []
            for _ in range(k):
                s = int(rng.integers(0, int(seq[r]))); e = int(rng.integers(s, int(seq[r]) + 5)); lst.append((s, e))
            d[r] = lst
    rswa = rng.integers(0, 50, n).astype(np.int32)
    causal = rng.integers(0, 2, n).astype(np.int32)
    t = torch.from_numpy
    vcm = CAM(query_start_loc=t(qsl), query_start_loc_cpu=t(qsl), seq_lens=t(seq), num_reqs=n,
              num_actual_tokens=int(qsl[-1]), max_query_len=int(q.max()), max_seq_len=int(seq.max()),
              block_table_tensor=t(bt), slot_mapping=t(slots), causal=t(causal),
              seq_lens_cpu_upper_bound=t(seq), mm_req_doc_ranges=d, rswa_prefix_lens=t(rswa))
    common = libattn.CommonMetadata(query_start_loc=qsl, seq_lens=seq, block_table=bt, slot_mapping=slots,
                                    query_start_loc_cpu=qsl, num_reqs=n, num_actual_tokens=int(qsl[-1]),
                                    max_query_len=int(q.max()), max_seq_len=int(seq.max()),
                                    seq_lens_cpu_upper_bound=seq, mm_req_doc_ranges=d,
                                    rswa_prefix_lens=rswa, causal_per_request=causal)
    spec = FullAttentionSpec(block_size=bs, num_kv_heads=8, head_size=128, dtype=torch.bfloat16)
    for backend, fields in (("TRITON_ATTN", ["mm_prefix_range_tensor", "rswa_prefix_lens", "rswa_window", "causal"]),
                            ("FLASH_ATTN", ["mm_prefix_query_range_tensor", "rswa_prefix_lens", "rswa_window", "rswa_window_tensor", "causal"])):
        with set_current_vllm_config(vc):
            mod, cls = vc_mod.VLLM_BUILDERS[backend]
            vb = getattr(importlib.import_module(mod), cls)(spec, ["model.layers.0.self_attn"], vc, torch.device("cpu"))
            v = vb.build(0, vcm)
        cfg = libattn.BuilderConfig(256, 8192, 131072, 32, cudagraph_mode=0, flash_attn_version=2,
                                    rswa_window=64, is_mm_prefix_lm=1, num_gpu_blocks=4096)
        with lib.builder(backend, libattn.KvCacheSpec(bs, 8, 128), cfg) as lb:
            md = lb.build(common).to_dict() if hasattr(lb.build(common), "to_dict") else lb.build(common)
            for f in fields:
                a = getattr(v, f); b = md[f]
                a = None if a is None else (a.tolist() if isinstance(a, torch.Tensor) else a)
                b = None if b is None else (np.asarray(b).tolist() if not isinstance(b, (int, bool)) else b)
                nonnone[(backend, f)] = nonnone.get((backend, f), 0) + (a is not None)
                if a != b:
                    mismatch += 1
                    if mismatch < 5: print("MISMATCH", backend, f, trial, a, b, d, q.tolist(), seq.tolist())
print("mismatches", mismatch, "non-None comparisons", nonnone)
sys.exit(1 if mismatch or min(nonnone.values()) == 0 else 0)
