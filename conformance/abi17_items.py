"""vLLM 0.33's utilities that libattn's ABI 1.7 added: CommonAttentionMetadata.naive_query_lens()
and reshape_attn_output_for_spec_decode (vllm/v1/attention/backend.py, backends/utils.py), the
DCP runner decisions get_dcp_dummy_context_len and should_split_fa2_dcp_context_attention
(vllm/v1/worker/cp_utils.py) and the micro-batch checks is_last_ubatch_empty, get_num_ubatches
and check_ubatch_thresholds (vllm/v1/worker/ubatch_utils.py; ParallelConfig's own properties
derive use_ubatching and num_ubatches). Each batch seeds the scalar arguments (choice_rng)."""
from __future__ import annotations

import ctypes
from types import SimpleNamespace
from typing import List

import numpy as np

from .batches import Batch
from .item import Item, choice_rng
from .sides import lib_common


def naive_query_lens_item() -> Item:
    def v(ctx, b):
        from vllm.v1.attention.backend import CommonAttentionMetadata
        ns = SimpleNamespace(query_start_loc=ctx.torch.from_numpy(np.asarray(b.qsl_cpu)))
        return CommonAttentionMetadata.naive_query_lens(ns).numpy()

    def l(ctx, b):
        return ctx.lib.common_metadata_naive_query_lens(lib_common(ctx, b))
    return Item("CommonAttentionMetadata.naive_query_lens", "utility", v, l,
                lambda ctx, b, v, l: [("naive_query_lens", v, l)])


def _output_geometry(b: Batch):
    """A random attention output: 3-D or 4-D, compact, padded, transposed or arbitrary strides."""
    r = choice_rng(b, 21)
    if r.random() < 0.15:
        return [int(x) for x in r.integers(0, 5, 3)], None
    sh = [int(x) for x in r.integers(0 if r.random() < 0.05 else 1, 5, 4)]
    mode = r.random()
    if mode < 0.4:
        return sh, None  # compact
    if mode < 0.6:  # a padded head dimension
        d = sh[3] + int(r.integers(1, 4))
        return sh, [sh[1] * sh[2] * d, sh[2] * d, d, 1]
    if mode < 0.75:  # the transpose of a compact (s1, s0, h, d) tensor
        return sh, [sh[2] * sh[3], sh[0] * sh[2] * sh[3], sh[3], 1]
    return sh, [int(x) for x in r.integers(0, 40, 4)]


