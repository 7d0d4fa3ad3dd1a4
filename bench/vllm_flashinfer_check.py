#!/usr/bin/env python3
"""FLASHINFER against vLLM 0.33.0's own FlashInferMetadataBuilder, on CPU (a manual check, not a
ctest: it needs the vLLM virtual environment).

    VLLM_TARGET_DEVICE=cpu <vllm-venv>/bin/python bench/vllm_flashinfer_check.py . build-host/libattn.so.1

For compute capabilities 8.0, 8.9, 9.0, 10.0, 12.0 x speculative tokens {0, 2} x use_non_causal x
KV cache {auto, fp8, fp8_e5m2} x use_trtllm_attention {None, False, True} x adaptive
verification, it compares get_cudagraph_support, reorder_batch_threshold and, on five batches
(single-token decodes, uniform spec decodes, ragged decodes, a padded uniform batch, a mixed
batch), the split, q_data_type_prefill/decode, kv_cache_layout, which prefill/decode dataclass,
TRTLLMPrefill's and FlashInferTrtllmAPIDecode's fields (the XQA mask included) and the arguments vLLM passes to the
prefill wrapper's plan() and to fast_plan_decode(). Prints one line per comparison and
"FAILS n"; exits 1 when n > 0.

Only what does not compute metadata is replaced, for the duration of the run:
  - the platform's get_device_capability (the CPU platform has none) returns the case's;
  - vllm.utils.flashinfer.has_nvidia_artifactory (a network probe) returns True, and
    supports_trtllm_attention's functools cache is cleared per case;
  - get_per_layer_parameters (reads instantiated model layers) returns full attention, no soft
    cap, scale 1/sqrt(128), no sinks;
  - _copy_page_indices_kernel (a Triton kernel; no Triton on CPU) is a Python loop;
  - the FlashInfer wrappers (their plan() JIT-compiles CUDA code) record plan()'s arguments,
    and fast_plan_decode records its arguments.
Not covered: DCP (needs a process group), NVFP4, sinks.
"""
import os, sys, json, tempfile, math, types, warnings
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu"); os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
warnings.filterwarnings("ignore")
import numpy as np, torch
ROOT = sys.argv[1]; LIB = sys.argv[2]
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
import libattn
from vllm.config import ModelConfig, DeviceConfig, SchedulerConfig, VllmConfig, set_current_vllm_config
from vllm.platforms import current_platform
from vllm.platforms.interface import DeviceCapability
import vllm.utils.flashinfer as vfi
import vllm.v1.attention.backends.flashinfer as fi
from vllm.v1.attention.backends.utils import PerLayerParameters
from vllm.v1.kv_cache_interface import FullAttentionSpec
from vllm.v1.attention.backend import CommonAttentionMetadata

d = tempfile.mkdtemp()
json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
           "num_hidden_layers": 2, "intermediate_size": 11008, "vocab_size": 32000,
           "max_position_embeddings": 4096, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-5},
          open(os.path.join(d, "config.json"), "w"))
model = ModelConfig(model=d, skip_tokenizer_init=True, max_model_len=4096, dtype="bfloat16")
P = type(current_platform)
CAP = [None]
P.get_device_capability = classmethod(lambda cls, device_id=0: CAP[0])
vfi.has_nvidia_artifactory = lambda: True
fi.get_per_layer_parameters = lambda vc, names, cls_: {n: PerLayerParameters(-1, None, 1 / math.sqrt(128), False) for n in names}

class _Copy:
    def __getitem__(self, grid):
        def run(indices, bt, stride, indptr, BLOCK_SIZE=1024):
            for r in range(grid[0]):
                a, b = int(indptr[r]), int(indptr[r + 1])
                indices[a:b] = bt[r, : b - a]
        return run
fi._copy_page_indices_kernel = _Copy()
PLANS = {}
class _Rec(fi.BatchPrefillWithPagedKVCacheWrapper):
    def __init__(self, kind): self.kind = kind
    def plan(self, **kw): PLANS[self.kind] = kw
fi.FlashInferMetadataBuilder._get_prefill_wrapper = lambda self, causal=True: _Rec("prefill")
fi.FlashInferMetadataBuilder._get_decode_wrapper = lambda self, bs, use_cudagraph=False, q_len_per_req=1: _Rec("decode")
def _fast_plan(wrapper, **kw):
    PLANS["decode"] = kw
fi.fast_plan_decode = _fast_plan
lib = libattn.Library(LIB)
fails = 0
TB = []
def cmp(label, a, b):
    global fails
    ok = a == b
    if not ok: fails += 1
    print(("OK  " if ok else "BAD ") + label, a, b)

