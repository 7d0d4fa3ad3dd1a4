"""The metadata builders: vLLM 0.33's builder class (a real VllmConfig and KV cache spec) and
libattn's builder of the same name and settings, on the same batches; every field and scalar of
vLLM's metadata object (dataclasses.fields, recursively) against libattn's fields.

Backends: FLASH_ATTN, TRITON_ATTN, FLASHINFER, FLEX_ATTENTION, CPU_ATTN; wrappers (vLLM's
create_*_backend over TRITON_ATTN; libattn's kind/option on the same backend): chunked local,
KV-sharing fast prefill, cross, encoder-only.
"""
from __future__ import annotations

import contextlib
import copy
import importlib
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .batches import BLOCK_SIZES, ITEM_ATTRS, Batch
from .compare import MISSING, Pair, builder_answer_pairs, as_np, flatten_vllm, kv_dtype_name, lib_field_name
from .draft_update import Sides, with_draft_update
from .extensions import EXTENSIONS
from .item import Item, choice_rng
from .live_parts import live_pair
from .patches import NOT_COMPARABLE, patched
from .sides import lib_common, vllm_common

MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS = 1024, 65536, 131072, 32
NUM_GPU_BLOCKS = 32768  # cache_config.num_gpu_blocks (read by FLEX_ATTENTION)
#: FLEX_ATTENTION keeps max_num_seqs x num_gpu_blocks tables (physical_to_logical) that every
#: build rewrites whole, in both libattn and vLLM: its batches are bounded (<= 64 requests,
#: contexts summing to about 24k tokens) and its KV cache is 4096 blocks, so a build costs
#: milliseconds, not seconds
#: (and persistent_kv_indices, (max_num_batched_tokens / 16) x max_model_len, is 2 GB at the
#: other builders' sizes: FLEX gets a 32k model length and 16k batched tokens)
FLEX_LIMITS = dict(max_seqs=64, num_gpu_blocks=4096, max_requests=64, table_budget=24_000,
                   token_budget=12288, max_tokens=16384, max_model_len=32768)
#: FLASHINFER's build runs a Triton kernel per request (_copy_page_indices_kernel) in Triton's
#: interpreter (tens of milliseconds for 64 requests, seconds for 1024): bounded batches
FLASHINFER_LIMITS = dict(max_requests=64, table_budget=100_000)
MAX_ENCODER_LEN = 2048
LAYER = "model.layers.0.self_attn"

BACKENDS = {
    "FLASH_ATTN": ("vllm.v1.attention.backends.flash_attn", "FlashAttentionBackend"),
    "TRITON_ATTN": ("vllm.v1.attention.backends.triton_attn", "TritonAttentionBackend"),
    "FLASHINFER": ("vllm.v1.attention.backends.flashinfer", "FlashInferBackend"),
    "FLEX_ATTENTION": ("vllm.v1.attention.backends.flex_attention", "FlexAttentionBackend"),
    "CPU_ATTN": ("vllm.v1.attention.backends.cpu_attn", "CPUAttentionBackend"),
}
#: scratch buffers whose contents are uninitialised in both: compared by shape and dtype only
SCRATCH = ("softmax_segm_output", "softmax_segm_max", "softmax_segm_expsum")


def _backend_cls(backend: str, fa_version: int = 0) -> Any:
    """vLLM's backend class; FLASH_ATTN for a FlashAttention version from its module as
    imported with that version (patches.flash_attn_module)."""
    mod, cls = BACKENDS[backend]
    if backend == "FLASH_ATTN" and fa_version:
        from .patches import flash_attn_module
        return getattr(flash_attn_module(fa_version), cls)
    return getattr(importlib.import_module(mod), cls)


def _vllm_builder_cls(backend: str, wrapper: str, chunk: int, fa_version: int = 0) -> Any:
    base = _backend_cls(backend, fa_version)
    if wrapper == "ChunkedLocal":
        from vllm.model_executor.layers.attention.chunked_local_attention import (
            create_chunked_local_attention_backend)
        return create_chunked_local_attention_backend(base, chunk).get_builder_cls()
    if wrapper == "FastPrefill":
        from vllm.v1.attention.backends.utils import create_fast_prefill_custom_backend
        return create_fast_prefill_custom_backend("FastPrefill", base).get_builder_cls()
    if wrapper == "Cross":
        from vllm.model_executor.layers.attention.cross_attention import (
            create_cross_attention_backend)
        return create_cross_attention_backend(base).get_builder_cls()
    if wrapper == "EncoderOnly":
        from vllm.model_executor.layers.attention.encoder_only_attention import (
            create_encoder_only_attention_backend)
        return create_encoder_only_attention_backend(base).get_builder_cls()
    if wrapper == "StaticSink":  # the block size is the caller's: static_sink_items.sink_len
        raise ValueError("StaticSink's builder class needs sink_len: use _static_sink_cls")
    return base.get_builder_cls()


def _static_sink_cls(backend: str, sink_len: int, fa_version: int = 0) -> Any:
    """vLLM 0.33's create_static_sink_attention_backend(backend, sink_len)'s builder class."""
    from vllm.model_executor.layers.attention.static_sink_attention import (
        create_static_sink_attention_backend)
    return create_static_sink_attention_backend(_backend_cls(backend, fa_version),
                                                sink_len=sink_len).get_builder_cls()


def _block_pool_cls(backend: str, pool: int, fa_version: int = 0) -> Any:
    """vLLM 0.33's create_whisper_attention_backend_with_block_pooling(backend, pool)'s builder
    class (a full-attention layer: sliding_window None)."""
    import vllm.model_executor.models.whisper_causal as wc
    base = _backend_cls(backend, fa_version)
    real = wc.FlashAttentionBackend
    if backend == "FLASH_ATTN":
        # the lane's FlashAttention-version module (patches.flash_attn_module) is vLLM's source
        # imported once more: its class is vLLM's FlashAttentionBackend for the factory's
        # supported-backend check, which compares with the module it imported
        wc.FlashAttentionBackend = base
    try:
        return wc.create_whisper_attention_backend_with_block_pooling(base, pool).get_builder_cls()
    finally:
        wc.FlashAttentionBackend = real


