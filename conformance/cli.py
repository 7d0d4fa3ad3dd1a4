"""``python -m conformance``: the vLLM 0.33.0 conformance lane (scripts/conformance.sh runs it).

    python -m conformance [--quick] [--batches N] [--builder-batches N] [--only NAME[,NAME]]
                          [--seed S] [--markdown FILE] [--lib PATH] [--self-test] [--list]
                          [--device-sim]

Runs vLLM 0.33.0's own Python (CPU tensors) and libattn (the Python binding) on the same seeded
random batches, compares every field and scalar, prints a table and exits 1 on any mismatch
(or libattn raising where vLLM succeeded). --self-test plants a difference in libattn's values
and exits 0 only if the comparison catches it in every item. --device-sim runs the builder
items only, with libattn's builders on the simulated device (conformance/device_sim.py; --lib
must be an ATTN_DEVICE_SIM=ON build).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from typing import Any, List

from . import vllm_env as _vllm_env_first  # noqa: F401  (sets VLLM_TARGET_DEVICE before vllm)
from .vllm_env import (VllmConfigs, WrongVllmVersion, assume_flashinfer_cubins, check_version,
                       enable_triton_interpreter, vllm_env)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUICK_BATCHES, QUICK_BUILDER_BATCHES = 300, 100
DEFAULT_BATCHES, DEFAULT_BUILDER_BATCHES = 100_000, 10_000


class Ctx:
    """What the items use: vLLM's modules, the libattn library, the vLLM configs."""

    def __init__(self, lib_path: str, torch_threads: int, device_sim: bool = False) -> None:
        sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
        import libattn
        self.libattn = libattn
        self.lib = libattn.Library(lib_path)
        self.device_counts = None
        if device_sim:
            from .device_sim import enable
            self.device_counts = enable(lib_path)
        self.env = vllm_env(torch_threads)
        self.torch, self.vu = self.env["torch"], self.env["utils"]
        self.configs = VllmConfigs(self.env)
        self.builders: dict = {}
        # vLLM's import leaves millions of long-lived objects: moved out of the collector's
        # reach, so that neither the automatic collections during the batches nor the runner's
        # gc.collect() after each item traverse them again (that took ~1 s per full pass)
        import gc
        gc.collect()
        gc.freeze()


def all_items() -> List[Any]:
    from .abi14_items import abi14_items
    from .abi17_items import abi17_items
    from .bailing_items import bailing_items
    from .attn_variant_items import attn_variant_items
    from .builder_items import builder_items
    from .composite_items import composite_items
    from .cudagraph_resolve_item import cudagraph_resolve_items
    from .diffkv_items import diffkv_items
    from .exported_utility_items import exported_utility_items
    from .flashinfer_padded_items import flashinfer_padded_items
    from .gdn_items import gdn_items
    from .kda_items import kda_items
    from .layer_variant_items import layer_variant_items, wrapper_capture_items
    from .mamba_items import mamba_items
    from .mla_items import mla_items
    from .ple_items import ple_items
    from .quant_items import quant_items
    from .rocm_aiter_fa_items import rocm_aiter_fa_items
    from .rocm_aiter_mla_items import rocm_aiter_mla_items
    from .rocm_aiter_mla_sparse_items import rocm_aiter_mla_sparse_items
    from .sparse_indexer_items import sparse_indexer_items
    from .sparse_mla_items import sparse_mla_items
    from .sparse_swa_items import sparse_swa_items
    from .compressor_items import compressor_items
    from .inkling_items import inkling_items
    from .minimax_m3_items import minimax_m3_items
    from .sparse_indexer_v41_items import sparse_indexer_v41_items
    from .sparse_indexer_v4_items import sparse_indexer_v4_items
    from .static_sink_items import static_sink_items
    from .step5_items import step5_items
    from .qwen4_qsa_items import qwen4_qsa_items
    from .qsa_state_items import qsa_state_items
    from .block_pooling_items import block_pooling_items
    from .triton_items import triton_items
    from .v4_sparse_mla_items import v4_sparse_mla_items
    from .utility_items import utility_items
    from .xpu_mla_sparse_items import xpu_mla_sparse_items
    return (utility_items() + abi14_items() + abi17_items() + exported_utility_items()
            + cudagraph_resolve_items() + triton_items() + builder_items()
            + flashinfer_padded_items() + layer_variant_items() + wrapper_capture_items() + mla_items()
            + mamba_items() + gdn_items() + sparse_mla_items()
            + kda_items() + bailing_items() + static_sink_items() + block_pooling_items()
            + diffkv_items() + attn_variant_items() + composite_items()
            + rocm_aiter_fa_items() + sparse_indexer_items() + ple_items() + quant_items()
            + sparse_swa_items() + rocm_aiter_mla_items() + compressor_items()
            + sparse_indexer_v41_items() + v4_sparse_mla_items() + sparse_indexer_v4_items()
            + inkling_items() + xpu_mla_sparse_items() + step5_items()
            + rocm_aiter_mla_sparse_items() + minimax_m3_items() + qwen4_qsa_items()
            + qsa_state_items())


