#!/usr/bin/env bash
# libattn side by side with vLLM's own Python on the same batches (issue 7). A benchmark, never a
# test: nothing here runs in scripts/test.sh and no timing is asserted; the equality check of the
# results is part of the run (a mismatch prints its first difference and exits non-zero).
#
#   scripts/bench_vllm.sh [bench/vllm_compare.py flags]    e.g. --quick, --workloads mixed,long
#   ATTN_VLLM_ARGS="--markdown out.md" scripts/bench.sh     (flags when scripts/bench.sh calls it)
#
# 1. A virtual environment with vLLM and torch from PyPI (scripts/vllm_venv.sh, shared with
#    scripts/conformance.sh), created once in build-bench/vllm-venv and reused afterwards.
#    ATTN_VLLM_VENV moves it, ATTN_VLLM_SPEC picks the requirement (default "vllm", e.g.
#    "vllm==0.33.0"); ATTN_VLLM_PIP_ARGS and ATTN_VLLM_PYTHON: see scripts/vllm_venv.sh.
# 2. libattn built as scripts/bench.sh builds it (Release, ATTN_CUDA=OFF, build-bench/), and
#    bench/vllm_compare_timer.c (the C-call column) compiled beside it.
# 3. bench/vllm_compare.py with the environment's Python. vLLM runs on its CPU platform
#    (VLLM_TARGET_DEVICE=cpu): the machine needs no GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
spec=${ATTN_VLLM_SPEC:-vllm}
# shellcheck source=scripts/vllm_venv.sh
. scripts/vllm_venv.sh

if [ "${ATTN_BENCH_BUILT:-0}" != 1 ]; then
  scripts/bench.sh --build-only
fi
ensure_vllm_venv "$spec"

timer=build-bench/libvllm_compare_timer.so
if ! ${CC:-cc} -O2 -shared -fPIC -Iinclude bench/vllm_compare_timer.c -o "$timer"; then
  echo "warning: bench/vllm_compare_timer.c did not compile; the libattn C column is left out" >&2
  timer=
fi

# the binding's compiled fast path (issue 35), when build-bench has it (nanobind installed at
# configure time) and it imports in the environment's Python (same Python version): the
# "libattn py" column then goes through it; LIBATTN_NATIVE=0 times the ctypes layer instead
native=$(ls build-bench/python/libattn/_native*.so 2> /dev/null | head -1 || true)
if [ -n "$native" ] && [ -z "${LIBATTN_NATIVE_MODULE:-}" ]; then
  export LIBATTN_NATIVE_MODULE=$PWD/$native
fi

export VLLM_TARGET_DEVICE=${VLLM_TARGET_DEVICE:-cpu}
# shellcheck disable=SC2086  # ATTN_VLLM_ARGS is a list of arguments
exec "$venv/bin/python" bench/vllm_compare.py --lib build-bench/libattn.so.1 --timer "$timer" \
  ${ATTN_VLLM_ARGS:-} "$@"