def block_pool_size(b: Batch) -> int:
    """The BlockPool items' block_pool_size: 4, 2 or 8 by block size (which the builder cache
    keys on; the Whisper streaming models use 4 to 16)."""
    return {16: 4, 32: 2, 64: 8}.get(b.block_size, 3)


def _diffkv_cls(backend: str, head_size_v: int, fa_version: int = 0) -> Any:
    """vLLM 0.33's FLASH_ATTN_DIFFKV / TRITON_ATTN_DIFFKV builder class. FLASH_ATTN_DIFFKV's
    get_builder_cls is FlashAttentionBackend's (inherited): the FlashAttention version's module
    (patches.flash_attn_module) gives the same class. TRITON_ATTN_DIFFKV reads its class
    attribute head_size_v, which a layer sets (set_head_size_v) before the builder is made."""
    if backend == "FLASH_ATTN":
        from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
        from vllm.v1.attention.backends.flash_attn_diffkv import FlashAttentionDiffKVBackend
        assert FlashAttentionDiffKVBackend.get_builder_cls() is FlashAttentionBackend.get_builder_cls()
        return _backend_cls(backend, fa_version).get_builder_cls()
    from vllm.v1.attention.backends.triton_attn_diffkv import TritonAttentionDiffKVBackend
    TritonAttentionDiffKVBackend.set_head_size_v(head_size_v)
    return TritonAttentionDiffKVBackend.get_builder_cls()


def _qsa_cls(wrapper: str, fa_version: int) -> Any:
    """vLLM 0.33's Qwen4ExpQSAMetadataBuilder of the Qwen4QSA items (qwen4_qsa_items)."""
    from .qwen4_qsa_items import qsa_builder_cls
    return qsa_builder_cls(wrapper, fa_version)


def head_size_v(b: Batch) -> int:
    """The DiffKV items' AttentionSpec.head_size_v (the K head size stays the model's 128): 64,
    96, 192 or 256 by block size (which the builder cache keys on)."""
    return {16: 64, 32: 96, 64: 192}.get(b.block_size, 256)


def sink_len(b: Batch) -> int:
    """The StaticSink items' SinkFullAttentionSpec.sink_len: whole blocks, 64 tokens or one
    block (a function of the block size, which the builder cache keys on)."""
    return max(64, b.block_size)


