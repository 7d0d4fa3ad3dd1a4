#!/usr/bin/env bash
# Installs the Debian packages libattn's build and tests need, when they are missing, plus any
# named as arguments (scripts/bench.sh adds libbenchmark-dev).
# Safe to run again: it installs nothing that is already there.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libcmocka-dev libdlpack-dev doxygen abigail-tools "$@")
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
