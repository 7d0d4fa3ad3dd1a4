"""scripts/gen_bindings.py on headers that attn_c.h may grow into: new functions, their PFN_
typedefs, a function table struct, an X-macro list, a new struct with its macros; and a
declaration it cannot read is an error, never dropped. Needs no library."""
import ctypes
import importlib.util
import os
import sys

import pytest

from conftest import ROOT

_spec = importlib.util.spec_from_file_location(
    "gen_bindings", os.path.join(ROOT, "scripts", "gen_bindings.py"))
gen = importlib.util.module_from_spec(_spec)
sys.modules["gen_bindings"] = gen  # dataclasses look their module up
_spec.loader.exec_module(gen)

HEADER = """
#ifndef ATTN_C_H_
#define ATTN_C_H_
#include <stddef.h>
#include <stdint.h>
#define ATTN_VERSION_MAJOR 1
#define ATTN_VERSION_MINOR 3
#define ATTN_VERSION_PATCH 4
#define ATTN_API __attribute__((visibility("default")))
#define ATTN_NOEXCEPT
#define ATTN_BEGIN_DECL
#define ATTN_END_DECL
ATTN_BEGIN_DECL
typedef struct attn_error attn_error_t; /* a handle */
typedef struct CUstream_st* attn_stream_t;
typedef enum attn_color { ATTN_COLOR_RED = 0, ATTN_COLOR_DARK_BLUE = 2 } attn_color_t;
/** A struct of ABI 1.3. */
typedef struct attn_backend_info {
  size_t struct_size;        /**< size */
  const char* name;          /**< name */
  int32_t (*probe)(void* ctx, const char* what); /**< a callback */
  double weight;             /**< weight */
  int32_t color;             /**< one of attn_color_t */
} attn_backend_info_t;
#define ATTN_BACKEND_INFO_STRUCT_SIZE (offsetof(attn_backend_info_t, color) + sizeof(int32_t))
#define ATTN_BACKEND_INFO_INIT { ATTN_BACKEND_INFO_STRUCT_SIZE, NULL, NULL, 1, ATTN_COLOR_RED }
ATTN_API size_t attn_backend_count(void) ATTN_NOEXCEPT;
ATTN_API attn_error_t* attn_backend_info(size_t index, attn_backend_info_t* out,
                                         attn_stream_t stream) ATTN_NOEXCEPT;
typedef size_t (*PFN_attn_backend_count)(void);
#define ATTN_API_FUNCTIONS(X) \\
  X(attn_backend_count)       \\
  X(attn_backend_info)
typedef struct attn_api {
  size_t struct_size;
  PFN_attn_backend_count attn_backend_count;
} attn_api_t;
ATTN_API const attn_api_t* attn_get_api(uint32_t abi_major, uint32_t abi_minor) ATTN_NOEXCEPT;
ATTN_END_DECL
#endif
"""


@pytest.fixture
def header(tmp_path):
    path = tmp_path / "attn_c.h"
    path.write_text(HEADER)
    return gen.parse_header(str(path))


def test_a_grown_header_is_read_whole(header):
    assert header.version == (1, 3, 4)
    assert [f.name for f in header.functions] == ["attn_backend_count", "attn_backend_info",
                                                 "attn_get_api"]
    assert "ATTN_API_FUNCTIONS" not in header.defines  # the X-macro is skipped
    assert list(header.fn_types) == ["PFN_attn_backend_count"]
    assert header.struct_sizes == {"ATTN_BACKEND_INFO_STRUCT_SIZE":
                                   ("attn_backend_info_t", "color", "int32_t")}


