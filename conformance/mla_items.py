"""The MLA builders: vLLM 0.33's five dense MLA metadata builders (FLASHMLA, FLASH_ATTN_MLA,
CUTLASS_MLA, FLASHINFER_MLA, TRITON_MLA; ``MLACommonMetadataBuilder`` in
vllm/model_executor/layers/attention/mla_attention.py and the classes of
vllm/v1/attention/backends/mla/) against libattn's builder of the same name, on the lane's random
batches: every field of vLLM's metadata object (``dataclasses.fields``, recursively; the decode
part as ``decode_*``) and the builder's answers (get_cudagraph_support,
get_varlen_cudagraph_max_query_len, reorder_batch_threshold, supports_update_block_table,
supports_draft_decode_metadata_update).

vLLM's side is a real VllmConfig for a weightless DeepSeek-V3-shaped model (kv_lora_rank 512,
qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, 16 heads) and a real
MLAAttentionSpec; per batch: speculative tokens k (the batch's), parallel drafting, decode
context parallelism (the batch's world and interleave, a random rank), an fp8 or 16-bit cache,
full CUDA graphs or none, ``build_for_cudagraph_capture`` in place of ``build`` on some
full-graph batches, and a non-causal batch (``common.causal=False`` with the layer's
``non_causal_multi_token_decode``) on one in ten. What a CPU cannot run is replaced around the
construction and the builds only (``mla_patched``): the model's attention layer (a stand-in with
the MLA dimensions, its prefill backend and DCP manager), the DCP group's size, FlashMLA's
``get_mla_metadata`` / ``get_mla_metadata_dense_fp8`` and FlashAttention's
``get_scheduler_metadata`` (recorders: their arguments are compared with libattn's
``decode_scheduler_*`` fields; their outputs are the kernels' libraries'), the SM count, the
FlashAttention version, and CUTLASS_MLA's import-time CUDA workspace.

The prefill part is compared too: its scalars and tensors by name (``prefill_*``, dtypes by
libattn's KvDtype name, the prefill backend by MLAPrefillBackendEnum's name), and
ChunkedContextMetadata's list of ContextChunks against libattn's flat per-chunk fields read back
as one dict per chunk (``Metadata.mla_context_chunks``, docs/backends/mla.md).

FLASH_ATTN_MLA_XPU: vLLM's XPUFlashAttnMLAMetadataBuilder (the XPU platform's FLASH_ATTN_MLA)
against libattn's FLASH_ATTN_MLA_XPU, as FLASH_ATTN_MLA with XPU's FlashAttention 2
(get_flash_attn_version answers 2 there), block size 64, prefill on the default backend, and
capture builds only on uniform single-token batches (its level is UNIFORM_SINGLE_TOKEN_DECODE,
which libattn enforces on capture builds).
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import tempfile
import types
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np

from .lru import cached
from .batches import VARIANT_KINDS, Batch, dummy_uniform_decode
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm, kv_dtype_name
from .draft_update import Sides, with_draft_update
from .item import Item, choice_rng
from .sides import lib_common, vllm_common

MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS = 256, 65536, 131072, 16
NUM_SMS = 132  # the SM count both sides are told (vLLM's num_compute_units(), libattn's num_sms)
MAX_CAPTURE = 512  # compilation_config.max_cudagraph_capture_size with full graphs
LAYER = "model.layers.0.self_attn.attn"
MLA_DIMS = dict(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
                v_head_dim=128)

XPU = "FLASH_ATTN_MLA_XPU"
#: the variants whose module is flashattn_mla.py (executed with FlashAttention stand-ins)
FLASH_ATTN_VARIANTS = ("FLASH_ATTN_MLA", XPU)
VARIANTS = {
    "FLASHMLA": ("vllm.v1.attention.backends.mla.flashmla", "FlashMLAMetadataBuilder"),
    "FLASH_ATTN_MLA": ("vllm.v1.attention.backends.mla.flashattn_mla",
                       "FlashAttnMLAMetadataBuilder"),
    "CUTLASS_MLA": ("vllm.v1.attention.backends.mla.cutlass_mla", "CutlassMLAMetadataBuilder"),
    "FLASHINFER_MLA": ("vllm.v1.attention.backends.mla.flashinfer_mla",
                       "FlashInferMLAMetadataBuilder"),
    "TRITON_MLA": ("vllm.v1.attention.backends.mla.triton_mla", "TritonMLAMetadataBuilder"),
    "TOKENSPEED_MLA": ("vllm.v1.attention.backends.mla.tokenspeed_mla",
                       "TokenspeedMLAMetadataBuilder"),
    # the CPU platform's: CPUMLABackend keeps the base builder
    "CPU_MLA": ("vllm.model_executor.layers.attention.mla_attention", "MLACommonMetadataBuilder"),
    "AMX_MLA": ("vllm.v1.attention.backends.mla.amx_mla", "AMXMLAMetadataBuilder"),
    # the XPU platform's FLASH_ATTN_MLA (XPUFlashAttnMLABackend keeps that name; libattn's
    # FLASH_ATTN_MLA_XPU): FlashAttention 2 (XPU's get_flash_attn_version), no AOT schedule
    XPU: ("vllm.v1.attention.backends.mla.flashattn_mla", "XPUFlashAttnMLAMetadataBuilder"),
    # dots3 NOTE's sliding-window layers (a TritonMLAMetadataBuilder subclass; vLLM's backend
    # class calls itself TRITON_MLA)
    "DOTS3_NOTE_TRITON_MLA": ("vllm.models.dots3_note.nvidia.attention",
                              "Dots3NoteMLAMetadataBuilder"),
}
#: the kernel block sizes each backend class accepts (get_supported_kernel_block_sizes)
BLOCK_SIZES = {"FLASHMLA": (64,), "FLASH_ATTN_MLA": (16, 32, 64), "CUTLASS_MLA": (128,),
               "FLASHINFER_MLA": (32, 64), "TRITON_MLA": (16, 32, 64), "TOKENSPEED_MLA": (32, 64),
               "CPU_MLA": (16,), "AMX_MLA": (32, 64), XPU: (64,),
               "DOTS3_NOTE_TRITON_MLA": (16, 32, 64)}
#: the cache dtypes each backend class accepts besides "auto" (supported_kv_cache_dtypes)
FP8_VARIANTS = ("FLASHMLA", "CUTLASS_MLA", "FLASHINFER_MLA", "TRITON_MLA", "TOKENSPEED_MLA",
                "DOTS3_NOTE_TRITON_MLA")
#: backend classes whose supported_kv_cache_dtypes lack "auto" (fp8 caches only)
FP8_ONLY_VARIANTS = ("TOKENSPEED_MLA",)
#: the CPU platform's backends: NEVER (no capture builds: vLLM's base build_for_cudagraph_capture
#: does not check the level, libattn refuses NEVER), the CPU platform's prefill backend
CPU_VARIANTS = ("CPU_MLA", "AMX_MLA")
#: AMXMLAMetadataBuilder.build's attributes on the decode and prefill parts (not dataclass
#: fields), against libattn's decode_* / prefill_* fields of the same names
AMX_ATTRS = {"decode": ("req_to_token", "seq_lens_i64", "req_pool_indices", "num_kv_splits"),
             "prefill": ("cpu_seq_lens", "req_to_token", "req_pool_indices", "extend_seq_lens",
                         "extend_start_loc", "max_len_extend")}
#: supports_non_causal_multi_token_decode
NON_CAUSAL_VARIANTS = ("FLASHINFER_MLA", "TRITON_MLA", "TOKENSPEED_MLA", "DOTS3_NOTE_TRITON_MLA")
#: sliding-window variants: their layers' MLA dimensions (head size kv_lora_rank +
#: qk_rope_head_dim) and the windows a profile draws (MLAAttentionSpec.sliding_window); their
#: prefill part's ``sliding_window`` (an attribute the builder sets, not a dataclass field) is
#: compared chunk by chunk (_sliding_window_pairs)
SWA_VARIANTS = {"DOTS3_NOTE_TRITON_MLA": (dict(q_lora_rank=1536, kv_lora_rank=1024,
                                               qk_nope_head_dim=192, qk_rope_head_dim=64,
                                               v_head_dim=128), (128, 1024, 4096, 32768, 131072))}


#: the workspace rows a sliding-window variant's profile draws (0: vLLM's default, 65,536 here);
#: multiples of every block size and DCP partition the lane draws
SWA_WORKSPACES = (0, 0, 1024, 4096)


def mla_dims(variant: str) -> Dict[str, int]:
    """The variant's layer dimensions (DeepSeek-V3's unless a sliding-window variant's)."""
    return SWA_VARIANTS[variant][0] if variant in SWA_VARIANTS else MLA_DIMS


