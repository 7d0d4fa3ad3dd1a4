"""The composite backends: vLLM 0.33's TritonFlashAttentionBackend (TRITON_FLASH_ATTN,
create_composite_attention_backend(TRITON_ATTN, FLASH_ATTN, MMPrefixAttentionRouting)) built for
a multimodal PrefixLM model (`is_mm_prefix_lm`) against libattn's TRITON_FLASH_ATTN, on the
builder items' batches with the batch's document ranges (abi14_items._mm_ranges: none in about
one batch in seven), so that both routes run. Builders of block size 32 are for a sliding-window
layer (a SlidingWindowSpec, the layer's `sliding_window` in static_forward_context: an unclamped
window, level NEVER and the wider routing test); the others for a full-attention layer. Compared:
every field of the chosen child's metadata against libattn's field of the same name, vLLM's
`_attention_backend_variant` against `attention_backend_variant`, the other child's fields None
in libattn, and the builder's class answers. FlashAttention's version is the CPU platform's
(none: FA2's path; libattn flash_attn_version 2).

TRITON_FLASHINFER is not compared: its FLASHINFER child needs the FlashInfer item's capability
and plan patches (flashinfer_plans), which the lane applies per FLASHINFER batch only; it is
covered by tests/c/test_attn_variants.c."""
from __future__ import annotations

import types
from typing import Any, List, Tuple

from .abi14_items import _mm_ranges
from .batches import BLOCK_SIZES, Batch
from .builder_items import (MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS, SCRATCH, _cache,
                            _construct, _constructed, _leaf, _missing_safe, _with_model_features)
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm
from .item import Item
from .sides import lib_common, vllm_common

NAME = "TRITON_FLASH_ATTN"
LAYER = "model.layers.0.self_attn"
WINDOW = 256


def _sliding(b: Batch) -> bool:
    return b.block_size == 32


def _key(b: Batch) -> Tuple[Any, ...]:
    return (NAME, b.block_size, b.spec)


def vllm_builder(ctx: Any, b: Batch) -> Tuple[Any, Any]:
    key = ("vllm",) + _key(b)
    if not _cache(ctx, NAME, key):
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.v1.attention.backends.triton_flash_attn import TritonFlashAttentionBackend
        from vllm.v1.kv_cache_interface import FullAttentionSpec, SlidingWindowSpec
        vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, ("composite",),
                             MAX_MODEL_LEN)
        _with_model_features(vc, None, True)
        window = WINDOW if _sliding(b) else None
        vc.compilation_config.static_forward_context = {
            LAYER: types.SimpleNamespace(sliding_window=window)}
        kw = dict(block_size=b.block_size, num_kv_heads=8, head_size=128, dtype=torch.bfloat16)
        spec = SlidingWindowSpec(sliding_window=WINDOW, **kw) if window else FullAttentionSpec(**kw)
        def make() -> Any:
            with set_current_vllm_config(vc):
                return TritonFlashAttentionBackend.get_builder_cls()(spec, [LAYER], vc,
                                                                     torch.device("cpu"))
        _construct(ctx, key, vc, make)
    return _constructed(ctx, key)


def lib_builder(ctx: Any, b: Batch, vc: Any) -> Any:
    key = ("lib",) + _key(b)
    if not _cache(ctx, NAME, key):
        libattn = ctx.libattn
        cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                    num_speculative_tokens=b.spec, flash_attn_version=2,
                                    cudagraph_mode=int(libattn.CudagraphMode[
                                        vc.compilation_config.cudagraph_mode.name]),
                                    is_mm_prefix_lm=1)
        kind = libattn.KvCacheKind.SLIDING_WINDOW if _sliding(b) else \
            libattn.KvCacheKind.FULL_ATTENTION
        spec = libattn.KvCacheSpec(b.block_size, 8, 128, kind=kind,
                                   sliding_window=WINDOW if _sliding(b) else 0)
        ctx.builders[key] = ctx.lib.builder(NAME, spec, cfg)
    return ctx.builders[key]


def _inputs(b: Batch):
    r = _mm_ranges(b)
    return {} if r is None else {"mm_req_doc_ranges": r}


def _vllm(ctx: Any, b: Batch) -> Any:
    from vllm.config import set_current_vllm_config
    vb, vc = vllm_builder(ctx, b)
    with set_current_vllm_config(vc):
        return vb.build(0, vllm_common(ctx, b, **_inputs(b)))


def _lib(ctx: Any, b: Batch) -> Any:
    _, vc = vllm_builder(ctx, b)
    return lib_builder(ctx, b, vc).build(lib_common(ctx, b, **_inputs(b)))


def _pairs(ctx: Any, b: Batch, v: Any, md: Any) -> List[Pair]:
    lib = {n: md[n] for n in md.fields()}
    out: List[Pair] = [("_attention_backend_variant ~ attention_backend_variant",
                        int(getattr(v, "_attention_backend_variant", -1)),
                        lib.get("attention_backend_variant", MISSING))]
    seen = {"attention_backend_variant"}
    for name, value in flatten_vllm(v):
        seen.add(name)
        out.append((name, _leaf(value), lib.get(name, MISSING)))
    from .extensions import EXTENSIONS
    child = "TRITON_ATTN" if getattr(v, "_attention_backend_variant", 1) == 0 else "FLASH_ATTN"
    ext = EXTENSIONS.get(child, {})  # the chosen child's own libattn fields (its item's)
    for name in lib:
        if name not in seen and name not in ext:  # the other child's fields
            out.append((f"{name} (the other child's: None)", None, lib[name]))
    vb, vc = vllm_builder(ctx, b)
    out += builder_answer_pairs(vb, vc, lib_builder(ctx, b, vc))
    return _missing_safe(out)


def _path(ctx: Any, b: Batch, v: Any) -> str:
    variant = getattr(v, "_attention_backend_variant", -1)
    return f"{'TRITON_ATTN' if variant == 0 else 'FLASH_ATTN'}" \
           f"{', sliding window' if _sliding(b) else ''}"


def composite_items() -> List[Item]:
    return [Item(NAME, "builder", _vllm, _lib, _pairs, shape_only=SCRATCH, max_spec=3,
                 block_sizes=BLOCK_SIZES, path=_path)]
