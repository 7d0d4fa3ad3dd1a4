"""ABI 1.3 from Python: attn_backend_info through Library.backend_info, and attn_get_api's
table checked against the header's ATTN_API_FUNCTIONS lists and ctypes' own symbols."""
import ctypes
import os
import re

import pytest

import libattn
from conftest import ROOT
from libattn.enums import KvCacheKind
from libattn.registry import BackendOrigin
from libattn.structs import attn_api_t


def test_every_backend_describes_itself(lib):
    infos = lib.backend_infos()
    assert [i.name for i in infos] == lib.backends()
    assert [i.index for i in infos] == list(range(lib.backend_count()))
    for info in infos:
        assert info.origin == BackendOrigin.BUILTIN
        assert info.kinds, info.name
        assert isinstance(info.vllm_release, str)
    # between them the built-in backends build for every kind of spec
    assert frozenset().union(*(i.kinds for i in infos)) == frozenset(KvCacheKind)


def test_vllm_names(lib):
    """ABI 1.7: each backend's vLLM names, and each name builds with that backend's builder."""
    infos = {i.name: i for i in lib.backend_infos()}
    assert infos["MAMBA2"].vllm_names == ("MAMBA2", "MAMBA2_ATTN")
    assert infos["LINEAR_ATTN"].vllm_names == ("LINEAR_ATTN", "LINEAR")
    assert infos["ROCM_AITER_MLA"].vllm_names == ("ROCM_AITER_MLA", "ROCM_AITER_TRITON_MLA",
                                                  "AITER_TRITON_MLA")
    assert infos["FLASH_ATTN"].vllm_names == ("FLASH_ATTN",)
    assert infos["TREE_ATTN"].vllm_names == ()
    for info in infos.values():
        assert all(n and "," not in n and " " not in n for n in info.vllm_names), info
    spec = libattn.KvCacheSpec(block_size=16, num_kv_heads=1, head_size=1,
                               kind=KvCacheKind.MAMBA, mamba_chunk_size=8)
    cfg = libattn.BuilderConfig(256, 8192, 4096, 32)
    for name, backend in (("MAMBA2_ATTN", "MAMBA2"), ("MAMBA1_ATTN", "MAMBA1"),
                          ("SHORT_CONV_ATTN", "SHORT_CONV"), ("LINEAR", "LINEAR_ATTN")):
        with lib.builder(name, spec, cfg) as b:
            assert b.backend_name == backend
        assert (lib.backend_cudagraph_support(name, spec, cfg)
                == lib.backend_cudagraph_support(backend, spec, cfg))
    with pytest.raises(libattn.NotFound) as e:
        lib.builder("mamba2_attn", spec, cfg)
    assert "unknown backend 'mamba2_attn'" in e.value.message


def test_backend_info_past_the_end(lib):
    with pytest.raises(libattn.NotFound) as e:
        lib.backend_info(lib.backend_count())
    assert "out of range" in e.value.message


def test_plugin_backends_say_so(lib, plugin_path):
    with lib.load_plugin(plugin_path):
        info = lib.backend_infos()[-1]
        assert info.name == "EXAMPLE_PAGED"
        assert info.origin == BackendOrigin.PLUGIN and info.vllm_release == "plugin"
        assert info.vllm_names == ()
        assert info.accepts(KvCacheKind.FULL_ATTENTION) and info.kinds == frozenset(KvCacheKind)


def _header_function_table():
    """The names of ATTN_API_FUNCTIONS, in table order, read from the header itself."""
    with open(os.path.join(ROOT, "include", "attn_c.h")) as f:
        header = f.read()
    versions = re.findall(r"^#define ATTN_API_FUNCTIONS_(1_[0-9]+)\(X\)", header, re.M)
    names = []
    for v in versions:
        body = re.search(r"^#define ATTN_API_FUNCTIONS_%s\(X\)\s*\\\n((?:.*\\\n)*.*)$" % v,
                         header, re.M).group(1)
        names += re.findall(r"\bX\((attn_[a-z0-9_]+)\)", body)
    return names


def test_get_api_table_is_the_exported_symbols(lib):
    names = _header_function_table()
    assert set(names) == set(libattn.functions.SIGNATURES) | set(
        libattn.functions.OPTIONAL_SIGNATURES)
    major, minor = ctypes.c_uint32(), ctypes.c_uint32()
    lib.raw.attn_get_version(ctypes.byref(major), ctypes.byref(minor), None)
    table = ctypes.POINTER(attn_api_t)()
    get_api = lib.optional_function("attn_get_api")
    lib.check(get_api(major.value, minor.value, ctypes.byref(table)))
    size = table.contents.struct_size
    ptr = ctypes.sizeof(ctypes.c_void_p)
    assert size == ctypes.sizeof(ctypes.c_size_t) + len(names) * ptr
    members = (ctypes.c_void_p * len(names)).from_address(
        ctypes.addressof(table.contents) + ctypes.sizeof(ctypes.c_size_t))
    for k, name in enumerate(names):
        fn = getattr(lib.raw, name, None) or lib.optional_function(name)
        assert members[k] == ctypes.cast(fn, ctypes.c_void_p).value, name


def test_get_api_refuses_a_newer_minor(lib):
    major, minor = ctypes.c_uint32(), ctypes.c_uint32()
    lib.raw.attn_get_version(ctypes.byref(major), ctypes.byref(minor), None)
    table = ctypes.POINTER(attn_api_t)()
    with pytest.raises(libattn.AbiMismatch) as e:
        lib.check(lib.optional_function("attn_get_api")(major.value, minor.value + 1,
                                                        ctypes.byref(table)))
    assert f"{major.value}.{minor.value + 1}" in e.value.message
    assert not table


def test_optional_functions_of_an_older_library(lib, monkeypatch):
    class Older:  # a library without the 1.3 symbols
        pass
    monkeypatch.setattr(lib, "_dll", Older())
    monkeypatch.delattr(lib.raw, "attn_backend_info", raising=False)
    with pytest.raises(libattn.Unsupported) as e:
        lib.backend_info(0)
    assert "has no attn_backend_info (ABI 1.3)" in e.value.message