def head_size(variant: str) -> int:
    d = mla_dims(variant)
    return d["kv_lora_rank"] + d["qk_rope_head_dim"]

#: libattn's prefill fields vLLM 0.33's metadata lacks (docs/backends/mla.md: 0.13's prefill
#: flags and FlashInfer's ragged plan inputs, which 0.33 plans inside its prefill backend)
PREFILL_EXTENSIONS = ("prefill_query_seq_lens", "prefill_num_qo_heads", "prefill_num_kv_heads",
                      "prefill_head_dim_qk", "prefill_head_dim_vo", "prefill_sm_scale",
                      "prefill_window_left", "prefill_logits_soft_cap")
#: vLLM 0.33's MLAPrefillBackendEnum order (libattn's prefill_prefill_backend)
PREFILL_BACKENDS = ("FLASH_ATTN", "FLASHINFER", "TRTLLM_RAGGED", "TOKENSPEED_MLA",
                    "ROCM_AITER_FA", "CPU_SDPA_MLA", "ZEN_CPU_SDPA_MLA")
#: Python objects of vLLM's prefill metadata a C library cannot hold
PREFILL_NOT_COMPARABLE = {
    "prefill.prefill_backend": "the layer's prefill backend object: its name against "
                               "libattn's prefill_prefill_backend",
    "prefill.chunked_context.workspace": "the builder's workspace tensor (the runtime's in "
                                         "libattn): its rows against the workspace size",
    "prefill.chunked_context.dcp_manager": "the layer's MLADCPManager (a collective helper)",
}

#: libattn fields vLLM's metadata lacks (documented in docs/backends/mla.md), with what the lane
#: compares them against instead
EXTENSIONS = {
    "chunked_prefill_workspace_size": "the builder's chunked_prefill_workspace_size: compared "
                                      "with vLLM's builder attribute",
    "decode_scheduler_metadata_buffer": "FLASH_ATTN_MLA's persistent FA3 scheduler buffer "
                                        "(vLLM's self.scheduler_metadata): shape compared",
    "decode_tile_scheduler_metadata": "FLASHMLA's batch-invariant one-partition schedule (vLLM "
                                      "computes it in forward_mqa)",
    "decode_num_splits": "same, its num_splits",
    "decode_tile_scheduler_metadata_buffer": "FLASHMLA's persistent fp8 (num_SMs, 8) buffer "
                                             "(vLLM's cg_buf_tile_scheduler_metadata): shape "
                                             "compared",
    "decode_num_splits_buffer": "FLASHMLA's persistent fp8 (max_num_seqs + 1) buffer (vLLM's "
                                "cg_buf_num_splits): shape compared",
}


