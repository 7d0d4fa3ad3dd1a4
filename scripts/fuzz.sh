#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, host path) and runs each for SECONDS
# (default 20) from the seed corpus in tests/fuzz/corpus/<target>. New inputs go to a scratch
# corpus, never into the repository; a crash leaves its input in build-fuzz/crashes/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# The long run (issue 8): scripts/fuzz.sh 3600
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_build fuzz_utilities fuzz_plugin)
scripts/setup.sh clang libclang-rt-14-dev > /dev/null
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DATTN_FUZZ=ON -DATTN_BUILD_TESTS=OFF -DATTN_BUILD_EXAMPLES=OFF > build-fuzz.log 2>&1 || { cat build-fuzz.log; exit 1; }
cmake --build build-fuzz --target "${targets[@]}" >> build-fuzz.log 2>&1 || { tail -40 build-fuzz.log; exit 1; }
rm -f build-fuzz.log
mkdir -p build-fuzz/crashes
# Configs may ask for more persistent memory than the fuzzer has: ASan refuses allocations over
# 1.5 GiB (they come back as libattn's out-of-memory errors, which the harness accepts) before
# libFuzzer's own limit (-malloc_limit_mb) would call them a crash.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:max_allocation_size_mb=1536 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "${targets[@]}"; do
  work=$(mktemp -d)
  cp tests/fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  log=build-fuzz/$t.log
  if ! ./build-fuzz/tests/fuzz/$t -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 -malloc_limit_mb=4096 \
        -artifact_prefix=build-fuzz/crashes/"$t"- -print_final_stats=1 "$work" > "$log" 2>&1; then
    tail -60 "$log"
    echo "FAIL: $t found a failure (input in build-fuzz/crashes/)"
    rm -rf "$work"
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  echo "OK: $t ran $runs inputs in ${seconds}s ($cov, corpus $(ls "$work" | wc -l) files), no failure"
  rm -rf "$work"
done
