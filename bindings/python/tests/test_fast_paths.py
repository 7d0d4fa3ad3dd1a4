"""The binding's fast paths (issue 7) give what the general ones give: numpy records against
the general attn_tensor_t, CommonMetadata from any array against contiguous int32 copies, field
views, the utilities with caller outputs, and the lifetimes (stale metadata, keep-alive)."""
import ctypes
import gc

import numpy as np
import pytest

import libattn
from libattn import tensors
from libattn.structs import attn_common_metadata_t, attn_local_attention_out_t
from conftest import Batch, config, spec


def described(t):
    """Everything the library reads of an attn_tensor_t."""
    nd = t.ndim
    return (t.data or 0, t.device.device_type, t.device.device_id, nd, t.dtype.code, t.dtype.bits,
            t.dtype.lanes, [t.shape[i] for i in range(max(nd, 1))],
            [t.strides[i] for i in range(max(nd, 1))], t.byte_offset)


_BASE = np.arange(24, dtype=np.int64).reshape(4, 6)
ARRAYS = [
    np.arange(5, dtype=np.int32), _BASE, _BASE[1:, 2:], _BASE[::-1, ::-2], _BASE.T,
    np.asfortranarray(_BASE), np.zeros(0, np.int32), np.zeros((), np.int32), np.zeros((3, 0)),
    np.ones(3, np.bool_), np.zeros((2, 3, 4), np.float16), np.arange(8, dtype=np.uint8)[::3],
    np.broadcast_to(np.arange(3, dtype=np.int32), (4, 3)), np.zeros((1, 2, 1, 2, 1), np.int32),
    np.arange(6, dtype=np.float32)[::-1],
    np.arange(10, dtype=np.int32)[2:7],
]


@pytest.mark.parametrize("a", ARRAYS, ids=lambda a: f"{a.dtype.str}{a.shape}{a.strides}")
def test_numpy_records_equal_the_general_path(a):
    general = tensors._from_numpy_general(a)
    fast = tensors.tensor_arg(a)
    fields = tensors.TensorFields(attn_common_metadata_t, {"seq_lens": a})
    for arg in (fast, fields.arg("seq_lens")):
        assert described(arg.struct) == described(general.struct)
        assert arg.shape == general.shape and arg.on_host
        assert arg.ref.contents.ndim == a.ndim  # a POINTER(attn_tensor_t), as before
    assert described(fields.struct.seq_lens.contents) == described(general.struct)
    view = tensors.to_numpy(fast.struct, fast)
    assert view.shape == a.shape and view.dtype == a.dtype
    np.testing.assert_array_equal(view, a)


def test_every_path_refuses_a_non_native_byte_order():
    a = np.arange(6, dtype=np.dtype(np.int32).newbyteorder("S"))  # was accepted and misread
    for make in (tensors._from_numpy_general, tensors.tensor_arg,
                 lambda a: tensors.TensorFields(attn_common_metadata_t, {"seq_lens": a})):
        with pytest.raises(libattn.InvalidArgument, match="byte order"):
            make(a)


def test_bad_strides_and_dtypes_raise_as_before():
    odd = np.zeros(12, np.uint8)[1:].view(np.dtype([("x", np.uint8)]))
    with pytest.raises(TypeError):
        tensors.tensor_arg(odd)
    with pytest.raises(TypeError):
        tensors.TensorFields(attn_common_metadata_t, {"seq_lens": np.array(["a"])})
    unaligned = np.lib.stride_tricks.as_strided(np.zeros(16, np.int32), (3,), (6,))
    for make in (tensors.tensor_arg,
                 lambda a: tensors.TensorFields(attn_common_metadata_t, {"seq_lens": a})):
        with pytest.raises(ValueError, match="not multiples of its itemsize"):
            make(unaligned)


def test_array_address_matches_the_array_interface():
    assert tensors._DATA_AT is not None  # CPython: the fast reader is in use
    for a in ARRAYS:
        assert tensors.array_address(a) == (a.__array_interface__["data"][0] or 0)