def _item_batch(wrapper: str, b: Batch) -> Batch:
    """The batch as an item uses it: StaticSink's gets sink_len / block_size + 1 more table
    columns (vLLM copies cdiv(max_seq_len + sink_len, block_size) of them; max_seq_len may be
    the upper bound's), as a runner's cdiv(max_model_len, block_size)-wide table has."""
    if wrapper != "StaticSink":
        return b
    c = getattr(b, "_sink_batch", None)
    if c is None:
        c = Batch(b.q, b.ctx, b.prompt, b.block_size, b.spec, b.kind, b.dcp, b.interleave,
                  b.chunk, b.extra_cols + sink_len(b) // b.block_size + 1)
        c.seed = getattr(b, "seed", (0, 0))
        for attr in ITEM_ATTRS:  # an item's per-batch choices (the capture items' layer)
            if attr in b.__dict__:
                setattr(c, attr, b.__dict__[attr])
        b._sink_batch = c
    return c


def _sizes(backend: str, b: Any = None) -> Tuple[int, int, int, int]:
    """max_num_seqs, num_gpu_blocks, max_num_batched_tokens, max_model_len of a backend's
    config; a batch's ``max_seqs`` (FLASHINFER's padded-decode item) replaces max_num_seqs."""
    if getattr(b, "max_seqs", None):
        return (int(b.max_seqs),) + _sizes(backend)[1:]
    if backend == "FLEX_ATTENTION":
        f = FLEX_LIMITS
        return f["max_seqs"], f["num_gpu_blocks"], f["max_tokens"], f["max_model_len"]
    return MAX_SEQS, NUM_GPU_BLOCKS, MAX_TOKENS, MAX_MODEL_LEN


#: the builders compared with DCP (the batch's world 1/2/4 and interleave 1/8/16, a random rank)
DCP_BACKENDS = ("FLASH_ATTN", "FLASHINFER")


def _dcp(backend: str, wrapper: str, b: Batch) -> Tuple[int, int, int]:
    """(world, rank, interleave) of the builder: the batch's DCP for a DCP backend without a
    wrapper, else (1, 0, 1)."""
    if backend not in DCP_BACKENDS or wrapper or b.dcp <= 1:
        return 1, 0, 1
    return b.dcp, int(choice_rng(b, 14).integers(0, b.dcp)), b.interleave


def _settings(backend: str, wrapper: str, b: Batch) -> Any:
    """FLASHINFER's (capability, cache dtype, use_trtllm_attention) for the batch
    (flashinfer_plans.flashinfer_settings); None for the other builders."""
    if backend != "FLASHINFER" or wrapper:
        return None
    if getattr(b, "fi_settings", None) is not None:  # the padded-decode item's own choice
        return b.fi_settings
    from .flashinfer_plans import flashinfer_settings
    return flashinfer_settings(b, _dcp(backend, wrapper, b)[0])


#: vLLM 0.33's per-batch model inputs, by the builders that read them: a per-request int32
#: `causal` tensor (FLASH_ATTN and TRITON_ATTN keep it in their metadata, CPU_ATTN's
#: dynamic_causal; FLASHINFER and FLEX_ATTENTION take only a bool), multimodal PrefixLM document
#: ranges (`mm_req_doc_ranges`; FLASH_ATTN stages them when the model is a PrefixLM), R-SWA
#: prefix lengths with the model's `rswa_window` (libattn refuses R-SWA on FLEX_ATTENTION,
#: docs/backends/flex_attention.md, so it is not given there)
CAUSAL_TENSOR_BACKENDS = ("FLASH_ATTN", "TRITON_ATTN", "CPU_ATTN")
MM_BACKENDS = ("FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION")
RSWA_BACKENDS = ("FLASH_ATTN", "TRITON_ATTN")


def _model(backend: str, wrapper: str, b: Batch) -> Tuple[Any, bool]:
    """(rswa_window or None, is_mm_prefix_lm) of the model the builder is made for: a quarter
    of the base builders' batches each (the wrappers' model is plain)."""
    if wrapper:
        return None, False
    r = choice_rng(b, 16)
    rswa = int(r.choice([64, 128, 512])) if r.random() < 0.25 and backend in RSWA_BACKENDS \
        else None
    return rswa, bool(r.random() < 0.25 and backend in MM_BACKENDS)


def _model_inputs(backend: str, wrapper: str, b: Batch) -> Dict[str, Any]:
    """The batch's 0.33 model inputs for both sides: `causal` False in one base-builder batch
    of ten, a per-request int32 tensor in one of five where the builder keeps one; the
    document ranges when the model is a PrefixLM; R-SWA prefix lengths (each request's
    0..prompt length) with an R-SWA model."""
    if wrapper:
        return {}
    from .abi14_items import _mm_ranges
    r = choice_rng(b, 17)
    out: Dict[str, Any] = {}
    u = r.random()
    layer = _layer(b)
    if layer is not None and layer.non_causal:  # a third each: False, a tensor, causal
        u = (0.05, 0.2, 0.5)[min(int(u * 3), 2)]
    if u < 0.1:
        out["causal"] = False
    elif u < 0.3 and backend in CAUSAL_TENSOR_BACKENDS and b.n:
        out["causal"] = r.integers(0, 2, b.n).astype(np.int32)
    rswa, mm = _model(backend, wrapper, b)
    if mm:  # vLLM's model runner passes document ranges for a PrefixLM model only
        ranges = _mm_ranges(b)
        if ranges is not None:
            out["mm_req_doc_ranges"] = ranges
    if rswa is not None and b.n:
        out["rswa_prefix_lens"] = (r.random(b.n) * (np.asarray(b.prompt) + 1)).astype(np.int32)
    return out


def _capability(backend: str, wrapper: str, b: Batch) -> Any:
    st = _settings(backend, wrapper, b)
    return None if st is None else st[0]


#: the FlashAttention versions a FLASH_ATTN builder (and the wrappers over it) is made for: 2
#: (Ampere; vLLM's CPU platform's own answer is none, which takes FA2's path), 3 (Hopper: FA3's
#: AOT scheduler, whose inputs the lane compares), 4 (Blackwell)
FA_VERSIONS = (2, 3, 4)


def _fa_version(backend: str, wrapper: str, b: Batch) -> int:
    """The FlashAttention version of the batch's FLASH_ATTN builder (0 for other backends)."""
    if backend != "FLASH_ATTN":
        return 0
    return FA_VERSIONS[int(choice_rng(b, 18).integers(0, len(FA_VERSIONS)))]


def _patches(backend: str, wrapper: str, b: Batch) -> Any:
    """patches.patched with the batch's builder settings (DCP group, FLASHINFER's capability,
    FLASH_ATTN's FlashAttention version, the layer variant's sliding window): around the
    construction, the builds and the builder class queries alike."""
    world, rank, _ = _dcp(backend, wrapper, b)
    layer = _layer(b)
    p = patched(backend, (world, rank), _capability(backend, wrapper, b),
                _fa_version(backend, wrapper, b),
                window=layer.window if layer is not None else 0,
                sm120_sms=layer.sm120_sms if layer is not None else 0,
                layers=_fi_layers(backend, layer))
    if wrapper.startswith("Qwen4QSA"):  # the ROCm item's platform query (qwen4_qsa_items)
        from .qwen4_qsa_items import rocm_platform
        return _stacked(p, rocm_platform(wrapper))
    return p


@contextlib.contextmanager
def _stacked(*managers: Any) -> Any:
    with contextlib.ExitStack() as stack:
        for m in managers:
            stack.enter_context(m)
        yield


def _fi_layers(backend: str, layer: Any) -> tuple:
    """A FLASHINFER layer variant's group of layers (layer_variant_items.layer_params) when it
    has a soft cap, sinks or other layers; () otherwise (the default layer of the window)."""
    if backend != "FLASHINFER" or layer is None or not (layer.soft_cap or layer.sinks or
                                                        layer.other_layers):
        return ()
    from .layer_variant_items import layer_params
    return layer_params(layer)


def _layer(b: Any) -> Any:
    """The batch's layer variant (layer_variant_items.LayerVariant: the layer's sliding window,
    full CUDA graphs, capture builds), set by a layer-variant item's Item.adjust; None for the
    other items (full attention, no CUDA graphs)."""
    return getattr(b, "layer", None)


def capture(ctx: Any, backend: str, wrapper: str, b: Batch) -> bool:
    """build_for_cudagraph_capture instead of build (layer-variant items with full CUDA graphs,
    layer_variant_items.capture_batch, by the level vLLM's builder class answers)."""
    layer = _layer(b)
    if layer is None or not layer.full:
        return False
    from .layer_variant_items import capture_batch
    levels = ctx.__dict__.setdefault("capture_levels", {})
    key = _key(backend, wrapper, b)
    if key not in levels:  # asked once per builder setting, before its first build
        from vllm.config import set_current_vllm_config
        from . import patches
        try:
            vb, vc = vllm_builder(ctx, backend, wrapper, b)
        except Exception:  # vLLM refused the builder (its side raises): libattn's builds
            return False
        # the recorders' last calls are what the comparison reads: kept across the query
        kept = dict(patches.FA3_SCHEDULER_ARGS), dict(patches.CPU_SCHEDULER_ARGS)
        with set_current_vllm_config(vc), _patches(backend, wrapper, b):
            levels[key] = type(vb).get_cudagraph_support(vc, vb.kv_cache_spec).name
        for rec, old in zip((patches.FA3_SCHEDULER_ARGS, patches.CPU_SCHEDULER_ARGS), kept):
            rec.clear()
            rec.update(old)
    return capture_batch(levels[key], b)


def _key(backend: str, wrapper: str, b: Batch) -> Tuple[Any, ...]:
    chunk = b.chunk if wrapper == "ChunkedLocal" else 0
    return (backend, wrapper, b.block_size, b.spec, chunk, _dcp(backend, wrapper, b),
            _settings(backend, wrapper, b), _model(backend, wrapper, b),
            _fa_version(backend, wrapper, b), getattr(b, "max_seqs", None), _layer(b))


#: builders kept per item (least recently used dropped): FLASHINFER's hold large workspaces
CACHED_BUILDERS = {"FLASHINFER": 2, "FLEX_ATTENTION": 2}
DEFAULT_CACHED_BUILDERS = 12


def _cache(ctx: Any, backend: str, key: Tuple[Any, ...]) -> bool:
    """True if the builder of ``key`` is cached (and marks it most recently used); makes room
    for one more otherwise."""
    cache = ctx.builders
    if key in cache:
        cache[key] = cache.pop(key)
        return True
    limit = 2 * CACHED_BUILDERS.get(backend, DEFAULT_CACHED_BUILDERS)  # vLLM's and libattn's
    while len(cache) >= limit:
        old = cache.pop(next(iter(cache)))
        if hasattr(old, "close"):
            old.close()
    return False


def _construct(ctx: Any, key: Tuple[Any, ...], vc: Any, make: Any) -> None:
    """Keeps vLLM's builder of ``key`` (``make()``, run once) with its VllmConfig, or the
    exception its construction raised: every later batch of that key gets the same answer."""
    try:
        ctx.builders[key] = (make(), vc, None)
    except Exception as e:
        ctx.builders[key] = (None, vc, e)


def _constructed(ctx: Any, key: Tuple[Any, ...]) -> Tuple[Any, Any]:
    """(vLLM's builder, its VllmConfig) kept by _construct; raises its construction error."""
    vb, vc, err = ctx.builders[key]
    if err is not None:
        raise err
    return vb, vc


def vllm_builder(ctx: Any, backend: str, wrapper: str, b: Batch) -> Any:
    key = ("vllm",) + _key(backend, wrapper, b)
    if not _cache(ctx, backend, key):
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.v1.kv_cache_interface import (ChunkedLocalAttentionSpec, CrossAttentionSpec,
                                                EncoderOnlyAttentionSpec, FullAttentionSpec)
        max_seqs, blocks, max_tokens, max_len = _sizes(backend, b)
        world, _, inter = _dcp(backend, wrapper, b)
        settings = _settings(backend, wrapper, b)
        model = _model(backend, wrapper, b)
        layer = _layer(b)
        vc = ctx.configs.get(max_seqs, max_tokens, b.spec, b.block_size,
                             (blocks, world, inter, settings, model, layer), max_len)
        if layer is not None and (layer.head_size, layer.kv_heads) != (128, 8):
            # TRITON_ATTN's variants: a model of the layer's shape (the builder reads its head
            # size and KV heads from the model config, not from the spec)
            vc.model_config = ctx.configs.shaped_model(layer.kv_heads, layer.head_size,
                                                       vc.model_config.max_model_len)
        if model != (None, False):
            _with_model_features(vc, *model)
        if layer is not None and layer.full:
            # a GPU engine's full CUDA graphs (vLLM's CPU platform has none): the mode and the
            # largest capture size the builders read, and the layer's capture sizes if drawn
            from vllm.config.compilation import CUDAGraphMode
            vc.compilation_config.cudagraph_mode = CUDAGraphMode.FULL_AND_PIECEWISE
            vc.compilation_config.max_cudagraph_capture_size = layer.max_capture
            if layer.capture_sizes:
                # a runtime's own capture sizes: its list and largest size (make() rounds them
                # as vLLM's engine does)
                cc = vc.compilation_config
                cc.cudagraph_capture_sizes = list(layer.capture_sizes)
                cc.max_cudagraph_capture_size = max(layer.capture_sizes)
        vc.parallel_config.decode_context_parallel_size = world
        vc.parallel_config.cp_kv_cache_interleave_size = inter
        # engine-resolved settings a builder reads: the KV cache's block count (FLEX) and
        # its layout (FLASHINFER; the engine core resolves it before the builders run; NHD
        # is vLLM's default)
        vc.cache_config.num_gpu_blocks = blocks
        if vc.cache_config.kv_cache_layout is None:
            vc.cache_config.kv_cache_layout = "NHD"
        kw = dict(block_size=b.block_size, num_kv_heads=layer.kv_heads if layer else 8,
                  head_size=layer.head_size if layer else 128, dtype=torch.bfloat16)
        full_kw = {}
        if settings is not None:
            from .flashinfer_plans import configure_vllm, vllm_spec_kwargs
            with _patches(backend, wrapper, b):
                configure_vllm(vc, settings)
            full_kw = vllm_spec_kwargs(settings)
        cache_dtype = layer.cache_dtype if layer is not None else "auto"
        if cache_dtype != "auto":  # FLASH_ATTN's variants: the user's fp8 cache
            from vllm.v1.kv_cache_interface import KVQuantMode
            vc.cache_config.cache_dtype = cache_dtype
            full_kw = {"kv_quant_mode": KVQuantMode.FP8_PER_TENSOR}
        from vllm.v1.kv_cache_interface import SinkFullAttentionSpec, SlidingWindowSpec
        if layer is not None and layer.window:  # the layer variant's sliding window
            full_spec = lambda: SlidingWindowSpec(**kw, **full_kw,  # noqa: E731
                                                  sliding_window=layer.window,
                                                  dcp_sharded=world > 1)
        else:
            full_spec = lambda: FullAttentionSpec(**kw, **full_kw,  # noqa: E731
                                                  dcp_sharded=world > 1)
        spec = {"ChunkedLocal": lambda: ChunkedLocalAttentionSpec(attention_chunk_size=b.chunk,
                                                                  **kw),
                "StaticSink": lambda: SinkFullAttentionSpec(sink_len=sink_len(b), **kw),
                "DiffKV": lambda: FullAttentionSpec(**kw, head_size_v=head_size_v(b)),
                "Cross": lambda: CrossAttentionSpec(**kw),
                "EncoderOnly": lambda: EncoderOnlyAttentionSpec(**kw)}.get(
                    wrapper, full_spec)()
        def make() -> Any:
            if backend == "FLASH_ATTN" and cache_dtype != "auto" and wrapper == "":
                # vLLM's backend selection (supports_kv_cache_dtype's platform-independent
                # part: the class's list) before any builder is made
                from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
                if cache_dtype not in FlashAttentionBackend.supported_kv_cache_dtypes:
                    raise ValueError(f"FLASH_ATTN does not support the KV cache dtype "
                                     f"{cache_dtype} (FlashAttentionBackend."
                                     f"supported_kv_cache_dtypes)")
            if backend == "FLASH_ATTN" and layer is not None and layer.head_size > 256 and \
                    _fa_version(backend, wrapper, b) != 4:
                # vLLM's backend selection: supports_head_size takes head sizes over 256 only
                # where FlashAttention 4 is supported
                raise ValueError(f"FLASH_ATTN does not support head size {layer.head_size} "
                                 f"without FlashAttention 4 (supports_head_size)")
            if layer is not None and layer.full:
                # the sizes as vLLM's engine leaves them (its default list where none is given,
                # rounded to multiples of 1 + k for spec decode: model runner V1, full decode
                # graphs), which raises where none is left: a refusal of the builder
                from .vllm_env import engine_capture_sizes
                engine_capture_sizes(vc, b.spec, v2=False)
            with set_current_vllm_config(vc), _patches(backend, wrapper, b):
                fav = _fa_version(backend, wrapper, b)
                cls = _static_sink_cls(backend, sink_len(b), fav) if wrapper == "StaticSink" \
                    else _block_pool_cls(backend, block_pool_size(b), fav) \
                    if wrapper == "BlockPool" \
                    else _diffkv_cls(backend, head_size_v(b), fav) if wrapper == "DiffKV" \
                    else _qsa_cls(wrapper, fav) if wrapper.startswith("Qwen4QSA") \
                    else _vllm_builder_cls(backend, wrapper, b.chunk, fav)
                return cls(spec, [LAYER], vc, torch.device("cpu"))
        _construct(ctx, key, vc, make)
    return _constructed(ctx, key)


def vllm_config(ctx: Any, backend: str, wrapper: str, b: Batch) -> Any:
    """The VllmConfig vLLM's builder of the batch is made with, also where vLLM refused to make
    it (libattn's side is then asked on its own: a refusal of both, or a mismatch)."""
    try:
        return vllm_builder(ctx, backend, wrapper, b)[1]
    except Exception:
        return ctx.builders[("vllm",) + _key(backend, wrapper, b)][1]


def _with_model_features(vc: Any, rswa_window: Any, mm_prefix_lm: bool) -> None:
    """The config of a model with R-SWA and/or a multimodal PrefixLM: vLLM's architecture
    config (`model_arch_config`, which vLLM derives from the model's HF config) with
    `rswa_window` and `is_mm_prefix_lm` as such a model's give them, on a copy of the model
    config (the lane's configs share one)."""
    import copy
    import dataclasses
    mc = copy.copy(vc.model_config)
    mc.model_arch_config = dataclasses.replace(mc.model_arch_config, rswa_window=rswa_window,
                                               is_mm_prefix_lm=mm_prefix_lm)
    mc.__dict__.pop("is_mm_prefix_lm", None)  # a functools.cached_property the copy carried
    vc.model_config = mc


def lib_builder(ctx: Any, backend: str, wrapper: str, b: Batch, vc: Any) -> Any:
    key = ("lib",) + _key(backend, wrapper, b)
    if not _cache(ctx, backend, key):
        libattn = ctx.libattn
        cg = int(libattn.CudagraphMode[vc.compilation_config.cudagraph_mode.name])
        # libattn with the settings vLLM resolved here: no CUDA graphs (vLLM's CPU platform),
        # FlashAttention 2 (vLLM finds no FA3 without a GPU)
        max_seqs, blocks, max_tokens, max_len = _sizes(backend, b)
        world, rank, inter = _dcp(backend, wrapper, b)
        settings = _settings(backend, wrapper, b)
        extra = {}
        if settings is not None:
            from .flashinfer_plans import libattn_config_kwargs
            extra = libattn_config_kwargs(settings)
        layer = _layer(b)
        if layer is not None and layer.full:
            extra["max_cudagraph_capture_size"] = layer.max_capture
            if layer.capture_sizes:
                extra.update(cudagraph_capture_sizes=list(layer.capture_sizes),
                             max_cudagraph_capture_size=max(layer.capture_sizes))
        if layer is not None and layer.sm120_sms:  # TRITON_ATTN's variants on SM 12.0
            extra.update(device_capability=120, num_sms=layer.sm120_sms)
        if layer is not None and layer.cache_dtype != "auto":  # FLASH_ATTN's variants
            from .layer_variant_items import LIB_CACHE_DTYPES
            extra["cache_dtype"] = LIB_CACHE_DTYPES[layer.cache_dtype]
        name = backend + ("_DIFFKV" if wrapper == "DiffKV" else "")
        if wrapper.startswith("Qwen4QSA"):  # QWEN4_EXP_QSA_TRITON(_ROCM): qwen4_qsa_items
            from .qwen4_qsa_items import is_rocm, lib_name
            name = lib_name(wrapper)
            extra["platform_rocm"] = int(is_rocm(wrapper))
        layers = _fi_layers(backend, layer)
        if layers:  # FLASHINFER's soft cap, sinks, other layers
            extra["layers"] = [libattn.PerLayerParams(*p) for p in layers]
        cfg = libattn.BuilderConfig(max_seqs, max_tokens, max_len, NUM_HEADS,
                                    decode_context_parallel_size=world, dcp_rank=rank,
                                    cp_kv_cache_interleave_size=inter,
                                    num_speculative_tokens=b.spec, cudagraph_mode=cg,
                                    flash_attn_version=_fa_version(backend, wrapper, b) or 2,
                                    num_gpu_blocks=blocks,
                                    kv_sharing_fast_prefill=int(wrapper == "FastPrefill"),
                                    max_encoder_len=MAX_ENCODER_LEN if wrapper == "Cross" else 0,
                                    block_pool_size=block_pool_size(b)
                                    if wrapper == "BlockPool" else 0,
                                    rswa_window=_model(backend, wrapper, b)[0] or 0,
                                    is_mm_prefix_lm=int(_model(backend, wrapper, b)[1]),
                                    **extra)
        kind = {"ChunkedLocal": libattn.KvCacheKind.CHUNKED_LOCAL_ATTENTION,
                "Cross": libattn.KvCacheKind.CROSS_ATTENTION,
                "EncoderOnly": libattn.KvCacheKind.ENCODER_ONLY}.get(
                    wrapper, libattn.KvCacheKind.FULL_ATTENTION)
        window = layer.window if layer is not None and not wrapper else 0
        if window:
            kind = libattn.KvCacheKind.SLIDING_WINDOW
        spec = libattn.KvCacheSpec(b.block_size, layer.kv_heads if layer else 8,
                                   layer.head_size if layer else 128, kind=kind,
                                   sliding_window=window,
                                   attention_chunk_size=b.chunk if wrapper == "ChunkedLocal" else 0,
                                   sink_len=sink_len(b) if wrapper == "StaticSink" else 0,
                                   head_size_v=head_size_v(b) if wrapper == "DiffKV" else 0)
        # DiffKV: libattn's FLASH_ATTN_DIFFKV / TRITON_ATTN_DIFFKV (a backend, not a wrapper)
        ctx.builders[key] = ctx.lib.builder(name, spec, cfg)
    return ctx.builders[key]


def _inputs(b: Batch, wrapper: str, backend: str = "") -> Dict[str, Any]:
    """Extra CommonAttentionMetadata inputs a wrapper reads, and 0.33's model inputs
    (_model_inputs), the same for both sides."""
    if not wrapper:
        return _model_inputs(backend, wrapper, b)
    if wrapper == "FastPrefill":
        from .utility_items import _logits
        lg = _logits(b)
        return {} if lg is None else dict(logits_indices_padded=lg[0], num_logits_indices=lg[1],
                                          max_logits_per_req=lg[2])
    if wrapper == "Cross":
        r = choice_rng(b, 7)
        top = min(MAX_ENCODER_LEN, b.width * b.block_size)
        enc = r.integers(1, top + 1, b.n).astype(np.int32)
        return dict(encoder_seq_lens=enc, encoder_seq_lens_cpu=enc.copy())
    return {}


def _lib_inputs(kw: Dict[str, Any]) -> Dict[str, Any]:
    """libattn's CommonMetadata takes the same keyword arguments (ABI 1.4)."""
    return dict(kw)


def _leaf(v: Any) -> Any:
    import enum
    import torch
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, torch.dtype):
        return str(v)
    if isinstance(v, dict):
        # vLLM's {request: [(start, end), ...]} (mm_prefix_range): the ABI's (n, 3) int32 rows
        # by the binding's documented mapping (docs/backends/triton_attn.md)
        from libattn.common_metadata import _doc_ranges
        return _doc_ranges(v)
    if isinstance(v, torch.Tensor) and v.dim() == 0:
        # a scalar field vLLM happens to hold as a 0-d tensor (FLASH_ATTN's DCP split counts,
        # sliced from query_start_loc_cpu): its value
        return v.item()
    return v


