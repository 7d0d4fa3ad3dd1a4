#!/usr/bin/env bash
# test_python_install: the Python package as users install it. pyproject.toml at the repository
# root builds libattn with scikit-build-core (host-only) and puts libattn.so.1 inside the
# package, whose sources are bindings/python/libattn:
#   1. the sdist (scikit-build-core's build_sdist, what `python -m build --sdist` calls): its
#      files are the library's sources, the Python package, the READMEs and the licences, the
#      same as the checkout has there (git), and nothing of a working tree;
#   2. `pip wheel .`: one cp3X-cp3X-linux_<arch> wheel with the library, the compiled
#      extension libattn._native (when nanobind imports in this Python), the Python files and
#      the licences (auditwheel repair when auditwheel is installed);
#   3. `pip install .` and `pip install -e .`: the installed package loads its own library
#      (and its extension, then required: LIBATTN_NATIVE=1) with $ATTN_LIBRARY unset, builds a
#      batch, runs bindings/python/README.md's "Ten lines"
#      and the attn-inspect command it installed;
#   4. `pip install libattn-<version>.tar.gz` (the sdist of 1.) into a second environment: it
#      builds the library from the sdist alone, and that package loads it and builds a batch.
#   [PYTHON=python3] python_install.sh <repository root> <scratch dir>
# Nothing is downloaded: fresh virtual environments with the system site-packages (numpy,
# scikit-build-core and nanobind, which scripts/setup.sh installs), --no-build-isolation --no-deps
# --no-index. The library is compiled once per format: the checkout's in <scratch>/build
# (-Cbuild-dir, shared by 2. and 3.), the sdist's in build/ of the folder pip unpacks it into,
# under <scratch>/tmp; through ccache when there is one (the sdist's compile commands are then
# the same relative to that build folder in every run, so a rerun hits).
# Prints "SKIP: ..." (ctest: Skipped) without scikit-build-core >= 1.0 (pyproject's requires).
set -euo pipefail
root=$(cd "$1" && pwd -P)
work=$2
python=${PYTHON:-python3}
t0=$SECONDS
if ! "$python" - <<'PY' 2> /dev/null
import sys
import scikit_build_core
sys.exit(0 if int(scikit_build_core.__version__.split(".")[0]) >= 1 else 1)
PY
then
  have=$("$python" -c "import scikit_build_core; print(scikit_build_core.__version__)" 2> /dev/null ||
         echo "not installed")
  echo "SKIP: test_python_install: scikit-build-core >= 1.0 (pyproject's build backend) is needed" \
       "in $python, found: $have (scripts/setup.sh pip:scikit_build_core installs it)"
  exit 0
fi
rm -rf "$work"
mkdir -p "$work/tmp"
work=$(cd "$work" && pwd -P)
settings=()
if command -v ccache > /dev/null; then
  settings+=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
             -Ccmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd "$root/.." && pwd)}
fi
# pip unpacks the sdist under $TMPDIR: here, inside the scratch dir (and CCACHE_BASEDIR)
export TMPDIR=$work/tmp
# ctest gives every binding test $ATTN_LIBRARY (this build's library): not this one
unset ATTN_LIBRARY
export ATTN_CUDA=OFF  # the default, and not whatever the caller's environment says
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# the compiled extension libattn._native is built (and then required below) when nanobind
# imports in this Python; without it the package is the ctypes layer alone
native=0
if "$python" -c "import nanobind" > /dev/null 2>&1; then
  native=1
fi
echo "libattn._native expected: $([ $native = 1 ] && echo yes || echo "no (nanobind not importable)")"

# venv <dir>: a fresh environment with the system site-packages, and its pip
venv() {
  "$python" -m venv --system-site-packages "$1"
}
pip_quiet() {  # pip_quiet <venv> <log> <pip arguments...>: the log's tail on failure
  local env=$1 log=$2
  shift 2
  "$env/bin/python" -m pip "$@" --no-build-isolation --no-deps > "$log" 2>&1 ||
    { tail -40 "$log"; echo "FAIL: pip $*" >&2; exit 1; }
}

