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


def vllm_common(ctx: Any, b: Batch, **extra: Any) -> Any:
    s = step_inputs(b)
    return common_metadata(ctx.env, query_start_loc=b.qsl, query_start_loc_cpu=b.qsl_cpu,
                           seq_lens=b.seq, seq_lens_cpu=s["seq_lens_cpu_upper_bound"],
                           block_table=b.bt, slot_mapping=b.slots, num_reqs=b.n,
                           num_actual_tokens=b.tokens, max_query_len=b.max_q,
                           max_seq_len=s["max_seq_len"], positions=s["positions"],
                           is_prefilling=s["is_prefilling"], **extra)


def lib_common(ctx: Any, b: Batch, **extra: Any) -> Any:
    import libattn
    s = step_inputs(b)
    return libattn.CommonMetadata(query_start_loc=b.qsl, seq_lens=b.seq, block_table=b.bt,
                                  slot_mapping=b.slots, query_start_loc_cpu=b.qsl_cpu,
                                  seq_lens_cpu=b.seq_cpu, num_reqs=b.n, num_actual_tokens=b.tokens,
                                  max_query_len=b.max_q, max_seq_len=s["max_seq_len"],
                                  positions=s["positions"], is_prefilling=s["is_prefilling"],
                                  seq_lens_cpu_upper_bound=s["seq_lens_cpu_upper_bound"], **extra)
