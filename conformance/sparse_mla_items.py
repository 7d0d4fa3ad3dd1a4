"""The sparse MLA builders: vLLM 0.33's FlashMLASparseMetadataBuilder (FLASHMLA_SPARSE;
``SparseMLACommonMetadataBuilder`` in vllm/model_executor/layers/attention/sparse_mla_attention.py
and vllm/v1/attention/backends/mla/flashmla_sparse.py) against libattn's builder of the same name,
on the lane's random batches: every field of vLLM's metadata object (``dataclasses.fields``,
recursively: the prefill part as ``prefill_*`` with its ContextChunks, the fp8 part as
``fp8_extra_metadata_*`` with its prefill chunks) and the builder's answers.

vLLM's side is a real VllmConfig for a weightless DeepSeek-V3.2-shaped model (the MLA dimensions
of mla_items, ``index_topk`` and the query heads from a profile: 16 or 64 heads, top-k 2048 or
256, so that both fp8 paths, the mixed batch below 32 heads and the separate prefill/decode from
32 on, and dense-MHA prefills run) and a real MLAAttentionSpec; per batch: speculative tokens k,
parallel drafting, DCP (16 heads only: vLLM refuses the separate path under DCP, and libattn
too), an fp8_ds_mla or bf16 cache, full CUDA graphs or none and ``build_for_cudagraph_capture``.

What a CPU cannot run is replaced around the construction and the builds only (``patched``):
the model's attention layer (mla_items' stand-in: MLA dimensions, FLASH_ATTN prefill backend, DCP
manager), the DCP group's size, ``current_platform`` in the two modules (a proxy answering
``is_cuda()`` True and capability 9.0, the GPU's answers: the chunked context aligns its chunks to
blocks on CUDA only), the pinned host tensors (``PIN_MEMORY`` and ``pin_memory=True``: no CUDA
driver), the SM count, and FlashMLA's ``get_mla_metadata`` (it takes no argument and returns the
library's lazily filled scheduler object: nothing of it is index math, so libattn returns None).
``req_id_per_token`` is vLLM's Triton kernel (``compute_token_to_req_indices``) run by Triton's
CPU interpreter on every ``TRITON_EVERY``-th batch; on the others the lane hands vLLM's
CommonAttentionMetadata its documented ``_token_to_req_indices_cache`` from a numpy restatement
of that kernel (the triton item compares libattn's op with the kernel itself on its own batches),
since the interpreter costs ~0.3 s a batch.
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

from .batches import Batch, dummy_uniform_decode
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm, kv_dtype_name
from .draft_update import Sides, with_draft_update
from .item import OPTIMISTIC_SPEC_DUMMY, Item, choice_rng
from .lru import cached
from .mla_items import (LAYER, MLA_DIMS, NUM_SMS, MAX_CAPTURE, PREFILL_BACKENDS,
                        PREFILL_EXTENSIONS, _ABSENT,
                        _PrefillBackendStandIn, _chunk_pairs, optimistic_prefill_rows, zlib_crc)
from .sides import lib_common, vllm_common

MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN = 256, 65536, 131072
BLOCK_SIZES = (64, 128)  # MultipleOf(64)
#: (query heads, index_topk) per model profile
MODELS = ((16, 2048), (64, 2048), (16, 256), (64, 256))
TRITON_EVERY = 100
VARIANTS = {
    "FLASHMLA_SPARSE": ("vllm.v1.attention.backends.mla.flashmla_sparse",
                        "FlashMLASparseMetadataBuilder"),
    "FLASH_ATTN_MLA_SPARSE": ("vllm.v1.attention.backends.mla.flashattn_mla_sparse",
                              "FlashAttnMLASparseMetadataBuilder"),
    "FLASHINFER_MLA_SPARSE": ("vllm.v1.attention.backends.mla.flashinfer_mla_sparse",
                              "FlashInferMLASparseTRTLLMMetadataBuilder"),
    "FLASHINFER_MLA_SPARSE_SM120": ("vllm.v1.attention.backends.mla.flashinfer_mla_sparse",
                                    "FlashInferMLASparseMetadataBuilder"),
    "FLASH_ATTN_MLA_SPARSE_FA4": ("vllm.v1.attention.backends.mla.flashattn_mla_sparse",
                                  "FlashAttnMLASparseFA4MetadataBuilder"),
    "FLASHINFER_MLA_SPARSE_SM90": ("vllm.v1.attention.backends.mla.flashinfer_mla_sparse_sm90",
                                   "FlashInferMLASparseSM90Builder"),
}
SM90 = "FLASHINFER_MLA_SPARSE_SM90"
#: kernel block sizes (get_supported_kernel_block_sizes: MultipleOf(64), FlashInfer's 32)
VARIANT_BLOCKS = {"FLASHINFER_MLA_SPARSE": (32, 64, 128)}
#: cache dtypes besides bf16 ("fp8" = fp8_ds_mla for FLASHMLA_SPARSE)
FP8_VARIANTS = ("FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120", SM90)
#: backends whose selection refuses DCP (libattn refuses at create), or whose builder vLLM
#: refuses with >= 32 heads
NO_DCP = ("FLASH_ATTN_MLA_SPARSE",)
PROFILES = 24

#: vLLM objects a C library cannot hold
NOT_COMPARABLE = {
    "prefill.prefill_backend": "the layer's prefill backend object: its name against "
                               "libattn's prefill_prefill_backend",
    "prefill.chunked_context.workspace": "the builder's workspace tensor (the runtime's): its "
                                         "rows against the workspace size",
    "fp8_extra_metadata.scheduler_metadata": "FlashMLA's FlashMLASchedMeta (get_mla_metadata() "
                                             "takes no input; filled by the kernel): libattn None",
    "fp8_extra_metadata.decode.kernel_metadata.scheduler_metadata": "same",
    "fp8_extra_metadata.dummy_block_table": "torch.empty rows (ignored by the kernel with "
                                            "indices): shape compared",
    "fp8_extra_metadata.decode.kernel_metadata.dummy_block_table": "same",
}


class Settings(tuple):
    fields = ("variant", "block_size", "spec", "parallel_drafting", "dcp", "rank", "interleave",
              "fp8", "full", "heads", "topk")

    def __new__(cls, *values: Any) -> "Settings":
        return tuple.__new__(cls, values)

    def __getattr__(self, name: str) -> Any:
        return self[self.fields.index(name)]


def settings(variant: str, b: Batch) -> Settings:
    p = int(choice_rng(b, 40).integers(0, PROFILES))
    r = np.random.default_rng([zlib_crc(variant), p])
    heads, topk = MODELS[int(r.integers(0, len(MODELS)))]
    if variant == "FLASHINFER_MLA_SPARSE_SM120":
        topk = 2048  # its supports_combination requires it (libattn refuses at create)
    dcp = int(r.choice([1, 1, 1, 2, 4])) if variant not in NO_DCP else 1
    if variant == "FLASHMLA_SPARSE" and heads >= 32 and r.random() < 0.8:
        dcp = 1  # vLLM refuses DCP on the separate path (libattn too): one in five probes it
    inter = int(r.choice([1, 8, 16])) if dcp > 1 else 1
    rank = int(r.integers(0, dcp))
    fp8 = bool(variant in FP8_VARIANTS and r.random() < 0.6)
    if variant == "FLASHINFER_MLA_SPARSE_SM120":
        fp8 = bool(r.random() < 0.5)
    full = bool(r.random() < 0.5)
    pd = bool(b.spec and r.random() < 0.25)
    return Settings(variant, b.block_size, b.spec, pd, dcp, rank, inter, fp8, full, heads, topk)


def capture(s: Settings, b: Batch) -> bool:
    """build_for_cudagraph_capture (the base class's: build) on a third of the full-graph
    batches whose queries are uniform, and on every uniform decode dummy batch of vLLM's
    runner (batches.dummy_uniform_decode)."""
    q = b.q[b.q > 0]
    uniform = b.n > 0 and q.size > 0 and bool((q == q[0]).all())
    return s.full and uniform and (dummy_uniform_decode(b) or choice_rng(b, 41).random() < 0.35)


def twice(s: Settings, b: Batch) -> bool:
    """FLASHINFER_MLA_SPARSE_SM90 on a third of the batches: the batch built twice on both sides
    (a draft step's rebuild), the second build reusing the first's FlashInfer plan."""
    return s.variant == SM90 and choice_rng(b, 43).random() < 0.35


# ---- vLLM's side ---------------------------------------------------------------------------

class _Platform:
    """current_platform as the sparse builders ask it on an SM 9.0 GPU."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def is_cuda(self) -> bool:
        return True

    def is_device_capability_family(self, family: int, *a: Any, **k: Any) -> bool:
        return family == 90

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _TorchNoPin:
    """flashmla_sparse's ``torch`` with pin_memory dropped (no CUDA driver here)."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def zeros(self, *a: Any, **k: Any) -> Any:
        k.pop("pin_memory", None)
        return self._real.zeros(*a, **k)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def variant_module(variant: str) -> Any:
    """The variant's module. flashattn_mla_sparse.py imports flash_attn_varlen_func from
    vllm.vllm_flash_attn, which needs the CUDA extensions: a stand-in module lends the name for
    the duration of the import (the builders never call it)."""
    name = VARIANTS[variant][0]
    if "flashattn" not in name:
        return importlib.import_module(name)
    return import_without_flash_attn(name)


def import_without_flash_attn(name: str) -> Any:
    """Module ``name``, imported (if not already) with a stand-in vllm.vllm_flash_attn lending
    flash_attn_varlen_func for the duration of the import (also mla_items' dots3 variant)."""
    import sys
    if name in sys.modules:
        return importlib.import_module(name)
    keys = ("vllm.vllm_flash_attn", "vllm.vllm_flash_attn.flash_attn_interface")
    saved = {k: sys.modules.get(k, _ABSENT) for k in keys}
    for k in keys:
        stub = types.ModuleType(k)
        stub.__path__ = []  # a package, for the submodule's import
        stub.flash_attn_varlen_func = None
        stub.is_fa_version_supported = lambda *a, **k: False  # (dots3's audio encoder asks)
        sys.modules[k] = stub
    try:
        return importlib.import_module(name)
    finally:
        for k, value in saved.items():
            if value is _ABSENT:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = value


@contextlib.contextmanager
def patched(s: Settings) -> Iterator[None]:
    undo = []

    def put(obj: Any, name: str, value: Any) -> None:
        undo.append((obj, name, getattr(obj, name, _ABSENT)))
        setattr(obj, name, value)
    try:
        sma = importlib.import_module("vllm.model_executor.layers.attention.sparse_mla_attention")
        mod = variant_module(s.variant)
        put(sma, "get_dcp_group", lambda: types.SimpleNamespace(world_size=s.dcp,
                                                                rank_in_group=s.rank))
        put(sma, "PIN_MEMORY", False)
        for m in (sma, mod):
            if not hasattr(m, "current_platform"):
                continue
            real = m.current_platform
            put(m, "current_platform", real if isinstance(real, _Platform) else _Platform(real))
        if not isinstance(mod.torch, _TorchNoPin):
            put(mod, "torch", _TorchNoPin(mod.torch))
        if hasattr(mod, "num_compute_units"):
            put(mod, "num_compute_units", lambda *a, **k: NUM_SMS)
        if hasattr(mod, "get_mla_metadata"):
            put(mod, "get_mla_metadata",
                lambda *a, **k: (types.SimpleNamespace(lazy=True), None))
        if s.variant == SM90:
            import sys
            for k in ("flashinfer", "flashinfer.mla"):
                undo.append((sys.modules, k, sys.modules.get(k, _ABSENT)))
            stub = types.ModuleType("flashinfer.mla")
            stub.BatchMLAPagedAttentionWrapper = _Sm90Wrapper
            sys.modules["flashinfer.mla"] = stub
            sys.modules.setdefault("flashinfer", types.ModuleType("flashinfer"))
            # the Triton clamp of the planned work items' kv_end runs on FlashInfer's workspace
            put(mod, "_clamp_work_kv_end", _NoLaunch())
            import torch
            # plan() refuses to run inside a CUDA graph capture; asking needs a CUDA driver
            put(torch.cuda, "is_current_stream_capturing", lambda: False)
            real_state = mod._SM90State
            if not getattr(real_state, "_lane", False):
                put(mod, "_SM90State", _lane_sm90_state(real_state))
        fi = importlib.import_module("vllm.v1.attention.backends.mla.flashinfer_mla_sparse")
        # the TRT-LLM builders size a global trtllm-gen workspace under DCP (kernel memory, up
        # to GBs; not metadata)
        put(fi, "_get_workspace_buffer", lambda *a, **k: None)
        yield
    finally:
        for obj, name, value in reversed(undo):
            if isinstance(obj, dict):
                if value is _ABSENT:
                    obj.pop(name, None)
                else:
                    obj[name] = value
            elif value is _ABSENT:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


def _lane_sm90_state(real: Any) -> Any:
    """_SM90State with the kernel memory it allocates at construction (FlashInfer's 128 MiB
    workspace, the max_tokens x top-k kv_indices, 512 MiB here) dropped right after: only
    FlashInfer's wrapper and the index packing use them, and the lane keeps many builders."""
    import torch

    mod = importlib.import_module(VARIANTS[SM90][0])

    class _SmallKvIndices:
        """The module's torch while the state is made: kv_indices (max_tokens x top-k) small."""

        def zeros(self, *a: Any, **k: Any) -> Any:
            if a and isinstance(a[0], int) and a[0] >= 1 << 22:
                return torch.zeros(1, dtype=k.get("dtype"))
            return torch.zeros(*a, **k)

        def __getattr__(self, name: str) -> Any:
            return getattr(torch, name)

    class LaneSM90State(real):  # type: ignore[misc, valid-type]
        _lane = True

        def __init__(self, *a: Any, **k: Any) -> None:
            saved = mod.torch
            mod.torch = _SmallKvIndices()
            try:
                super().__init__(*a, **k)
            finally:
                mod.torch = saved
            self.workspace = torch.empty(0, dtype=torch.uint8)
    return LaneSM90State


class _NoLaunch:
    """A Triton kernel's launcher that launches nothing (kernel[grid](...))."""

    def __getitem__(self, grid: Any) -> Any:
        return lambda *a, **k: None


def _model(ctx: Any, heads: int, topk: int) -> Any:
    cache = ctx.__dict__.setdefault("sparse_mla_models", {})
    if (heads, topk) not in cache:
        from vllm.config import ModelConfig
        d = tempfile.mkdtemp(prefix="libattn-vllm-sparse-mla-model-")
        json.dump({"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32",
                   "hidden_size": 7168, "num_attention_heads": heads,
                   "num_key_value_heads": heads, "num_hidden_layers": 2,
                   "intermediate_size": 18432, "moe_intermediate_size": 2048,
                   "vocab_size": 129280, "max_position_embeddings": MAX_MODEL_LEN,
                   "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
                   "first_k_dense_replace": 1, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-6,
                   "index_topk": topk, "index_n_heads": 64, "index_head_dim": 128, **MLA_DIMS},
                  open(os.path.join(d, "config.json"), "w"))
        cache[(heads, topk)] = ModelConfig(model=d, skip_tokenizer_init=True,
                                           max_model_len=MAX_MODEL_LEN, dtype="bfloat16")
    return cache[(heads, topk)]


def _vllm_config(ctx: Any, s: Settings) -> Any:
    from vllm.config import CacheConfig, DeviceConfig, SchedulerConfig, VllmConfig
    from vllm.config.compilation import CUDAGraphMode
    vc = VllmConfig(model_config=_model(ctx, s.heads, s.topk),
                    device_config=DeviceConfig(device="cpu"),
                    scheduler_config=SchedulerConfig(
                        max_num_seqs=MAX_SEQS, max_num_batched_tokens=MAX_TOKENS,
                        max_model_len=MAX_MODEL_LEN, is_encoder_decoder=False),
                    cache_config=CacheConfig())
    vc.cache_config.block_size = s.block_size
    vc.cache_config.cache_dtype = "fp8_ds_mla" if s.fp8 else "auto"
    if s.fp8 and s.variant in ("FLASHINFER_MLA_SPARSE", SM90):
        vc.cache_config.cache_dtype = "fp8"
    vc.parallel_config.decode_context_parallel_size = s.dcp
    vc.parallel_config.cp_kv_cache_interleave_size = s.interleave
    cc = vc.compilation_config
    cc.cudagraph_mode = CUDAGraphMode.FULL_AND_PIECEWISE if s.full else CUDAGraphMode.NONE
    cc.max_cudagraph_capture_size = MAX_CAPTURE if s.full else None
    if s.spec:
        object.__setattr__(vc, "speculative_config", types.SimpleNamespace(
            num_speculative_tokens=s.spec, parallel_drafting=s.parallel_drafting,
            method="ngram", enable_adaptive_verification=False))
    # after the speculative config: the runner (V1 / V2) vLLM picks depends on it
    from .vllm_env import engine_capture_sizes
    engine_capture_sizes(vc, s.spec)
    layer = types.SimpleNamespace(non_causal_multi_token_decode=False,
                                  prefill_backend=_PrefillBackendStandIn(), **MLA_DIMS)
    if s.dcp > 1:
        from vllm.v1.attention.ops.dcp import MLADCPManager
        m = MLADCPManager.__new__(MLADCPManager)
        m.init_kv_gather = lambda *args, **kwargs: None
        layer.dcp_manager = m
    if s.variant == SM90:
        _sm90_layer(layer, vc, s)
    cc.static_forward_context[LAYER] = layer
    return vc


class _Sm90Wrapper:
    """FlashInfer's BatchMLAPagedAttentionWrapper for _SM90State on a CPU: plan() records that
    it ran (the host staging it reads is the state's own) and leaves a plan_info with no work
    items (max_works 0: the device clamp of the planned kv_end has nothing to do)."""

    def __init__(self, *a: Any, **k: Any) -> None:
        import torch
        self.plans = 0
        self._plan_info = [0] * 18
        self._planned_backend = types.SimpleNamespace(
            _int_workspace_buffer=torch.zeros(16, dtype=torch.uint8))

    def plan(self, *a: Any, **k: Any) -> None:
        self.plans += 1


def _sm90_layer(layer: Any, vc: Any, s: Settings) -> None:
    """The layer FlashInferMLASparseSM90Builder reads: an SM90 impl (its heads, dims, scale and
    top-k buffer width; masked MHA unavailable on 9.x) and MLAAttention._use_sparse_mha itself,
    bound to the stand-in."""
    import torch
    sm90 = importlib.import_module(VARIANTS[SM90][0])
    from vllm.model_executor.layers.attention.mla_attention import MLAAttention
    impl = object.__new__(sm90.FlashInferMLASparseSM90Impl)
    impl.__dict__.update(num_heads=s.heads, kv_lora_rank=MLA_DIMS["kv_lora_rank"],
                         qk_rope_head_dim=MLA_DIMS["qk_rope_head_dim"], scale=0.1,
                         _topk_indices_buffer=torch.empty((1, s.topk), dtype=torch.int32),
                         masked_mha_available=False, dcp_world_size=s.dcp)
    layer.impl = impl
    layer.hisparse_cache = None
    layer._vllm_config = vc
    layer._use_sparse_mha = types.MethodType(MLAAttention._use_sparse_mha, layer)


def _cache(ctx: Any, key: Any, make: Any) -> Any:
    # PROFILES builders at most (vLLM's and libattn's): each holds persistent buffers (the
    # chunked-prefill workspace; FLASHINFER_MLA_SPARSE_SM90's _SM90State kv_indices,
    # max_num_batched_tokens x top-k int32, and its 128 MiB workspace), and the spec-heavy
    # batches (OPTIMISTIC_SPEC) make more settings live at once; both sides' builders still
    # live and die together
    return cached(ctx, "sparse_mla_builders", key, make, PROFILES)


def vllm_builder(ctx: Any, s: Settings) -> Tuple[Any, Any]:
    def make() -> Tuple[Any, Any]:
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.v1.kv_cache_interface import MLAAttentionSpec
        vc = _vllm_config(ctx, s)
        # fp8_ds_mla: 656 bytes a token (uint8); bf16: 576 elements
        spec = MLAAttentionSpec(block_size=s.block_size, num_kv_heads=1,
                                head_size=656 if s.fp8 else 576,
                                dtype=torch.uint8 if s.fp8 else torch.bfloat16,
                                cache_dtype_str="fp8_ds_mla" if s.fp8 else None)
        cls = getattr(variant_module(s.variant), VARIANTS[s.variant][1])
        with set_current_vllm_config(vc), patched(s):
            return cls(spec, [LAYER], vc, torch.device("cpu")), vc
    return _cache(ctx, ("vllm",) + tuple(s), make)


def lib_builder(ctx: Any, s: Settings, vc: Any) -> Any:
    def make() -> Any:
        libattn = ctx.libattn
        cg = int(libattn.CudagraphMode[vc.compilation_config.cudagraph_mode.name])
        kv = libattn.KvDtype
        # vLLM's scheduler raises max_num_batched_tokens to max_model_len here (no chunked
        # prefill); SM90's plan staging is that long
        tokens = int(vc.scheduler_config.max_num_batched_tokens) if s.variant == SM90 \
            else MAX_TOKENS
        cfg = libattn.BuilderConfig(
            MAX_SEQS, tokens, MAX_MODEL_LEN, s.heads,
            decode_context_parallel_size=s.dcp, dcp_rank=s.rank,
            cp_kv_cache_interleave_size=s.interleave, num_speculative_tokens=s.spec,
            parallel_drafting=int(s.parallel_drafting),
            use_v2_model_runner=int(bool(vc.use_v2_model_runner)), cudagraph_mode=cg,
            max_cudagraph_capture_size=MAX_CAPTURE if s.full else 0,
            cache_dtype=kv.FP8_E4M3 if s.fp8 else kv.AUTO, model_dtype=kv.BFLOAT16,
            device_capability=90, num_sms=NUM_SMS,
            mla_kv_lora_rank=MLA_DIMS["kv_lora_rank"],
            mla_qk_rope_head_dim=MLA_DIMS["qk_rope_head_dim"],
            mla_qk_nope_head_dim=MLA_DIMS["qk_nope_head_dim"],
            mla_v_head_dim=MLA_DIMS["v_head_dim"])
        # libattn's MLA spec: the latent head (576) of the cache's element type; 0 = 2048 in
        # half the builders
        topk = 0 if s.topk == 2048 and s.rank % 2 == 0 else s.topk
        spec = libattn.KvCacheSpec(s.block_size, 1, 576, kind=libattn.KvCacheKind.MLA,
                                   dtype=kv.FP8_E4M3 if s.fp8 else kv.BFLOAT16, index_topk=topk)
        return ctx.lib.builder(s.variant, spec, cfg)
    if s.variant == SM90:
        # the plan is builder state on both sides: the two builders live and die together
        vb = vllm_builder(ctx, s)[0]
        if getattr(vb, "_lane_lib_builder", None) is None:
            vb._lane_lib_builder = make()
        return vb._lane_lib_builder
    return _cache(ctx, ("lib",) + tuple(s), make)


def token_to_req_numpy(b: Batch) -> Any:
    """compute_token_to_req_indices restated (v1/attention/ops/metadata.py): for t below
    query_start_loc_cpu[-1] the request whose query holds t (the first r with qsl[r + 1] > t,
    at most n - 1), 0 from there to num_actual_tokens."""
    import torch
    qsl = np.asarray(b.qsl_cpu, dtype=np.int64)
    n = b.n
    mapped = int(qsl[n]) if n else 0
    out = np.zeros(max(mapped, b.tokens), dtype=np.int32)
    if n:
        t = np.arange(mapped)
        out[:mapped] = np.minimum(np.searchsorted(qsl[1:n + 1], t, side="right"), n - 1)
    return torch.from_numpy(out)


# ---- the comparison ------------------------------------------------------------------------

def _shape(x: Any) -> Any:
    return None if x is None else tuple(int(d) for d in x.shape)


def _host(x: Any) -> Any:
    return None if x is None else np.asarray(x).astype(np.int32).reshape(-1).tolist()


def sparse_pairs(ctx: Any, s: Settings, b: Batch, v: Any, md: Any, *, builders: Any = None,
                 field_pairs: Any = None, extra: Any = None,
                 patches: Any = None) -> List[Pair]:
    """Every field of vLLM's sparse metadata ``v`` against libattn's ``md``, and the builders'
    answers. Another sparse item (rocm_aiter_mla_sparse_items) passes its ``builders`` (vLLM's
    builder, its VllmConfig, libattn's builder), ``field_pairs(name, value, lib, seen)`` (its
    pairs of a vLLM field, or None for the generic comparison), ``extra(lib, seen)`` (pairs of
    its own) and its ``patches`` (a context manager)."""
    lib = {n: md[n] for n in md.fields()}
    if builders is None:
        vb, vc = vllm_builder(ctx, s)
        lb = lib_builder(ctx, s, vc)
    else:
        vb, vc, lb = builders
    torch = ctx.torch
    pairs: List[Pair] = []
    seen = set()
    F = "fp8_extra_metadata"
    # every batch, including those whose uniform split made an async spec-decode row (an
    # optimistic seq_lens_cpu_upper_bound) a prefill: both sides read the bound for
    # prefill_max_seq_len, use_dense_mha, the chunked context and the fp8 chunks (counted in
    # the item's paths)
    for name, value in flatten_vllm(v):
        if name in ("decode", "prefill", F) and value is None:
            # a None part: every libattn field of it is None (the sparse metadata's decode part
            # is always None; its top-level decode_max_query_len and prefill_max_seq_len are
            # not the parts')
            own = [n for n in lib if n.startswith(name + "_")
                   and n not in ("decode_max_query_len", "prefill_max_seq_len")]
            pairs += [(f"{n} ({name} is None)", None, lib[n]) for n in own]
            seen.update(own)
            continue
        if name.startswith("prefill.chunked_context") or ".chunks[" in name:
            continue  # below, as a whole
        mine = field_pairs(name, value, lib, seen) if field_pairs is not None else None
        if mine is not None:
            pairs += mine
            continue
        if name == "state":  # FLASHINFER_MLA_SPARSE_SM90's _SM90State (the builder's)
            pairs += _sm90_state_pairs(value, lib, seen)
            continue
        if name in NOT_COMPARABLE:
            lname = name.replace(".", "_")
            seen.add(lname)
            if name == "prefill.prefill_backend":
                seen.add("prefill_prefill_backend")
                got = lib.get("prefill_prefill_backend", MISSING)
                pairs.append((name + ".get_name() ~ prefill_prefill_backend", value.get_name(),
                              PREFILL_BACKENDS[int(got)] if isinstance(got, int) else got))
            elif name.endswith("scheduler_metadata"):
                pairs.append((name + " (FlashMLA's object) ~ None", None, lib.get(lname, MISSING)))
            elif name.endswith("dummy_block_table"):
                pairs.append((name + " (shape)", _shape(value), _shape(lib.get(lname))))
            continue
        lname = name.replace(".", "_")
        seen.add(lname)
        if isinstance(value, torch.Tensor) and value.dim() == 0:
            value = value.item()
        got = lib.get(lname, MISSING)
        if isinstance(value, torch.dtype):
            value = kv_dtype_name(value)
            got = ctx.libattn.KvDtype(int(got)).name if isinstance(got, int) else got
        if got is MISSING and value is None:
            pairs.append((f"{name} (None in vLLM 0.33; no libattn field)", None, None))
            continue
        pairs.append((name, value, got))
    if v.prefill is not None:
        pairs += _chunk_pairs(v.prefill.chunked_context, md, lib, seen, vb)
    fp8 = getattr(v, "fp8_extra_metadata", None)
    prefill8 = getattr(fp8, "prefill", None)
    if prefill8 is not None:
        pairs += _fp8_chunk_pairs(v, prefill8, lib, seen, b)
    # the prefill backend's plan inputs libattn appends (as the dense items: not compared,
    # docs/backends/mla.md; vLLM 0.33 plans them inside its prefill backend)
    seen.update(PREFILL_EXTENSIONS)
    seen.add("chunked_prefill_workspace_size")
    pairs.append(("builder.chunked_prefill_workspace_size ~ chunked_prefill_workspace_size",
                  int(vb.chunked_prefill_workspace_size),
                  lib.get("chunked_prefill_workspace_size", MISSING)))
    if extra is not None:
        pairs += extra(lib, seen)
    pairs += builder_answer_pairs(vb, vc, lb, patches if patches is not None else patched(s))
    for name in lib:
        if name in seen:
            continue
        if name.startswith(F + "_"):
            pairs.append((f"{name} (libattn's flattened field; nothing of vLLM's this batch)",
                          None, lib[name]))
            continue
        pairs.append((f"{name} (libattn field vLLM 0.33 lacks)", MISSING, lib[name]))
    return [(n, "absent" if a is MISSING else a, "absent" if c is MISSING else c)
            if (a is MISSING or c is MISSING) else (n, a, c) for n, a, c in pairs]


def _sm90_state_pairs(st: Any, lib: Dict[str, Any], seen: set) -> List[Pair]:
    """The _SM90State after the build: its host staging for FlashInfer's plan (qo_indptr,
    kv_indptr, kv_len_arr), _planned_num_tokens, and whether this build planned again (the
    wrapper stand-in counts plan() calls) against libattn's state_* fields."""
    names = ("state_qo_indptr", "state_kv_indptr", "state_kv_len_arr",
             "state_planned_num_tokens", "state_replanned")
    seen.update(names)
    plans = st.wrapper.plans
    replanned = plans != getattr(st, "_lane_seen_plans", 0)
    st._lane_seen_plans = plans
    return [("state._qo_cpu ~ state_qo_indptr", st._qo_cpu.numpy(), lib.get(names[0])),
            ("state._kv_cpu ~ state_kv_indptr", st._kv_cpu.numpy(), lib.get(names[1])),
            ("state._lens_cpu ~ state_kv_len_arr", st._lens_cpu.numpy(), lib.get(names[2])),
            ("state._planned_num_tokens", int(st._planned_num_tokens), lib.get(names[3])),
            ("state: wrapper.plan() ran this build ~ state_replanned", replanned,
             bool(lib.get(names[4])))]


def _fp8_chunk_pairs(v: Any, p: Any, lib: Dict[str, Any], seen: set, b: Batch) -> List[Pair]:
    """FP8SeparatePrefillDecode.Prefill's chunks against libattn's per-chunk lists: the token
    slice, req_start_idx, chunk_tot_seqlen, and the chunk's block_table / workspace_starts /
    seq_lens rows as the [req_start_idx, req_end_idx) rows of the prefills' (libattn's
    block_table, fp8_extra_metadata_prefill_workspace_starts, seq_lens from num_decodes on)."""
    P = "fp8_extra_metadata_prefill_"
    names = [P + x for x in ("num_chunks", "chunk_token_start", "chunk_token_end",
                             "chunk_req_start_idx", "chunk_req_end_idx", "chunk_chunk_tot_seqlen")]
    seen.update(names)
    nd = int(v.num_decodes)
    ts, te = _host(lib.get(P + "chunk_token_start")), _host(lib.get(P + "chunk_token_end"))
    rs, re_ = _host(lib.get(P + "chunk_req_start_idx")), _host(lib.get(P + "chunk_req_end_idx"))
    tot = _host(lib.get(P + "chunk_chunk_tot_seqlen"))
    ws = np.asarray(lib.get(P + "workspace_starts"))
    bt = np.asarray(lib.get("block_table"))
    sl = np.asarray(lib.get("seq_lens"))
    out: List[Pair] = [("len(fp8_extra_metadata.prefill.chunks) ~ " + P + "num_chunks",
                        len(p.chunks), lib.get(P + "num_chunks"))]
    for i, c in enumerate(p.chunks):
        n = f"fp8_extra_metadata.prefill.chunks[{i}]"
        if rs is None or i >= len(rs):
            out.append((n, "a chunk", "absent"))
            continue
        a, z = rs[i], re_[i]
        out += [(f"{n}.tokens_slice", (c.tokens_slice.start, c.tokens_slice.stop), (ts[i], te[i])),
                (f"{n}.req_start_idx", int(c.req_start_idx), a),
                (f"{n}.chunk_tot_seqlen", int(c.chunk_tot_seqlen), tot[i]),
                (f"{n}.block_table ~ block_table[num_decodes + req_start:...]",
                 c.block_table.numpy(), bt[nd + a:nd + z]),
                (f"{n}.workspace_starts", c.workspace_starts.numpy(), ws[a:z]),
                (f"{n}.seq_lens", c.seq_lens.numpy(), sl[nd + a:nd + z])]
    return out


def sparse_item(variant: str) -> Item:
    def common_extra(ctx: Any, b: Batch, s: Settings, vllm_side: bool) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        if s.dcp > 1:
            t = ctx.vu.get_dcp_local_seq_lens(ctx.torch.from_numpy(b.seq), s.dcp, s.rank,
                                              s.interleave)
            out["dcp_local_seq_lens"] = np.ascontiguousarray(
                t.numpy().astype(np.int32).reshape(-1))
        return out

    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        s = settings(variant, b)
        vb, vc = vllm_builder(ctx, s)
        cm = vllm_common(ctx, b, **common_extra(ctx, b, s, True))
        if int(choice_rng(b, 42).integers(0, TRITON_EVERY)) != 0:
            cm._token_to_req_indices_cache = token_to_req_numpy(b)
        with set_current_vllm_config(vc), patched(s):
            if twice(s, b):
                vb.build(0, cm)
                vb.state._lane_seen_plans = vb.state.wrapper.plans  # the second build's own
            return vb.build_for_cudagraph_capture(cm) if capture(s, b) else vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        s = settings(variant, b)
        vb, vc = vllm_builder(ctx, s)
        lb = lib_builder(ctx, s, vc)
        cm = lib_common(ctx, b, **common_extra(ctx, b, s, False))
        if twice(s, b):
            lb.build(cm)
        return lb.build_for_cudagraph_capture(cm) if capture(s, b) else lb.build(cm)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        return sparse_pairs(ctx, settings(variant, b), b, vmd, lmd)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        s = settings(variant, b)
        parts = [("capture" if capture(s, b) else "build"),
                 "decodes" if vmd.num_decodes else "no decodes",
                 "prefills" if vmd.num_prefills else "no prefills",
                 f"{s.heads} heads"]
        if s.fp8 and hasattr(vmd, "fp8_use_mixed_batch"):
            parts.append("fp8 mixed" if vmd.fp8_use_mixed_batch else "fp8 separate")
        elif s.fp8:
            parts.append("fp8")
        if vmd.prefill is not None and vmd.prefill.use_dense_mha:
            parts.append("dense MHA")
        if vmd.prefill is not None and vmd.prefill.chunked_context is not None:
            parts.append("context")
        if s.dcp > 1:
            parts.append(f"dcp {s.dcp}/{s.interleave}")
        st = getattr(vmd, "state", None)
        if st is not None:
            parts.append("SM90 plan " + ("made" if st.wrapper.plans !=
                                         getattr(st, "_lane_seen_plans", 0) else "reused"))
        if vmd.num_prefills and optimistic_prefill_rows(b, vmd):
            parts.append("optimistic prefill bounds")
        return ", ".join(parts)

    def sides(ctx: Any, b: Batch) -> Sides:
        s = settings(variant, b)
        vb, vc = vllm_builder(ctx, s)
        return Sides(b, vb, vc, lib_builder(ctx, s, vc), lambda: patched(s))

    return with_draft_update(Item(
        variant, "builder", v, l, pairs, block_sizes=VARIANT_BLOCKS.get(variant, BLOCK_SIZES),
        max_spec=3, max_requests=256, path=path, **OPTIMISTIC_SPEC_DUMMY,
        notes=[f"not comparable: {k}: {why}" for k, why in NOT_COMPARABLE.items()]), sides)


def sparse_mla_items() -> List[Item]:
    return [sparse_item(v) for v in VARIANTS]
