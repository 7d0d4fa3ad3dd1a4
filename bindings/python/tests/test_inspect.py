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


# ---- issue 21: runtime-form input, reorder warning, drawn metadata, dtype names, -h ----------

import xml.etree.ElementTree as ET  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"


def svg_groups(path):
    """The SVG's groups by class: class -> the element (ET.parse fails on malformed XML)."""
    root = ET.parse(str(path)).getroot()
    assert root.tag == SVG_NS + "svg"
    return {g.get("class"): g for g in root.iter(SVG_NS + "g")}


def of_class(group, cls, tag="rect"):
    return [e for e in group.iter(SVG_NS + tag) if e.get("class") == cls]


def tables(text):
    """The tables without the first line (which says which input form was read)."""
    return text.split("\n", 1)[1]


def test_runtime_form_is_the_same_batch(tmp_path, capsys):
    runtime = {"query_start_loc": [0, 1, 2, 3, 35, 55], "seq_lens": [41, 100, 17, 96, 20],
               "block_size": 16}
    rc, a = run(tmp_path, capsys, BATCH, "--backend", "FLASH_ATTN", "--backend", "FLASHINFER")
    assert rc == 0
    rc, b = run(tmp_path, capsys, runtime, "--backend", "FLASH_ATTN", "--backend", "FLASHINFER")
    assert rc == 0
    assert "(from query_start_loc [0, 1, 2, 3, 35, 55], seq_lens [41, 100, 17, 96, 20])" in b.out
    assert "context_lens [40, 99, 16, 64, 0]" in b.out
    assert tables(a.out) == tables(b.out)


def test_runtime_form_block_table_and_slot_mapping(tmp_path, capsys):
    table = [[7, 8, 9], [1, 2, 0]]
    slots = [7 * 16 + 5, 2 * 16 + 0, 2 * 16 + 1]  # seq 38: token 37; seq 18: tokens 16, 17
    rc, out = run(tmp_path, capsys, {"query_start_loc": [0, 1, 3], "seq_lens": [38, 18],
                                     "block_table": table, "slot_mapping": slots},
                  "--backend", "FLASH_ATTN", "--all")
    assert rc == 0, out.err
    assert "block_table                        int32[2x3] [[7, 8, 9], [1, 2, 0]]" in out.out
    assert f"slot_mapping                       int64[3] {slots}" in out.out


@pytest.mark.parametrize("desc, message", [
    ({"query_lens": [1], "query_start_loc": [0, 1], "seq_lens": [3]},
     "give query_lens/context_lens or query_start_loc/seq_lens, not both"),
    ({"query_start_loc": [0, 1]}, "the batch needs 'seq_lens'"),
    ({"query_start_loc": [1, 2], "seq_lens": [3]}, "query_start_loc[0]=1 must be 0"),
    ({"query_start_loc": [0, 5, 3], "seq_lens": [5, 5]},
     "query_start_loc[2]=3 is below query_start_loc[1]=5"),
    ({"query_start_loc": [0, 1, 2], "seq_lens": [3]},
     "query_start_loc has 3 entries, seq_lens 1"),
    ({"query_start_loc": [0, 4], "seq_lens": [3]}, "seq_lens[0]=3 is below request 0's query "
                                                  "length 4"),
    ({"query_start_loc": [0, 1], "seq_lens": ["9"]}, "seq_lens[0]='9' is not an integer"),
    ({"query_start_loc": [0, 1], "seq_lens": [-2]}, "seq_lens[0]=-2 must be >= 0"),
    ({"query_start_loc": [0, 1], "seq_lens": [40], "block_table": [[1, 2]]},
     "block_table[0] has 2 blocks; request 0's seq_len 40 needs 3"),
    ({"query_start_loc": [0, 1], "seq_lens": [40], "block_table": [[1, 2, 3], [4]]},
     "block_table=[[1, 2, 3], [4]] must be a list of 1 rows"),
    ({"query_start_loc": [0, 2], "seq_lens": [40], "slot_mapping": [1]},
     "slot_mapping has 1 entries; the batch has 2 query tokens"),
    ({"query_start_loc": [0, 1], "seq_lens": [4], "slot_mapping": [1.5]},
     "slot_mapping[0]=1.5 is not a slot"),
    ({"query_lens": [1], "querylens": [1]}, "unknown key 'querylens'"),
    ({"query_lens": [1], "spec": {"dtype": "FP9"}}, "spec.dtype='FP9' is not one of"),
    ({"query_lens": [1], "spec": {"heads": 2}}, "spec: KvCacheSpec has no field 'heads'"),
])
def test_bad_runtime_form(tmp_path, capsys, desc, message):
    rc, out = run(tmp_path, capsys, desc)
    assert rc == 2 and message in out.err, out.err


