"""The draft decode update on the builder items whose builders support it (vLLM 0.33's
``supports_draft_decode_metadata_update``): one helper every such item wraps itself in
(``with_draft_update``), so the selection, the in-place change and the calls are written once.

Where vLLM calls it: the draft speculators (v1/worker/gpu/spec_decode, the target-dependent
AR speculator's ``_generate_fused_drafts``) build one uniform decode batch of one query token
per request (``_build_uniform_attn_metadata``, num_query_per_req 1), and before each later
draft step advance the requests in place (``update_draft_inputs``: positions and seq_lens one
further) and recompute the slot mapping from the block table (``compute_slot_mappings``), then
call every attention group's ``update_draft_decode_metadata(metadata)`` on the metadata built
before. The host mirrors (seq_lens_cpu, its upper bound, max_seq_len) are not touched.

The lane does the same on one batch in three of those it could be called on (``eligible``:
every request one query token, none prefilling, no padded tokens): ``advance`` moves each
request's position and seq_len one further where the next position is still in one of its
allocated blocks (the others stay: a drafter's scheduler allocates ahead, the lane's table has
no block there) and writes the slot, in the batch's own arrays that both sides' metadata view;
then vLLM's update runs (under the item's VllmConfig and patches), libattn's
(``Builder.update_draft_decode_metadata``), and the item's own comparison of every field
follows on the updated metadata. Only where both builders answer the flag True (a difference
in the flag is the flag pair's mismatch). DFlash's non-causal draft blocks (query length
1 + k) are not generated. An item whose batch was a capture build updates that metadata the same
way (an item's ``sides`` answering None leaves a batch without an update).
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, List, NamedTuple, Optional

import numpy as np

from .batches import Batch
from .compare import Pair
from .item import Item, choice_rng

SALT = 90
LABEL = "draft decode update"


class Sides(NamedTuple):
    """What an item's update needs: the batch its builds viewed, both builders, vLLM's config
    and the item's patches (a context manager factory, or None)."""
    batch: Batch
    vb: Any
    vc: Any
    lb: Any
    patches: Optional[Callable[[], Any]] = None


def eligible(b: Batch) -> bool:
    """A batch the drafter's update could follow (every request one query token, none
    prefilling, no padding), on one such batch in three."""
    if b.n == 0 or b.pad_tokens or not bool((b.q == 1).all()):
        return False
    if bool(np.asarray(b.is_prefilling).any()):
        return False
    return int(choice_rng(b, SALT).integers(0, 3)) == 0


def supported(s: Sides) -> bool:
    return bool(s.vb.supports_draft_decode_metadata_update) and \
        bool(s.lb.supports_draft_decode_metadata_update)


def advance(b: Batch) -> int:
    """The drafter's in-place step (module doc) in ``b``'s arrays; the requests advanced."""
    bs = b.block_size
    new = b.seq[:b.n].astype(np.int64)  # the next token's position: the old seq_len
    col = new // bs
    inside = col < b.bt.shape[1]
    blk = np.zeros(b.n, np.int64)
    blk[inside] = b.bt[np.arange(b.n)[inside], col[inside]]
    move = inside & (blk != 0)
    b.seq[:b.n][move] += 1
    b.positions[:b.n][move] = new[move]
    b.slots[:b.n][move] = blk[move] * bs + new[move] % bs
    return int(move.sum())


def run(s: Sides, vmd: Any, lmd: Any) -> None:
    """advance, then vLLM's update and libattn's on their metadata."""
    from vllm.config import set_current_vllm_config
    advance(s.batch)
    with set_current_vllm_config(s.vc), (s.patches() if s.patches else contextlib.nullcontext()):
        s.vb.update_draft_decode_metadata(vmd)
    s.lb.update_draft_decode_metadata(lmd)


def with_draft_update(item: Item, sides: Callable[[Any, Batch], Optional[Sides]],
                      metadata: Callable[[Any], Any] = lambda v: v) -> Item:
    """``item`` whose pairs first run the draft decode update where it applies (``eligible``,
    both flags True), and whose path says so; ``metadata``: vLLM's metadata in the item's
    vLLM result."""
    inner_pairs, inner_path = item.pairs, item.path

    def chosen(ctx: Any, b: Batch, v: Any) -> Optional[Sides]:
        if not eligible(b):
            return None
        s = sides(ctx, b)  # None: the item has no update for this batch
        return s if s is not None and supported(s) else None

    def pairs(ctx: Any, b: Batch, v: Any, l: Any) -> List[Pair]:
        s = chosen(ctx, b, v)
        if s is not None:
            run(s, metadata(v), l)
        return inner_pairs(ctx, b, v, l)

    def path(ctx: Any, b: Batch, v: Any) -> str:
        label = inner_path(ctx, b, v) if inner_path else ""
        if chosen(ctx, b, v) is not None:
            label = f"{label}, {LABEL}" if label else LABEL
        return label

    return dataclasses.replace(item, pairs=pairs, path=path)
