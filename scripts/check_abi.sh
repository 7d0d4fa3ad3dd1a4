#!/usr/bin/env bash
# The ABI guard: abidiff (libabigail) of the built libattn.so against the committed baseline
# abi/attn.abi.xml, over the public header only. Fails on any ABI change, compatible or not:
# an intended addition updates the baseline in the same commit (docs/abi-policy.md).
# Usage: scripts/check_abi.sh build/libattn.so [--update]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=$1
# abidiff reads the types from DWARF: a build without debug information (plain Release)
# describes functions but no struct layout, so the guard cannot judge it. Exit 77 = skipped.
if ! readelf -S --wide "$lib" 2>/dev/null | grep "\.debug_info" > /dev/null; then  # no -q: an early exit would SIGPIPE readelf under pipefail
  echo "SKIP: $lib has no debug information (a Release build without -g); the ABI type check needs it: build with RelWithDebInfo or Debug, as scripts/test.sh does"
  exit 77
fi
baseline=${ATTN_ABI_BASELINE:-$here/abi/attn.abi.xml}  # the guard self-test points it elsewhere
if ! command -v abidiff >/dev/null; then
  echo "FAIL: abidiff not found (apt-get install abigail-tools)"; exit 1
fi
suppressions=$here/abi/attn.abignore
if [ "${2:-}" = "--update" ]; then
  # Only the exported attn_* interfaces and the types of include/; no locations, no machine
  # paths (compile-unit paths are made relative to the source tree).
  abidw --headers-dir "$here/include" --drop-private-types --exported-interfaces-only \
        --suppressions "$suppressions" --short-locs --no-comp-dir-path --no-corpus-path \
        --out-file "$baseline" "$lib"
  sed -i "s|path='$here/|path='|g" "$baseline"
  echo "wrote $baseline ($(grep -c '<function-decl' "$baseline") functions)"; exit 0
fi
report=$(mktemp)
trap 'rm -f "$report"' EXIT
set +e
abidiff --headers-dir2 "$here/include" --drop-private-types \
        "$baseline" "$lib" > "$report" 2>&1
status=$?
set -e
# abidiff's exit code is a bit mask: 1 error, 2 usage, 4 ABI change, 8 incompatible change
# (libabigail sets 8 for removed symbols; a changed struct layout comes back as 4).
if [ $status -eq 0 ]; then
  echo "OK: libattn.so has the ABI of abi/attn.abi.xml"; exit 0
fi
cat "$report"
[ $((status & 1)) -ne 0 ] && echo "FAIL: abidiff error"
[ $((status & 2)) -ne 0 ] && echo "FAIL: abidiff usage error"
[ $((status & 8)) -ne 0 ] && echo "FAIL: incompatible ABI change"
[ $((status & 4)) -ne 0 ] && [ $((status & 8)) -eq 0 ] && echo "FAIL: ABI change (a type or a function changed; abidiff leaves it to you whether callers break: read the report above. Only a deliberate minor addition updates the baseline, docs/abi-policy.md)"
exit 1
