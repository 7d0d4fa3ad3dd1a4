"""GDN_ATTN at vLLM 0.33 through the binding: a one-token first chunk is a prefill, the prefill
part and FLA's chunk metadata, and the ABI 1.6 config field gdn_prefill_backend (the prefill
kernel vLLM resolved: Triton gives chunk_indices / chunk_offsets, FlashInfer none)."""
import numpy as np
import pytest

import libattn
from libattn import CudagraphMode, GdnPrefillBackend, KvCacheKind, MambaType


def config(**kw):
    return libattn.BuilderConfig(256, 8192, 4096, 32, cudagraph_mode=CudagraphMode.NONE, **kw)


def spec():
    return libattn.KvCacheSpec(block_size=16, num_kv_heads=1, head_size=1, kind=KvCacheKind.MAMBA,
                               mamba_type=MambaType.GDN_ATTENTION)


def batch(q, s, **kw):
    qsl = np.concatenate([[0], np.cumsum(q)]).astype(np.int32)
    table = np.arange(1, 1 + len(q), dtype=np.int32).reshape(len(q), 1)
    return libattn.CommonMetadata(qsl, np.array(s, np.int32), table,
                                  np.zeros(int(qsl[-1]), np.int64), **kw)


def test_first_chunk_prefill_part_and_chunks(lib):
    # a decode, a one-token first chunk, a 70-token first chunk, a padding row
    b = batch([1, 1, 70, 0], [9, 1, 70, 0], is_prefilling=[False, True, True, False])
    with lib.builder("GDN_ATTN", spec(), config(gdn_prefill_backend=GdnPrefillBackend.TRITON)) as g:
        md = g.build(b)
        assert (md["num_decodes"], md["num_prefills"], md["num_prefill_tokens"]) == (1, 2, 71)
        assert list(md["prefill_query_start_loc"]) == [0, 1, 71, 71]
        assert list(md["prefill_state_indices"]) == [2, 3, 4]
        assert list(md["prefill_has_initial_state"]) == [False, False, False]
        assert md["chunk_indices"].tolist() == [[0, 0], [1, 0], [1, 1]]
        assert md["chunk_offsets"].dtype == np.int64
        assert list(md["chunk_offsets"]) == [0, 1, 3, 3]
    with lib.builder("GDN_ATTN", spec(),
                     config(gdn_prefill_backend=GdnPrefillBackend.FLASHINFER)) as g:
        md = g.build(b)
        assert md["chunk_indices"] is None and md["chunk_offsets"] is None
        assert list(md["prefill_query_start_loc"]) == [0, 1, 71, 71]


def test_bad_prefill_backend(lib):
    with pytest.raises(libattn.AttnError, match=r"config->gdn_prefill_backend=7 is not an "
                                                r"ATTN_GDN_PREFILL_\* value \(0..2\)"):
        lib.builder("GDN_ATTN", spec(), config(gdn_prefill_backend=7))
