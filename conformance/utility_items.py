"""The batch utilities: vLLM 0.33's function against libattn's ``attn_<same name>``.

Each item is one function here (``_split``, ``_reorder``, ...) so that switching on an input
libattn gains later is a change in one place; the places are marked ``INTEGRATOR:``.
"""
from __future__ import annotations

from typing import Any, List

import numpy as np

from .batches import Batch
from .compare import Pair, as_np, common_pairs
from .item import Item, choice_rng
from .mla_chunk_items import mla_chunks_item
from .sides import lib_common, vllm_common
from .stand_ins import StandInInputBatch, StandInSchedulerOutput


def _split_counts(v: Any, l: Any, names: List[str]) -> List[Pair]:
    return [(n, int(a), int(getattr(l, n))) for n, a in zip(names, v)]


SPLIT4 = ["num_decodes", "num_prefills", "num_decode_tokens", "num_prefill_tokens"]
SPLIT6 = ["num_decodes", "num_extends", "num_prefills", "num_decode_tokens", "num_extend_tokens",
          "num_prefill_tokens"]


def split_item(require_uniform: bool) -> Item:
    def v(ctx, b):
        return ctx.vu.split_decodes_and_prefills(vllm_common(ctx, b), b.threshold, require_uniform)

    def l(ctx, b):
        return ctx.lib.split_decodes_and_prefills(lib_common(ctx, b), b.threshold, require_uniform)
    return Item(f"split_decodes_and_prefills({'require_uniform' if require_uniform else 'thr'})",
                "utility", v, l, lambda ctx, b, v, l: _split_counts(v, l, SPLIT4))


def split_short_extends_item() -> Item:
    """vLLM 0.33's treat_short_extends_as_decodes=False (reads is_prefilling) against
    attn_split_decodes_and_prefills_ex (ABI 1.4)."""
    def v(ctx, b):
        return ctx.vu.split_decodes_and_prefills(vllm_common(ctx, b), b.threshold, False,
                                                 treat_short_extends_as_decodes=False)

    def l(ctx, b):
        return ctx.lib.split_decodes_and_prefills_ex(lib_common(ctx, b), b.threshold, False,
                                                     treat_short_extends_as_decodes=False)
    return Item("split_decodes_and_prefills(treat_short_extends_as_decodes=False)", "utility",
                v, l, lambda ctx, b, v, l: _split_counts(v, l, SPLIT4))


def split_extends_item() -> Item:
    def v(ctx, b):
        return ctx.vu.split_decodes_prefills_and_extends(vllm_common(ctx, b), b.threshold)

    def l(ctx, b):
        return ctx.lib.split_decodes_prefills_and_extends(lib_common(ctx, b), b.threshold)
    return Item("split_decodes_prefills_and_extends", "utility", v, l,
                lambda ctx, b, v, l: _split_counts(v, l, SPLIT6))


def _shuffled(b: Batch):
    perm = choice_rng(b, 1).permutation(b.n)
    return (perm, np.ascontiguousarray(b.q[perm]), np.ascontiguousarray(b.ctx[perm]),
            np.ascontiguousarray(b.prompt[perm]))


def reorder_item() -> Item:
    def v(ctx, b):
        perm, sched, comp, prompt = _shuffled(b)
        ids = [f"req-{i}" for i in perm]
        batch = StandInInputBatch(ids, comp, prompt)
        moved = ctx.vu.reorder_batch_to_split_decodes_and_prefills(
            batch, StandInSchedulerOutput({r: int(s) for r, s in zip(ids, sched)}), b.threshold)
        return moved, batch

    def l(ctx, b):
        perm, sched, comp, prompt = _shuffled(b)
        return ctx.lib.reorder_batch_to_split_decodes_and_prefills_v2(sched, comp, prompt,
                                                                      b.threshold)

    def pairs(ctx, b, v, l):
        moved, batch = v
        perm = _shuffled(b)[0]
        order = np.array([int(r[4:]) for r in batch.req_ids], np.int64)
        lib_order = perm.astype(np.int64)
        for s, d in l:
            lib_order[s], lib_order[d] = lib_order[d], lib_order[s]
        return [("moved", bool(moved), bool(l)), ("swap_states calls (src, dst)", batch.swaps,
                                                  [tuple(x) for x in l]),
                ("resulting order", order, lib_order)]
    return Item("reorder_batch_to_split_decodes_and_prefills", "utility", v, l, pairs)


def _workspace(b: Batch):
    r = choice_rng(b, 2)
    top = max(b.max_s, 1)
    return int(top * r.choice([1, 1.5, 2, 4, 16])), int(r.integers(0, 4))


def prefill_chunks_item() -> Item:
    def v(ctx, b):
        ws, off = _workspace(b)
        return ctx.vu.split_prefill_chunks(ctx.torch.from_numpy(b.seq_cpu), ws, off)

    def l(ctx, b):
        ws, off = _workspace(b)
        return ctx.lib.split_prefill_chunks(b.seq_cpu, ws, off)
    return Item("split_prefill_chunks", "utility", v, l,
                lambda ctx, b, v, l: [("chunk bounds", [tuple(map(int, x)) for x in v],
                                       [tuple(x) for x in l])])