def test_common_metadata_from_any_layout_equals_contiguous_int32(lib, mixed):
    """Strided, other-dtype, list and mirror inputs: the scalars inferred as from the contiguous
    int32 arrays (the fast path); the layouts the library accepts build the same metadata."""
    ref = mixed.common()
    qsl, seq = np.array(mixed.qsl, np.int32), np.array(mixed.seq, np.int32)
    big = np.zeros(64, np.int32)
    big[3:3 + len(qsl)] = qsl  # a slice of a persistent buffer, as a runtime passes it
    wide = np.zeros((5, 128), np.int32)
    wide[:, :64] = mixed.table
    accepted = [
        dict(query_start_loc=big[3:3 + len(qsl)]),
        dict(query_start_loc=list(mixed.qsl), seq_lens=list(mixed.seq)),
        dict(block_table=wide[:, :64]),  # row stride 128
        dict(slot_mapping=list(mixed.slots)),
    ]
    others = [
        dict(query_start_loc=np.repeat(qsl, 2)[::2]),  # element stride 2
        dict(seq_lens=seq[::-1].copy()[::-1]),  # negative stride
        dict(query_start_loc_cpu=qsl.astype(np.int64)),  # the mirror is read first
        dict(seq_lens_cpu=seq.astype(np.uint16)),
    ]
    for kw in accepted + others:
        c = mixed.common(**kw)
        assert (c.num_reqs, c.num_actual_tokens, c.max_query_len, c.max_seq_len) == \
               (ref.num_reqs, ref.num_actual_tokens, ref.max_query_len, ref.max_seq_len), kw
    with lib.builder("FLASH_ATTN", spec(), config()) as b:
        want = b.build(ref).to_dict()
        for kw in accepted:
            got = b.build(mixed.common(**kw)).to_dict()
            assert got.keys() == want.keys()
            for name, w in want.items():
                if isinstance(w, np.ndarray):
                    np.testing.assert_array_equal(got[name], w, err_msg=f"{kw} {name}")
                else:
                    assert got[name] == w, (kw, name)
        with pytest.raises(libattn.InvalidArgument, match="query_start_loc has stride 2"):
            b.build(mixed.common(**others[0]))


def test_common_metadata_scalars_as_before():
    """The scalars inferred are vLLM's: len(seq_lens), query_start_loc[num_reqs], the largest
    query and sequence among the first num_reqs (given num_reqs smaller than the arrays)."""
    qsl = np.array([0, 3, 4, 9, 9, 12], np.int32)
    seq = np.array([7, 2, 30, 5, 99], np.int32)
    c = libattn.CommonMetadata(qsl, seq)
    assert (c.num_reqs, c.num_actual_tokens, c.max_query_len, c.max_seq_len) == (5, 12, 5, 99)
    c = libattn.CommonMetadata(qsl, seq, num_reqs=3)
    assert (c.num_reqs, c.num_actual_tokens, c.max_query_len, c.max_seq_len) == (3, 9, 5, 30)
    c = libattn.CommonMetadata(qsl, seq, num_reqs=0)
    assert (c.num_actual_tokens, c.max_query_len, c.max_seq_len) == (0, 0, 0)
    c = libattn.CommonMetadata(qsl.astype(np.float64), seq.astype(np.int64))  # general paths
    assert (c.num_reqs, c.num_actual_tokens, c.max_query_len, c.max_seq_len) == (5, 12, 5, 99)
    with pytest.raises(TypeError):
        libattn.CommonMetadata(None, seq)


def test_common_metadata_struct_args_and_ref(lib, mixed):
    c = mixed.common(causal=False, num_logits_indices=3, logits_indices_padded=[1, 2, 3])
    s = c.struct
    assert s.struct_size == ctypes.sizeof(attn_common_metadata_t)
    assert (s.causal, s.num_logits_indices, s.extension) == (0, 3, None)
    assert not s.encoder_seq_lens and not s.query_start_loc_cpu  # NULL
    assert isinstance(c.ref, ctypes.POINTER(attn_common_metadata_t))
    assert c.ref.contents.num_reqs == 5
    args = c.args
    assert args["encoder_seq_lens"] is None and args["seq_lens"].shape == (5,)
    assert args["block_table_tensor"].source is mixed.table
    with lib.builder("FLASH_ATTN", spec(), config()) as b:  # the raw call with .ref still works
        out = ctypes.c_void_p()
        lib.check(lib.raw.attn_build(b.handle, 0, c.ref, 0, ctypes.byref(out), None))


def test_field_views_and_lifetimes(lib):
    b = Batch([5, 9], [3, 1])
    with lib.builder("FLASH_ATTN", spec(), config()) as fa:
        md = fa.build(b.common())
        seq = md["seq_lens"]
        assert not seq.flags.writeable
        with pytest.raises(ValueError):
            seq.flags.writeable = True  # a read-only buffer: cannot be made writeable
        table = md["block_table"]
        assert table.shape == (2, 64) and table.strides == (256, 4)
        expected = list(b.seq)
        del b, md
        gc.collect()
        np.testing.assert_array_equal(seq, expected)  # the view keeps the inputs alive
        first = fa.build(Batch([1], [1]).common())
        fa.build(Batch([2], [1]).common())
        with pytest.raises(libattn.StaleMetadata):
            first["seq_lens"]
        with pytest.raises(libattn.StaleMetadata):
            first["max_seq_len"]
    with pytest.raises(libattn.StaleMetadata):  # closed: stale too
        first.fields()


