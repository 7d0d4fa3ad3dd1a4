/* DEEPSEEK_V41_SPARSE_INDEXER at vLLM 0.33 (DeepseekV41SparseIndexerMetadataBuilder over
 * DeepseekV32IndexerMetadataBuilder): the ABI 1.7 config inputs it needs (candidate_block_size,
 * candidate_topk_blocks, indexer_kv_mxfp4, sparse_indexer_topk_backend), its refusals, the
 * derived sparse_block_kv / num_sparse_blocks / min_split_seq_len, the sparse row views, the
 * prefill chunker's clamp, and seeded random batches against a naive restatement of the
 * chunker. Hand-checked values are worked out in the comments. */
#include "test_support.h"

#define NAME "DEEPSEEK_V41_SPARSE_INDEXER"

/* SM100, 16 sequences, 16384 tokens, max_model_len 32768, 4 SMs; candidates 8 blocks of 64,
 * MXFP4 indexer cache. */
static attn_builder_config_t v41_config(int32_t k) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 16384;
  c.max_model_len = 32768;
  c.device_capability = 100;
  c.num_speculative_tokens = k;
  c.num_sms = 4;
  c.candidate_block_size = 64;
  c.candidate_topk_blocks = 8;
  c.indexer_kv_mxfp4 = 1;
  return c;
}

/* The indexer cache's spec: 132 bytes a token, block 128 (the V4.1 indexer's SM100 kernel
 * block), index_topk 512. */
static attn_kv_cache_spec_t v41_spec(void) {
  attn_kv_cache_spec_t s = ts_mla_spec(128);
  s.head_size = 132;
  s.dtype = ATTN_KV_DTYPE_FP8_E4M3;
  s.index_topk = 512;
  return s;
}

/* A zeroed int32 view of `rows` x `cols` (cols 0: 1-D); returns its data. */
static const int32_t* expect_zero_rows(const attn_metadata_t* m, const char* name, int64_t rows,
                                       int64_t cols) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t i;
  if (t == NULL) fail_msg("%s is None", name);
  assert_int_equal(t->ndim, cols ? 2 : 1);
  assert_int_equal(t->shape[0], rows);
  if (cols) assert_int_equal(t->shape[1], cols);
  for (i = 0; i < rows * (cols ? cols : 1); ++i) assert_int_equal(((const int32_t*)t->data)[i], 0);
  return (const int32_t*)t->data;
}

static void test_levels(void** state) {
  attn_kv_cache_spec_t spec = v41_spec();
  attn_builder_config_t c = v41_config(1);
  attn_builder_t* b;
  int32_t level = -1, th = -1, supported = 0;
  (void)state;
  ASSERT_OK(attn_backend_cudagraph_support(NAME, &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS); /* SM100's varlen decode */
  b = ts_builder(NAME, &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
  assert_int_equal(th, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
  assert_int_equal(supported, 1);
  attn_builder_destroy(b);
}

/* Candidates 8 x 64, topk 512: sparse_block_kv 16 (64 % 16 == 0), num_sparse_blocks 8 * 64 / 16
 * = 32 (512 columns, 1024 B: DeepSelect's alignment). Queries [1, 1, 3] onto [10, 20, 5]: two
 * decodes (varlen: one row per token, rows 0 and 1) and one prefill (tokens 2..4). The decode
 * rows: row_ks zeros (2), sparse_indices (2, 32), end (2), col_indices (2, 512), all zero; the
 * prefill rows are the same buffers from row 2: (3, 32), (3), (3, 512). The row fields vLLM
 * aliases are the base's: decode_seq_lens [10, 20] (row_ke), decode_indices [0, 1]. */
static void test_hand_checked(void** state) {
  static const int32_t q[3] = {1, 1, 3}, s[3] = {10, 20, 5};
  attn_kv_cache_spec_t spec = v41_spec();
  attn_builder_config_t c = v41_config(0);
  attn_builder_t* b = ts_builder(NAME, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 128, 8, -1);
  attn_metadata_t* m = NULL;
  const int32_t *dec, *pre;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "sparse_block_kv"), 16);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  expect_zero_rows(m, "sparse_decode_row_ks", 2, 0);
  dec = expect_zero_rows(m, "sparse_decode_sparse_indices", 2, 32);
  expect_zero_rows(m, "sparse_decode_end", 2, 0);
  expect_zero_rows(m, "sparse_decode_col_indices", 2, 512);
  pre = expect_zero_rows(m, "sparse_prefill_sparse_indices", 3, 32);
  assert_ptr_equal(pre, dec + 2 * 32);
  expect_zero_rows(m, "sparse_prefill_end", 3, 0);
  expect_zero_rows(m, "sparse_prefill_col_indices", 3, 512);
  ts_expect_i32(m, "decode_indices", (int32_t[]){0, 1}, 2);
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 1);
  /* decode only: the prefill rows are None; an empty batch: every sparse row None */
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 2, 128, 8, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "sparse_prefill_sparse_indices");
  ts_expect_none(m, "sparse_prefill_end");
  expect_zero_rows(m, "sparse_decode_end", 2, 0);
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 0, 128, 8, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "sparse_block_kv"), 16);
  ts_expect_none(m, "sparse_decode_row_ks");
  ts_expect_none(m, "sparse_prefill_col_indices");
  ts_batch_free(batch);
  attn_builder_destroy(b);
  /* candidate blocks of 8 tokens: sparse_block_kv 8 */
  c.candidate_block_size = 8;
  c.candidate_topk_blocks = 64;
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q, s, 3, 128, 8, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "sparse_block_kv"), 8);
  expect_zero_rows(m, "sparse_decode_sparse_indices", 2, 64);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* The prefill chunker's clamp. Candidates 32 x 256, topk 512: sparse_block_kv 16, 512 sparse
 * blocks, 8192 columns, min_split_seq_len (8192 * 2 + 3) / 4 = 4096. max_model_len 1024: the
 * workspace is 1024 * 8 * 5 = 40960 K rows, so ten prefills (clamped 4096 each) fill a group.
 * Twelve prefills of 10 tokens onto 10: groups [0, 10) and [10, 12), chunk totals from the
 * exact lengths (100 and 20), cu_offset 0 and 10 + 1. DEEPSEEK_V32_INDEXER (no clamp) plans one
 * chunk of 120. */
