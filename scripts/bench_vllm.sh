#!/usr/bin/env bash
# libattn side by side with vLLM's own Python on the same batches (issue 7). A benchmark, never a
# test: nothing here runs in scripts/test.sh and no timing is asserted; the equality check of the
# results is part of the run (a mismatch prints its first difference and exits non-zero).
#
#   scripts/bench_vllm.sh [bench/vllm_compare.py flags]    e.g. --quick, --workloads mixed,long
#   ATTN_VLLM_ARGS="--markdown out.md" scripts/bench.sh     (flags when scripts/bench.sh calls it)
#
# 1. A virtual environment with vLLM and torch from PyPI, created once in build-bench/vllm-venv
#    (git-ignored; never a dependency of libattn or its tests) and reused afterwards. PyPI's
#    Linux torch wheel is the CUDA build (the CPU-only wheels live on download.pytorch.org); vLLM
#    pins its torch, so pip takes that one: several GB of downloads and ~10 GB on disk, minutes.
#    ATTN_VLLM_VENV moves it, ATTN_VLLM_SPEC picks the requirement (default "vllm", e.g.
#    "vllm==0.33.0"), ATTN_VLLM_PIP_ARGS adds pip arguments (e.g. an index that has CPU torch),
#    ATTN_VLLM_PYTHON is the interpreter the environment is made from (default python3; vLLM
#    supports the Pythons its wheels are built for, 3.10 to 3.13 for 0.33).
# 2. libattn built as scripts/bench.sh builds it (Release, ATTN_CUDA=OFF, build-bench/), and
#    bench/vllm_compare_timer.c (the C-call column) compiled beside it.
# 3. bench/vllm_compare.py with the environment's Python. vLLM runs on its CPU platform
#    (VLLM_TARGET_DEVICE=cpu): the machine needs no GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv=${ATTN_VLLM_VENV:-build-bench/vllm-venv}
spec=${ATTN_VLLM_SPEC:-vllm}
python=${ATTN_VLLM_PYTHON:-python3}

if [ "${ATTN_BENCH_BUILT:-0}" != 1 ]; then
  scripts/bench.sh --build-only
fi

installed() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" - <<'PY' 2> /dev/null
import importlib.metadata as m
for name in ("vllm", "torch", "numpy"):
    m.version(name)
PY
}
if ! installed; then
  mkdir -p "$(dirname "$venv")"
  if [ ! -x "$venv/bin/python" ] && ! "$python" -m venv "$venv" 2> /dev/null; then
    rm -rf "$venv"  # Debian's python3 needs python3-venv for ensurepip
    scripts/setup.sh python3-venv > /dev/null
    "$python" -m venv "$venv"
  fi
  log="$venv/../vllm-pip.log"
  echo "installing $spec and torch from PyPI into $venv (once; several GB, minutes; log: $log)" >&2
  "$venv/bin/python" -m pip install --upgrade pip > "$log" 2>&1
  # shellcheck disable=SC2086  # ATTN_VLLM_PIP_ARGS is a list of arguments
  if ! "$venv/bin/python" -m pip install ${ATTN_VLLM_PIP_ARGS:-} "$spec" >> "$log" 2>&1; then
    tail -20 "$log" >&2
    echo "pip install $spec failed (log: $log)" >&2
    exit 1
  fi
fi

timer=build-bench/libvllm_compare_timer.so
if ! ${CC:-cc} -O2 -shared -fPIC -Iinclude bench/vllm_compare_timer.c -o "$timer"; then
  echo "warning: bench/vllm_compare_timer.c did not compile; the libattn C column is left out" >&2
  timer=
fi

export VLLM_TARGET_DEVICE=${VLLM_TARGET_DEVICE:-cpu}
# shellcheck disable=SC2086  # ATTN_VLLM_ARGS is a list of arguments
exec "$venv/bin/python" bench/vllm_compare.py --lib build-bench/libattn.so.1 --timer "$timer" \
  ${ATTN_VLLM_ARGS:-} "$@"
