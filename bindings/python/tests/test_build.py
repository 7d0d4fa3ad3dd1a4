"""Builds through the binding: values against numbers computed by hand, the builder's
queries, metadata lifetime, update_block_table, capture and drafting builds, bad input."""
import threading

import numpy as np
import pytest

import libattn
from conftest import Batch, config, spec


@pytest.fixture
def fa(lib):
    with lib.builder("FLASH_ATTN", spec(), config(90)) as b:
        yield b


def test_flash_attn_fields_by_hand(fa, mixed):
    md = fa.build(mixed.common())
    assert md.kind == "FLASH_ATTN"
    assert md["num_actual_tokens"] == 55
    assert md["max_query_len"] == 32 and md["max_seq_len"] == 100
    np.testing.assert_array_equal(md["query_start_loc"], [0, 1, 2, 3, 35, 55])
    np.testing.assert_array_equal(md["seq_lens"], [41, 100, 17, 96, 20])
    np.testing.assert_array_equal(md["slot_mapping"], mixed.slots)
    assert md["slot_mapping"][0] == 3 * 16 + 8  # request 0's token 40: block 3, offset 8
    assert md["causal"] is True
    # vLLM 0.33 removed cascade attention: without a common prefix there are no cascade fields
    assert "use_cascade" not in md and "cu_prefix_query_lens" not in md
    assert md["num_decode_reqs"] == 0 and md["max_dcp_context_kv_len"] == 0
    assert len(md) == len(md.fields()) == len(list(md)) and "seq_lens" in md
    with pytest.raises(KeyError):
        md["no_such_field"]


def test_cascade_split_by_hand(fa, mixed):
    md = fa.build(mixed.common(), common_prefix_len=16)
    assert md["use_cascade"] is True and md["common_prefix_len"] == 16
    np.testing.assert_array_equal(md["cu_prefix_query_lens"], [0, 55])
    np.testing.assert_array_equal(md["prefix_kv_lens"], [16])
    np.testing.assert_array_equal(md["suffix_kv_lens"], np.array(mixed.seq) - 16)


def test_builder_queries(lib, fa):
    assert fa.backend_name == "FLASH_ATTN"
    assert fa.cudagraph_support == libattn.CudagraphSupport.ALWAYS
    assert fa.reorder_batch_threshold is None and fa.supports_update_block_table
    with lib.builder("FLASHINFER", spec(), config(90)) as fi:
        assert fi.reorder_batch_threshold == 1 and not fi.supports_update_block_table
    assert fa.use_cascade_attention(0, [1, 1], 32, 8) is False
    assert fa.use_cascade_attention(512, [1] * 128, 32, 8) is True


def test_metadata_is_stale_after_the_next_build_and_a_clone_is_not(fa, mixed):
    first = fa.build(mixed.common())
    keep = first.clone()
    second = Batch([10, 20], [1, 1])
    fa.build(second.common())
    with pytest.raises(libattn.StaleMetadata):
        first["seq_lens"]
    np.testing.assert_array_equal(keep["seq_lens"], mixed.seq)
    assert keep.kind == "FLASH_ATTN" and keep.to_dict()["num_actual_tokens"] == 55
    keep.close()
    keep.close()  # idempotent
    with pytest.raises(ValueError):
        keep["seq_lens"]


def test_update_block_table_equals_a_fresh_build(fa, mixed):
    md = fa.build(mixed.common()).clone()
    other = Batch(mixed.context, mixed.query, first_block=500)
    updated = fa.update_block_table(md, other.table, np.array(other.slots, np.int64))
    fresh = {k: np.array(v) if isinstance(v, np.ndarray) else v
             for k, v in updated.items()}
    with libattn.Library(fa._lib.path).builder("FLASH_ATTN", spec(), config(90)) as b2:
        want = b2.build(other.common())
        for name in want:
            w = want[name]
            if isinstance(w, np.ndarray):
                np.testing.assert_array_equal(fresh[name], w, err_msg=name)
            else:
                assert fresh[name] == w, name
    narrow = other.table[:, :4]
    with pytest.raises(libattn.InvalidArgument) as e:
        fa.update_block_table(md, narrow, np.array(other.slots, np.int64))
    assert "block_table has 4 columns but the longest sequence (100 tokens) needs 7" in e.value.message


