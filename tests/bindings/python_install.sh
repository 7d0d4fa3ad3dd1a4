#!/usr/bin/env bash
# test_python_install: the wheel. `pip wheel` and `pip install` of bindings/python build libattn
# with scikit-build-core (the CMake project at the repository root, host-only) and put
# libattn.so.1 inside the package; the installed package then loads its own library with
# $ATTN_LIBRARY unset, builds a batch and runs the attn-inspect command it installed; an
# editable install (-e) finds the library too.
#   [PYTHON=python3] python_install.sh <bindings/python> <scratch dir>
# Nothing is downloaded: a fresh virtual environment with the system site-packages (numpy and
# scikit-build-core, which scripts/setup.sh installs), --no-build-isolation --no-deps. pip builds
# from the real folder (in-tree since pip 21.3: pyproject's cmake.source-dir "../.." must
# resolve) with the CMake build in the scratch dir (-Cbuild-dir), through ccache when there is
# one. With auditwheel installed the wheel is also repaired to a manylinux tag.
# Prints "SKIP: ..." (ctest: Skipped) without scikit-build-core or with a pip older than 21.3.
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
python=${PYTHON:-python3}
t0=$SECONDS
if ! "$python" -c "import scikit_build_core" 2> /dev/null; then
  echo "SKIP: test_python_install: scikit-build-core is not installed for $python" \
       "(pyproject's build backend; scripts/setup.sh pip:scikit_build_core installs it)"
  exit 0
fi
rm -rf "$work"
mkdir -p "$work"
"$python" -m venv --system-site-packages "$work/venv"
venv=$(cd "$work/venv" && pwd -P)
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
if ! "$venv/bin/python" - <<'PY'
import sys, pip
sys.exit(0 if tuple(int(x) for x in pip.__version__.split(".")[:2]) >= (21, 3) else 1)
PY
then
  echo "SKIP: test_python_install: pip $("${pip[@]}" --version | cut -d' ' -f2) copies a local" \
       "folder before building (before 21.3), so cmake.source-dir \"../..\" would not resolve"
  exit 0
fi
settings=(-Cbuild-dir="$work/build")
if command -v ccache > /dev/null; then
  settings+=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
             -Ccmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd "$src/../.." && pwd)}
fi
# ctest gives every binding test $ATTN_LIBRARY (this build's library): not this one
unset ATTN_LIBRARY
export ATTN_CUDA=OFF  # the default, and not whatever the caller's environment says

# 1. pip wheel: one wheel, py3-none-linux_<arch>, with the library (a regular file, not a
#    symlink), the Python files, LICENSE and NOTICE
"${pip[@]}" wheel -q --no-build-isolation --no-deps "${settings[@]}" -w "$work/dist" "$src" \
  > "$work/wheel.log" 2>&1 || { tail -40 "$work/wheel.log"; exit 1; }
