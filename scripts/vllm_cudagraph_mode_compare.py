#!/usr/bin/env python3
"""attn_resolve_cudagraph_mode_and_sizes against vLLM 0.33's own resolution, over a grid.

    VLLM_TARGET_DEVICE=cpu <vllm-venv>/bin/python scripts/vllm_cudagraph_mode_compare.py \
        --lib build-host/libattn.so [--cases out.txt]

The two sides are conformance/cudagraph_resolve_item.py's (the lane's item draws random points
with them). For every point of the grid it runs vLLM's real functions on a CompilationConfig whose fields are
set directly (cudagraph_mode, cudagraph_capture_sizes, max_cudagraph_capture_size, splitting_ops,
mode, use_inductor_graph_partition): the model runner V1 reduction (min over groups, strict <,
first backend named), CompilationConfig.resolve_cudagraph_mode_and_sizes, and with adaptive
verification MRV2's get_varlen_cudagraph_unsupported_backend (its ValueError) and
resolve_adaptive_cudagraph_mode first. libattn gets the same inputs through the Python binding.
Compared: the mode, the capture sizes, max_cudagraph_capture_size, or the error (ValueError ->
ATTN_ERR_UNSUPPORTED, AssertionError -> ATTN_ERR_INVALID_ARGUMENT). Exits 1 on any mismatch.
--cases writes one line per point (inputs -> outcome), the source of the hand-checked cmocka
cases in tests/c/test_cudagraph_mode.c. Needs vLLM and torch (CPU): never a dependency of
libattn or its tests.
"""
from __future__ import annotations

import argparse
import itertools
import logging
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bindings", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))  # conformance/


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="build-host/libattn.so")
    ap.add_argument("--cases")
    args = ap.parse_args()

    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    logging.disable(logging.CRITICAL)
    import libattn
    from conformance.cudagraph_resolve_item import Point, attn_side, vllm_side
    lib = libattn.Library(args.lib)

    modes = range(5)  # cudagraph_resolve_item.MODE_NAMES
    group_sets = [[], [(3, "A", None)], [(2, "U", None)], [(1, "S", None)], [(0, "N", None)],
                  [(3, "A", None), (0, "N", None)], [(2, "U", None), (1, "S", None)],
                  [(1, "S", None), (1, "T", None)]]
    size_sets = [([], 0), ([1, 2, 4, 8, 16], 16), ([1, 2], 2), ([5], 5), ([3, 9, 10], 10)]
    mamba_sets = [(False, 0, 0, False), (True, 4, 8, False), (True, 4, 8, True),
                  (True, 16, 8, False), (True, 8, 8, False)]
    points = [Point(mode, groups, q, sizes, mx, v2, pw, split, compile_, inductor, mamba, nb,
                    mr, prof, False)
              for mode, groups, q, (sizes, mx), v2, pw, split, (compile_, inductor),
              (mamba, nb, mr, prof) in itertools.product(
                  modes, group_sets, [1, 2, 4, 7], size_sets, [False, True], [True, False],
                  [True, False], [(True, False), (False, False), (False, True)], mamba_sets)]
    # Adaptive verification (MRV2 only): varlen bounds per group; FULL, FULL_DECODE_ONLY and
    # FULL_AND_PIECEWISE.
    adaptive_groups = [[], [(3, "A", None)], [(2, "M", 4)], [(2, "M", 2)], [(2, "F", None)],
                       [(0, "N", 8)], [(1, "S", 4)], [(3, "A", None), (2, "M", 4)],
                       [(2, "M", 4), (2, "F", 1)]]
    points += [Point(mode, groups, q, [1, 2, 4, 8], 8, True, pw, split, True, False, False, 0, 0,
                     False, True)
               for mode, groups, q, pw, split in itertools.product(
                   [2, 3, 4], adaptive_groups, [1, 4], [True, False], [True, False])]

    mismatches = 0
    out = open(args.cases, "w") if args.cases else None
    for p in points:
        want, got = vllm_side(p), attn_side(lib, libattn, p)
        line = f"{tuple(p)} -> vllm {want} libattn {got}"
        if want != got:
            mismatches += 1
            print("MISMATCH", line)
        if out:
            out.write(line + "\n")
    print(f"{len(points)} cases, {mismatches} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
