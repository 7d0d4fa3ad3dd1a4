"""Every batch utility through the binding: vLLM's vectors, hand-computed values, bad input."""
import numpy as np
import pytest

import libattn
from conftest import Batch, vectors


def vector_batch(query_lens, seq_lens=None, padded=None, is_prefilling=None):
    seq = seq_lens or [10 * (i + 1) for i in range(len(query_lens))]
    qsl = np.cumsum([0] + list(query_lens), dtype=np.int32)
    return libattn.CommonMetadata(query_start_loc=qsl, seq_lens=np.array(seq, np.int32),
                                  num_actual_tokens=padded if padded else int(qsl[-1]),
                                  is_prefilling=is_prefilling)


def test_split_decodes_and_prefills_vectors(lib):
    for case in vectors("split_decodes_and_prefills.json")["cases"]:
        split = lib.split_decodes_and_prefills(vector_batch(case["query_lens"],
                                                            padded=case.get("padded_num_tokens")),
                                               case["decode_threshold"], case["require_uniform"])
        assert list(split[:4]) == case["expected"], case


def test_split_with_extends_vectors(lib):
    for case in vectors("split_decodes_prefills_and_extends.json")["cases"]:
        s = lib.split_decodes_prefills_and_extends(
            vector_batch(case["query_lens"], case["seq_lens"]), case["decode_threshold"])
        got = [s.num_decodes, s.num_extends, s.num_prefills, s.num_decode_tokens,
               s.num_extend_tokens, s.num_prefill_tokens]
        assert got == case["expected"]


def test_uniform_split_accepts_padded_batches(lib):
    # vLLM 0.33 dropped the "tokens not padded correctly" assertion: a padded uniform batch is
    # all decodes whatever its token count, and a zero-length row never marks a prefill
    assert tuple(lib.split_decodes_and_prefills(vector_batch([2, 2, 2, 0], padded=7), 3,
                                                True))[:4] == (4, 0, 7, 0)
    assert tuple(lib.split_decodes_and_prefills(vector_batch([2, 0, 3, 2]), 3,
                                                True))[:4] == (2, 2, 2, 5)


def test_split_ex_short_extends(lib):
    # values of vLLM 0.33.0's split_decodes_and_prefills(treat_short_extends_as_decodes=...)
    b = vector_batch([1, 1, 1, 4], is_prefilling=np.array([0, 0, 1, 1], np.bool_))
    assert tuple(lib.split_decodes_and_prefills_ex(b, 1, False, False))[:4] == (2, 2, 2, 5)
    assert tuple(lib.split_decodes_and_prefills_ex(b, 1, False, True))[:4] == (3, 1, 3, 4)
    b = vector_batch([1, 1], is_prefilling=np.array([0, 1], np.bool_))
    assert tuple(lib.split_decodes_and_prefills_ex(b, 1, False, False))[:4] == (1, 1, 1, 1)
    assert tuple(lib.split_decodes_and_prefills_ex(b))[:4] == (2, 0, 2, 0)
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.split_decodes_and_prefills_ex(vector_batch([1, 4]), 1, False, False)
    assert "is_prefilling is NULL" in e.value.message
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.split_decodes_and_prefills_ex(vector_batch([1, 4]), -1)
    assert "decode_threshold=-1" in e.value.message


def test_reorder_v2_four_regions(lib):
    # the issue's example and a batch with all four regions: vLLM 0.33.0's swap_states calls
    assert lib.reorder_batch_to_split_decodes_and_prefills_v2([1, 1], [10, 10], [20, 5]) == [(1, 0)]
    assert lib.reorder_batch_to_split_decodes_and_prefills([1, 1], [10, 10]) == []
    assert lib.reorder_batch_to_split_decodes_and_prefills_v2(
        [5, 1, 8, 1, 1, 2], [0, 10, 3, 4, 7, 9], [10, 10, 20, 9, 7, 5]) == [(4, 0), (4, 5), (3, 2)]
    assert lib.reorder_batch_to_split_decodes_and_prefills_v2([], [], []) == []
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.reorder_batch_to_split_decodes_and_prefills_v2([1, 1], [1, 1], [1, -3])
    assert "num_prompt_tokens[1]=-3" in e.value.message
    with pytest.raises(libattn.InvalidArgument):
        lib.reorder_batch_to_split_decodes_and_prefills_v2([1, 1], [1, 1], [1])


