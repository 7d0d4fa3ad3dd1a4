"""Draws a batch as SVG: one row per request, its cached context and its new query tokens on a
token axis, the KV cache blocks under them with their block ids, the decode/prefill split, and
the virtual batches of chunked local attention.

Pure Python (no numpy, no library calls): :mod:`libattn.attn_inspect` computes what to draw
with libattn and hands plain lists here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence
from xml.sax.saxutils import escape

__all__ = ["RequestRow", "VirtualBatch", "BatchDrawing", "render_svg"]

_ROW = 34  # pixels per request row
_LEFT = 150  # room for the row labels
_RIGHT = 20
_TOP = 54
_WIDTH = 1000

_CONTEXT = "#c9ced6"
_QUERY_DECODE = "#3b82f6"
_QUERY_PREFILL = "#f59e0b"
_VIRTUAL = "#10b981"


@dataclass
class RequestRow:
    """One request of the batch as drawn (in the batch's order after any reorder)."""

    index: int  #: the request's index in the batch the caller described
    context_len: int  #: tokens already in the KV cache (num_computed_tokens)
    query_len: int  #: tokens scheduled this step
    blocks: Sequence[int] = ()  #: the block table row: cdiv(seq_len, block_size) block ids

    @property
    def seq_len(self) -> int:
        return self.context_len + self.query_len


@dataclass
class VirtualBatch:
    """A virtual batch of chunked local attention (make_local_attention_virtual_batches)."""

    row: int  #: the RequestRow (position in the drawing) it belongs to
    query_start: int  #: first query position (token index within the sequence)
    query_len: int
    kv_start: int  #: first key position it attends to
    kv_len: int


@dataclass
class BatchDrawing:
    """Everything :func:`render_svg` draws."""

    rows: List[RequestRow]
    block_size: int
    num_decodes: Optional[int] = None  #: rows before the split are decodes; None: no split
    virtual_batches: List[VirtualBatch] = field(default_factory=list)
    attention_chunk_size: int = 0
    title: str = ""


def _rect(x: float, y: float, w: float, h: float, fill: str, cls: str, **extra: str) -> str:
    attrs = "".join(f' {k.replace("_", "-")}="{escape(str(v))}"' for k, v in extra.items())
    return (f'<rect class="{cls}" x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" '
            f'height="{h:.1f}" fill="{fill}"{attrs}/>')


def _text(x: float, y: float, s: str, size: int = 11, anchor: str = "start", cls: str = "label") -> str:
    return (f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" font-size="{size}" '
            f'font-family="monospace" text-anchor="{anchor}">{escape(s)}</text>')


def render_svg(d: BatchDrawing) -> str:
    """Returns the SVG document for a batch."""
    if d.block_size <= 0:
        raise ValueError(f"block_size must be > 0, got {d.block_size}")
    max_len = max([r.seq_len for r in d.rows] + [1])
    scale = (_WIDTH - _LEFT - _RIGHT) / max_len
    vb_rows = {v.row for v in d.virtual_batches}
    row_h = [_ROW + (12 if i in vb_rows else 0) for i in range(len(d.rows))]
    height = _TOP + sum(row_h) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
           f'viewBox="0 0 {_WIDTH} {height}">',
           f'<rect x="0" y="0" width="{_WIDTH}" height="{height}" fill="white"/>']
    if d.title:
        out.append(_text(10, 18, d.title, 13, cls="title"))
    legend = [(_CONTEXT, "context (cached)"), (_QUERY_DECODE, "query: decode"),
              (_QUERY_PREFILL, "query: prefill")]
    if d.virtual_batches:
        legend.append((_VIRTUAL, f"local virtual batch (chunk {d.attention_chunk_size})"))
    x = 10
    for color, name in legend:
        out.append(_rect(x, 28, 12, 12, color, "legend"))
        out.append(_text(x + 16, 38, name, 10))
        x += 30 + 7 * len(name)
    out.append(_text(_WIDTH - _RIGHT, 38, f"block size {d.block_size}; axis: tokens 0..{max_len}",
                     10, "end"))

    y = _TOP
    for i, r in enumerate(d.rows):
        decode = d.num_decodes is not None and i < d.num_decodes
        label = f"req {r.index}: {r.context_len}+{r.query_len}"
        out.append(_text(_LEFT - 8, y + 15, label, 11, "end"))
        if r.context_len:
            out.append(_rect(_LEFT, y + 4, r.context_len * scale, 16, _CONTEXT, "context",
                             data_request=str(r.index)))
        out.append(_rect(_LEFT + r.context_len * scale, y + 4, r.query_len * scale, 16,
                         _QUERY_DECODE if decode else _QUERY_PREFILL, "query",
                         data_request=str(r.index)))
        nblocks = -(-r.seq_len // d.block_size)
        for b in range(nblocks):
            bx = _LEFT + b * d.block_size * scale
            bw = min(d.block_size, r.seq_len - b * d.block_size) * scale
            out.append(f'<rect class="block" x="{bx:.1f}" y="{y + 22:.1f}" width="{bw:.1f}" '
                       f'height="8" fill="none" stroke="#6b7280" stroke-width="0.7"/>')
            if b < len(r.blocks) and d.block_size * scale >= 7 * len(str(r.blocks[b])) + 2:
                out.append(_text(bx + bw / 2, y + 29.5, str(r.blocks[b]), 7, "middle", "block-id"))
        for v in (v for v in d.virtual_batches if v.row == i):
            vx = _LEFT + v.kv_start * scale
            out.append(f'<rect class="virtual" x="{vx:.1f}" y="{y + 33:.1f}" '
                       f'width="{max(v.kv_len * scale, 0.5):.1f}" height="8" fill="none" '
                       f'stroke="{_VIRTUAL}" stroke-width="1.2"/>')
            out.append(_rect(_LEFT + v.query_start * scale, y + 33, v.query_len * scale, 8,
                             _VIRTUAL, "virtual-query"))
        y += row_h[i]
        if d.num_decodes is not None and i + 1 == d.num_decodes and i + 1 < len(d.rows):
            out.append(f'<line class="split" x1="10" y1="{y - 2:.1f}" x2="{_WIDTH - _RIGHT}" '
                       f'y2="{y - 2:.1f}" stroke="#dc2626" stroke-dasharray="6,3"/>')
            out.append(_text(_WIDTH - _RIGHT, y - 5, f"{d.num_decodes} decodes above, prefills below",
                             10, "end", "split-label"))
    out.append("</svg>")
    return "\n".join(out) + "\n"
