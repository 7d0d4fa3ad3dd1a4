#!/usr/bin/env bash
# Runs every cmocka test binary of a build under valgrind memcheck: any invalid read or write,
# use of uninitialised memory, or definite/indirect leak fails. Usage: scripts/valgrind.sh build
# --fair-sched=yes: valgrind runs one thread at a time, and its default lock hand-off let
# test_concurrency's spinning registry reader starve the plugin loaders (15+ minutes, no end).
# Each binary gets 10 minutes (a hang fails the lane instead of CI's whole time limit).
set -euo pipefail
build=${1:-build}
fail=0 count=0
for t in "$build"/tests/test_*; do
  [ -x "$t" ] && [ -f "$t" ] || continue
  case $(basename "$t") in
    test_gpu_*|test_header_*|test_dlpack_layout|test_dlopen) continue ;;  # GPU, or no library code
  esac
  log=$(mktemp)
  if timeout 600 valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
       --show-leak-kinds=definite,indirect "$t" > "$log" 2>&1; then
    count=$((count + 1))
  else
    echo "FAIL: $(basename "$t") under valgrind:"; tail -40 "$log"; fail=1
  fi
  rm -f "$log"
done
[ $fail -eq 0 ] && echo "OK: $count test binaries clean under valgrind memcheck"
exit $fail
