"""Library.resolve_cudagraph_mode_and_sizes and Builder.varlen_cudagraph_max_query_len (ABI 1.4):
vLLM 0.33's CUDA graph mode resolution through the binding, with values recorded from vLLM
(scripts/vllm_cudagraph_mode_compare.py compares a whole grid)."""
import pytest

import libattn
from libattn import CudagraphMode, CudagraphSupport, KvCacheKind, MambaType
from conftest import config, spec

SIZES = [1, 2, 4, 8, 16]


def test_fallbacks(lib):
    ub = [(CudagraphSupport.UNIFORM_BATCH, "U", None)]
    assert lib.resolve_cudagraph_mode_and_sizes(CudagraphMode.FULL, ub, cudagraph_capture_sizes=SIZES,
                                                max_cudagraph_capture_size=16) == \
        (CudagraphMode.FULL_AND_PIECEWISE, SIZES, 16)
    assert lib.resolve_cudagraph_mode_and_sizes(
        CudagraphMode.FULL, ub, splitting_ops_contain_attention=False)[0] == \
        CudagraphMode.FULL_DECODE_ONLY
    # MRV1 rounds to multiples of 1 + k; MRV2 does not.
    assert lib.resolve_cudagraph_mode_and_sizes(
        CudagraphMode.FULL_AND_PIECEWISE, ub, uniform_decode_query_len=7,
        cudagraph_capture_sizes=SIZES, max_cudagraph_capture_size=16) == \
        (CudagraphMode.FULL_AND_PIECEWISE, [7, 14], 14)
    assert lib.resolve_cudagraph_mode_and_sizes(
        CudagraphMode.FULL_AND_PIECEWISE, ub, uniform_decode_query_len=7, use_v2_model_runner=True,
        cudagraph_capture_sizes=SIZES, max_cudagraph_capture_size=16)[1] == SIZES
    never = [(CudagraphSupport.ALWAYS, "A", None), (CudagraphSupport.NEVER, "N", None)]
    assert lib.resolve_cudagraph_mode_and_sizes(CudagraphMode.FULL_AND_PIECEWISE, never)[0] == \
        CudagraphMode.PIECEWISE
    assert lib.resolve_cudagraph_mode_and_sizes(CudagraphMode.FULL_AND_PIECEWISE, ub,
                                                piecewise_capture_available=False)[0] == \
        CudagraphMode.FULL_DECODE_ONLY
    assert lib.resolve_cudagraph_mode_and_sizes(CudagraphMode.NONE, never) == \
        (CudagraphMode.NONE, [], 0)


def test_errors(lib):
    never = [(CudagraphSupport.NEVER, "N", None)]
    with pytest.raises(libattn.Unsupported) as e:
        lib.resolve_cudagraph_mode_and_sizes(CudagraphMode.FULL, never)
    assert "please try cudagraph_mode=PIECEWISE" in e.value.message
    with pytest.raises(libattn.Unsupported) as e:
        lib.resolve_cudagraph_mode_and_sizes(
            CudagraphMode.FULL_AND_PIECEWISE, [(CudagraphSupport.UNIFORM_BATCH, "M", None)],
            has_mamba_layers=True, num_blocks=4, max_num_reqs=8)
    assert "max_num_seqs (8) exceeds available Mamba cache blocks (4)" in e.value.message
    with pytest.raises(libattn.Unsupported) as e:
        lib.resolve_cudagraph_mode_and_sizes(
            CudagraphMode.FULL_AND_PIECEWISE, [(CudagraphSupport.UNIFORM_BATCH, "M", 2)],
            uniform_decode_query_len=4, use_v2_model_runner=True, adaptive_verification=True)
    assert "M allows at most 2" in e.value.message
    with pytest.raises(libattn.InvalidArgument):
        lib.resolve_cudagraph_mode_and_sizes(7)


def test_builder_bounds_feed_the_resolution(lib):
    mamba = libattn.KvCacheSpec(block_size=16, num_kv_heads=1, head_size=1, kind=KvCacheKind.MAMBA,
                                mamba_type=MambaType.MAMBA2, mamba_chunk_size=8)
    cfg = config(num_speculative_tokens=3, use_v2_model_runner=True)
    with lib.builder("MAMBA2", mamba, cfg) as m, lib.builder("FLASH_ATTN", spec(), cfg) as fa:
        assert m.varlen_cudagraph_max_query_len == 4
        assert fa.varlen_cudagraph_max_query_len is None
        groups = lib.cudagraph_groups([fa, m])
        assert groups[1] == (m.cudagraph_support, "MAMBA2", 4)
        mode, _, _ = lib.resolve_cudagraph_mode_and_sizes(
            CudagraphMode.FULL_AND_PIECEWISE, groups, uniform_decode_query_len=4,
            use_v2_model_runner=True, adaptive_verification=True)
        assert mode == CudagraphMode.FULL_AND_PIECEWISE
