"""PLE_SHORT_CONV_ATTN: vLLM 0.33's PleShortConvAttentionMetadataBuilder
(vllm/v1/attention/backends/short_conv_attn.py, a real VllmConfig and MambaSpec of mamba_type
SHORT_CONV) against libattn's PLE_SHORT_CONV_ATTN builder on the same batches, every field of
vLLM's PleShortConvAttentionMetadata and the builder's class answers; a second item compares
build_for_cudagraph_capture. The builders, configs and field pairs are the Mamba family's
(conformance/mamba_items.py: cache modes "none"/"align", full CUDA graphs in half the builders,
no ReplaySSM); the build() keyword arguments are this item's own.

Per batch with k > 0 (seeded by the batch): num_decode_draft_tokens_cpu in three batches of four
(query length - 1 on three in four of the short rows that are not prefilling, the spec-decode
requests; -1 elsewhere, so short rows also stay plain decodes or prefills) and
num_accepted_tokens (1..query length) in 19 of 20 of those (vLLM asserts it on the spec path;
libattn refuses its absence, counted as refused by both); without draft counts the non-spec
build. Prefill checkpoints as MAMBA2's item draws them (mamba_items._checkpoints: "align" mode, in
three builders of four, a checkpoint block and the hash sizes on both sides); vLLM's checkpoint
(MambaPrefillCheckpointMetadata) field by field against libattn's checkpoint_* fields.
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from . import mamba_items as mi
from .batches import UTILITY_BLOCK_SIZES, Batch
from .item import Item, choice_rng
from .sides import lib_common, vllm_common

NAME = "PLE_SHORT_CONV_ATTN"
mi.VARIANT_BACKENDS[NAME] = ("vllm.v1.attention.backends.short_conv_attn",
                             "PleShortConvAttentionBackend", "SHORT_CONV", "SHORT_CONV")


def _kwargs(b: Batch) -> Dict[str, Any]:
    if not b.spec or not b.n:
        return {}
    r = choice_rng(b, 70)
    if r.random() >= 0.75:
        return {}
    q = b.q.astype(np.int64)
    short = (q >= 1) & (q <= b.threshold) & ~b.is_prefilling
    marked = short & (r.random(b.n) < 0.75)
    out: Dict[str, Any] = {"num_decode_draft_tokens_cpu": np.where(marked, q - 1, -1).astype(np.int32)}
    if r.random() < 0.95:
        out["num_accepted_tokens"] = np.minimum(
            np.maximum(q, 1), 1 + (r.random(b.n) * np.maximum(q, 1)).astype(np.int64)).astype(np.int32)
    return out


def _path(b: Batch, v: Any) -> str:
    mode, full, _ = mi._settings(b)
    if getattr(v, "spec_sequence_masks", None) is not None:
        kind = "spec only" if v.num_decodes + v.num_prefills == 0 else "spec mixed"
    else:
        kind = "decodes only" if v.num_prefills == 0 else (
            "prefills only" if v.num_decodes == 0 else "mixed")
    ck = ", checkpoints" if getattr(v, "checkpoint", None) is not None else ""
    return f"{mode}, {'full graphs' if full else 'no graphs'}, {kind}{ck}"


def ple_item(capture: bool = False) -> Item:
    def v(ctx, b):
        from vllm.config import set_current_vllm_config
        mb = mi._batch(b)
        vb, vc = mi.vllm_builder(ctx, NAME, mb)
        cm = vllm_common(ctx, mb)
        with set_current_vllm_config(vc):
            if capture:
                mi._uniform_or_refuse(mb)
                return vb.build_for_cudagraph_capture(cm)
            kw = {k: ctx.torch.from_numpy(x) for k, x in _kwargs(mb).items()}
            return vb.build(0, cm, **kw)

    def l(ctx, b):
        mb = mi._batch(b)
        _, vc = mi.vllm_builder(ctx, NAME, mb)
        lb = mi.lib_builder(ctx, NAME, mb, vc)
        if capture:
            return lb.build_for_cudagraph_capture(lib_common(ctx, mb))
        return lb.build(lib_common(ctx, mb, **_kwargs(mb)))

    kinds = ("decode", "spec", "padded", "edge", "dummy") if capture else \
        ("decode", "prefill", "mixed", "chunked", "spec", "padded", "edge", "dummy")
    return Item(f"{NAME} (build_for_cudagraph_capture)" if capture else NAME, "builder", v, l,
                lambda ctx, b, v, md: mi.mamba_pairs(ctx, NAME, mi._batch(b), v, md),
                shape_only=mi.SHAPE_ONLY, max_spec=3, block_sizes=UTILITY_BLOCK_SIZES,
                kinds=kinds, path=lambda ctx, b, v: _path(mi._batch(b), v))


def ple_items() -> List[Item]:
    return [ple_item(), ple_item(capture=True)]