def test_update_block_table_unsupported(lib, mixed):
    with lib.builder("TRITON_ATTN", spec(), config(90)) as b:
        md = b.build(mixed.common())
        with pytest.raises(libattn.Unsupported) as e:
            b.update_block_table(md, mixed.table, mixed.arrays["slot_mapping"])
        assert e.value.message == "TRITON_ATTN does not support update_block_table"


def test_draft_decode_metadata_update(lib, mixed):
    """vLLM 0.33's supports_draft_decode_metadata_update per builder, and the update: in place
    for a supporting builder (the metadata's views see the advanced seq_lens), Unsupported with
    vLLM's reason otherwise, InvalidArgument for another backend's metadata."""
    draft = Batch([10, 20, 30], [1, 1, 1])
    with lib.builder("FLASH_ATTN", spec(), config(90)) as fa:
        assert fa.supports_draft_decode_metadata_update
        common = draft.common()
        md = fa.build(common)
        draft.arrays["seq_lens"][:] += 1  # the speculator advances the persistent input
        fa.update_draft_decode_metadata(md)
        np.testing.assert_array_equal(md["seq_lens"], [12, 22, 32])
        with lib.builder("TRITON_ATTN", spec(), config(90)) as tr:
            assert tr.supports_draft_decode_metadata_update
            with pytest.raises(libattn.InvalidArgument) as e:
                tr.update_draft_decode_metadata(md)
            assert "metadata was built by 'FLASH_ATTN', this builder is 'TRITON_ATTN'" in e.value.message
    with lib.builder("FLASH_ATTN", spec(), config(90, decode_context_parallel_size=2)) as dcp:
        assert not dcp.supports_draft_decode_metadata_update
        md = dcp.build(draft.common())
        with pytest.raises(libattn.Unsupported) as e:
            dcp.update_draft_decode_metadata(md)
        assert e.value.message == ("FLASH_ATTN does not support update_draft_decode_metadata: "
                                   "decode context parallel (vLLM 0.33 keeps the fused draft "
                                   "path off with DCP)")
    with lib.builder("TRITON_ATTN", spec(), config(90, rswa_window=128)) as rswa:
        assert not rswa.supports_draft_decode_metadata_update
    # FLASHINFER: only with trtllm-gen decode (10.x), without DCP
    with lib.builder("FLASHINFER", spec(), config(100)) as fi:
        assert fi.supports_draft_decode_metadata_update
    with lib.builder("FLASHINFER", spec(), config(90)) as fi:  # XQA decode
        assert not fi.supports_draft_decode_metadata_update
    with lib.builder("FLEX_ATTENTION", spec(), config(90)) as fx:
        assert not fx.supports_draft_decode_metadata_update


def test_capture_and_drafting_builds(lib):
    uniform = Batch([10, 20, 30, 40], [1, 1, 1, 1])
    with lib.builder("TRITON_ATTN", spec(), config(90)) as b:
        md = b.build_for_cudagraph_capture(uniform.common())
        assert md["num_actual_tokens"] == 4
        # vLLM's Triton capture writes 1 into the runtime's seq_lens (refilled before replay)
        assert uniform.arrays["seq_lens"].tolist() == [1, 1, 1, 1]
    draft = Batch([10, 20, 30, 40], [1, 1, 1, 1])
    with lib.builder("FLASH_ATTN", spec(), config(90, num_speculative_tokens=2)) as b:
        md = b.build_for_drafting(draft.common(), 0)
        np.testing.assert_array_equal(md["seq_lens"], draft.seq)
        with pytest.raises(libattn.InvalidArgument) as e:
            b.build_for_drafting(draft.common(), -1)
        assert "draft_index=-1" in e.value.message


