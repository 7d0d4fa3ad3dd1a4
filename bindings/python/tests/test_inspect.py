"""attn-inspect: the tables it prints and the SVG it draws."""
import json
import os
import xml.dom.minidom

import pytest

from libattn import batch_svg, inspect_tool

BATCH = {"query_lens": [1, 1, 1, 32, 20], "context_lens": [40, 99, 16, 64, 0], "block_size": 16}


def run(tmp_path, capsys, desc, *args):
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(desc))
    rc = inspect_tool.main([str(path), "--library", os.environ["ATTN_LIBRARY"], *args])
    return rc, capsys.readouterr()


def test_tables_for_chosen_backends(tmp_path, capsys):
    rc, out = run(tmp_path, capsys, {**BATCH, "common_prefix_len": 16}, "--backend", "FLASH_ATTN",
                  "--backend", "FLASHINFER")
    assert rc == 0
    text = out.out
    assert "== FLASH_ATTN: cudagraph ALWAYS, reorder threshold None, 3 decodes / 2 prefills (3 / 52 tokens)" in text
    assert "suffix_kv_lens                     int32[5] [25, 84, 1, 80, 4]" in text
    assert "== FLASHINFER: cudagraph UNIFORM_BATCH, reorder threshold 1" in text  # XQA on sm90 (vLLM 0.33)
    assert "paged_kv_indptr_cpu" in text and "TRITON_ATTN" not in text


def test_every_backend_by_default_and_errors_per_backend(tmp_path, capsys):
    rc, out = run(tmp_path, capsys, {**BATCH, "attention_chunk_size": 32})
    assert rc == 0
    assert "== ChunkedLocalAttention_32_FLASH_ATTN: cudagraph NEVER" in out.out
    # backends without local attention say why, and the others still print
    assert "== TREE_ATTN: [unsupported] TREE_ATTN builds decoder self-attention only" in out.out


def test_svg_drawing(tmp_path, capsys):
    svg = tmp_path / "b.svg"
    rc, out = run(tmp_path, capsys, {**BATCH, "attention_chunk_size": 32}, "--backend",
                  "FLASH_ATTN", "--svg", str(svg))
    assert rc == 0 and f"wrote {svg}" in out.out
    doc = xml.dom.minidom.parse(str(svg))
    rects = doc.getElementsByTagName("rect")
    by_class = {}
    for r in rects:
        by_class.setdefault(r.getAttribute("class"), []).append(r)
    assert len(by_class["query"]) == 5 and len(by_class["context"]) == 4
    assert len(by_class["block"]) == sum(-(-s // 16) for s in (41, 100, 17, 96, 20))
    # one virtual batch each: the decodes, the chunked prefill (64..96 is one chunk), 0..20
    assert len(by_class["virtual"]) == 5
    texts = [t.firstChild.data for t in doc.getElementsByTagName("text") if t.firstChild]
    assert "3 decodes above, prefills below" in texts and "req 3: 64+32" in texts


def test_bad_descriptions(tmp_path, capsys):
    rc, out = run(tmp_path, capsys, {"context_lens": [1]})
    assert rc == 2 and "the batch needs 'query_lens'" in out.err
    rc, out = run(tmp_path, capsys, {"query_lens": [1, 2], "context_lens": [1]})
    assert rc == 2 and "context_lens has 1 entries" in out.err
    rc, out = run(tmp_path, capsys, {"query_lens": [1], "block_size": 0})
    assert rc == 2 and "block_size=0" in out.err
    with pytest.raises(ValueError):
        batch_svg.render_svg(batch_svg.BatchDrawing([], 0))
