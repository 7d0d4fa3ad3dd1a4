"""Inkling's short-convolution state cache: vLLM 0.33's InklingSconvMetadataBuilder of
vllm/models/inkling/nvidia/sconv_swa_attn.py and of vllm/models/inkling/amd/sconv_swa_attn.py
(both backends call themselves INKLING_SCONV_SWA; libattn has one backend for the two, the same
builder) against libattn's INKLING_SCONV_SWA, one item per vLLM module, on the lane's random
batches: every field of InklingSconvMetadata (block_table, slot_mapping, seq_idx, query_start)
and the builder's answers.

vLLM's builder needs only the scheduler's max_num_batched_tokens from its VllmConfig (the lane's
Llama-shaped config) and a SlidingWindowSpec (block size = window = the batch's block size, 4
heads of the packed width 512, bfloat16, head_size_v 0, as InklingConvState makes it). On one
batch in three the slot mapping carries 1..16 padding rows (slot -1) past num_actual_tokens
(``_pad``): vLLM sizes seq_idx and query_start by the slot mapping's length (the runner's padded
token count) and zeroes the rows past query_start_loc_cpu[-1].

sconv_seq_metadata's Triton kernel (_seq_metadata_kernel) runs in Triton's CPU interpreter on
about one small batch in ``TRITON_EVERY``; on the others ``_SeqMetadataNumpy`` stands in for the
kernel only (sconv_seq_metadata's own checks still run).
"""
from __future__ import annotations

import contextlib
import importlib
from typing import Any, List

import numpy as np

from .batches import VARIANT_KINDS, Batch
from .builder_items import MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS
from .compare import MISSING, Pair, builder_answer_pairs
from .item import Item, choice_rng, pad_past_actual_tokens
from .sides import lib_common, vllm_common

NAME = "INKLING_SCONV_SWA"
VARIANTS = ("nvidia", "amd")
LAYER = "model.layers.0.sconv_state"
TRITON_EVERY = 40
BLOCK_SIZES = (4, 16, 64)


def _module(variant: str) -> str:
    return f"vllm.models.inkling.{variant}.sconv_swa_attn"


def _ops(variant: str) -> str:
    return f"vllm.models.inkling.{variant}.ops.sconv"


def item_name(variant: str) -> str:
    return f"{NAME} ({variant})"


def triton_batch(b: Batch) -> bool:
    return (b.n <= 8 and b.tokens <= 2048 and
            int(choice_rng(b, 71).integers(0, TRITON_EVERY)) == 0)


def _pad(b: Batch) -> None:
    """Padding rows on one batch in three (pad_past_actual_tokens)."""
    pad_past_actual_tokens(b, "_inkling_padded", 3, (72, 73))


class _SeqMetadataNumpy:
    """_seq_metadata_kernel restated: row t < num_actual_tokens belongs to the last request j
    in [0, num_reqs) with query_start_loc[j] <= t; seq_idx[t] = j, query_start[t] =
    query_start_loc[j]; rows num_actual_tokens..num_padded_tokens get 0."""

    def __getitem__(self, grid: Any) -> Any:
        return self.launch

    @staticmethod
    def launch(qsl: Any, seq_idx: Any, query_start: Any, num_reqs: int, num_actual_tokens: int,
               num_padded_tokens: int, n_iters: int, **k: Any) -> None:
        q = qsl.numpy()
        t = np.arange(num_actual_tokens)
        owner = np.zeros(num_actual_tokens, np.int64)
        for j in range(1, num_reqs):  # the last request starting at or before t
            owner[q[j] <= t] = j
        si, qs = seq_idx.numpy(), query_start.numpy()
        si[:num_actual_tokens] = owner
        qs[:num_actual_tokens] = q[owner] if num_actual_tokens else 0
        si[num_actual_tokens:num_padded_tokens] = 0
        qs[num_actual_tokens:num_padded_tokens] = 0


def patched(variant: str, real_triton: bool) -> Any:
    from unittest import mock
    stack = contextlib.ExitStack()
    if not real_triton:
        stack.enter_context(mock.patch.object(importlib.import_module(_ops(variant)),
                                              "_seq_metadata_kernel", _SeqMetadataNumpy()))
    return stack


def builders(ctx: Any, variant: str, b: Batch) -> Any:
    cache = ctx.__dict__.setdefault("inkling_builders", {})
    key = (variant, b.block_size, b.spec)
    if key in cache:
        return cache[key]
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import SlidingWindowSpec
    libattn = ctx.libattn
    vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, ("inkling", variant),
                         MAX_MODEL_LEN)
    spec = SlidingWindowSpec(block_size=b.block_size, num_kv_heads=4, head_size=512,
                             head_size_v=0, dtype=torch.bfloat16, sliding_window=b.block_size)
    cls = importlib.import_module(_module(variant)).InklingSconvMetadataBuilder
    with set_current_vllm_config(vc):
        vb = cls(spec, [LAYER], vc, torch.device("cpu"))
    lspec = libattn.KvCacheSpec(b.block_size, 4, 512, kind=libattn.KvCacheKind.SLIDING_WINDOW,
                                sliding_window=b.block_size)
    cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                num_speculative_tokens=b.spec)
    cache[key] = (vb, vc, ctx.lib.builder(NAME, lspec, cfg))
    return cache[key]


def inkling_pairs(vmd: Any, lmd: Any, vb: Any, vc: Any, lb: Any) -> List[Pair]:
    import dataclasses
    lib = {n: lmd[n] for n in lmd.fields()}
    out: List[Pair] = []
    for f in dataclasses.fields(vmd):
        out.append((f.name, getattr(vmd, f.name), lib.pop(f.name, MISSING)))
    out += [(f"{n} (libattn field vLLM 0.33 lacks)", MISSING, x) for n, x in lib.items()]
    out += builder_answer_pairs(vb, vc, lb)
    return [(n, "absent" if a is MISSING else a, "absent" if c is MISSING else c)
            if (a is MISSING or c is MISSING) else (n, a, c) for n, a, c in out]


def inkling_item(variant: str) -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        from .layer_variant_items import captures
        vb, vc, _ = builders(ctx, variant, b)
        _pad(b)
        cm = vllm_common(ctx, b)
        capture = captures(vb, vc, b)
        with set_current_vllm_config(vc), patched(variant, triton_batch(b)):
            return vb.build_for_cudagraph_capture(cm) if capture else vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        from .layer_variant_items import captures
        _pad(b)
        vb, vc, lb = builders(ctx, variant, b)
        common = lib_common(ctx, b)
        return lb.build_for_cudagraph_capture(common) if captures(vb, vc, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        vb, vc, lb = builders(ctx, variant, b)
        return inkling_pairs(vmd, lmd, vb, vc, lb)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        parts = ["triton" if triton_batch(b) else "numpy stand-in"]
        if vmd.slot_mapping.shape[0] > b.tokens:
            parts.append("padding rows")
        if b.n and (np.diff(b.qsl) == 0).any():
            parts.append("empty queries")
        return ", ".join(parts)

    return Item(item_name(variant), "builder", v, l, pairs, block_sizes=BLOCK_SIZES, max_spec=3,
                max_requests=256, path=path, kinds=VARIANT_KINDS)


def inkling_items() -> List[Item]:
    return [inkling_item(v) for v in VARIANTS]
