"""One batch as each side's input: vLLM's CommonAttentionMetadata (torch.from_numpy over the
batch's arrays) and libattn's CommonMetadata (the binding over the same numpy arrays).

Both get vLLM 0.33's step inputs (``step_inputs``): positions, is_prefilling and
seq_lens_cpu_upper_bound, which in one spec batch of four (the item's Batch.optimistic)
exceeds the exact length on spec-decode rows (0.33's async scheduling assumes every draft
accepted; prefill rows stay exact), with
max_seq_len the bound's maximum as 0.33's runner computes it.
"""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from .batches import MAX_CONTEXT, Batch
from .item import choice_rng
from .vllm_env import common_metadata


def step_inputs(b: Batch) -> Dict[str, Any]:
    """The 0.33 inputs of the batch (cached on it): positions, is_prefilling, the upper bound
    on the host seq_lens and max_seq_len."""
    s = getattr(b, "_step", None)
    if s is None:
        ub = b.seq_cpu.copy()
        r = choice_rng(b, 8)
        if b.spec and r.random() < b.optimistic:
            rows = (b.q > 1) & (b.q <= b.threshold) & ~b.is_prefilling
            if rows.any():
                extra = r.integers(0, np.maximum(b.q[rows], 1))  # up to q - 1 drafts rejected
                ub[rows] = np.minimum(ub[rows] + extra, MAX_CONTEXT)
        s = dict(positions=b.positions, is_prefilling=b.is_prefilling,
                 seq_lens_cpu_upper_bound=ub, max_seq_len=max(b.max_s, int(ub.max()) if b.n else 0))
        b._step = s
    return s


def padded(b: Batch) -> Dict[str, Any]:
    """num_actual_tokens, slot_mapping and positions of the batch: the scheduled tokens', then
    Batch.pad_tokens more as vLLM's runner pads a batch (PAD_SLOT_ID slots, position 0)."""
    s = step_inputs(b)
    if not b.pad_tokens:
        return dict(tokens=b.tokens, slots=b.slots, positions=s["positions"])
    p = getattr(b, "_padded", None)
    if p is None:
        p = dict(tokens=b.tokens + b.pad_tokens,
                 slots=np.concatenate([b.slots, np.full(b.pad_tokens, -1, np.int64)]),
                 positions=np.concatenate([s["positions"], np.zeros(b.pad_tokens, np.int64)]))
        b._padded = p
    return p


def vllm_common(ctx: Any, b: Batch, **extra: Any) -> Any:
    s, p = step_inputs(b), padded(b)
    return common_metadata(ctx.env, query_start_loc=b.qsl, query_start_loc_cpu=b.qsl_cpu,
                           seq_lens=b.seq, seq_lens_cpu=s["seq_lens_cpu_upper_bound"],
                           block_table=b.bt, slot_mapping=p["slots"], num_reqs=b.n,
                           num_actual_tokens=p["tokens"], max_query_len=b.max_q,
                           max_seq_len=s["max_seq_len"], positions=p["positions"],
                           is_prefilling=s["is_prefilling"], **extra)


def lib_common(ctx: Any, b: Batch, **extra: Any) -> Any:
    import libattn
    s, p = step_inputs(b), padded(b)
    return libattn.CommonMetadata(query_start_loc=b.qsl, seq_lens=b.seq, block_table=b.bt,
                                  slot_mapping=p["slots"], query_start_loc_cpu=b.qsl_cpu,
                                  seq_lens_cpu=b.seq_cpu, num_reqs=b.n,
                                  num_actual_tokens=p["tokens"], max_query_len=b.max_q,
                                  max_seq_len=s["max_seq_len"], positions=p["positions"],
                                  is_prefilling=s["is_prefilling"],
                                  seq_lens_cpu_upper_bound=s["seq_lens_cpu_upper_bound"], **extra)
