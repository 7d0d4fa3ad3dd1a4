"""ABI 1.4 from Python: vLLM 0.33.0's CommonAttentionMetadata fields as CommonMetadata keyword
arguments (under vLLM's names), sliced by unpadded, and Library.vllm_release."""
import numpy as np
import pytest

import libattn
from libattn._generated import ATTN_VLLM_RELEASE


def _batch(**extra):
    return libattn.CommonMetadata(
        query_start_loc=[0, 2, 4, 6, 6], seq_lens=[10, 20, 30, 40],
        block_table=np.zeros((4, 4), np.int32), slot_mapping=list(range(8)),
        num_actual_tokens=8, **extra)


def test_vllm_release(lib):
    assert lib.vllm_release() == ("0.33.0", (0, 33, 0))
    assert ATTN_VLLM_RELEASE == "0.33.0"


def test_fields_sliced_by_unpadded(lib):
    batch = _batch(seq_lens_cpu_upper_bound=[12, 20, 33, 41],
                   dcp_local_seq_lens_cpu_upper_bound=[6, 10, 17, 20],
                   positions=list(range(100, 108)),
                   causal=np.array([1, 0, 1, 1], np.int32),  # vLLM's name for the tensor
                   max_logits_per_req=3, req_idx=np.arange(4)[::-1].copy(),
                   mm_req_doc_ranges={2: [(3, 9)], 0: [(1, 4), (6, 8)]},
                   rswa_prefix_lens=[4, 8, 0, 2], replayssm_decode_base_cpu=[0, 16, 24, 0],
                   replay_start=[0, 3, 0, 7])  # ABI 1.7
    assert batch.max_seq_len == 41  # from the bound, as 0.33's runner does
    assert batch.struct.max_logits_per_req == 3
    u = lib.common_metadata_unpadded(batch, 6, 3)
    np.testing.assert_array_equal(u["seq_lens_cpu_upper_bound"], [12, 20, 33])
    np.testing.assert_array_equal(u["dcp_local_seq_lens_cpu_upper_bound"], [6, 10, 17])
    np.testing.assert_array_equal(u["causal_per_request"], [1, 0, 1])
    np.testing.assert_array_equal(u["req_idx"], [3, 2, 1])
    np.testing.assert_array_equal(u["rswa_prefix_lens"], [4, 8, 0])
    np.testing.assert_array_equal(u["replayssm_decode_base_cpu"], [0, 16, 24])
    np.testing.assert_array_equal(u["replay_start"], [0, 3, 0])
    assert u["max_logits_per_req"] == 3
    assert u["positions"] is None and u["mm_req_doc_ranges"] is None  # as 0.33's unpadded
    assert u["causal"] in (1, True)
    back = u.to_common()
    assert back.struct.max_logits_per_req == 3


def test_doc_ranges_rows(lib):
    batch = _batch(mm_req_doc_ranges={2: [(3, 9)], 0: [(1, 4), (6, 8)]})
    u = lib.common_metadata_unpadded(batch, 8, 4)
    assert u["mm_req_doc_ranges"] is None
    rows = batch.args["mm_req_doc_ranges"]
    assert rows is not None
    assert batch.struct.mm_req_doc_ranges.contents.shape[0] == 3
    assert batch.struct.mm_req_doc_ranges.contents.shape[1] == 3
    assert batch.struct.max_logits_per_req == -1  # None by default
    empty = _batch(mm_req_doc_ranges={})
    lib.common_metadata_unpadded(empty, 8, 4)


@pytest.mark.parametrize("kwargs, message", [
    (dict(seq_lens_cpu_upper_bound=[9, 20, 30, 40]), "common->seq_lens_cpu_upper_bound[0]=9"),
    (dict(seq_lens_cpu_upper_bound=np.array([12, 20, 30, 40], np.int64)),
     "common->seq_lens_cpu_upper_bound"),
    (dict(positions=np.arange(8, dtype=np.int32)), "common->positions"),
    (dict(positions=list(range(7))), "common->positions has shape (7,)"),
    (dict(causal_per_request=[1, 0]), "common->causal_per_request"),
    (dict(mm_req_doc_ranges={5: [(0, 1)]}), "common->mm_req_doc_ranges[0] names request 5"),
    (dict(replayssm_decode_base_cpu=[0, -1, 0, 0]), "common->replayssm_decode_base_cpu[1]=-1"),
    (dict(max_logits_per_req=-3), "common->max_logits_per_req=-3"),
    (dict(replay_start=[0, 0, -4, 0]), "common->replay_start[2]=-4 is negative"),
    (dict(replay_start=[0, 0]), "common->replay_start"),
])
def test_bad_fields_named(lib, kwargs, message):
    batch = _batch(**kwargs)
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.common_metadata_unpadded(batch, 6, 3)
    assert message in e.value.message
