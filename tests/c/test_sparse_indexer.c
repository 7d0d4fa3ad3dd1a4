/* DEEPSEEK_V32_INDEXER at vLLM 0.33 (DeepseekV32IndexerMetadataBuilder): its level from the
 * platform (native decode widths, flattening, SM100 varlen), threshold None, the ABI 1.7 config
 * field block_table_width, the prefill request groups and query sub-chunks with their arrays
 * (cu_seqlen_ks/ke, cu_seq_lens, DCP-local ones), the decode paths (native, native MTP,
 * flattened, varlen, DCP-local lengths), update_draft_decode_metadata, the refusals, the chunk
 * plan from seq_lens_cpu_upper_bound (optimistic async spec-decode rows), and seeded random
 * batches against a naive restatement, also on the compressed cache (tokens_per_state 4:
 * DEEPSEEK_V4_INDEXER, CPU_V4_INDEXER; their hand-checked cases: test_sparse_indexer_v4.c).
 * Hand-checked values are worked out in the comments. */
#include "test_support.h"

#define NAME "DEEPSEEK_V32_INDEXER"

/* 16 sequences, 16384 tokens, max_model_len 32768, 4 SMs, block table width 8. */
static attn_builder_config_t ix_config(int32_t capability, int32_t k) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 16384;
  c.max_model_len = 32768;
  c.device_capability = capability;
  c.num_speculative_tokens = k;
  c.num_sms = 4;
  c.block_table_width = 8;
  return c;
}

/* DeepseekV32IndexerCache's spec: 132 bytes a token (128 fp8 + 4 scale bytes), block 64. */
static attn_kv_cache_spec_t ix_spec(void) {
  attn_kv_cache_spec_t s = ts_mla_spec(64);
  s.head_size = 132;
  s.dtype = ATTN_KV_DTYPE_FP8_E4M3;
  return s;
}

static void expect_shape(const attn_metadata_t* m, const char* name, int64_t rows, int64_t cols) {
  const attn_tensor_t* t = ts_tensor(m, name);
  if (t == NULL) fail_msg("%s is None", name);
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], rows);
  assert_int_equal(t->shape[1], cols);
}

/* A 1-D or 2-D int32 field against `expected` in row-major order (n values). */
static void expect_flat(const attn_metadata_t* m, const char* name, const int32_t* expected,
                        int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t rows, cols, r, k;
  if (t == NULL) fail_msg("field %s is None", name);
  if (t->ndim == 1) {
    ts_expect_i32(m, name, expected, n);
    return;
  }
  assert_int_equal(t->ndim, 2);
  rows = t->shape[0];
  cols = t->shape[1];
  assert_int_equal(rows * cols, n);
  for (r = 0; r < rows; ++r)
    for (k = 0; k < cols; ++k) {
      const int32_t got = ((const int32_t*)((const char*)t->data + t->byte_offset))
          [r * t->strides[0] + k * t->strides[1]];
      if (got != expected[r * cols + k])
        fail_msg("%s[%lld][%lld] = %d, expected %d", name, (long long)r, (long long)k, got,
                 expected[r * cols + k]);
    }
}

static int32_t level_of(int32_t capability, int32_t k, int adaptive) {
  attn_kv_cache_spec_t spec = ix_spec();
  attn_builder_config_t c = ix_config(capability, k);
  int32_t level = -1;
  c.enable_adaptive_verification = adaptive;
  ASSERT_OK(attn_backend_cudagraph_support(NAME, &spec, &c, &level));
  return level;
}

/* get_cudagraph_support: ALWAYS with SM100's varlen kernel or the flattening (next_n the
 * native kernel lacks: SM90 takes 1, 2, 4, others 1, 2; SM90 with adaptive verification), else
 * UNIFORM_BATCH. reorder_batch_threshold None; no update_block_table; draft decode updates
 * without DCP only. */
