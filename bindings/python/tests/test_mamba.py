"""The Mamba family through the binding: a MambaSpec (ABI 1.2 spec fields) and the build inputs
vLLM passes as keyword arguments (ABI 1.2 common-metadata fields)."""
import numpy as np
import pytest

import libattn
from libattn import CudagraphMode, KvCacheKind, MambaCacheMode, MambaType


def mamba_spec(**kw):
    return libattn.KvCacheSpec(block_size=16, num_kv_heads=1, head_size=1, kind=KvCacheKind.MAMBA,
                               **kw)


def config(spec_tokens=0):
    return libattn.BuilderConfig(256, 8192, 4096, 32, num_speculative_tokens=spec_tokens,
                                 cudagraph_mode=CudagraphMode.NONE)


def batch(q, s, **kw):
    """vLLM 0.33's Mamba builders require is_prefilling: none is unless ``kw`` says so."""
    kw.setdefault("is_prefilling", [False] * len(q))
    qsl = np.concatenate([[0], np.cumsum(q)]).astype(np.int32)
    table = np.arange(1, 1 + 3 * len(q), dtype=np.int32).reshape(len(q), 3)
    return libattn.CommonMetadata(qsl, np.array(s, np.int32), table,
                                  np.zeros(int(qsl[-1]), np.int64), **kw)


def test_mamba2_chunks_and_is_prefilling(lib):
    spec = mamba_spec(mamba_type=MambaType.MAMBA2, mamba_chunk_size=8)
    with lib.builder("MAMBA2", spec, config()) as b:
        # request 1 (query 12, computed 5): 3 tokens finish its chunk, then 8 and 1
        md = b.build(batch([1, 12], [9, 17]))
        assert md["num_decodes"] == 1 and md["num_prefills"] == 1
        assert list(md["cu_chunk_seqlen_p"]) == [0, 3, 11, 12]
        assert list(md["seq_idx_p"]) == [0, 0, 0]
        assert list(md["state_indices_tensor_p"]) == [4]
        # a one-token request still in its prompt is a prefill without prior state...
        md = b.build(batch([1, 1], [9, 1], is_prefilling=[False, True]))
        assert md["num_decodes"] == 1 and md["num_prefills"] == 1
        assert list(md["has_initial_states_p"]) == [False]
        # ...and a decode with it (vLLM 0.33: q=[1] ctx=[10])
        md = b.build(batch([1, 1], [9, 11], is_prefilling=[False, True]))
        assert md["num_decodes"] == 2 and md["num_prefills"] == 0
        # vLLM 0.33 asserts is_prefilling is given
        with pytest.raises(libattn.InvalidArgument, match="is_prefilling is NULL"):
            b.build(batch([1, 1], [9, 11], is_prefilling=None))


def test_all_mode_removed(lib):
    for name in ("MAMBA2", "MAMBA1", "SHORT_CONV", "LINEAR_ATTN"):
        spec = mamba_spec(mamba_chunk_size=8, mamba_cache_mode=MambaCacheMode.ALL)
        with pytest.raises(libattn.Unsupported, match=r'"all"\) was removed in vLLM 0.33'):
            lib.builder(name, spec, config())


def test_spec_decode_inputs(lib):
    spec = mamba_spec(mamba_cache_mode=MambaCacheMode.NONE, num_speculative_blocks=2)
    with lib.builder("MAMBA2", mamba_spec(mamba_chunk_size=8), config(2)) as b:
        md = b.build(batch([3, 2], [9, 7], num_accepted_tokens=[2, 1]))
        assert md["num_decodes"] == 2
        assert list(md["query_start_loc_d"]) == [0, 3, 5]
        assert list(md["num_accepted_tokens"]) == [2, 1]
        # without num_accepted_tokens (threshold 1): one-token decodes accept every token
        md = b.build(batch([1, 1, 4], [9, 7, 4]))
        assert list(md["query_start_loc_d"]) == [0, 1, 2]
        assert list(md["num_accepted_tokens"]) == [1, 1]
    with lib.builder("GDN_ATTN", spec, config(2)) as b:
        md = b.build(batch([3, 1, 5], [9, 7, 5], num_accepted_tokens=[2, 1, 1],
                           num_decode_draft_tokens_cpu=[2, -1, -1]))
        assert md["num_spec_decodes"] == 1 and md["num_spec_decode_tokens"] == 3
        assert list(md["spec_token_indx"]) == [0, 1, 2]
        assert list(md["non_spec_token_indx"]) == [3, 4, 5, 6, 7, 8]
        assert list(md["spec_sequence_masks"]) == [True, False, False]
        assert md["spec_state_indices_tensor"].tolist() == [[1, 2, 3]]


def test_replayssm_and_checkpoints_abi_1_6(lib):
    """The ABI 1.6 config and spec fields reach the builder: Triton ReplaySSM's cursors and
    MAMBA2's prefill checkpoints (tests/c/test_mamba.c works both out by hand)."""
    spec = mamba_spec(mamba_type=MambaType.MAMBA2, mamba_chunk_size=8, mamba_replayssm_ngroups=2)
    cfg = libattn.BuilderConfig(256, 8192, 4096, 32, cudagraph_mode=CudagraphMode.NONE,
                                use_replayssm=1, replayssm_buffer_len=4)
    assert cfg.to_struct().struct.replayssm_buffer_len == 4
    with lib.builder("MAMBA2", spec, cfg) as b:
        md = b.build(batch([1, 1], [10, 7], replayssm_decode_base_cpu=[5, 3]))
        assert list(md["write_pos_d"]) == [0, 3]
        assert list(md["is_flush_d"]) == [0, 1]
        assert md["bc_pre_scratch"].shape == (2, 2, 4)
        with pytest.raises(libattn.InvalidArgument, match="replayssm_decode_base_cpu is NULL"):
            b.build(batch([1, 1], [10, 7]))
    spec = mamba_spec(mamba_type=MambaType.MAMBA2, mamba_chunk_size=8,
                      mamba_cache_mode=MambaCacheMode.ALIGN, num_prefill_checkpoint_blocks=1,
                      prefill_checkpoint_alignment=8)
    cfg = libattn.BuilderConfig(256, 8192, 4096, 32, cudagraph_mode=CudagraphMode.NONE,
                                hash_block_size=16, cache_hit_alignment_tokens=16)
    with lib.builder("MAMBA2", spec, cfg) as b:
        qsl = np.array([0, 40], np.int32)
        table = np.arange(1, 4, dtype=np.int32).reshape(1, 3)
        md = b.build(libattn.CommonMetadata(qsl, np.array([40], np.int32), table,
                                            np.zeros(40, np.int64), is_prefilling=[True]))
        assert list(md["checkpoint_meta_offsets"]) == [32]
        assert list(md["checkpoint_chunk_idx"]) == [3]
        assert list(md["checkpoint_meta_state_indices"]) == [2]
