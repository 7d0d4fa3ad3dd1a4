#!/usr/bin/env bash
# Builds and runs the host benchmarks (Release, CUDA off) and prints the table of figures as
# ratios measured in this one run: the page-indices op against memcpy of its output bytes, and
# each per-request op's time per request at 256 / 1024 / 4096 requests (linear = flat).
#   scripts/bench.sh [extra Google Benchmark flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh libbenchmark-dev > /dev/null
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTN_CUDA=OFF \
      -DATTN_BUILD_TESTS=OFF -DATTN_BUILD_EXAMPLES=OFF -DATTN_BUILD_BENCHMARKS=ON > /dev/null
cmake --build build-bench --target bench_host_ops > /dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
./build-bench/bench/bench_host_ops --benchmark_format=json --benchmark_min_time=0.2 "$@" > "$out"
python3 - "$out" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
ctx = data["context"]
print(f"machine: {ctx.get('host_name', '?')}, {ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz, "
      f"library build {ctx.get('library_build_type', '?')}")
runs = {b["name"]: b for b in data["benchmarks"]}
def t(name):  # nanoseconds per iteration
    b = runs[name]
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
    return b["real_time"] * scale
print("\npaged KV layout (indptr + indices + last_page_len) vs memcpy of the same bytes")
print(f"{'requests x context':>22} {'out bytes':>12} {'op ns':>12} {'memcpy ns':>12} {'op/memcpy':>10}")
for args in ["1024/4096", "1024/32768", "256/4096"]:
    if f"BM_paged_kv_metadata/{args}" not in runs or f"BM_memcpy_same_bytes/{args}" not in runs:
        continue
    op, mc = runs[f"BM_paged_kv_metadata/{args}"], runs[f"BM_memcpy_same_bytes/{args}"]
    print(f"{args:>22} {int(op['out_bytes']):>12} {t(op['name']):>12.0f} {t(mc['name']):>12.0f} "
          f"{t(op['name']) / t(mc['name']):>10.2f}")
print("\nper-request cost at growing batch sizes (ns per request; flat = linear)")
for op in ["BM_split_decodes_and_prefills", "BM_reorder_batch", "BM_slot_mapping",
           "BM_local_attention_virtual_batches"]:
    sizes = [s for s in ("256", "1024", "4096") if f"{op}/{s}" in runs]
    if not sizes:
        continue
    per = [t(f"{op}/{s}") / int(s) for s in sizes]
    row = "  ".join(f"{s}: {p:7.1f}" for s, p in zip(sizes, per))
    print(f"  {op[3:]:<36} {row}   (ratio {sizes[-1]}/{sizes[0]}: {per[-1] / per[0]:.2f})")
print("\nattn_build, host path (all decodes): us per build, and the ratio to FLASH_ATTN's")
for args in ["256/4096", "1024/32768"]:
    fa = "BM_flash_attn_build/" + args
    if fa not in runs:
        continue
    print(f"  {args:>12} requests/context: FLASH_ATTN {t(fa) / 1e3:8.2f} us")
    for backend in ["FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TREE_ATTN", "CPU_ATTN"]:
        name = f"backend_build/{backend}/{args}"
        if name in runs:
            print(f"  {'':>12} {backend:>27} {t(name) / 1e3:8.2f} us  ({t(name) / t(fa):5.2f}x)")
PY
