#!/usr/bin/env bash
# Compares the dynamic symbols libattn exports with the committed list abi/symbols.txt.
# Usage: scripts/check_symbols.sh build/libattn.so abi/symbols.txt
# After adding a function on purpose: scripts/check_symbols.sh --update build/libattn.so abi/symbols.txt
set -euo pipefail
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
lib=$1 list=$2
actual=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -v '^ATTN_[0-9.]*$' | LC_ALL=C sort)
if [ $update = 1 ]; then
  { echo "# Symbols exported by libattn.so (name@@version node); checked by scripts/check_symbols.sh."
    echo "$actual"; } > "$list"
  echo "wrote $(echo "$actual" | wc -l) symbols to $list"
  exit 0
fi
foreign=$(echo "$actual" | grep -v '^attn_' || true)
if [ -n "$foreign" ]; then
  echo "FAIL: $lib exports symbols outside attn_*:"; echo "$foreign"; exit 1
fi
expected=$(grep -v '^#' "$list" | LC_ALL=C sort)
if [ "$actual" != "$expected" ]; then
  echo "FAIL: exported symbols differ from $list (- committed, + built):"
  diff <(echo "$expected") <(echo "$actual") | grep '^[<>]' | sed 's/^</-/; s/^>/+/'
  exit 1
fi
echo "OK: $(echo "$actual" | wc -l) exported symbols, all attn_*, equal to $list"