def test_ubatch_slices_033(lib):
    # more micro-batches than tokens: empty slices (vLLM 0.33), and a list of split points
    sl, pad = lib.maybe_create_ubatch_slices([1, 1], 2, 2, 3)
    assert [tuple(s) for s in sl] == [(0, 0, 0, 0), (0, 0, 0, 0), (0, 2, 0, 2)]
    sl, pad = lib.maybe_create_ubatch_slices_ex([4, 4], 10, 3, 3, [3, 6])
    assert [tuple(s) for s in sl] == [(0, 1, 0, 3), (0, 2, 3, 6), (1, 2, 6, 8)]
    assert [tuple(s) for s in pad] == [(0, 1, 0, 3), (0, 2, 3, 6), (1, 3, 6, 10)]
    assert lib.maybe_create_ubatch_slices_ex([4, 4], 8, 2, 2, None) == \
        lib.maybe_create_ubatch_slices([4, 4], 8, 2, 2)
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.maybe_create_ubatch_slices_ex([4, 4], 8, 2, 3, [5, 3])
    assert "must not decrease" in e.value.message
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.maybe_create_ubatch_slices_ex([4, 4], 8, 2, 3, [4])
    assert "num_split_points=1 must be num_ubatches - 1 = 2" in e.value.message


def test_mm_prefix_ranges(lib):
    # vLLM 0.33.0's compute_mm_prefix_range_tensor and fill_mm_prefix_query_ranges on these dicts
    t = lib.compute_mm_prefix_range_tensor({0: [(2, 5), (9, 12)], 2: [(1, 3)], 5: [(7, 8)]}, 3)
    assert t.tolist() == [[[2, 5], [9, 12]], [[0, 0], [0, 0]], [[1, 3], [0, 0]]]
    assert lib.compute_mm_prefix_range_tensor({1: [(0, 0)]}, 3) is None
    assert lib.compute_mm_prefix_range_tensor(None, 3) is None
    out = np.full((10, 2), -7, np.int32)
    qsl, seq = np.array([0, 4, 4, 9], np.int32), np.array([10, 3, 9], np.int32)
    n = lib.fill_mm_prefix_query_ranges(out, {0: [(5, 7), (9, 9)], 2: [(2, 4), (6, 20)]}, qsl, seq)
    assert n == 9
    assert out.tolist() == [[5, 7], [5, 7], [-1, -1], [-1, -1], [2, 4], [-1, -1], [6, 20],
                            [6, 20], [6, 20], [-7, -7]]
    assert lib.fill_mm_prefix_query_ranges(out, None, qsl, seq) == 0
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.fill_mm_prefix_query_ranges(np.zeros((4, 2), np.int32), {0: [(5, 7)]}, qsl, seq)
    assert "mm_prefix staging buffer holds 4 tokens, got 9" in e.value.message


def test_token_to_req_indices(lib):
    qsl = np.array([0, 3, 3, 5], np.int32)
    assert lib.compute_token_to_req_indices(qsl, 5, 7).tolist() == [0, 0, 0, 2, 2, 0, 0]
    assert lib.compute_token_to_req_indices(qsl, 5).tolist() == [0, 0, 0, 2, 2]
    out = np.full(8, -9, np.int32)
    lib.compute_token_to_req_indices(qsl, 9, 6, out=out)
    assert out.tolist() == [0, 0, 0, 2, 2, 2, -9, -9]
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.compute_token_to_req_indices(qsl, 5, 9, out=np.zeros(4, np.int32))
    assert "out" in e.value.message


def test_reorder_swaps(lib):
    # decode, prefill, decode: the prefill (no context) moves behind the decode
    swaps = lib.reorder_batch_to_split_decodes_and_prefills([1, 8, 1], [5, 0, 9])
    assert swaps == [(2, 1)]
    assert lib.reorder_batch_to_split_decodes_and_prefills([1, 1, 8], [5, 9, 0]) == []
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.reorder_batch_to_split_decodes_and_prefills([1, -1], [0, 0])
    assert "-1" in e.value.message


def test_split_prefill_chunks(lib):
    assert lib.split_prefill_chunks([4, 3, 5, 2], 8) == [(0, 2), (2, 4)]
    assert lib.split_prefill_chunks([4, 3, 5, 2], 8, request_offset=10) == [(10, 12), (12, 14)]
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.split_prefill_chunks([4, 9], 8)
    assert "9" in e.value.message and "8" in e.value.message


