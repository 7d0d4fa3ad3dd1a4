"""Loading, version, status strings, devices, the registry and registry-level queries."""
import ctypes
import os

import pytest

import libattn
from libattn.functions import OPTIONAL_SIGNATURES, SIGNATURES
from conftest import config, spec


def test_version_and_check(lib):
    major, minor, _ = lib.version
    assert major == libattn.ABI_VERSION[0] and minor >= libattn.ABI_VERSION[1]
    lib.check_version(1, 0)
    lib.check_version(*libattn.ABI_VERSION)
    with pytest.raises(libattn.AbiMismatch) as e:
        lib.check_version(2, 0)
    assert e.value.code == libattn.Status.ABI_MISMATCH
    assert "2" in e.value.message and f"{major}.{minor}" in e.value.message


def test_status_strings_are_the_librarys(lib):
    assert lib.status_string(0) == "ok"
    assert lib.status_string(1) == "invalid argument"
    assert lib.status_string(99) == "unknown status"
    for code in libattn.Status:
        assert isinstance(lib.status_string(code), str)


def test_missing_library_and_env(monkeypatch, tmp_path):
    with pytest.raises(libattn.NotFound) as e:
        libattn.Library(str(tmp_path / "no-such-libattn.so"))
    assert "no-such-libattn.so" in e.value.message
    monkeypatch.setenv("ATTN_LIBRARY", os.environ["ATTN_LIBRARY"])
    assert libattn.Library().path == os.environ["ATTN_LIBRARY"]


def test_default_search_order(monkeypatch, tmp_path):
    """load()'s order: $ATTN_LIBRARY, else the package's bundled library (a wheel's
    libattn/_lib/libattn.so.1), else the system loader; an error names all three."""
    real = os.environ["ATTN_LIBRARY"]
    bundled = tmp_path / "_lib" / "libattn.so.1"
    bundled.parent.mkdir()
    os.symlink(os.path.realpath(real), bundled)
    monkeypatch.setattr(libattn.library, "BUNDLED_PATH", str(bundled))
    assert (libattn.Library().path, libattn.Library().origin) == (real, "env")  # env overrides
    monkeypatch.delenv("ATTN_LIBRARY")
    lib = libattn.Library()
    assert (lib.path, lib.origin) == (str(bundled), "bundled") and lib.version[0] == 1
    bundled.unlink()  # no bundled library: the system loader, which finds none here
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(libattn.library, "DEFAULT_NAME", "libattn-no-such.so.1")
    with pytest.raises(libattn.NotFound) as e:
        libattn.Library()
    m = e.value.message
    assert "ATTN_LIBRARY (not set)" in m and str(bundled) in m and "libattn-no-such.so.1" in m
    assert "pip install . in a libattn checkout" in m and "cmake --install" in m
    monkeypatch.setenv("ATTN_LIBRARY", str(tmp_path / "nothing.so"))  # a bad override is named
    with pytest.raises(libattn.NotFound) as e:
        libattn.Library()
    assert "$ATTN_LIBRARY=" in e.value.message and "nothing.so" in e.value.message


def test_a_library_without_the_symbols_is_refused():
    libc = ctypes.util.find_library("m") or "libm.so.6"
    with pytest.raises(libattn.NotFound) as e:
        libattn.Library(libc)
    assert "attn_error_code" in e.value.message


def test_raw_table_has_every_exported_symbol(lib):
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..")
    with open(os.path.join(root, "abi", "symbols.txt")) as f:
        names = {line.split("@")[0] for line in f if line.startswith("attn_")}
    assert names == set(SIGNATURES) | set(OPTIONAL_SIGNATURES)
    for name in SIGNATURES:
        assert callable(getattr(lib.raw, name))
    for name in OPTIONAL_SIGNATURES:  # ABI 1.3: resolved on first use
        assert callable(lib.optional_function(name))


def test_device_count(lib):
    assert lib.device_count(libattn.DeviceType.CPU) == 1
    try:
        assert lib.device_count() >= 0  # a CUDA build: 0 without a visible GPU
    except libattn.Unsupported as e:  # a host-only build says so
        assert e.code == libattn.Status.UNSUPPORTED
        assert e.message == "libattn was built without CUDA support"
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.device_count(7)
    assert "device_type=7" in e.value.message


def test_registry_lists_builtins_first(lib):
    names = lib.backends()
    origins = [i.origin for i in lib.backend_infos()]
    assert origins == sorted(origins)  # BUILTIN (0) before PLUGIN (1)
    assert lib.backend_count() == len(names)
    with pytest.raises(libattn.NotFound) as e:
        lib.backend_name(len(names))
    assert str(len(names)) in e.value.message


def test_cudagraph_support_without_a_builder(lib):
    s = spec()
    cg = libattn.CudagraphSupport
    assert lib.backend_cudagraph_support("FLASH_ATTN", s, config(90)) == cg.ALWAYS
    assert lib.backend_cudagraph_support("FLASH_ATTN", s, config(80)) == cg.UNIFORM_BATCH
    assert lib.backend_cudagraph_support("TRITON_ATTN", s, config(80)) == cg.ALWAYS
    assert lib.backend_cudagraph_support("FLASHINFER", s, config(90)) == cg.UNIFORM_BATCH  # XQA (0.33)
    assert lib.backend_cudagraph_support("FLASHINFER", s, config(100)) == cg.UNIFORM_BATCH
    assert lib.backend_cudagraph_support("TREE_ATTN", s, config(90)) == cg.NEVER
    with pytest.raises(libattn.NotFound):
        lib.backend_cudagraph_support("NO_SUCH", s, config(90))
    bad = libattn.KvCacheSpec(block_size=0, num_kv_heads=8, head_size=128)
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.backend_cudagraph_support("FLASH_ATTN", bad, config(90))
    assert "block_size=0" in e.value.message


def test_workspace_size_and_min_support(lib):
    assert lib.builder_workspace_size("FLASHINFER", spec(), config(90)) > 0
    with lib.builder("FLASH_ATTN", spec(), config(90)) as fa, \
            lib.builder("FLASHINFER", spec(), config(90)) as fi:
        assert lib.min_cudagraph_support([fa]) == libattn.CudagraphSupport.ALWAYS
        assert lib.min_cudagraph_support([fa, fi]) == libattn.CudagraphSupport.UNIFORM_BATCH
    assert lib.min_cudagraph_support([]) == libattn.CudagraphSupport.ALWAYS  # as in vLLM


def test_infer_global_hyperparameters(lib):
    P = libattn.PerLayerParams
    g, same_window, same_all = lib.infer_global_hyperparameters([P(-1, None, 0.125), P(-1, None, 0.125)])
    assert (g.window_left, g.logits_soft_cap, g.sm_scale, same_window, same_all) == (-1, None, 0.125, True, True)
    g, same_window, same_all = lib.infer_global_hyperparameters([P(-1, None, 0.125), P(127, None, 0.125)])
    assert not same_window and not same_all
    with pytest.raises(libattn.InvalidArgument):
        lib.infer_global_hyperparameters([])


def test_default_load_is_cached(monkeypatch):
    monkeypatch.setattr(libattn.library, "_default", None)
    assert libattn.load() is libattn.load()
