"""The run: for every item, N seeded random batches through vLLM and libattn, the comparison,
the count, and the greedy shrinking of the first failing batch."""
from __future__ import annotations

import dataclasses
import os
import sys
import time
import zlib
from typing import Any, Dict, List, Tuple

import numpy as np

from .batches import Batch, random_batch
from .compare import first_difference
from .item import Item


@dataclasses.dataclass
class Result:
    item: Item
    batches: int = 0
    compared: int = 0
    mismatches: int = 0
    lib_raised: int = 0  # libattn raised where vLLM succeeded (counted in mismatches)
    vllm_refused: int = 0
    both_refused: int = 0
    first: str = ""
    minimal: str = ""
    first_refusal: str = ""
    seconds: float = 0.0  # the batches' own time (shrinking excluded)
    #: field (or check) name -> batches where it differed
    differing: Dict[str, int] = dataclasses.field(default_factory=dict)
    #: Item.path's label -> batches vLLM built that way
    paths: Dict[str, int] = dataclasses.field(default_factory=dict)
    #: compared batches libattn built with build_for_cudagraph_capture (count_captures)
    captures: int = 0
    status: str = ""  # not run: why

    @property
    def failed(self) -> bool:
        return self.mismatches > 0


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Outcome:
    OK, MISMATCH, LIB_RAISED, VLLM_REFUSED = range(4)


def _err(e: BaseException) -> str:
    tb = e.__traceback__
    where = ""
    while tb is not None:
        f = tb.tb_frame.f_code
        path = f.co_filename.split("site-packages/")[-1]
        path = path.split(_ROOT + "/")[-1]
        where = f"{path}:{tb.tb_lineno} {f.co_name}"
        tb = tb.tb_next
    msg = str(e).replace("\n", " ")
    return f"{type(e).__name__}: {msg[:160]} (at {where})"


#: the ctx caches an item's end keeps (by name suffix): vLLM configs, model directories and
#: class answers that several items share (indexer_configs, sparse_mla_models, capture_levels)
SHARED_CACHES = ("_configs", "_models", "_levels")


class _CaptureCount:
    """Calls of libattn's Builder.build_for_cudagraph_capture in this process (count_captures
    wraps the binding's method once): a batch whose libattn side made one was a capture build,
    whatever its item's path says."""
    calls = 0


def count_captures() -> None:
    from libattn.builder import Builder
    if getattr(Builder.build_for_cudagraph_capture, "_counted", False):
        return
    plain = Builder.build_for_cudagraph_capture

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        _CaptureCount.calls += 1
        return plain(self, *args, **kwargs)
    counted._counted = True  # type: ignore[attr-defined]
    Builder.build_for_cudagraph_capture = counted  # type: ignore[method-assign]


