#!/usr/bin/env python3
"""Which of vLLM's attention metadata builders and metadata utilities libattn maps: an audit.

Reads vLLM's source (an `ast` scan of the installed package or an unpacked source tree; nothing
is imported, so it runs without torch) and prints, for vLLM 0.33.0 or whatever vLLM it is
pointed at:

    python3 scripts/coverage_vllm.py build/libattn.so                 # the report
    python3 scripts/coverage_vllm.py build/libattn.so --vllm /path/to/site-packages/vllm
    python3 scripts/coverage_vllm.py build/libattn.so --write tests/data/vllm_coverage.txt
    python3 scripts/coverage_vllm.py build/libattn.so --check tests/data/vllm_coverage.txt
    python3 scripts/coverage_vllm.py build/libattn.so --write-readme README.md

--check FILE also checks README.md's excerpt (the lines between README_BEGIN and README_END:
the two summary lines and the names of what is not mapped, derived from the report), so the
figures README quotes cannot drift from the audit; --write-readme rewrites that excerpt.

The vLLM source is found as scripts/vllm_names.py finds it (--vllm DIR, $ATTN_VLLM_SRC, the
`vllm` package of the lane's environment); --check exits 77 when there is none, 1 when the report differs from FILE (scripts/conformance.sh runs it
first, keeping tests/data/vllm_coverage.txt, and so README's quoted figures, current).

Builders. Every class descending from vLLM's `AttentionMetadataBuilder` (through any chain of
bases, resolved through imports), plus the builder classes vLLM's wrapper factories define
inside a function on `underlying_attn_backend.get_builder_cls()` (chunked local, cross,
encoder-only, static sink, fast prefill, Whisper's block pooling); concrete when no method of
its MRO is still `@abstractmethod`. A builder is mapped when
- it is the builder (`get_builder_cls()`, inherited as Python resolves it) of a vLLM backend
  class that is a libattn backend's: the class rule of scripts/vllm_names.py
  (`backend_targets`: the enum member or `get_name()` naming a libattn backend, or a class that
  builds with the builder of exactly one libattn backend's class), the backend names coming
  from the library (`attn_backend_info`); vLLM's composite builder is mapped when a composite
  backend vLLM makes is a libattn backend's;
- or it is defined inside a factory that docs/backends/wrappers.md's table names in its vLLM
  column (libattn's wrappers are asked for by a spec kind or an option, not by a backend name).
A builder that no libattn backend maps is "not offered" instead of "not mapped" when a
docs/backends table has the row `| NOT_OFFERED | `Class` (`path`) | why |`: a builder whose
own build cannot run in this vLLM (a libattn backend matching it would fail every build).

Utilities. The scope is the public top-level functions of vLLM's metadata utility modules
(UTILITY_MODULES), the public methods of `CommonAttentionMetadata`, and every other function
or method that docs/batch_utilities.md's table of ABI functions names in its vLLM column (the
private `_make_metadata_with_slice`, `BlockTable.compute_slot_mapping`, FlashInfer's
`_compute_flashinfer_kv_metadata`). A utility `name` is mapped when the library exports
`attn_<name>` (abi/symbols.txt, which scripts/check_symbols.sh keeps equal to the library), or,
for a method of `CommonAttentionMetadata`, `attn_common_metadata_<name>`, or when that table
maps it to an exported function. The others are read from docs/batch_utilities.md, the one
place that says why:
- the table under the heading containing OUT_HEADING: utilities libattn does not export on
  purpose, with the reason ("left out");
- the table under the heading containing SCOPE_HEADING: the functions of those modules that
  are not metadata utilities, or are another exported function in another form ("outside");
- anything else is "missing". A documented name that vLLM's source lacks, or that is also
  mapped, is listed as a contradiction.
Standard library only; Python 3.8+.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from typing import Any, Dict, List, Optional, Set, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vllm_names  # noqa: E402  (the same source scan and backend rule)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILDER_BASE = ("vllm.v1.attention.backend", "AttentionMetadataBuilder")
WRAPPED_BUILDER = "get_builder_cls"
UTILITY_MODULES = (
    "v1/attention/backends/utils.py",
    "v1/worker/block_table.py",
    "v1/worker/ubatch_utils.py",
    "v1/worker/cp_utils.py",
    "v1/attention/ops/metadata.py",
)
COMMON = ("v1/attention/backend.py", "CommonAttentionMetadata")
# modules whose functions and methods docs/batch_utilities.md's table may name besides those
EXTRA_MODULES = (COMMON[0], "v1/attention/backends/flashinfer.py")
README_BEGIN = "<!-- vllm-coverage: begin (scripts/coverage_vllm.py --write-readme README.md) -->"
README_END = "<!-- vllm-coverage: end -->"
OUT_HEADING = "libattn does not export"
SCOPE_HEADING = "not metadata utilities"
SKIP = 77


def rel(path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(ROOT, path)


# ---------------------------------------------------------------------------- builders

_TREES: Dict[str, ast.Module] = {}


def tree_of(src: vllm_names.Source, c: vllm_names.ClassInfo) -> ast.Module:
    path = os.path.join(os.path.dirname(src.root), c.path)
    if path not in _TREES:
        with open(path, encoding="utf-8") as f:
            _TREES[path] = ast.parse(f.read())
    return _TREES[path]


def nested_builders(src: vllm_names.Source) -> Dict[vllm_names.Key, str]:
    """Builder classes defined inside a function on `X.get_builder_cls()`: their function."""
    out: Dict[vllm_names.Key, str] = {}
    for (module, name), c in src.classes.items():
        if not any(isinstance(b, ast.Name) for b in c.bases) or src.bases(c):
            continue
        with open(os.path.join(os.path.dirname(src.root), c.path), encoding="utf-8") as f:
            if WRAPPED_BUILDER not in f.read():
                continue
        for fn in tree_of(src, c).body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            wrapped = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign)
                       for t in n.targets if isinstance(t, ast.Name)
                       and isinstance(n.value, ast.Call)
                       and getattr(n.value.func, "attr", None) == WRAPPED_BUILDER}
            for n in ast.walk(fn):
                if (isinstance(n, ast.ClassDef) and n.name == name
                        and any(isinstance(b, ast.Name) and b.id in wrapped for b in n.bases)):
                    out[(module, name)] = fn.name
    return out


def enclosing_function(src: vllm_names.Source, c: vllm_names.ClassInfo) -> Optional[str]:
    for fn in tree_of(src, c).body:
        if isinstance(fn, ast.FunctionDef):
            if any(isinstance(n, ast.ClassDef) and n.name == c.name for n in ast.walk(fn)):
                return fn.name
    return None


def is_builder(src: vllm_names.Source, c: vllm_names.ClassInfo, seen: Set) -> bool:
    if c.key == BUILDER_BASE:
        return True
    if c.key in seen:
        return False
    seen.add(c.key)
    return any(is_builder(src, b, seen) for b in src.bases(c))


def is_abstract(src: vllm_names.Source, c: vllm_names.ClassInfo) -> bool:
    """Whether a method is still @abstractmethod after Python's (depth-first here) MRO."""
    resolved: Dict[str, bool] = {}
    order, stack, seen = [], [c], set()
    while stack:
        k = stack.pop(0)
        if k.key in seen:
            continue
        seen.add(k.key)
        order.append(k)
        stack = src.bases(k) + stack
    for k in order:
        for m, abstract in k.methods.items():
            resolved.setdefault(m, abstract)
    return any(resolved.values())


