#!/usr/bin/env bash
# Self-test of the ABI guard (scripts/check_abi.sh): the guard must fail when the library no
# longer matches the baseline. Three doctored copies of abi/attn.abi.xml stand for three
# releases whose library would break old callers: a function removed, two fields of a struct
# swapped, a struct shrunk. The real baseline must still pass.
# Usage: scripts/check_abi_guard.sh build/libattn.so
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=$1
# abidiff reads the types from DWARF: a build without debug information (plain Release)
# describes functions but no struct layout, so the guard cannot judge it. Exit 77 = skipped.
if ! readelf -S --wide "$lib" 2>/dev/null | grep "\.debug_info" > /dev/null; then  # no -q: an early exit would SIGPIPE readelf under pipefail
  echo "SKIP: $lib has no debug information (a Release build without -g); the ABI type check needs it: build with RelWithDebInfo or Debug, as scripts/test.sh does"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$here/abi/attn.abi.xml" "$work" <<'PY'
import sys
base, out = open(sys.argv[1]).read(), sys.argv[2]
def write(name, text):
    assert text != base, name
    open(f"{out}/{name}.xml", "w").write(text)
anchor = "<elf-symbol name='attn_build_for_drafting'"
write("removed", base.replace(anchor, "<elf-symbol name='attn_gone_in_this_release' version='ATTN_1.0' "
      "is-default-version='yes' type='func-type' binding='global-binding' visibility='default-visibility' "
      "is-defined='yes'/>\n    " + anchor, 1))
i = base.index("<class-decl name='attn_batch_split'")
j = base.index("</class-decl>", i)
seg = base[i:j]
swapped = seg.replace("name='num_decodes'", "name='@'").replace("name='num_extends'", "name='num_decodes'")
write("reordered", base[:i] + swapped.replace("name='@'", "name='num_extends'") + base[j:])
shrunk = seg.replace("size-in-bits='448'", "size-in-bits='384'", 1)
write("shrunk", base[:i] + shrunk[:shrunk.rindex("<data-member")] + base[j:])
PY
"$here/scripts/check_abi.sh" "$lib" > "$work/real.log" 2>&1 || { cat "$work/real.log"; echo "FAIL: the real baseline does not pass"; exit 1; }
for case in removed reordered shrunk; do
  if ATTN_ABI_BASELINE="$work/$case.xml" "$here/scripts/check_abi.sh" "$lib" > "$work/$case.log" 2>&1; then
    cat "$work/$case.log"; echo "FAIL: the guard accepted a baseline with a $case ABI element"; exit 1
  fi
  echo "OK: guard refuses the '$case' change: $(grep '^FAIL' "$work/$case.log" | head -1)"
done