# 1. the sdist, made in the checkout by the build backend, and its list of files
venv "$work/venv"
v1=$work/venv
(cd "$root" && "$v1/bin/python" -c '
import sys
from scikit_build_core.build import build_sdist
print(build_sdist(sys.argv[1]))' "$work/sdist") > "$work/sdist.log" 2>&1 ||
  { tail -40 "$work/sdist.log"; echo "FAIL: build_sdist" >&2; exit 1; }
sdists=("$work"/sdist/libattn-*.tar.gz)
[ ${#sdists[@]} -eq 1 ] || { echo "FAIL: expected one sdist, got: ${sdists[*]}"; exit 1; }
sdist=${sdists[0]}
# what git has (tracked, or new and not ignored) under the paths pyproject's sdist.include names
shipped=""
if git -C "$root" rev-parse --show-toplevel 2> /dev/null | grep -qxF "$root"; then
  shipped=$(git -C "$root" ls-files --cached --others --exclude-standard -- pyproject.toml \
              CMakeLists.txt cmake include src kernels 'bindings/python/libattn/*.py' \
              bindings/python/native \
              bindings/python/README.md README.md LICENSE NOTICE |
            while read -r f; do [ ! -f "$root/$f" ] || echo "$f"; done)
fi
"$v1/bin/python" - "$sdist" "$root" "$shipped" <<'PY'
import os, re, sys, tarfile
sdist, root, shipped = sys.argv[1:]
m = re.search(r"/(libattn-(\d+\.\d+\.\d+))\.tar\.gz$", sdist)
assert m, sdist
top = m.group(1)
with tarfile.open(sdist) as t:
    members = t.getmembers()
files = {x.name[len(top) + 1:] for x in members if x.isfile()}
assert all(x.name == top or x.name.startswith(top + "/") for x in members), "outside " + top
assert not [x.name for x in members if x.issym() or x.islnk()], "links in the sdist"
need = {"pyproject.toml", "PKG-INFO", "CMakeLists.txt", "LICENSE", "NOTICE", "README.md",
        "include/attn_c.h", "src/attn.map", "cmake/attnConfig.cmake.in", "cmake/attn.pc.in",
        "bindings/python/README.md", "bindings/python/libattn/__init__.py",
        "bindings/python/libattn/_generated.py", "bindings/python/native/_native.cpp",
        "bindings/python/native/CMakeLists.txt"}
assert need <= files, sorted(need - files)
assert [f for f in files if f.startswith("src/capi/")] and [f for f in files if f.startswith("kernels/")], \
    "no src/capi/ or kernels/"
tops = {f.split("/")[0] for f in files}
assert tops == {"pyproject.toml", "PKG-INFO", "CMakeLists.txt", "LICENSE", "NOTICE", "README.md",
                "bindings", "cmake", "include", "kernels", "src"}, sorted(tops)
# build dirs, venvs, caches, the package's _lib/, built files, dot files (.git, .gitignore)
local = re.compile(r"(^|/)(build[^/]*|[^/]*venv[^/]*|__pycache__|_lib|dist)/|"
                   r"\.(pyc|o|so|so\.\d+|a|whl)$|(^|/)\.")
assert not [f for f in files if local.search(f)], sorted(f for f in files if local.search(f))
assert not [f for f in files if f.startswith("bindings/") and
            not f.startswith(("bindings/python/libattn/", "bindings/python/README.md",
                              "bindings/python/native/"))]
for f in ("pyproject.toml", "include/attn_c.h", "LICENSE"):  # the checkout's files as they are
    with open(os.path.join(root, f), "rb") as g, tarfile.open(sdist) as t:
        assert t.extractfile(f"{top}/{f}").read() == g.read(), f
if shipped:  # exactly the checkout's files under those paths
    want = set(shipped.split("\n")) | {"PKG-INFO"}
    assert files == want, ("not in the sdist:", sorted(want - files),
                           "only in the sdist:", sorted(files - want))
else:
    print("note: not a git checkout: the sdist's list is not compared with git's")
print(f"sdist {os.path.basename(sdist)}: {len(files)} files, {os.path.getsize(sdist) // 1024} KiB")
PY

# 2. pip wheel of the checkout: one wheel, cp3X-cp3X-linux_<arch> (the compiled extension
#    libattn._native is built for this Python), with the library (a regular file, not a
#    symlink), the extension (when nanobind imports here: it is optional), the Python files,
#    LICENSE and NOTICE
t1=$SECONDS
root_settings=("${settings[@]}" -Cbuild-dir="$work/build")
pip_quiet "$v1" "$work/wheel.log" wheel -q "${root_settings[@]}" -w "$work/dist" "$root"
wheels=("$work"/dist/libattn-*.whl)
[ ${#wheels[@]} -eq 1 ] || { echo "FAIL: expected one wheel, got: ${wheels[*]}"; exit 1; }
wheel=${wheels[0]}
echo "pip wheel .: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) in $((SECONDS - t1)) s"
"$v1/bin/python" - "$wheel" "$root" "$native" <<'PY'
import re, stat, sys, zipfile
wheel, root, native = sys.argv[1:]
assert re.search(r"-cp3\d+-cp3\d+-linux_[a-z0-9_]+\.whl$", wheel), wheel
z = zipfile.ZipFile(wheel)
names = set(z.namelist())
ext = [n for n in names if re.fullmatch(r"libattn/_native\..*\.so", n)]
assert len(ext) == int(native), (native, ext)
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
assert "\n## Ten lines\n" in meta, "the long description is not bindings/python/README.md"
assert "attn-inspect = libattn.inspect_tool:main" in z.read(f"{dist}/entry_points.txt").decode()
# the package and its metadata only: no bindings/ prefix, no tests, no CMake install
assert {n.split("/")[0] for n in names} == {"libattn", dist}, sorted(names)
assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")], names
PY
if command -v auditwheel > /dev/null; then
  auditwheel repair -w "$work/wheelhouse" "$wheel" > "$work/auditwheel.log" 2>&1 ||
    { cat "$work/auditwheel.log"; exit 1; }
  repaired=$(ls "$work"/wheelhouse/libattn-*.whl)
  echo "auditwheel: $(basename "$repaired")"
  # the same library, no library grafted next to it (libattn needs only glibc)
  "$v1/bin/python" - "$repaired" <<'PY'
import re, sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
assert re.search(r"-cp3\d+-cp3\d+-manylinux_\d+_\d+_[a-z0-9_]+\.whl$", sys.argv[1]), sys.argv[1]
assert "libattn/_lib/libattn.so.1" in names and not [n for n in names if ".libs/" in n], names
PY
fi

# check_installed <venv>: the installed package, away from the source tree, loads its own
# library (and its compiled extension, required by LIBATTN_NATIVE=1 where nanobind imports
# here) and builds a batch
check_installed() {
  (cd "$work" && LIBATTN_NATIVE=$native "$1/bin/python" - "$1" "$native" <<'PY'
import importlib.metadata, os, sys
venv = os.path.realpath(sys.argv[1]) + "/"
native = sys.argv[2] == "1"
assert "ATTN_LIBRARY" not in os.environ
import libattn
assert os.path.realpath(libattn.__file__).startswith(venv), libattn.__file__
lib = libattn.load()
assert lib.origin == "bundled", (lib.origin, lib.path)
assert os.path.realpath(lib.path) == os.path.realpath(
    os.path.join(os.path.dirname(libattn.__file__), "_lib", "libattn.so.1")), lib.path
assert os.path.realpath(lib.path).startswith(venv) and not os.path.islink(lib.path), lib.path
with open("/proc/self/maps") as f:  # the process mapped that file, and no other libattn
    mapped = {line.split()[-1] for line in f
              if os.path.basename(line.split()[-1]).startswith("libattn")}
assert mapped == {os.path.realpath(lib.path)}, mapped
# the extension: inside the installed package, over that library (or absent, and ctypes alone)
assert (lib.native is not None) == native, (native, lib.native)
if native:
    ext = sys.modules["libattn._native"].__file__
    assert os.path.dirname(os.path.realpath(ext)) == os.path.dirname(
        os.path.realpath(libattn.__file__)), ext
    import ctypes
    assert lib.native.address("attn_build") == ctypes.cast(lib._dll.attn_build,
                                                            ctypes.c_void_p).value
assert ".".join(map(str, lib.version)) == libattn.__version__ == importlib.metadata.version("libattn")
spec = libattn.KvCacheSpec(block_size=16, num_kv_heads=8, head_size=128)
config = libattn.BuilderConfig(256, 8192, 4096, 32, device_capability=90)
batch = libattn.CommonMetadata(query_start_loc=[0, 1, 3], seq_lens=[5, 2],
                               block_table=[[1, 0], [2, 0]], slot_mapping=[20, 32, 33])
with lib.builder("FLASH_ATTN", spec, config) as b:
    md = b.build(batch)
    assert list(md["seq_lens"]) == [5, 2] and md["max_query_len"] == 2, dict(md)
print("installed libattn", libattn.__version__, "loaded", lib.path,
      "with libattn._native" if native else "(ctypes only)")
PY
  )
}

# 3. pip install . (what a user types in a checkout; the CMake build is the one above, so this
#    reconfigures and installs), then the installed package
t1=$SECONDS
pip_quiet "$v1" "$work/install.log" install -q "${root_settings[@]}" "$root"
echo "pip install .: $((SECONDS - t1)) s"
check_installed "$v1"
cd "$work"
# bindings/python/README.md's "Ten lines", as written there, in the installed package: its
# printed results are the ones its comments show
"$v1/bin/python" - "$root/bindings/python/README.md" > ten_lines.txt <<'PY'
import re, sys
text = open(sys.argv[1]).read()
block = re.search(r"## Ten lines\n```python\n(.*?)```", text, re.S).group(1)
exec(compile(block, "README.md: Ten lines", "exec"))
PY
diff <(printf 'ALWAYS\n[5 2] 2\n') ten_lines.txt ||
  { echo "README's ten lines printed something else" >&2; exit 1; }
echo '{"query_lens": [1, 32], "context_lens": [40, 0], "block_size": 16, "backends": ["FLASH_ATTN"]}' > batch.json
"$v1/bin/attn-inspect" batch.json --svg batch.svg > tables.txt
grep -q "== FLASH_ATTN: cudagraph" tables.txt
grep -q "<svg" batch.svg

# an editable install (pip install -e .): the sources are imported from bindings/python/libattn,
# the library is installed under site-packages and found through the package's __path__
pip_quiet "$v1" "$work/editable.log" install -q "${root_settings[@]}" -e "$root"
LIBATTN_NATIVE=$native "$v1/bin/python" - "$v1" "$root" <<'PY'
import os, sys
venv, root = os.path.realpath(sys.argv[1]) + "/", os.path.realpath(sys.argv[2])
import libattn
assert os.path.realpath(libattn.__file__) == os.path.join(
    root, "bindings", "python", "libattn", "__init__.py"), libattn.__file__
lib = libattn.load()
assert lib.origin == "bundled" and os.path.realpath(lib.path).startswith(venv), (lib.origin, lib.path)
assert (lib.native is not None) == (os.environ["LIBATTN_NATIVE"] == "1"), lib.native
PY

# 4. pip install of the sdist, into an environment of its own: pip unpacks it under $TMPDIR and
#    builds there (the CMake build in that folder's build/, relative, so that ccache hits)
venv "$work/venv-sdist"
t1=$SECONDS
pip_quiet "$work/venv-sdist" "$work/install-sdist.log" install -q "${settings[@]}" \
  -Cbuild-dir=build/sdist "$sdist"
echo "pip install $(basename "$sdist"): $((SECONDS - t1)) s"
check_installed "$work/venv-sdist"
"$work/venv-sdist/bin/attn-inspect" batch.json --svg batch-sdist.svg > tables-sdist.txt
diff tables.txt <(sed 's/batch-sdist\.svg/batch.svg/' tables-sdist.txt)
cmp batch.svg batch-sdist.svg
echo "OK: the sdist holds the sources, pip wheel / pip install (and -e) of the checkout and" \
     "pip install of the sdist bundle libattn.so.1$([ $native = 1 ] && echo " and libattn._native");" \
     "the installed package loads it without ATTN_LIBRARY and attn-inspect works ($((SECONDS - t0)) s)"