def wrapper_factories(path: str) -> Dict[str, str]:
    """docs/backends/wrappers.md's table: vLLM factory -> libattn wrapper."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("|"):
                continue
            cells = [x.strip() for x in line.strip().strip("|").split("|")]
            for name in re.findall(r"`(create_\w+)`", line):
                out[name] = "wrapper: " + cells[0]
    return out


BACKEND_ROW = re.compile(r"^\| ([A-Z][A-Z0-9_]+) \| `(\w+)`(?: \(`([^`]+)`\))?(?: \| ([^|]*))?")
#: the first cell of a docs/backends row naming a builder libattn does not offer, and why
NOT_OFFERED = "NOT_OFFERED"


def documented_builders(pages: str, backends: List[str], reasons: bool = False) -> List[Any]:
    """(libattn backend, vLLM builder class, path or "") of the docs/backends tables whose rows
    begin `| BACKEND | `VllmBuilderClass` (`path`) |`: the builder of a libattn backend whose
    name is not vLLM's (the DeepSeek sparse-SWA subclasses); with ``reasons``, the next cell too
    (NOT_OFFERED rows: why)."""
    out: List[Any] = []
    for page in sorted(os.listdir(pages)):
        if page.endswith(".md"):
            with open(os.path.join(pages, page), encoding="utf-8") as f:
                for line in f:
                    m = BACKEND_ROW.match(line)
                    if m and m.group(1) in backends and m.group(2).endswith("Builder"):
                        row = (m.group(1), m.group(2), m.group(3) or "")
                        out.append(row + ((m.group(4) or "").strip(),) if reasons else row)
    return out


def builders_report(src: vllm_names.Source, backends: List[str], wrappers_md: str,
                    pages: str) -> List[str]:
    backend_classes, members, target = vllm_names.backend_targets(src, backends)
    nested = nested_builders(src)
    builders = [c for c in src.classes.values()
                if c.key != BUILDER_BASE and (is_builder(src, c, set()) or c.key in nested)]
    full = {c.key: f"{c.module}.{c.name}" for c in builders}
    # builder -> the libattn backends (or wrapper) that build with it, and vLLM's names using it
    mapped: Dict[str, Set[str]] = {}
    used_by: Dict[str, Set[str]] = {}
    member_names: Dict[vllm_names.Key, Set[str]] = {}
    for _, member, cls, _ in members:
        if cls is not None:
            member_names.setdefault(cls.key, set()).add(member)
    composite = next((full[c.key] for c in builders if c.name.startswith("Composite")
                      and enclosing_function(src, c) == vllm_names.COMPOSITE_FACTORY), None)

    def named(b: str) -> str:
        return composite if b.startswith(f"<{vllm_names.COMPOSITE_FACTORY}") and composite else b

    for c in backend_classes:
        names = set(member_names.get(c.key, set()))
        n = src.get_name(c)
        if n:
            names.add(n)
        if not names:
            continue  # an abstract backend (no get_name()): its subclasses name the builder
        for b in src.builders(c):
            used_by.setdefault(named(b), set()).update(names)
        if c.key in target:
            for b in src.builders(c, default_only=True):
                mapped.setdefault(named(b), set()).add(target[c.key])
    for backend, cls, path in documented_builders(pages, backends):
        found = [c for c in builders if c.name == cls and c.path.endswith(path)]
        if len(found) == 1:
            mapped.setdefault(full[found[0].key], set()).add(backend)
    not_offered = {}
    for _, cls, path, why in documented_builders(pages, [NOT_OFFERED], reasons=True):
        found = [c for c in builders if c.name == cls and c.path.endswith(path)]
        if len(found) == 1:
            not_offered[full[found[0].key]] = why
    # a base that no named backend builds with (only its subclasses are built) is not counted
    bases = {b.key for c in builders for b in src.bases(c)}
    counted, abstract, base_only = [], [], []
    for c in sorted(builders, key=lambda c: c.where()):
        if is_abstract(src, c):
            abstract.append(c)
        elif c.key in bases and full[c.key] not in used_by and full[c.key] not in mapped:
            base_only.append(c)
        else:
            counted.append(c)
    factories = wrapper_factories(wrappers_md)
    yes, no, out_rows = [], [], []
    for c in counted:
        if full[c.key] in not_offered and full[c.key] not in mapped:
            out_rows.append(f"  {c.where()}\t{not_offered[full[c.key]]}")
            continue
        if c.key in nested:
            fn = nested[c.key]
            if fn in factories:
                yes.append(f"  {c.where()}\t{factories[fn]} ({fn})")
            else:
                no.append(f"  {c.where()}\t(vLLM: {fn}; no libattn wrapper)")
        elif full[c.key] in mapped:
            yes.append(f"  {c.where()}\t{', '.join(sorted(mapped[full[c.key]]))}")
        else:
            users = ", ".join(sorted(used_by.get(full[c.key], set()))) or "no backend name"
            no.append(f"  {c.where()}\t(vLLM: {users})")
    out = [f"builders: {len(yes)} of {len(counted)} concrete builders mapped, "
           f"{len(out_rows)} not offered (vLLM's own build cannot run), {len(no)} not mapped"]
    out += ["mapped builders (class, libattn backend or wrapper):"] + yes
    out += ["builders not offered (class, why):"] + out_rows
    out += ["builders not mapped (class, vLLM's names of the backends that build with it):"] + no
    out += ["not counted: abstract (an @abstractmethod left):"]
    out += [f"  {c.where()}" for c in abstract]
    out += ["not counted: bases only (no backend builds with them, only with their subclasses):"]
    out += [f"  {c.where()}" for c in base_only]
    return out


# ---------------------------------------------------------------------------- utilities

def defs(root: str, module: str) -> Dict[str, str]:
    """Qualified name -> bare name of the functions and methods of a module."""
    out: Dict[str, str] = {}
    with open(os.path.join(root, module), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = node.name
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out[f"{node.name}.{item.name}"] = item.name
    return out


def vllm_name(cell: str) -> Optional[str]:
    """The function a docs cell names: its first `...` code span, arguments and a file path
    (`v1/worker/cp_utils.py:f`) dropped."""
    m = re.search(r"`([^`]+)`", cell)
    if not m:
        return None
    name = m.group(1).split(":")[-1]
    name = re.match(r"[A-Za-z_][\w.]*", name)
    return name.group(0).rstrip(".") if name else None


def docs_tables(path: str) -> Tuple[Dict[str, str], Dict[str, str], Dict[str, str]]:
    """docs/batch_utilities.md: (vLLM name -> ABI function) from the table of ABI functions,
    (name -> reason) of the left-out table, (name -> reason) of the out-of-scope table."""
    abi: Dict[str, str] = {}
    out: Dict[str, str] = {}
    scope: Dict[str, str] = {}
    section = ""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                section = line
                continue
            if not line.startswith("|") or line.startswith("|---"):
                continue
            cells = [x.strip() for x in line.strip().strip("|").split("|")]
            if len(cells) < 2:
                continue
            if OUT_HEADING in section or SCOPE_HEADING in section:
                name = vllm_name(cells[0])
                if name:
                    (out if OUT_HEADING in section else scope)[name] = cells[1]
            elif cells[0].startswith("`attn_"):
                fn = cells[0].strip("`").split("`")[0]
                name = fn[len("attn_"):] if cells[1] == "same name" else vllm_name(cells[1])
                if name:
                    abi.setdefault(name, fn)
    return abi, out, scope


def exported(symbols: str) -> Set[str]:
    with open(symbols, encoding="utf-8") as f:
        return {m.group(0) for line in f for m in [re.match(r"attn_\w+", line)] if m}


def utilities_report(root: str, symbols_txt: str, docs_md: str) -> List[str]:
    abi, left_out, outside = docs_tables(docs_md)
    symbols = exported(symbols_txt)
    scope: Dict[str, str] = {}  # qualified name -> bare name
    for module in UTILITY_MODULES:
        for q, n in defs(root, module).items():
            if "." not in q and not n.startswith("_"):
                scope[q] = n
    for q, n in defs(root, COMMON[0]).items():
        if q.startswith(COMMON[1] + ".") and not n.startswith("_"):
            scope[q] = n
    everything: Dict[str, str] = {}
    for module in UTILITY_MODULES + EXTRA_MODULES:
        everything.update(defs(root, module))
    for name in abi:  # what the table of ABI functions names is a utility too
        for q, n in everything.items():
            if name in (q, n) and not q.startswith(("_", "AttentionMetadataBuilder.")):
                scope.setdefault(q, n)
    mapped, out_rows, outside_rows, missing, contradictions = [], [], [], [], []
    documented = set(left_out) | set(outside)
    for q in sorted(scope, key=str.lower):
        n = scope[q]
        fn = None
        for cand in (f"attn_{n}",
                     f"attn_common_metadata_{n}" if q.startswith(COMMON[1] + ".") else None,
                     abi.get(q), abi.get(n)):
            if cand and cand in symbols:
                fn = cand
                break
        doc = next((k for k in (q, n) if k in documented), None)
        if fn and doc:
            contradictions.append(f"  {q}: exported as {fn} and documented as not exported")
        elif fn:
            mapped.append(f"  {q}\t{fn}")
        elif doc in left_out:
            out_rows.append(f"  {q}\t{left_out[doc]}")
        elif doc in outside:
            outside_rows.append(f"  {q}\t{outside[doc]}")
        else:
            missing.append(f"  {q}")
    known = set(scope) | set(scope.values())
    for k in sorted(documented - known):
        contradictions.append(f"  {k}: documented in {os.path.basename(docs_md)} but not a "
                              "function of vLLM's utility modules")
    utilities = len(mapped) + len(out_rows) + len(missing)
    out = [f"utilities: {len(mapped)} of {utilities} mapped, {len(out_rows)} left out with a "
           f"reason, {len(missing)} missing ({len(outside_rows)} functions of the modules "
           "outside the scope, with a reason)"]
    out += ["mapped utilities (vLLM, libattn):"] + mapped
    out += ["left out on purpose (vLLM, why):"] + out_rows
    out += ["missing (vLLM):"] + missing
    out += ["outside the scope (vLLM, why):"] + outside_rows
    if contradictions:
        out += ["contradictions (fix docs/batch_utilities.md):"] + contradictions
    return out


def report(root: str, library: str, symbols: str, docs: str, wrappers: str, pages: str) -> str:
    src = vllm_names.Source(root)
    lines = [
        "# vLLM's attention metadata builders and metadata utilities that libattn maps, from",
        "# vLLM's source by scripts/coverage_vllm.py (do not edit; regenerate with --write).",
    ]
    lines += builders_report(src, vllm_names.libattn_names(library), wrappers, pages)
    lines += utilities_report(root, symbols, docs)
    return "\n".join(lines) + "\n"


def excerpt(body: str) -> str:
    """README's quote of the report: its summary lines and the names of what is not mapped."""
    lines = ["```", "$ python3 scripts/coverage_vllm.py build/libattn.so   # vLLM 0.33.0"]
    section = ""
    lists: Dict[str, List[str]] = {}
    for line in body.splitlines():
        if line.startswith(("builders:", "utilities:")):
            lines.append(line)
        elif line and not line.startswith(("#", " ")):
            section = line.split(" (")[0]
        elif line.startswith("  "):
            name = line.strip().split("\t")[0]
            if section.startswith("builders not"):  # vllm/<dir>/<file>.py:Class -> Class (dir)
                path, _, cls = name.partition(":")
                name = f"{cls} ({os.path.dirname(path)[len('vllm/'):]})"
            lists.setdefault(section, []).append(name)
    for section in ("builders not offered", "builders not mapped", "left out on purpose",
                    "missing"):
        names = lists.get(section, [])
        lines.append(f"{section} ({len(names)}):" + ("" if names else " none"))
        lines += [f"  {n}" for n in names]
    lines.append("```")
    return "\n".join(lines) + "\n"


