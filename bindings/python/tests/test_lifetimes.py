"""Issue 15 item 9: what a view of libattn's memory keeps alive (numpy arrays and TensorView
exports of builder results, clones, batch utilities' results, update_block_table results), and
when metadata goes stale."""
import gc

import numpy as np
import pytest

import libattn
from conftest import Batch, spec


def batch(context, query, **kw):
    return Batch(context, query, width=16, **kw)  # 16 blocks: small_config's max_model_len


def small_config():
    # small persistent buffers: freed ones are handed out again by the next allocation of the
    # same size, so a view that outlived them would show another batch's values
    return libattn.BuilderConfig(max_num_seqs=8, max_num_batched_tokens=64, max_model_len=256,
                                 num_attention_heads=32, device_capability=90)


def _churn(lib, backend, seq, common_prefix_len=0):
    """Builders of the same size built and freed: they reuse freed persistent buffers."""
    n = len(seq)
    work = batch([s - 1 for s in seq], [1] * n, first_block=900)
    for _ in range(3):
        with lib.builder(backend, spec(), small_config()) as other:
            other.build(work.common(), common_prefix_len)


# FLASH_ATTN with a common prefix: suffix_kv_lens (seq_lens - 32) lives in the builder's buffers
CASCADE = dict(context=[40, 35], query=[1, 5], common_prefix_len=32, suffix_kv_lens=[9, 8])


def _cascade(builder, **kw):
    b = batch(CASCADE["context"], CASCADE["query"], **kw)
    return b, builder.build(b.common(), CASCADE["common_prefix_len"])


def _churn_cascade(lib):
    _churn(lib, "FLASH_ATTN", [50, 99], 16)


def test_views_keep_a_closed_builders_buffers(lib):
    b = lib.builder("FLASHINFER", spec(), small_config())
    md = b.build(batch([40, 3], [1, 5]).common())
    indices, indptr = md["paged_kv_indices"], md["paged_kv_indptr_cpu"]
    want = indices.tolist(), indptr.tolist()
    exported = np.from_dlpack(md.tensor_view("paged_kv_last_page_len"))
    last = exported.tolist()
    b.close()  # views are alive: the buffers stay until the last one goes
    with pytest.raises(libattn.StaleMetadata):
        md["paged_kv_indices"]
    _churn(lib, "FLASHINFER", [7, 77])
    assert (indices.tolist(), indptr.tolist()) == want
    assert exported.tolist() == last
    del indices, indptr, exported, md
    gc.collect()
    _churn(lib, "FLASHINFER", [7, 77])  # and now they are freed (nothing crashes, nothing leaks)


def test_a_view_outlives_its_builder_object(lib):
    def make():
        with lib.builder("FLASHINFER", spec(), small_config()) as b:
            v = b.build(batch([40, 3], [1, 5]).common())["paged_kv_indices"]
            return v, v.tolist()
    view, want = make()  # the builder object is closed and gone; its buffers are not
    assert want == [1, 2, 3, 4]
    gc.collect()
    _churn(lib, "FLASHINFER", [9, 99])
    assert view.tolist() == want


def test_stale_metadata_raises_and_its_tensor_views_refuse_to_export(lib):
    with lib.builder("FLASHINFER", spec(), small_config()) as b:
        first = b.build(batch([40, 3], [1, 5]).common())
        tv = first.tensor_view("paged_kv_indices")
        b.build(batch([9], [1]).common())
        for read in (lambda: first["paged_kv_indices"], lambda: first.fields(),
                     lambda: first.clone(), lambda: first.tensor_view("paged_kv_indptr"),
                     lambda: len(first)):
            with pytest.raises(libattn.StaleMetadata, match="built again"):
                read()
        with pytest.raises(libattn.StaleMetadata):
            tv.__dlpack__()
        with pytest.raises(libattn.StaleMetadata):
            np.from_dlpack(tv)
    with pytest.raises(libattn.StaleMetadata, match="closed"):
        tv.__dlpack__()


def test_update_block_table_result_follows_its_source(lib):
    a = lib.builder("FLASH_ATTN", spec(), small_config())
    b = lib.builder("FLASH_ATTN", spec(), small_config())
    first, src = _cascade(a)
    other = batch(first.context, first.query, first_block=500)
    slots = np.array(other.slots, np.int64)
    updated = b.update_block_table(src, other.table, slots)
    assert updated["suffix_kv_lens"].tolist() == CASCADE["suffix_kv_lens"]  # a's buffer
    assert updated["block_table"].tolist() == other.table.tolist()
    a.build(batch([9], [1]).common())  # the source is stale: so is the result
    with pytest.raises(libattn.StaleMetadata, match="source metadata.*built again"):
        updated["suffix_kv_lens"]
    _, src = _cascade(a)
    updated = b.update_block_table(src, other.table, slots)
    suffix = updated["suffix_kv_lens"]
    a.close()  # the source's builder is gone: the result is stale, its views still readable
    with pytest.raises(libattn.StaleMetadata, match="source metadata.*closed"):
        updated["block_table"]
    del src
    gc.collect()
    _churn_cascade(lib)
    assert suffix.tolist() == CASCADE["suffix_kv_lens"]
    # b's own result as the source: the result is b's alone (the source is stale, not it)
    _, own = _cascade(b)
    again = b.update_block_table(own, other.table, slots)
    assert again["block_table"].tolist() == other.table.tolist()
    assert again["suffix_kv_lens"].tolist() == CASCADE["suffix_kv_lens"]
    with pytest.raises(libattn.StaleMetadata):
        own["block_table"]
    b.close()


def test_update_block_table_result_of_a_clone_keeps_the_clone(lib):
    a = lib.builder("FLASH_ATTN", spec(), small_config())
    first, md = _cascade(a)
    keep = md.clone()
    a.close()
    with lib.builder("FLASH_ATTN", spec(), small_config()) as b:
        other = batch(first.context, first.query, first_block=500)
        updated = b.update_block_table(keep, other.table, np.array(other.slots, np.int64))
        suffix = updated["suffix_kv_lens"]  # the clone's memory
        copy = updated.clone()  # views the first clone's memory too (it copies builder buffers)
        keep.close()
        with pytest.raises(libattn.StaleMetadata, match="source metadata, which is closed"):
            updated["block_table"]
        del keep, md
        gc.collect()
        _churn_cascade(lib)
        assert suffix.tolist() == CASCADE["suffix_kv_lens"]
        assert copy["suffix_kv_lens"].tolist() == CASCADE["suffix_kv_lens"]


def test_owned_metadata_views_survive_close(lib):
    with lib.builder("FLASHINFER", spec(), small_config()) as b:
        keep = b.build(batch([40, 3], [1, 5]).common()).clone()
    indices = keep["paged_kv_indices"]
    want = indices.tolist()
    keep.close()
    with pytest.raises(ValueError, match="closed"):
        keep["paged_kv_indices"]
    _churn(lib, "FLASHINFER", [9, 99])
    assert indices.tolist() == want
    # a batch utility's result and the batch made of it
    common = batch([5, 9, 3], [3, 1, 2]).common()
    unpadded = lib.common_metadata_unpadded(common, 4, 2)
    qsl = unpadded["query_start_loc"]
    again = unpadded.to_common()
    unpadded.close()
    del common
    gc.collect()
    assert qsl.tolist() == [0, 3, 4]
    with lib.builder("FLASH_ATTN", spec(), small_config()) as b:
        assert b.build(again)["seq_lens"].tolist() == [8, 10]