class MlaConfigs:
    """Real VllmConfig objects for a weightless DeepSeek-V3-shaped model (MLA)."""

    def __init__(self, dims: Dict[str, int] = MLA_DIMS) -> None:
        from vllm.config import ModelConfig
        self.dir = tempfile.mkdtemp(prefix="libattn-vllm-mla-model-")
        json.dump({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                   "hidden_size": 7168, "num_attention_heads": NUM_HEADS,
                   "num_key_value_heads": NUM_HEADS, "num_hidden_layers": 2,
                   "intermediate_size": 18432, "moe_intermediate_size": 2048,
                   "vocab_size": 129280, "max_position_embeddings": MAX_MODEL_LEN,
                   "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
                   "first_k_dense_replace": 1, "torch_dtype": "bfloat16",
                   "rms_norm_eps": 1e-6, **dims},
                  open(os.path.join(self.dir, "config.json"), "w"))
        self.model = ModelConfig(model=self.dir, skip_tokenizer_init=True,
                                 max_model_len=MAX_MODEL_LEN, dtype="bfloat16")

    def make(self, s: "Settings") -> Any:
        from vllm.config import CacheConfig, DeviceConfig, SchedulerConfig, VllmConfig
        from vllm.config.compilation import CUDAGraphMode
        vc = VllmConfig(model_config=self.model, device_config=DeviceConfig(device="cpu"),
                        scheduler_config=SchedulerConfig(
                            max_num_seqs=MAX_SEQS, max_num_batched_tokens=MAX_TOKENS,
                            max_model_len=MAX_MODEL_LEN, is_encoder_decoder=False),
                        cache_config=CacheConfig())
        # set afterwards: the CPU platform resets it to its own MLA kernel's 16 (with a warning
        # when the user chose it); the GPU's value
        vc.cache_config.block_size = s.block_size
        vc.cache_config.cache_dtype = "fp8" if s.fp8 else "auto"
        vc.parallel_config.decode_context_parallel_size = s.dcp
        vc.parallel_config.cp_kv_cache_interleave_size = s.interleave
        cc = vc.compilation_config
        cc.cudagraph_mode = CUDAGraphMode.FULL_AND_PIECEWISE if s.full else CUDAGraphMode.NONE
        cc.max_cudagraph_capture_size = MAX_CAPTURE if s.full else None
        if s.spec:
            object.__setattr__(vc, "speculative_config", types.SimpleNamespace(
                num_speculative_tokens=s.spec, parallel_drafting=s.parallel_drafting,
                method="ngram"))
        # after the speculative config: the runner (V1 / V2) vLLM picks depends on it
        from .vllm_env import engine_capture_sizes
        engine_capture_sizes(vc, s.spec)
        cc.static_forward_context[LAYER] = _layer_stand_in(vc, s)
        if s.prefill is not None:
            from vllm.v1.attention.backends.mla.prefill.registry import MLAPrefillBackendEnum
            vc.attention_config.mla_prefill_backend = MLAPrefillBackendEnum[s.prefill]
        vc.attention_config.use_prefill_query_quantization = s.quantize
        return vc


class Settings(tuple):
    """A builder's settings (the cache key): variant, block size, k, parallel drafting, DCP
    (world, rank, interleave), fp8 cache, full graphs, FlashAttention version, non-causal."""
    fields = ("variant", "block_size", "spec", "parallel_drafting", "dcp", "rank", "interleave",
              "fp8", "full", "fa_version", "non_causal", "capability", "prefill", "quantize",
              "window", "workspace")

    def __new__(cls, *values: Any) -> "Settings":
        return tuple.__new__(cls, values)

    def __getattr__(self, name: str) -> Any:
        return self[self.fields.index(name)]


#: builder profiles per variant: a batch draws one, and the profile fixes the builder's settings
#: (DCP, rank, fp8, full graphs, parallel drafting, non-causal, FlashAttention version), so that
#: the lane makes a few hundred builders per 10,000 batches instead of one per batch
PROFILES = 24


def settings(variant: str, b: Batch) -> Settings:
    p = int(choice_rng(b, 40).integers(0, PROFILES))
    r = np.random.default_rng([zlib_crc(variant), p])
    dcp = int(r.choice([1, 1, 1, 2, 4]))
    inter = int(r.choice([1, 8, 16])) if dcp > 1 else 1
    if variant == "FLASHINFER_MLA" and r.random() < 0.8:
        inter = 1  # its builder refuses interleave != 1 under DCP (both sides; one in five)
    rank = int(r.integers(0, dcp))
    fp8 = bool(variant in FP8_VARIANTS and r.random() < 0.4) or variant in FP8_ONLY_VARIANTS
    full = bool(r.random() < 0.5)
    fa = int(r.choice([2, 3])) if variant == "FLASH_ATTN_MLA" else (2 if variant == XPU else 0)
    pd = bool(b.spec and r.random() < 0.25)
    non_causal = bool(r.random() < (0.15 if variant in NON_CAUSAL_VARIANTS else 0.05))
    # vLLM 0.33's attention_config.mla_prefill_backend (None: automatic) and
    # use_prefill_query_quantization, on compute capability 9.0 or 10.0 (libattn's ABI 1.7
    # mla_prefill_backend / use_prefill_query_quantization and device_capability); an explicit
    # backend only where vLLM's get_mla_prefill_backend accepts it (the dimensions are R1's)
    cap = int(r.choice([90, 100]))
    if variant in FLASH_ATTN_VARIANTS or variant in SWA_VARIANTS:
        cap = 90  # FA3 (its AOT schedule) is 9.0's; on 10.x vLLM runs FA4, not the lane's FA
        # (dots3 NOTE's layers are Hopper's: FA3 prefill)
    choices = [None, "FLASH_ATTN"] + (["FLASHINFER", "TRTLLM_RAGGED", "TOKENSPEED_MLA"]
                                      if cap == 100 else [])
    prefill = choices[int(r.integers(0, len(choices)))]
    quantize = bool(r.random() < 0.5)
    window = int(r.choice(SWA_VARIANTS[variant][1])) if variant in SWA_VARIANTS else 0
    # a sliding-window variant's chunks: a smaller workspace on half the profiles (vLLM's
    # builder attributes set after construction, libattn's mla_chunked_prefill_workspace_size),
    # so that the lane's batches take several
    workspace = int(r.choice(SWA_WORKSPACES)) if variant in SWA_VARIANTS else 0
    return Settings(variant, b.block_size, b.spec, pd, dcp, rank, inter, fp8, full, fa,
                    non_causal, cap, prefill, quantize, window, workspace)


def zlib_crc(text: str) -> int:
    import zlib
    return zlib.crc32(text.encode())


def capture(s: Settings, b: Batch) -> bool:
    """build_for_cudagraph_capture instead of build: on a third of the full-graph batches a
    runtime captures, uniform ones (every query of one length, or 0: padding), and on every
    uniform decode dummy batch of vLLM's runner (batches.dummy_uniform_decode). libattn also
    enforces the builder's CUDA graph level on capture builds, which vLLM does not
    (docs/backends/mla.md), so a mixed batch is not sent there."""
    q = b.q[b.q > 0]
    uniform = b.n > 0 and q.size > 0 and bool((q == q[0]).all())
    single = q.size > 0 and int(q[0]) == 1  # XPU's UNIFORM_SINGLE_TOKEN_DECODE
    return (s.full and uniform and s.variant not in CPU_VARIANTS
            and (single or s.variant != XPU)
            and (dummy_uniform_decode(b) or choice_rng(b, 41).random() < 0.35))


