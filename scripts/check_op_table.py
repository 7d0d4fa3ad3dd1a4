#!/usr/bin/env python3
"""Keeps docs/architecture.md's table of ops honest (ctest: test_op_table).

Every op declared in src/ops's headers (batch_ops.h, cpu_mla_ops.h, state_space_ops.h,
token_query_starts.h, swa_prefill_chunks.h) is
defined in exactly one src/ops/*.cc, which is the one file that holds its algorithm: a tensor op
(its first parameter is `const Exec&`) runs it with ATTN_LAUNCH (src/ops/launch.h), the same
source on the host and the device; a host-only op has no device path. There is no CUDA twin:
kernels/ holds no .cu file. The table between the markers in docs/architecture.md must be what
this script prints (`--write` rewrites it).

    scripts/check_op_table.py [--write] [ROOT]
"""
import glob
import os
import re
import sys

BEGIN, END = "<!-- op table: scripts/check_op_table.py -->", "<!-- end of op table -->"
HEADERS = ["src/ops/batch_ops.h", "src/ops/cpu_mla_ops.h", "src/ops/state_space_ops.h",
           "src/ops/token_query_starts.h", "src/ops/swa_prefill_chunks.h"]
# a declaration at namespace level: return type, name, parameters up to ');'
DECL = re.compile(r"^(?:inline\s+)?([A-Za-z_][\w:<>]*)\s+([a-z_][a-z0-9_]*)\(([^;{]*?)\)\s*(?:;|\{)",
                  re.M | re.S)


def declared_ops(root):
    ops = {}
    for h in HEADERS:
        text = open(os.path.join(root, h)).read()
        for m in DECL.finditer(text):
            ret, name, params = m.groups()
            if ret in ("return", "using", "namespace"):
                continue
            inline = text[max(0, m.start() - 8):m.start() + 7].strip().startswith("inline")
            if inline and "Exec" not in params.split(",")[0]:
                continue  # an inline convenience overload (defined in the header)
            tensor = params.strip().startswith("const Exec&")
            ops.setdefault(name, tensor)
    return ops


def defining_files(root, name):
    pat = re.compile(r"^[A-Za-z_][\w:<>]*\s+" + re.escape(name) + r"\(", re.M)
    return sorted(os.path.relpath(f, root) for f in glob.glob(os.path.join(root, "src/ops/*.cc"))
                  if pat.search(open(f).read()))


def table(root):
    rows, problems = [], []
    for name, tensor in sorted(declared_ops(root).items(), key=lambda kv: kv[0]):
        files = defining_files(root, name)
        if len(files) != 1:
            problems.append(f"ops::{name} is defined in {len(files)} files: {files}")
            continue
        if tensor and "ATTN_LAUNCH" not in open(os.path.join(root, files[0])).read():
            problems.append(f"ops::{name} takes an Exec but {files[0]} has no ATTN_LAUNCH")
        rows.append(f"| `{name}` | {'host and device' if tensor else 'host only'} | `{files[0]}` |")
    twins = glob.glob(os.path.join(root, "kernels", "**", "*.cu"), recursive=True)
    if twins:
        problems.append(f"kernels/ holds .cu files (an op written twice?): {twins}")
    text = "\n".join(["| op | paths | the one file with its algorithm |", "|---|---|---|", *rows])
    return text, problems, len(rows)


def main():
    args = [a for a in sys.argv[1:] if a != "--write"]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text, problems, n = table(root)
    doc_path = os.path.join(root, "docs", "architecture.md")
    doc = open(doc_path).read()
    if BEGIN not in doc or END not in doc:
        problems.append(f"docs/architecture.md has no {BEGIN} ... {END} markers")
    else:
        start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
        if "--write" in sys.argv:
            doc = doc[:start] + "\n" + text + "\n" + doc[end:]
            open(doc_path, "w").write(doc)
        elif doc[start:end].strip() != text.strip():
            problems.append("docs/architecture.md's op table is not the ops' (run "
                            "scripts/check_op_table.py --write)")
    for p in problems:
        print("FAIL: " + p)
    if not problems:
        print(f"op table: OK ({n} ops, each defined in one src/ops file; no kernels/*.cu)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
