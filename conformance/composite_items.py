"""The composite backends: vLLM 0.33's TritonFlashAttentionBackend (TRITON_FLASH_ATTN,
create_composite_attention_backend(TRITON_ATTN, FLASH_ATTN, MMPrefixAttentionRouting)) and
TritonFlashInferBackend (TRITON_FLASHINFER, the same over TRITON_ATTN and FLASHINFER), built for
a multimodal PrefixLM model (`is_mm_prefix_lm`) against libattn's builders of the same names, on
the builder items' batches with the batch's document ranges (abi14_items._mm_ranges: none in
about one batch in seven), so that both routes run. Builders of block size 32 are for a
sliding-window layer (a SlidingWindowSpec, the layer's `sliding_window` in
static_forward_context: an unclamped window, level NEVER and the wider routing test); the others
for a full-attention layer. Compared: every field of the chosen child's metadata against
libattn's field of the same name, vLLM's `_attention_backend_variant` against
`attention_backend_variant`, the other child's fields None in libattn, and the builder's class
answers. FlashAttention's version is the CPU platform's (none: FA2's path; libattn
flash_attn_version 2).

TRITON_FLASHINFER's FLASHINFER child runs under the FLASHINFER item's patches and settings
(builder_items / flashinfer_plans, reused): per batch the device capability, KV cache dtype and
use_trtllm_attention of flashinfer_settings (no DCP: the composite supports none), vLLM's config
set as configure_vllm sets it (the KV cache layout FlashInferBackend prefers at that capability;
TRITON_ATTN declares none, so the composite's is the same), the fp8 spec of vllm_spec_kwargs,
libattn's BuilderConfig fields of libattn_config_kwargs; patches.patched("FLASHINFER", ...)
(capability query, plan recorders, per-layer parameters and workspace stand-ins) around
construction, builds and the class answers. On the sliding-window builders the stand-in
per-layer parameters carry the layer's window as FlashInferImpl derives it (window_left =
sliding_window - 1; the FLASHINFER item's layers have none). When the FLASHINFER child is chosen
its metadata is compared by the FLASHINFER item's flashinfer_pairs (wrappers by their recorded
plan() arguments, layout, query dtypes, the child builder's plan scalars and paged buffers), the
rest field by field. Its batches have the FLASHINFER item's bounds (FLASHINFER_LIMITS: <= 64
requests; vLLM's build runs a Triton kernel per request in Triton's interpreter)."""
from __future__ import annotations

import contextlib
import dataclasses
import types
from typing import Any, Iterator, List, Tuple

from .abi14_items import _mm_ranges
from .batches import BLOCK_SIZES, VARIANT_KINDS, Batch
from .builder_items import (FLASHINFER_LIMITS, MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS,
                            SCRATCH, _cache, _construct, _constructed, _leaf, _missing_safe,
                            _with_model_features)
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm, lib_field_name
from .item import Item
from .sides import lib_common, vllm_common

LAYER = "model.layers.0.self_attn"
WINDOW = 256


@dataclasses.dataclass(frozen=True)
class Composite:
    """One composite backend: its name (vLLM's and libattn's), vLLM's backend class (module,
    attribute) and its causal child (variant 1; variant 0 is TRITON_ATTN)."""
    name: str
    module: str
    cls: str
    causal: str


TRITON_FLASH_ATTN = Composite("TRITON_FLASH_ATTN", "vllm.v1.attention.backends.triton_flash_attn",
                              "TritonFlashAttentionBackend", "FLASH_ATTN")
TRITON_FLASHINFER = Composite("TRITON_FLASHINFER", "vllm.v1.attention.backends.triton_flashinfer",
                              "TritonFlashInferBackend", "FLASHINFER")
COMPOSITES = (TRITON_FLASH_ATTN, TRITON_FLASHINFER)


def _sliding(b: Batch) -> bool:
    return b.block_size == 32


def _settings(c: Composite, b: Batch) -> Any:
    """The FLASHINFER item's (capability, cache dtype, use_trtllm_attention) for the batch
    (flashinfer_plans.flashinfer_settings; no DCP: the composite supports none); None for
    TRITON_FLASH_ATTN."""
    if c.causal != "FLASHINFER":
        return None
    from .flashinfer_plans import flashinfer_settings
    return flashinfer_settings(b, 1)


