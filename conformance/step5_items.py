"""Step5's builders (vllm/models/step5/nvidia/) against libattn's of the same names, on the lane's
random batches.

STEP5_CSA_SUMMARY: vLLM 0.33's Step5SparseSummaryMetadataBuilder (sparse_summary_cache.py), whose
build returns None ("summaries are addressed through the DSA layer's own metadata"): vLLM's
result (None) against libattn's metadata, which must have no fields (compared as None), and the
builder's answers (level ALWAYS, threshold None, ...). vLLM's builder is made with the lane's
Llama-shaped VllmConfig (the base class reads nothing of it) and the layer's own spec
(Step5SparseSummaryCacheLayer.get_kv_cache_spec: FullAttentionSpec(block_size, 1 head, 256,
head_size_v 0, uint8, tokens_per_state 8)) at the batch's block size (a multiple of 8, as the
layer requires); on a third of the batches with ``build_for_cudagraph_capture`` on both sides
(the base class's: build). It asks no platform question: nothing is patched.
"""
from __future__ import annotations

import importlib
from typing import Any, List

from .batches import Batch
from .builder_items import MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS
from .compare import Pair, builder_answer_pairs
from .item import Item, choice_rng
from .sides import lib_common, vllm_common

SUMMARY = "STEP5_CSA_SUMMARY"
SUMMARY_MODULE = "vllm.models.step5.nvidia.sparse_summary_cache"
LAYER = "model.layers.0.self_attn.summary_cache"
BLOCK_SIZES = (16, 64)  # the layer refuses block sizes that are not multiples of 8


def capture_of(b: Batch) -> bool:
    return int(choice_rng(b, 90).integers(0, 3)) == 0


def summary_builders(ctx: Any, b: Batch) -> Any:
    cache = ctx.__dict__.setdefault("step5_summary_builders", {})
    key = (b.block_size, b.spec)
    if key in cache:
        return cache[key]
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import FullAttentionSpec
    libattn = ctx.libattn
    vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, ("step5", SUMMARY),
                         MAX_MODEL_LEN)
    spec = FullAttentionSpec(block_size=b.block_size, num_kv_heads=1, head_size=256,
                             head_size_v=0, dtype=torch.uint8, tokens_per_state=8)
    backend = importlib.import_module(SUMMARY_MODULE).Step5SparseSummaryBackend
    assert backend.get_name() == SUMMARY, backend.get_name()
    with set_current_vllm_config(vc):
        vb = backend.get_builder_cls()(spec, [LAYER], vc, torch.device("cpu"))
    lspec = libattn.KvCacheSpec(b.block_size, 1, 256, kind=libattn.KvCacheKind.FULL_ATTENTION,
                                dtype=libattn.KvDtype.UINT8, tokens_per_state=8)
    cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                num_speculative_tokens=b.spec)
    cache[key] = (vb, vc, ctx.lib.builder(SUMMARY, lspec, cfg))
    return cache[key]


def summary_item() -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        vb, vc, _ = summary_builders(ctx, b)
        cm = vllm_common(ctx, b)
        with set_current_vllm_config(vc):
            if capture_of(b):
                return vb.build_for_cudagraph_capture(cm)
            return vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        lb = summary_builders(ctx, b)[2]
        if capture_of(b):
            return lb.build_for_cudagraph_capture(lib_common(ctx, b))
        return lb.build(lib_common(ctx, b))

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        vb, vc, lb = summary_builders(ctx, b)
        fields = list(lmd.fields())
        return [("build() result (libattn: a metadata with no fields is None)", vmd,
                 None if not fields else fields)] + builder_answer_pairs(vb, vc, lb)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        return "build_for_cudagraph_capture" if capture_of(b) else "build"

    return Item(SUMMARY, "builder", v, l, pairs, block_sizes=BLOCK_SIZES, max_spec=3,
                max_requests=256, path=path)


def step5_items() -> List[Item]:
    return [summary_item()]
