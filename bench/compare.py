#!/usr/bin/env python3
"""The table of scripts/bench_compare.sh: for every benchmark row, the best time of the rounds
of each side (before: BASE's libattn, after: this tree's, the same benchmark binaries) and their
ratio. Only the standard library.

    compare.py BASE_NAME AFTER_NAME DIR     (DIR holds {before,after}.<bench>.<round>.json)
"""
import glob
import json
import os
import sys

SCALE = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def best(paths):
    rows = {}
    for p in paths:
        for b in json.load(open(p))["benchmarks"]:
            if b.get("run_type", "iteration") != "iteration" or "error_occurred" in b:
                continue
            t = b["real_time"] * SCALE[b["time_unit"]]
            rows[b["name"]] = min(rows.get(b["name"], t), t)
    return rows


def main():
    base, after_name, d = sys.argv[1:4]
    before = best(glob.glob(os.path.join(d, "before.*.json")))
    after = best(glob.glob(os.path.join(d, "after.*.json")))
    rounds = len(glob.glob(os.path.join(d, "after.bench_host_ops.*.json")))
    print(f"host path, before = {base}, after = {after_name}: best of {rounds} alternating rounds "
          "each (same benchmark binaries, LD_LIBRARY_PATH picks the library)")
    print(f"  {'row':<58} {'before ns':>11} {'after ns':>11} {'after/before':>12}")
    slower = []
    for name in sorted(set(before) & set(after)):
        r = after[name] / before[name]
        flag = "  > 5% slower" if r > 1.05 else ""
        if r > 1.05:
            slower.append(name)
        print(f"  {name:<58} {before[name]:>11.0f} {after[name]:>11.0f} {r:>12.3f}{flag}")
    print(f"rows: {len(set(before) & set(after))}; slower by more than 5%: {len(slower)}"
          + (f" ({', '.join(slower)})" if slower else ""))


if __name__ == "__main__":
    main()
