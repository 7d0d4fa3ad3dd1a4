"""vLLM 0.33's batch helpers that libattn's ABI 1.4 added: the DCP context split and skip
(vllm/v1/worker/cp_utils.py), the multimodal PrefixLM range helpers
(vllm/v1/attention/backends/utils.py) and maybe_create_ubatch_slices with a list of split
points (vllm/v1/worker/ubatch_utils.py). compute_token_to_req_indices is a Triton kernel: see
triton_items.py."""
from __future__ import annotations

import ctypes
from typing import Dict, List, Optional, Tuple

import numpy as np

from .batches import Batch
from .item import Item, choice_rng
from .sides import lib_common, step_inputs
from .utility_items import ubatch_pairs


def dcp_context_split_item() -> Item:
    def v(ctx, b):
        from vllm.v1.worker.cp_utils import split_dcp_context_queries
        s = step_inputs(b)
        return split_dcp_context_queries(ctx.torch.from_numpy(b.qsl_cpu),
                                         ctx.torch.from_numpy(s["seq_lens_cpu_upper_bound"]),
                                         b.max_q, b.tokens)

    def l(ctx, b):
        out = [ctypes.c_int64() for _ in range(4)]
        ctx.lib.check(ctx.lib.optional_function("attn_split_dcp_context_queries")(
            lib_common(ctx, b).struct, *[ctypes.byref(x) for x in out]))
        return tuple(x.value for x in out)
    names = ["num_decodes", "num_extends", "num_decode_tokens", "num_extend_tokens"]
    return Item("split_dcp_context_queries", "utility", v, l,
                lambda ctx, b, v, l: [(n, int(a), int(c)) for n, a, c in zip(names, v, l)])


def _contexts(b: Batch) -> np.ndarray:
    r = choice_rng(b, 9)
    c = (b.seq - b.q).astype(np.int32)
    if r.random() < 0.3:  # all-zero contexts (the skip) are rare in random batches
        c[:] = 0
    return c


def dcp_skip_item() -> Item:
    def v(ctx, b):
        from vllm.v1.worker.cp_utils import should_skip_dcp_context_attention
        return should_skip_dcp_context_attention(ctx.torch.from_numpy(_contexts(b)))

    def l(ctx, b):
        from libattn.tensors import tensor_arg
        t = tensor_arg(_contexts(b), name="context_kv_lens_cpu")
        out = ctypes.c_int32()
        ctx.lib.check(ctx.lib.optional_function("attn_should_skip_dcp_context_attention")(
            t.struct, ctypes.byref(out)))
        return bool(out.value)
    return Item("should_skip_dcp_context_attention", "utility", v, l,
                lambda ctx, b, v, l: [("skip", bool(v), bool(l))], kinds=(
                    "decode", "prefill", "mixed", "chunked", "spec", "edge"))


def _mm_ranges(b: Batch) -> Optional[Dict[int, List[Tuple[int, int]]]]:
    """None, or for some requests 0..3 non-overlapping prompt ranges (sometimes degenerate),
    absolute positions that may run past this step's tokens."""
    r = choice_rng(b, 10)
    if r.random() < 0.15 or b.n == 0:
        return None
    out: Dict[int, List[Tuple[int, int]]] = {}
    for i in np.nonzero(r.random(b.n) < 0.5)[0]:
        top = int(max(b.prompt[i], b.seq[i], 1))
        k = int(r.integers(0, 4))
        cuts = np.sort(r.integers(0, top + 1, 2 * k))
        rows = [(int(cuts[2 * j]), int(cuts[2 * j + 1])) for j in range(k)]
        if rows and r.random() < 0.1:
            rows[0] = (rows[0][1], rows[0][0])  # start >= end: skipped by both
        out[int(i)] = rows
    return out


def mm_range_tensor_item() -> Item:
    def v(ctx, b):
        from vllm.v1.attention.backends.utils import compute_mm_prefix_range_tensor
        return compute_mm_prefix_range_tensor(_mm_ranges(b), b.n, ctx.torch.device("cpu"))

    def l(ctx, b):
        return ctx.lib.compute_mm_prefix_range_tensor(_mm_ranges(b), b.n)
    return Item("compute_mm_prefix_range_tensor", "utility", v, l,
                lambda ctx, b, v, l: [("mm_prefix_range_tensor", v, l)])


def mm_query_ranges_item() -> Item:
    def fill(b, fn):
        out = np.full((b.tokens + 8, 2), 7, np.int32)  # untouched rows stay 7 on both sides
        return fn(out), out

    def v(ctx, b):
        from vllm.v1.attention.backends.utils import fill_mm_prefix_query_ranges
        t = ctx.torch.from_numpy
        return fill(b, lambda o: fill_mm_prefix_query_ranges(
            o, _mm_ranges(b), t(b.qsl_cpu), t(step_inputs(b)["seq_lens_cpu_upper_bound"])))

    def l(ctx, b):
        return fill(b, lambda o: ctx.lib.fill_mm_prefix_query_ranges(
            o, _mm_ranges(b), b.qsl_cpu, step_inputs(b)["seq_lens_cpu_upper_bound"]))
    return Item("fill_mm_prefix_query_ranges", "utility", v, l,
                lambda ctx, b, v, l: [("rows written", int(v[0]), int(l[0])),
                                      ("out", v[1], l[1])])


def _split_points(b: Batch):
    r = choice_rng(b, 11)
    k = int(r.choice([2, 3, 4]))
    tp = b.tokens + (int(r.integers(0, 9)) if r.random() < 0.5 else 0)
    rp = b.n + (int(r.integers(0, 3)) if r.random() < 0.3 else 0)
    points = sorted(int(x) for x in r.integers(0, max(b.tokens, 0) + 1, k - 1))
    return k, tp, rp, points


def ubatch_split_points_item() -> Item:
    def v(ctx, b):
        from vllm.v1.worker.ubatch_utils import maybe_create_ubatch_slices
        k, tp, rp, pts = _split_points(b)
        return maybe_create_ubatch_slices(True, b.q, tp, rp, k, pts)

    def l(ctx, b):
        k, tp, rp, pts = _split_points(b)
        return ctx.lib.maybe_create_ubatch_slices_ex(b.q, tp, rp, k, pts)
    return Item("maybe_create_ubatch_slices(split point list)", "utility", v, l, ubatch_pairs)


def abi14_items() -> List[Item]:
    return [dcp_context_split_item(), dcp_skip_item(), mm_range_tensor_item(),
            mm_query_ranges_item(), ubatch_split_points_item()]
