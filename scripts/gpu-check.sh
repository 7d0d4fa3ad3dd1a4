#!/usr/bin/env bash
# The device check, for a fresh GPU machine with no network (nothing is installed or fetched):
#   1. detects the GPU (nvidia-smi, else nvcc's __nvcc_device_query) and its compute capability;
#   2. configures a Release build for that architecture only (-DATTN_CUDA_ARCHITECTURES=<cc>) and
#      builds only what the check runs: the library, the GPU tests, the allocation guard and
#      bench_device (the tests' CMake needs the example plugin's target: examples stay on, unbuilt;
#      no docs, bindings or host benchmarks are built);
#   3. runs the GPU tests (ctest -L gpu, plus the allocation and lint guards) - or, where libcmocka
#      is missing, the same test sources compiled against tests/support/mini_cmocka (said so);
#   4. runs bench_device (host cost per build, device time of the fused kernels against the
#      memory bandwidth, graph replay vs eager builds);
#   5. writes $OUT/gpu-check.log (everything printed) and $OUT/results.json (the GPU, the build,
#      each test's status, the CUDA graph node counts, the benchmark's figures), $OUT being
#      ./gpu-check-out when unset; bench_device.json beside them.
# Every step has a time limit and none runs past ATTN_GPU_CHECK_DEADLINE (450 s); the whole check
# takes about 3 to 4 minutes on a 16-core machine. The build is most of it: configure 18 s and
# build 346 s measured on 2 shared cores (135 steps), so about 1 to 1.5 minutes on 16.
# Exit status: 0 everything passed; 1 a test or a benchmark check failed; 2 no GPU, a missing
# tool or a failed build. The results file is written in every case.
#
#   scripts/gpu-check.sh
# Environment: OUT (output folder), ATTN_GPU_CHECK_BUILD (build folder, default
# build-gpu-check), ATTN_CUDA_ARCHITECTURES (override the detected one), JOBS (default nproc),
# ATTN_GPU_CHECK_QUICK=1 (a shorter benchmark), ATTN_GPU_CHECK_MINI_CMOCKA=1 (use the fallback
# even where libcmocka exists, to test it), ATTN_GPU_CHECK_DEADLINE (seconds, default 450: no
# step starts or runs past it).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
log=$out/gpu-check.log
results=$out/results.json
build=${ATTN_GPU_CHECK_BUILD:-$root/build-gpu-check}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
start=$SECONDS
: > "$log"
rm -f "$out/bench_device.json" "$results"

# ---- state gathered for results.json ------------------------------------------------------------
gpu_name="" gpu_cc="" gpu_driver="" gpu_memory="" arch="" build_s="" configure_s="" generator=""
cmocka_mode="" status="passed" exit_code=0 problems=()
test_rows=()   # "name|status|seconds"

say() { printf '%s\n' "$*" | tee -a "$log"; }
problem() { problems+=("$1"); say "!! $1"; }
json_str() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\n\r\t'; }
# Seconds a step may take: its own cap, never past the check's deadline (deadline_s after start).
deadline_s=${ATTN_GPU_CHECK_DEADLINE:-450}
limit() {  # limit <cap>
  local left=$((deadline_s - (SECONDS - start)))
  [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}
# Runs a command with a time limit, its output appended to the log (and shown).
run() {
  local limit=$1
  shift
  say "\$ $*"
  if [ "$limit" -le 0 ]; then
    say "(not run: the check's ${deadline_s} s are spent)"
    return 124
  fi
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$log"
  return "${PIPESTATUS[0]}"
}

write_results() {
  local tests="" cg="" bench="null" p="" sep=""
  for row in "${test_rows[@]}"; do
    IFS='|' read -r n s t <<< "$row"
    tests+="$sep    {\"name\": \"$(json_str "$n")\", \"status\": \"$s\", \"seconds\": ${t:-0}}"
    sep=$',\n'
  done
  sep=""
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    cg+="$sep    \"$(json_str "$line")\""
    sep=$',\n'
  done < <(grep -ho 'CG_NODES .*' "$log" 2>/dev/null | sort -u)
  [ -s "$out/bench_device.json" ] && bench=$(cat "$out/bench_device.json")
  sep=""
  for x in "${problems[@]}"; do p+="$sep\"$(json_str "$x")\""; sep=", "; done
  cat > "$results" <<EOF
{
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "command": "scripts/gpu-check.sh",
  "source": "$(json_str "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' + working tree changes')")",
  "status": "$status",
  "problems": [$p],
  "elapsed_s": $((SECONDS - start)),
  "gpu": {"name": "$(json_str "$gpu_name")", "compute_cap": "$gpu_cc", "driver": "$(json_str "$gpu_driver")", "memory": "$(json_str "$gpu_memory")"},
  "build": {"cuda_architectures": "$arch", "generator": "$generator", "jobs": $jobs, "configure_s": ${configure_s:-null}, "build_s": ${build_s:-null}, "tests_built_with": "$cmocka_mode"},
  "tests": [
$tests
  ],
  "cuda_graph_nodes": [
$cg
  ],
  "bench_device": $bench
}
EOF
  say "results: $results (status: $status, $((SECONDS - start)) s)"
}