static void test_levels(void** state) {
  attn_kv_cache_spec_t spec = ix_spec();
  attn_builder_config_t c = ix_config(90, 0);
  attn_builder_t* b;
  int32_t t = -1, supported = 1;
  (void)state;
  assert_int_equal(level_of(90, 0, 0), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_of(90, 1, 0), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_of(90, 2, 0), ATTN_CG_ALWAYS);  /* next_n 3 */
  assert_int_equal(level_of(90, 3, 0), ATTN_CG_UNIFORM_BATCH);  /* next_n 4 */
  assert_int_equal(level_of(90, 3, 1), ATTN_CG_ALWAYS);  /* adaptive verification */
  assert_int_equal(level_of(80, 1, 0), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_of(80, 3, 0), ATTN_CG_ALWAYS);
  assert_int_equal(level_of(120, 2, 0), ATTN_CG_ALWAYS);
  assert_int_equal(level_of(100, 0, 0), ATTN_CG_ALWAYS);
  b = ts_builder(NAME, &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &t));
  assert_int_equal(t, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
  assert_int_equal(supported, 0);
  ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
  assert_int_equal(supported, 1);
  attn_builder_destroy(b);
  c.decode_context_parallel_size = 2;
  b = ts_builder(NAME, &spec, &c);
  ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
  assert_int_equal(supported, 0);
  attn_builder_destroy(b);
}

/* SM90, k = 0: queries [1, 1, 5, 3] onto [10, 20, 30, 40]: decodes are the two 1-token rows.
 * Decode (native next_n 1): seq_lens the input's rows as (2, 1), block_table its rows,
 * decode_lens [1, 1], schedule (4 SMs + 1, 2). Prefill: one group (70 rows, 8 x 70 logits),
 * one chunk of tokens [2, 10), requests [2, 4); cu_seq_lens [0, 30, 70]; request 2's context
 * starts at 30 - 5 = 25: ks 0, ke 26..30; request 3's at 37: ks 30, ke 30 + 38..40. */
