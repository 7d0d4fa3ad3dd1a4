# shellcheck shell=bash
# Sourced by scripts/bench_vllm.sh and scripts/conformance.sh (one place for the vLLM
# environment): `ensure_vllm_venv SPEC [PINNED_VERSION]` makes sure $venv (default
# build-bench/vllm-venv, git-ignored; ATTN_VLLM_VENV moves it) has SPEC (a pip requirement),
# torch and numpy, installing them from PyPI once; with PINNED_VERSION it then checks that the
# installed vLLM is exactly that version and fails with a clear message if not.
#
# PyPI's Linux torch wheel is the CUDA build (the CPU-only wheels live on download.pytorch.org);
# vLLM pins its torch, so pip takes that one: several GB of downloads and ~10 GB on disk,
# minutes. ATTN_VLLM_PIP_ARGS adds pip arguments (e.g. an index that has CPU torch),
# ATTN_VLLM_PYTHON is the interpreter the environment is made from (default python3; vLLM
# supports the Pythons its wheels are built for, 3.10 to 3.13 for 0.33). Never a dependency of
# libattn or its tests.
venv=${ATTN_VLLM_VENV:-build-bench/vllm-venv}

vllm_venv_installed() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" - << 'PY' 2> /dev/null
import importlib.metadata as m
for name in ("vllm", "torch", "numpy"):
    m.version(name)
PY
}

vllm_venv_version() {
  "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm"))' 2> /dev/null
}

ensure_vllm_venv() {
  local spec=$1 pinned=${2:-} python=${ATTN_VLLM_PYTHON:-python3}
  if ! vllm_venv_installed; then
    mkdir -p "$(dirname "$venv")"
    if [ ! -x "$venv/bin/python" ] && ! "$python" -m venv "$venv" 2> /dev/null; then
      rm -rf "$venv"  # Debian's python3 needs python3-venv for ensurepip
      scripts/setup.sh python3-venv > /dev/null
      "$python" -m venv "$venv"
    fi
    local log="$venv/../vllm-pip.log"
    echo "installing $spec and torch from PyPI into $venv (once; several GB, minutes; log: $log)" >&2
    "$venv/bin/python" -m pip install --upgrade pip > "$log" 2>&1
    # shellcheck disable=SC2086  # ATTN_VLLM_PIP_ARGS is a list of arguments
    if ! "$venv/bin/python" -m pip install ${ATTN_VLLM_PIP_ARGS:-} "$spec" >> "$log" 2>&1; then
      tail -20 "$log" >&2
      echo "pip install $spec failed (log: $log)" >&2
      return 1
    fi
  fi
  if [ -n "$pinned" ]; then
    local got
    got=$(vllm_venv_version)
    if [ "$got" != "$pinned" ]; then
      echo "error: $venv has vLLM ${got:-(none)}, this needs vLLM $pinned exactly." >&2
      echo "  fix: $venv/bin/python -m pip install vllm==$pinned   (or remove $venv and rerun;" >&2
      echo "  ATTN_VLLM_VENV=<dir> uses another environment)" >&2
      return 1
    fi
  fi
}