def test_dcp_local_seq_lens_formula(lib):
    seq = np.array([0, 1, 7, 16, 33], np.int32)
    size, inter = 4, 2
    out = lib.get_dcp_local_seq_lens(seq, size, None, inter)
    assert out.shape == (5, 4)
    for i, s in enumerate(seq):
        base = s // inter // size * inter
        rem = s - base * size
        want = [base + min(max(rem - r * inter, 0), inter) for r in range(size)]
        assert out[i].tolist() == want
        assert sum(want) == s
    np.testing.assert_array_equal(lib.get_dcp_local_seq_lens(seq, size, 1, inter), out[:, 1])
    # every rank of dcp_size 1: (n, 1), as vLLM 0.33 returns
    one = lib.get_dcp_local_seq_lens(seq, 1, None, inter)
    assert one.shape == (5, 1) and one[:, 0].tolist() == seq.tolist()
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.get_dcp_local_seq_lens(seq, 4, 4)
    assert "dcp_rank" in e.value.message


def test_reshape_query_is_a_view(lib):
    q = np.arange(6 * 2 * 4, dtype=np.float32).reshape(6, 2, 4)
    v = lib.reshape_query_for_spec_decode(q, 3)
    assert v.shape == (3, 2, 2, 4) and np.shares_memory(v, q)
    np.testing.assert_array_equal(v, q.reshape(3, 2, 2, 4))
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.reshape_query_for_spec_decode(q, 4)
    assert e.value.message == "total_tokens=6 is not divisible by batch_size=4"


def test_slot_mapping_by_hand(lib, mixed):
    positions = np.array([p for r in range(5) for p in range(mixed.context[r], mixed.seq[r])],
                         np.int64)
    out = np.full(60, 7, np.int64)
    lib.compute_slot_mapping(mixed.arrays["query_start_loc"], positions, mixed.table, 16, out=out)
    np.testing.assert_array_equal(out[:55], mixed.slots)
    assert (out[55:] == libattn.PAD_SLOT_ID).all()
    bad = positions.copy()
    bad[0] = 64 * 16  # past the table
    with pytest.raises(libattn.InvalidArgument):
        lib.compute_slot_mapping(mixed.arrays["query_start_loc"], bad, mixed.table, 16)


