"""What one compared item is: vLLM's call, libattn's call and the pairs of values to compare.

An item's ``vllm(ctx, batch)`` and ``lib(ctx, batch)`` each return a result (or raise: a
refusal), and ``pairs(ctx, batch, v, l)`` the (name, vLLM value, libattn value) triples of
every field and scalar. ``pending`` names an item that cannot be compared yet (libattn lacks an
input, or vLLM's code cannot run on a CPU) with the reason, and the table shows it.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from .batches import KINDS, TABLE_BUDGET, TOKEN_BUDGET, UTILITY_BLOCK_SIZES, Batch
from .compare import Pair


@dataclasses.dataclass
class Item:
    name: str
    kind: str  # "utility" or "builder"
    vllm: Optional[Callable[[Any, Batch], Any]] = None
    lib: Optional[Callable[[Any, Batch], Any]] = None
    pairs: Optional[Callable[[Any, Batch, Any, Any], List[Pair]]] = None
    #: names compared by shape and dtype only (scratch buffers uninitialised in both)
    shape_only: Sequence[str] = ()
    #: generator options (random_batch keyword arguments)
    block_sizes: Sequence[int] = UTILITY_BLOCK_SIZES
    kinds: Sequence[str] = KINDS
    max_requests: int = 1024
    max_spec: int = 7
    table_budget: int = TABLE_BUDGET
    token_budget: int = TOKEN_BUDGET
    #: the chance that a spec batch gives some requests fewer drafts (random_batch)
    ragged_spec: float = 0.2
    #: the chance that seq_lens_cpu_upper_bound exceeds the exact lengths on a spec batch's
    #: spec-decode rows (Batch.optimistic, sides.step_inputs)
    optimistic: float = 0.25
    #: at most this many batches whatever the count (0: no cap): vLLM's Triton kernels run in
    #: Triton's interpreter, a Python loop per program, ~0.1-0.5 s a batch
    max_batches: int = 0
    #: the path vLLM's code took on a batch (e.g. which FlashInfer classes a build chose), from
    #: vLLM's result: counted per item and printed under the table, so a run shows what its
    #: batches exercised
    path: Optional[Callable[[Any, Batch, Any], str]] = None
    #: a last step on each generated batch (seeded by the batch, as choice_rng): an item that
    #: needs batches random_batch does not make (FLASHINFER's padded decodes)
    adjust: Optional[Callable[[Batch], Batch]] = None
    #: not compared, and why (the table says it)
    pending: str = ""
    notes: List[str] = dataclasses.field(default_factory=list)


#: Item options for the items whose builders read seq_lens_cpu_upper_bound where a uniform
#: split may count an async spec-decode row as a prefill (the sparse MLA family, the indexers):
#: spec batches four times as likely as another kind, most of them ragged (fewer drafts on
#: some rows, which a uniform split makes prefills) and optimistic (the bound above the exact
#: lengths on their spec rows)
OPTIMISTIC_SPEC = dict(kinds=tuple(KINDS) + ("spec",) * 3, ragged_spec=0.6, optimistic=0.6)
#: OPTIMISTIC_SPEC with vLLM's runner's dummy batches (batches.dummy_batch) among the kinds: the
#: items of those builders that compare capture builds (their runner's capture batches)
OPTIMISTIC_SPEC_DUMMY = dict(OPTIMISTIC_SPEC, kinds=OPTIMISTIC_SPEC["kinds"] + ("dummy",))


def choice_rng(b: Batch, salt: int) -> np.random.Generator:
    """Per-batch choices of an item (thresholds, workspace sizes, ...): seeded by the batch's
    seed, so a shrunk batch keeps them."""
    return np.random.default_rng([*getattr(b, "seed", (0, 0)), salt])


def pad_past_actual_tokens(b: Batch, flag: str, one_in: int, salts: tuple) -> None:
    """1..16 padding rows (slot -1, position 0) past num_actual_tokens, as vLLM's runner pads a
    step for a CUDA graph, on one batch in ``one_in`` (drawn with ``choice_rng(b, salts[0])``,
    the count with ``salts[1]``); once per batch (``flag`` marks it), before either side reads
    the step inputs."""
    if getattr(b, flag, False):
        return
    setattr(b, flag, True)
    if int(choice_rng(b, salts[0]).integers(0, one_in)) != 0:
        return
    extra = int(choice_rng(b, salts[1]).integers(1, 17))
    b.slots = np.concatenate([b.slots, np.full(extra, -1, np.int64)])
    b.positions = np.concatenate([b.positions, np.zeros(extra, np.int64)])
    if getattr(b, "_step", None) is not None:
        b._step["positions"] = b.positions