@contextlib.contextmanager
def _patches(c: Composite, b: Batch) -> Iterator[None]:
    """TRITON_FLASHINFER: the FLASHINFER item's patches (patches.patched: the batch's device
    capability, the plan recorders, the per-layer parameters and workspace stand-ins) around
    construction, builds and class answers; on a sliding-window builder the stand-in per-layer
    parameters carry the layer's window as FlashInferImpl gives it (window_left =
    sliding_window - 1), the rest unchanged. TRITON_FLASH_ATTN: none."""
    if c.causal != "FLASHINFER":
        yield
        return
    from .patches import patched
    with patched("FLASHINFER", (1, 0), _settings(c, b)[0]):
        if not _sliding(b):
            yield
            return
        import vllm.v1.attention.backends.flashinfer as fi
        base = fi.get_per_layer_parameters  # the lane's stand-in (patched above)

        def windowed(vllm_config: Any, layer_names: List[str], cls_: Any) -> dict:
            return {n: dataclasses.replace(p, window_left=WINDOW - 1)
                    for n, p in base(vllm_config, layer_names, cls_).items()}
        fi.get_per_layer_parameters = windowed
        try:
            yield
        finally:
            fi.get_per_layer_parameters = base


def _key(c: Composite, b: Batch) -> Tuple[Any, ...]:
    return (c.name, b.block_size, b.spec, _settings(c, b))


def vllm_builder(ctx: Any, c: Composite, b: Batch) -> Tuple[Any, Any]:
    key = ("vllm",) + _key(c, b)
    if not _cache(ctx, c.name, key):
        import importlib
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.v1.kv_cache_interface import FullAttentionSpec, SlidingWindowSpec
        settings = _settings(c, b)
        variant = ("composite",) if settings is None else ("composite", c.name, settings)
        vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, variant,
                             MAX_MODEL_LEN)
        _with_model_features(vc, None, True)
        window = WINDOW if _sliding(b) else None
        vc.compilation_config.static_forward_context = {
            LAYER: types.SimpleNamespace(sliding_window=window)}
        kw = dict(block_size=b.block_size, num_kv_heads=8, head_size=128, dtype=torch.bfloat16)
        if settings is not None:  # as the FLASHINFER item configures vLLM (user and engine)
            from .flashinfer_plans import configure_vllm, vllm_spec_kwargs
            with _patches(c, b):
                configure_vllm(vc, settings)
            kw.update(vllm_spec_kwargs(settings))
        spec = SlidingWindowSpec(sliding_window=WINDOW, **kw) if window else FullAttentionSpec(**kw)
        backend = getattr(importlib.import_module(c.module), c.cls)

        def make() -> Any:
            with set_current_vllm_config(vc), _patches(c, b):
                return backend.get_builder_cls()(spec, [LAYER], vc, torch.device("cpu"))
        _construct(ctx, key, vc, make)
    return _constructed(ctx, key)


def lib_builder(ctx: Any, c: Composite, b: Batch, vc: Any) -> Any:
    key = ("lib",) + _key(c, b)
    if not _cache(ctx, c.name, key):
        libattn = ctx.libattn
        settings = _settings(c, b)
        extra = {}
        if settings is not None:  # the FLASHINFER item's libattn settings
            from .flashinfer_plans import libattn_config_kwargs
            extra = libattn_config_kwargs(settings)
        cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                    num_speculative_tokens=b.spec, flash_attn_version=2,
                                    cudagraph_mode=int(libattn.CudagraphMode[
                                        vc.compilation_config.cudagraph_mode.name]),
                                    is_mm_prefix_lm=1, **extra)
        kind = libattn.KvCacheKind.SLIDING_WINDOW if _sliding(b) else \
            libattn.KvCacheKind.FULL_ATTENTION
        spec = libattn.KvCacheSpec(b.block_size, 8, 128, kind=kind,
                                   sliding_window=WINDOW if _sliding(b) else 0)
        ctx.builders[key] = ctx.lib.builder(c.name, spec, cfg)
    return ctx.builders[key]


def _inputs(b: Batch):
    r = _mm_ranges(b)
    return {} if r is None else {"mm_req_doc_ranges": r}


