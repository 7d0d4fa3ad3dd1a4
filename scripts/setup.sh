#!/usr/bin/env bash
# Installs the Debian packages libattn's build and tests need, when they are missing, plus any
# named as arguments (scripts/bench.sh adds libbenchmark-dev). An argument "pip:NAME" is a PyPI
# package for python3 instead, named as it is imported, installed with pip when `import NAME`
# fails (scripts/test.sh adds numpy and pytest for the Python binding, scikit_build_core, the
# build backend of its wheel, and nanobind, its compiled extension's; pip reads the underscores as dashes); where pip refuses, as on
# Debian's own python3, it falls back to Debian's python3-NAME (underscores as dashes). "cmd:NAME" installs the Debian package NAME only when
# no NAME command is on PATH (cargo: the machine's rustup cargo is kept).
# Safe to run again: it installs nothing that is already there.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libcmocka-dev libdlpack-dev doxygen abigail-tools)
python_packages=()
for a in "$@"; do
  case "$a" in
    pip:*) python_packages+=("${a#pip:}") ;;
    cmd:*) command -v "${a#cmd:}" > /dev/null || packages+=("${a#cmd:}") ;;
    *) packages+=("$a") ;;
  esac
done
missing_py=()
for p in "${python_packages[@]}"; do
  python3 -c "import $p" 2>/dev/null || missing_py+=("$p")
done
if [ ${#missing_py[@]} -gt 0 ]; then
  echo "setup: pip installing ${missing_py[*]}"
  python3 -m pip install -q --disable-pip-version-check "${missing_py[@]}" ||
    for p in "${missing_py[@]}"; do packages+=("python3-${p//_/-}"); done
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present (${packages[*]})"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
echo "setup: done"
