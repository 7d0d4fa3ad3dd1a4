#!/usr/bin/env bash
# test_python_install: `pip install ./bindings/python` works and gives a usable package: a fresh
# virtual environment (system site-packages for numpy; --no-build-isolation with the machine's
# setuptools and wheel, so no download), the package installed from a copy of the folder (pip
# writes build files next to the sources), then the installed package, not the source tree,
# loads $ATTN_LIBRARY, builds a batch and runs the attn-inspect command it installed.
#   python_install.sh <bindings/python> <scratch dir>
set -euo pipefail
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
cp -r "$src" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation "$work/src"
cd "$work"   # away from the source tree: the import must find the installed package
"$work/venv/bin/python" - <<'PY'
import libattn, os
assert os.path.dirname(libattn.__file__).startswith(os.path.realpath(os.getcwd()) + "/venv/"), libattn.__file__
lib = libattn.load()
spec = libattn.KvCacheSpec(block_size=16, num_kv_heads=8, head_size=128)
config = libattn.BuilderConfig(256, 8192, 4096, 32, device_capability=90)
batch = libattn.CommonMetadata(query_start_loc=[0, 1, 3], seq_lens=[5, 2],
                               block_table=[[1, 0], [2, 0]], slot_mapping=[20, 32, 33])
with lib.builder("FLASH_ATTN", spec, config) as b:
    md = b.build(batch)
    assert list(md["seq_lens"]) == [5, 2] and md["max_query_len"] == 2, dict(md)
print("installed libattn", libattn.__version__, "from", libattn.__file__)
PY
echo '{"query_lens": [1, 32], "context_lens": [40, 0], "block_size": 16, "backends": ["FLASH_ATTN"]}' > batch.json
"$work/venv/bin/attn-inspect" batch.json --svg batch.svg > tables.txt
grep -q "== FLASH_ATTN: cudagraph" tables.txt
grep -q "<svg" batch.svg
echo "OK: pip install of bindings/python, the installed package and attn-inspect work"