def test_flashinfer_kv_layout_by_hand(lib, mixed):
    kv = lib.compute_flashinfer_kv_metadata(mixed.seq, mixed.table, 16)
    pages = [-(-s // 16) for s in mixed.seq]
    np.testing.assert_array_equal(kv.indptr, np.cumsum([0] + pages))
    np.testing.assert_array_equal(kv.indices, np.concatenate([mixed.table[r, :p] for r, p in enumerate(pages)]))
    np.testing.assert_array_equal(kv.last_page_len, [s % 16 or 16 for s in mixed.seq])


def test_causal_conv1d_by_hand(lib):
    r = lib.compute_causal_conv1d_metadata([0, 20, 28, 29])
    assert r.tot == 3 + 1 + 1 and r.num_programs == 2048
    assert r.batch_ptr[:5].tolist() == [0, 0, 0, 1, 2]
    assert r.token_chunk_offset_ptr[:5].tolist() == [0, 1, 2, 0, 0]
    assert (r.batch_ptr[5:] == libattn.PAD_SLOT_ID).all() and r.nums.tolist() == [3, 1, 1]


def test_fast_prefill_vector(lib):
    case = vectors("kv_sharing_fast_prefill.json")["cases"][0]
    qsl = np.cumsum([0] + case["query_lens"], dtype=np.int32)
    b = Batch([s - q for s, q in zip(case["seq_lens"], case["query_lens"])], case["query_lens"])
    common = b.common(logits_indices_padded=case["logits_indices_padded"],
                      num_logits_indices=case["num_logits_indices"])
    with lib.make_kv_sharing_fast_prefill_common_attn_metadata(common) as md:
        assert md.kind == "common"
        exp = case["expected"]
        assert md["query_start_loc"].tolist() == exp["query_start_loc"]
        assert (md["num_actual_tokens"], md["max_query_len"]) == (exp["num_actual_tokens"], exp["max_query_len"])
        assert md["seq_lens"].tolist() == exp["seq_lens"]
        assert md.to_common().num_actual_tokens == exp["num_actual_tokens"]
    unsorted = b.common(logits_indices_padded=[18, 14, 19, 27], num_logits_indices=4)
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.make_kv_sharing_fast_prefill_common_attn_metadata(unsorted)
    assert "sorted" in e.value.message


def test_fast_prefill_ex_returns_common_itself_or_a_new_batch(lib):
    """ABI 1.7: as vLLM, the argument itself where the batch passes through (decodes, or no
    logits indices), else the batch of the ABI 1.0 function (same values, same build)."""
    from conftest import config, spec
    decodes = Batch([4, 5, 6], [1, 1, 1]).common()
    assert lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex(decodes) is decodes
    armed_decodes = Batch([4, 5, 6], [1, 1, 1]).common(logits_indices_padded=[0, 1, 2],
                                                         num_logits_indices=3)
    assert lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex(armed_decodes) is armed_decodes
    not_armed = Batch([0, 0], [4, 6]).common()
    out = np.full(3, -9, np.int32)
    assert lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex(
        not_armed, out_query_start_loc_cpu=out) is not_armed
    assert out.tolist() == [-9, -9, -9]  # untouched
    armed = Batch([0, 0, 0], [4, 6, 3]).common(logits_indices_padded=[3, 9, 12],
                                               num_logits_indices=3)
    q = np.full(4, -9, np.int32)
    got = lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex(armed, out_query_start_loc_cpu=q)
    assert got is not armed
    assert q.tolist() == [0, 1, 2, 3]
    with lib.make_kv_sharing_fast_prefill_common_attn_metadata(armed) as md:
        want = md.to_common()
        assert ((got.num_reqs, got.num_actual_tokens, got.max_query_len, got.max_seq_len) ==
                (want.num_reqs, want.num_actual_tokens, want.max_query_len, want.max_seq_len))
        with lib.builder("FLASH_ATTN", spec(), config(90)) as b:
            a = {k: b.build(got)[k] for k in ("query_start_loc", "seq_lens")}
            w = b.build(want)
            for k, v in a.items():
                np.testing.assert_array_equal(v, w[k])
    bad = Batch([4], [1]).common()
    bad.struct.max_query_len = -1  # a pass-through still checks the scalars
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex(bad)
    assert e.value.message == "common->max_query_len=-1 is negative"


def test_local_attention_vector_and_remap(lib):
    case = vectors("local_attention_virtual_batches.json")["cases"][0]
    qsl = np.cumsum([0] + case["query_lens"], dtype=np.int32)
    table = np.array(case["block_table"], np.int32)
    common = libattn.CommonMetadata(query_start_loc=qsl, seq_lens=case["seq_lens"],
                                    block_table=table, slot_mapping=np.zeros(qsl[-1], np.int64))
    exp = case["expected"]
    assert lib.local_attention_num_virtual_batches(case["attn_chunk_size"], common) == exp["num_reqs"]
    r = lib.make_local_attention_virtual_batches(case["attn_chunk_size"], common, case["block_size"])
    assert r.query_start_loc.tolist() == exp["query_start_loc"]
    assert r.seq_lens.tolist() == exp["seqlens_k_local"]
    assert r.num_computed_tokens.tolist() == exp["num_computed_tokens_local"]
    assert r.block_table.tolist() == exp["block_table_local"]
    assert r.metadata.to_common().num_reqs == exp["num_reqs"]
    assert (r.metadata["max_query_len"], r.metadata["max_seq_len"]) == (exp["max_query_len"], exp["max_seq_len"])
    other = table + 1000
    remapped = lib.remap_local_block_table(other, r.virtual_req, r.virtual_block_start, 2)
    np.testing.assert_array_equal(remapped, np.array(exp["block_table_local"]) + 1000)
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.make_local_attention_virtual_batches(3, common, 2)
    assert e.value.message == "attn_chunk_size 3 is not divisible by block_size 2"


def test_ubatch_vectors(lib):
    data = vectors("ubatch_slicing.json")
    for case in data["cases"]:
        out = lib.slice_query_start_locs(case["query_start_loc"], *case["slice"])
        assert out.tolist() == case["expected"]
    for case in data["metadata_slices"]:
        if "request_slice" not in case:
            continue
        b = Batch([s - q for s, q in zip(case["seq_lens"], case["query_lens"])], case["query_lens"])
        sl = (*case["request_slice"], *case["token_slice"])
        with lib.make_metadata_with_slice(b.common(), sl) as md:
            exp = case["expected"]
            for k, v in exp.items():
                got = md[k]
                assert (got.tolist() if isinstance(got, np.ndarray) else got) == v, (case, k)


def test_ubatch_slices_and_split(lib):
    slices, padded = lib.maybe_create_ubatch_slices([8, 8], 16, 2, 2, 12)
    assert slices[0] == (0, 2, 0, 12) and slices[1] == (1, 2, 12, 16)
    assert padded[1].token_stop == 16
    b = Batch([24, 32], [8, 8])
    parts = lib.split_attn_metadata(b.common(), slices)
    assert [p["query_start_loc"].tolist() for p in parts] == [[0, 8, 12], [0, 4]]
    assert [p["seq_lens"].tolist() for p in parts] == [[32, 36], [40]]
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.split_attn_metadata(b.common(), [(0, 2, 0, 12), (2, 2, 16, 16)])
    assert e.value.message.startswith("slices[1]: ")


def test_unpadded(lib, mixed):
    with lib.common_metadata_unpadded(mixed.common(), 3, 3) as md:
        assert md["query_start_loc"].tolist() == [0, 1, 2, 3]
        assert md["seq_lens"].tolist() == mixed.seq[:3]
        assert md["slot_mapping"].tolist() == mixed.slots[:3]
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.common_metadata_unpadded(mixed.common(), 3, 6)
    assert "num_actual_reqs=6" in e.value.message


def test_naive_query_lens_and_reshape_attn_output_17(lib):
    # ABI 1.7: CommonAttentionMetadata.naive_query_lens() and reshape_attn_output_for_spec_decode
    cm = vector_batch([3, 1, 0, 6], [5, 1, 7, 6])
    assert lib.common_metadata_naive_query_lens(cm).tolist() == [3, 1, 0, 6]
    out = lib.reshape_attn_output_for_spec_decode(np.zeros((2, 3, 4, 5), np.float32))
    assert out.shape == (6, 4, 5) and out.strides == (80, 20, 4)
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    v = lib.reshape_attn_output_for_spec_decode(a)
    assert np.shares_memory(v, a)
    np.testing.assert_array_equal(v, a.reshape(6, 4, 5))
    three = np.zeros((6, 4, 5), np.float32)
    assert lib.reshape_attn_output_for_spec_decode(three).shape == (6, 4, 5)
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.reshape_attn_output_for_spec_decode(np.zeros((6, 4), np.float32))
    assert e.value.message == "attn_output must be 4D, got 2D"
    with pytest.raises(libattn.InvalidArgument) as e:  # a transposed output: torch refuses
        lib.reshape_attn_output_for_spec_decode(np.zeros((3, 2, 4, 5), np.float32).transpose(1, 0, 2, 3))
    assert "cannot be viewed" in e.value.message
    # without elements: torch's strides (each size counted as at least 1), kept in the view
    empty = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (2, 0, 0, 3), (20, 28, 4, 8))
    assert lib.reshape_attn_output_for_spec_decode(empty).strides == (12, 12, 4)
    empty3 = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (0, 1, 0), (4, 4, 4))
    assert lib.reshape_attn_output_for_spec_decode(empty3).strides == (4, 4, 4)


