#!/usr/bin/env python3
"""vLLM's names of libattn's backends, derived from vLLM's own source.

vLLM knows a backend by two kinds of name: the member of its backend enums
(`AttentionBackendEnum`, `MambaAttentionBackendEnum` in vllm/v1/attention/backends/registry.py),
and the string its class's `get_name()` returns. libattn accepts both wherever it takes a backend
name (attn_builder_create, attn_builder_workspace_size, attn_backend_cudagraph_support) and lists
them in attn_backend_info's `vllm_names`. This script reads vLLM's source (an `ast` scan, nothing
is imported, so it runs without torch) and writes which libattn backend each name resolves to:

    python3 scripts/vllm_names.py build/libattn.so                  # print the table
    python3 scripts/vllm_names.py build/libattn.so --write tests/data/vllm_backend_names.txt
    python3 scripts/vllm_names.py build/libattn.so --check tests/data/vllm_backend_names.txt

The vLLM source is found with --vllm DIR (the `vllm` package directory), else $ATTN_VLLM_SRC,
else the `vllm` package of the lane's environment ($ATTN_VLLM_VENV, else build-bench/vllm-venv).
--check exits 77 when none is found, 1 when the file differs from what vLLM's source gives.

The rule (written once, here):
- every backend class (a class descending from vLLM's AttentionBackend, and the classes that
  `create_composite_attention_backend(backend_name=...)` makes) has the names: the enum members
  whose class path is that class, and its `get_name()` (inherited through its bases);
- a class is the class of libattn backend L when L is the enum member naming it, or, for a name
  that is no enum member, when the class itself defines `get_name()` returning L (libattn's names
  are vLLM's); a few libattn names are not vLLM's, and LIBATTN_ONLY below names their classes;
- a class with no such name is L's when its builder (`get_builder_cls()`) is the builder of L's
  class and of no other libattn backend's class (AiterTritonMLABackend builds with
  ROCM_AITER_MLA's builder);
- a name that is a libattn backend name resolves to that backend; any other name resolves to L
  when every class that carries it is L's; it resolves to nothing when no class that carries it
  is a libattn backend's, or when its classes belong to different backends (ambiguous).
The file lists every name vLLM 0.33.0 uses, resolved or not. tests/c/test_vllm_names.c checks the
library against it (each resolved name builds with its backend's builder, attn_backend_info's
vllm_names of every backend is exactly its names here, every other name is refused) and runs
without vLLM; `--check` (run first by scripts/conformance.sh) keeps the file vLLM's.
Standard library only; Python 3.8+.
"""
from __future__ import annotations

import argparse
import ast
import difflib
import os
import subprocess
import sys
from typing import Dict, List, Optional, Set, Tuple

REGISTRY = "v1/attention/backends/registry.py"
ENUMS = ("AttentionBackendEnum", "MambaAttentionBackendEnum")
BASE = ("vllm.v1.attention.backend", "AttentionBackend")
COMPOSITE_FACTORY = "create_composite_attention_backend"
# libattn names that are not vLLM's, and the vLLM class each builds for (vLLM calls both
# compressors "CompressorBackend", dots3's sliding-window MLA class "TRITON_MLA"). The sparse-SWA subclasses (DEEPSEEK_SPARSE_SWA_*) need no
# entry: vLLM calls them all DEEPSEEK_SPARSE_SWA, a libattn name.
LIBATTN_ONLY = {
    "DEEPSEEK_V4_COMPRESSOR": ("vllm.models.deepseek_v4.compressor", "CompressorBackend"),
    "DEEPSEEK_V41_COMPRESSOR": ("vllm.models.deepseek_v41.compressor", "CompressorBackend"),
    # dots3 NOTE's sliding-window MLA class calls itself TRITON_MLA (its builder is its own)
    "DOTS3_NOTE_TRITON_MLA": ("vllm.models.dots3_note.nvidia.attention",
                              "Dots3NoteTritonMLABackend"),
}
SKIP = 77

Key = Tuple[str, str]  # (module, class name)