wheels=("$work"/dist/libattn-*.whl)
[ ${#wheels[@]} -eq 1 ] || { echo "FAIL: expected one wheel, got: ${wheels[*]}"; exit 1; }
wheel=${wheels[0]}
echo "built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) in $((SECONDS - t0)) s"
"$venv/bin/python" - "$wheel" "$src/../.." <<'PY'
import re, stat, sys, zipfile
wheel, root = sys.argv[1:]
assert re.search(r"-py3-none-linux_[a-z0-9_]+\.whl$", wheel), wheel
z = zipfile.ZipFile(wheel)
names = set(z.namelist())
lib = z.getinfo("libattn/_lib/libattn.so.1")
assert not stat.S_ISLNK(lib.external_attr >> 16) and lib.file_size > 100_000, lib
with z.open(lib) as f:
    assert f.read(4) == b"\x7fELF"
for need in ("libattn/__init__.py", "libattn/library.py", "libattn/_generated.py"):
    assert need in names, need
dist = [n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA")][0]
for lic in ("LICENSE", "NOTICE"):
    with open(f"{root}/{lic}", "rb") as f:
        assert z.read(f"{dist}/licenses/{lic}") == f.read(), lic
meta = z.read(f"{dist}/METADATA").decode()
assert "License-Expression: Apache-2.0" in meta and "License-File: NOTICE" in meta, meta
assert "attn-inspect = libattn.inspect_tool:main" in z.read(f"{dist}/entry_points.txt").decode()
assert not [n for n in names if n.startswith(("include/", "lib/", "share/")) or "/include/" in n], names
PY
if command -v auditwheel > /dev/null; then
  auditwheel repair -w "$work/wheelhouse" "$wheel" > "$work/auditwheel.log" 2>&1 ||
    { cat "$work/auditwheel.log"; exit 1; }
  repaired=$(ls "$work"/wheelhouse/libattn-*.whl)
  echo "auditwheel: $(basename "$repaired")"
  # the same library, no library grafted next to it (libattn needs only glibc)
  "$venv/bin/python" - "$repaired" <<'PY'
import re, sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
assert re.search(r"-py3-none-manylinux_\d+_\d+_[a-z0-9_]+\.whl$", sys.argv[1]), sys.argv[1]
assert "libattn/_lib/libattn.so.1" in names and not [n for n in names if ".libs/" in n], names
PY
fi

# 2. pip install of the folder (what a user types; the CMake build is the one above, so this
#    reconfigures and installs)
t1=$SECONDS
"${pip[@]}" install -q --no-build-isolation --no-deps "${settings[@]}" "$src" \
  > "$work/install.log" 2>&1 || { tail -40 "$work/install.log"; exit 1; }
echo "pip install ./bindings/python: $((SECONDS - t1)) s"

# 3. the installed package, away from the source tree, loads its own library
cd "$work"
"$venv/bin/python" - "$venv" <<'PY'
import importlib.metadata, os, sys
venv = sys.argv[1] + "/"
assert "ATTN_LIBRARY" not in os.environ
import libattn
assert os.path.realpath(libattn.__file__).startswith(venv), libattn.__file__
lib = libattn.load()
assert lib.origin == "bundled", (lib.origin, lib.path)
assert os.path.realpath(lib.path) == os.path.realpath(
    os.path.join(os.path.dirname(libattn.__file__), "_lib", "libattn.so.1")), lib.path
assert os.path.realpath(lib.path).startswith(venv) and not os.path.islink(lib.path), lib.path
with open("/proc/self/maps") as f:  # the process mapped that file, and no other libattn
    mapped = {line.split()[-1] for line in f if "libattn" in line.split()[-1]}
assert mapped == {os.path.realpath(lib.path)}, mapped
assert ".".join(map(str, lib.version)) == libattn.__version__ == importlib.metadata.version("libattn")
spec = libattn.KvCacheSpec(block_size=16, num_kv_heads=8, head_size=128)
config = libattn.BuilderConfig(256, 8192, 4096, 32, device_capability=90)
batch = libattn.CommonMetadata(query_start_loc=[0, 1, 3], seq_lens=[5, 2],
                               block_table=[[1, 0], [2, 0]], slot_mapping=[20, 32, 33])
with lib.builder("FLASH_ATTN", spec, config) as b:
    md = b.build(batch)
    assert list(md["seq_lens"]) == [5, 2] and md["max_query_len"] == 2, dict(md)
print("installed libattn", libattn.__version__, "loaded", lib.path)
PY
# bindings/python/README.md's "Ten lines", as written there, in the installed package: its
# printed results are the ones its comments show
"$venv/bin/python" - "$src/README.md" > ten_lines.txt <<'PY'
import re, sys
text = open(sys.argv[1]).read()
block = re.search(r"## Ten lines\n```python\n(.*?)```", text, re.S).group(1)
exec(compile(block, "README.md: Ten lines", "exec"))
PY
diff <(printf 'ALWAYS\n[5 2] 2\n') ten_lines.txt ||
  { echo "README's ten lines printed something else" >&2; exit 1; }
echo '{"query_lens": [1, 32], "context_lens": [40, 0], "block_size": 16, "backends": ["FLASH_ATTN"]}' > batch.json
"$venv/bin/attn-inspect" batch.json --svg batch.svg > tables.txt
grep -q "== FLASH_ATTN: cudagraph" tables.txt
grep -q "<svg" batch.svg

# 4. an editable install (pip install -e): the sources are imported from bindings/python, the
#    library is installed under site-packages and found through the package's __path__
"${pip[@]}" install -q --no-build-isolation --no-deps "${settings[@]}" -e "$src" \
  > "$work/editable.log" 2>&1 || { tail -40 "$work/editable.log"; exit 1; }
"$venv/bin/python" - "$venv" "$src" <<'PY'
import os, sys
venv, src = sys.argv[1] + "/", os.path.realpath(sys.argv[2]) + "/"
import libattn
assert os.path.realpath(libattn.__file__).startswith(src), libattn.__file__
lib = libattn.load()
assert lib.origin == "bundled" and os.path.realpath(lib.path).startswith(venv), (lib.origin, lib.path)
PY
echo "OK: pip wheel / pip install (and -e) of bindings/python bundle libattn.so.1; the installed" \
     "package loads it without ATTN_LIBRARY and attn-inspect works ($((SECONDS - t0)) s)"
