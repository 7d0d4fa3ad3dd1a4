#!/usr/bin/env bash
# Host-path benchmarks of two libattn versions side by side, in one run: the same benchmark
# binaries (bench_host_ops, bench_workloads, built from this tree) run against this tree's
# libattn and against BASE's (a git ref, built in build-bench-base/ from a worktree), alternating
# ROUNDS times (default 3); the best time of each row on each side; a table of after/before
# ratios (bench/compare.py). Never part of the tests.
#   scripts/bench_compare.sh BASE [ROUNDS]      e.g. scripts/bench_compare.sh 6e1308d
# --instructions: instead of timing, count each row's instructions per iteration under callgrind
# on both sides (bench/instructions.py; load-independent, one pass; valgrind needed):
#   scripts/bench_compare.sh --instructions BASE [BENCHMARK_FILTER]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
instructions=0
if [ "${1:-}" = --instructions ]; then
  instructions=1
  shift
fi
base=${1:?usage: scripts/bench_compare.sh [--instructions] BASE_REF [ROUNDS | FILTER]}
rounds=${2:-3}
scripts/setup.sh libbenchmark-dev > /dev/null
[ "$instructions" = 1 ] && scripts/setup.sh valgrind > /dev/null
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
conf=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DATTN_CUDA=OFF -DATTN_BUILD_TESTS=OFF -DATTN_BUILD_EXAMPLES=OFF "${launcher[@]}")
cmake -S . -B build-bench "${conf[@]}" -DATTN_BUILD_BENCHMARKS=ON > /dev/null
cmake --build build-bench --target attn bench_host_ops bench_workloads > /dev/null
src=build-bench-base/src
rm -rf "$src"
git worktree prune
git worktree add -q --detach "$src" "$base"
trap 'git worktree remove --force "$src" 2> /dev/null || true' EXIT
cmake -S "$src" -B build-bench-base/build "${conf[@]}" -DATTN_BUILD_BENCHMARKS=OFF > /dev/null
cmake --build build-bench-base/build --target attn > /dev/null
out=$(mktemp -d)
if [ "$instructions" = 1 ]; then
  # the after side counts the rows the before side counted (the base lacks newer backends)
  python3 bench/instructions.py run build-bench-base/build "$out/before" build-bench/bench "${2:-.}"
  python3 bench/instructions.py run build-bench "$out/after" build-bench/bench "@$out/before"
  echo "before: $base, after: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src kernels || echo +)"
  python3 bench/instructions.py compare "$out/before" "$out/after" --top 40
  rm -rf "$out"
  exit 0
fi
flags=(--benchmark_format=json --benchmark_min_time=0.2)
for r in $(seq "$rounds"); do
  for side in before after; do
    lib=build-bench
    [ "$side" = before ] && lib=build-bench-base/build
    for b in bench_host_ops bench_workloads; do
      LD_LIBRARY_PATH="$root/$lib" ./build-bench/bench/$b "${flags[@]}" > "$out/$side.$b.$r.json"
    done
  done
done
python3 bench/compare.py "$base" "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src kernels || echo +)" "$out"
rm -rf "$out"