class ClassInfo:
    def __init__(self, module: str, name: str, path: str, node: Optional[ast.ClassDef]):
        self.module, self.name, self.path = module, name, path
        self.bases: List[ast.expr] = list(node.bases) if node is not None else []
        self.own_name: Optional[str] = None  # get_name()'s literal, when the class defines it
        self.defines_name = False
        self.builders: List[ast.expr] = []  # what get_builder_cls() returns, when defined
        self.defines_builder = False
        self.default_builder: Optional[ast.expr] = None
        self.methods: Dict[str, bool] = {}  # every method it defines: whether @abstractmethod
        if node is None:
            return
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.methods[item.name] = any(
                    getattr(d, "id", getattr(d, "attr", None)) == "abstractmethod"
                    for d in item.decorator_list)
            if isinstance(item, ast.FunctionDef) and item.name == "get_name":
                self.defines_name = True
                for r in ast.walk(item):
                    if (isinstance(r, ast.Return) and isinstance(r.value, ast.Constant)
                            and isinstance(r.value.value, str)):
                        self.own_name = r.value.value
            if isinstance(item, ast.FunctionDef) and item.name == "get_builder_cls":
                self.defines_builder = True
                self.builders = [r.value for r in ast.walk(item)
                                 if isinstance(r, ast.Return) and r.value is not None]
                # the builder returned unconditionally (the others are a platform's)
                self.default_builder = next(
                    (r.value for r in reversed(item.body)
                     if isinstance(r, ast.Return) and r.value is not None), None)

    @property
    def key(self) -> Key:
        return (self.module, self.name)

    def where(self) -> str:
        return f"{self.path}:{self.name}"


