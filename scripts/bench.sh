#!/usr/bin/env bash
# The whole benchmark, one command: builds the host benchmarks (Release, CUDA off), runs them and
# prints the tables (bench/report.py), then the side-by-side run against vLLM's own Python
# (scripts/bench_vllm.sh: a separate virtual environment with vLLM from PyPI; skip it with
# ATTN_BENCH_VLLM=0). Every figure is a ratio measured in this one run. Never part of the tests.
#   scripts/bench.sh [extra Google Benchmark flags]      e.g. --benchmark_min_time=0.5
#   scripts/bench.sh --build-only       only configure build-bench/ and build libattn (what
#                                       scripts/bench_vllm.sh needs when run on its own)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh libbenchmark-dev > /dev/null
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTN_CUDA=OFF \
      -DATTN_BUILD_TESTS=OFF -DATTN_BUILD_EXAMPLES=OFF -DATTN_BUILD_BENCHMARKS=ON > /dev/null
# the Python binding's compiled fast path too, when configured (nanobind installed: issue 35)
native_target=()
if cmake --build build-bench --target help | grep -q "^attn_python_native:"; then
  native_target=(attn_python_native)
fi
if [ "${1:-}" = --build-only ]; then
  cmake --build build-bench --target attn "${native_target[@]}" > /dev/null
  exit 0
fi
cmake --build build-bench --target bench_host_ops bench_workloads bench_abi_overhead \
  "${native_target[@]}" > /dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(--benchmark_format=json --benchmark_min_time=0.2 "$@")
./build-bench/bench/bench_host_ops "${flags[@]}" > "$out/host_ops.json"
./build-bench/bench/bench_workloads "${flags[@]}" > "$out/workloads.json"
./build-bench/bench/bench_abi_overhead build-bench/libattn.so.1 "${flags[@]}" > "$out/abi.json"
python3 bench/report.py "$out/host_ops.json" "$out/workloads.json" "$out/abi.json"
echo
# The Python binding's own cost per call, on the ctypes layer and, when built, on its compiled
# fast path libattn._native (issue 35); it needs numpy.
if python3 -c "import numpy" 2> /dev/null; then
  LIBATTN_NATIVE=0 python3 bench/bench_python.py build-bench/libattn.so.1
  native=$(ls build-bench/python/libattn/_native*.so 2> /dev/null | head -1 || true)
  if [ -n "$native" ]; then
    echo
    LIBATTN_NATIVE=1 LIBATTN_NATIVE_MODULE=$PWD/$native python3 bench/bench_python.py \
      build-bench/libattn.so.1
  fi
else
  echo "bench/bench_python.py skipped: the system python3 has no numpy"
fi
if [ "${ATTN_BENCH_VLLM:-1}" != 0 ]; then
  echo
  ATTN_BENCH_BUILT=1 scripts/bench_vllm.sh
fi