def readme_block(path: str) -> Tuple[str, int, int]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        raise SystemExit(f"{path}: no {README_BEGIN} ... {README_END} block")
    return text, begin + len(README_BEGIN) + 1, end


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library", help="path of libattn.so (gives the built-in backends' names)")
    ap.add_argument("--vllm", help="the vllm package directory (default: as vllm_names.py)")
    ap.add_argument("--symbols", default=rel("abi/symbols.txt"),
                    help="libattn's exported symbols (default: abi/symbols.txt)")
    ap.add_argument("--docs", default=rel("docs/batch_utilities.md"),
                    help="the utilities' page with the ABI table and the reasons")
    ap.add_argument("--wrappers", default=rel("docs/backends/wrappers.md"),
                    help="the wrappers' page with vLLM's factories")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="write the report to FILE")
    group.add_argument("--check", metavar="FILE",
                       help="exit 1 when FILE or README's excerpt (--readme) differs")
    group.add_argument("--write-readme", metavar="README",
                       help="rewrite README's excerpt of the report")
    ap.add_argument("--readme", default=rel("README.md"), help="the README --check checks")
    args = ap.parse_args()
    root = vllm_names.find_vllm(args.vllm)
    if root is None:
        print("SKIP: no vLLM source found (--vllm, $ATTN_VLLM_SRC, "
              "$ATTN_VLLM_VENV)")
        return SKIP if args.check else 1
    body = report(root, args.library, args.symbols, args.docs, args.wrappers,
                  os.path.dirname(args.wrappers))
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(body)
        return 0
    if args.write_readme:
        text, begin, end = readme_block(args.write_readme)
        with open(args.write_readme, "w", encoding="utf-8") as f:
            f.write(text[:begin] + excerpt(body) + text[end:])
        return 0
    if not args.check:
        sys.stdout.write(body)
        return 0
    with open(args.check, encoding="utf-8") as f:
        text = f.read()
    if vllm_names.differs(text, body, args.check, f"from {root}",
                          f"{args.check} differs from the audit of {root}: run python3 "
                          f"scripts/coverage_vllm.py {args.library} --write {args.check} and "
                          f"--write-readme README.md, then the prose around README's figures"):
        return 1
    readme, begin, end = readme_block(args.readme)
    if vllm_names.differs(readme[begin:end], excerpt(body), args.readme, "the audit",
                          f"{args.readme}'s quote of the audit differs: run python3 "
                          f"scripts/coverage_vllm.py {args.library} --write-readme {args.readme}"):
        return 1
    print(f"{args.check}: the audit of {root} is unchanged")
    print("\n".join(line for line in text.splitlines() if line.startswith(("builders:",
                                                                          "utilities:"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
