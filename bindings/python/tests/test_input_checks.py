"""Issue 15 item 9: the checks of every array before its address reaches the library: dtype
(TypeError), byte order and alignment (InvalidArgument, a ValueError), each naming the
argument and the bad value."""
import numpy as np
import pytest

import libattn
from conftest import BLOCK, Batch, spec


def batch(context, query, **kw):
    return Batch(context, query, width=16, **kw)  # 16 blocks: small_config's max_model_len


def small_config():
    return libattn.BuilderConfig(max_num_seqs=8, max_num_batched_tokens=64, max_model_len=256,
                                 num_attention_heads=32, device_capability=90)


def swapped(values, dtype=np.int32):
    """``values`` in the non-native byte order (same numbers, swapped bytes)."""
    return np.asarray(values, dtype=np.dtype(dtype).newbyteorder("S"))


def misaligned(values, dtype=np.int32):
    """``values`` in an array whose data address is 1 byte past an aligned one."""
    a = np.asarray(values, dtype=dtype)
    raw = np.zeros(a.nbytes + 1, np.uint8)
    out = np.frombuffer(raw.data, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
    raw[1:] = np.frombuffer(a.tobytes(), np.uint8)  # the same values
    assert not out.flags.aligned
    return out


def writable_misaligned(n, dtype=np.int32):
    """A writable misaligned array (numpy exports those with DLPack)."""
    raw = np.zeros(n * np.dtype(dtype).itemsize + 1, np.uint8)
    return raw[1:].view(dtype)


COMMON_ARGS = {  # CommonMetadata keyword -> the mixed batch's array it copies (None: its own)
    "query_start_loc": None, "seq_lens": None, "block_table": None, "slot_mapping": None,
    "query_start_loc_cpu": "query_start_loc", "seq_lens_cpu": "seq_lens",
}


def _common_kwargs(mixed, name, make):
    kw = dict(mixed.arrays)
    source = COMMON_ARGS[name] or name
    dtype = kw[source].dtype
    kw[name] = make(kw[source], dtype)
    return kw


@pytest.mark.parametrize("name", sorted(COMMON_ARGS))
def test_common_metadata_refuses_byte_swapped_arrays(mixed, name):
    with pytest.raises(libattn.InvalidArgument) as e:
        libattn.CommonMetadata(**_common_kwargs(mixed, name, swapped))
    assert isinstance(e.value, ValueError)
    assert e.value.message.startswith(name + ":") and "byte order" in e.value.message


@pytest.mark.parametrize("name", sorted(COMMON_ARGS))
def test_common_metadata_refuses_misaligned_arrays(mixed, name):
    with pytest.raises(libattn.InvalidArgument) as e:
        libattn.CommonMetadata(**_common_kwargs(mixed, name, misaligned))
    assert e.value.message.startswith(name + ":") and "not aligned" in e.value.message


@pytest.mark.parametrize("name", ["num_accepted_tokens", "encoder_seq_lens",
                                  "logits_indices_padded", "dcp_local_seq_lens_cpu"])
def test_optional_common_fields_are_checked_too(mixed, name):
    with pytest.raises(libattn.InvalidArgument, match=f"^.*{name}: .*byte order"):
        mixed.common(**{name: swapped([1, 1, 1, 1, 1])})
    with pytest.raises(libattn.InvalidArgument, match=f"^.*{name}: .*not aligned"):
        mixed.common(**{name: misaligned([1, 1, 1, 1, 1])})


def test_unsupported_dtypes_name_the_argument(mixed):
    with pytest.raises(TypeError, match="seq_lens: numpy dtype complex64"):
        mixed.common(seq_lens=np.ones(5, np.complex64))
    with pytest.raises(TypeError, match="block_table: numpy dtype <U1"):
        mixed.common(block_table=np.array([["a"]]))
    with pytest.raises(TypeError, match="query: numpy dtype object"):
        libattn.tensors.tensor_arg(np.array([None]), name="query")


def test_native_arrays_still_take_the_fast_path(mixed):
    c = mixed.common()
    assert c.args["seq_lens"].source is mixed.arrays["seq_lens"]
    assert not c._fields._slow  # nothing took the general path
    # an explicit little-endian dtype is native here: accepted
    c = mixed.common(seq_lens=mixed.arrays["seq_lens"].astype("<i4"))
    assert c.num_reqs == 5


def test_update_block_table_checks_its_arrays(lib):
    with lib.builder("FLASH_ATTN", spec(), small_config()) as b:
        md = b.build(batch([5, 9], [3, 1]).common())
        table, slots = np.array([[7, 0], [8, 0]], np.int32), np.array([1, 2, 3, 4], np.int64)
        for bt, sm, arg, what in [(swapped(table), slots, "block_table", "byte order"),
                                  (table, swapped(slots, np.int64), "slot_mapping", "byte order"),
                                  (misaligned(table), slots, "block_table", "not aligned"),
                                  (table, misaligned(slots, np.int64), "slot_mapping",
                                   "not aligned")]:
            with pytest.raises(libattn.InvalidArgument, match=f"^.*{arg}: .*{what}"):
                b.update_block_table(md, bt, sm)
        assert b.update_block_table(md, table, slots)["block_table"].tolist() == table.tolist()


_QSL, _POS, _TABLE = [0, 2, 3], [4, 5, 9], [[1, 2], [3, 4]]


def _fast_prefill_batch():
    return Batch([0, 0, 0], [4, 6, 3]).common(logits_indices_padded=[3, 9, 12],
                                              num_logits_indices=3)


def _local_outputs(**bad):
    outs = {n: np.zeros(8 if n != "block_table" else (8, 2), np.int32)
            for n in libattn.utilities._LOCAL_OUTPUTS}
    return {**outs, **{k: make(outs[k]) for k, make in bad.items()}}


#: (utility, the argument named by the error, a call of the utility with that argument made by
#: ``bad(values, dtype=np.int32)``): every utility that passes an array's address to the library
UTILITY_ARRAYS = [
    ("compute_slot_mapping", "query_start_loc",
     lambda lib, bad: lib.compute_slot_mapping(bad(_QSL), _POS, _TABLE, BLOCK)),
    ("compute_slot_mapping", "positions",
     lambda lib, bad: lib.compute_slot_mapping(_QSL, bad(_POS, np.int64), _TABLE, BLOCK)),
    ("compute_slot_mapping", "block_table",
     lambda lib, bad: lib.compute_slot_mapping(_QSL, _POS, bad(_TABLE), BLOCK)),
    ("compute_slot_mapping", "out",
     lambda lib, bad: lib.compute_slot_mapping(_QSL, _POS, _TABLE, BLOCK,
                                               out=bad(np.zeros(3), np.int64))),
    ("get_dcp_local_seq_lens", "seq_lens",
     lambda lib, bad: lib.get_dcp_local_seq_lens(bad([5, 9]), 2, 0)),
    ("get_dcp_local_seq_lens", "out",
     lambda lib, bad: lib.get_dcp_local_seq_lens([5, 9], 2, 0, out=bad([0, 0]))),
    ("remap_local_block_table", "block_table",
     lambda lib, bad: lib.remap_local_block_table(bad(_TABLE), [0, 1], [0, 0], 2)),
    ("remap_local_block_table", "virtual_req",
     lambda lib, bad: lib.remap_local_block_table(_TABLE, bad([0, 1]), [0, 0], 2)),
    ("remap_local_block_table", "virtual_block_start",
     lambda lib, bad: lib.remap_local_block_table(_TABLE, [0, 1], bad([0, 0]), 2)),
    ("remap_local_block_table", "out",
     lambda lib, bad: lib.remap_local_block_table(_TABLE, [0, 1], [0, 0], 2,
                                                  out=bad(np.zeros((2, 2))))),
    ("slice_query_start_locs", "query_start_loc",
     lambda lib, bad: lib.slice_query_start_locs(bad([0, 2, 5]), 0, 2)),
    ("slice_query_start_locs", "out",
     lambda lib, bad: lib.slice_query_start_locs([0, 2, 5], 0, 2, out=bad([0, 0, 0]))),
    ("compute_flashinfer_kv_metadata", "block_table",
     lambda lib, bad: lib.compute_flashinfer_kv_metadata([5, 9], bad(_TABLE), BLOCK)),
    ("reshape_query_for_spec_decode", "query",
     lambda lib, bad: lib.reshape_query_for_spec_decode(bad(np.zeros((4, 2, 2)), np.float32),
                                                        2)),
    ("make_kv_sharing_fast_prefill_common_attn_metadata", "logits_indices_cpu",
     lambda lib, bad: lib.make_kv_sharing_fast_prefill_common_attn_metadata(
         _fast_prefill_batch(), logits_indices_cpu=bad([3, 9, 12]))),
    ("make_kv_sharing_fast_prefill_common_attn_metadata", "out_query_start_loc",
     lambda lib, bad: lib.make_kv_sharing_fast_prefill_common_attn_metadata(
         _fast_prefill_batch(), out_query_start_loc=bad(np.zeros(5)))),
    ("make_kv_sharing_fast_prefill_common_attn_metadata", "out_query_start_loc_cpu",
     lambda lib, bad: lib.make_kv_sharing_fast_prefill_common_attn_metadata(
         _fast_prefill_batch(), out_query_start_loc_cpu=bad(np.zeros(5)))),
    ("make_kv_sharing_fast_prefill_common_attn_metadata_ex", "out_query_start_loc",
     lambda lib, bad: lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex(
         _fast_prefill_batch(), out_query_start_loc=bad(np.zeros(5)))),
    ("make_kv_sharing_fast_prefill_common_attn_metadata_ex", "out_query_start_loc_cpu",
     lambda lib, bad: lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex(
         _fast_prefill_batch(), out_query_start_loc_cpu=bad(np.zeros(5)))),
    ("make_local_attention_virtual_batches", "seq_lens",
     lambda lib, bad: lib.make_local_attention_virtual_batches(
         8, Batch([20, 10], [4, 6]).common(), 4, outputs=_local_outputs(seq_lens=bad))),
    ("LocalAttentionOutputs", "virtual_req",
     lambda lib, bad: libattn.LocalAttentionOutputs(**_local_outputs(virtual_req=bad))),
]


@pytest.mark.parametrize("utility,arg,call", UTILITY_ARRAYS,
                         ids=[f"{u}-{a}" for u, a, _ in UTILITY_ARRAYS])
def test_utilities_refuse_byte_swapped_and_misaligned_arrays(lib, utility, arg, call):
    call(lib, lambda v, dtype=np.int32: np.ascontiguousarray(v, dtype))  # a good array: runs
    with pytest.raises(libattn.InvalidArgument, match=f"^.*{arg}: .*byte order") as e:
        call(lib, swapped)
    assert "'>'" in e.value.message or "'<'" in e.value.message, utility
    with pytest.raises(libattn.InvalidArgument, match=f"^.*{arg}: .*not aligned"):
        call(lib, misaligned)


def test_converted_inputs_are_converted_right(lib):
    """The utilities that take plain integer lists (reorder, prefill chunks, ubatch slices,
    conv1d) convert what they are given into a new int32 array: a byte-swapped or misaligned
    array gives the same answer as a native one."""
    sched, comp = [1, 8, 1, 1, 30], [5, 0, 9, 4, 0]
    want = lib.reorder_batch_to_split_decodes_and_prefills(sched, comp)
    assert want
    for make in (swapped, misaligned):
        assert lib.reorder_batch_to_split_decodes_and_prefills(make(sched), make(comp)) == want
        assert lib.split_prefill_chunks(make([5, 9, 30]), 64) == \
            lib.split_prefill_chunks([5, 9, 30], 64)
        assert lib.maybe_create_ubatch_slices(make([4, 4, 4, 4]), 16, 4) == \
            lib.maybe_create_ubatch_slices([4, 4, 4, 4], 16, 4)
        got = lib.compute_causal_conv1d_metadata(make([0, 9, 20]))
        np.testing.assert_array_equal(got.nums,
                                      lib.compute_causal_conv1d_metadata([0, 9, 20]).nums)
        kv = lib.compute_flashinfer_kv_metadata(make([5, 20]), [[1, 0], [2, 3]], BLOCK)
        assert kv.indices.tolist() == [1, 2, 3]


def test_dlpack_inputs_are_checked_for_alignment(mixed):
    class Producer:  # numpy refuses to export a read-only array; this one is writable
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

    good = libattn.tensors.tensor_arg(Producer(np.arange(4, dtype=np.int32)), name="x")
    assert good.shape == (4,)
    with pytest.raises(libattn.InvalidArgument, match="^.*seq_lens: .*not aligned"):
        mixed.common(seq_lens=Producer(writable_misaligned(5)))


def test_int64_inputs_that_do_not_fit_int32_are_refused(lib):
    """The utilities that convert their integer inputs to int32 refuse a value that would wrap
    (it used to be truncated silently: 2**32 + 5 became 5)."""
    big = np.array([5, 2**32 + 5, 9], dtype=np.int64)
    with pytest.raises(libattn.InvalidArgument, match=r"seq_lens\[1\]=4294967301 does not fit int32"):
        lib.split_prefill_chunks(big, 64)
    with pytest.raises(libattn.InvalidArgument, match=r"\[0\]=-2147483649 does not fit int32"):
        lib.split_prefill_chunks(np.array([-2**31 - 1], dtype=np.int64), 64)
    # in range: converted as before
    assert lib.split_prefill_chunks(np.array([5, 9], dtype=np.int64), 64) == \
        lib.split_prefill_chunks([5, 9], 64)


def test_read_only_outputs_are_refused(lib):
    """An out= array the library would write must be writeable: numpy promised a read-only one
    stays unchanged."""
    qsl = np.array([0, 1, 3, 6], dtype=np.int32)
    out = np.zeros(3, dtype=np.int32)
    lib.slice_query_start_locs(qsl, 0, 2, out=out)
    assert out.tolist() == [0, 1, 3]
    out.flags.writeable = False
    with pytest.raises(libattn.InvalidArgument, match="out: the array is read-only"):
        lib.slice_query_start_locs(qsl, 0, 2, out=out)


def test_vllm_argument_names_and_request_counts(lib):
    """vLLM's CommonAttentionMetadata name block_table_tensor is accepted (not with
    block_table); without num_reqs, query_start_loc and seq_lens of disagreeing lengths are
    reported naming both, not as a query_start_loc shape."""
    b = batch([40, 0], [1, 32])
    arrays = dict(b.arrays)
    table = arrays.pop("block_table")
    with lib.builder("FLASH_ATTN", spec(), small_config()) as fa:
        want = fa.build(libattn.CommonMetadata(block_table=table, **arrays))["block_table"].copy()
        got = fa.build(libattn.CommonMetadata(block_table_tensor=table, **arrays))
        np.testing.assert_array_equal(got["block_table"], want)
    with pytest.raises(TypeError, match="block_table_tensor"):
        libattn.CommonMetadata(block_table=table, block_table_tensor=table, **arrays)
    short = dict(arrays, seq_lens=np.asarray(arrays["seq_lens"])[:1])
    with pytest.raises(libattn.InvalidArgument) as e:
        libattn.CommonMetadata(block_table=table, **short)
    assert e.value.message == ("query_start_loc has 3 entries (2 requests) but seq_lens has 1 "
                               "(one per request): one of them has the wrong length")
    # an explicit num_reqs leaves the check to the library, which names the input
    with lib.builder("FLASH_ATTN", spec(), small_config()) as fa:
        with pytest.raises(libattn.InvalidArgument, match="seq_lens"):
            fa.build(libattn.CommonMetadata(block_table=table, num_reqs=2, **short))