def local_item() -> Item:
    def v(ctx, b):
        return ctx.vu.make_local_attention_virtual_batches(b.chunk, vllm_common(ctx, b),
                                                           b.block_size)

    def l(ctx, b):
        return ctx.lib.make_local_attention_virtual_batches(b.chunk, lib_common(ctx, b),
                                                            b.block_size)

    def pairs(ctx, b, v, l):
        cm, make_block_table = v
        md = l.metadata.to_dict()
        pages = b.chunk // b.block_size
        # the block table vLLM's closure makes from the batch's own table
        vbt = make_block_table(ctx.torch.from_numpy(b.bt))
        return common_pairs(cm, md) + [
            ("num_computed_tokens_cpu", cm.compute_num_computed_tokens(), l.num_computed_tokens),
            ("query_start_loc (output array)", cm.query_start_loc_cpu, l.query_start_loc),
            ("seq_lens (output array)", cm.seq_lens, l.seq_lens),
            ("block_table (output array)", cm.block_table_tensor, l.block_table),
            ("make_virtual_batches_block_table(block_table) vs remap_local_block_table",
             vbt, ctx.lib.remap_local_block_table(b.bt, l.virtual_req, l.virtual_block_start,
                                                  pages))]
    return Item("make_local_attention_virtual_batches", "utility", v, l, pairs)


