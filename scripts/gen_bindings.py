#!/usr/bin/env python3
"""Generates the bindings' declarations from include/attn_c.h, the only schema.

  scripts/gen_bindings.py [--root DIR] [--out DIR] WHAT...

WHAT is any of:
  python     bindings/python/libattn/_generated.py   ctypes structs, enums, callbacks,
                                                      *_STRUCT_SIZE, signatures, version
  go         bindings/go/capi_gen.h                  the function list, the table, one
                                                      static inline trampoline per function,
                                                      the *_INIT initializers, the version;
             bindings/go/fields_gen.go               the Go structs of the growing C structs
                                                      (KVCacheSpec, BuilderConfig,
                                                      CommonMetadata) and their plain fields'
                                                      conversions
  rust-pfn   (stdout) a C header for bindgen: PFN_<name> for every function the header does
             not type itself, and the list of functions
  rust-extra bindings/rust/src/sys/generated_extra.rs  what bindgen cannot translate: the
                                                      *_STRUCT_SIZE and *_INIT macros, the
                                                      function table's entries
  versions   pyproject.toml (the Python package's, at the root) and bindings/rust/Cargo.toml:
             rewrites their `version = "..."` line to the header's
             ATTN_VERSION_MAJOR.MINOR.PATCH (and the libattn entry of bindings/rust/Cargo.lock
             and examples/rust/Cargo.lock, and the Rust example's manifest)

scripts/gen_bindings.sh runs all of them and bindgen; `--check` there regenerates into a
temporary directory and fails on any difference (the ctest test_bindings_generated).

The parser reads the header's regular subset of C99: object-like #defines, `typedef struct X Y;`
(opaque handles, or a struct defined later by `struct X {...};`), `typedef struct X* Y;`,
`typedef enum X {...} Y;`, `typedef struct X {...} Y;` (fields, inline function-pointer fields),
`typedef R (*Y)(...);` and `ATTN_API R name(...)` declarations. A declaration it does not
understand is an error naming it, never skipped.
The fields of the three growing structs (attn_kv_cache_spec_t, attn_builder_config_t,
attn_common_metadata_t) are also read from src/core/abi_fields.h, the list of each field's kind
that the library itself is derived from; a list that does not name exactly the header's fields,
in order, is an error (the ctest test_bindings_generated fails).
Standard library only; Python 3.8+.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

HEADER = "include/attn_c.h"
FIELD_LISTS = "src/core/abi_fields.h"
GENERATOR = "scripts/gen_bindings.py"

# ------------------------------------------------------------------------------------------------
# The model


@dataclass
class CType:
    """A C type: a base name, its const, then one entry per pointer level (that level's const)."""
    base: str
    const: bool = False
    pointers: List[bool] = field(default_factory=list)  # const of each `*`, innermost first
    fn: Optional["FnType"] = None  # a function pointer (base == "<fn>")

    def c(self, name: str = "") -> str:
        if self.fn is not None:
            return self.fn.c_pointer(name)
        s = ("const " if self.const else "") + self.base
        for const in self.pointers:
            s += "*" + (" const" if const else "")
        return s + (" " + name if name else "")


@dataclass
class Param:
    name: str
    type: CType


@dataclass
class FnType:
    ret: CType
    params: List[Param]

    def c_pointer(self, name: str) -> str:
        args = ", ".join(p.type.c(p.name) for p in self.params) or "void"
        return f"{self.ret.c()} (*{name})({args})"


@dataclass
class Struct:
    tag: str
    name: str
    fields: List[Param]


@dataclass
class Enum:
    tag: str
    name: str
    members: List[Tuple[str, int]]


@dataclass
class Function:
    name: str
    type: FnType


@dataclass
class Row:
    """One row of a field list of src/core/abi_fields.h: X(kind, name, args...)."""
    kind: str
    name: str
    args: List[str]


@dataclass
class Header:
    defines: Dict[str, str] = field(default_factory=dict)          # object-like, in order
    ints: Dict[str, int] = field(default_factory=dict)             # integer #defines
    strings: Dict[str, str] = field(default_factory=dict)          # string #defines
    opaque: Dict[str, str] = field(default_factory=dict)           # typedef name -> struct tag
    pointer_aliases: Dict[str, str] = field(default_factory=dict)  # attn_stream_t -> CUstream_st
    enums: List[Enum] = field(default_factory=list)
    structs: List[Struct] = field(default_factory=list)
    fn_types: Dict[str, FnType] = field(default_factory=dict)      # typedef'd function pointers
    functions: List[Function] = field(default_factory=list)
    struct_sizes: Dict[str, Tuple[str, str, str]] = field(default_factory=dict)
    inits: Dict[str, str] = field(default_factory=dict)            # ATTN_X_INIT -> its value
    order: List[Tuple[str, str]] = field(default_factory=list)     # ("struct"|"fn", name)
    fn_lists: Dict[str, List[str]] = field(default_factory=dict)   # ATTN_API_FUNCTIONS* tokens
    field_lists: Dict[str, List[Row]] = field(default_factory=dict)  # struct -> abi_fields.h rows
    field_docs: Dict[str, Dict[str, str]] = field(default_factory=dict)  # struct -> field -> doc

    @property
    def version(self) -> Tuple[int, int, int]:
        return (self.ints["ATTN_VERSION_MAJOR"], self.ints["ATTN_VERSION_MINOR"],
                self.ints["ATTN_VERSION_PATCH"])

    def struct(self, name: str) -> Optional[Struct]:
        return next((s for s in self.structs if s.name == name), None)

    def enum_of(self, constant: str) -> Optional[Enum]:
        return next((e for e in self.enums if any(m == constant for m, _ in e.members)), None)


class ParseError(Exception):
    pass


# ------------------------------------------------------------------------------------------------
# The parser

_SCALARS = {"void", "char", "int", "unsigned", "float", "double", "size_t", "int8_t", "uint8_t",
            "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "uintptr_t",
            "intptr_t"}


def _strip_comments(text: str) -> str:
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            out.append("\n" * text.count("\n", i, j))
            i = j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _split_top(text: str, sep: str) -> List[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def parse_type(text: str) -> CType:
    """`const attn_builder_t* const*` and the like (no function pointers)."""
    tokens = re.findall(r"[A-Za-z_][A-Za-z_0-9]*|\*", text)
    const, base, pointers = False, [], []
    for t in tokens:
        if t == "const":
            if pointers:
                pointers[-1] = True
            else:
                const = True
        elif t == "*":
            pointers.append(False)
        elif t in ("struct", "enum", "signed"):
            continue
        else:
            if pointers:
                raise ParseError(f"cannot read the type '{text}'")
            base.append(t)
    if not base:
        raise ParseError(f"cannot read the type '{text}'")
    return CType(" ".join(base), const, pointers)


_FNPTR = re.compile(r"^(?P<ret>.+?)\(\s*\*\s*(?P<name>[A-Za-z_]\w*)\s*\)\s*\((?P<args>.*)\)$", re.S)


def parse_params(text: str) -> List[Param]:
    text = text.strip()
    if text in ("", "void"):
        return []
    params = []
    for i, p in enumerate(_split_top(text, ",")):
        params.append(parse_decl(p, f"arg{i}"))
    return params


def parse_decl(text: str, default_name: str = "") -> Param:
    """`const attn_tensor_t* seq_lens`, or `int32_t (*set_int)(void* ctx, ...)`."""
    text = " ".join(text.split())
    m = _FNPTR.match(text)
    if m:
        fn = FnType(parse_type(m.group("ret")), parse_params(m.group("args")))
        return Param(m.group("name"), CType("<fn>", fn=fn))
    if "[" in text:
        raise ParseError(f"arrays are not supported: '{text}'")
    m = re.match(r"^(?P<type>.*?[\s*])(?P<name>[A-Za-z_]\w*)$", text)
    if m and m.group("name") not in _SCALARS and not m.group("type").strip().endswith(
            ("struct", "enum")) and m.group("type").strip() not in ("const", "unsigned"):
        return Param(m.group("name"), parse_type(m.group("type")))
    if default_name:
        return Param(default_name, parse_type(text))
    raise ParseError(f"cannot read the declaration '{text}'")


def _eval_int(expr: str, ints: Dict[str, int]) -> Optional[int]:
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")"):
        expr = expr[1:-1].strip()
    if re.fullmatch(r"-?\s*(0x[0-9A-Fa-f]+|\d+)[uUlL]*", expr):
        return int(expr.replace(" ", "").rstrip("uUlL"), 0)
    if expr in ints:
        return ints[expr]
    return None


_SIZE = re.compile(r"^\(?\s*offsetof\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\+\s*sizeof\(\s*([^)]*?)\s*\)\s*\)?$")


def parse_header(path: str) -> Header:
    with open(path, encoding="utf-8") as f:
        text = _strip_comments(f.read())
    text = re.sub(r"\\\n", " ", text)
    h = Header()
    body = []
    for line in text.split("\n"):
        s = line.strip()
        if not s.startswith("#"):
            body.append(line)
            continue
        m = re.match(r"#\s*define\s+([A-Za-z_]\w*)(\(?)(.*)$", s)
        if m and m.group(2) and m.group(1).startswith("ATTN_API_FUNCTIONS"):
            # the function lists (X-macros): X(attn_a) X(attn_b) ..., or other lists
            body_text = m.group(3).split(")", 1)[1] if ")" in m.group(3) else ""
            h.fn_lists[m.group(1)] = [t for t in re.findall(r"\b(\w+)\b", body_text)]
            continue
        if not m or m.group(2):  # other directives, function-like macros (X-macros)
            continue
        name, value = m.group(1), " ".join(m.group(3).split())
        h.defines[name] = value
        iv = _eval_int(value, h.ints)
        if iv is not None:
            h.ints[name] = iv
        elif re.fullmatch(r'"[^"\\]*"', value):
            h.strings[name] = value[1:-1]
        sm = _SIZE.match(value)
        if sm and "_STRUCT_SIZE" in name:
            h.struct_sizes[name] = (sm.group(1), sm.group(2), sm.group(3))
        if name.endswith("_INIT") and value.startswith("{"):
            h.inits[name] = value
    code = " ".join(body)
    for macro in ("ATTN_NOEXCEPT", "ATTN_BEGIN_DECL", "ATTN_END_DECL"):
        code = re.sub(r"\b%s\b" % macro, " ", code)
    for decl in _split_top(code, ";"):
        decl = " ".join(decl.split())
        _parse_decl_top(h, decl)
    # Functions in the order of the header's function table (ATTN_API_FUNCTIONS: each minor
    # version's additions after the older ones), which is what sys::Api and attn_api_t follow.
    if "ATTN_API_FUNCTIONS" in h.fn_lists:
        order = {name: i for i, name in enumerate(_expand_fn_list(h, "ATTN_API_FUNCTIONS"))}
        # a function the list lacks (scripts/check_api_list.py refuses that) goes last
        h.functions.sort(key=lambda f: order.get(f.name, len(order)))
    return h


def _parse_decl_top(h: Header, decl: str) -> None:
    m = re.fullmatch(r"typedef struct (\w+) (\w+)", decl)
    if m:
        h.opaque[m.group(2)] = m.group(1)
        return
    m = re.fullmatch(r"typedef struct (\w+) ?\* ?(\w+)", decl)
    if m:
        h.pointer_aliases[m.group(2)] = m.group(1)
        return
    m = re.fullmatch(r"typedef enum (\w+) \{(.*)\} (\w+)", decl)
    if m:
        members, value = [], -1
        for item in _split_top(m.group(2), ","):
            name, _, expr = item.partition("=")
            name = name.strip()
            if expr:
                v = _eval_int(expr, {**h.ints, **{k: v for k, v in members}})
                if v is None:
                    raise ParseError(f"enum {m.group(1)}: cannot evaluate '{item}'")
                value = v
            else:
                value += 1
            members.append((name, value))
        h.enums.append(Enum(m.group(1), m.group(3), members))
        return
    m = re.fullmatch(r"struct (\w+) \{ size_t struct_size; (ATTN_API_FUNCTIONS\w*)\(\w+\) \}", decl)
    if m:  # the function table: struct_size, then PFN_<f> <f> for each function of the list
        alias = next((a for a, tag in h.opaque.items() if tag == m.group(1)), None)
        if alias is None:
            raise ParseError(f"struct {m.group(1)}: no typedef names it")
        del h.opaque[alias]
        fields = [parse_decl("size_t struct_size")]
        fields += [parse_decl(f"PFN_{f} {f}") for f in _expand_fn_list(h, m.group(2))]
        h.structs.append(Struct(m.group(1), alias, fields))
        h.order.append(("struct", alias))
        return
    m = re.fullmatch(r"struct (\w+) \{(.*)\}", decl)
    if m:  # the definition of a struct an earlier `typedef struct X Y;` named
        alias = next((a for a, tag in h.opaque.items() if tag == m.group(1)), None)
        if alias is None:
            raise ParseError(f"struct {m.group(1)}: no typedef names it")
        del h.opaque[alias]
        fields = [parse_decl(f) for f in _split_top(m.group(2), ";")]
        h.structs.append(Struct(m.group(1), alias, fields))
        h.order.append(("struct", alias))
        return
    m = re.fullmatch(r"typedef struct (\w+) \{(.*)\} (\w+)", decl)
    if m:
        fields = [parse_decl(f) for f in _split_top(m.group(2), ";")]
        h.structs.append(Struct(m.group(1), m.group(3), fields))
        h.order.append(("struct", m.group(3)))
        return
    if decl.startswith("typedef "):
        m = _FNPTR.match(decl[len("typedef "):])
        if m:
            h.fn_types[m.group("name")] = FnType(parse_type(m.group("ret")),
                                                 parse_params(m.group("args")))
            h.order.append(("fn", m.group("name")))
            return
    if decl.startswith("ATTN_API "):
        m = re.fullmatch(r"ATTN_API (.+?[\s*])(\w+) ?\((.*)\)", decl)
        if m:
            h.functions.append(Function(m.group(2), FnType(parse_type(m.group(1)),
                                                          parse_params(m.group(3)))))
            return
    raise ParseError(f"{HEADER}: a declaration the generator does not understand "
                     f"(extend scripts/gen_bindings.py): '{decl[:200]}'")


def _expand_fn_list(h: Header, name: str) -> List[str]:
    """The functions of an ATTN_API_FUNCTIONS* list, nested lists expanded."""
    if name not in h.fn_lists:
        raise ParseError(f"{HEADER}: function list {name} is not defined")
    out: List[str] = []
    for tok in h.fn_lists[name]:
        if tok in h.fn_lists:
            out += _expand_fn_list(h, tok)
        elif tok != "X":
            out.append(tok)
    return out


_ROW_KINDS = {"SIZE": 0, "EXT": 0, "RESERVED": 0, "REMOVED": 0, "SPECIAL": 0, "I32": 1, "I32Z": 1,
              "I64": 1, "BOOL": 1, "OPT_I64": 0, "TENSOR": 3}  # kind -> arguments after the name


def parse_field_lists(h: Header, path: str) -> None:
    """The X-macro lists ATTN_<STRUCT>_FIELDS(X) of src/core/abi_fields.h into h.field_lists,
    each checked against the header's struct: the same fields in the same order."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"\\\n", " ", _strip_comments(f.read()))
    for m in re.finditer(r"^\s*#\s*define\s+ATTN_(\w+)_FIELDS\(X\)(.*)$", text, re.M):
        struct = "attn_" + m.group(1).lower() + "_t"
        rows = []
        for item in re.findall(r"\bX\(([^()]*)\)", m.group(2)):
            kind, name, *args = [a.strip() for a in item.split(",")]
            if _ROW_KINDS.get(kind) != len(args):
                raise ParseError(f"{FIELD_LISTS}: ATTN_{m.group(1)}_FIELDS: the row X({item}) is not "
                                 f"one of the kinds the file describes")
            rows.append(Row(kind, name, args))
        s = h.struct(struct)
        if s is None:
            raise ParseError(f"{FIELD_LISTS}: ATTN_{m.group(1)}_FIELDS names no struct of {HEADER} "
                             f"({struct})")
        header = [f.name for f in s.fields]
        listed = [r.name for r in rows]
        if header != listed:
            i = next((i for i, (a, b) in enumerate(zip(header, listed)) if a != b),
                     min(len(header), len(listed)))
            have = lambda names: names[i] if i < len(names) else "(the end)"
            raise ParseError(f"{FIELD_LISTS}: ATTN_{m.group(1)}_FIELDS does not list the fields of "
                             f"{struct} in {HEADER}: field {i} is {have(header)} in the header, "
                             f"{have(listed)} in the list (add the row of every field, in order)")
        h.field_lists[struct] = rows
    if not h.field_lists:
        raise ParseError(f"{FIELD_LISTS}: no ATTN_<STRUCT>_FIELDS(X) list")


def parse_field_docs(h: Header, path: str) -> None:
    """The first sentence of each field's `/**< ... */` of the structs that have a field list."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for struct in h.field_lists:
        tag = h.struct(struct).tag
        m = re.search(r"struct %s \{(.*?)\n\}" % tag, text, re.S)
        docs = {}
        for fm in re.finditer(r"(\w+)\s*;\s*/\*\*<(.*?)\*/", m.group(1) if m else "", re.S):
            doc = " ".join(fm.group(2).split()).replace("::", "")
            doc = re.sub(r"^ABI 1\.\d+(?: \([^)]*\))?\. ", "", doc)
            cut = re.search(r"(?<!e\.g)(?<!i\.e)\.(?= [A-Z(`])", doc)
            docs[fm.group(1)] = doc[:cut.end()] if cut else doc
        h.field_docs[struct] = docs


def _struct_of_init(h: Header, init_macro: str) -> Optional[str]:
    name = "attn_" + init_macro[len("ATTN_"):-len("_INIT")].lower() + "_t"
    return name if h.struct(name) else None


def parse_init(value: str) -> list:
    """`{ A, { B, 0 }, NULL }` -> ["A", ["B", "0"], "NULL"]."""
    value = value.strip()
    assert value.startswith("{") and value.endswith("}"), value
    # integer literal suffixes (0u, 1UL) carry no value for the bindings
    return [parse_init(v) if v.startswith("{") else re.sub(r"^(-?\d+)[uUlL]+$", r"\1", v.strip())
            for v in _split_top(value[1:-1], ",")]


# ------------------------------------------------------------------------------------------------
# Python (ctypes)

_PY_SCALARS = {"char": "c_char", "int": "c_int", "unsigned": "c_uint", "float": "c_float",
               "double": "c_double", "size_t": "c_size_t", "int8_t": "c_int8",
               "uint8_t": "c_uint8", "int16_t": "c_int16", "uint16_t": "c_uint16",
               "int32_t": "c_int32", "uint32_t": "c_uint32", "int64_t": "c_int64",
               "uint64_t": "c_uint64", "uintptr_t": "c_size_t", "intptr_t": "c_ssize_t"}

# Enum classes whose Python names predate the generator, and members' prefixes to strip.
_PY_ENUM_NAMES = {"attn_status_code": ("Status", ("ATTN_ERR_", "ATTN_")),
                  "attn_dtype_code": ("DTypeCode", None)}


def _camel(tag: str) -> str:
    return "".join(w.capitalize() for w in tag[len("attn_"):].split("_"))


def py_enum_name(e: Enum) -> Tuple[str, List[Tuple[str, int]]]:
    name, prefixes = _PY_ENUM_NAMES.get(e.tag, (_camel(e.tag), None))
    if prefixes is None:
        words = [m.split("_") for m, _ in e.members]
        common = 0
        while all(len(w) > common + 1 for w in words) and len({w[common] for w in words}) == 1:
            common += 1
        prefixes = ("_".join(words[0][:common]) + "_",)
    members = []
    for m, v in e.members:
        short = next((m[len(p):] for p in prefixes if m.startswith(p)), m)
        members.append((short, v))
    return name, members


def py_type(h: Header, t: CType, ret: bool = False) -> str:
    if t.fn is not None:
        return py_fn(h, t.fn)
    n = len(t.pointers)
    base = t.base
    if base in h.pointer_aliases:  # attn_stream_t: an opaque pointer
        base, n = "void", n + 1
    if base in h.opaque or base == "void":
        if n == 0:
            if ret and base == "void":
                return "None"
            raise ParseError(f"a value of type {base}")
        inner, n = "c_void_p", n - 1
    elif base == "char" and n >= 1 and (t.const if n == 1 else True):
        inner, n = "c_char_p", n - 1
    elif base in _PY_SCALARS:
        inner = _PY_SCALARS[base]
    elif h.struct(base):
        inner = base
    elif base in h.fn_types:
        inner = base
    elif any(e.name == base for e in h.enums):
        inner = "c_int"
    else:
        raise ParseError(f"no ctypes type for '{t.c()}'")
    for _ in range(n):
        inner = f"POINTER({inner})"
    return inner


def py_fn(h: Header, fn: FnType) -> str:
    args = ", ".join([py_type(h, fn.ret, ret=True)] + [py_type(h, p.type) for p in fn.params])
    return f"CFUNCTYPE({args})"


def gen_python(h: Header) -> str:
    major, minor, patch = h.version
    out = [f'"""The declarations of include/attn_c.h (ABI {major}.{minor}) for ctypes.',
           "",
           f"Generated by {GENERATOR} from {HEADER}: do not edit. After a change to the",
           "header, run scripts/gen_bindings.sh (bindings/README.md, \"Adding a function or",
           "field\"). structs.py, enums.py, functions.py, library.py and __init__.py re-export",
           "what is here.",
           '"""',
           "# fmt: off",
           "from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_float,",
           "                    c_int, c_int8, c_int16, c_int32, c_int64, c_size_t, c_ssize_t,",
           "                    c_uint, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p, sizeof)",
           "from enum import IntEnum",
           "",
           f"__version__ = \"{major}.{minor}.{patch}\"",
           ""]
    out.append("# ---- #define constants")
    for name in h.defines:
        if name in h.ints:
            out.append(f"{name} = {h.ints[name]}")
        elif name in h.strings:
            out.append(f"{name} = {h.strings[name]!r}")
    out += ["", "# ---- enumerations: the raw constants, and one IntEnum per enum"]
    enum_names = []
    for e in h.enums:
        for m, v in e.members:
            out.append(f"{m} = {v}")
    for e in h.enums:
        name, members = py_enum_name(e)
        enum_names.append(name)
        out += ["", "", f"class {name}(IntEnum):", f'    """``{e.name}``."""']
        out += [f"    {m} = {v}" for m, v in members]
    out += ["", "", "# ---- structs (declared first, so that fields may point at later ones)"]
    for s in h.structs:
        out += ["", "", f"class {s.name}(Structure):", "    pass"]
    out += ["", "", "# ---- callback types and struct fields, in the header's order"]
    for kind, name in h.order:
        if kind == "fn":
            out.append(f"{name} = {py_fn(h, h.fn_types[name])}")
            continue
        s = h.struct(name)
        out.append(f"{s.name}._fields_ = [")
        out += [f'    ("{f.name}", {py_type(h, f.type)}),' for f in s.fields]
        out.append("]")
    out += ["", "# ---- the *_STRUCT_SIZE macros: offsetof(last field) + its size"]
    for name, (struct, last, _) in h.struct_sizes.items():
        out.append(f"{name} = {struct}.{last}.offset + {struct}.{last}.size")
    out += ["", "# ---- the fields of the growing structs as src/core/abi_fields.h lists them: (name, kind,",
            "# a tensor's (dtype, rows, unpadded), the *_INIT value: an int, an enum member or None)",
            "FIELDS = {"]
    for struct, rows in h.field_lists.items():
        init = _init_of(h, struct)
        out.append(f'    "{struct}": (')
        for row, value in zip(rows, init):
            args = tuple(row.args) if row.kind == "TENSOR" else ()
            out.append(f'        ("{row.name}", "{row.kind}", {args!r}, {_py_value(h, value)}),')
        out.append("    ),")
    out.append("}")
    out += ["", "# ---- every ATTN_API function: name -> (restype, argtypes); handles are c_void_p",
            "SIGNATURES = {"]
    for f in h.functions:
        args = ", ".join(py_type(h, p.type) for p in f.type.params)
        out.append(f'    "{f.name}": ({py_type(h, f.type.ret, ret=True)}, [{args}]),')
    out.append("}")
    since = {}
    for lst in sorted(h.fn_lists):
        m = re.fullmatch(r"ATTN_API_FUNCTIONS_(\d+)_(\d+)", lst)
        if m:
            for name in _expand_fn_list(h, lst):
                since[name] = (int(m.group(1)), int(m.group(2)))
    out += ["", "# ---- the ABI version that added each function (the ATTN_API_FUNCTIONS_<major>_<minor>",
            "# lists)", "SINCE = {"]
    for f in h.functions:
        out.append(f'    "{f.name}": {since.get(f.name, (1, 0))},')
    out.append("}")
    out += ["", "# ---- what each hand-written module re-exports"]
    for group, names in (("ENUMS", enum_names), ("STRUCTS", [s.name for s in h.structs]),
                         ("CALLBACKS", list(h.fn_types)), ("STRUCT_SIZES", list(h.struct_sizes))):
        out += [f"{group} = ("] + [f'    "{n}",' for n in names] + [")"]
    return "\n".join(out) + "\n"


def _init_of(h: Header, struct: str) -> list:
    """The values of the struct's *_INIT macro, one per field."""
    macro = next((m for m in h.inits if _struct_of_init(h, m) == struct), None)
    if macro is None:
        raise ParseError(f"{struct} has no *_INIT macro")
    values = parse_init(h.inits[macro])
    if len(values) != len(h.struct(struct).fields):
        raise ParseError(f"{macro} has {len(values)} values for the {len(h.struct(struct).fields)} "
                         f"fields of {struct}")
    return values


def _py_value(h: Header, v) -> str:
    """An *_INIT value for Python: an int, a member of the generated IntEnum, or None (NULL, a
    struct size, a braced value)."""
    if isinstance(v, list) or v == "NULL" or v in h.struct_sizes:
        return "None"
    if re.fullmatch(r"-?\d+", v):
        return v
    e = h.enum_of(v)
    if e is not None:
        name, members = py_enum_name(e)
        return f"{name}.{dict(zip((m for m, _ in e.members), (m for m, _ in members)))[v]}"
    if v in h.ints:
        return str(h.ints[v])
    raise ParseError(f"cannot translate the initializer value '{v}' for Python")


# ------------------------------------------------------------------------------------------------
# Go (cgo): trampolines, because cgo cannot call through a function pointer

def _c_param(p: Param) -> str:
    return p.type.c(p.name)


def gen_go(h: Header) -> str:
    major, minor, _ = h.version
    out = ["/*",
           f" * Generated by {GENERATOR} from {HEADER} (ABI {major}.{minor}): do not edit. After a",
           " * change to the header, run scripts/gen_bindings.sh (bindings/README.md).",
           " *",
           " * The function list, the table of function pointers (typed by the header's own",
           " * declarations), one static inline trampoline per function (cgo cannot call through a",
           " * pointer; a stream travels as an integer, an opaque CUDA handle and not Go memory),",
           " * and the header's ATTN_*_INIT macros as values.",
           " * SPDX-License-Identifier: Apache-2.0",
           " */",
           "#ifndef ATTN_GO_CAPI_GEN_H_",
           "#define ATTN_GO_CAPI_GEN_H_",
           "",
           "#include <stddef.h>",
           "#include <stdint.h>",
           "",
           '#include "attn_c.h"',
           "",
           "/* The ABI this binding is generated from: a library of the same major and at least this",
           " * minor is required (attn_check_version). */",
           f"#define GATTN_REQUIRED_MAJOR {major}",
           f"#define GATTN_REQUIRED_MINOR {minor}",
           f"#if ATTN_VERSION_MAJOR != {major} || ATTN_VERSION_MINOR != {minor}",
           '#error "attn_c.h changed: run scripts/gen_bindings.sh"',
           "#endif",
           "",
           "/* Every ATTN_API function of attn_c.h, in the order of its function table. */",
           "#define GATTN_FUNCTIONS(X) \\"]
    out += [f"  X({f.name}) \\" for f in h.functions]
    out[-1] = out[-1][:-2]
    out += ["",
            "/* The function table of one loaded libattn. */",
            "typedef struct gattn_api {",
            "  void* handle; /* from dlopen; never closed */"]
    out += [f"  __typeof__(&{f.name}) {f.name};" for f in h.functions]
    out += ["} gattn_api_t;", "", "/* Trampolines: gattn_<name without attn_>(api, the arguments). */"]
    for f in h.functions:
        short = f.name[len("attn_"):]
        params = ["const gattn_api_t* a"]
        args = []
        for p in f.type.params:
            if p.type.fn is None and p.type.base in h.pointer_aliases and not p.type.pointers:
                params.append(f"uintptr_t {p.name}")
                args.append(f"({p.type.base}){p.name}")
            else:
                params.append(_c_param(p))
                args.append(p.name)
        ret = f.type.ret.c()
        call = f"a->{f.name}({', '.join(args)})"
        body = call + ";" if ret == "void" else f"return {call};"
        out.append(f"static inline {ret} gattn_{short}({', '.join(params)}) {{ {body} }}")
    out += ["", "/* The header's initializers as values: gattn_<struct without attn_, _t>_init(). */"]
    for macro in h.inits:
        struct = _struct_of_init(h, macro)
        if struct is None:
            continue
        short = struct[len("attn_"):-len("_t")]
        out.append(f"static inline {struct} gattn_{short}_init(void) {{ {struct} v = {macro}; "
                   f"return v; }}")
    out += ["", "#endif /* ATTN_GO_CAPI_GEN_H_ */"]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------------
# Go: the structs of the growing C structs, from their field lists

# The Go package's name of each struct with a field list, and its doc comment.
_GO_STRUCTS = {
    "attn_kv_cache_spec_t": (
        "KVCacheSpec", "KVCacheSpec is a KV cache spec (attn_kv_cache_spec_t, vLLM's AttentionSpec "
        "and subclasses). NewKVCacheSpec gives one with the header's defaults."),
    "attn_builder_config_t": (
        "BuilderConfig", "BuilderConfig is the engine-side configuration of a builder "
        "(attn_builder_config_t): the parts of vLLM's VllmConfig that builders read, the device, "
        "and memory options. Start from NewBuilderConfig or DefaultBuilderConfig, which carry the "
        "header's defaults."),
    "attn_common_metadata_t": (
        "CommonMetadata", "CommonMetadata is a batch as the scheduler describes it "
        "(attn_common_metadata_t, vLLM's CommonAttentionMetadata). NewCommonMetadata fills it from "
        "Go slices; every field may then be changed (padding, host mirrors, the optional "
        "tensors). A zero Tensor is None."),
}
# Words a Go name spells otherwise than capitalized (the package's initialisms).
_GO_WORDS = {"cp": "CP", "cpu": "CPU", "dcp": "DCP", "dspark": "DSpark", "gdn": "GDN", "gpu": "GPU",
             "isa": "ISA", "kv": "KV", "lm": "LM", "mla": "MLA", "mm": "MM", "mxfp4": "MXFP4",
             "ngroups": "NGroups", "qk": "QK", "replayssm": "ReplaySSM", "rocm": "ROCm",
             "rswa": "RSWA", "sms": "SMs", "trtllm": "TRTLLM"}
# Fields whose Go name predates the rule above.
_GO_NAMES = {("attn_kv_cache_spec_t", "dtype"): "DType",
             ("attn_builder_config_t", "mamba_backend_flashinfer"): "MambaBackendFlashInfer",
             ("attn_common_metadata_t", "block_table_tensor"): "BlockTable"}
# int32 fields the package gives a named enum type (every other one is an int32).
_GO_TYPES = {("attn_kv_cache_spec_t", "kind"): "KVCacheKind",
             ("attn_kv_cache_spec_t", "dtype"): "KVDtype",
             ("attn_kv_cache_spec_t", "mamba_type"): "MambaType",
             ("attn_kv_cache_spec_t", "mamba_cache_mode"): "MambaCacheMode",
             ("attn_builder_config_t", "cudagraph_mode"): "CudagraphMode",
             ("attn_builder_config_t", "cache_dtype"): "KVDtype",
             ("attn_builder_config_t", "attn_type"): "AttentionType",
             ("attn_builder_config_t", "validate"): "ValidateMode",
             ("attn_builder_config_t", "model_dtype"): "KVDtype",
             ("attn_builder_config_t", "cpu_attn_isa"): "CPUISA"}
# The Go fields of the SPECIAL rows that are not plain numbers (converted by hand in config.go),
# at the row's place: (name, type, doc); an empty list: no Go field of its own.
_GO_SPECIAL = {
    ("attn_builder_config_t", "device"): [("Device", "Device", "Where builds run: CPU (default) or CUDA(n).")],
    ("attn_builder_config_t", "layers"): [
        ("Layers", "[]PerLayerParams", "The per-layer hyperparameters of the model's attention layers (may be empty).")],
    ("attn_builder_config_t", "num_layers"): [],
    ("attn_builder_config_t", "allocator"): [],
    ("attn_builder_config_t", "workspace"): [
        ("Workspace", "*HostBuffer", "Host memory for the builder's persistent buffers (size it with "
         "Library.BuilderWorkspaceSize); the builder keeps it reachable. Nil: libattn allocates."),
        ("ExternalWorkspace", "uintptr", "Device memory for the persistent buffers "
         "(ExternalWorkspaceSize bytes, 256-byte aligned) that the caller keeps valid for the "
         "builder's lifetime."),
        ("ExternalWorkspaceSize", "uint64", "The bytes at ExternalWorkspace.")],
    ("attn_builder_config_t", "workspace_size"): [],
    ("attn_builder_config_t", "cudagraph_capture_sizes"): [
        ("CudagraphCaptureSizes", "[]int32", "vLLM's cudagraph_capture_sizes; nil: vLLM's default list.")],
    ("attn_builder_config_t", "num_cudagraph_capture_sizes"): [],
    ("attn_builder_config_t", "speculative_token_tree"): [
        ("SpeculativeTokenTree", "string", 'vLLM\'s speculative_token_tree; "" = None; e.g. "[(0,), (1,), (0, 0)]".')],
}
# Unexported Go fields after a struct's C fields.
_GO_TRAILING = {"attn_common_metadata_t": [("keep", "any", "The metadata whose memory the tensors view (Metadata.ToCommon).")]}


# A Go field type's conversions (to C, from C; {go} the Go field, {c} the C one, {type} the Go
# type): an int32 field's are those of every named int32 type.
_GO_CONVERT = {
    "bool": ("{c} = cBool({go})", "{go} = {c} != 0"),
    "int64": ("{c} = C.int64_t({go})", "{go} = int64({c})"),
    "int32": ("{c} = C.int32_t({go})", "{go} = {type}({c})"),
    "*int64": ("if {go} != nil {{\n\t{c} = C.int64_t(*{go})\n}}",
               "{go} = nil\nif {c} >= 0 {{\n\tv := int64({c})\n\t{go} = &v\n}}"),
}


def _go_name(struct: str, name: str) -> str:
    return _GO_NAMES.get((struct, name)) or "".join(
        _GO_WORDS.get(w, w[:1].upper() + w[1:]) for w in name.split("_"))


def _go_comment(doc: str, indent: str = "\t") -> List[str]:
    lines, line = [], ""
    for word in doc.split():
        if line and len(indent) * 4 + 3 + len(line) + 1 + len(word) > 100:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return [f"{indent}// {l}" for l in lines]


def _go_fields(h: Header, struct: str):
    """(row, Go name, Go type) of every field of `struct` the Go struct carries as a number, a
    bool or a Tensor, and the special ones as (None, name, type, doc)."""
    s = h.struct(struct)
    ctypes = {f.name: f.type for f in s.fields}
    out = []
    for row in h.field_lists[struct]:
        key = (struct, row.name)
        ct = ctypes[row.name]
        plain_int = not ct.pointers and ct.fn is None and ct.base in ("int32_t", "int64_t")
        if row.kind in ("SIZE", "EXT", "RESERVED"):
            continue
        if row.kind == "SPECIAL" and not plain_int:
            if key not in _GO_SPECIAL:
                raise ParseError(f"{struct}.{row.name} is SPECIAL in {FIELD_LISTS}: give it its Go "
                                 f"field(s) in {GENERATOR}'s _GO_SPECIAL (and convert it in the "
                                 f"Go package)")
            out += [(None, n, t, d) for n, t, d in _GO_SPECIAL[key]]
            continue
        if row.kind == "TENSOR":
            gt = "Tensor"
        elif row.kind in ("BOOL", "REMOVED"):
            gt = "bool"
        elif row.kind == "OPT_I64":
            gt = "*int64"
        elif ct.base == "int64_t":
            gt = "int64"
        else:
            gt = _GO_TYPES.get(key, "int32")
        out.append((row, _go_name(struct, row.name), gt, None))
    return out


def gen_go_fields(h: Header) -> str:
    major, minor, _ = h.version
    out = [f"// Code generated by {GENERATOR} from {HEADER} and {FIELD_LISTS}; DO NOT EDIT.",
           "// (ABI %d.%d.) After a change to either, run scripts/gen_bindings.sh." % (major, minor),
           "//",
           "// The Go structs of the C structs whose fields src/core/abi_fields.h lists, one Go field",
           "// per C field (the SPECIAL ones as the package spells them), and the conversions of the",
           "// plain ones; config.go and common.go convert the rest.",
           "",
           "package attn",
           "",
           "/*",
           '#include "capi.h"',
           "*/",
           'import "C"',
           ""]
    for struct in h.field_lists:
        go, doc = _GO_STRUCTS[struct]
        fields = _go_fields(h, struct)
        docs = h.field_docs.get(struct, {})
        out += _go_comment(doc, "")
        out.append(f"type {go} struct {{")
        for row, name, gt, special_doc in fields:
            text = special_doc if row is None else (f"{row.name}: " + docs.get(row.name, "see attn_c.h."))
            out += _go_comment(text)
            out.append(f"\t{name} {gt}")
        for name, gt, d in _GO_TRAILING.get(struct, []):
            out += _go_comment(d)
            out.append(f"\t{name} {gt}")
        out += ["}", ""]
        plain = [(row, name, gt) for row, name, gt, _ in fields if row is not None]
        scalars = [(row, name, gt) for row, name, gt in plain if gt != "Tensor"]
        tensors = [(row, name) for row, name, gt in plain if gt == "Tensor"]
        out.append(f"// plainToC writes the plain fields (every field but the special ones) into c.")
        out.append(f"func (s *{go}) plainToC(c *C.{struct}) {{")
        out += [f"\t{line}" for row, name, gt in scalars
                for line in _GO_CONVERT.get(gt, _GO_CONVERT["int32"])[0].format(
                    c=f"c.{row.name}", go=f"s.{name}", type=gt).split("\n")]
        out += ["}", ""]
        out.append(f"// plainFromC reads the plain fields (every field but the special ones and the "
                   f"tensors) from c.")
        out.append(f"func (s *{go}) plainFromC(c *C.{struct}) {{")
        out += [f"\t{line}" for row, name, gt in scalars
                for line in _GO_CONVERT.get(gt, _GO_CONVERT["int32"])[1].format(
                    c=f"c.{row.name}", go=f"s.{name}", type=gt).split("\n")]
        out += ["}", ""]
        if tensors:
            out += ["// tensorFields pairs each tensor field of c with the Go field it is made from, "
                    "in the header's order.",
                    f"func (s *{go}) tensorFields(c *C.{struct}) []tensorField {{",
                    "\treturn []tensorField{"]
            out += [f'\t\t{{&c.{row.name}, &s.{name}, "{row.name}"}},' for row, name in tensors]
            out += ["\t}", "}", ""]
    out += ["// tensorField is a tensor field of a C struct and the Go field it is made from.",
            "type tensorField struct {", "\tdst  **C.attn_tensor_t", "\tt    *Tensor",
            "\tname string", "}", ""]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------
# Rust: what bindgen is given beside the header, and what it cannot translate

def gen_rust_pfn(h: Header) -> str:
    out = ["/* Generated by scripts/gen_bindings.py for bindgen: a function-pointer type PFN_<name>",
           " * for every ATTN_API function that the header does not type itself, checked against",
           " * the declaration by the compiler. */",
           '#include "attn_c.h"']
    for f in h.functions:
        pfn = f"PFN_{f.name}"
        if pfn not in h.fn_types:
            out.append(f"typedef {f.type.c_pointer(pfn)};")
        out.append(f"_Static_assert(__builtin_types_compatible_p(__typeof__(&{f.name}), {pfn}), "
                   f'"{pfn}");')
    return "\n".join(out) + "\n"


_RS_SCALARS = {"char": "c_char", "int": "c_int", "unsigned": "c_uint", "float": "f32",
               "double": "f64", "size_t": "usize", "int8_t": "i8", "uint8_t": "u8",
               "int16_t": "i16", "uint16_t": "u16", "int32_t": "i32", "uint32_t": "u32",
               "int64_t": "i64", "uint64_t": "u64", "uintptr_t": "usize", "intptr_t": "isize",
               "void": "c_void"}


def _rs_value(h: Header, t: CType, v, struct_name: str) -> str:
    if isinstance(v, list):
        s = h.struct(t.base)
        if s is None or t.pointers:
            raise ParseError(f"{struct_name}: a braced initializer for '{t.c()}'")
        return _rs_struct_literal(h, s, v)
    if v == "NULL":
        if t.fn is not None or t.base in h.fn_types:
            return "None"
        return "null()" if (t.const if len(t.pointers) == 1 else t.pointers[-2]) else "null_mut()"
    rty = _RS_SCALARS.get(t.base, "i32")
    if re.fullmatch(r"-?\d+(\.\d*)?", v):
        if rty in ("f64", "f32") and "." not in v:
            return v + ".0"
        return v
    e = h.enum_of(v)
    if e is not None:
        return f"{e.tag}::{v} as {rty}"
    if v in h.struct_sizes:
        return v
    if v in h.ints:
        return f"{v} as {rty}"
    raise ParseError(f"{struct_name}: cannot translate the initializer value '{v}'")


def _rs_struct_literal(h: Header, s: Struct, values: list) -> str:
    if len(values) != len(s.fields):
        raise ParseError(f"{s.name}: the initializer has {len(values)} values for "
                         f"{len(s.fields)} fields")
    items = [f"{f.name}: {_rs_value(h, f.type, v, s.name)}" for f, v in zip(s.fields, values)]
    return f"{s.name} {{ " + ", ".join(items) + " }"


def gen_rust_extra(h: Header) -> str:
    major, minor, _ = h.version
    out = [f"// Generated by {GENERATOR} from {HEADER} (ABI {major}.{minor}): do not edit; run",
           "// scripts/gen_bindings.sh. What bindgen cannot translate: the *_STRUCT_SIZE macros",
           "// (offsetof + sizeof), the *_INIT macros, and the list of functions for `Api`.",
           "#[allow(unused_imports)]",
           "use core::ffi::{c_char, c_void};",
           "use core::mem::{offset_of, size_of};",
           "#[allow(unused_imports)]",
           "use core::ptr::{null, null_mut};",
           "",
           "use super::generated::*;",
           ""]
    for name, (struct, last, sizeof) in h.struct_sizes.items():
        s = h.struct(struct)
        f = next(f for f in s.fields if f.name == last)
        out.append(f"/// `{name}`.")
        out.append(f"pub const {name}: usize = offset_of!({struct}, {last}) + "
                   f"size_of::<{_rs_type(h, f.type)}>();")
    out.append("")
    defaults = []
    for macro, value in h.inits.items():
        struct = _struct_of_init(h, macro)
        if struct is None:
            continue
        s = h.struct(struct)
        lit = _rs_struct_literal(h, s, parse_init(value))
        inner = lit[len(s.name) + 3:-2].split(", ")
        out += [f"impl {struct} {{", f"    /// `{macro}`.", "    pub const INIT: Self = Self {"]
        out += [f"        {item}," for item in _merge_nested(inner)]
        out += ["    };", "}", ""]
        defaults.append(struct)
    out.append("// `Default` is the header's initializer.")
    for struct in defaults:
        out.append(f"impl Default for {struct} {{ fn default() -> Self {{ Self::INIT }} }}")
    out += ["", "/// Every enumeration of attn_c.h: its type name and its constants with their numbers.",
            "pub const ENUMS: &[(&str, &[(&str, i64)])] = &["]
    for e in h.enums:
        members = ", ".join(f'("{m}", {v})' for m, v in e.members)
        out.append(f'    ("{e.name}", &[{members}]),')
    out += ["];"]
    out += ["", "/// Every ATTN_API function of attn_c.h, in the order of its function table, with its type.",
            "macro_rules! with_attn_functions {",
            "    ($m:ident) => {",
            "        $m! {"]
    out += [f"            {f.name}: PFN_{f.name}," for f in h.functions]
    out += ["        }", "    };", "}", "pub(crate) use with_attn_functions;"]
    return "\n".join(out) + "\n"


def _merge_nested(items: List[str]) -> List[str]:
    """Re-joins the items of nested literals that the split at ", " cut apart."""
    merged, depth = [], 0
    for it in items:
        if depth:
            merged[-1] += ", " + it
        else:
            merged.append(it)
        depth += it.count("{") - it.count("}")
    return merged


def _rs_type(h: Header, t: CType) -> str:
    if t.fn is not None:
        raise ParseError("a function pointer as the last field of a *_STRUCT_SIZE")
    base = _RS_SCALARS.get(t.base, t.base)
    s = base
    consts = [t.const] + t.pointers  # const of what each level points to
    for i in range(len(t.pointers)):
        s = ("*const " if consts[i] else "*mut ") + s
    return s


# ------------------------------------------------------------------------------------------------
# Versions in the packages' manifests

def set_versions(h: Header, root: str, out_root: str) -> List[str]:
    version = "%d.%d.%d" % h.version
    written = []
    for rel in ("pyproject.toml", "bindings/rust/Cargo.toml",
                "examples/rust/Cargo.toml"):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        new, n = re.subn(r'(?m)^version = "[^"]*"', f'version = "{version}"', text, count=1)
        if n != 1:
            raise ParseError(f"{rel}: no `version = \"...\"` line")
        written.append(_write(out_root, rel, new))
    for rel in ("bindings/rust/Cargo.lock", "examples/rust/Cargo.lock"):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        new, n = re.subn(r'(?m)^(name = "(?:libattn|attn_demo)"\nversion = )"[^"]*"', r'\1"%s"' % version,
                         text)
        if n < 1:
            raise ParseError(f"{rel}: no libattn package")
        written.append(_write(out_root, rel, new))
    return written


def _write(out_root: str, rel: str, text: str) -> str:
    path = os.path.join(out_root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--out", help="write under this directory instead of --root")
    ap.add_argument("what", nargs="+",
                    choices=["python", "go", "rust-pfn", "rust-extra", "versions"])
    a = ap.parse_args()
    out_root = a.out or a.root
    try:
        h = parse_header(os.path.join(a.root, HEADER))
        parse_field_lists(h, os.path.join(a.root, FIELD_LISTS))
        parse_field_docs(h, os.path.join(a.root, HEADER))
        for what in a.what:
            if what == "python":
                _write(out_root, "bindings/python/libattn/_generated.py", gen_python(h))
            elif what == "go":
                _write(out_root, "bindings/go/capi_gen.h", gen_go(h))
                _write(out_root, "bindings/go/fields_gen.go", gen_go_fields(h))
            elif what == "rust-pfn":
                sys.stdout.write(gen_rust_pfn(h))
            elif what == "rust-extra":
                _write(out_root, "bindings/rust/src/sys/generated_extra.rs", gen_rust_extra(h))
            elif what == "versions":
                set_versions(h, a.root, out_root)
    except ParseError as e:
        print(f"gen_bindings.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