# ---- vLLM's side ---------------------------------------------------------------------------

class _PrefillBackendStandIn:
    """The layer's MLA prefill backend (vLLM's get_mla_prefill_backend on the GPU: the
    configured mla_prefill_backend, else its automatic choice, FLASH_ATTN for the lane's R1
    dimensions on 9.0 and 10.0): the builder clones it, asks its name and hands it the prefill
    metadata. Its kernels never run here. CPU_MLA and AMX_MLA get CPU_SDPA_MLA, the CPU platform's
    choice (get_mla_prefill_backend_cls without zentorch; it ignores mla_prefill_backend)."""

    def __init__(self, name: str = "FLASH_ATTN") -> None:
        self.name = name

    def get_name(self) -> str:
        return self.name

    def clone(self) -> "_PrefillBackendStandIn":
        return self

    def prepare_metadata(self, metadata: Any) -> None:
        pass


def _layer_stand_in(vc: Any, s: Settings) -> Any:
    """The model's MLAAttention layer as the builder reads it (static_forward_context): its MLA
    dimensions, the non-causal flag, its prefill backend and, with DCP, its MLADCPManager (an
    instance whose KV gather setup, a collective, does nothing)."""
    backend = _PrefillBackendStandIn("CPU_SDPA_MLA" if s.variant in CPU_VARIANTS
                                     else s.prefill or "FLASH_ATTN")
    layer = types.SimpleNamespace(non_causal_multi_token_decode=s.non_causal,
                                  prefill_backend=backend, **mla_dims(s.variant))
    if s.dcp > 1:
        from vllm.v1.attention.ops.dcp import MLADCPManager
        m = MLADCPManager.__new__(MLADCPManager)
        m.init_kv_gather = lambda *args, **kwargs: None
        layer.dcp_manager = m
    return layer


RECORDED: Dict[str, Dict[str, Any]] = {}


def _recorder(call: str, names: Tuple[str, ...], result: Any) -> Any:
    def record(*args: Any, **kwargs: Any) -> Any:
        got = dict(zip(names, args))
        got.update(kwargs)
        RECORDED[call] = got
        return result(got)
    return record


def _flashmla_sched(got: Dict[str, Any]) -> Any:
    return types.SimpleNamespace(tile_scheduler_metadata=None, num_splits=None), None


