"""Draws a batch as SVG: one row per request, its cached context and its new query tokens on a
token axis, the KV cache blocks under them with their block ids, and what a backend built of it:
the decode/prefill split, the virtual batches of chunked local attention, FlashInfer's pages,
MLA's context chunks, Mamba's chunk boundaries and the cascade prefix.

Each kind of element is one ``<g>`` group whose ``class`` names it (``input``, ``split``,
``virtual-batches``, ``paged-kv``, ``mla-chunks``, ``mamba-chunks``, ``cascade``,
``out-of-order``, ``notes``, ``legend``); a group is present only when there is something to draw
in it.

Pure Python (no numpy, no library calls): :mod:`libattn.inspect_tool` computes what to draw
with libattn and hands plain lists here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape

__all__ = ["RequestRow", "VirtualBatch", "PagedKv", "Span", "BatchDrawing", "render_svg"]

_ROW = 34  # pixels per request row (its bar and its blocks)
_LANE = 12  # pixels per extra lane under a row (virtual batches, pages, MLA chunks)
_LEFT = 150  # room for the row labels
_RIGHT = 20
_TOP = 64
_WIDTH = 1000
_NOTE = 14  # pixels per note line
_SPLIT_GAP = 14  # pixels between the last decode row and the first prefill row

_CONTEXT = "#c9ced6"
_QUERY_DECODE = "#3b82f6"
_QUERY_PREFILL = "#f59e0b"
_VIRTUAL = "#10b981"
_PAGE = "#8b5cf6"
_MLA = ("#ec4899", "#0ea5e9")  # alternate chunks
_MAMBA = "#111827"
_CASCADE = "#fde68a"
_WARN = "#dc2626"


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
class PagedKv:
    """One request's pages in FlashInfer's paged KV layout (paged_kv_indptr / _indices /
    _last_page_len)."""

    row: int
    token_start: int  #: first token its pages hold (past a cascade prefix)
    page_size: int
    num_pages: int
    last_page_len: int
    page_ids: Sequence[int] = ()  #: paged_kv_indices of the request ([] when not on the host)


@dataclass
class Span:
    """A token range of a request row (an MLA context chunk: ``index`` is the chunk)."""

    row: int
    start: int
    length: int
    index: int = 0


@dataclass
class BatchDrawing:
    """Everything :func:`render_svg` draws."""

    rows: List[RequestRow]
    block_size: int
    num_decodes: Optional[int] = None  #: rows before the split are decodes; None: no split
    virtual_batches: List[VirtualBatch] = field(default_factory=list)
    attention_chunk_size: int = 0
    title: str = ""
    backend: str = ""  #: the backend whose metadata is drawn ("" : the input batch only)
    notes: List[str] = field(default_factory=list)  #: lines under the rows (source, warnings)
    out_of_order: List[int] = field(default_factory=list)  #: decode-sized rows after the split
    warning: bool = False  #: the notes hold a reorder warning (drawn in red)
    paged_kv: List[PagedKv] = field(default_factory=list)
    mla_chunks: List[Span] = field(default_factory=list)
    mamba_boundaries: List[Tuple[int, int]] = field(default_factory=list)  #: (row, token)
    cascade_prefix_len: int = 0
    cascade_shared_pages: Sequence[int] = ()


def _rect(x: float, y: float, w: float, h: float, fill: str, cls: str, **extra: str) -> str:
    attrs = "".join(f' {k.replace("_", "-")}="{escape(str(v))}"' for k, v in extra.items())
    return (f'<rect class="{cls}" x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" '
            f'height="{h:.1f}" fill="{fill}"{attrs}/>')


def _text(x: float, y: float, s: str, size: int = 11, anchor: str = "start", cls: str = "label",
          fill: str = "black") -> str:
    return (f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" font-size="{size}" '
            f'font-family="monospace" text-anchor="{anchor}" fill="{fill}">{escape(s)}</text>')


def _lanes(d: BatchDrawing) -> List[List[str]]:
    """The extra lanes of every row, in drawing order."""
    lanes: List[List[str]] = [[] for _ in d.rows]
    for name, rows in (("virtual", {v.row for v in d.virtual_batches}),
                       ("paged", {p.row for p in d.paged_kv if p.num_pages}),
                       ("mla", {s.row for s in d.mla_chunks})):
        for r in sorted(rows):
            if 0 <= r < len(d.rows):
                lanes[r].append(name)
    return lanes


def render_svg(d: BatchDrawing) -> str:
    """Returns the SVG document for a batch."""
    if d.block_size <= 0:
        raise ValueError(f"block_size must be > 0, got {d.block_size}")
    max_len = max([r.seq_len for r in d.rows] + [1])
    scale = (_WIDTH - _LEFT - _RIGHT) / max_len
    lanes = _lanes(d)
    row_h = [_ROW + _LANE * len(lanes[i]) for i in range(len(d.rows))]
    split_after = (d.num_decodes - 1 if d.num_decodes is not None and
                   0 < d.num_decodes < len(d.rows) else None)
    if split_after is not None:
        row_h[split_after] += _SPLIT_GAP  # room for the split line and its label
    rows_bottom = _TOP + sum(row_h)
    height = rows_bottom + 16 + _NOTE * len(d.notes) + 12
    groups: Dict[str, List[str]] = {}

    def g(name: str) -> List[str]:
        return groups.setdefault(name, [])

    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
            f'viewBox="0 0 {_WIDTH} {height}">',
            f'<rect x="0" y="0" width="{_WIDTH}" height="{height}" fill="white"/>']
    title = d.title + (f" - what {d.backend} built" if d.backend else "")
    if title:
        head.append(_text(10, 18, title, 13, cls="title"))

    legend = [(_CONTEXT, "context (cached)"), (_QUERY_DECODE, "query: decode"),
              (_QUERY_PREFILL, "query: prefill")]
    if d.virtual_batches:
        legend.append((_VIRTUAL, f"local virtual batch (chunk {d.attention_chunk_size})"))
    if any(p.num_pages for p in d.paged_kv):
        legend.append((_PAGE, "FlashInfer pages"))
    if d.mla_chunks:
        legend.append((_MLA[0], "MLA context chunks"))
    if d.mamba_boundaries:
        legend.append((_MAMBA, "Mamba chunk boundary"))
    if d.cascade_prefix_len:
        legend.append((_CASCADE, "cascade shared prefix"))
    x = 10
    for color, name in legend:
        g("legend").append(_rect(x, 28, 12, 12, color, "legend-key"))
        g("legend").append(_text(x + 16, 38, name, 10))
        x += 30 + 7 * len(name)
    g("legend").append(_text(_WIDTH - _RIGHT, _TOP - 4, f"block size {d.block_size}; axis: "
                             f"tokens 0..{max_len}", 10, "end"))

    if d.cascade_prefix_len:
        w = d.cascade_prefix_len * scale
        g("cascade").append(_rect(_LEFT, _TOP, w, rows_bottom - _TOP, _CASCADE, "cascade-prefix",
                                  fill_opacity="0.45", stroke="#d97706",
                                  stroke_dasharray="4,2"))
        label = f"cascade: shared prefix {d.cascade_prefix_len} tokens" + (
            f", pages {list(d.cascade_shared_pages)}" if d.cascade_shared_pages else "")
        g("cascade").append(_text(_LEFT + 2, rows_bottom + 11, label, 10, cls="cascade-label"))

    late = set(d.out_of_order)
    y = _TOP
    for i, r in enumerate(d.rows):
        decode = d.num_decodes is not None and i < d.num_decodes
        inp = g("input")
        inp.append(_text(_LEFT - 8, y + 15, f"req {r.index}: {r.context_len}+{r.query_len}",
                         11, "end"))
        if r.context_len:
            inp.append(_rect(_LEFT, y + 4, r.context_len * scale, 16, _CONTEXT, "context",
                             data_request=str(r.index)))
        inp.append(_rect(_LEFT + r.context_len * scale, y + 4, r.query_len * scale, 16,
                         _QUERY_DECODE if decode else _QUERY_PREFILL, "query",
                         data_request=str(r.index)))
        nblocks = -(-r.seq_len // d.block_size)
        for b in range(nblocks):
            bx = _LEFT + b * d.block_size * scale
            bw = min(d.block_size, r.seq_len - b * d.block_size) * scale
            inp.append(f'<rect class="block" x="{bx:.1f}" y="{y + 22:.1f}" width="{bw:.1f}" '
                       f'height="8" fill="none" stroke="#6b7280" stroke-width="0.7"/>')
            if b < len(r.blocks) and d.block_size * scale >= 7 * len(str(r.blocks[b])) + 2:
                inp.append(_text(bx + bw / 2, y + 29.5, str(r.blocks[b]), 7, "middle",
                                 "block-id"))
        if i in late:
            g("out-of-order").append(
                f'<rect class="misordered" x="{_LEFT + r.context_len * scale - 1:.1f}" '
                f'y="{y + 3:.1f}" width="{max(r.query_len * scale, 0.5) + 2:.1f}" height="18" '
                f'fill="none" stroke="{_WARN}" stroke-width="2" stroke-dasharray="3,2"/>')
            g("out-of-order").append(_text(_LEFT - 8, y + 27, "out of order", 8, "end",
                                           "misordered-label", _WARN))
        for t_row, tok in d.mamba_boundaries:
            if t_row == i:
                tx = _LEFT + tok * scale
                g("mamba-chunks").append(
                    f'<line class="mamba-boundary" x1="{tx:.1f}" y1="{y + 1:.1f}" '
                    f'x2="{tx:.1f}" y2="{y + 23:.1f}" stroke="{_MAMBA}" stroke-width="1.5"/>')
        ly = y + _ROW - 1
        for lane in lanes[i]:
            if lane == "virtual":
                for v in (v for v in d.virtual_batches if v.row == i):
                    vx = _LEFT + v.kv_start * scale
                    g("virtual-batches").append(
                        f'<rect class="virtual" x="{vx:.1f}" y="{ly:.1f}" '
                        f'width="{max(v.kv_len * scale, 0.5):.1f}" height="8" fill="none" '
                        f'stroke="{_VIRTUAL}" stroke-width="1.2"/>')
                    g("virtual-batches").append(_rect(_LEFT + v.query_start * scale, ly,
                                                      v.query_len * scale, 8, _VIRTUAL,
                                                      "virtual-query"))
            elif lane == "paged":
                mine = [p for p in d.paged_kv if p.row == i]
                for p in mine:
                    px = _LEFT + p.token_start * scale
                    for k in range(p.num_pages):
                        n = p.last_page_len if k == p.num_pages - 1 else p.page_size
                        pw = n * scale
                        g("paged-kv").append(
                            f'<rect class="page" x="{px:.1f}" y="{ly:.1f}" '
                            f'width="{max(pw, 0.5):.1f}" height="8" fill="{_PAGE}" '
                            f'fill-opacity="0.25" stroke="{_PAGE}" stroke-width="0.8"/>')
                        if k < len(p.page_ids) and pw >= 7 * len(str(p.page_ids[k])) + 2:
                            g("paged-kv").append(_text(px + pw / 2, ly + 7.5, str(p.page_ids[k]),
                                                       7, "middle", "page-id"))
                        px += pw
                n = sum(p.num_pages for p in mine)
                g("paged-kv").append(_text(_LEFT - 8, ly + 8, f"{n} page{'s' if n != 1 else ''}"
                                           f", last {mine[-1].last_page_len}", 8, "end",
                                           "page-label", _PAGE))
            elif lane == "mla":
                for s in (s for s in d.mla_chunks if s.row == i):
                    color = _MLA[s.index % 2]
                    g("mla-chunks").append(_rect(_LEFT + s.start * scale, ly, s.length * scale, 8,
                                                 color, "mla-chunk", data_chunk=str(s.index)))
                    if s.length * scale >= 20:
                        g("mla-chunks").append(_text(_LEFT + (s.start + s.length / 2) * scale,
                                                     ly + 7.5, f"c{s.index}", 7, "middle",
                                                     "mla-chunk-id", "white"))
                g("mla-chunks").append(_text(_LEFT - 8, ly + 8, "MLA context chunks", 8, "end",
                                             "mla-label", _MLA[0]))
            ly += _LANE
        y += row_h[i]
        if i == split_after:
            ly = y - _SPLIT_GAP / 2 - 1
            label = f"{d.num_decodes} decodes above, prefills below"
            g("split").append(f'<line class="split" x1="10" y1="{ly:.1f}" '
                              f'x2="{_WIDTH - _RIGHT}" y2="{ly:.1f}" stroke="{_WARN}" '
                              f'stroke-dasharray="6,3"/>')
            g("split").append(f'<rect x="{_WIDTH - _RIGHT - 6.2 * len(label) - 4:.1f}" '
                              f'y="{ly - 6:.1f}" width="{6.2 * len(label) + 4:.1f}" height="12" '
                              f'fill="white"/>')
            g("split").append(_text(_WIDTH - _RIGHT, ly + 3.5, label, 10, "end", "split-label",
                                    _WARN))
    if d.num_decodes is not None and not groups.get("split"):
        label = ("all decodes" if d.num_decodes == len(d.rows) and d.rows else "no decodes")
        g("split").append(_text(_LEFT, _TOP - 4, f"split: {label}", 10, "start",
                                "split-label", _WARN))
    ny = rows_bottom + 16 + (12 if d.cascade_prefix_len else 0)
    for k, note in enumerate(d.notes):
        warn = d.warning and k >= 1
        g("notes").append(_text(10, ny + k * _NOTE, note, 10, cls="note",
                                fill=_WARN if warn else "black"))
    if d.cascade_prefix_len:
        height += 12
        head[0] = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
                   f'viewBox="0 0 {_WIDTH} {height}">')
        head[1] = f'<rect x="0" y="0" width="{_WIDTH}" height="{height}" fill="white"/>'
    out = head
    for name in ("legend", "input", "cascade", "out-of-order", "mamba-chunks", "virtual-batches",
                 "paged-kv", "mla-chunks", "split", "notes"):
        if groups.get(name):
            out.append(f'<g class="{name}">')
            out.extend(groups[name])
            out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
