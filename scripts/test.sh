#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. the regular build (the device path compiled by nvcc when it exists; the GPU tests run when
#      a GPU is visible and are reported as skipped otherwise) and every ctest test;
#   2. every cmocka test of that build under valgrind memcheck;
#   3. the suite under AddressSanitizer + UndefinedBehaviorSanitizer on the simulated device
#      (ATTN_DEVICE_SIM=ON: the device path built with the host compiler and run on libsimcuda,
#      docs/architecture.md): the GPU tests run here, none skipped, with the capture/replay check
#      of every backend and the planted-bug test of the simulated device's mechanisms;
#   4. the thread tests under ThreadSanitizer (host build);
#   5. a short libFuzzer run of each fuzz target (clang, ASan + UBSan; scripts/fuzz.sh).
# Build directories: build/, build-asan/, build-tsan/, build-fuzz/. ATTN_CUDA_ARCHITECTURES
# picks the CUDA targets (default "90"; the GPU check script builds for the local GPU instead).
# ATTN_FUZZ_SECONDS sets the fuzz time per target (default 20).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh valgrind clang libclang-rt-14-dev golang-go bindgen cmd:cargo pip:numpy pip:pytest pip:scikit_build_core pip:nanobind
jobs=$(nproc)
start=$SECONDS

lane() {  # lane <name> <build-dir> <ctest exclusions> <cmake args...>
  local name=$1 dir=$2 exclude=$3
  shift 3
  echo "=== $name: configure and build ($dir)"
  cmake -S . -B "$dir" -G Ninja "$@" > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$jobs" > "$dir.build.log" 2>&1 || { tail -60 "$dir.build.log"; return 1; }
  echo "=== $name: ctest"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" ${exclude:+-E "$exclude"})
}

lane "regular build" build "" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTN_CUDA_ARCHITECTURES="${ATTN_CUDA_ARCHITECTURES:-90}"
echo "=== valgrind memcheck (regular build)"
scripts/valgrind.sh build
# Sanitizers: the host path and the device path on the simulated device (no nvcc); the install
# check links an unsanitized consumer, the docs are the same as above, and the bindings load
# libattn into python3, cargo's and go's unsanitized programs, so those run in the regular lane
# only.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
lane "ASan+UBSan build on the simulated device" build-asan "test_install|test_docs|test_binding_|test_example_|test_python_install" \
  -DCMAKE_BUILD_TYPE=Debug -DATTN_DEVICE_SIM=ON -DATTN_SANITIZE=address,undefined
TSAN_OPTIONS=halt_on_error=1 \
lane "TSan build" build-tsan "" \
  -DCMAKE_BUILD_TYPE=Debug -DATTN_CUDA=OFF -DATTN_SANITIZE=thread -DATTN_TSAN_ONLY_THREAD_TESTS=ON
echo "=== libFuzzer, ${ATTN_FUZZ_SECONDS:-20} s per target"
scripts/fuzz.sh "${ATTN_FUZZ_SECONDS:-20}"
rm -f build*.configure.log build*.build.log
echo "=== all lanes passed in $((SECONDS - start)) s"
