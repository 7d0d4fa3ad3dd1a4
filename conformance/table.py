"""The lane's table (text and Markdown)."""
from __future__ import annotations

from typing import List

from .runner import Result

COLUMNS = ["op or backend", "batches", "fields compared", "mismatches",
           "vLLM refused (libattn too)", "us/batch", "first mismatch (minimal batch)"]


def rows(results: List[Result]) -> List[List[str]]:
    out = []
    for r in results:
        if r.status:
            out.append([r.item.name, "-", "-", "-", "-", "-", f"not compared: {r.status}"])
            continue
        first = f"minimal: {r.minimal} -- {r.first}" if r.first else ""
        if r.batches and r.vllm_refused == r.batches:
            first = (f"vLLM cannot run here: it refused every batch "
                     f"({'libattn too' if r.both_refused == r.batches else 'libattn did not'}); "
                     f"first: {r.first_refusal}")
        if r.lib_raised:
            first = f"({r.lib_raised} libattn raised) " + first
        refused = f"{r.vllm_refused} ({r.both_refused})" if r.vllm_refused else "0"
        per = f"{1e6 * r.seconds / r.batches:.0f}" if r.batches else "-"
        out.append([r.item.name, str(r.batches), str(r.compared), str(r.mismatches), refused,
                    per, first])
    return out


def text(results: List[Result], width: int = 160) -> str:
    rs = rows(results)
    ws = [max(len(c), *(min(len(x[i]), 48) for x in rs)) if rs else len(c)
          for i, c in enumerate(COLUMNS[:-1])]
    fmt = lambda row: "  ".join(str(x).ljust(w) for x, w in zip(row, ws))  # noqa: E731
    lines = [fmt(COLUMNS[:-1]) + "  " + COLUMNS[-1]]
    for row in rs:
        lines.append(fmt(row[:-1]) + "  " + row[-1][: max(width, 60)])
    return "\n".join(lines)


def md_text(s: object) -> str:
    """Text for Markdown (and Doxygen, which renders docs/): vLLM's messages hold Python reprs
    such as ``<lambda>``, which would read as HTML tags."""
    return str(s).replace("<", "&lt;").replace(">", "&gt;")


def markdown(results: List[Result]) -> str:
    esc = lambda s: md_text(s).replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(esc(x) for x in row) + " |" for row in rows(results)]
    return "\n".join(out)


def refusals(results: List[Result]) -> List[str]:
    """One line per item where vLLM refused batches: the first refusal, and whether libattn
    accepted some of them."""
    out = []
    for r in results:
        if r.vllm_refused:
            also = ("libattn refused them too" if r.both_refused == r.vllm_refused else
                    f"libattn accepted {r.vllm_refused - r.both_refused} of them")
            out.append(f"{r.item.name}: vLLM refused {r.vllm_refused} batches ({also}); first: "
                       f"{r.first_refusal}")
    return out
