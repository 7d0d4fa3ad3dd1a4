"""MLA's chunked context as vLLM 0.33's list of ContextChunk dicts (Metadata.mla_context_chunks),
and TensorView row slices."""
import numpy as np

import libattn
from libattn import KvCacheKind


def _build(lib, q, ctx, block, workspace, dcp=1, interleave=1):
    q, ctx = np.asarray(q, np.int32), np.asarray(ctx, np.int32)
    seq = q + ctx
    qsl = np.concatenate([[0], np.cumsum(q)]).astype(np.int32)
    spec = libattn.KvCacheSpec(block, 1, 576, kind=KvCacheKind.MLA)
    cfg = libattn.BuilderConfig(max_num_seqs=8, max_num_batched_tokens=1024, max_model_len=1024,
                                num_attention_heads=16, decode_context_parallel_size=dcp,
                                cp_kv_cache_interleave_size=interleave)
    cfg.mla_chunked_prefill_workspace_size = workspace
    b = libattn.Builder(lib, "TRITON_MLA", spec, cfg)
    width = -(-int(seq.max()) // block)
    common = libattn.CommonMetadata(
        query_start_loc=qsl, seq_lens=seq, block_table=np.zeros((len(q), width), np.int32),
        slot_mapping=np.zeros(int(qsl[-1]), np.int64), query_start_loc_cpu=qsl,
        seq_lens_cpu=seq, num_reqs=len(q), num_actual_tokens=int(qsl[-1]),
        max_query_len=int(q.max()), max_seq_len=int(seq.max()))
    return b, b.build(common)


def test_split_with_continuation(lib):
    # tests/c/test_mla_chunks.c's test_split_with_continuation: contexts 40, 200, 50 in a
    # 128-row workspace, block 16
    b, md = _build(lib, [4, 3, 5], [40, 200, 50], 16, 128)
    chunks = md.mla_context_chunks()
    assert [c["index"] for c in chunks] == [0, 1, 2]
    assert [c["request_slice"] for c in chunks] == [slice(0, 2), slice(1, 2), slice(2, 3)]
    assert [c["token_slice"] for c in chunks] == [slice(0, 7), slice(4, 7), slice(7, 12)]
    assert [c["is_continuation"] for c in chunks] == [False, True, False]
    assert [c["continuation_token_end"] for c in chunks] == [4, 7, 12]
    assert [c["num_context_tokens"] for c in chunks] == [120, 120, 50]
    assert [c["max_seq_len"] for c in chunks] == [80, 120, 50]
    assert [c["all_rows_active"] for c in chunks] == [True, True, True]
    assert [c["query_start_loc"].tolist() for c in chunks] == [[0, 4, 7], [0, 3], [0, 5]]
    assert [c["cu_seq_lens"].tolist() for c in chunks] == [[0, 40, 120], [0, 120], [0, 50]]
    assert [c["starts"].tolist() for c in chunks] == [[0, 0], [80], [0]]
    assert [c["seq_lens"].tolist() for c in chunks] == [[40, 80], [120], [50]]
    assert chunks[0]["token_to_seq"].tolist() == [0] * 40 + [1] * 80
    assert chunks[1]["padded_local_cu_seq_lens"] is None
    assert chunks[1]["local_starts"] is None
    b.close()


def test_dcp_lists(lib):
    b, md = _build(lib, [2, 3], [70, 60], 16, 96, dcp=2, interleave=4)
    chunks = md.mla_context_chunks()
    assert len(chunks) == 2
    assert chunks[0]["padded_local_seq_lens"] == [36, 8]
    assert chunks[1]["local_starts"] == [8]
    assert chunks[0]["local_context_lens_allranks"] == [[36, 34], [32, 28]]
    assert chunks[1]["padded_local_cu_seq_lens"].tolist() == [0, 24]
    assert chunks[0]["padded_local_token_to_seq"].tolist() == [0] * 36 + [1] * 8
    assert chunks[1]["num_local_context_tokens"] == 24
    b.close()


def test_no_context_is_none(lib):
    b, md = _build(lib, [4, 5], [0, 0], 16, 128)
    assert md.mla_context_chunks() is None
    assert md["prefill_chunked_context_chunk_cu_seq_lens"] is None
    b.close()


def test_tensor_view_rows(lib):
    b, md = _build(lib, [4, 3, 5], [40, 200, 50], 16, 128)
    name = "prefill_chunked_context_chunk_cu_seq_lens"
    view = md.tensor_view(name)
    part = view[3:5]
    assert part.shape == (2,) and part.device == view.device
    assert np.from_dlpack(part).tolist() == [0, 120]
    assert view[5:].shape == (2,) and np.from_dlpack(view[5:]).tolist() == [0, 50]
    assert view[4:2].shape == (0,)
    b.close()


def _prefill_builder(lib, **config):
    spec = libattn.KvCacheSpec(128, 1, 576, kind=KvCacheKind.MLA)
    cfg = libattn.BuilderConfig(max_num_seqs=8, max_num_batched_tokens=1024, max_model_len=1024,
                                num_attention_heads=16, **config)
    return libattn.Builder(lib, "CUTLASS_MLA", spec, cfg)


def test_prefill_backend_config(lib):
    # ABI 1.7: vLLM 0.33's attention_config.mla_prefill_backend and
    # use_prefill_query_quantization (tests/c/test_mla.c's test_prefill_paths)
    from libattn import KvDtype, MlaPrefillBackend
    q, seq = np.array([5, 7], np.int32), np.array([25, 7], np.int32)
    qsl = np.array([0, 5, 12], np.int32)
    common = libattn.CommonMetadata(
        query_start_loc=qsl, seq_lens=seq, block_table=np.zeros((2, 1), np.int32),
        slot_mapping=np.zeros(12, np.int64), query_start_loc_cpu=qsl, seq_lens_cpu=seq,
        num_reqs=2, num_actual_tokens=12, max_query_len=7, max_seq_len=25)
    b = _prefill_builder(lib, device_capability=100, cache_dtype=KvDtype.FP8_E4M3,
                         mla_prefill_backend=MlaPrefillBackend.TRTLLM_RAGGED,
                         use_prefill_query_quantization=1)
    md = b.build(common)
    assert md["prefill_prefill_backend"] == 2  # MLAPrefillBackendEnum.TRTLLM_RAGGED
    assert md["prefill_q_data_type"] == KvDtype.FP8_E4M3
    assert list(np.asarray(md["prefill_query_seq_lens"])) == [5, 7]
    try:
        _prefill_builder(lib, device_capability=90,
                         mla_prefill_backend=MlaPrefillBackend.FLASHINFER)
    except libattn.InvalidArgument as e:
        assert "Selected MLA prefill backend FLASHINFER is not valid" in str(e)
    else:
        raise AssertionError("FLASHINFER on 9.0 was accepted")