def builder_pairs(backend: str, wrapper: str, b: Batch, v: Any, md: Any, ctx: Any) -> List[Pair]:
    """Every vLLM field against libattn's; missing and extra fields are mismatches (pairs whose
    libattn side is MISSING or whose vLLM side is MISSING), extensions excepted."""
    lib = {n: md[n] for n in md.fields()}  # views (read before the next build): no copies
    skip = NOT_COMPARABLE.get(backend, {})
    ext = dict(EXTENSIONS.get(backend, {}), **EXTENSIONS.get(wrapper, {}))
    pairs: List[Pair] = []
    seen = set()
    vfields = flatten_vllm(v)
    if backend == "FLASHINFER":  # its wrappers by their plan() arguments, and its enums
        from .flashinfer_plans import OWN_FIELDS, flashinfer_pairs
        vb, _ = vllm_builder(ctx, backend, wrapper, b)
        pairs += flashinfer_pairs(v, vb, lib, seen, ctx.libattn, _dcp(backend, wrapper, b)[0],
                                  b.bt)
        vfields = [(n, x) for n, x in vfields if n.split(".")[0] not in OWN_FIELDS]
    if wrapper == "FastPrefill":  # attributes of vLLM's wrapper class, not dataclass fields
        vfields += [("logits_indices_padded", getattr(v, "logits_indices_padded", None)),
                    ("num_logits_indices", getattr(v, "num_logits_indices", None))]
    from .patches import FA3_SCHEDULER_ARGS
    if backend == "FLASH_ATTN" and FA3_SCHEDULER_ARGS:  # the recorder's stand-in schedule
        skip = dict(skip, scheduler_metadata="FlashAttention's output (patched to a recorder)")
    for name, value in vfields:
        if name in skip:
            seen.add(name)
            continue
        if backend == "FLEX_ATTENTION" and name == "block_mask":
            pairs += _flex_block_mask_pairs(v, value, lib, seen)
            continue
        lname = lib_field_name(name, lib)
        seen.add(lname)
        if lname in lib:
            pairs.append(live_pair(backend, name, v, _leaf(value), lib[lname]))
        else:
            pairs.append((f"{name} (vLLM field libattn lacks)", _leaf(value), MISSING))
    if wrapper == "ChunkedLocal":
        mk = getattr(v, "make_virtual_batches_block_table", None)
        if mk is not None and "virtual_req" in lib:
            pages = b.chunk // b.block_size
            pairs.append(("make_virtual_batches_block_table(block_table)",
                          mk(ctx.torch.from_numpy(b.bt)),
                          ctx.lib.remap_local_block_table(b.bt, lib["virtual_req"],
                                                          lib["virtual_block_start"], pages)))
    if backend == "CPU_ATTN":
        pairs += _cpu_scheduler_pairs(ctx, lib, seen)
    if backend == "FLASH_ATTN":
        pairs += _fa3_scheduler_pairs(ctx, lib, seen)
    pairs += _class_pairs(ctx, backend, wrapper, b)
    for name in lib:
        if name not in seen and name not in ext:
            pairs.append((f"{name} (libattn field vLLM 0.33 lacks)", MISSING, lib[name]))
    return pairs


