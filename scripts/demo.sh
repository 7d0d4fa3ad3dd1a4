#!/usr/bin/env bash
# Builds libattn and runs the C demo: it loads libattn.so with dlopen, lists every backend with
# its CUDA graph support, and builds FLASH_ATTN metadata for a sample batch.
#   scripts/demo.sh            (build directory: build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DATTN_CUDA_ARCHITECTURES="${ATTN_CUDA_ARCHITECTURES:-80;90}" > build.log 2>&1 || { cat build.log; exit 1; }
cmake --build build --target attn attn_demo attn_example_plugin >> build.log 2>&1 || { tail -50 build.log; exit 1; }
rm -f build.log
./build/examples/attn_demo "$root/build/libattn.so.1" --plugin "$root/build/examples/libattn_example_plugin.so"