UNORDERED = {"query_lens": [32, 1, 20, 1], "context_lens": [64, 40, 0, 99], "block_size": 16}


def test_unordered_batch_warns_with_the_reorder_swaps(tmp_path, capsys, lib):
    swaps = lib.reorder_batch_to_split_decodes_and_prefills([32, 1, 20, 1], [64, 40, 0, 99], 1)
    assert swaps == [(3, 0), (3, 2)]
    svg = tmp_path / "u.svg"
    rc, out = run(tmp_path, capsys, UNORDERED, "--backend", "FLASHINFER", "--backend",
                  "FLASH_ATTN", "--svg", str(svg))
    assert rc == 0
    fi, fa = out.out.split("== FLASHINFER")[1].split("== FLASH_ATTN")
    assert ("warning: the batch is not in the order vLLM's reorder_batch_to_split_decodes_and_"
            "prefills (threshold 1) leaves it") in fi
    assert "reorder swaps (swap_states src, dst): (3, 0), (3, 2)" in fi
    assert "reordered: requests [3, 1, 0, 2], query_lens [1, 1, 32, 20]" in fi
    assert ("built and drawn with the batch as given: 0 leading decodes; requests [1, 3] "
            "(query_len <= 1) count as prefills") in fi
    assert "num_decodes                        0" in fi  # what FlashInfer built from it
    assert "warning" not in fa  # FLASH_ATTN does not reorder
    # the drawing: FlashInfer's (the first that built); the two decodes marked, the warning
    groups = svg_groups(svg)
    marked = of_class(groups["out-of-order"], "misordered")
    assert [int(float(m.get("y"))) for m in marked] == sorted(int(float(m.get("y")))
                                                              for m in marked)
    assert len(marked) == 2
    notes = [t.text for t in groups["notes"].iter(SVG_NS + "text")]
    assert any(n.startswith("warning: the batch is not in the order") for n in notes)
    # decode-sized requests after the split are drawn as what the builder made of them
    queries = of_class(groups["input"], "query")
    assert {q.get("fill") for q in queries} == {batch_svg._QUERY_PREFILL}


def test_ordered_batch_does_not_warn(tmp_path, capsys):
    rc, out = run(tmp_path, capsys, BATCH, "--backend", "FLASHINFER", "--backend", "TREE_ATTN")
    assert rc == 0 and "warning" not in out.out and "reorder swaps" not in out.out


def test_svg_draws_flashinfer_pages_and_cascade(tmp_path, capsys):
    svg = tmp_path / "fi.svg"
    rc, out = run(tmp_path, capsys, {**BATCH, "common_prefix_len": 16}, "--backend",
                  "FLASHINFER", "--svg", str(svg), "--all")
    assert rc == 0 and "(FLASHINFER)" in out.out
    groups = svg_groups(svg)
    assert {"legend", "input", "split", "paged-kv", "cascade", "notes"} <= set(groups)
    assert "virtual-batches" not in groups and "mla-chunks" not in groups
    # pages per request from paged_kv_indptr, after the shared prefix page
    indptr = json.loads(out.out.split("paged_kv_indptr_cpu")[1].split("] ", 1)[1].split("\n")[0])
    assert len(of_class(groups["paged-kv"], "page")) == indptr[-1]
    labels = [t.text for t in of_class(groups["paged-kv"], "page-label", "text")]
    assert labels[:2] == [f"{indptr[1] - indptr[0]} pages, last 9",
                          f"{indptr[2] - indptr[1]} pages, last 4"]
    assert len(of_class(groups["cascade"], "cascade-prefix")) == 1
    assert "shared prefix 16 tokens, pages [1]" in "".join(
        t.text for t in groups["cascade"].iter(SVG_NS + "text"))
    split = [t.text for t in of_class(groups["split"], "split-label", "text")]
    assert split == ["3 decodes above, prefills below"]