def _class_pairs(ctx: Any, backend: str, wrapper: str, b: Batch) -> List[Pair]:
    """The builder's own answers (compare.builder_answer_pairs), vLLM's classmethods evaluated
    with the builder's config, spec and patches (_patches)."""
    vb, vc = vllm_builder(ctx, backend, wrapper, b)
    lb = lib_builder(ctx, backend, wrapper, b, vc)
    return builder_answer_pairs(vb, vc, lb, _patches(backend, wrapper, b))


def _flex_block_mask_pairs(v: Any, bm: Any, lib: Dict[str, Any], seen: set) -> List[Pair]:
    """FLEX_ATTENTION's block_mask (a torch BlockMask) by the tensors libattn returns: on the
    direct-build path BlockMask.from_kv_blocks(kv_num_blocks[None, None],
    kv_indices[None, None], ...) against libattn's kv_num_blocks / kv_indices, and vLLM's
    num_blocks (a class attribute __post_init__ sets, not a dataclass field) against
    libattn's; the mask_mod callable is not comparable (patches.NOT_COMPARABLE). Otherwise
    (create_block_mask, encoder-only) libattn returns no block-mask tensors."""
    seen.update(("kv_num_blocks", "kv_indices", "num_blocks"))
    pairs: List[Pair] = [("num_blocks", int(getattr(v, "num_blocks")), lib.get("num_blocks", MISSING))]
    direct = bool(getattr(v, "direct_build", False)) and bm is not None
    for f in ("kv_num_blocks", "kv_indices"):
        want = getattr(bm, f)[0, 0] if direct else None
        pairs.append((f"block_mask.{f}[0, 0]", want, lib.get(f)))
    return pairs