def test_every_backend_builds_the_mixed_batch(lib, mixed):
    for name in lib.backends()[:6]:
        with lib.builder(name, spec(), config(90)) as b:
            md = b.build(mixed.common())
            assert md.kind == name and len(md) > 5
    with lib.builder("FLASHINFER", spec(), config(90)) as b:
        md = b.build(mixed.common())
        assert (md["num_decodes"], md["num_prefills"]) == (3, 2)
        pages = [-(-s // 16) for s in mixed.seq]
        np.testing.assert_array_equal(md["paged_kv_indptr_cpu"], np.cumsum([0] + pages))
        np.testing.assert_array_equal(md["paged_kv_last_page_len_cpu"],
                                      [s % 16 or 16 for s in mixed.seq])


def test_bad_batches_name_the_argument(fa, mixed):
    b = Batch(mixed.context, mixed.query)
    b.arrays["seq_lens"][2] = 0
    with pytest.raises(libattn.InvalidArgument) as e:
        fa.build(b.common())
    assert e.value.code == libattn.Status.INVALID_ARGUMENT
    assert e.value.message == "common->seq_lens[2]=0 is less than its query length 1"
    assert str(e.value) == "[invalid argument] common->seq_lens[2]=0 is less than its query length 1"
    narrow = Batch(mixed.context, mixed.query, width=6)
    with pytest.raises(libattn.InvalidArgument) as e:
        fa.build(narrow.common())
    assert e.value.message == ("common->block_table_tensor has 6 columns but request 1 needs "
                               "cdiv(seq_lens[1]=100, block_size=16)=7 blocks")
    with pytest.raises(libattn.InvalidArgument) as e:
        fa.build(mixed.common(seq_lens=np.array(mixed.seq, np.int64)))
    assert "common->seq_lens" in e.value.message and "int64" in e.value.message
    with pytest.raises(libattn.InvalidArgument) as e:
        fa.build(mixed.common(query_start_loc=np.array([0, 1, 3, 2, 35, 55], np.int32)))
    assert "query_start_loc" in e.value.message
    # the old result is still the old result
    md = fa.build(mixed.common())
    with pytest.raises(libattn.InvalidArgument):
        fa.build(narrow.common())
    np.testing.assert_array_equal(md["seq_lens"], mixed.seq)


def test_bad_specs_and_configs(lib):
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.builder("FLASH_ATTN", spec(), config(90, max_num_seqs=-3) if False else
                    libattn.BuilderConfig(-3, 8192, 1024, 32))
    assert "max_num_seqs=-3" in e.value.message
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.builder("FLASH_ATTN", spec(dtype=libattn.KvDtype.AUTO), config())
    assert e.value.message == "kv_cache_spec->dtype=0 is not an ATTN_KV_DTYPE_* value (1..6)"
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.builder("FLASH\0ATTN", spec(), config())
    assert "NUL byte at 5" in e.value.message
    with pytest.raises(ValueError):
        config(90, speculative_token_tree="[(0,)]\0").to_struct()
    with pytest.raises(ValueError):
        config(90, device="tpu").to_struct()


def test_closed_builder(lib, mixed):
    b = lib.builder("FLASH_ATTN", spec(), config())
    md = b.build(mixed.common())
    b.close()
    b.close()
    with pytest.raises(ValueError):
        b.build(mixed.common())
    with pytest.raises(libattn.StaleMetadata):
        md["seq_lens"]


def test_builders_on_threads(lib):
    errors = []

    def work(name):
        try:
            batch = Batch([7, 30, 2], [1, 4, 9])
            with lib.builder(name, spec(), config()) as b:
                for _ in range(200):
                    md = b.build(batch.common())
                    assert md["seq_lens"].tolist() == batch.seq
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in ("FLASH_ATTN", "TRITON_ATTN",
                                                                   "CPU_ATTN", "FLASH_ATTN")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_abi_1_4_config_fields(lib, mixed):
    """use_v2_model_runner: with parallel drafting, vLLM 0.33's max_decode_query_len adds k only
    on model runner V1; num_sms: TRITON_ATTN's 64 softmax segments on compute capability 12.0
    ((170 - 1) // (16 * 1) = 10 requests, 32 rows of 64 segments)."""
    for v2, want in ((0, 7), (1, 4)):
        cfg = config(100, num_speculative_tokens=3, parallel_drafting=1, use_v2_model_runner=v2)
        with lib.builder("FLASHINFER", spec(), cfg) as b:
            assert b.reorder_batch_threshold == want
    with lib.builder("TRITON_ATTN", libattn.KvCacheSpec(block_size=16, num_kv_heads=1,
                                                        head_size=128),
                     config(120, num_sms=170)) as b:
        md = b.build(Batch([9, 9, 9], [1, 1, 1]).common())
        assert md["num_par_softmax_segments"] == 64
        assert md["softmax_segm_output"].shape == (32, 32, 64, 128)


def test_abi_1_4_mm_prefix_and_rswa_config(lib):
    """rswa_window and is_mm_prefix_lm (vLLM 0.33's model_config): TRITON_ATTN returns the
    R-SWA fields and compute_mm_prefix_range_tensor's (num_reqs, max_ranges, 2) tensor
    (vLLM 0.33.0: {1: [(3, 9), (12, 15)]} over 3 requests -> [[[0,0],[0,0]], [[3,9],[12,15]],
    [[0,0],[0,0]]]); FLASH_ATTN takes a per-request causal tensor."""
    batch = Batch([9, 9, 9], [1, 1, 1])
    common = batch.common(mm_req_doc_ranges={1: [(3, 9), (12, 15)]},
                          rswa_prefix_lens=np.array([4, 5, 6], dtype=np.int32),
                          causal_per_request=np.array([1, 0, 1], dtype=np.int32))
    with lib.builder("TRITON_ATTN", spec(), config(90, rswa_window=64, is_mm_prefix_lm=1)) as b:
        md = b.build(common)
        assert md["rswa_window"] == 64
        assert md["rswa_prefix_lens"].tolist() == [4, 5, 6]
        assert md["mm_prefix_range_tensor"].tolist() == [[[0, 0], [0, 0]], [[3, 9], [12, 15]],
                                                         [[0, 0], [0, 0]]]
        assert md["causal"].tolist() == [1, 0, 1]
    with lib.builder("FLASH_ATTN", spec(), config(90)) as b:
        md = b.build(batch.common())
        assert md["rswa_window"] is None
        assert md["mm_prefix_query_range_tensor"] is None

def test_abi_1_4_flashinfer_config_fields(lib):
    """use_non_causal: vLLM 0.33's FLASHINFER captures uniform batches off XQA only when causal;
    enable_adaptive_verification: trtllm-gen varlen decode (no uniform split)."""
    cg = libattn.CudagraphSupport
    assert lib.backend_cudagraph_support("FLASHINFER", spec(), config(100)) == cg.UNIFORM_BATCH
    assert lib.backend_cudagraph_support("FLASHINFER", spec(), config(100, use_non_causal=1)) \
        == cg.UNIFORM_SINGLE_TOKEN_DECODE
    assert lib.backend_cudagraph_support("FLASHINFER", spec(), config(90, use_non_causal=1)) \
        == cg.UNIFORM_BATCH
    cfg = config(100, num_speculative_tokens=2, enable_adaptive_verification=1)
    assert cfg.to_struct().struct.enable_adaptive_verification == 1


def test_build_groups_equals_single_builds(lib, mixed):
    """attn_build_groups (ABI 1.7): a hybrid model's groups in one call, each result equal to
    that builder's own build; an error names builders[i] and returns nothing."""
    mamba = libattn.KvCacheSpec(block_size=16, num_kv_heads=1, head_size=1,
                                kind=libattn.KvCacheKind.MAMBA, mamba_chunk_size=16)
    common = mixed.common(is_prefilling=[False, False, False, True, True])
    with lib.builder("FLASH_ATTN", spec(), config(90)) as fa, \
            lib.builder("MAMBA2", mamba, config(90)) as mb, \
            lib.builder("FLASH_ATTN", spec(), config(90)) as fa1, \
            lib.builder("MAMBA2", mamba, config(90)) as mb1:
        singles = [fa1.build(common), mb1.build(common)]
        grouped = libattn.build_groups([fa, mb], common)
        assert [m.kind for m in grouped] == ["FLASH_ATTN", "MAMBA2"]
        for g, s in zip(grouped, singles):
            assert g.fields() == s.fields()
            for name in g.fields():
                a, b = g[name], s[name]
                if isinstance(a, np.ndarray):
                    np.testing.assert_array_equal(a, b)
                else:
                    assert a == b, name
        # results of the builders, stale after their next build
        fa.build(common)
        with pytest.raises(libattn.StaleMetadata):
            grouped[0]["seq_lens"]
        with pytest.raises(libattn.InvalidArgument, match=r"builders\[1\]: common_prefix_len=-1"):
            libattn.build_groups([fa, mb], common, common_prefix_lens=[0, -1])
        with pytest.raises(libattn.InvalidArgument, match=r"builders\[1\] is builders\[0\]"):
            libattn.build_groups([fa, fa], common)
        with pytest.raises(ValueError):
            libattn.build_groups([fa, mb], common, common_prefix_lens=[0])
