"""XPU_MLA_SPARSE: vLLM 0.33's XPUMLASparseMetadataBuilder (vllm/v1/attention/backends/mla/
xpu_mla_sparse.py, the XPU platform's sparse MLA builder) against libattn's builder of the same
name, on the lane's random batches: every field of XPUMLASparseMetadata (13: the batch's scalars
and tensors, req_id_per_token, block_size, topk_tokens, num_decodes / num_prefills /
num_decode_tokens) and the builder's answers (level NEVER, threshold None, ...).

vLLM's side is the DeepSeek-V3.2-shaped VllmConfig of sparse_indexer_items (``new_vllm_config``:
MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, no DCP) with index_topk 2048 or 256 (a per-batch profile)
and a real MLAAttentionSpec (head 576, bfloat16) at the batch's block size; libattn takes an
ATTN_KV_MLA spec with index_topk the same. On one batch in four the step carries 1..16 padding
tokens past query_start_loc[-1] (``Batch.pad_tokens``: num_actual_tokens counts them), whose
request ids are the buffer's zeros.

The XPU platform is not needed: the builder asks no platform question (no device capability,
no kernel; its request ids are numpy's np.repeat over query_start_loc_cpu, copied through
np_to_pinned_tensor, which pins nothing without a CUDA driver), so it runs as it is on the CPU,
with current_platform the real CPU one; only its module is the XPU backend's, imported as it is.
"""
from __future__ import annotations

import importlib
from typing import Any, List

import numpy as np

from .batches import VARIANT_KINDS, Batch
from .compare import MISSING, Pair, builder_answer_pairs, dataclass_pairs
from .item import Item, choice_rng
from .mla_items import LAYER
from .sides import lib_common, vllm_common
from .sparse_indexer_items import (MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, TOKEN_BUDGET,
                                   new_vllm_config)

NAME = "XPU_MLA_SPARSE"
MODULE = "vllm.v1.attention.backends.mla.xpu_mla_sparse"
BLOCK_SIZES = (16, 64)  # the base class's MultipleOf(1)
TOPKS = (2048, 256)
#: builder pairs kept (each holds a vLLM VllmConfig and MAX_TOKENS request ids on both sides)
CACHED_BUILDERS = 8


def topk_of(b: Batch) -> int:
    return TOPKS[int(choice_rng(b, 80).integers(0, len(TOPKS)))]


def _pad(b: Batch) -> Batch:
    """1..16 padding tokens past query_start_loc[-1] on one batch in four."""
    if int(choice_rng(b, 81).integers(0, 4)) == 0:
        b.pad_tokens = int(choice_rng(b, 82).integers(1, 17))
    return b


def builders(ctx: Any, b: Batch) -> Any:
    cache = ctx.__dict__.setdefault("xpu_mla_sparse_builders", {})
    topk = topk_of(b)
    key = (b.block_size, b.spec, topk)
    if key in cache:
        cache[key] = cache.pop(key)  # most recently used last
        return cache[key]
    while len(cache) >= CACHED_BUILDERS:
        del cache[next(iter(cache))]
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import MLAAttentionSpec
    vc = new_vllm_config(ctx, b.spec, topk, b.block_size)
    spec = MLAAttentionSpec(block_size=b.block_size, num_kv_heads=1, head_size=576,
                            dtype=torch.bfloat16)
    backend = importlib.import_module(MODULE).XPUMLASparseBackend
    assert backend.get_name() == NAME, backend.get_name()
    with set_current_vllm_config(vc):
        vb = backend.get_builder_cls()(spec, [LAYER], vc, torch.device("cpu"))
    libattn = ctx.libattn
    cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, 16,
                                num_speculative_tokens=b.spec)
    lspec = libattn.KvCacheSpec(b.block_size, 1, 576, kind=libattn.KvCacheKind.MLA,
                                index_topk=topk)
    cache[key] = (vb, vc, ctx.lib.builder(NAME, lspec, cfg))
    return cache[key]


def xpu_pairs(vmd: Any, lmd: Any, vb: Any, vc: Any, lb: Any) -> List[Pair]:
    out = dataclass_pairs(vmd, lmd) + builder_answer_pairs(vb, vc, lb)
    return [(n, "absent" if a is MISSING else a, "absent" if c is MISSING else c)
            if (a is MISSING or c is MISSING) else (n, a, c) for n, a, c in out]


def xpu_mla_sparse_item() -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        from .layer_variant_items import captures
        vb, vc, _ = builders(ctx, b)
        cm = vllm_common(ctx, b)
        capture = captures(vb, vc, b)
        with set_current_vllm_config(vc):
            return vb.build_for_cudagraph_capture(cm) if capture else vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        from .layer_variant_items import captures
        vb, vc, lb = builders(ctx, b)
        common = lib_common(ctx, b)
        return lb.build_for_cudagraph_capture(common) if captures(vb, vc, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        vb, vc, lb = builders(ctx, b)
        return xpu_pairs(vmd, lmd, vb, vc, lb)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        parts = [f"index_topk {topk_of(b)}"]
        if b.pad_tokens:
            parts.append("padding tokens")
        if b.n and (np.diff(b.qsl_cpu[:b.n + 1]) == 0).any():
            parts.append("empty queries")
        return ", ".join(parts)

    return Item(NAME, "builder", v, l, pairs, block_sizes=BLOCK_SIZES, max_spec=3,
                max_requests=256, token_budget=TOKEN_BUDGET, adjust=_pad, path=path,
                kinds=VARIANT_KINDS)


def xpu_mla_sparse_items() -> List[Item]:
    return [xpu_mla_sparse_item()]