def _recorded_call_pairs(call: str, args: Dict[str, Any], lib: Dict[str, Any], seen: set,
                         by_name: Dict[str, Any], absent_is_none: bool = False) -> List[Pair]:
    """Each argument vLLM passed a recorded call (a patch that keeps the arguments of a kernel
    library's op, which libattn returns instead of calling it) against libattn's field
    ``scheduler_<argument>``; an argument in ``by_name`` is compared by name (a torch dtype as
    libattn's KvDtype name, any other value upper-cased, against ``by_name[arg](libattn's
    value).name``). ``absent_is_none``: a field libattn lacks reads as None where vLLM passed
    None (else it is a mismatch)."""
    import torch
    pairs: List[Pair] = []
    for arg, value in args.items():
        name = f"scheduler_{arg}"
        seen.add(name)
        got = lib.get(name, None if absent_is_none and value is None else MISSING)
        if arg in by_name and got is not MISSING and got is not None:
            value = kv_dtype_name(value) if isinstance(value, torch.dtype) else str(value).upper()
            got = by_name[arg](int(got)).name
        pairs.append((f"{call}({arg}=) ~ {name}", value, got))
    return pairs


def _fa3_scheduler_pairs(ctx: Any, lib: Dict[str, Any], seen: set) -> List[Pair]:
    """FLASH_ATTN on FA3: whether vLLM's build called FlashAttention's get_scheduler_metadata
    (recorded by patches.fa3_scheduler_recorder) against libattn's aot_schedule with a
    schedule, and every argument against libattn's scheduler_* field (qkv_dtype by name,
    window_size as scheduler_window_left/right)."""
    from .patches import FA3_SCHEDULER_ARGS
    args = dict(FA3_SCHEDULER_ARGS)
    if "window_size" in args:
        args["window_left"], args["window_right"] = (int(x) for x in args.pop("window_size"))
    planned = bool(lib.get("aot_schedule")) and lib.get("scheduler_batch_size") is not None
    return [("get_scheduler_metadata called (~ aot_schedule with scheduler_*)", bool(args),
             planned)] + _recorded_call_pairs("get_scheduler_metadata", args, lib, seen,
                                              {"qkv_dtype": ctx.libattn.KvDtype})