def test_runner_decisions_17(lib):
    # ABI 1.7: vLLM 0.33's cp_utils and ubatch_utils decisions, values from vLLM's code
    assert lib.get_dcp_dummy_context_len(4, 16, True, True, False, False) == 64
    assert lib.get_dcp_dummy_context_len(4, 16, True, False, True, False) == 0
    assert lib.get_dcp_dummy_context_len(1, 16, True, True, True, True) == 0
    assert lib.should_split_fa2_dcp_context_attention(2, 5, 4, 1, 3)
    assert not lib.should_split_fa2_dcp_context_attention(2, 5, 4, 0, 4)
    assert not lib.should_split_fa2_dcp_context_attention(None, 5, 4, 1, 3)
    assert lib.is_last_ubatch_empty(5, 16, 2) and not lib.is_last_ubatch_empty(9, 16, 2)
    assert lib.get_num_ubatches(False, 0) == 1 and lib.get_num_ubatches(True, 4) == 2
    assert lib.get_num_ubatches(False, 3) == 3
    assert lib.check_ubatch_thresholds(True, 0, 32, 512, 32, True)
    assert not lib.check_ubatch_thresholds(True, 0, 32, 512, 100, False)
    assert not lib.check_ubatch_thresholds(False, 1, 0, 0, 100, False)
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.is_last_ubatch_empty(1, 4, 0)
    assert e.value.message == "num_ubatches=0 must be positive (vLLM divides by it)"
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.should_split_fa2_dcp_context_attention(2, 5, 4, 5, 0)
    assert "num_decode_reqs=5" in e.value.message
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.get_dcp_dummy_context_len(0, 1, True, True, False, False)
    assert e.value.message == "dcp_world_size=0 must be positive"
