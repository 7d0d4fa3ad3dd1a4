#!/usr/bin/env python3
"""README's table of built-in backends, written from the library itself.

Every row comes from attn_backend_info (name, the vLLM release its builder matches, the KV cache
spec kinds it builds for, the names vLLM 0.33.0 uses for it), so the table cannot drift from the
registry:

    python3 scripts/backend_table.py build/libattn.so             # print the table
    python3 scripts/backend_table.py build/libattn.so --write README.md
    python3 scripts/backend_table.py build/libattn.so --check README.md   # ctest test_readme_backends

--write and --check work on the lines between BEGIN and END below in the given file.
"""
import argparse
import difflib
import os
import sys

BEGIN = "<!-- backend-table: begin (scripts/backend_table.py --write README.md) -->"
END = "<!-- backend-table: end -->"


def table(library_path: str) -> str:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings",
                                    "python"))
    import libattn  # noqa: E402 (the binding of this checkout)

    lib = libattn.Library(library_path)
    rows = ["| backend | vLLM release its builder matches | KV cache spec kinds | vLLM names |",
            "|---|---|---|---|"]
    for info in lib.backend_infos():
        if info.origin != libattn.BackendOrigin.BUILTIN:
            continue
        kinds = ", ".join(sorted(k.name for k in info.kinds))
        names = ", ".join(info.vllm_names) or "none"
        rows.append(f"| {info.name} | {info.vllm_release or 'unknown'} | {kinds} | {names} |")
    return "\n".join(rows) + "\n"


def splice(text: str, body: str, path: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no '{BEGIN}' ... '{END}' block")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + "\n" + body + END + tail


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library", help="path of libattn.so")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="replace the table in FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 when FILE's table differs")
    args = ap.parse_args()
    body = table(args.library)
    target = args.write or args.check
    if target is None:
        sys.stdout.write(body)
        return 0
    with open(target, encoding="utf-8") as f:
        text = f.read()
    new = splice(text, body, target)
    if args.write:
        with open(target, "w", encoding="utf-8") as f:
            f.write(new)
        return 0
    if new != text:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                                   target, target + " (from the library)"))
        print(f"{target}'s backend table differs from the library's registry: run "
              f"python3 scripts/backend_table.py {args.library} --write {target}")
        return 1
    print(f"{target}: the backend table matches the {body.count(chr(10)) - 2} built-in backends")
    return 0


if __name__ == "__main__":
    sys.exit(main())