def _cpu_scheduler_pairs(ctx: Any, lib: Dict[str, Any], seen: set) -> List[Pair]:
    """The arguments vLLM's CPU_ATTN build passed cpu_attn_get_scheduler_metadata (recorded by
    the patch) against libattn's scheduler_* fields; dtypes and the ISA by name."""
    from .patches import CPU_SCHEDULER_ARGS as args
    libattn = ctx.libattn
    pairs = _recorded_call_pairs("cpu_attn_get_scheduler_metadata", args, lib, seen,
                                 {"dtype": libattn.KvDtype, "kv_cache_dtype": libattn.KvDtype,
                                  "isa": libattn.CpuIsa}, absent_is_none=True)
    if not args:
        pairs.append(("cpu_attn_get_scheduler_metadata call", "not called", "expected"))
    return pairs


def _missing_safe(pairs: List[Pair]) -> List[Pair]:
    out = []
    for n, a, c in pairs:
        if a is MISSING or c is MISSING:
            out.append((n, "absent" if a is MISSING else _short(a),
                        "absent" if c is MISSING else _short(c)))
        else:
            out.append((n, a, c))
    return out


def _short(x: Any) -> str:
    x = as_np(x)
    if isinstance(x, np.ndarray):
        return f"array{x.shape} {x.dtype}"
    if x is None or isinstance(x, (bool, int, float, str, np.integer, np.floating)):
        s = repr(x)
        return s if len(s) < 60 else s[:57] + "..."
    return f"<{type(x).__name__}>"  # objects (a BlockMask, a function): their type only


def _fa_path(b: Batch, wrapper: str) -> str:
    """FLASH_ATTN's path (Item.path): the FlashAttention version, whether vLLM's build called
    FA3's get_scheduler_metadata (recorded), DCP."""
    from .patches import FA3_SCHEDULER_ARGS
    dcp = "dcp" if _dcp("FLASH_ATTN", wrapper, b)[0] > 1 else "no dcp"
    return (f"FA{_fa_version('FLASH_ATTN', wrapper, b)} "
            f"{'scheduled' if FA3_SCHEDULER_ARGS else 'no schedule'}, {dcp}")


CROSS_UPDATE_NOTE = (
    "slot_mapping is compared with vLLM's fresh build on the new block table, not with its "
    "update_block_table: vLLM 0.33's (FLASH_ATTN's, inherited by the cross wrapper) puts the "
    "decoder's slot_mapping argument into the cross metadata, libattn recomputes the encoder "
    "tokens' cross slot mapping for the new table as a build does (docs/backends/wrappers.md); "
    "every other field against vLLM's update")