def test_svg_of_a_backend_without_pages_skips_them(tmp_path, capsys):
    svg = tmp_path / "fa.svg"
    rc, out = run(tmp_path, capsys, BATCH, "--backend", "FLASH_ATTN", "--svg", str(svg))
    assert rc == 0
    groups = svg_groups(svg)
    assert set(groups) == {"legend", "input", "split", "notes"}
    notes = [t.text for t in groups["notes"].iter(SVG_NS + "text")]
    assert notes == ["FLASH_ATTN: reorder threshold None; split from "
                     "split_decodes_and_prefills(1); drawn: split"]


def test_svg_local_virtual_batches_with_flashinfer_pages(tmp_path, capsys):
    svg = tmp_path / "l.svg"
    desc = {"query_lens": [1, 40], "context_lens": [40, 50], "attention_chunk_size": 32}
    rc, out = run(tmp_path, capsys, desc, "--backend", "FLASH_ATTN", "--backend", "FLASHINFER",
                  "--draw", "FLASHINFER", "--svg", str(svg))
    assert rc == 0 and "(ChunkedLocalAttention_32_FLASHINFER)" in out.out
    groups = svg_groups(svg)
    # request 1 (50..90) is two virtual batches: 32..64 and 64..90, pages 2 + 2
    assert len(of_class(groups["virtual-batches"], "virtual")) == 3
    assert len(of_class(groups["paged-kv"], "page")) == 1 + 4


def test_svg_mla_context_chunks(tmp_path, capsys):
    svg = tmp_path / "mla.svg"
    desc = {"query_start_loc": [0, 1, 2, 34, 54], "seq_lens": [41, 100, 600, 20],
            "block_size": 64, "config": {"mla_chunked_prefill_workspace_size": 256}}
    rc, out = run(tmp_path, capsys, desc, "--backend", "FLASHMLA", "--svg", str(svg))
    assert rc == 0, out.err
    assert "spec kind MLA (the backend builds for MLA specs only)" in out.out
    groups = svg_groups(svg)
    chunks = of_class(groups["mla-chunks"], "mla-chunk")
    # request 2's 568 context tokens in workspace chunks of 256: 0..256, 256..512, 512..568
    assert [c.get("data-chunk") for c in chunks] == ["0", "1", "2"]
    widths = [float(c.get("width")) for c in chunks]
    assert widths[0] == pytest.approx(widths[1])
    assert widths[2] == pytest.approx(widths[0] * 56 / 256, abs=0.2)


def test_svg_mamba_chunk_boundaries(tmp_path, capsys):
    svg = tmp_path / "mamba.svg"
    desc = {**BATCH, "spec": {"mamba_type": "MAMBA2", "mamba_chunk_size": 8}}
    rc, out = run(tmp_path, capsys, desc, "--backend", "MAMBA2")
    # vLLM 0.33's Mamba builders require is_prefilling: refused, saying so
    assert "common->is_prefilling is NULL; MAMBA2 needs it" in out.out
    desc["is_prefilling"] = [False, False, False, True, True]
    rc, out = run(tmp_path, capsys, desc, "--backend", "MAMBA2", "--svg", str(svg))
    assert rc == 0, out.err
    assert "cu_chunk_seqlen_p                  int32[8] [0, 8, 16, 24, 32, 40, 48, 52]" in out.out
    groups = svg_groups(svg)
    # interior boundaries: request 3 (64+32) at 72, 80, 88; request 4 (0+20) at 8, 16
    ticks = of_class(groups["mamba-chunks"], "mamba-boundary", "line")
    assert len(ticks) == 5
    scale = (batch_svg._WIDTH - batch_svg._LEFT - batch_svg._RIGHT) / 100
    xs = sorted(round((float(t.get("x1")) - batch_svg._LEFT) / scale) for t in ticks)
    assert xs == [8, 16, 72, 80, 88]