def _logits(b: Batch):
    """The logits indices of a step: none (fast prefill not armed), each request's last token,
    or every token of spec-decode requests; padded to a multiple of 8 with the last index."""
    r = choice_rng(b, 3)
    mode = r.choice(["none", "last", "all"], p=[0.15, 0.6, 0.25])
    if mode == "none" or b.tokens == 0:
        return None
    real = b.q > 0
    li = (b.qsl[1:][real] - 1).astype(np.int32) if mode == "last" else \
        np.arange(b.tokens, dtype=np.int32)
    if len(li) == 0:
        return None
    req = np.searchsorted(b.qsl[1:], li, "right")
    per = int(np.bincount(req, minlength=b.n).max())
    padded = -(-len(li) // 8) * 8
    return np.concatenate([li, np.full(padded - len(li), li[-1], np.int32)]), len(li), per


def fast_prefill_item() -> Item:
    def v(ctx, b):
        lg = _logits(b)
        kw = {} if lg is None else dict(logits_indices_padded=lg[0], num_logits_indices=lg[1],
                                         max_logits_per_req=lg[2])
        return ctx.vu.make_kv_sharing_fast_prefill_common_attn_metadata(vllm_common(ctx, b, **kw))

    def l(ctx, b):
        lg = _logits(b)
        kw = {} if lg is None else dict(logits_indices_padded=lg[0], num_logits_indices=lg[1],
                                         max_logits_per_req=lg[2])
        return ctx.lib.make_kv_sharing_fast_prefill_common_attn_metadata(lib_common(ctx, b, **kw))
    return Item("make_kv_sharing_fast_prefill_common_attn_metadata", "utility", v, l,
                lambda ctx, b, v, l: common_pairs(v, l.to_dict()))


def conv1d_item() -> Item:
    def v(ctx, b):
        return ctx.vu.compute_causal_conv1d_metadata(ctx.torch.from_numpy(b.qsl_cpu),
                                                     device=ctx.torch.device("cpu"))

    def l(ctx, b):
        return ctx.lib.compute_causal_conv1d_metadata(b.qsl_cpu)

    def pairs(ctx, b, v, l):
        nums_dict, batch_ptr, offset_ptr = v
        d = nums_dict[8]
        return [("nums", as_np(d["nums"]).astype(np.int32), l.nums), ("tot", d["tot"], l.tot),
                ("mlist", as_np(d["mlist"]).astype(np.int32), l.batch_ptr[: d["mlist_len"]]),
                ("mlist_len (= tot)", d["mlist_len"], l.tot),
                ("offsetlist", as_np(d["offsetlist"]),
                 l.token_chunk_offset_ptr[: d["mlist_len"]]),
                ("batch_ptr (MAX_NUM_PROGRAMS)", batch_ptr, l.batch_ptr),
                ("token_chunk_offset_ptr (MAX_NUM_PROGRAMS)", offset_ptr,
                 l.token_chunk_offset_ptr)]
    return Item("compute_causal_conv1d_metadata", "utility", v, l, pairs)


def _dcp_rank(b: Batch):
    r = choice_rng(b, 4)
    return None if r.random() < 0.4 else int(r.integers(0, b.dcp))


def dcp_item() -> Item:
    def v(ctx, b):
        return ctx.vu.get_dcp_local_seq_lens(ctx.torch.from_numpy(b.seq), b.dcp, _dcp_rank(b),
                                             b.interleave)

    def l(ctx, b):
        return ctx.lib.get_dcp_local_seq_lens(b.seq, b.dcp, _dcp_rank(b), b.interleave)
    return Item("get_dcp_local_seq_lens", "utility", v, l,
                lambda ctx, b, v, l: [("dcp_local_seq_lens", v, l)])


def _query(b: Batch) -> np.ndarray:
    return np.arange(b.tokens * 2 * 4, dtype=np.float32).reshape(b.tokens, 2, 4)


def reshape_item() -> Item:
    def v(ctx, b):
        return ctx.vu.reshape_query_for_spec_decode(ctx.torch.from_numpy(_query(b)), b.n)

    def l(ctx, b):
        return ctx.lib.reshape_query_for_spec_decode(_query(b), b.n)
    return Item("reshape_query_for_spec_decode", "utility", v, l,
                lambda ctx, b, v, l: [("shape", tuple(v.shape), tuple(np.shape(l))),
                                      ("values", v, np.asarray(l))])


def _real(b: Batch):
    """The real requests and tokens of a padded batch (its zero-length tail cut off)."""
    nz = np.nonzero(b.q)[0]
    reqs = int(nz[-1]) + 1 if len(nz) else 0
    return int(b.qsl[reqs]), reqs


def unpadded_item() -> Item:
    def v(ctx, b):
        return vllm_common(ctx, b).unpadded(*_real(b))

    def l(ctx, b):
        return ctx.lib.common_metadata_unpadded(lib_common(ctx, b), *_real(b))
    return Item("CommonAttentionMetadata.unpadded", "utility", v, l,
                lambda ctx, b, v, l: common_pairs(v, l.to_dict()))


def _ubatch_args(b: Batch):
    r = choice_rng(b, 5)
    k = int(r.choice([2, 2, 2, 3, 4]))
    tokens_padded = b.tokens + int(r.integers(0, 9)) if r.random() < 0.5 else b.tokens
    reqs_padded = b.n + int(r.integers(0, 3)) if r.random() < 0.3 else b.n
    # an explicit split point within [1, max(tokens_padded // k, 1)], never past
    # num_tokens_padded: libattn's documented domain (attn_maybe_create_ubatch_slices refuses a
    # split point past the tokens, where vLLM makes slices that end before they start)
    split = int(r.integers(1, max(tokens_padded // k, 1) + 1)) \
        if r.random() < 0.3 and tokens_padded > 0 else None
    return k, tokens_padded, reqs_padded, split


def _slices(ss):
    return [(s.request_slice.start, s.request_slice.stop, s.token_slice.start,
             s.token_slice.stop) for s in ss]


def ubatch_pairs(ctx: Any, b: Batch, v: Any, l: Any) -> List[Pair]:
    """vLLM's (ubatch_slices, ubatch_slices_padded) against libattn's, as (request start, stop,
    token start, stop) tuples; vLLM's (None, None) against libattn's empty answer."""
    if v[0] is None:
        return [("ubatch_slices", None, l[0] or None)]
    return [("ubatch_slices", _slices(v[0]), [tuple(s) for s in l[0]]),
            ("ubatch_slices_padded", _slices(v[1]), [tuple(s) for s in l[1]])]


def ubatch_slices_item() -> Item:
    def v(ctx, b):
        from vllm.v1.worker.ubatch_utils import maybe_create_ubatch_slices
        k, tp, rp, split = _ubatch_args(b)
        return maybe_create_ubatch_slices(True, b.q, tp, rp, k, split)

    def l(ctx, b):
        k, tp, rp, split = _ubatch_args(b)
        # libattn's split_point 0 means vLLM's None (tokens_padded // k)
        return ctx.lib.maybe_create_ubatch_slices(b.q, tp, rp, k, split or 0)
    return Item("maybe_create_ubatch_slices", "utility", v, l, ubatch_pairs)


def split_attn_item() -> Item:
    def slices(b):
        from vllm.v1.worker.ubatch_utils import maybe_create_ubatch_slices
        k, tp, rp, split = _ubatch_args(b)
        s, _ = maybe_create_ubatch_slices(True, b.q, b.tokens, b.n, k, split)
        return s

    def v(ctx, b):
        from vllm.v1.worker.ubatch_utils import split_attn_metadata
        return split_attn_metadata(slices(b), vllm_common(ctx, b))

    def l(ctx, b):
        return ctx.lib.split_attn_metadata(lib_common(ctx, b), _slices(slices(b)))

    def pairs(ctx, b, v, l):
        out = [("number of micro-batches", len(v), len(l))]
        for i, (cm, md) in enumerate(zip(v, l)):
            out += [(f"[{i}].{n}", a, c) for n, a, c in common_pairs(cm, md.to_dict())]
        return out
    return Item("split_attn_metadata (_make_metadata_with_slice)", "utility", v, l, pairs)


def utility_items() -> List[Item]:
    return [split_item(False), split_item(True), split_short_extends_item(), split_extends_item(),
            reorder_item(), prefill_chunks_item(), local_item(), fast_prefill_item(),
            conv1d_item(), dcp_item(), reshape_item(), unpadded_item(), ubatch_slices_item(),
            split_attn_item(), mla_chunks_item()]