def other_group(b: Batch) -> Tuple[np.ndarray, np.ndarray]:
    """Another KV cache group's block table and slot mapping for the batch (the arguments of
    update_block_table): every block id b moved to 3b + 1 (0, the null block, stays), each
    slot moved with its block, PAD_SLOT_ID (-1) kept."""
    table = np.where(b.bt > 0, b.bt * 3 + 1, 0).astype(np.int32)
    s = b.slots.astype(np.int64)
    bs = b.block_size
    slots = np.where(s >= 0, (s // bs * 3 + 1) * bs + s % bs, s).astype(np.int64)
    return table, slots


def builder_item(backend: str, wrapper: str = "", update: bool = False) -> Item:
    """``update``: the item of update_block_table (FLASH_ATTN's builder supports it): both
    sides build, then update their own result with other_group's table and slot mapping, and
    the updated metadata is compared field by field."""
    def v(ctx, b):
        b = _item_batch(wrapper, b)
        vb, vc = vllm_builder(ctx, backend, wrapper, b)
        from vllm.config import set_current_vllm_config
        cm = vllm_common(ctx, b, **_inputs(b, wrapper, backend))
        is_capture = capture(ctx, backend, wrapper, b)
        if wrapper == "StaticSink" or (is_capture and backend == "TRITON_ATTN"):
            # StaticSink's build and TRITON_ATTN's capture build (seq_lens.fill_(1)) edit
            # seq_lens in place: not the batch's memory, which libattn's side reads next (the
            # other builders' metadata keeps the batch's seq_lens, which the draft decode
            # update edits in place, as a runner's persistent buffer)
            cm.seq_lens = cm.seq_lens.clone()
        with set_current_vllm_config(vc), _patches(backend, wrapper, b):
            try:
                if is_capture:
                    md = vb.build_for_cudagraph_capture(cm)
                else:
                    md = vb.build(0, cm)
                if update:
                    table, slots = other_group(b)
                    md = vb.update_block_table(md, ctx.torch.from_numpy(table),
                                               ctx.torch.from_numpy(slots))
                    if wrapper == "Cross":  # CROSS_UPDATE_NOTE: a fresh build's slot mapping
                        fresh = copy.copy(b)
                        fresh.bt, fresh.slots = table, slots
                        md.slot_mapping = vb.build(0, vllm_common(
                            ctx, fresh, **_inputs(fresh, wrapper, backend))).slot_mapping
                return md
            except Exception:
                if wrapper == "StaticSink":
                    ctx.sink_refused = True
                raise

    def l(ctx, b):
        b = _item_batch(wrapper, b)
        vc = vllm_config(ctx, backend, wrapper, b)
        try:
            lb = lib_builder(ctx, backend, wrapper, b, vc)
            common = lib_common(ctx, b, **_lib_inputs(_inputs(b, wrapper, backend)))
            if capture(ctx, backend, wrapper, b):
                md = lb.build_for_cudagraph_capture(common)
            else:
                md = lb.build(common)
            if update:
                table, slots = other_group(b)
                md = lb.update_block_table(md, table, slots)
            return md
        finally:
            # StaticSink's persistent table after a batch vLLM refused: vLLM copies the batch's
            # table before its wrapped builder refuses, libattn validates the batch before it
            # copies; the columns later batches do not rewrite may then differ, so both
            # builders start over (docs/backends/wrappers.md)
            if getattr(ctx, "sink_refused", False):
                ctx.sink_refused = False
                for side in ("vllm", "lib"):
                    old = ctx.builders.pop((side,) + _key(backend, wrapper, b), None)
                    if hasattr(old, "close"):
                        old.close()

    name = f"{wrapper} over {backend}" if wrapper else backend
    if update:
        name += " (update_block_table)"
    limits = {k: FLEX_LIMITS[k] for k in ("max_requests", "table_budget", "token_budget")} \
        if backend == "FLEX_ATTENTION" else {}
    if backend == "FLASHINFER" and not wrapper:
        limits = dict(FLASHINFER_LIMITS)
    path = None
    if backend == "FLASHINFER" and not wrapper:
        from .flashinfer_plans import build_path
        path = lambda ctx, b, v: build_path(v, _settings(backend, wrapper, b))  # noqa: E731
    if backend == "FLASH_ATTN":
        path = lambda ctx, b, v: _fa_path(b, wrapper)  # noqa: E731
    notes = [CROSS_UPDATE_NOTE] if update and wrapper == "Cross" else []
    item = Item(name, "builder", v, l,
                lambda ctx, b, v, md: _missing_safe(builder_pairs(backend, wrapper,
                                                                  _item_batch(wrapper, b), v, md,
                                                                  ctx)),
                shape_only=SCRATCH, max_spec=3, block_sizes=BLOCK_SIZES, path=path,
                notes=notes, **limits)
    if update:  # update_block_table's result views other_group's slots, not the batch's
        return item

    def sides(ctx: Any, b: Batch) -> Optional[Sides]:
        ib = _item_batch(wrapper, b)
        if capture(ctx, backend, wrapper, ib):  # a drafter updates a build, never a capture's
            return None
        vb, vc = vllm_builder(ctx, backend, wrapper, ib)
        return Sides(ib, vb, vc, lib_builder(ctx, backend, wrapper, ib, vc),
                     lambda: _patches(backend, wrapper, ib))

    return with_draft_update(item, sides)


def builder_items() -> List[Item]:
    items = [builder_item(b) for b in BACKENDS]
    items += [builder_item("TRITON_ATTN", w) for w in ("ChunkedLocal", "FastPrefill", "Cross",
                                                       "EncoderOnly")]
    items += [builder_item("FLASH_ATTN", w) for w in ("ChunkedLocal", "FastPrefill", "Cross",
                                                      "EncoderOnly")]
    # update_block_table: FLASH_ATTN's builder supports it, and so do vLLM's wrappers of it
    # (subclasses; the chunked local one re-gathers the new table with its remap first)
    items += [builder_item("FLASH_ATTN", w, update=True) for w in ("", "ChunkedLocal",
                                                                  "FastPrefill", "Cross",
                                                                  "EncoderOnly")]
    return items