def reshape_attn_output_item() -> Item:
    def tensor(ctx, shape, strides):
        torch = ctx.torch
        if strides is None:
            return torch.zeros(shape, dtype=torch.float32)
        span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if min(shape) > 0 else 1
        return torch.zeros(span, dtype=torch.float32).as_strided(shape, strides)

    def v(ctx, b):
        from vllm.v1.attention.backends.utils import reshape_attn_output_for_spec_decode
        shape, strides = _output_geometry(b)
        try:
            out = reshape_attn_output_for_spec_decode(tensor(ctx, shape, strides))
        except RuntimeError:  # torch's view refuses
            return "refused"
        return (list(out.shape), list(out.stride()))

    def l(ctx, b):
        import libattn
        shape, strides = _output_geometry(b)
        t = tensor(ctx, shape, strides)
        # torch's .numpy() of a tensor without elements reports 0 strides: libattn gets torch's
        x = np.lib.stride_tricks.as_strided(t.numpy(), t.shape, [s * 4 for s in t.stride()])
        try:
            out = ctx.lib.reshape_attn_output_for_spec_decode(x)
        except libattn.InvalidArgument:
            return "refused"
        return (list(out.shape), [s // 4 for s in out.strides])
    return Item("reshape_attn_output_for_spec_decode", "utility", v, l,
                lambda ctx, b, v, l: [("view", str(v), str(l))])


def _dcp_args(b: Batch):
    r = choice_rng(b, 22)
    return (int(r.choice([1, 1, 2, 4, 8])), int(r.choice([1, 16, 64])), bool(r.random() < 0.8),
            bool(r.random() < 0.5), bool(r.random() < 0.5), bool(r.random() < 0.5))


def dcp_dummy_context_len_item() -> Item:
    def v(ctx, b):
        from vllm.v1.worker.cp_utils import get_dcp_dummy_context_len
        return get_dcp_dummy_context_len(*_dcp_args(b))

    def l(ctx, b):
        return ctx.lib.get_dcp_dummy_context_len(*_dcp_args(b))
    return Item("get_dcp_dummy_context_len", "utility", v, l,
                lambda ctx, b, v, l: [("len", int(v), int(l))])


def _fa2_version(b: Batch):
    return choice_rng(b, 23).choice([2, 2, 3, None])


def fa2_split_item() -> Item:
    """The counts are what FLASH_ATTN's DCP path passes: split_dcp_context_queries' of the batch
    (vLLM's on vLLM's side, libattn's on libattn's: that item compares the two)."""
    def v(ctx, b):
        from vllm.v1.worker.cp_utils import (should_split_fa2_dcp_context_attention,
                                             split_dcp_context_queries)
        from .sides import step_inputs
        s = step_inputs(b)
        nd, nc, _, _ = split_dcp_context_queries(
            ctx.torch.from_numpy(b.qsl_cpu), ctx.torch.from_numpy(s["seq_lens_cpu_upper_bound"]),
            b.max_q, b.tokens)
        fa = _fa2_version(b)
        return should_split_fa2_dcp_context_attention(None if fa is None else int(fa), b.max_q,
                                                      b.n, int(nd), int(nc))

    def l(ctx, b):
        out = [ctypes.c_int64() for _ in range(4)]
        ctx.lib.check(ctx.lib.optional_function("attn_split_dcp_context_queries")(
            lib_common(ctx, b).struct, *[ctypes.byref(x) for x in out]))
        fa = _fa2_version(b)
        return ctx.lib.should_split_fa2_dcp_context_attention(
            None if fa is None else int(fa), b.max_q, b.n, out[0].value, out[1].value)
    return Item("should_split_fa2_dcp_context_attention", "utility", v, l,
                lambda ctx, b, v, l: [("split", bool(v), bool(l))])


def _ubatch_args(b: Batch):
    r = choice_rng(b, 24)
    n = int(r.integers(1, 5))
    padded = b.tokens + (int(r.integers(0, 64)) if r.random() < 0.6 else 0)
    return (b.tokens, padded, n, bool(r.random() < 0.5), int(r.choice([0, 1, 2, 3, 4])),
            int(r.integers(0, 64)), int(r.integers(0, 1024)), bool(r.random() < 0.5))


def _parallel_config(enable_dbo: bool, ubatch_size: int, decode: int, prefill: int):
    """A stand-in with ParallelConfig's fields whose use_ubatching and num_ubatches are
    ParallelConfig's own property code (constructing a ParallelConfig checks a distributed
    setup this lane does not have)."""
    from vllm.config import ParallelConfig
    ns = SimpleNamespace(enable_dbo=enable_dbo, ubatch_size=ubatch_size,
                         dbo_decode_token_threshold=decode, dbo_prefill_token_threshold=prefill)
    ns.use_ubatching = ParallelConfig.use_ubatching.fget(ns)
    ns.num_ubatches = ParallelConfig.num_ubatches.fget(ns)
    return ns


def ubatch_checks_item() -> Item:
    def v(ctx, b):
        from vllm.v1.worker import ubatch_utils as u
        orig, padded, n, dbo, size, dec, pre, uni = _ubatch_args(b)
        cfg = _parallel_config(dbo, size, dec, pre)
        return (u.is_last_ubatch_empty(orig, padded, n), u.get_num_ubatches(cfg),
                u.check_ubatch_thresholds(cfg, orig, uni))

    def l(ctx, b):
        orig, padded, n, dbo, size, dec, pre, uni = _ubatch_args(b)
        return (ctx.lib.is_last_ubatch_empty(orig, padded, n), ctx.lib.get_num_ubatches(dbo, size),
                ctx.lib.check_ubatch_thresholds(dbo, size, dec, pre, orig, uni))
    names = ["is_last_ubatch_empty", "get_num_ubatches", "check_ubatch_thresholds"]
    return Item("is_last_ubatch_empty, get_num_ubatches, check_ubatch_thresholds", "utility", v, l,
                lambda ctx, b, v, l: [(k, int(a), int(c)) for k, a, c in zip(names, v, l)])


def abi17_items() -> List[Item]:
    return [naive_query_lens_item(), reshape_attn_output_item(), dcp_dummy_context_len_item(),
            fa2_split_item(), ubatch_checks_item()]