def _captures(ctx: Any, c: Composite, b: Batch) -> bool:
    """build_for_cudagraph_capture (the capture variant's child's) instead of build, on the
    batches layer_variant_items.capture_batch picks by the level of vLLM's composite builder
    class (NEVER with a sliding window: none)."""
    from vllm.config import set_current_vllm_config
    from .layer_variant_items import capture_batch
    vb, vc = vllm_builder(ctx, c, b)
    with set_current_vllm_config(vc), _patches(c, b):
        level = type(vb).get_cudagraph_support(vc, vb.kv_cache_spec)
    return capture_batch(level.name, b)


def _vllm(c: Composite):
    def build(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        vb, vc = vllm_builder(ctx, c, b)
        capture = _captures(ctx, c, b)
        with set_current_vllm_config(vc), _patches(c, b):
            cm = vllm_common(ctx, b, **_inputs(b))
            return vb.build_for_cudagraph_capture(cm) if capture else vb.build(0, cm)
    return build


def _lib(c: Composite):
    def build(ctx: Any, b: Batch) -> Any:
        _, vc = vllm_builder(ctx, c, b)
        lb = lib_builder(ctx, c, b, vc)
        common = lib_common(ctx, b, **_inputs(b))
        return lb.build_for_cudagraph_capture(common) if _captures(ctx, c, b) else lb.build(common)
    return build


def _child(c: Composite, v: Any) -> str:
    return "TRITON_ATTN" if getattr(v, "_attention_backend_variant", 1) == 0 else c.causal


def _pairs(c: Composite):
    def pairs(ctx: Any, b: Batch, v: Any, md: Any) -> List[Pair]:
        lib = {n: md[n] for n in md.fields()}
        out: List[Pair] = [("_attention_backend_variant ~ attention_backend_variant",
                            int(getattr(v, "_attention_backend_variant", -1)),
                            lib.get("attention_backend_variant", MISSING))]
        seen = {"attention_backend_variant"}
        child = _child(c, v)
        vb, vc = vllm_builder(ctx, c, b)
        vfields = flatten_vllm(v)
        if child == "FLASHINFER":
            # the FLASHINFER item's comparison of its wrappers (by their recorded plan()
            # arguments), layout, dtypes and plan scalars, on the composite's FLASHINFER child
            from .flashinfer_plans import OWN_FIELDS, flashinfer_pairs
            out += flashinfer_pairs(v, vb.causal_builder, lib, seen, ctx.libattn, 1, b.bt)
            vfields = [(n, x) for n, x in vfields if n.split(".")[0] not in OWN_FIELDS]
        for name, value in vfields:
            lname = lib_field_name(name, lib)
            seen.add(lname)
            out.append((name, _leaf(value), lib.get(lname, MISSING)))
        from .extensions import EXTENSIONS
        ext = EXTENSIONS.get(child, {})  # the chosen child's own libattn fields (its item's)
        for name in lib:
            if name not in seen and name not in ext:  # the other child's fields
                out.append((f"{name} (the other child's: None)", None, lib[name]))
        out += builder_answer_pairs(vb, vc, lib_builder(ctx, c, b, vc), _patches(c, b))
        return _missing_safe(out)
    return pairs


def _path(c: Composite):
    def path(ctx: Any, b: Batch, v: Any) -> str:
        child = _child(c, v)
        if child == "FLASHINFER":
            from .flashinfer_plans import build_path
            child = f"FLASHINFER {build_path(v, _settings(c, b))}"
        return (f"{child}{', sliding window' if _sliding(b) else ''}"
                f"{', capture' if _captures(ctx, c, b) else ''}")
    return path


def composite_item(c: Composite) -> Item:
    # TRITON_FLASHINFER: the FLASHINFER item's batch bounds (its build runs a Triton kernel per
    # request in Triton's interpreter)
    limits = dict(FLASHINFER_LIMITS) if c.causal == "FLASHINFER" else {}
    return Item(c.name, "builder", _vllm(c), _lib(c), _pairs(c), shape_only=SCRATCH,
                max_spec=3, block_sizes=BLOCK_SIZES, path=_path(c), **limits, kinds=VARIANT_KINDS)


def composite_items() -> List[Item]:
    return [composite_item(c) for c in COMPOSITES]