def _flashmla_dense_fp8(got: Dict[str, Any]) -> Any:
    """FlashMLA's dense fp8 schedule stands in as (num_SMs / 2, 8) and (batch + 1) int32
    tensors: vLLM copies them into its persistent buffers under full graphs."""
    import torch
    b = int(got["cache_seqlens"].shape[0])
    return (torch.arange(NUM_SMS // 2 * 8, dtype=torch.int32).reshape(NUM_SMS // 2, 8),
            torch.arange(b + 1, dtype=torch.int32))


def _empty_schedule(got: Dict[str, Any]) -> Any:
    import torch
    return torch.zeros(8, dtype=torch.int32)


_MODULES: Dict[Any, Any] = {}


def variant_module(variant: str, fa_version: int = 0) -> Any:
    """The variant's builder module. FLASH_ATTN_MLA's and CUTLASS_MLA's cannot be imported on a
    CPU (flashattn_mla.py imports flash_attn_varlen_func, which fa_utils defines on CUDA only;
    cutlass_mla.py allocates a CUDA workspace at import): their unmodified source is executed
    once more as its own module with fa_utils answering ``fa_version`` and lending stand-ins
    for the two FlashAttention functions, or with torch.empty placing device="cuda" tensors on
    the meta device, for the duration of the import."""
    if variant == XPU:  # the same module
        return variant_module("FLASH_ATTN_MLA", fa_version)
    key = (variant, fa_version)
    if key in _MODULES:
        return _MODULES[key]
    name = VARIANTS[variant][0]
    if variant in SWA_VARIANTS:
        # dots3's attention.py imports FlashAttention's varlen function (CUDA extensions) and,
        # through its FA3 prefill backend, fa_utils' CUDA-only FA4 compiler at import:
        # sparse_mla_items' stand-in module lends the first, None the second (as fa_utils
        # defines it on ROCm and XPU), for the import only
        from .sparse_mla_items import import_without_flash_attn
        fu = importlib.import_module("vllm.v1.attention.backends.fa_utils")
        absent = not hasattr(fu, "compile_flash_attn_varlen_func_from_specs")
        if absent:
            fu.compile_flash_attn_varlen_func_from_specs = None
        try:
            _MODULES[key] = import_without_flash_attn(name)
        finally:
            if absent:
                delattr(fu, "compile_flash_attn_varlen_func_from_specs")
        return _MODULES[key]
    if variant not in ("FLASH_ATTN_MLA", "CUTLASS_MLA"):
        _MODULES[key] = importlib.import_module(name)
        return _MODULES[key]
    import importlib.util as iu
    import sys
    import torch
    spec = iu.find_spec(name)
    lane_name = f"{name}__lane_{fa_version}"
    mod_spec = iu.spec_from_file_location(lane_name, spec.origin)
    mod = iu.module_from_spec(mod_spec)
    sys.modules[lane_name] = mod
    undo = []
    try:
        if variant == "FLASH_ATTN_MLA":
            fu = importlib.import_module("vllm.v1.attention.backends.fa_utils")
            for attr, value in (("flash_attn_varlen_func", None),
                                ("get_scheduler_metadata", None),
                                ("get_flash_attn_version", lambda *a, **k: fa_version)):
                undo.append((fu, attr, getattr(fu, attr, _ABSENT)))
                setattr(fu, attr, value)
        else:
            real_empty = torch.empty

            def empty(*args: Any, **kwargs: Any) -> Any:
                if str(kwargs.get("device", "")).startswith("cuda"):
                    kwargs["device"] = "meta"
                return real_empty(*args, **kwargs)
            undo.append((torch, "empty", real_empty))
            torch.empty = empty
        mod_spec.loader.exec_module(mod)
    finally:
        for obj, attr, value in reversed(undo):
            if value is _ABSENT:
                delattr(obj, attr)
            else:
                setattr(obj, attr, value)
    if variant == "FLASH_ATTN_MLA":
        mod.get_flash_attn_version = lambda *a, **k: fa_version
    _MODULES[key] = mod
    return mod


_ABSENT = object()


@contextlib.contextmanager
def mla_patched(s: Settings) -> Iterator[None]:
    """The replacements a variant's construction and builds need (see the module doc), applied
    for the duration only."""
    undo = []

    def put(obj: Any, name: str, value: Any) -> None:
        undo.append((obj, name, getattr(obj, name, _ABSENT)))
        setattr(obj, name, value)
    try:
        mla = importlib.import_module("vllm.model_executor.layers.attention.mla_attention")
        put(mla, "get_dcp_group", lambda: types.SimpleNamespace(world_size=s.dcp,
                                                                rank_in_group=s.rank))
        # the GPU's answers to determine_prefill_query_data_type's questions: the compute
        # capability family, and get_mla_prefill_backend (on the CPU platform it ignores the
        # configured backend)
        from vllm.platforms import current_platform
        put(current_platform, "is_device_capability_family",
            lambda capability, device_id=0: capability // 10 == s.capability // 10)
        prefill_pkg = importlib.import_module("vllm.v1.attention.backends.mla.prefill")
        name = s.prefill or "FLASH_ATTN"
        put(prefill_pkg, "get_mla_prefill_backend",
            lambda vllm_config=None: types.SimpleNamespace(get_name=lambda: name))
        # functools.cache'd: one answer per process in vLLM (one config); the lane's builders
        # differ, so each construction asks afresh
        mla.backend_supports_prefill_query_quantization.cache_clear()
        mod = variant_module(s.variant, s.fa_version)
        if s.variant in SWA_VARIANTS:
            # vLLM 0.33.0's MLACommonMetadata.__post_init__ accepts MLACommonBackend's head
            # sizes (320, 512, 576) only, so every build of a dots3 NOTE layer (head size 1088:
            # kv_lora_rank 1024 + 64) raises ValueError; the check also accepts the variant's
            # head size here, so the builder's metadata can be compared (docs/backends/mla.md)
            cls = mla.MLACommonBackend
            raw = cls.__dict__["get_supported_head_sizes"]
            sizes = list(cls.get_supported_head_sizes()) + [head_size(s.variant)]
            setattr(cls, "get_supported_head_sizes", classmethod(lambda c: sizes))
            undo.append((cls, "get_supported_head_sizes", raw))
        if s.variant == "FLASHMLA":
            put(mod, "get_mla_metadata", _recorder(
                "get_mla_metadata", ("cache_seqlens", "num_q_tokens_per_head_k", "num_heads_k"),
                _flashmla_sched))
            put(mod, "get_mla_metadata_dense_fp8", _recorder(
                "get_mla_metadata_dense_fp8",
                ("cache_seqlens", "num_q_tokens_per_head_k", "num_heads_k"), _flashmla_dense_fp8))
            put(mod, "num_compute_units", lambda *a, **k: NUM_SMS)
        if s.variant in FLASH_ATTN_VARIANTS:
            put(mod, "get_scheduler_metadata", _recorder("get_scheduler_metadata", (),
                                                         _empty_schedule))
        RECORDED.clear()
        yield
    finally:
        for obj, name, value in reversed(undo):
            if value is _ABSENT:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


def _cache(ctx: Any, key: Any, make: Any, store: str = "mla_builders",
           cap: int = 0) -> Any:
    """The builders of ``store`` (ctx's dict of that name), the most recently used ``cap``
    (0: ATTN_LANE_MLA_BUILDERS, else 4 * PROFILES)."""
    # vLLM's chunked-prefill workspace (up to ~90 MB a builder) is torch.empty: untouched;
    # libattn's builders zero their buffers (token_to_seq alone is max_num_seqs x
    # max_model_len int32, 128 MiB here): ATTN_LANE_MLA_BUILDERS caps the cached builders
    # (both sides) on a machine short of memory
    return cached(ctx, store, key, make,
                  cap or int(os.environ.get("ATTN_LANE_MLA_BUILDERS", 4 * PROFILES)))


def _configs(ctx: Any, variant: str = "") -> MlaConfigs:
    """The model's configs: DeepSeek-V3's, or a sliding-window variant's (its dimensions)."""
    if variant in SWA_VARIANTS:
        store = ctx.__dict__.setdefault("mla_swa_configs", {})
        if variant not in store:
            store[variant] = MlaConfigs(mla_dims(variant))
        return store[variant]
    if not hasattr(ctx, "mla_configs"):
        ctx.mla_configs = MlaConfigs()
    return ctx.mla_configs


def vllm_builder(ctx: Any, s: Settings) -> Tuple[Any, Any]:
    def make() -> Tuple[Any, Any]:
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.v1.kv_cache_interface import MLAAttentionSpec
        vc = _configs(ctx, s.variant).make(s)
        spec = MLAAttentionSpec(block_size=s.block_size, num_kv_heads=1,
                                head_size=head_size(s.variant),
                                dtype=torch.float8_e4m3fn if s.fp8 else torch.bfloat16,
                                cache_dtype_str="fp8" if s.fp8 else None,
                                sliding_window=s.window or None)
        cls = getattr(variant_module(s.variant, s.fa_version), VARIANTS[s.variant][1])
        with set_current_vllm_config(vc), mla_patched(s):
            vb = cls(spec, [LAYER], vc, torch.device("cpu"))
        if s.workspace:
            rows = s.workspace + (s.workspace // s.dcp if s.dcp > 1 else 0)
            vb.chunked_prefill_workspace_size = s.workspace
            vb.chunked_prefill_workspace = vb.chunked_prefill_workspace[:rows]
        return vb, vc
    return _cache(ctx, ("vllm",) + tuple(s), make)


def lib_builder(ctx: Any, s: Settings, vc: Any) -> Any:
    def make() -> Any:
        libattn = ctx.libattn
        cg = int(libattn.CudagraphMode[vc.compilation_config.cudagraph_mode.name])
        kv = libattn.KvDtype
        cfg = libattn.BuilderConfig(
            MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
            decode_context_parallel_size=s.dcp, dcp_rank=s.rank,
            cp_kv_cache_interleave_size=s.interleave, num_speculative_tokens=s.spec,
            parallel_drafting=int(s.parallel_drafting),
            use_v2_model_runner=int(bool(vc.use_v2_model_runner)), cudagraph_mode=cg,
            max_cudagraph_capture_size=MAX_CAPTURE if s.full else 0,
            cache_dtype=kv.FP8_E4M3 if s.fp8 else kv.AUTO, model_dtype=kv.BFLOAT16,
            flash_attn_version=s.fa_version or 2, device_capability=s.capability,
            # AMX_MLA reads the CPU platform's num_compute_units(), torch.get_num_threads()
            num_sms=_torch_threads() if s.variant == "AMX_MLA" else NUM_SMS,
            use_prefill_query_quantization=int(s.quantize),
            mla_chunked_prefill_workspace_size=s.workspace,
            mla_prefill_backend=0 if s.prefill is None else
            int(libattn.MlaPrefillBackend[s.prefill]),
            mla_kv_lora_rank=mla_dims(s.variant)["kv_lora_rank"],
            mla_qk_rope_head_dim=mla_dims(s.variant)["qk_rope_head_dim"],
            mla_qk_nope_head_dim=mla_dims(s.variant)["qk_nope_head_dim"],
            mla_v_head_dim=mla_dims(s.variant)["v_head_dim"])
        spec = libattn.KvCacheSpec(s.block_size, 1, head_size(s.variant),
                                   kind=libattn.KvCacheKind.MLA,
                                   dtype=kv.FP8_E4M3 if s.fp8 else kv.BFLOAT16,
                                   sliding_window=s.window)
        return ctx.lib.builder(s.variant, spec, cfg)
    if s.variant == "AMX_MLA":  # its req_to_token buffers: 256 x 131072 int64 (268 MB) each
        return _amx_cache(ctx, ("lib",) + tuple(s), make)
    return _cache(ctx, ("lib",) + tuple(s), make)


def _torch_threads() -> int:
    import torch
    return int(torch.get_num_threads())


def _amx_cache(ctx: Any, key: Any, make: Any) -> Any:
    """AMX_MLA's libattn builders, two at most (each holds max_num_seqs x max_model_len int64
    req_to_token entries)."""
    cache = ctx.__dict__.setdefault("amx_builders", {})
    if key in cache:
        cache[key] = cache.pop(key)
        return cache[key]
    while len(cache) >= 2:
        old = cache.pop(next(iter(cache)))
        if hasattr(old, "close"):
            old.close()
    cache[key] = make()
    return cache[key]


def _dcp_local(ctx: Any, b: Batch, s: Settings) -> Any:
    """This rank's DCP-local sequence lengths (vLLM's get_dcp_local_seq_lens, as the model
    runner computes them for the common metadata)."""
    if s.dcp <= 1:
        return None
    t = ctx.vu.get_dcp_local_seq_lens(ctx.torch.from_numpy(b.seq), s.dcp, s.rank, s.interleave)
    return np.ascontiguousarray(t.numpy().astype(np.int32).reshape(-1))


def _inputs(ctx: Any, b: Batch, s: Settings) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    if s.non_causal:
        out["causal"] = False
    local = _dcp_local(ctx, b, s)
    if local is not None:
        out["dcp_local_seq_lens"] = local
    return out


# ---- the comparison ------------------------------------------------------------------------

def _recorded_pairs(lib: Dict[str, Any], seen: set, libattn: Any) -> List[Pair]:
    """Each argument vLLM passed a recorded call against libattn's decode_scheduler_<arg>."""
    pairs: List[Pair] = []
    for call, args in RECORDED.items():
        for arg, value in args.items():
            name = f"decode_scheduler_{arg}"
            seen.add(name)
            got = lib.get(name, MISSING)
            if arg == "qkv_dtype" and got is not MISSING and got is not None:
                value, got = kv_dtype_name(value), libattn.KvDtype(int(got)).name
            pairs.append((f"{call}({arg}=) ~ {name}", value, got))
    return pairs


def _shape(x: Any) -> Any:
    return None if x is None else tuple(int(d) for d in x.shape)


def mla_pairs(ctx: Any, s: Settings, b: Batch, v: Any, md: Any, builders: Any = None,
              field_pairs: Any = None, recorded_pairs: Any = None,
              patches: Any = None) -> List[Pair]:
    """Every vLLM field (the decode part as decode_*; None parts make every libattn field of
    that part None), the recorded external calls' arguments, the persistent buffers' shapes,
    the builder's answers; a libattn field without a vLLM counterpart is a mismatch unless it
    is a documented extension, which must then be None on batches where vLLM has nothing to
    compare it with.

    Another MLA item (rocm_aiter_mla_items) passes its own ``builders`` (vb, vc, lb),
    ``field_pairs(name, value, lib)`` (its pairs for a vLLM field, or None for the default
    comparison), ``recorded_pairs(lib, seen)`` (its external calls) and ``patches`` (for the
    class answers)."""
    lib = {n: md[n] for n in md.fields()}
    if builders is None:
        vb, vc = vllm_builder(ctx, s)
        lb = lib_builder(ctx, s, vc)
    else:
        vb, vc, lb = builders
    pairs: List[Pair] = []
    seen = set()
    for name, value in flatten_vllm(v):
        part = name.split(".")[0]
        if part in ("decode", "prefill") and name == part and value is None:
            # no decodes / no prefills: every field of that part is None
            pairs += [(f"{n} ({part} is None)", None, x) for n, x in lib.items()
                      if n.startswith(part + "_")]
            seen.update(n for n in lib if n.startswith(part + "_"))
            continue
        if name.startswith("prefill.chunked_context"):
            continue  # below, as a whole
        if name in PREFILL_NOT_COMPARABLE:
            if name == "prefill.prefill_backend":
                seen.add("prefill_prefill_backend")
                got = lib.get("prefill_prefill_backend", MISSING)
                pairs.append((name + ".get_name() ~ prefill_prefill_backend", value.get_name(),
                              PREFILL_BACKENDS[int(got)] if isinstance(got, int) else got))
            continue
        lname = name.replace(".", "_")
        seen.add(lname)
        own = field_pairs(name, value, lib) if field_pairs is not None else None
        if own is not None:
            pairs += own
            continue
        if name == "decode.scheduler_metadata" and RECORDED:
            continue  # the external library's output (a recorded call): its inputs are compared
        if isinstance(value, ctx.torch.Tensor) and value.dim() == 0:
            value = value.item()
        got = lib.get(lname, MISSING)
        if isinstance(value, ctx.torch.dtype):
            value = kv_dtype_name(value)
            got = ctx.libattn.KvDtype(int(got)).name if isinstance(got, int) else got
        if got is MISSING and value is None:
            pairs.append((f"{name} (None in vLLM 0.33's dense MLA; no libattn field)", None,
                          None))
            continue
        pairs.append((name, value, got))
    if s.variant in SWA_VARIANTS:
        pairs += _sliding_window_pairs(getattr(v.prefill, "sliding_window", None), lib, seen, vb)
    if v.prefill is not None:
        # every batch, including those where a uniform split makes an async spec-decode row
        # (optimistic seq_lens_cpu_upper_bound) a prefill: both plan from the bound
        pairs += _chunk_pairs(v.prefill.chunked_context, md, lib, seen, vb)
    seen.update(PREFILL_EXTENSIONS)
    seen.add("chunked_prefill_workspace_size")
    pairs.append(("builder.chunked_prefill_workspace_size ~ chunked_prefill_workspace_size",
                  int(vb.chunked_prefill_workspace_size),
                  lib.get("chunked_prefill_workspace_size", MISSING)))
    pairs += (recorded_pairs(lib, seen) if recorded_pairs is not None
              else _recorded_pairs(lib, seen, ctx.libattn))
    if s.variant in FLASH_ATTN_VARIANTS and v.decode is not None:
        want = vb.scheduler_metadata if "get_scheduler_metadata" in RECORDED and \
            getattr(vb, "use_full_cuda_graph", False) else None
        seen.add("decode_scheduler_metadata_buffer")
        pairs.append(("builder.scheduler_metadata (shape) ~ decode_scheduler_metadata_buffer",
                      _shape(want), _shape(lib.get("decode_scheduler_metadata_buffer"))))
    if s.variant == "FLASHMLA" and v.decode is not None:
        dense = "get_mla_metadata_dense_fp8" in RECORDED and \
            vc.compilation_config.cudagraph_mode.has_full_cudagraphs()
        for vname, lname in (("cg_buf_tile_scheduler_metadata",
                              "decode_tile_scheduler_metadata_buffer"),
                             ("cg_buf_num_splits", "decode_num_splits_buffer")):
            seen.add(lname)
            pairs.append((f"builder.{vname} (shape) ~ {lname}",
                          _shape(getattr(vb, vname)) if dense else None,
                          _shape(lib.get(lname))))
    if s.variant == "AMX_MLA":
        for part, attrs in AMX_ATTRS.items():
            obj = getattr(v, part)
            if obj is None:
                continue  # paired with None above
            for a in attrs:
                lname = f"{part}_{a}"
                seen.add(lname)
                pairs.append((f"{part}.{a} (AMXMLAMetadataBuilder's attribute)",
                              getattr(obj, a, MISSING), lib.get(lname, MISSING)))
    # the builder's own answers (compare.builder_answer_pairs), under the item's patches
    pairs += builder_answer_pairs(vb, vc, lb, patches if patches is not None else mla_patched(s))
    for name in lib:
        if name in seen:
            continue
        if name in EXTENSIONS or name.startswith("decode_scheduler_"):
            pairs.append((f"{name} (libattn extension; nothing of vLLM's this batch)", None,
                          lib[name]))
            continue
        pairs.append((f"{name} (libattn field vLLM 0.33 lacks)", MISSING, lib[name]))
    return [(n, "absent" if a is MISSING else a, "absent" if c is MISSING else c)
            if (a is MISSING or c is MISSING) else (n, a, c) for n, a, c in pairs]


def optimistic_prefill_rows(b: Batch, v: Any) -> bool:
    """Whether a row vLLM's build counted as a prefill has an upper bound above its exact
    length (sides.step_inputs raises it on some spec-decode rows)."""
    from .sides import step_inputs
    ub = step_inputs(b)["seq_lens_cpu_upper_bound"]
    nd = int(v.num_decodes)
    return bool((ub[nd:b.n] != b.seq[nd:b.n]).any())


def _i32(x: Any) -> Any:
    if x is None:
        return None
    import torch
    if isinstance(x, torch.Tensor):
        return x.numpy().astype(np.int32)
    return np.asarray(x).astype(np.int32)


def _chunk_pairs(cc: Any, md: Any, lib: Dict[str, Any], seen: set, vb: Any) -> List[Pair]:
    """ChunkedContextMetadata against libattn's prefill_chunked_context_* fields: None against
    None; else its own lists, the workspace's rows against the workspace size, and every
    ContextChunk field against libattn's chunk of the same index (mla_context_chunks())."""
    P = "prefill_chunked_context_"
    names = [n for n in lib if n.startswith(P)]
    seen.update(names)
    if cc is None:
        return [(f"{n} (chunked_context is None)", None, lib[n]) for n in names]
    chunks = md.mla_context_chunks() or []
    rows = vb.chunked_prefill_workspace_size
    if vb.dcp_world_size > 1:
        rows += rows // vb.dcp_world_size
    out: List[Pair] = [
        ("prefill.chunked_context.context_lens", _i32(cc.context_lens),
         _i32(lib.get(P + "context_lens"))),
        ("prefill.chunked_context.context_lens_list", list(cc.context_lens_list),
         _i32(lib.get(P + "context_lens_list")).tolist()),
        ("prefill.chunked_context.empty_token_slices",
         [(x.start, x.stop) for x in cc.empty_token_slices],
         [tuple(x) for x in _i32(lib.get(P + "empty_token_slices")).tolist()]),
        ("prefill.chunked_context.workspace rows ~ chunked_prefill_workspace_size (+ / dcp)",
         int(cc.workspace.shape[0]), int(rows)),
        ("len(prefill.chunked_context.chunks) ~ prefill_chunked_context_num_chunks",
         len(cc.chunks), len(chunks))]
    for vc, lc in zip(cc.chunks, chunks):
        i = vc.index
        c = f"prefill.chunked_context.chunks[{i}]"
        for f in ("index", "continuation_token_end", "num_context_tokens", "max_query_len",
                  "max_seq_len", "num_local_context_tokens"):
            out.append((f"{c}.{f}", int(getattr(vc, f)), lc[f]))
        for f in ("is_continuation", "all_rows_active"):
            out.append((f"{c}.{f}", bool(getattr(vc, f)), lc[f]))
        for f in ("request_slice", "token_slice"):
            x = getattr(vc, f)
            out.append((f"{c}.{f}", (x.start, x.stop), (lc[f].start, lc[f].stop)))
        for f in ("query_start_loc", "cu_seq_lens", "starts", "seq_lens", "token_to_seq",
                  "padded_local_cu_seq_lens", "padded_local_token_to_seq"):
            out.append((f"{c}.{f}", _i32(getattr(vc, f)), _i32(lc[f])))
        for f in ("padded_local_seq_lens", "local_context_lens_allranks", "local_starts"):
            out.append((f"{c}.{f}", getattr(vc, f), lc[f]))
    return out


def _sliding_window_pairs(sw: Any, lib: Dict[str, Any], seen: set, vb: Any) -> List[Pair]:
    """The prefill part's sliding_window (_SlidingWindowMetadata: its chunks, the workspace)
    against libattn's prefill_sliding_window_* fields: None against None (no prefills); else
    the chunk count, each chunk's scalars against the host lists' entry and its tensors against
    its slice of the concatenated tensors (the layout of docs/backends/mla.md), the workspace's
    rows against the chunked-prefill workspace size."""
    P = "prefill_sliding_window_"
    names = [n for n in lib if n.startswith(P)]
    seen.update(names)
    if sw is None:
        return [(f"{n} (prefill.sliding_window is None)", None, lib[n]) for n in names]
    got = {n[len(P):]: lib[n] for n in names}
    out: List[Pair] = [("len(prefill.sliding_window.chunks) ~ " + P + "num_chunks",
                        len(sw.chunks), got.get("num_chunks", MISSING)),
                       ("prefill.sliding_window.workspace rows ~ chunked_prefill_workspace_size",
                        int(sw.workspace.shape[0]), int(vb.chunked_prefill_workspace_size))]
    tok = 0
    for i, ch in enumerate(sw.chunks):
        c = f"prefill.sliding_window.chunks[{i}]"
        for f in ("req_start", "req_end", "query_start", "query_end", "num_kv_tokens",
                  "max_seq_len_q", "max_seq_len_k"):
            lst = got.get("chunk_" + f)
            out.append((f"{c}.{f}", int(getattr(ch, f)),
                        MISSING if lst is None or i >= len(lst) else int(lst[i])))
        n = ch.req_end - ch.req_start
        base = ch.req_start + i
        for f, lo, hi in (("cu_seq_lens_q", base, base + n + 1),
                          ("cu_seq_lens_k", base, base + n + 1),
                          ("starts", ch.req_start, ch.req_end),
                          ("token_to_seq", tok, tok + ch.num_kv_tokens)):
            t = got.get("chunk_" + f)
            out.append((f"{c}.{f}", _i32(getattr(ch, f)),
                        MISSING if t is None else _i32(t)[lo:hi]))
        tok += ch.num_kv_tokens
    for f in ("cu_seq_lens_q", "cu_seq_lens_k", "starts", "token_to_seq"):
        t = got.get("chunk_" + f)
        want = {"cu_seq_lens_q": sum(x.req_end - x.req_start + 1 for x in sw.chunks),
                "cu_seq_lens_k": sum(x.req_end - x.req_start + 1 for x in sw.chunks),
                "starts": sum(x.req_end - x.req_start for x in sw.chunks),
                "token_to_seq": tok}[f]
        out.append((f"{P}chunk_{f} length", want, MISSING if t is None else len(_i32(t))))
    return out


def mla_item(variant: str) -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        s = settings(variant, b)
        vb, vc = vllm_builder(ctx, s)
        cm = vllm_common(ctx, b, **_inputs(ctx, b, s))
        with set_current_vllm_config(vc), mla_patched(s):
            out = vb.build_for_cudagraph_capture(cm) if capture(s, b) else vb.build(0, cm)
            b._mla_recorded = dict(RECORDED)
        return out

    def l(ctx: Any, b: Batch) -> Any:
        s = settings(variant, b)
        vb, vc = vllm_builder(ctx, s)
        lb = lib_builder(ctx, s, vc)
        cm = lib_common(ctx, b, **_inputs(ctx, b, s))
        return lb.build_for_cudagraph_capture(cm) if capture(s, b) else lb.build(cm)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        s = settings(variant, b)
        RECORDED.clear()
        RECORDED.update(getattr(b, "_mla_recorded", {}))
        return mla_pairs(ctx, s, b, vmd, lmd)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        s = settings(variant, b)
        parts = [("capture" if capture(s, b) else "build"),
                 "decodes" if vmd.num_decodes else "no decodes",
                 "prefills" if vmd.num_prefills else "no prefills"]
        if s.dcp > 1:
            parts.append(f"dcp {s.dcp}/{s.interleave}")
        if s.fp8:
            parts.append("fp8")
        if s.non_causal:
            parts.append("non-causal")
        sw = getattr(vmd.prefill, "sliding_window", None) if vmd.prefill is not None else None
        if sw is not None:
            parts.append(f"{min(len(sw.chunks), 2)}{'+' if len(sw.chunks) > 1 else ''} window "
                         f"chunk{'s' if len(sw.chunks) > 1 else ''}")
        if s.fa_version:
            parts.append(f"FA{s.fa_version}")
        if vmd.num_prefills:
            parts.append(f"prefill {s.prefill or 'auto'} on {s.capability}"
                         + (" with FP8 queries" if s.quantize and s.fp8 else ""))
        if vmd.num_prefills and optimistic_prefill_rows(b, vmd):
            parts.append("optimistic prefill bounds")
        return ", ".join(parts)

    def sides(ctx: Any, b: Batch) -> Sides:
        s = settings(variant, b)
        vb, vc = vllm_builder(ctx, s)
        return Sides(b, vb, vc, lib_builder(ctx, s, vc), lambda: mla_patched(s))

    return with_draft_update(Item(
                variant, "builder", v, l, pairs, block_sizes=BLOCK_SIZES[variant], max_spec=3,
                max_requests=256, path=path, kinds=VARIANT_KINDS,
                notes=[f"not comparable: {k}: {why}" for k, why in PREFILL_NOT_COMPARABLE.items()]
                + ["libattn prefill fields vLLM 0.33 lacks, not compared (documented): "
                   + ", ".join(PREFILL_EXTENSIONS)]), sides)


def mla_items() -> List[Item]:
    return [mla_item(v) for v in VARIANTS]