class Runner:
    def __init__(self, ctx: Any, seed: int, perturb: bool = False, log=sys.stderr) -> None:
        self.ctx, self.seed, self.perturb, self.log = ctx, seed, perturb, log
        count_captures()

    def one(self, item: Item, b: Batch) -> Tuple[int, Any]:
        """(outcome, compared count / message / libattn-also-refused)."""
        ctx = self.ctx
        self.path = ""
        try:
            v = item.vllm(ctx, b)
            self.path = item.path(ctx, b, v) if item.path else ""
            if b.kind == "dummy":  # every item's paths count vLLM's dummy batches
                self.path = ", ".join(p for p in (self.path, "vLLM's dummy batch") if p)
        except Exception as e:  # vLLM refuses the batch: does libattn?
            try:
                item.lib(ctx, b)
                return Outcome.VLLM_REFUSED, (False, _err(e))
            except Exception:
                return Outcome.VLLM_REFUSED, (True, _err(e))
        try:
            l = item.lib(ctx, b)
        except Exception as e:
            return Outcome.LIB_RAISED, f"libattn raised {_err(e)} (vLLM did not)"
        try:
            pairs = item.pairs(ctx, b, v, l)
            shape_only = set(item.shape_only)
            if self.perturb:
                return self._planted(pairs, shape_only)
            errors = [e for e in (first_difference(n, x, y, n in shape_only)
                                  for n, x, y in pairs) if e]
        except Exception as e:  # a comparison that cannot be made is a difference too
            return Outcome.MISMATCH, (0, [f"comparison failed: {_err(e)}"])
        if errors:
            return Outcome.MISMATCH, (len(pairs), errors)
        return Outcome.OK, len(pairs)

    def batch(self, item: Item, i: int) -> Batch:
        salt = zlib.crc32(item.name.encode())
        rng = np.random.default_rng([self.seed, salt, i])
        b = random_batch(rng, block_sizes=item.block_sizes, kinds=item.kinds,
                         max_requests=item.max_requests, table_budget=item.table_budget,
                         max_spec=item.max_spec, token_budget=item.token_budget,
                         ragged_spec=item.ragged_spec)
        b.seed = (self.seed, salt, i)
        # vLLM's dummy runs set seq_lens_cpu_upper_bound to the exact lengths
        b.optimistic = 0.0 if b.kind == "dummy" else item.optimistic
        if item.adjust is not None:
            b = item.adjust(b)
        return b

    @staticmethod
    def _planted(pairs: List[Tuple[str, Any, Any]], shape_only: set) -> Tuple[int, Any]:
        """--self-test: the first pair that is equal and whose libattn value can change is
        changed by one; MISMATCH if the comparison flags it (as it must), OK if it does not
        (the self-test then fails). A batch without such a pair counts as refused."""
        for k, (name, a, b) in enumerate(pairs):
            if name in shape_only or first_difference(name, a, b) is not None:
                continue
            changed = perturbed([(name, a, b)])[0]
            if changed[2] is b:
                continue
            if first_difference(*changed) is not None:
                return Outcome.MISMATCH, (len(pairs), [f"{name}: planted difference caught"])
            return Outcome.OK, len(pairs)
        return Outcome.VLLM_REFUSED, (True, "no equal field to plant a difference in")

    @staticmethod
    def _settings(b: Batch) -> Tuple[int, int, int]:
        return b.block_size, b.spec, b.chunk

    def run(self, item: Item, count: int) -> Result:
        r = Result(item)
        if item.pending:
            r.status = item.pending
            return r
        if item.max_batches:
            count = min(count, item.max_batches)
        t0 = time.perf_counter()
        kept = set(vars(self.ctx))  # what the item adds to ctx (its caches) goes with it
        shrinking = 0.0
        order: Any = range(count)
        if item.kind == "builder":  # grouped by builder settings: each builder made once
            order = sorted(order, key=lambda i: self._settings(self.batch(item, i)))
        for i in order:
            b = self.batch(item, i)
            calls = _CaptureCount.calls
            outcome, info = self.one(item, b)
            r.batches += 1
            if _CaptureCount.calls > calls and outcome in (Outcome.OK, Outcome.MISMATCH):
                r.captures += 1
            if self.path:
                r.paths[self.path] = r.paths.get(self.path, 0) + 1
            if outcome == Outcome.OK:
                r.compared += info
            elif outcome == Outcome.VLLM_REFUSED:
                r.vllm_refused += 1
                r.both_refused += int(info[0])
                if not r.first_refusal:
                    r.first_refusal = f"{info[1]}; {b.describe(8)}"
            else:
                r.mismatches += 1
                if outcome == Outcome.LIB_RAISED:
                    r.lib_raised += 1
                    errors = [info]
                    key = "libattn raised: " + info.split(":", 2)[1].strip()[:60] \
                        if ":" in info else info
                    r.differing[key] = r.differing.get(key, 0) + 1
                else:
                    compared, errors = info
                    r.compared += compared
                    for e in errors:
                        key = e.split(":", 1)[0]
                        r.differing[key] = r.differing.get(key, 0) + 1
                if not r.first:
                    print(f"MISMATCH {item.name} batch {i}: {summary(errors)}", file=self.log)
                    t = time.perf_counter()
                    small, errors = self.shrink(item, b, outcome,
                                                budget=40 if item.kind == "builder" else 300)
                    shrinking += time.perf_counter() - t
                    r.first, r.minimal = summary(errors), small.describe()
        r.seconds = time.perf_counter() - t0 - shrinking
        # an item's builders (and their buffers) go with it: ctx.builders and the caches the
        # item's module keeps in ctx (sparse_swa_builders, ...), so that one process runs every
        # item in bounded memory (the V4 items' builder pairs are GBs each); the vLLM configs,
        # model directories and levels the families share stay (small, and made once)
        self.ctx.builders.clear()
        for name in set(vars(self.ctx)) - kept:
            if not name.endswith(SHARED_CACHES):
                delattr(self.ctx, name)
        import gc
        gc.collect()
        return r

    def shrink(self, item: Item, b: Batch, outcome: int, budget: int = 300) -> Tuple[Batch, str]:
        """Greedy: drop blocks of requests (halves, quarters, ... single ones) while the batch
        still fails the same way; the smallest failing batch and its message. A batch that
        passes when built again (its failure depended on the builds before it, e.g. a builder's
        persistent state) is reported as it is, marked so."""
        again = self.one(item, b)
        if again[0] != outcome:
            return b, "[passes when built again: the failure depends on the builds before it]"
        msg = _errors(again)
        tries = 0
        size = max(b.n // 2, 1)
        while size >= 1 and tries < budget:
            changed = False
            start = 0
            while start < b.n and tries < budget and b.n > 1:
                keep = [j for j in range(b.n) if not start <= j < start + size]
                if not keep:
                    start += size
                    continue
                cand = b.subset(keep)
                cand.seed = b.seed
                tries += 1
                o, info = self.one(item, cand)
                if o == outcome:
                    b, msg, changed = cand, _errors((o, info)), True
                else:
                    start += size
            if not changed:
                size //= 2
        return b, msg


def _errors(result: Tuple[int, Any]) -> List[str]:
    outcome, info = result
    return [info] if outcome == Outcome.LIB_RAISED else list(info[1])


def summary(errors: List[str], keep: int = 3) -> str:
    """The first differences of a batch (and how many more, by name)."""
    head = "; ".join(errors[:keep])
    rest = errors[keep:]
    if rest:
        names = ", ".join(e.split(":", 1)[0] for e in rest[:12])
        head += f"; and {len(rest)} more ({names}{', ...' if len(rest) > 12 else ''})"
    return head


def perturbed(pairs: List[Tuple[str, Any, Any]]) -> List[Tuple[str, Any, Any]]:
    """The self-test's planted difference: the first libattn value that can change (an array
    element, an int, a bool, a list) is changed by one."""
    from .compare import as_np
    out = list(pairs)
    for k, (name, a, b) in enumerate(out):
        b = as_np(b)
        if isinstance(b, np.ndarray) and b.size:
            b = b.copy()
            b.flat[0] = b.flat[0] + 1 if b.dtype != np.bool_ else not b.flat[0]
        elif isinstance(b, bool):
            b = not b
        elif isinstance(b, (int, np.integer)):
            b = int(b) + 1
        elif isinstance(b, (list, tuple)):
            b = list(b) + [None]
        else:
            continue
        out[k] = (name, a, b)
        return out
    return out
