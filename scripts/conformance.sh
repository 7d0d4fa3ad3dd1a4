#!/usr/bin/env bash
# The vLLM 0.33.0 conformance lane (issue 16), one command: vLLM 0.33.0's own Python (CPU
# tensors) against libattn (the Python binding) on the same seeded random batches; every field
# and scalar compared; a table; exit status 1 on any mismatch. Not part of scripts/test.sh.
#
#   scripts/conformance.sh [--quick] [--batches N] [--builder-batches N] [--only NAME[,NAME]]
#                          [--seed S] [--markdown FILE] [--self-test] [--list] [--device-sim]
#
# 1. libattn built host-only (Release, ATTN_CUDA=OFF) in build-conformance/ (git-ignored); with
#    --device-sim on the simulated device (ATTN_DEVICE_SIM=ON) in build-conformance-sim/, and the
#    lane runs its builder items with libattn's builders there (conformance/device_sim.py).
# 2. The virtual environment with vllm==0.33.0 and torch from PyPI (scripts/vllm_venv.sh, the
#    same one scripts/bench_vllm.sh uses: build-bench/vllm-venv, made once); the installed vLLM
#    must be 0.33.0 exactly.
# 3. python -m conformance (conformance/, see docs/conformance.md) with the venv's Python.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
pinned=0.33.0
# shellcheck source=scripts/vllm_venv.sh
. scripts/vllm_venv.sh

for a in "$@"; do  # --help before anything is built or installed
  if [ "$a" = -h ] || [ "$a" = --help ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
  fi
done

device=(-DATTN_CUDA=OFF)
build=${ATTN_CONFORMANCE_BUILD:-build-conformance}
for a in "$@"; do
  if [ "$a" = --device-sim ]; then
    device=(-DATTN_DEVICE_SIM=ON)
    build=${ATTN_CONFORMANCE_BUILD:-build-conformance-sim}
  fi
done
if [ "${ATTN_CONFORMANCE_SKIP_BUILD:-0}" != 1 ]; then
  launcher=()
  if command -v ccache > /dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${device[@]}" \
        -DATTN_BUILD_TESTS=OFF -DATTN_BUILD_EXAMPLES=OFF -DATTN_BUILD_BENCHMARKS=OFF \
        "${launcher[@]}" > /dev/null
  if ! cmake --build "$build" --target attn > "$build.build.log" 2>&1; then
    tail -40 "$build.build.log" >&2
    echo "error: building libattn in $build failed (log: $build.build.log)" >&2
    exit 1
  fi
fi

ensure_vllm_venv "vllm==$pinned" "$pinned"

# The files derived from vLLM's source (they need it, so they are checked here, not in ctest):
# vLLM's backend names (test_vllm_names resolves each) and the coverage audit README quotes.
vllm_src=$("$venv/bin/python" -c 'import importlib.util as u, os; print(os.path.dirname(u.find_spec("vllm").origin))')
python3 scripts/vllm_names.py "$build/libattn.so.1" --vllm "$vllm_src" \
  --check tests/data/vllm_backend_names.txt
python3 scripts/coverage_vllm.py "$build/libattn.so.1" --vllm "$vllm_src" \
  --check tests/data/vllm_coverage.txt --readme README.md

export VLLM_TARGET_DEVICE=${VLLM_TARGET_DEVICE:-cpu}
# vLLM's Triton kernels run in Triton's CPU interpreter (see conformance/vllm_env.py)
export TRITON_INTERPRET=${TRITON_INTERPRET:-1} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-}
exec "$venv/bin/python" -m conformance --lib "$build/libattn.so.1" "$@"