static void test_hand_checked(void** state) {
  static const int32_t q[4] = {1, 1, 5, 3}, s[4] = {10, 20, 30, 40};
  attn_kv_cache_spec_t spec = ix_spec();
  attn_builder_config_t c = ix_config(90, 0);
  attn_builder_t* b = ts_builder(NAME, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 64, 8, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 8);
  assert_int_equal(ts_int(m, "max_seq_len"), 40);
  ts_expect_none(m, "positions");
  expect_shape(m, "decode_seq_lens", 2, 1);
  expect_flat(m, "decode_seq_lens", (int32_t[]){10, 20}, 2);
  expect_shape(m, "decode_block_table", 2, 8);
  ts_expect_i32(m, "decode_decode_lens", (int32_t[]){1, 1}, 2);
  ts_expect_i32(m, "decode_per_req_decode_lens", (int32_t[]){1, 1}, 2);
  assert_int_equal(ts_int(m, "decode_requires_padding"), 0);
  assert_int_equal(ts_int(m, "decode_decode_is_uniform"), 1);
  assert_int_equal(ts_int(m, "decode_write_max_decode_len"), 1);
  expect_shape(m, "decode_schedule_metadata", 5, 2);
  ts_expect_none(m, "decode_global_seq_lens");
  ts_expect_none(m, "decode_indices");
  assert_int_equal(ts_int(m, "prefill_max_prefill_seq_len"), 40);
  ts_expect_none(m, "prefill_row_shard_sizes");
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 1);
  ts_expect_i32(m, "prefill_chunk_token_start", (int32_t[]){2}, 1);
  ts_expect_i32(m, "prefill_chunk_token_end", (int32_t[]){10}, 1);
  ts_expect_i32(m, "prefill_chunk_req_start", (int32_t[]){2}, 1);
  ts_expect_i32(m, "prefill_chunk_req_end", (int32_t[]){4}, 1);
  ts_expect_i32(m, "prefill_chunk_cu_offset", (int32_t[]){0}, 1);
  ts_expect_i32(m, "prefill_chunk_total_seq_lens", (int32_t[]){70}, 1);
  ts_expect_i32(m, "prefill_chunk_max_seqlen_k", (int32_t[]){40}, 1);
  ts_expect_i32(m, "prefill_chunk_skip_kv_gather", (int32_t[]){0}, 1);
  ts_expect_i32(m, "prefill_chunk_local_total_seq_lens", (int32_t[]){70}, 1);
  ts_expect_i32(m, "prefill_chunk_max_local_total_seq_lens", (int32_t[]){70}, 1);
  ts_expect_i32(m, "prefill_cu_seq_lens", (int32_t[]){0, 30, 70}, 3);
  ts_expect_i32(m, "prefill_local_cu_seq_lens", (int32_t[]){0, 30, 70}, 3);
  ts_expect_i32(m, "prefill_cu_seqlen_ks", (int32_t[]){0, 0, 0, 0, 0, 30, 30, 30}, 8);
  ts_expect_i32(m, "prefill_cu_seqlen_ke", (int32_t[]){26, 27, 28, 29, 30, 68, 69, 70}, 8);
  /* a decode-only batch: no prefill part */
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 2, 64, 8, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "prefill_num_chunks");
  ts_expect_none(m, "prefill_cu_seqlen_ks");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* The decode paths. SM90 k = 2 (next_n 3: flattened), queries [3, 2, 3] onto [10, 5, 8], all
 * decodes (<= 3, no uniform requirement): per-token lengths 8, 9, 10 | 4, 5 | 6, 7, 8, rows
 * [r0 x3, r1 x2, r2 x3] of width 8, decode_lens ones, per_req [3, 2, 3], not uniform. SM90
 * k = 1 (native MTP): [2, 2] onto [10, 7]: (2, 2) lengths [[9, 10], [6, 7]]. SM100: varlen,
 * the flattened lengths with indices [0, 0, 0, 1, 1, 2, 2, 2]. SM90 k = 0 DCP 2 rank 1: the
 * lengths 10 and 7 become 5 and 3 (rank 1's share), global [10, 7]. */
static void test_decode_paths(void** state) {
  static const int32_t q[3] = {3, 2, 3}, s[3] = {10, 5, 8};
  static const int32_t q2[2] = {2, 2}, s2[2] = {10, 7}, q1[2] = {1, 1};
  static const int32_t flat[8] = {8, 9, 10, 4, 5, 6, 7, 8};
  attn_kv_cache_spec_t spec = ix_spec();
  attn_builder_config_t c = ix_config(90, 2);
  attn_builder_t* b = ts_builder(NAME, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 64, 8, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int32_t rows[8];
  int i;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  expect_shape(m, "decode_seq_lens", 8, 1);
  expect_flat(m, "decode_seq_lens", flat, 8);
  expect_shape(m, "decode_block_table", 8, 8);
  t = ts_tensor(m, "decode_block_table");
  for (i = 0; i < 8; ++i) rows[i] = ((const int32_t*)t->data)[i * 8];
  ts_expect_i32(m, "decode_decode_lens", (int32_t[]){1, 1, 1, 1, 1, 1, 1, 1}, 8);
  for (i = 0; i < 8; ++i)
    assert_int_equal(rows[i], batch->bt[(i < 3 ? 0 : i < 5 ? 1 : 2) * batch->width]);
  ts_expect_i32(m, "decode_per_req_decode_lens", q, 3);
  assert_int_equal(ts_int(m, "decode_decode_is_uniform"), 0);
  assert_int_equal(ts_int(m, "decode_write_max_decode_len"), 3);
  assert_int_equal(ts_int(m, "decode_requires_padding"), 0);
  expect_shape(m, "decode_schedule_metadata", 5, 2);
  attn_builder_destroy(b);
  /* SM100: varlen */
  c = ix_config(100, 2);
  b = ts_builder(NAME, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_flat(m, "decode_seq_lens", flat, 8);
  ts_expect_i32(m, "decode_indices", (int32_t[]){0, 0, 0, 1, 1, 2, 2, 2}, 8);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  /* SM90 k = 1: native MTP, next_n 2 */
  c = ix_config(90, 1);
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q2, s2, 2, 64, 8, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_shape(m, "decode_seq_lens", 2, 2);
  expect_flat(m, "decode_seq_lens", (int32_t[]){9, 10, 6, 7}, 4);
  ts_expect_i32(m, "decode_decode_lens", (int32_t[]){2, 2}, 2);
  expect_shape(m, "decode_block_table", 2, 8);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  /* SM90 k = 0, DCP 2, rank 1, interleave 1 */
  c = ix_config(90, 0);
  c.decode_context_parallel_size = 2;
  c.dcp_rank = 1;
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q1, s2, 2, 64, 8, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_flat(m, "decode_seq_lens", (int32_t[]){5, 3}, 2);
  ts_expect_i32(m, "decode_global_seq_lens", (int32_t[]){10, 7}, 2);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Prefill groups and sub-chunks. One prefill of 8192 queries onto 32768: 8192 x 32768 > 2^27
 * logits, a group of its own split every 2^27 / 32768 = 4096 queries: chunks [0, 4096) and
 * [4096, 8192), the second skip_kv_gather. Two prefills of 4096 onto 20000 each: 8192 x 40000
 * is over the budget, so two groups, cu_seq_lens [0, 20000 | 0, 20000] at offsets 0 and 2. DCP
 * 2 rank 0 interleave 1, one prefill of 4 onto 9: cu [0, 9], local [0, 5], ks 0, ke the rank's
 * share of 6..9: [3, 4, 4, 5], local total 5, the larger rank's 5. */
static void test_prefill_chunks(void** state) {
  static const int32_t q[1] = {8192}, s[1] = {32768};
  static const int32_t q2[2] = {4096, 4096}, s2[2] = {20000, 20000};
  static const int32_t q3[1] = {4}, s3[1] = {9};
  attn_kv_cache_spec_t spec = ix_spec();
  attn_builder_config_t c = ix_config(90, 0);
  attn_builder_t* b;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  (void)state;
  c.block_table_width = 0; /* the worker's: 32768 / 64 = 512 */
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q, s, 1, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 2);
  ts_expect_i32(m, "prefill_chunk_token_start", (int32_t[]){0, 4096}, 2);
  ts_expect_i32(m, "prefill_chunk_token_end", (int32_t[]){4096, 8192}, 2);
  ts_expect_i32(m, "prefill_chunk_skip_kv_gather", (int32_t[]){0, 1}, 2);
  ts_expect_i32(m, "prefill_chunk_total_seq_lens", (int32_t[]){32768, 32768}, 2);
  ts_expect_i32(m, "prefill_cu_seq_lens", (int32_t[]){0, 32768}, 2);
  ts_batch_free(batch);
  batch = ts_batch_make(q2, s2, 2, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 2);
  ts_expect_i32(m, "prefill_chunk_req_start", (int32_t[]){0, 1}, 2);
  ts_expect_i32(m, "prefill_chunk_req_end", (int32_t[]){1, 2}, 2);
  ts_expect_i32(m, "prefill_chunk_cu_offset", (int32_t[]){0, 2}, 2);
  ts_expect_i32(m, "prefill_cu_seq_lens", (int32_t[]){0, 20000, 0, 20000}, 4);
  ts_expect_i32(m, "prefill_chunk_token_start", (int32_t[]){0, 4096}, 2);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  c = ix_config(90, 0);
  c.decode_context_parallel_size = 2;
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q3, s3, 1, 64, 8, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i32(m, "prefill_cu_seq_lens", (int32_t[]){0, 9}, 2);
  ts_expect_i32(m, "prefill_local_cu_seq_lens", (int32_t[]){0, 5}, 2);
  ts_expect_i32(m, "prefill_cu_seqlen_ks", (int32_t[]){0, 0, 0, 0}, 4);
  ts_expect_i32(m, "prefill_cu_seqlen_ke", (int32_t[]){3, 4, 4, 5}, 4);
  ts_expect_i32(m, "prefill_chunk_local_total_seq_lens", (int32_t[]){5}, 1);
  ts_expect_i32(m, "prefill_chunk_max_local_total_seq_lens", (int32_t[]){5}, 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* update_draft_decode_metadata (SM90 k = 2, flattened): a decode batch of one token per
 * request; the speculator advances seq_lens in place: decode_seq_lens follow, decode_lens and
 * per_req_decode_lens stay 1. A batch with prefills is refused (vLLM asserts). */
static void test_draft_update(void** state) {
  static const int32_t q[3] = {1, 1, 1}, s[3] = {10, 5, 8}, qp[2] = {1, 7}, sp[2] = {4, 9};
  attn_kv_cache_spec_t spec = ix_spec();
  attn_builder_config_t c = ix_config(90, 2);
  attn_builder_t* b = ts_builder(NAME, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 64, 8, -1);
  attn_metadata_t* m = NULL;
  int i;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_flat(m, "decode_seq_lens", s, 3);
  for (i = 0; i < 3; ++i) batch->seq[i] += 1;
  ASSERT_OK(attn_update_draft_decode_metadata(b, m, NULL));
  expect_flat(m, "decode_seq_lens", (int32_t[]){11, 6, 9}, 3);
  ts_expect_i32(m, "decode_decode_lens", (int32_t[]){1, 1, 1}, 3);
  ts_expect_i32(m, "decode_per_req_decode_lens", (int32_t[]){1, 1, 1}, 3);
  ts_batch_free(batch);
  batch = ts_batch_make(qp, sp, 2, 64, 8, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ASSERT_ERROR(attn_update_draft_decode_metadata(b, m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "num_prefills=1");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Refusals: a block size not a multiple of 64, a negative block_table_width, a non-zero
 * reserved_1_7, encoder attention, a block table wider than block_table_width on a flattened
 * batch. */
static void test_refusals(void** state) {
  static const int32_t q[2] = {3, 3}, s[2] = {10, 700};
  attn_kv_cache_spec_t spec = ix_spec();
  attn_builder_config_t c = ix_config(90, 2);
  attn_builder_t* b = NULL;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  (void)state;
  spec.block_size = 32;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->block_size=32");
  spec = ix_spec();
  c.block_table_width = -1;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->block_table_width=-1");
  c = ix_config(90, 2);
  c.reserved_1_7 = 1;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->reserved_1_7=1");
  c = ix_config(90, 2);
  c.attn_type = ATTN_TYPE_ENCODER_ONLY;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "attn_type");
  c = ix_config(90, 2);
  c.block_table_width = 4; /* 700 tokens need 11 blocks */
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q, s, 1, 64, 0, -1); /* 10 tokens: one block */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 2, 64, 0, -1);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "block_table_width=4");
  /* the refused batch left the previous metadata as it was */
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  expect_flat(m, "decode_seq_lens", (int32_t[]){8, 9, 10}, 3);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static int32_t local_len(int64_t len, int32_t dcp, int32_t rank, int32_t inter) {
  const int64_t base = len / inter / dcp * inter;
  int64_t rem = len - base * dcp - (int64_t)rank * inter;
  if (rem < 0) rem = 0;
  if (rem > inter) rem = inter;
  return (int32_t)(dcp > 1 ? base + rem : len);
}

/* Seeded random batches against a naive restatement: the decode lengths (one row per token,
 * native next_n 1, native MTP; DCP-local, then // ratio) and the prefill ks/ke and cu_seq_lens in
 * K rows seq_len // ratio (one group: the batches stay far below the budgets; the DCP interleave
 * in states). Ratio 1: DEEPSEEK_V32_INDEXER, block 64, interleave 1/8. Ratio 4 (the compressed
 * cache): DEEPSEEK_V4_INDEXER or, one batch in five, CPU_V4_INDEXER, block 256, interleave
 * 4/8/16, and the compressed slot mapping too. SM90/SM100, k 0..3, DCP 1/2/4. */
static void check_random(uint64_t rng, int32_t ratio) {
  int iter;
  for (iter = 0; iter < 300; ++iter) {
    int32_t q[16], s[16];
    static int32_t ks[4096], ke[4096], dl[4096], cu[17];
    static int64_t sm[4096];
    const int cpu = ratio > 1 && ts_rand_range(&rng, 0, 4) == 0;
    const int32_t cap = ts_rand_range(&rng, 0, 3) == 0 ? 100 : 90;
    const int32_t k = (int32_t)ts_rand_range(&rng, 0, 3);
    const int32_t dcp = (int32_t[]){1, 1, 2, 4}[ts_rand_range(&rng, 0, 3)];
    const int32_t rank = (int32_t)ts_rand_range(&rng, 0, dcp - 1);
    const int32_t inter = ratio > 1 ? (int32_t[]){4, 8, 16}[ts_rand_range(&rng, 0, 2)]
                                    : ts_rand_range(&rng, 0, 1) ? 8 : 1;
    const int32_t block = ratio > 1 ? 256 : 64, states = block / ratio;
    const int64_t n = ts_rand_range(&rng, 1, 16);
    const int64_t ndec = ts_rand_range(&rng, 0, n);
    const int uniform = (int)ts_rand_range(&rng, 0, 1);
    attn_kv_cache_spec_t spec = ix_spec();
    attn_builder_config_t c = ix_config(cap, k);
    attn_builder_t* b;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    int64_t i, t, nd, np, ndt = 0, tok = 0, maxq = 0;
    const attn_tensor_t* sl;
    spec.block_size = block;
    spec.tokens_per_state = ratio;
    c.decode_context_parallel_size = dcp;
    c.dcp_rank = rank;
    c.cp_kv_cache_interleave_size = inter;
    c.block_table_width = 0;
    for (i = 0; i < n; ++i) {
      q[i] = i < ndec ? (uniform ? 1 + k : 1 + (int32_t)ts_rand_range(&rng, 0, k))
                      : 2 + k + (int32_t)ts_rand_range(&rng, 0, 200);
      s[i] = q[i] + (int32_t)ts_rand_range(&rng, 0, 2000);
    }
    b = ts_builder(ratio == 1 ? NAME : cpu ? "CPU_V4_INDEXER" : "DEEPSEEK_V4_INDEXER", &spec, &c);
    batch = ts_batch_make(q, s, n, block, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    if (ratio > 1) { /* a state's slot, written by its last token, at the rank-local position */
      for (i = 0, t = 0; i < n; ++i)
        for (tok = 0; tok < q[i]; ++tok, ++t) {
          const int64_t pos = s[i] - q[i] + tok;
          const int64_t st = (pos / ((int64_t)inter * dcp) * inter + pos % inter) / ratio;
          sm[t] = (pos + 1) % ratio ? -1
                                    : (int64_t)batch->bt[i * batch->width + st / states] * states +
                                          st % states;
        }
      ts_expect_i64(m, "slot_mapping", sm, t);
    }
    nd = ts_int(m, "num_decodes");
    np = ts_int(m, "num_prefills");
    assert_int_equal(nd + np, n);
    for (i = 0; i < nd; ++i) {
      ndt += q[i];
      if (q[i] > maxq) maxq = q[i];
    }
    if (nd > 0) {
      sl = ts_tensor(m, "decode_seq_lens");
      if (sl->shape[0] == ndt && sl->shape[1] == 1) { /* one row per token (or native 1) */
        for (i = 0, t = 0; i < nd; ++i)
          for (tok = 0; tok < q[i]; ++tok, ++t)
            dl[t] = local_len(s[i] - q[i] + tok + 1, dcp, rank, inter) / ratio;
        expect_flat(m, "decode_seq_lens", dl, ndt);
      } else if (sl->shape[1] == 1) { /* native next_n 1 */
        for (i = 0; i < nd; ++i) dl[i] = local_len(s[i], dcp, rank, inter) / ratio;
        expect_flat(m, "decode_seq_lens", dl, nd);
      } else { /* native MTP: (nd, max_decode_len) */
        assert_int_equal(sl->shape[1], maxq);
        for (i = 0, t = 0; i < nd; ++i)
          for (tok = 0; tok < maxq; ++tok, ++t) {
            const int64_t v = s[i] - maxq + 1 + tok;
            dl[t] = local_len(v < 0 ? 0 : v, dcp, rank, inter) / ratio;
          }
        expect_flat(m, "decode_seq_lens", dl, nd * maxq);
      }
    }
    if (np > 0) {
      int64_t row = 0, local = 0;
      assert_int_equal(ts_int(m, "prefill_num_chunks"), 1);
      for (i = nd, t = 0; i < n; ++i) {
        cu[i - nd] = (int32_t)row;
        for (tok = 0; tok < q[i]; ++tok, ++t) {
          ks[t] = (int32_t)(dcp > 1 ? local : row);
          ke[t] = ks[t] + local_len((s[i] - q[i] + 1 + tok) / ratio, dcp, rank, inter / ratio);
        }
        row += s[i] / ratio;
        local += local_len(s[i] / ratio, dcp, rank, inter / ratio);
      }
      cu[np] = (int32_t)row;
      ts_expect_i32(m, "prefill_cu_seqlen_ks", ks, t);
      ts_expect_i32(m, "prefill_cu_seqlen_ke", ke, t);
      ts_expect_i32(m, "prefill_cu_seq_lens", cu, np + 1);
    } else {
      ts_expect_none(m, "prefill_num_chunks");
    }
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

static void test_random(void** state) {
  (void)state;
  check_random(0x1dec5u, 1);
}

static void test_random_compressed(void** state) {
  (void)state;
  check_random(0xc4a11u, 4);
}

/* KPOOL_TAIL (KpoolTailMetadataBuilder): ALWAYS, threshold None, draft updates. kpool 16,
 * queries [2, 1, 3] onto [18, 5, 40] (positions 16, 17 | 4 | 37, 38, 39), request 1 on the null
 * block: slots b0 * 16 + 0, + 1 | -1 | b2 * 16 + 5, 6, 7; of the two padded tokens, the one
 * below num_actual_tokens (7) maps to the last request (position 0), the other keeps the
 * input's slot. Without positions the slot mapping is the input's. A draft update of the
 * decodes [1, 1] onto [18, 5] after the positions advance to [18, 5]: slot // 16 * 16 +
 * position % 16, so b0 * 16 + 2 and, for the null block's -1, -16 + 5 = -11 (vLLM's floor
 * division). */
static void test_kpool_tail(void** state) {
  static const int32_t q[3] = {2, 1, 3}, s[3] = {18, 5, 40}, qd[2] = {1, 1};
  attn_kv_cache_spec_t spec = ix_spec();
  attn_builder_config_t c = ix_config(90, 0);
  attn_builder_t* b;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  int64_t pos[8] = {16, 17, 4, 37, 38, 39, 0, 0}, shape[1] = {8}, b0, b2;
  attn_tensor_t pt = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
  const attn_tensor_t* t;
  int32_t level = -1, th = -1, supported = 0;
  (void)state;
  spec.block_size = 16;
  ASSERT_OK(attn_backend_cudagraph_support("KPOOL_TAIL", &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  b = ts_builder("KPOOL_TAIL", &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
  assert_int_equal(th, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
  assert_int_equal(supported, 1);
  batch = ts_batch_make(q, s, 3, 16, 0, 8);
  batch->bt[1 * batch->width] = 0; /* request 1 on the null block */
  b0 = batch->bt[0];
  b2 = batch->bt[2 * batch->width];
  batch->common.positions = &pt;
  batch->common.num_actual_tokens = 7;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 0); /* the first query (2) is over threshold 1 */
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  ts_expect_none(m, "decode");
  ts_expect_none(m, "block_table");
  t = ts_tensor(m, "slot_mapping");
  assert_int_equal(t->shape[0], 8);
  {
    const int64_t* got = (const int64_t*)t->data;
    const int64_t want[6] = {b0 * 16, b0 * 16 + 1, -1, b2 * 16 + 5, b2 * 16 + 6, b2 * 16 + 7};
    int i;
    for (i = 0; i < 6; ++i) assert_int_equal(got[i], want[i]);
    assert_int_equal(got[6], b2 * 16); /* past the last boundary: the last request */
    assert_int_equal(got[7], batch->slots[7]); /* past num_actual_tokens: the input's */
  }
  assert_ptr_equal(ts_tensor(m, "positions")->data, pos);
  batch->common.positions = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  ts_expect_none(m, "positions");
  ts_batch_free(batch);
  /* draft update */
  batch = ts_batch_make(qd, s, 2, 16, 0, -1);
  batch->bt[1 * batch->width] = 0;
  b0 = batch->bt[0];
  pos[0] = 17;
  pos[1] = 4;
  shape[0] = 2;
  pt = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
  batch->common.positions = &pt;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  pos[0] = 18;
  pos[1] = 5;
  ASSERT_OK(attn_update_draft_decode_metadata(b, m, NULL));
  t = ts_tensor(m, "slot_mapping");
  assert_int_equal(((const int64_t*)t->data)[0], b0 * 16 + 2);
  assert_int_equal(((const int64_t*)t->data)[1], -11);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* seq_lens_cpu_upper_bound: vLLM 0.33 plans the prefill chunks from the bound (exact for a
 * prefilling row; above the exact length on an async spec-decode row that the uniform split
 * counts as a prefill), while cu_seq_lens and cu_seqlen_ks/ke stay the exact device lengths'.
 * SM90 k = 3 (native next_n 4: uniform split), max_model_len 64 (prefill workspace 64 x 8 x 5 =
 * 2560 rows): queries [4, 3 x41] onto exact [64, 62 x41], bound [64, 64 x41]: one decode, 41
 * prefills. The bound's 41 x 64 = 2624 rows exceed the workspace: groups [0, 40) (2560 rows)
 * and [40, 41) (64): two chunks, tokens [4, 124) and [124, 127), requests [1, 41) and [41, 42),
 * cu offsets 0 and 41, total_seq_lens (and local totals, no DCP) 2560 and 64, max_seqlen_k 64,
 * max_prefill_seq_len 64. cu_seq_lens from the exact lengths: 0, 62, ..., 2480 (41 entries),
 * then 0, 62; the last prefill's tokens: ks 0, ke 60, 61, 62. With the exact lengths (no bound)
 * the 2542 rows fit one chunk, max_prefill_seq_len 62. */
static void test_upper_bound(void** state) {
  enum { N = 42 };
  int32_t q[N], s[N], ub[N];
  int64_t shape[1] = {N};
  attn_tensor_t ubt = ts_host_tensor(ub, 1, shape, ATTN_DTYPE_INT, 32);
  attn_kv_cache_spec_t spec = ix_spec();
  attn_builder_config_t c = ix_config(90, 3);
  attn_builder_t* b;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  const attn_tensor_t* cu;
  int i;
  (void)state;
  c.max_num_seqs = 64;
  c.max_model_len = 64;
  for (i = 0; i < N; ++i) {
    q[i] = i == 0 ? 4 : 3;
    s[i] = i == 0 ? 64 : 62;
    ub[i] = 64;
  }
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q, s, N, 64, 8, -1);
  batch->common.seq_lens_cpu_upper_bound = &ubt;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_prefills"), 41);
  assert_int_equal(ts_int(m, "prefill_max_prefill_seq_len"), 64);
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 2);
  ts_expect_i32(m, "prefill_chunk_token_start", (int32_t[]){4, 124}, 2);
  ts_expect_i32(m, "prefill_chunk_token_end", (int32_t[]){124, 127}, 2);
  ts_expect_i32(m, "prefill_chunk_req_start", (int32_t[]){1, 41}, 2);
  ts_expect_i32(m, "prefill_chunk_req_end", (int32_t[]){41, 42}, 2);
  ts_expect_i32(m, "prefill_chunk_cu_offset", (int32_t[]){0, 41}, 2);
  ts_expect_i32(m, "prefill_chunk_total_seq_lens", (int32_t[]){2560, 64}, 2);
  ts_expect_i32(m, "prefill_chunk_max_seqlen_k", (int32_t[]){64, 64}, 2);
  ts_expect_i32(m, "prefill_chunk_local_total_seq_lens", (int32_t[]){2560, 64}, 2);
  ts_expect_i32(m, "prefill_chunk_max_local_total_seq_lens", (int32_t[]){2560, 64}, 2);
  cu = ts_tensor(m, "prefill_cu_seq_lens");
  assert_int_equal(cu->shape[0], 43);
  for (i = 0; i <= 40; ++i) assert_int_equal(((const int32_t*)cu->data)[i], 62 * i);
  assert_int_equal(((const int32_t*)cu->data)[41], 0);
  assert_int_equal(((const int32_t*)cu->data)[42], 62);
  {
    const attn_tensor_t* ks = ts_tensor(m, "prefill_cu_seqlen_ks");
    const attn_tensor_t* ke = ts_tensor(m, "prefill_cu_seqlen_ke");
    assert_int_equal(ks->shape[0], 123);
    for (i = 0; i < 3; ++i) {
      assert_int_equal(((const int32_t*)ks->data)[120 + i], 0);
      assert_int_equal(((const int32_t*)ke->data)[120 + i], 60 + i);
      assert_int_equal(((const int32_t*)ks->data)[117 + i], 62 * 39);
    }
  }
  batch->common.seq_lens_cpu_upper_bound = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_max_prefill_seq_len"), 62);
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 1);
  ts_expect_i32(m, "prefill_chunk_total_seq_lens", (int32_t[]){2542}, 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),       cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_decode_paths), cmocka_unit_test(test_prefill_chunks),
      cmocka_unit_test(test_draft_update), cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_random),       cmocka_unit_test(test_random_compressed),
      cmocka_unit_test(test_kpool_tail),   cmocka_unit_test(test_upper_bound),
  };
  return cmocka_run_group_tests_name("sparse_indexer", tests, NULL, NULL);
}