def test_python_module_of_a_grown_header(header):
    ns = {}
    exec(compile(gen.gen_python(header), "_generated.py", "exec"), ns)  # noqa: S102
    assert ns["__version__"] == "1.3.4"
    assert ns["Color"].DARK_BLUE == 2 and ns["ATTN_COLOR_RED"] == 0
    info = ns["attn_backend_info_t"]
    assert [n for n, _ in info._fields_] == ["struct_size", "name", "probe", "weight", "color"]
    assert ns["ATTN_BACKEND_INFO_STRUCT_SIZE"] == info.color.offset + 4 == 36  # no tail padding
    restype, argtypes = ns["SIGNATURES"]["attn_backend_info"]
    assert restype is ctypes.c_void_p and argtypes[2] is ctypes.c_void_p  # handle, stream
    assert ns["SIGNATURES"]["attn_get_api"][0] is ctypes.POINTER(ns["attn_api_t"])
    assert ns["SIGNATURES"]["attn_backend_count"] == (ctypes.c_size_t, [])


def test_go_and_rust_outputs_of_a_grown_header(header):
    go = gen.gen_go(header)
    assert "#define GATTN_REQUIRED_MINOR 3" in go
    assert ("static inline attn_error_t* gattn_backend_info(const gattn_api_t* a, size_t index, "
            "attn_backend_info_t* out, uintptr_t stream) { "
            "return a->attn_backend_info(index, out, (attn_stream_t)stream); }") in go
    assert "gattn_backend_info_init(void)" in go
    pfn = gen.gen_rust_pfn(header)
    assert "typedef size_t (*PFN_attn_backend_count)" not in pfn  # the header has it
    assert ("typedef const attn_api_t* (*PFN_attn_get_api)(uint32_t abi_major, "
            "uint32_t abi_minor);") in pfn
    extra = gen.gen_rust_extra(header)
    assert "name: null(), probe: None, weight: 1.0, color: attn_color::ATTN_COLOR_RED as i32" in \
        " ".join(extra.split())
    assert "attn_get_api: PFN_attn_get_api," in extra


def test_an_unknown_declaration_is_an_error(tmp_path):
    path = tmp_path / "attn_c.h"
    path.write_text(HEADER.replace("ATTN_END_DECL\n#endif",
                                   "union attn_u { int a; };\nATTN_END_DECL\n#endif"))
    with pytest.raises(gen.ParseError, match="union attn_u"):
        gen.parse_header(str(path))


LIST = """
#define ATTN_BACKEND_INFO_FIELDS(X) \\
  X(SIZE, struct_size)              \\
  X(SPECIAL, name)                  \\
  X(SPECIAL, probe)                 \\
  X(I32, weight, 1) /* a comment */ \\
  X(I32, color, 0)
"""


def test_a_field_list_is_read_and_checked_against_the_header(header, tmp_path):
    lists = tmp_path / "abi_fields.h"
    lists.write_text(LIST)
    gen.parse_field_lists(header, str(lists))
    rows = header.field_lists["attn_backend_info_t"]
    assert [(r.kind, r.name, r.args) for r in rows][-2:] == [("I32", "weight", ["1"]),
                                                             ("I32", "color", ["0"])]
    ns = {}
    exec(compile(gen.gen_python(header), "_generated.py", "exec"), ns)  # noqa: S102
    assert ns["FIELDS"]["attn_backend_info_t"][-1] == ("color", "I32", (), ns["Color"].RED)


@pytest.mark.parametrize("edit", [
    ("  X(I32, weight, 1) /* a comment */ \\\n", ""),                     # a header field missing
    ("X(I32, color, 0)", "X(I32, color, 0) X(I32, shade, 0)"),           # a field the header lacks
    ("X(SPECIAL, name)                  \\\n  X(SPECIAL, probe)",
     "X(SPECIAL, probe)                 \\\n  X(SPECIAL, name)"),         # two fields swapped
])
def test_a_field_list_that_differs_from_the_header_is_an_error(header, tmp_path, edit):
    lists = tmp_path / "abi_fields.h"
    lists.write_text(LIST.replace(*edit))
    with pytest.raises(gen.ParseError, match="does not list the fields of attn_backend_info_t"):
        gen.parse_field_lists(header, str(lists))
