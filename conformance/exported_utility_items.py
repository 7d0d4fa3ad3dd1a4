"""Three functions libattn exports beside the builders, against the vLLM 0.33 code they map
(issue 33, part 4): ``infer_global_hyperparameters`` (vllm/v1/attention/backends/utils.py: the
FlashInfer planner's global layer parameters and its two flags), ``slice_query_start_locs``
(vllm/v1/worker/ubatch_utils.py: a micro-batch's rebased query_start_loc) and
FlashInferMetadataBuilder's ``_compute_flashinfer_kv_metadata`` (vllm/v1/attention/backends/
flashinfer.py: paged_kv_indptr, paged_kv_indices through vLLM's ``_copy_page_indices_kernel``,
run by Triton's interpreter, and paged_kv_last_page_len). Each batch seeds the arguments it
does not give (choice_rng)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, List

import numpy as np

from .batches import Batch
from .item import Item, choice_rng

#: the values a layer's parameters are drawn from (few, so that layers often agree)
WINDOW_LEFTS = (-1, -1, 127, 4095)
SOFT_CAPS = (None, None, 30.0, 50.0)
SM_SCALES = (0.125, 0.125, 0.08838834764831845, 1.0)
#: the FlashInfer item's batch cap: vLLM's page-copy kernel in Triton's interpreter costs
#: ~0.5-1 s a batch on this machine (the other Triton items' cap is 2,000)
KV_METADATA_MAX_BATCHES = 300


def _layers(b: Batch) -> List[Any]:
    """1 to 6 layers' (window_left, logits_soft_cap, sm_scale, has_sinks): all one layer's in
    a third of the batches, each drawn alone otherwise."""
    r = choice_rng(b, 61)
    n = int(r.integers(1, 7))

    def one():
        return (int(r.choice(WINDOW_LEFTS)), SOFT_CAPS[int(r.integers(0, len(SOFT_CAPS)))],
                float(r.choice(SM_SCALES)), bool(r.random() < 0.25))
    if r.random() < 1 / 3:
        return [one()] * n
    return [one() for _ in range(n)]


def infer_global_hyperparameters_item() -> Item:
    def v(ctx, b):
        from vllm.v1.attention.backends.utils import (PerLayerParameters,
                                                      infer_global_hyperparameters)
        layers = {f"model.layers.{i}.attn": PerLayerParameters(*p)
                  for i, p in enumerate(_layers(b))}
        return infer_global_hyperparameters(layers)

    def l(ctx, b):
        layers = [ctx.libattn.PerLayerParams(*p) for p in _layers(b)]
        return ctx.lib.infer_global_hyperparameters(layers)

    def pairs(ctx, b, v, l):
        g, same_window, same_all = l
        return [("window_left", v.window_left, g.window_left),
                ("logits_soft_cap", v.logits_soft_cap, g.logits_soft_cap),
                ("sm_scale", v.sm_scale, g.sm_scale), ("has_sinks", v.has_sinks, g.has_sinks),
                ("has_same_window_lefts", v.has_same_window_lefts, same_window),
                ("has_same_all_params", v.has_same_all_params, same_all)]
    return Item("infer_global_hyperparameters", "utility", v, l, pairs,
                path=lambda ctx, b, v: (f"{len(_layers(b))} layers, same window "
                                        f"{v.has_same_window_lefts}, same all "
                                        f"{v.has_same_all_params}"))


def _request_slice(b: Batch) -> slice:
    """Requests [start, stop) of the batch, 0 <= start <= stop <= num_reqs."""
    r = choice_rng(b, 62)
    start = int(r.integers(0, b.n + 1))
    return slice(start, int(r.integers(start, b.n + 1)))


def slice_query_start_locs_item() -> Item:
    def v(ctx, b):
        from vllm.v1.worker.ubatch_utils import slice_query_start_locs
        return slice_query_start_locs(ctx.torch.from_numpy(np.asarray(b.qsl_cpu)),
                                      _request_slice(b)).numpy()

    def l(ctx, b):
        s = _request_slice(b)
        return ctx.lib.slice_query_start_locs(b.qsl_cpu, s.start, s.stop)
    return Item("slice_query_start_locs", "utility", v, l,
                lambda ctx, b, v, l: [("query_start_loc", v, l)])


def _page_size(b: Batch) -> int:
    """The batch's block size; in one batch in four a multiple of it, so that the last pages
    are partial more often (the table's columns still hold every page: fewer are read)."""
    r = choice_rng(b, 63)
    return b.block_size * (int(r.choice((2, 4))) if r.random() < 0.25 else 1)


def flashinfer_kv_metadata_item() -> Item:
    def v(ctx, b):
        from vllm.v1.attention.backends.flashinfer import FlashInferMetadataBuilder
        from vllm.v1.utils import CpuGpuBuffer
        torch = ctx.torch
        n, page = b.n, _page_size(b)
        seq = np.asarray(b.seq_cpu[:n], dtype=np.int32)
        pages = -(-seq // page)
        cpu = torch.device("cpu")
        # the builder's own buffers, as its __init__ sizes them for this batch
        me = SimpleNamespace(
            paged_kv_indptr=CpuGpuBuffer(n + 1, dtype=torch.int32, device=cpu, pin_memory=False),
            paged_kv_indices=torch.zeros(max(int(pages.sum()), 1), dtype=torch.int32),
            paged_kv_last_page_len=CpuGpuBuffer(max(n, 1), dtype=torch.int32, device=cpu,
                                                pin_memory=False))
        me.paged_kv_indptr.np[0] = 0
        indices = FlashInferMetadataBuilder._compute_flashinfer_kv_metadata(
            me, pages, seq, torch.from_numpy(np.ascontiguousarray(b.bt)), n, page)
        return (me.paged_kv_indptr.np[:n + 1].copy(), indices.numpy().copy(),
                me.paged_kv_last_page_len.np[:n].copy())

    def l(ctx, b):
        return ctx.lib.compute_flashinfer_kv_metadata(b.seq_cpu[:b.n], b.bt, _page_size(b))

    def pairs(ctx, b, v, l):
        return [("paged_kv_indptr", v[0], l.indptr), ("paged_kv_indices", v[1], l.indices),
                ("paged_kv_last_page_len", v[2], l.last_page_len)]
    return Item("compute_flashinfer_kv_metadata (FlashInfer's _compute_flashinfer_kv_metadata)",
                "utility", v, l, pairs, max_requests=64, token_budget=2048,
                max_batches=KV_METADATA_MAX_BATCHES)


def exported_utility_items() -> List[Item]:
    return [infer_global_hyperparameters_item(), slice_query_start_locs_item(),
            flashinfer_kv_metadata_item()]