def make_vc(spec_tokens, non_causal, adaptive, kv_dtype, trtllm):
    vc = VllmConfig(model_config=model, device_config=DeviceConfig(device="cpu"),
                    scheduler_config=SchedulerConfig(max_num_seqs=16, max_num_batched_tokens=2048,
                                                     max_model_len=4096, is_encoder_decoder=False))
    if spec_tokens:
        object.__setattr__(vc, "speculative_config", types.SimpleNamespace(
            num_speculative_tokens=spec_tokens, parallel_drafting=False,
            enable_adaptive_verification=adaptive))
    vc.attention_config.use_non_causal = non_causal
    vc.attention_config.use_trtllm_attention = trtllm
    vc.cache_config.cache_dtype = kv_dtype
    vc.cache_config.kv_cache_layout = "LBHNC" if CAP[0] and CAP[0].major == 10 else "LBNHC"
    return vc

DT = {"auto": 0, "fp8": 4, "fp8_e5m2": 5}
TD = {torch.bfloat16: 2, torch.float8_e4m3fn: 4, torch.float8_e5m2: 5}
for cap in [(8, 0), (8, 9), (9, 0), (10, 0), (12, 0)]:
  for spec_tokens in (0, 2):
    for non_causal in (False, True):
      for kv_dtype in ("auto", "fp8", "fp8_e5m2"):
        for trtllm in (None, False, True):
          for adaptive in ((False, True) if spec_tokens else (False,)):
            CAP[0] = DeviceCapability(*cap)
            vfi.supports_trtllm_attention.cache_clear()
            vc = make_vc(spec_tokens, non_causal, adaptive, kv_dtype, trtllm)
            from vllm.v1.kv_cache_interface import KVQuantMode
            kw = {}
            spec = FullAttentionSpec(block_size=16, num_kv_heads=8, head_size=128, dtype=torch.bfloat16,
                                     **({"kv_quant_mode": KVQuantMode.FP8_PER_TENSOR} if kv_dtype != "auto" else {}))
            label = f"cap={cap} k={spec_tokens} nc={non_causal} kv={kv_dtype} trt={trtllm} adapt={adaptive}"
            cfg = libattn.BuilderConfig(16, 2048, 4096, 32, num_speculative_tokens=spec_tokens,
                                        device_capability=cap[0] * 10 + cap[1],
                                        use_non_causal=int(non_causal), enable_adaptive_verification=int(adaptive),
                                        cache_dtype=DT[kv_dtype], use_trtllm_attention=-1 if trtllm is None else int(trtllm),
                                        cudagraph_mode=int(libattn.CudagraphMode[vc.compilation_config.cudagraph_mode.name]))
            lspec = libattn.KvCacheSpec(16, 8, 128)
            with set_current_vllm_config(vc):
                lvl = fi.FlashInferMetadataBuilder.get_cudagraph_support(vc, spec)
                cmp(label + " level", int(lvl.value), int(lib.backend_cudagraph_support("FLASHINFER", lspec, cfg)))
                try:
                    vb = fi.FlashInferMetadataBuilder(spec, ["model.layers.0.self_attn"], vc, torch.device("cpu"))
                except Exception as e:
                    print("vLLM builder not constructed:", label, type(e).__name__, str(e)[:150]); continue
                with lib.builder("FLASHINFER", lspec, cfg) as lb:
                    cmp(label + " threshold", vb.reorder_batch_threshold, lb.reorder_batch_threshold)
                    # build on decode-heavy batches where vLLM does not need FlashInfer's plan()
                    for q, s in (([1, 1, 1], [17, 33, 5]), ([3, 3, 1], [20, 30, 9]), ([3, 2, 7], [10, 12, 40]), ([3, 3, 0], [20, 30, 0]), ([1, 20, 7], [5, 30, 9])):
                        if max(q) > 1 and not spec_tokens: continue
                        n = len(q); qsl = np.concatenate([[0], np.cumsum(q)]).astype(np.int32)
                        seq = np.array(s, np.int32); bt = np.arange(1, n * 8 + 1, dtype=np.int32).reshape(n, 8)
                        slots = np.arange(int(qsl[-1]), dtype=np.int64)
                        cm = CommonAttentionMetadata(query_start_loc=torch.from_numpy(qsl), query_start_loc_cpu=torch.from_numpy(qsl.copy()),
                                                     seq_lens=torch.from_numpy(seq), num_reqs=n, num_actual_tokens=int(qsl[-1]),
                                                     max_query_len=max(q), max_seq_len=max(s), block_table_tensor=torch.from_numpy(bt),
                                                     slot_mapping=torch.from_numpy(slots), causal=not non_causal,
                                                     seq_lens_cpu_upper_bound=torch.from_numpy(seq.copy()))
                        PLANS.clear()
                        try:
                            vm = vb.build(0, cm)
                        except Exception as e:
                            import traceback; TB.append(traceback.format_exc())
                            print("    vLLM build skipped", q, type(e).__name__, str(e)[:80]); continue
                        lm = lb.build(libattn.CommonMetadata(qsl, seq, bt, slots, causal=not non_causal, seq_lens_cpu_upper_bound=seq.copy())).to_dict()
                        L = f"{label} q={q}"
                        for k in ("num_decodes", "num_prefills", "num_decode_tokens", "num_prefill_tokens"):
                            cmp(L + " " + k, getattr(vm, k), lm[k])
                        cmp(L + " q_prefill", TD[vm.q_data_type_prefill], lm["q_data_type_prefill"])
                        cmp(L + " q_decode", TD[vm.q_data_type_decode], lm["q_data_type_decode"])
                        cmp(L + " layout", {"NHD": 0, "HND": 1}[fi.get_flashinfer_layout_string(vm.kv_cache_layout)], lm["kv_cache_layout"])
                        if vm.prefill is not None:
                            trt = isinstance(vm.prefill, fi.TRTLLMPrefill)
                            cmp(L + " prefill_use_trtllm", trt, bool(lm["prefill_use_trtllm"]))
                            if not trt:
                                p = PLANS["prefill"]
                                cmp(L + " prefill_qo_indptr_cpu", p["qo_indptr"].tolist(), np.asarray(lm["prefill_qo_indptr_cpu"]).tolist())
                                cmp(L + " prefill_paged_kv_indptr_cpu", p["paged_kv_indptr"].tolist(), np.asarray(lm["prefill_paged_kv_indptr_cpu"]).tolist())
                                cmp(L + " prefill_paged_kv_last_page_len_cpu", p["paged_kv_last_page_len"].tolist(), np.asarray(lm["prefill_paged_kv_last_page_len_cpu"]).tolist())
                                cmp(L + " paged_kv_indices", p["paged_kv_indices"].tolist(), np.asarray(lm["paged_kv_indices"]).tolist())
                                cmp(L + " prefill q_data_type", TD[p["q_data_type"]], lm["q_data_type_prefill"])
                            if trt:
                                for k in ("block_tables", "seq_lens", "cum_seq_lens_q", "cum_seq_lens_kv"):
                                    cmp(L + " prefill_" + k, np.asarray(getattr(vm.prefill, k)).tolist(), np.asarray(lm["prefill_" + k]).tolist())
                                cmp(L + " prefill_max_q_len", vm.prefill.max_q_len, lm["prefill_max_q_len"])
                        else:
                            cmp(L + " prefill None", None, lm.get("prefill_use_trtllm"))
                        if vm.decode is not None:
                            api = isinstance(vm.decode, fi.FlashInferTrtllmAPIDecode)
                            cmp(L + " decode_use_trtllm", api, bool(lm["decode_use_trtllm"]))
                            if not api:
                                p = PLANS["decode"]
                                cmp(L + " decode_paged_kv_indptr_cpu", p["indptr_cpu"].tolist(), np.asarray(lm["decode_paged_kv_indptr_cpu"]).tolist())
                                cmp(L + " decode_paged_kv_last_page_len_cpu", p["last_page_len_cpu"].tolist(), np.asarray(lm["decode_paged_kv_last_page_len_cpu"]).tolist())
                                cmp(L + " decode_seq_lens_cpu", p["seq_lens_cpu"].tolist(), np.asarray(lm["decode_seq_lens_cpu"]).tolist())
                                cmp(L + " decode_num_qo_heads", p["num_qo_heads"], lm["decode_num_qo_heads"])
                                cmp(L + " decode q_len_per_req", p["q_len_per_req"], lm["decode_q_len_per_req"])
                                cmp(L + " decode q_data_type", TD[p["q_data_type"]], lm["q_data_type_decode"])
                            if api:
                                cmp(L + " decode_kernel", {"xqa": 0, "trtllm-gen": 1}[vm.decode.kernel.value], lm["decode_kernel"])
                                cmp(L + " decode_q_len_per_req", vm.decode.q_len_per_req, lm["decode_q_len_per_req"])
                                qcu = vm.decode.q_cu_seq_lens
                                cmp(L + " decode_q_cu_seq_lens", None if qcu is None else qcu.tolist(),
                                    None if lm.get("decode_q_cu_seq_lens") is None else np.asarray(lm["decode_q_cu_seq_lens"]).tolist())
                                vmask = vm.decode.mask
                                lmask = lm.get("decode_mask")
                                cmp(L + " decode_mask", None if vmask is None else (list(vmask.shape), vmask.to(torch.int32).tolist()),
                                    None if lmask is None else (list(np.asarray(lmask).shape), np.asarray(lmask).astype(np.int32).tolist()))
                                cmp(L + " decode_seq_lens", vm.decode.seq_lens.tolist(), np.asarray(lm["decode_seq_lens"]).tolist())
                                cmp(L + " decode_block_tables", vm.decode.block_tables.tolist(), np.asarray(lm["decode_block_tables"]).tolist())
                        else:
                            cmp(L + " decode None", None, lm.get("decode_use_trtllm"))
print("FAILS", fails)
print(TB[0] if TB else "")
sys.exit(1 if fails or TB else 0)
