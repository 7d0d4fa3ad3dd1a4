#!/usr/bin/env bash
# Installs a build tree into a scratch prefix and builds a consumer against it twice: with
# CMake's find_package(attn) and with pkg-config. Usage: scripts/check_install.sh <build-dir> <scratch-dir>
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$1 scratch=$2
rm -rf "$scratch"
mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" > "$scratch/install.log"
test -f "$scratch/prefix/include/attn/attn_c.h"
# the licence travels with the library (Apache-2.0, as the sources say)
cmp "$here/LICENSE" "$scratch/prefix/share/doc/attn/LICENSE"
test -s "$scratch/prefix/share/doc/attn/NOTICE"
# the Doxygen HTML (README as the main page, docs/) when this build made it (target docs)
if [ -f "$build/docs/html/index.html" ]; then
  grep -q "Two commands" "$scratch/prefix/share/doc/attn/html/index.html"
fi
libdir=$(ls -d "$scratch"/prefix/lib*/ | head -1)
ls "$libdir"libattn.so.1 > /dev/null
# CMake package
cmake -S "$here/tests/install_consumer" -B "$scratch/consumer" -G Ninja \
      -DCMAKE_PREFIX_PATH="$scratch/prefix" > "$scratch/consumer.log"
cmake --build "$scratch/consumer" >> "$scratch/consumer.log"
"$scratch/consumer/consumer"
# pkg-config
export PKG_CONFIG_PATH="${libdir}pkgconfig"
cc -std=c99 -Wall -Werror "$here/tests/install_consumer/consumer.c" \
   "$here/tests/install_consumer/consumer_namespaced.c" $(pkg-config --cflags --libs attn) \
   -Wl,-rpath,"$libdir" -o "$scratch/consumer_pc"
"$scratch/consumer_pc"
# README's "Install and use (C, C++)" shows this consumer's CMake lines: keep them the same
for line in "find_package(attn 1.0 CONFIG REQUIRED)" "target_link_libraries(consumer PRIVATE attn::attn)"; do
  grep -qF "$line" "$here/tests/install_consumer/CMakeLists.txt"
  grep -qF "$line" "$here/README.md" || { echo "README.md lacks the tested line: $line" >&2; exit 1; }
done
grep -qF 'pkg-config --cflags --libs attn' "$here/README.md" ||
  { echo "README.md lacks the tested pkg-config line" >&2; exit 1; }
echo "OK: installed package found by find_package(attn) and pkg-config ($(pkg-config --modversion attn)); \"attn_c.h\" and <attn/attn_c.h>"