class Source:
    """The classes, imports and composite backends of every module of the vllm package."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.classes: Dict[Key, ClassInfo] = {}
        self.imports: Dict[str, Dict[str, Tuple[str, str]]] = {}
        self.modules: Set[str] = set()
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(".py"):
                    self._read(os.path.join(dirpath, f))

    def _module(self, path: str) -> str:
        rel = os.path.relpath(path, os.path.dirname(self.root))[:-3].replace(os.sep, ".")
        return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel

    def _read(self, path: str) -> None:
        module = self._module(path)
        self.modules.add(module)
        rel = "vllm/" + os.path.relpath(path, self.root).replace(os.sep, "/")
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            return
        # Only modules that can define or re-export a backend or a builder are parsed (a tenth
        # of the package): the others cannot change the answer.
        if "Backend" not in text and "Builder" not in text:
            return
        try:
            tree = ast.parse(text, path)
        except SyntaxError:
            return
        imports = self.imports.setdefault(module, {})
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                for a in node.names:
                    imports.setdefault(a.asname or a.name, (base, a.name))
            elif isinstance(node, ast.ClassDef):
                info = ClassInfo(module, node.name, rel, node)
                if info.key not in self.classes or node in tree.body:
                    self.classes[info.key] = info
        for node in tree.body:  # X = create_composite_attention_backend(..., backend_name="N")
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)
                    and getattr(node.value.func, "id", None) == COMPOSITE_FACTORY):
                info = ClassInfo(module, node.targets[0].id, rel, None)
                info.bases = [ast.Name(id=BASE[1])]
                imports.setdefault(BASE[1], BASE)
                for kw in node.value.keywords:
                    if kw.arg == "backend_name" and isinstance(kw.value, ast.Constant):
                        info.own_name, info.defines_name = kw.value.value, True
                info.defines_builder = True  # the factory's own builder class
                info.builders = [ast.Name(id=f"<{COMPOSITE_FACTORY} {info.name}>")]
                self.classes[info.key] = info

    def lookup(self, module: str, name: str, depth: int = 0) -> Optional[ClassInfo]:
        """The class `name` means in `module` (following re-exports)."""
        if depth > 20:
            return None
        if (module, name) in self.classes:
            return self.classes[(module, name)]
        target = self.imports.get(module, {}).get(name)
        if target is None:
            return None
        m, n = target
        if f"{m}.{n}" in self.modules:
            return None  # a module, not a class
        return self.lookup(m, n, depth + 1)

    def resolve(self, module: str, expr: ast.expr) -> Optional[ClassInfo]:
        if isinstance(expr, ast.Name):
            return self.lookup(module, expr.id)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            target = self.imports.get(module, {}).get(expr.value.id)
            if target is not None and f"{target[0]}.{target[1]}" in self.modules:
                return self.lookup(f"{target[0]}.{target[1]}", expr.attr)
        if isinstance(expr, ast.Subscript):
            return self.resolve(module, expr.value)
        return None

    def bases(self, c: ClassInfo) -> List[ClassInfo]:
        return [b for b in (self.resolve(c.module, e) for e in c.bases) if b is not None]

    def is_backend(self, c: ClassInfo, seen: Optional[Set[Key]] = None) -> bool:
        seen = seen if seen is not None else set()
        if c.key == BASE:
            return True
        if c.key in seen:
            return False
        seen.add(c.key)
        return any(self.is_backend(b, seen) for b in self.bases(c))

    def _inherited(self, c: ClassInfo, defines: str, seen: Set[Key]) -> Optional[ClassInfo]:
        """The class (c or a base, depth first as Python's MRO is for these trees) that defines
        get_name / get_builder_cls for c."""
        if getattr(c, defines):
            return c
        seen.add(c.key)
        for b in self.bases(c):
            if b.key not in seen:
                found = self._inherited(b, defines, seen)
                if found is not None:
                    return found
        return None

    def get_name(self, c: ClassInfo) -> Optional[str]:
        d = self._inherited(c, "defines_name", set())
        return d.own_name if d is not None else None

    def builders(self, c: ClassInfo, default_only: bool = False) -> Tuple[str, ...]:
        """What c's get_builder_cls() returns ("module.Class"); default_only: only the return
        that no platform check guards."""
        d = self._inherited(c, "defines_builder", set())
        if d is None:
            return ()
        out = []
        for e in ([d.default_builder] if default_only and d.default_builder is not None
                  else d.builders):
            b = self.resolve(d.module, e)
            out.append(f"{b.module}.{b.name}" if b is not None else ast.unparse(e)
                       if hasattr(ast, "unparse") else getattr(e, "id", "?"))
        return tuple(sorted(set(out)))


def enum_members(src: Source) -> List[Tuple[str, str, Optional[ClassInfo], str]]:
    """(enum, member, its class or None, its value) for every member of vLLM's backend enums."""
    with open(os.path.join(src.root, REGISTRY), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = []
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name in ENUMS):
            continue
        for item in node.body:
            if not (isinstance(item, ast.Assign) and len(item.targets) == 1
                    and isinstance(item.targets[0], ast.Name)
                    and isinstance(item.value, ast.Constant)):
                continue
            value = item.value.value
            cls = None
            if isinstance(value, str) and "." in value:
                module, _, name = value.rpartition(".")
                cls = src.lookup(module, name)
            out.append((node.name, item.targets[0].id, cls, repr(value)))
    return out


def libattn_names(library: str) -> List[str]:
    """The built-in backends' names, from the library itself (through the Python binding)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings",
                                    "python"))
    import libattn  # noqa: E402 (the binding of this checkout)

    lib = libattn.Library(library)
    return [i.name for i in lib.backend_infos() if i.origin == libattn.BackendOrigin.BUILTIN]


def backend_targets(src: Source, backends: List[str]) -> Tuple[
        List[ClassInfo], List[Tuple[str, str, Optional[ClassInfo], str]], Dict[Key, str]]:
    """vLLM's backend classes, its enum members, and the libattn backend of each class that is
    one's (the rule in the module's docstring; scripts/coverage_vllm.py maps builders with it)."""
    backend_classes = [c for c in src.classes.values() if src.is_backend(c) and c.key != BASE]
    members = enum_members(src)
    # the class(es) of each libattn backend
    anchors: Dict[str, List[ClassInfo]] = {}
    member_class = {m: cls for _, m, cls, _ in members}
    for b in backends:
        if b in member_class:
            anchors[b] = [member_class[b]] if member_class[b] is not None else []
        elif b in LIBATTN_ONLY:
            c = src.classes.get(LIBATTN_ONLY[b])
            anchors[b] = [c] if c is not None else []
        else:
            anchors[b] = [c for c in backend_classes if c.defines_name and c.own_name == b]
    target: Dict[Key, str] = {}
    for b, cs in anchors.items():
        for c in cs:
            target[c.key] = b
    by_builder: Dict[Tuple[str, ...], Set[str]] = {}
    for b, cs in anchors.items():
        for c in cs:
            built = src.builders(c)
            if built:
                by_builder.setdefault(built, set()).add(b)
    for c in backend_classes:
        if c.key not in target:
            owners = by_builder.get(src.builders(c), set())
            if len(owners) == 1:
                target[c.key] = next(iter(owners))
    return backend_classes, members, target


def derive(src: Source, backends: List[str]) -> str:
    canonical = set(backends)
    backend_classes, members, target = backend_targets(src, backends)
    # names of each class; where each name comes from
    names: Dict[Key, Set[str]] = {}
    origin: Dict[str, List[str]] = {}
    carriers: Dict[str, List[Optional[ClassInfo]]] = {}
    for enum, member, cls, value in members:
        origin.setdefault(member, []).append(
            f"{enum}.{member}" + (f" ({cls.where()})" if cls else f" (value {value}: no class)"))
        carriers.setdefault(member, []).append(cls)
        if cls is not None:
            names.setdefault(cls.key, set()).add(member)
    for c in sorted(backend_classes, key=lambda c: c.where()):
        n = src.get_name(c)
        if n is None:
            continue  # abstract: no get_name()
        names.setdefault(c.key, set()).add(n)
        origin.setdefault(n, []).append(f"get_name() of {c.where()}")
        carriers.setdefault(n, []).append(c)
    # each name
    resolved: List[Tuple[str, str, str]] = []
    refused: List[Tuple[str, str, str]] = []
    for n in sorted(origin):
        where = "; ".join(origin[n])
        if n in canonical:
            resolved.append((n, n, where))
            continue
        cs = carriers[n]
        owners = {target.get(c.key) if c is not None else None for c in cs}
        if owners == {None}:
            why = ("no class" if all(c is None for c in cs)
                   else "no libattn backend builds with its builder")
            refused.append((n, "-", f"{why}: {where}"))
        elif len(owners) == 1:
            resolved.append((n, next(iter(owners)), where))
        else:
            libs = ", ".join(sorted(o or "none" for o in owners))
            refused.append((n, "-", f"ambiguous ({libs}): {where}"))
    lines = [
        "# vLLM's backend names and the libattn backend each resolves to ('-': none), derived",
        "# from vLLM's source by scripts/vllm_names.py (do not edit; regenerate with --write).",
        "# Columns, tab-separated: vLLM name, libattn backend, where vLLM uses the name.",
        "# tests/c/test_vllm_names.c checks the library against every line.",
    ]
    lines += ["\t".join(r) for r in resolved]
    lines += ["\t".join(r) for r in refused]
    unnamed = [b for b in backends if not any(r[1] == b for r in resolved)]
    lines.append("# libattn backends with no vLLM name: " + (", ".join(unnamed) or "none"))
    return "\n".join(lines) + "\n"


def differs(have: str, want: str, name: str, source: str, fix: str) -> bool:
    """Whether `have` (the text of `name`) is not `want` (made from `source`); if so, prints the
    diff and then `fix`, the command that regenerates it. scripts/coverage_vllm.py uses it too."""
    if have == want:
        return False
    sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                               name, source))
    print(fix)
    return True


def find_vllm(arg: Optional[str]) -> Optional[str]:
    for d in (arg, os.environ.get("ATTN_VLLM_SRC")):
        if d and os.path.isfile(os.path.join(d, REGISTRY)):
            return d
    # the lane's environment (scripts/vllm_venv.sh: $ATTN_VLLM_VENV, else build-bench/vllm-venv)
    venv = os.environ.get("ATTN_VLLM_VENV") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build-bench", "vllm-venv")
    if venv and os.path.exists(os.path.join(venv, "bin", "python")):
        try:
            out = subprocess.run(
                [os.path.join(venv, "bin", "python"), "-c",
                 "import importlib.util, os; s = importlib.util.find_spec('vllm'); "
                 "print(os.path.dirname(s.origin))"],
                capture_output=True, text=True, timeout=120, check=True).stdout.strip()
            if out and os.path.isfile(os.path.join(out, REGISTRY)):
                return out
        except (OSError, subprocess.SubprocessError):
            pass
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library", help="path of libattn.so (gives the built-in backends' names)")
    ap.add_argument("--vllm", help="the vllm package directory (default: see above)")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="write the table to FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 when FILE differs")
    args = ap.parse_args()
    root = find_vllm(args.vllm)
    if root is None:
        print("SKIP: no vLLM source found (--vllm, $ATTN_VLLM_SRC, "
              "$ATTN_VLLM_VENV)")
        return SKIP if args.check else 1
    body = derive(Source(root), libattn_names(args.library))
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(body)
        return 0
    if not args.check:
        sys.stdout.write(body)
        return 0
    with open(args.check, encoding="utf-8") as f:
        text = f.read()
    if differs(text, body, args.check, f"from {root}",
               f"{args.check} differs from vLLM's source at {root}: run python3 "
               f"scripts/vllm_names.py {args.library} --write {args.check}, then give each "
               "backend its names in src/backends/builtin_backends.cc"):
        return 1
    n = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    print(f"{args.check}: the {n} names match vLLM's source at {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
