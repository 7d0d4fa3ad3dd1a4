"""``--jobs N``: the items over N worker processes (forked before vLLM is imported; each worker
imports vLLM once and runs whole items, the slowest-estimated first). A worker returns each
item's Result without its Item (the parent puts it back) and the configs' notes."""
from __future__ import annotations

import multiprocessing
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

_W: Dict[str, Any] = {}


def _init(make_ctx: Callable[[], Any], seed: int, perturb: bool, items: List[Any]) -> None:
    from .runner import Runner
    t = time.perf_counter()
    ctx = make_ctx()
    _W.update(ctx=ctx, runner=Runner(ctx, seed, perturb), items=items,
              t_import=time.perf_counter() - t)


def _run(task: Tuple[int, int]) -> Tuple[int, Any, float, float, List[str]]:
    k, n = task
    t = time.perf_counter()
    r = _W["runner"].run(_W["items"][k], n)
    r.item = None  # lambdas: the parent has the Item
    return k, r, time.perf_counter() - t, _W["t_import"], list(_W["ctx"].configs.notes)


def run_parallel(items: List[Any], counts: List[int], jobs: int, make_ctx: Callable[[], Any],
                 seed: int, perturb: bool, report: Callable[[Any, float], None]
                 ) -> Tuple[List[Any], float, List[str]]:
    """The items' Results (in the items' order), the longest vLLM import and the notes."""
    # builders first (slowest per batch), then the rest: a long item does not start last
    order = sorted(range(len(items)), key=lambda k: (items[k].kind != "builder", k))
    results: List[Any] = [None] * len(items)
    t_import, notes = 0.0, []
    mp = multiprocessing.get_context("fork")
    with mp.Pool(jobs, initializer=_init, initargs=(make_ctx, seed, perturb, items)) as pool:
        for k, r, secs, ti, ns in pool.imap_unordered(_run, [(k, counts[k]) for k in order]):
            r.item = items[k]
            results[k] = r
            t_import = max(t_import, ti)
            notes += [x for x in ns if x not in notes]
            report(r, secs)
    sys.stderr.flush()
    return results, t_import, notes