def main(argv: List[str] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance", description=__doc__.split("\n")[0])
    p.add_argument("--lib", default=os.path.join(ROOT, "build-conformance", "libattn.so.1"))
    p.add_argument("--quick", action="store_true",
                   help=f"{QUICK_BATCHES} batches per utility, {QUICK_BUILDER_BATCHES} per builder")
    p.add_argument("--batches", type=int, default=None,
                   help=f"batches per utility (default {DEFAULT_BATCHES})")
    p.add_argument("--builder-batches", type=int, default=None,
                   help=f"batches per builder (default {DEFAULT_BUILDER_BATCHES})")
    p.add_argument("--only", default="", help="comma-separated substrings of item names "
                   "(=NAME: that name exactly)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--markdown", default="", help="also write the table as Markdown here")
    p.add_argument("--self-test", action="store_true",
                   help="plant a difference in libattn's values; pass only if every item sees it")
    p.add_argument("--list", action="store_true", help="list the items and exit")
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--device-sim", action="store_true",
                   help="the builder items only, libattn's builders on the simulated device "
                        "(an ATTN_DEVICE_SIM=ON build as --lib)")
    p.add_argument("--jobs", type=int, default=1,
                   help="worker processes, each importing vLLM once and running whole items "
                        "(default 1: this process)")
    a = p.parse_args(argv)
    enable_triton_interpreter()  # before vLLM's import (here or in the --jobs workers)
    assume_flashinfer_cubins()
    try:
        version = check_version()
    except WrongVllmVersion as e:
        print(f"conformance: {e}", file=sys.stderr)
        return 2
    if a.list:
        for it in all_items():
            print(f"{it.kind:8} {it.name}{'  (pending: ' + it.pending + ')' if it.pending else ''}")
        return 0
    nu = a.batches if a.batches is not None else (QUICK_BATCHES if a.quick else DEFAULT_BATCHES)
    nb = a.builder_batches if a.builder_batches is not None else (
        QUICK_BUILDER_BATCHES if a.quick else DEFAULT_BUILDER_BATCHES)
    if a.self_test:
        nu, nb = min(nu, 20), min(nb, 5)
    wanted = [w for w in a.only.split(",") if w]
    items = [it for it in all_items() if not wanted or any(
        it.name == w[1:] if w.startswith("=") else w in it.name for w in wanted)]
    if a.device_sim:
        from .device_sim import HOST_ONLY_ITEMS
        host_only = [it.name for it in items if it.name in HOST_ONLY_ITEMS]
        if host_only:
            print(f"--device-sim: skipped {', '.join(host_only)} (builds for the host only; "
                  "the host lane compares it)")
        items = [it for it in items if it.kind == "builder" and it.name not in HOST_ONLY_ITEMS]
    if not items:
        print(f"conformance: --only {a.only!r} selects nothing (see --list)", file=sys.stderr)
        return 2
    from .patches import NOT_COMPARABLE
    from . import table

    def report(r: Any, t_item: float) -> None:
        state = "not compared" if r.status else ", ".join(
            x for x in (f"{r.mismatches} MISMATCHES" if r.mismatches else "",
                        f"vLLM refused {r.vllm_refused}" if r.vllm_refused else "",
                        "equal" if r.batches > r.vllm_refused and not r.mismatches else "") if x)
        print(f"  {r.item.name}: {r.batches} batches, {r.seconds:.1f} s ({t_item:.1f} s with "
              f"shrinking), {state}", file=sys.stderr)

    counts = [nb if it.kind == "builder" else nu for it in items]
    # the source the run starts from (the lane's own code and the tree the library was built
    # from), and when: read now, not when the table is printed hours later
    started, source = time.strftime('%Y-%m-%d %H:%M %Z'), git_describe()
    t0 = time.perf_counter()
    if a.jobs > 1:
        from .parallel import run_parallel
        results, t_import, config_notes = run_parallel(
            items, counts, a.jobs, lambda: Ctx(a.lib, a.torch_threads, a.device_sim), a.seed, a.self_test,
            report)
        sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
        import libattn
        lib_version = libattn.Library(a.lib).version
    else:
        t_import = time.perf_counter()
        ctx = Ctx(a.lib, a.torch_threads, a.device_sim)
        t_import = time.perf_counter() - t_import
        from .runner import Runner
        runner = Runner(ctx, a.seed, perturb=a.self_test)
        results = []
        t0 = time.perf_counter()
        for it, n in zip(items, counts):
            t_item = time.perf_counter()
            r = runner.run(it, n)
            results.append(r)
            report(r, time.perf_counter() - t_item)
        config_notes, lib_version = ctx.configs.notes, ctx.lib.version
    total = time.perf_counter() - t0
    import numpy as np
    import torch
    head = [f"libattn against vLLM {version}'s own Python, same seeded random batches "
            f"(started {started}, finished {time.strftime('%H:%M %Z')})",
            f"command: python -m conformance {' '.join(argv if argv is not None else sys.argv[1:])}",
            f"machine: {platform.node()}, {os.cpu_count()} CPUs; Python "
            f"{platform.python_version()}, torch {torch.__version__}, numpy {np.__version__}; "
            f"libattn {'.'.join(map(str, lib_version))} ({a.lib}); source at the start: {source}",
            *([f"libattn's builders on the simulated device (--device-sim): builder items only"]
              if a.device_sim else []),
            f"seed {a.seed}; {nu} batches per utility, {nb} per builder; {total:.0f} s "
            f"(+{t_import:.0f} s importing vLLM){f'; {a.jobs} jobs' if a.jobs > 1 else ''}"]
    notes = [f"note: {it.name}: {n}" for it in items for n in it.notes]
    notes += [f"note: {n}" for n in config_notes]
    for r in results:
        if r.differing:
            ds = sorted(r.differing.items(), key=lambda kv: -kv[1])
            notes.append(f"differing in {r.item.name} (batches): " +
                         ", ".join(f"{k} ({c})" for k, c in ds))
    notes += [f"not comparable: {b}.{f}: {why}" for b, fs in NOT_COMPARABLE.items()
              for f, why in fs.items() if any(b in it.name for it in items)]
    notes += [f"refusals: {x}" for x in table.refusals(results)]
    notes += [f"paths in {r.item.name} (batches): " +
              ", ".join(f"{k} ({n})" for k, n in sorted(r.paths.items(), key=lambda kv: -kv[1]))
              for r in results if r.paths]
    captured = [f"{r.item.name} ({r.captures})" for r in results if r.captures]
    if captured:
        notes.append("capture builds compared (batches libattn built with "
                     "build_for_cudagraph_capture): " + ", ".join(captured))
    print("\n".join(["", *head, "", table.text(results), "", *notes]))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(head) + "\n\n" + table.markdown(results) + "\n\n" +
                    "".join(f"- {table.md_text(n)}\n" for n in notes))
    ran = [r for r in results if not r.status]
    if a.self_test:
        # every batch with an equal field must report the difference planted in it, and
        # every item must have such batches
        # a batch where the planted difference was not caught fails; so does an item where
        # no batch had an equal field to plant it in (batches whose every field differs today
        # are counted with the refusals)
        idle = [r.item.name for r in ran if r.batches == r.vllm_refused and
                not r.first_refusal.startswith("no equal field")]
        # libattn raising on every batch vLLM built (a real mismatch, reported by the normal
        # run) leaves no values to plant a difference in: not exercised either
        raised = [r.item.name for r in ran if r.item.name not in idle and r.lib_raised and
                  r.lib_raised == r.batches - r.vllm_refused]
        idle += raised
        missed = [r.item.name for r in ran if r.item.name not in idle and (
            r.mismatches < r.batches - r.vllm_refused or r.mismatches - r.lib_raised == 0)]
        if idle:
            print(f"self-test: not exercised (vLLM refused, or libattn raised on, every batch): "
                  f"{', '.join(idle)}", file=sys.stderr)
        if missed:
            print(f"SELF-TEST FAILED: a planted difference went unnoticed (or no field to plant "
                  f"it in) in: {', '.join(missed)}", file=sys.stderr)
            return 1
        print(f"self-test passed: the planted difference was caught in every compared batch of "
              f"{len(ran) - len(idle)} items", file=sys.stderr)
        return 0
    bad = [r for r in ran if r.failed]
    if bad:
        print(f"CONFORMANCE FAILED: {sum(r.mismatches for r in bad)} mismatches in "
              f"{len(bad)} of {len(ran)} items", file=sys.stderr)
        return 1
    variants = sum("variants)" in r.item.name for r in ran)
    print(f"conformance: 0 mismatches in {len(ran)} items ({variants} layer-variant items; "
          f"{sum(r.captures > 0 for r in ran)} items compared capture builds, "
          f"{sum(r.captures for r in ran)} batches)", file=sys.stderr)
    return 0


def git_describe() -> str:
    """The checkout libattn was built from: commit, and whether the tree had changes (also the
    bench's, bench/vllm_compare.py)."""
    import subprocess
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               check=True, capture_output=True, text=True).stdout.strip()
        return f"commit {head}{' + uncommitted changes' if dirty else ''}"
    except (OSError, subprocess.CalledProcessError):
        return "no git"