static void test_prefill_clamp(void** state) {
  int32_t q[12], s[12], i;
  attn_kv_cache_spec_t spec = v41_spec();
  attn_builder_config_t c = v41_config(0);
  attn_builder_t* b;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  (void)state;
  for (i = 0; i < 12; ++i) q[i] = s[i] = 10;
  c.max_model_len = 1024;
  c.candidate_block_size = 256;
  c.candidate_topk_blocks = 32;
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q, s, 12, 128, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_prefills"), 12);
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 2);
  ts_expect_i32(m, "prefill_chunk_req_start", (int32_t[]){0, 10}, 2);
  ts_expect_i32(m, "prefill_chunk_req_end", (int32_t[]){10, 12}, 2);
  ts_expect_i32(m, "prefill_chunk_total_seq_lens", (int32_t[]){100, 20}, 2);
  ts_expect_i32(m, "prefill_chunk_cu_offset", (int32_t[]){0, 11}, 2);
  ts_expect_i32(m, "prefill_chunk_token_start", (int32_t[]){0, 100}, 2);
  ts_expect_i32(m, "prefill_chunk_token_end", (int32_t[]){100, 120}, 2);
  expect_zero_rows(m, "sparse_prefill_sparse_indices", 120, 512);
  attn_builder_destroy(b);
  spec.block_size = 64;
  b = ts_builder("DEEPSEEK_V32_INDEXER", &spec, &c);
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 12, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 1);
  ts_expect_i32(m, "prefill_chunk_total_seq_lens", (int32_t[]){120}, 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = v41_spec();
  attn_builder_config_t c;
  attn_builder_t* b = NULL;
  (void)state;
  c = v41_config(0);
  c.candidate_topk_blocks = 0;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "two-level (candidate block) indexer model");
  c = v41_config(0);
  c.indexer_kv_mxfp4 = 0;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "requires the MXFP4 indexer cache");
  c = v41_config(0);
  c.device_capability = 90;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "indexer_kv_dtype='mxfp4' requires Blackwell");
  c.indexer_kv_mxfp4 = 0;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "requires the MXFP4 indexer cache");
  c = v41_config(0);
  c.device_capability = 120;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "sm_120");
  c = v41_config(0);
  c.decode_context_parallel_size = 2;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "decode/prefill context parallel");
  c = v41_config(0);
  c.prefill_context_parallel_size = 2;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "prefill_context_parallel_size=2");
  c = v41_config(0);
  c.platform_rocm = 1;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "platform_rocm");
  c = v41_config(0);
  c.sparse_indexer_topk_backend = ATTN_SPARSE_INDEXER_TOPK_COOPERATIVE;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "sparse_indexer_topk_backend=2");
  c.sparse_indexer_topk_backend = ATTN_SPARSE_INDEXER_TOPK_DEEP_SELECT;
  ASSERT_OK(attn_builder_create(NAME, &spec, &c, &b));
  attn_builder_destroy(b);
  c = v41_config(0);
  c.candidate_block_size = 12;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "candidate_block_size=12 is not a multiple");
  c = v41_config(0);
  spec.block_size = 64;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kernel block size 128");
  spec = v41_spec();
  c.candidate_block_size = 16; /* 8 x 16: 128 columns, 256 B */
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "1024B-aligned");
  c = v41_config(0);
  spec.index_topk = 4104;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT, "topk=4104");
  spec.index_topk = 2044; /* 8176 B: not 32B-aligned */
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT, "topk=2044");
  /* DEEPSEEK_V32_INDEXER: the MXFP4 cache below 10.x */
  spec = v41_spec();
  spec.block_size = 64;
  c = v41_config(0);
  c.device_capability = 90;
  ASSERT_ERROR(attn_builder_create("DEEPSEEK_V32_INDEXER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "indexer_kv_dtype='mxfp4'");
}

/* Random prefill batches against the chunker restated: groups over the prefills with each K
 * length clamped below at min_split_seq_len (n + s <= workspace, (m + q) * (n + s) <= the
 * logits budget), query sub-chunks of max(1, budget / n), totals from the exact lengths; the
 * decode rows are the decode tokens. */
static void test_random_vs_naive(void** state) {
  static const int32_t cands[4][2] = {{64, 8}, {8, 64}, {128, 16}, {256, 32}};
  uint64_t rng = 0x41c0de;
  int iter;
  (void)state;
  for (iter = 0; iter < 150; ++iter) {
    const int32_t* cd = cands[ts_rand_range(&rng, 0, 3)];
    const int32_t k = (int32_t)ts_rand_range(&rng, 0, 3);
    attn_kv_cache_spec_t spec = v41_spec();
    attn_builder_config_t c = v41_config(k);
    int32_t q[16], s[16], starts[64], ends[64], rs[64], re[64], tot[64];
    int64_t n = ts_rand_range(&rng, 1, 16), nd = ts_rand_range(&rng, 0, n), i, ndt = 0;
    int64_t sbk, nsb, min_split, W, L = 512LL * 1024 * 1024 / 4, chunks = 0, end;
    attn_builder_t* b;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    c.max_model_len = (int32_t)(512 << ts_rand_range(&rng, 0, 3));
    c.candidate_block_size = cd[0];
    c.candidate_topk_blocks = cd[1];
    sbk = cd[0] % 16 == 0 ? 16 : 8;
    nsb = cd[1] * (cd[0] / sbk);
    min_split = (nsb * sbk * 2 + 3) / 4;
    W = (int64_t)c.max_model_len * 8 * 5;
    for (i = 0; i < n; ++i) {
      q[i] = i < nd ? 1 + (int32_t)ts_rand_range(&rng, 0, k)
                    : 2 + k + (int32_t)ts_rand_range(&rng, 0, 60);
      s[i] = q[i] + (int32_t)ts_rand_range(&rng, 0, c.max_model_len - 64 - q[i]);
      if (i < nd) ndt += q[i];
    }
    b = ts_builder(NAME, &spec, &c);
    batch = ts_batch_make(q, s, n, 128, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    if (nd > 0) expect_zero_rows(m, "sparse_decode_end", ndt, 0);
    if (nd == n) {
      ts_expect_none(m, "sparse_prefill_end");
      attn_builder_destroy(b);
      ts_batch_free(batch);
      continue;
    }
    end = nd;
    while (end < n) {
      const int64_t start = end;
      int64_t mm = 0, nn = 0, total = 0, off, max_q;
      while (end < n) {
        const int64_t sl = s[end] > min_split ? s[end] : min_split;
        if (nn + sl > W || (mm + q[end]) * (nn + sl) > L) break;
        mm += q[end];
        nn += sl;
        ++end;
      }
      if (end == start) {
        mm = q[end];
        nn = s[end] > min_split ? s[end] : min_split;
        ++end;
      }
      for (i = start; i < end; ++i) total += s[i];
      max_q = L / nn > 1 ? L / nn : 1;
      for (off = 0; off < mm; off += max_q) {
        starts[chunks] = batch->qsl[start] + (int32_t)off;
        ends[chunks] = batch->qsl[start] + (int32_t)(off + max_q < mm ? off + max_q : mm);
        rs[chunks] = (int32_t)start;
        re[chunks] = (int32_t)end;
        tot[chunks] = (int32_t)total;
        ++chunks;
      }
    }
    assert_int_equal(ts_int(m, "prefill_num_chunks"), chunks);
    ts_expect_i32(m, "prefill_chunk_token_start", starts, chunks);
    ts_expect_i32(m, "prefill_chunk_token_end", ends, chunks);
    ts_expect_i32(m, "prefill_chunk_req_start", rs, chunks);
    ts_expect_i32(m, "prefill_chunk_req_end", re, chunks);
    ts_expect_i32(m, "prefill_chunk_total_seq_lens", tot, chunks);
    expect_zero_rows(m, "sparse_prefill_end", batch->qsl[n] - batch->qsl[nd], 0);
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),        cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_prefill_clamp), cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_random_vs_naive),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
