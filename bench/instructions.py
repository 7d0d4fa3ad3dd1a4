#!/usr/bin/env python3
"""Instructions per iteration of every benchmark row, under callgrind, for two libattn builds:
`scripts/bench_compare.sh --instructions BASE`. A count does not move with the machine's load (a
wall-time row on the shared 2-vCPU VM moved by 60% between rounds), so a 5% criterion can be
settled on it; it misses what instructions do not show (a division's latency, cache misses).

The benchmark binaries bracket each row's timed loop with callgrind client requests
(bench/callgrind_rows.h): valgrind runs with --instr-atstart=no, so only the loops are
instrumented, and each loop ends with a dump whose description is "<row> iterations=<n>".
Inside them only the calls of libattn's ABI functions are counted (GROUPS below). Google Benchmark
runs a row several times while it settles the iteration count; the run with the most
iterations is kept.

    instructions.py run LIB_DIR OUT_DIR BENCH_DIR [ROW_REGEX | @RUN_DIR]
        (the benchmarks against one library; @RUN_DIR: only the rows that run counted)
    instructions.py compare BEFORE_DIR AFTER_DIR [--top N]      (the table of two run dirs)

Only the standard library (and valgrind on PATH for `run`).
"""
import glob
import os
import re
import subprocess
import sys


PREFIX = "desc: Trigger: Client Request: "

# The ABI functions each row's loop calls, the only code counted (--toggle-collect, exact names:
# a toggle nested in another, as the _ex fast prefill calling the 1.0 function, would turn
# counting off inside it). (binary, row regex, functions); every row must fall in one group.
GROUPS = [
    ("bench_workloads", "^hybrid4_group/", ["attn_build_groups"]),
    ("bench_workloads", "^[^h]|^hybrid4_singles/", ["attn_build"]),
    ("bench_host_ops", "^(BM_flash_attn_build|backend_build|trusted_build)/", ["attn_build"]),
    ("bench_host_ops", "^BM_paged_kv_metadata/", ["attn_compute_flashinfer_kv_metadata"]),
    ("bench_host_ops", "^BM_memcpy_same_bytes/", []),
    ("bench_host_ops", "^BM_split_decodes_and_prefills/", ["attn_split_decodes_and_prefills"]),
    ("bench_host_ops", "^BM_reorder_batch/",
     ["attn_reorder_batch_to_split_decodes_and_prefills"]),
    ("bench_host_ops", "^BM_slot_mapping/", ["attn_compute_slot_mapping"]),
    ("bench_host_ops", "^BM_local_attention_virtual_batches/",
     ["attn_make_local_attention_virtual_batches", "attn_metadata_destroy"]),
    ("bench_host_ops", "^BM_fast_prefill/",
     ["attn_make_kv_sharing_fast_prefill_common_attn_metadata", "attn_metadata_destroy"]),
    ("bench_host_ops", "^BM_fast_prefill_ex/",
     ["attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex", "attn_metadata_destroy"]),
]


def run(lib, out, bench_dir, only):
    """Every group's rows (those matching `only` too) against the library in `lib`."""
    os.makedirs(out, exist_ok=True)
    if only.startswith("@"):  # the rows another run dir counted (a base without new backends)
        wanted = set(rows(only[1:]))
        keep = wanted.__contains__
    else:
        keep = lambda n: re.search(only, n) is not None
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.abspath(lib))
    for k, (binary, rows_re, functions) in enumerate(GROUPS):
        if not functions:
            continue  # a memcpy reference: no libattn code to count
        listed = subprocess.run([os.path.join(bench_dir, binary), "--benchmark_list_tests"],
                                env=env, check=True, capture_output=True, text=True).stdout
        every = listed.split()
        for n in every:  # every row of the binary falls in exactly one group
            owners = [g for g in GROUPS if g[0] == binary and re.search(g[1], n)]
            if len(owners) != 1:
                sys.exit(f"{binary} row {n} matches {len(owners)} groups of GROUPS, not 1")
        names = [n for n in every if re.search(rows_re, n) and keep(n)]
        if not names:
            continue
        prefix = os.path.join(out, f"{binary}.{k}.cg")
        for old in glob.glob(prefix + "*"):
            os.remove(old)
        exact = "^(" + "|".join(re.escape(n) for n in names) + ")$"
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--compress-strings=no",
               "--callgrind-out-file=" + prefix]
        cmd += ["--toggle-collect=" + f for f in functions]
        # bench_host_ops: longer, so that a row's first call (a handle pool filled, a buffer
        # grown) is not the only one counted; bench_workloads builds once before its loops.
        min_time = "0.1" if binary == "bench_host_ops" else "0.02"
        cmd += [os.path.join(bench_dir, binary), "--benchmark_min_time=" + min_time,
                "--benchmark_filter=" + exact]
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def rows(out):
    """{row: instructions per iteration} of the dumps in a run dir."""
    found = {}
    for path in glob.glob(os.path.join(out, "*.cg*")):
        desc, total = None, 0
        with open(path) as f:
            for line in f:
                if line.startswith(PREFIX):
                    desc = line[len(PREFIX):].strip()
                elif line.startswith("totals:"):  # the summary: line of such a dump says 0
                    total = int(line.split()[1])
        m = re.fullmatch(r"(.*) iterations=(\d+)", desc or "")
        if m is None or int(m.group(2)) == 0 or total == 0:
            continue  # a row that hit an error dumps iterations=0
        row, iters = m.group(1), int(m.group(2))
        # the largest iteration count of a row (its last run) wins
        if row not in found or iters > found[row][1]:
            found[row] = (total / iters, iters)
    return {row: v[0] for row, v in found.items()}


def compare(before_dir, after_dir, top):
    before, after = rows(before_dir), rows(after_dir)
    both = sorted(set(before) & set(after))
    if not both:
        sys.exit("no row was counted on both sides")
    table = sorted(((after[r] / before[r], r) for r in both), reverse=True)
    ratios = sorted(x for x, _ in table)
    print(f"{len(both)} rows counted on both sides (instructions per iteration, after/before): "
          f"{sum(x > 1.05 for x in ratios)} more than 5% higher, "
          f"{sum(x > 1.01 for x in ratios)} more than 1% higher, "
          f"{sum(x < 0.95 for x in ratios)} more than 5% lower; "
          f"median {ratios[len(ratios) // 2]:.3f}, highest {ratios[-1]:.3f}")
    print(f"{'after/before':>12} {'before':>12} {'after':>12}  row")
    for x, r in table[:top]:
        print(f"{x:12.3f} {before[r]:12.0f} {after[r]:12.0f}  {r}")
    only = sorted(set(after) - set(before))
    if only:
        print(f"{len(only)} rows only after (backends the base lacks)")
    lost = sorted(set(before) - set(after))
    if lost:  # refused, crashed or failed on the after side: never silently dropped
        print(f"{len(lost)} rows counted before but not after: " + ", ".join(lost))
        sys.exit(1)


def main():
    if len(sys.argv) in (5, 6) and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) == 6 else ".")
    elif len(sys.argv) >= 4 and sys.argv[1] == "compare":
        top = int(sys.argv[5]) if len(sys.argv) >= 6 and sys.argv[4] == "--top" else 40
        compare(sys.argv[2], sys.argv[3], top)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