def test_local_attention_outputs(lib):
    qsl = np.array([0, 4, 10, 11], np.int32)
    seq = np.array([20, 10, 33], np.int32)
    common = libattn.CommonMetadata(qsl, seq, block_table=np.arange(1, 28, dtype=np.int32)
                                    .reshape(3, 9), slot_mapping=np.zeros(11, np.int64))
    want = lib.make_local_attention_virtual_batches(8, common, 4)
    v = len(want.seq_lens)
    sizes = dict(query_start_loc=v + 1, query_start_loc_cpu=v + 1, seq_lens=v, seq_lens_cpu=v,
                 num_computed_tokens_cpu=v, virtual_req=v, virtual_block_start=v)
    arrays = {k: np.full(n + 2, -7, np.int32) for k, n in sizes.items()}  # larger than needed
    arrays["block_table"] = np.full((v + 1, 2), -7, np.int32)
    prepared = libattn.LocalAttentionOutputs(**arrays)
    for outputs in (arrays, prepared, prepared):  # a mapping, then the prepared object twice
        got = lib.make_local_attention_virtual_batches(8, common, 4, outputs=outputs)
        assert got.query_start_loc is arrays["query_start_loc"]
        assert got.block_table is arrays["block_table"]
        np.testing.assert_array_equal(got.query_start_loc[:v + 1], want.query_start_loc)
        np.testing.assert_array_equal(got.seq_lens[:v], want.seq_lens)
        np.testing.assert_array_equal(got.num_computed_tokens[:v], want.num_computed_tokens)
        np.testing.assert_array_equal(got.block_table[:v], want.block_table)
        np.testing.assert_array_equal(got.virtual_req[:v], want.virtual_req)
        assert got.metadata["max_seq_len"] == want.metadata["max_seq_len"]
    part = lib.make_local_attention_virtual_batches(8, common, 4,
                                                    outputs={"seq_lens": arrays["seq_lens"]})
    assert part.seq_lens is arrays["seq_lens"] and part.virtual_req.shape == (v,)
    without = dict(arrays)
    del without["num_computed_tokens_cpu"]
    got = lib.make_local_attention_virtual_batches(8, common, 4,
                                                   outputs=libattn.LocalAttentionOutputs(**without))
    assert got.num_computed_tokens is None
    np.testing.assert_array_equal(got.seq_lens[:v], want.seq_lens)
    with pytest.raises(TypeError, match="unknown name 'seqlens'"):
        lib.make_local_attention_virtual_batches(8, common, 4,
                                                 outputs={"seqlens": arrays["seq_lens"]})
    with pytest.raises(TypeError, match="missing"):
        libattn.LocalAttentionOutputs(seq_lens=arrays["seq_lens"])
    small = dict(arrays, seq_lens=np.zeros(1, np.int32))
    with pytest.raises(libattn.InvalidArgument):
        lib.make_local_attention_virtual_batches(8, common, 4, outputs=small)
    assert tensors.TensorFields(attn_local_attention_out_t, {}).struct.struct_size == \
        ctypes.sizeof(attn_local_attention_out_t)


def test_fast_prefill_with_caller_outputs(lib):
    b = Batch([0, 0, 0], [4, 6, 3])
    common = b.common(logits_indices_padded=[3, 9, 12], num_logits_indices=3)
    want = lib.make_kv_sharing_fast_prefill_common_attn_metadata(common)
    q, qc = np.full(5, -1, np.int32), np.full(5, -1, np.int32)
    got = lib.make_kv_sharing_fast_prefill_common_attn_metadata(
        common, out_query_start_loc=q, out_query_start_loc_cpu=qc)
    assert want["query_start_loc"].tolist() == [0, 1, 2, 3]
    np.testing.assert_array_equal(q[:4], want["query_start_loc"])
    np.testing.assert_array_equal(qc[:4], want["query_start_loc"])
    assert np.shares_memory(got["query_start_loc"], q)


def test_reorder_from_any_layout(lib):
    sched, comp = [1, 8, 1, 1, 30], [5, 0, 9, 4, 0]
    want = lib.reorder_batch_to_split_decodes_and_prefills(sched, comp)
    assert want and all(isinstance(x, int) for pair in want for x in pair)
    wide = np.zeros((5, 2), np.int32)
    wide[:, 0] = sched
    for s, c in [(np.array(sched, np.int32), np.array(comp, np.int32)),
                 (wide[:, 0], np.array(comp, np.int64)), (tuple(sched), comp)]:
        assert lib.reorder_batch_to_split_decodes_and_prefills(s, c) == want
    with pytest.raises(ValueError, match="one-dimensional"):
        lib.reorder_batch_to_split_decodes_and_prefills(wide, comp)