finish() {  # finish <exit code>
  [ "$1" -gt "$exit_code" ] && exit_code=$1
  [ "$exit_code" -ne 0 ] && status=failed
  write_results
  exit "$exit_code"
}

say "=== libattn GPU check, $(date -u), $jobs jobs, output in $out"

# ---- 1. the GPU -----------------------------------------------------------------------------------
if command -v nvidia-smi > /dev/null 2>&1 &&
   q=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1) &&
   [ -n "$q" ]; then
  IFS=',' read -r gpu_name gpu_cc gpu_driver gpu_memory <<< "$q"
  gpu_name=$(echo "$gpu_name" | xargs) gpu_cc=$(echo "$gpu_cc" | xargs)
  gpu_driver=$(echo "$gpu_driver" | xargs) gpu_memory=$(echo "$gpu_memory" | xargs)
  say "GPU: $gpu_name, compute capability $gpu_cc, driver $gpu_driver, $gpu_memory"
fi
nvcc=$(command -v nvcc 2>/dev/null || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$gpu_cc" ] && [ -n "$nvcc" ] && [ -x "$(dirname "$nvcc")/__nvcc_device_query" ]; then
  c=$("$(dirname "$nvcc")/__nvcc_device_query" 2>/dev/null | tr ',' '\n' | head -1)
  [ -n "$c" ] && gpu_cc="${c:0:${#c}-1}.${c: -1}" && say "GPU: compute capability $gpu_cc (__nvcc_device_query)"
fi
if [ -n "${ATTN_CUDA_ARCHITECTURES:-}" ]; then
  arch=$ATTN_CUDA_ARCHITECTURES
elif [ -n "$gpu_cc" ]; then
  arch=${gpu_cc//./}
else
  problem "no GPU found (nvidia-smi and __nvcc_device_query gave no compute capability)"
  finish 2
fi
say "CUDA architectures: $arch"

# ---- 2. tools --------------------------------------------------------------------------------------
for tool in cmake cc c++; do
  command -v "$tool" > /dev/null 2>&1 || { problem "$tool not found"; finish 2; }
done
[ -n "$nvcc" ] || { problem "nvcc not found (PATH, /usr/local/cuda/bin)"; finish 2; }
say "tools: $(cmake --version | head -1), nvcc $("$nvcc" --version | grep -o 'release [0-9.]*'), $(cc --version | head -1)"
generator="Unix Makefiles"
command -v ninja > /dev/null 2>&1 && generator=Ninja
if [ "${ATTN_GPU_CHECK_MINI_CMOCKA:-0}" != 1 ] && command -v pkg-config > /dev/null 2>&1 &&
   pkg-config --exists cmocka 2>/dev/null; then
  cmocka_mode=cmocka
else
  cmocka_mode=mini_cmocka
  say "libcmocka not found (pkg-config cmocka): the GPU tests are compiled against tests/support/mini_cmocka, outside CMake"
fi

# ---- 3. configure and build -------------------------------------------------------------------------
cuda_root=$(cd "$(dirname "$nvcc")/.." && pwd)
tests_on=OFF
[ "$cmocka_mode" = cmocka ] && tests_on=ON
t0=$SECONDS
if ! run "$(limit 180)" cmake -S "$root" -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
      -DATTN_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DATTN_CUDA_ARCHITECTURES="$arch" \
      -DCMAKE_CUDA_ARCHITECTURES="$arch" -DATTN_BUILD_TESTS=$tests_on -DATTN_BUILD_EXAMPLES=$tests_on \
      -DATTN_BUILD_BENCHMARKS=OFF -DATTN_BUILD_DEVICE_BENCHMARK=ON -DATTN_STATIC_LIBSTDCXX=OFF; then
  configure_s=$((SECONDS - t0))
  problem "cmake configure failed"
  finish 2
fi
configure_s=$((SECONDS - t0))
# Every tests/gpu/test_gpu_*.c, the capture test first.
gpu_tests=(test_gpu_capture)
for f in "$root"/tests/gpu/test_gpu_*.c; do
  t=$(basename "$f" .c)
  [ "$t" = test_gpu_capture ] || gpu_tests+=("$t")
done
targets=(attn bench_device)
[ "$tests_on" = ON ] && targets+=("${gpu_tests[@]}" test_graph_safety)
t0=$SECONDS
if ! run "$(limit $((deadline_s - 120)))" cmake --build "$build" -j "$jobs" --target "${targets[@]}"; then
  if [ "$cmocka_mode" = cmocka ]; then
    # A test that does not compile here (another compiler's -Werror, say) must not cost the
    # run: the library and the benchmark alone, then the tests without -Werror (mini_cmocka).
    problem "the build with the tests failed; building the library and bench_device alone"
    exit_code=1
    cmocka_mode=mini_cmocka
    if ! run "$(limit $((deadline_s - 120)))" cmake --build "$build" -j "$jobs" --target attn bench_device; then
      build_s=$((SECONDS - t0))
      problem "build failed"
      finish 2
    fi
  else
    build_s=$((SECONDS - t0))
    problem "build failed"
    finish 2
  fi
fi
build_s=$((SECONDS - t0))
say "built in ${build_s} s (configure ${configure_s} s)"

# ---- 4. tests ---------------------------------------------------------------------------------------
record_test() {  # record_test <name> <exit code> <seconds> <output file>
  local s=passed
  if [ "$2" -eq 124 ] || [ "$2" -eq 137 ]; then s=timeout
  elif [ "$2" -ne 0 ]; then s=failed
  elif grep -q 'SKIP: no CUDA device' "$4"; then s=skipped
  fi
  test_rows+=("$1|$s|$3")
  [ "$s" = passed ] || { problem "$1: $s"; exit_code=1; }
}
if [ "$cmocka_mode" = cmocka ]; then
  (cd "$build" && run "$(limit 240)" ctest -L gpu -R "^test_gpu_" -V --timeout 180) > "$out/.ctest" 2>&1
  # ctest's summary: "n/N Test #k: name ...   Passed   1.23 sec" (or Failed, ***Skipped, ...)
  for t in "${gpu_tests[@]}"; do
    line=$(grep -E "Test +#[0-9]+: $t " "$out/.ctest" | tail -1)
    secs=$(echo "$line" | grep -oE '[0-9.]+ sec' | grep -oE '[0-9.]+' || echo 0)
    if echo "$line" | grep -q ' Passed'; then s=passed
    elif echo "$line" | grep -qi 'skipped'; then s=skipped
    elif echo "$line" | grep -qi 'timeout'; then s=timeout
    elif [ -z "$line" ]; then s=not_run
    else s=failed; fi
    test_rows+=("$t|$s|${secs:-0}")
    [ "$s" = passed ] || { problem "$t: $s"; exit_code=1; }
  done
  (cd "$build" && run "$(limit 60)" ctest -R '^test_graph_safety' --output-on-failure) > "$out/.ctest2" 2>&1
  for t in test_graph_safety test_graph_safety_lint; do
    line=$(grep -E "Test +#[0-9]+: $t " "$out/.ctest2" | tail -1)
    secs=$(echo "$line" | grep -oE '[0-9.]+ sec' | grep -oE '[0-9.]+' || echo 0)
    if echo "$line" | grep -q ' Passed'; then s=passed; else s=failed; fi
    test_rows+=("$t|$s|${secs:-0}")
    [ "$s" = passed ] || { problem "$t: $s"; exit_code=1; }
  done
  rm -f "$out/.ctest" "$out/.ctest2"
else
  mini=$build/gpu-tests
  mkdir -p "$mini"
  flags=(-std=gnu11 -O2 -Wall -Wextra -I"$root/include" -I"$root/tests/support/mini_cmocka"
         -I"$root/tests/support" -I"$root/tests/gpu" -isystem "$cuda_root/include")
  support=("$root/tests/support/test_support.c" "$root/tests/support/json.c"
           "$root/tests/support/mini_cmocka/mini_cmocka.c")
  libs=(-L"$build" -lattn -L"$cuda_root/lib64" -lcudart -lpthread -ldl
        -Wl,-rpath,"$build:$cuda_root/lib64")
  for t in "${gpu_tests[@]}" test_graph_safety; do
    src=$root/tests/gpu/$t.c extra=("$root/tests/gpu/gpu_support.c")
    [ "$t" = test_graph_safety ] && src=$root/tests/c/$t.c extra=()
    if ! run "$(limit 120)" cc "${flags[@]}" "$src" "${extra[@]}" "${support[@]}" "${libs[@]}" -o "$mini/$t"; then
      test_rows+=("$t|not_built|0")
      problem "$t: did not compile against mini_cmocka"
      exit_code=1
      continue
    fi
    t0=$SECONDS
    run "$(limit 180)" "$mini/$t" > "$out/.test" 2>&1
    rc=$?
    record_test "$t" "$rc" "$((SECONDS - t0))" "$out/.test"
  done
  t0=$SECONDS
  run "$(limit 60)" "$root/scripts/check_graph_safety.sh" "$root" > "$out/.test" 2>&1
  record_test test_graph_safety_lint $? "$((SECONDS - t0))" "$out/.test"
  rm -f "$out/.test"
fi

# ---- 5. the device benchmark ------------------------------------------------------------------------
quick=()
[ "${ATTN_GPU_CHECK_QUICK:-0}" = 1 ] && quick=(--quick)
left=$(limit 240)
if [ "$left" -lt 45 ]; then
  problem "bench_device skipped: ${left} s left of the ${deadline_s} s budget"
  exit_code=1
else
  [ "$left" -lt 120 ] && quick=(--quick)
  run "$left" "$build/bench/device/bench_device" --json "$out/bench_device.json" "${quick[@]}"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    problem "bench_device exited with status $rc"
    exit_code=1
  fi
fi

say "=== done in $((SECONDS - start)) s"
finish "$exit_code"