def test_dtype_fields_print_by_name(tmp_path, capsys):
    desc = {**BATCH, "config": {"model_dtype": "BFLOAT16", "cache_dtype": "FP8_E4M3"}}
    rc, out = run(tmp_path, capsys, desc, "--backend", "FLASHINFER", "--backend", "FLASH_ATTN")
    assert rc == 0
    rc, cpu = run(tmp_path, capsys, {**BATCH, "config": {"cpu_attn_isa": "VEC"}}, "--backend",
                  "CPU_ATTN")
    assert rc == 0
    assert "scheduler_dtype                    KvDtype.BFLOAT16" in cpu.out
    assert "scheduler_isa                      CpuIsa.VEC" in cpu.out
    assert "kv_data_type                       KvDtype.FP8_E4M3" in out.out
    assert "o_data_type                        KvDtype.BFLOAT16" in out.out
    assert "q_data_type_prefill                KvDtype.FP8_E4M3" in out.out
    assert "q_data_type_decode                 KvDtype.BFLOAT16" in out.out
    assert "kv_cache_layout                    KvCacheLayout.NHD" in out.out
    assert "scheduler_qkv_dtype                KvDtype.FP8_E4M3" in out.out
    for line in (out.out + cpu.out).splitlines():
        name = line.split()[0] if line.startswith("  ") and line.split() else ""
        if "dtype" in name or "data_type" in name:
            assert not line.split()[-1].lstrip("-").isdigit(), line


def test_dtype_name_of_the_library_codes():
    from libattn import DTypeCode
    assert inspect_tool.dtype_name(DTypeCode.INT, 32) == "int32"
    assert inspect_tool.dtype_name(DTypeCode.INT, 64) == "int64"
    assert inspect_tool.dtype_name(DTypeCode.UINT, 8) == "uint8"
    assert inspect_tool.dtype_name(DTypeCode.FLOAT, 32) == "float32"
    assert inspect_tool.dtype_name(DTypeCode.BFLOAT, 16) == "bfloat16"
    assert inspect_tool.dtype_name(DTypeCode.BOOL, 8) == "bool"
    assert inspect_tool.format_value("kv_data_type", 99) == "KvDtype?(99)"
    assert inspect_tool.format_value("num_decodes", 2) == "2"


def test_help_lists_every_json_key(capsys):
    with pytest.raises(SystemExit) as e:
        inspect_tool.main(["-h"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse may wrap; compare words
    assert len(inspect_tool.KEYS) == 13
    for key, meaning, example in inspect_tool.KEYS:
        assert f"{key} {' '.join(meaning.split())}" in text, key
        assert f'e.g. "{key}": {" ".join(example.split())}' in text, key


def test_help_keys_are_the_keys_read(tmp_path, capsys):
    # every documented key is accepted (one form at a time), any other is refused by name
    scheduler = {"query_lens": [1, 20], "context_lens": [40, 0], "block_table": [[1, 2, 3], [4, 5]],
                 "slot_mapping": [40 + 2 * 16] + list(range(64, 84)), "block_size": 16,
                 "attention_chunk_size": 0, "common_prefix_len": 0, "backends": ["FLASH_ATTN"],
                 "spec": {"num_kv_heads": 4}, "config": {"device_capability": 80},
                 "is_prefilling": [False, True]}
    runtime = {k: v for k, v in scheduler.items() if k not in ("query_lens", "context_lens")}
    runtime.update(query_start_loc=[0, 1, 21], seq_lens=[41, 20])
    documented = {k for k, _, _ in inspect_tool.KEYS}
    assert set(scheduler) | set(runtime) == documented
    for desc in (scheduler, runtime):
        rc, out = run(tmp_path, capsys, desc)
        assert rc == 0, out.err
        assert "== FLASH_ATTN" in out.out and "== FLASHINFER" not in out.out
