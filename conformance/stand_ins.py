"""Minimal stand-ins for the vLLM runner objects that its reorder reads (shared by the lane and
the bench): an InputBatch with req_ids, num_computed_tokens_cpu, num_prompt_tokens and
swap_states, and a SchedulerOutput with num_scheduled_tokens."""
from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np


class StandInInputBatch:
    """What vLLM's reorder_batch_to_split_decodes_and_prefills reads from an InputBatch
    (req_ids, num_computed_tokens_cpu, num_prompt_tokens) and swap_states(i1, i2), which here
    swaps those and records the pair. vLLM's real swap_states also moves token ids, block-table
    rows and sampling state (so a time measured on it is a lower bound)."""

    def __init__(self, req_ids: List[str], computed: np.ndarray, prompt: np.ndarray) -> None:
        self.req_ids = list(req_ids)
        self.num_computed_tokens_cpu = np.array(computed, copy=True)
        self.num_prompt_tokens = np.array(prompt, copy=True)
        self.swaps: List[Tuple[int, int]] = []

    def swap_states(self, i1: int, i2: int) -> None:
        self.swaps.append((i1, i2))
        r = self.req_ids
        r[i1], r[i2] = r[i2], r[i1]
        for a in (self.num_computed_tokens_cpu, self.num_prompt_tokens):
            a[i1], a[i2] = a[i2], a[i1]


class StandInSchedulerOutput:
    """SchedulerOutput's num_scheduled_tokens (request id -> tokens this step)."""

    def __init__(self, num_scheduled_tokens: Dict[str, int]) -> None:
        self.num_scheduled_tokens = num_scheduled_tokens
