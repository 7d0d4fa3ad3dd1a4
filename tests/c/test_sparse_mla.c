/* The sparse MLA family at vLLM 0.33: FLASHMLA_SPARSE (SparseMLACommonMetadataBuilder and
 * FlashMLASparseMetadataBuilder): its level and heads-table threshold, the common sparse fields
 * (req_id_per_token, seq_lens, topk_tokens, decode_max_query_len, prefill_max_seq_len, the
 * dense-MHA prefill flag), its fp8 paths (the mixed batch below 32 heads; the separate prefill
 * and decode from 32 on, with the prefill request ids, chunk-relative workspace starts and
 * split_prefill_chunks' chunks), the ABI 1.7 spec field index_topk, the refusals, the prefill
 * plan from seq_lens_cpu_upper_bound (an optimistic async spec-decode row), and seeded
 * random batches against a naive restatement. Hand-checked values are worked out in the
 * comments. */
#include "test_support.h"

/* 8 sequences, 2048 tokens, max_model_len 1024, `heads` query heads, sm90. */
static attn_builder_config_t sparse_config(int32_t heads, int fp8) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 1024;
  c.num_attention_heads = heads;
  c.model_dtype = ATTN_KV_DTYPE_BFLOAT16;
  c.cache_dtype = fp8 ? ATTN_KV_DTYPE_FP8_E4M3 : ATTN_KV_DTYPE_AUTO;
  return c;
}

static attn_kv_cache_spec_t sparse_spec(int32_t block_size, int32_t topk) {
  attn_kv_cache_spec_t s = ts_mla_spec(block_size);
  s.index_topk = topk;
  return s;
}

static int32_t threshold_of(attn_builder_t* b) {
  int32_t t = -1;
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &t));
  return t;
}

/* UNIFORM_BATCH without a builder (the class attribute); the threshold from vLLM 0.33's heads
 * table: sm90 {16, 32: 128, 64, 128: 256, else 256}; sm100 {8, 16, 32: 128, 64: 256,
 * 128: 1024, else 1024}; spec decode k = 3 keeps max(threshold, 1 + k). */
static void test_levels_and_thresholds(void** state) {
  static const int32_t heads[] = {16, 32, 64, 128, 8, 24};
  static const int32_t sm90[] = {128, 128, 256, 256, 256, 256};
  static const int32_t sm100[] = {128, 128, 256, 1024, 128, 1024};
  attn_kv_cache_spec_t spec = sparse_spec(64, 0);
  attn_builder_config_t c = sparse_config(16, 0);
  int32_t level = -1;
  size_t i;
  (void)state;
  ASSERT_OK(attn_backend_cudagraph_support("FLASHMLA_SPARSE", &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  for (i = 0; i < sizeof heads / sizeof heads[0]; ++i) {
    attn_builder_t* b;
    c = sparse_config(heads[i], 0);
    b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
    assert_int_equal(threshold_of(b), sm90[i]);
    attn_builder_destroy(b);
    c.device_capability = 100;
    b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
    assert_int_equal(threshold_of(b), sm100[i]);
    attn_builder_destroy(b);
  }
  c = sparse_config(16, 0);
  c.num_speculative_tokens = 3;
  {
    attn_builder_t* b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
    int32_t supported = 1;
    assert_int_equal(threshold_of(b), 128);
    ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
    assert_int_equal(supported, 0);
    attn_builder_destroy(b);
  }
}

/* bf16 cache, 16 heads (threshold 128), block 64, queries [1, 1, 5, 3] onto [10, 20, 30, 40]:
 * the uniform split takes the two 1-token rows as decodes (the 5 differs from the first
 * query), so two decodes, two prefills. req_id_per_token [0, 1, 2 x5, 3 x3];
 * decode_max_query_len 1 (the decodes' longest; prefills exist); prefill_max_seq_len 40;
 * prefill_max_query_len 5 (the prefills' longest, not the batch's); use_dense_mha (40 <=
 * top-k 2048); contexts 25 and 37 give a chunked context; head_dim None; fp8 part None. With
 * index_topk 32 the dense-MHA flag is off (40 > 32). */
static void test_hand_checked(void** state) {
  static const int32_t q[4] = {1, 1, 5, 3}, s[4] = {10, 20, 30, 40};
  attn_kv_cache_spec_t spec = sparse_spec(64, 0);
  attn_builder_config_t c = sparse_config(16, 0);
  attn_builder_t* b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 64, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  ts_expect_i32(m, "req_id_per_token", (int32_t[]){0, 1, 2, 2, 2, 2, 2, 3, 3, 3}, 10);
  ts_expect_i32(m, "seq_lens", s, 4);
  assert_int_equal(ts_int(m, "block_size"), 64);
  assert_int_equal(ts_int(m, "topk_tokens"), 2048);
  assert_int_equal(ts_int(m, "decode_max_query_len"), 1);
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 40);
  assert_int_equal(ts_int(m, "prefill_max_query_len"), 5);
  assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 1);
  assert_int_equal(ts_int(m, "cp_kv_cache_interleave_size"), 1);
  assert_int_equal(ts_int(m, "fp8_use_mixed_batch"), 1);
  ts_expect_i32(m, "prefill_query_start_loc", (int32_t[]){0, 5, 8}, 3);
  ts_expect_i32(m, "prefill_chunked_context_context_lens_list", (int32_t[]){25, 37}, 2);
  ts_expect_none(m, "head_dim");
  ts_expect_none(m, "fp8_extra_metadata_cache_lens");
  ts_expect_none(m, "fp8_extra_metadata_num_decodes");
  /* min(max(8 x 1024, 4 x 8 x 64), 65536, 8 x 2048) = 8192 */
  assert_int_equal(ts_int(m, "chunked_prefill_workspace_size"), 8192);
  /* a decode-only batch: decode_max_query_len is the batch's max_query_len, no prefill part */
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 2, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "decode_max_query_len"), 1);
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 0);
  ts_expect_none(m, "prefill_block_table");
  attn_builder_destroy(b);
  ts_batch_free(batch);
  /* index_topk 32: the workspace is min(8192, 8 x 32) = 256, dense MHA off */
  spec = sparse_spec(64, 32);
  b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
  batch = ts_batch_make(q, s, 4, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "topk_tokens"), 32);
  assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 0);
  assert_int_equal(ts_int(m, "chunked_prefill_workspace_size"), 256);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* The sparse builders' prefills run the dense prefill backends too (vLLM 0.33's
 * SparseMLACommonMetadataBuilder calls the layer's prefill backend's prepare_metadata): on 10.x
 * with TRTLLM_RAGGED or TOKENSPEED_MLA their metadata carries the prefills' query lengths, the
 * plan inputs appended after each sparse builder's own fields. Every sparse builder refused the
 * first prefill with an internal error ("has no field prefill_query_seq_lens") before. */
static void test_prefill_backend_inputs(void** state) {
  /* prefills longer than every sparse builder's decode threshold (up to 1024 on 10.x) */
  static const int32_t q[4] = {1, 1, 600, 400}, s[4] = {10, 20, 900, 700};
  static const char* const names[] = {"FLASHMLA_SPARSE", "FLASH_ATTN_MLA_SPARSE",
                                      "FLASHINFER_MLA_SPARSE"};
  attn_kv_cache_spec_t spec = sparse_spec(64, 0);
  ts_batch* batch = ts_batch_make(q, s, 4, 64, 0, -1);
  size_t i;
  int k;
  (void)state;
  for (i = 0; i < sizeof names / sizeof names[0]; ++i)
    for (k = 0; k < 2; ++k) {
      attn_builder_config_t c = sparse_config(16, 0);
      attn_builder_t* b = NULL;
      attn_metadata_t* m = NULL;
      attn_error_t* err;
      c.device_capability = 100;
      c.mla_prefill_backend = k ? ATTN_MLA_PREFILL_TOKENSPEED_MLA : ATTN_MLA_PREFILL_TRTLLM_RAGGED;
      err = attn_builder_create(names[i], &spec, &c, &b);
      if (err != NULL) { /* a backend the platform or prefill backend rules out, named */
        assert_int_equal(attn_error_code(err), ATTN_ERR_UNSUPPORTED);
        attn_error_destroy(err);
        continue;
      }
      ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
      assert_int_equal(ts_int(m, "prefill_prefill_backend"), 2 + k);
      ts_expect_i32(m, "prefill_query_seq_lens", (int32_t[]){600, 400}, 2);
      ts_expect_none(m, "prefill_num_qo_heads");
      attn_builder_destroy(b);
    }
  ts_batch_free(batch);
}

/* fp8 cache, 16 heads: the mixed batch: fp8_extra_metadata is FP8KernelMetadata with one row of
 * the max_model_len tensor and of the dummy table, the scheduler None (FlashMLA's object). */
static void test_fp8_mixed(void** state) {
  static const int32_t q[3] = {1, 1, 7}, s[3] = {9, 33, 7};
  attn_kv_cache_spec_t spec = sparse_spec(64, 0);
  attn_builder_config_t c = sparse_config(16, 1);
  attn_builder_t* b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 64, 0, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "fp8_use_mixed_batch"), 1);
  ts_expect_i32(m, "fp8_extra_metadata_cache_lens", (int32_t[]){1024}, 1);
  t = ts_tensor(m, "fp8_extra_metadata_dummy_block_table");
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], 1);
  assert_int_equal(t->shape[1], 1);
  ts_expect_none(m, "fp8_extra_metadata_scheduler_metadata");
  ts_expect_none(m, "fp8_extra_metadata_num_prefills");
  ts_expect_none(m, "fp8_extra_metadata_prefill_request_ids");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* fp8 cache, 64 heads (threshold 256), k = 1: queries [2, 2, 3, 4] onto [10, 12, 100, 50]:
 * decodes are the two 2-token rows (uniform), prefills the rest. FP8SeparatePrefillDecode:
 * num_decodes 2 (4 tokens / query 2), num_prefill_tokens 7; request_ids -1 for the 4 decode
 * tokens, then 0 x3, 1 x4; workspace (5 x 1024 rows) holds both: starts [0, 100], one chunk
 * (tokens [4, 11), requests [0, 2), 150 rows); decode seq_lens [10, 12], cache_lens [1024,
 * 1024], dummy table (2, 1), decode_query_len 2. With max_model_len 64 (workspace 320) and
 * prefills onto [200, 150, 60]: chunks [0, 1) and [1, 3), starts [0, 0, 150]. */
static void test_fp8_separate(void** state) {
  static const int32_t q[4] = {2, 2, 3, 4}, s[4] = {10, 12, 100, 50};
  static const int32_t q2[4] = {1, 8, 4, 2}, s2[4] = {5, 64, 60, 30};
  attn_kv_cache_spec_t spec = sparse_spec(64, 0);
  attn_builder_config_t c = sparse_config(64, 1);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 4, 64, 0, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  (void)state;
  c.num_speculative_tokens = 1;
  b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "fp8_use_mixed_batch"), 0);
  assert_int_equal(ts_int(m, "fp8_extra_metadata_num_decodes"), 2);
  assert_int_equal(ts_int(m, "fp8_extra_metadata_num_prefills"), 2);
  assert_int_equal(ts_int(m, "fp8_extra_metadata_num_decode_tokens"), 4);
  assert_int_equal(ts_int(m, "fp8_extra_metadata_num_prefill_tokens"), 7);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_request_ids",
                (int32_t[]){-1, -1, -1, -1, 0, 0, 0, 1, 1, 1, 1}, 11);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_workspace_starts", (int32_t[]){0, 100}, 2);
  assert_int_equal(ts_int(m, "fp8_extra_metadata_prefill_num_chunks"), 1);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_token_start", (int32_t[]){4}, 1);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_token_end", (int32_t[]){11}, 1);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_req_start_idx", (int32_t[]){0}, 1);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_req_end_idx", (int32_t[]){2}, 1);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_chunk_tot_seqlen", (int32_t[]){150}, 1);
  ts_expect_i32(m, "fp8_extra_metadata_decode_seq_lens", (int32_t[]){10, 12}, 2);
  ts_expect_i32(m, "fp8_extra_metadata_decode_kernel_metadata_cache_lens",
                (int32_t[]){1024, 1024}, 2);
  t = ts_tensor(m, "fp8_extra_metadata_decode_kernel_metadata_dummy_block_table");
  assert_int_equal(t->shape[0], 2);
  assert_int_equal(t->shape[1], 1);
  assert_int_equal(ts_int(m, "fp8_extra_metadata_decode_decode_query_len"), 2);
  ts_expect_none(m, "fp8_extra_metadata_decode_kernel_metadata_scheduler_metadata");
  ts_expect_none(m, "fp8_extra_metadata_cache_lens");
  attn_builder_destroy(b);
  ts_batch_free(batch);
  /* max_model_len 64: one decode (q 1), prefills onto 64, 60, 30 -> 320 rows a chunk:
   * 64 + 60 + 30 = 154 fits; use seq lens [64, 60, 30] with 5 x 64 = 320 */
  c = sparse_config(64, 1);
  c.max_model_len = 64;
  b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
  batch = ts_batch_make(q2, s2, 4, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "fp8_extra_metadata_prefill_num_chunks"), 1);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_workspace_starts", (int32_t[]){0, 64, 124}, 3);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_request_ids",
                (int32_t[]){-1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2}, 15);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* What 0.33 refuses: DCP on the separate path (>= 32 heads), DCP whose gathered heads pad
 * differently (16 x 8 = 128 pads to 128, 16 to 64), a float16 model, blocks not a multiple of
 * 64, 512-wide heads, a negative index_topk, an empty first decode on the fp8 separate path. */
static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = sparse_spec(64, 0);
  attn_builder_config_t c = sparse_config(64, 1);
  attn_builder_t* b = NULL;
  (void)state;
  c.decode_context_parallel_size = 2;
  ASSERT_ERROR(attn_builder_create("FLASHMLA_SPARSE", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "DCP for FlashMLA sparse is only supported on the mixed-batch fp8 path");
  c = sparse_config(16, 1);
  c.decode_context_parallel_size = 8;
  ASSERT_ERROR(attn_builder_create("FLASHMLA_SPARSE", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "16 local heads (pad to 64) vs 128 gathered heads (pad to 128)");
  c = sparse_config(16, 0);
  c.model_dtype = ATTN_KV_DTYPE_FLOAT16;
  ASSERT_ERROR(attn_builder_create("FLASHMLA_SPARSE", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "runs bfloat16 models only");
  c = sparse_config(16, 0);
  spec = sparse_spec(32, 0);
  ASSERT_ERROR(attn_builder_create("FLASHMLA_SPARSE", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "multiple of 64");
  spec = sparse_spec(64, 0);
  spec.head_size = 512;
  ASSERT_ERROR(attn_builder_create("FLASHMLA_SPARSE", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "head_size=512");
  spec = sparse_spec(64, -1);
  ASSERT_ERROR(attn_builder_create("FLASHMLA_SPARSE", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->index_topk=-1 is negative");
  assert_null(b);
  {
    /* fp8 separate: padding rows first are decodes of query length 0 (vLLM asserts) */
    static const int32_t q[3] = {0, 0, 0}, s[3] = {0, 0, 0};
    ts_batch* batch = ts_batch_make(q, s, 3, 64, 0, 2);
    attn_metadata_t* m = NULL;
    spec = sparse_spec(64, 0);
    c = sparse_config(64, 1);
    b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "decode_query_len > 0");
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

/* Seeded random batches (fp8, 64 heads, max_model_len 1024 or 64 so that the workspace splits)
 * against a naive restatement: req_id_per_token, the prefill request ids and the chunk-relative
 * workspace starts. */
static void test_random(void** state) {
  uint64_t rng = 0x5eed19u;
  int iter;
  (void)state;
  for (iter = 0; iter < 200; ++iter) {
    int32_t q[8], s[8];
    int64_t n = 1 + (int64_t)(ts_rand(&rng) % 8), i, t, tokens = 0, nd, np;
    attn_kv_cache_spec_t spec = sparse_spec(64, 0);
    attn_builder_config_t c = sparse_config(64, 1);
    int32_t mml = (iter % 2) ? 64 : 1024, decode_q = 1 + (int32_t)(ts_rand(&rng) % 3);
    int64_t ndec = (int64_t)(ts_rand(&rng) % (uint64_t)(n + 1));
    attn_builder_t* b;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    int32_t expect_req[2048], expect_ws[8];
    c.max_model_len = mml;
    c.num_speculative_tokens = 2;
    for (i = 0; i < n; ++i) {
      q[i] = i < ndec ? decode_q : 4 + (int32_t)(ts_rand(&rng) % 12);
      s[i] = q[i] + (int32_t)(ts_rand(&rng) % (uint64_t)(mml - q[i] + 1));
      tokens += q[i];
    }
    b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
    batch = ts_batch_make(q, s, n, 64, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    nd = ts_int(m, "num_decodes");
    np = ts_int(m, "num_prefills");
    for (t = 0; t < tokens; ++t) {
      int64_t r = 0, acc = 0;
      while (acc + q[r] <= t) acc += q[r++];
      expect_req[t] = (int32_t)r;
    }
    ts_expect_i32(m, "req_id_per_token", expect_req, tokens);
    if (np > 0) {
      int64_t total = 0, start_tok = 0;
      for (i = 0; i < nd; ++i) start_tok += q[i];
      for (t = 0; t < tokens; ++t) expect_req[t] = t < start_tok ? -1 : expect_req[t] - (int32_t)nd;
      ts_expect_i32(m, "fp8_extra_metadata_prefill_request_ids", expect_req, tokens);
      for (i = 0; i < np; ++i) {
        if (total + s[nd + i] > 5 * mml) total = 0;
        expect_ws[i] = (int32_t)total;
        total += s[nd + i];
      }
      ts_expect_i32(m, "fp8_extra_metadata_prefill_workspace_starts", expect_ws, np);
    } else {
      ts_expect_none(m, "fp8_extra_metadata_prefill_request_ids");
    }
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

/* FLASH_ATTN_MLA_SPARSE and FLASHINFER_MLA_SPARSE: SparseMLACommonMetadata only (no fp8 part),
 * VARLEN decodes; thresholds from their own tables whatever the device (FA: 16 -> 128,
 * 64 -> 256, 128 -> 256; FlashInfer: 8 -> 128, 64 -> 256, 128 -> 1024); FA refuses DCP and
 * updates req_id_per_token for draft decodes (supports_draft_decode_metadata_update without
 * DCP); FlashInfer keeps varlen decodes under DCP. Queries [1, 2, 1, 300] onto [10, 20, 30,
 * 300] split at 300 (> 128): three varlen decodes of 4 tokens, decode_max_query_len 2. */
static void test_fa_and_flashinfer(void** state) {
  static const int32_t q[4] = {1, 2, 1, 300}, s[4] = {10, 20, 30, 300};
  static const char* const names[2] = {"FLASH_ATTN_MLA_SPARSE", "FLASHINFER_MLA_SPARSE"};
  static const int32_t t128[2] = {256, 1024}, t64[2] = {256, 256}, t8[2] = {256, 128};
  int v;
  (void)state;
  for (v = 0; v < 2; ++v) {
    attn_kv_cache_spec_t spec = sparse_spec(64, 0);
    attn_builder_config_t c = sparse_config(16, 0);
    attn_builder_t* b = ts_builder(names[v], &spec, &c);
    ts_batch* batch = ts_batch_make(q, s, 4, 64, 0, -1);
    attn_metadata_t* m = NULL;
    int32_t level = -1, supported = -1, want[304] = {0, 1, 1, 2};
    int k;
    ASSERT_OK(attn_backend_cudagraph_support(names[v], &spec, &c, &level));
    assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
    assert_int_equal(threshold_of(b), 128);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), 3);
    assert_int_equal(ts_int(m, "num_decode_tokens"), 4);
    assert_int_equal(ts_int(m, "num_prefills"), 1);
    assert_int_equal(ts_int(m, "decode_max_query_len"), 2);
    assert_int_equal(ts_int(m, "prefill_max_seq_len"), 300);
    assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 1);
    for (k = 4; k < 304; ++k) want[k] = 3;
    ts_expect_i32(m, "req_id_per_token", want, 304);
    {
      int64_t x = 0;
      ASSERT_ERROR(attn_metadata_get_int(m, "fp8_use_mixed_batch", &x), ATTN_ERR_NOT_FOUND,
                   "fp8_use_mixed_batch");
    }
    ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
    assert_int_equal(supported, 1); /* both without DCP (FlashInfer's: the TRT-LLM builder) */
    ASSERT_OK(attn_update_draft_decode_metadata(b, m, NULL));
    ts_expect_i32(m, "req_id_per_token", want, 304); /* the decode tokens' again */
    {
      int32_t varlen = -2, has = -1;
      ASSERT_OK(attn_builder_varlen_cudagraph_max_query_len(b, &varlen, &has));
      assert_int_equal(has, v == 1); /* FlashInfer's TRT-LLM builder: max_decode_query_len 1 */
      if (v == 1) assert_int_equal(varlen, 1);
    }
    attn_builder_destroy(b);
    ts_batch_free(batch);
    c = sparse_config(128, 0);
    b = ts_builder(names[v], &spec, &c);
    assert_int_equal(threshold_of(b), t128[v]);
    attn_builder_destroy(b);
    c = sparse_config(64, 0);
    c.device_capability = 100;
    b = ts_builder(names[v], &spec, &c);
    assert_int_equal(threshold_of(b), t64[v]);
    attn_builder_destroy(b);
    c = sparse_config(8, 0);
    b = ts_builder(names[v], &spec, &c);
    assert_int_equal(threshold_of(b), t8[v]);
    attn_builder_destroy(b);
  }
  {
    attn_kv_cache_spec_t spec = sparse_spec(64, 0);
    attn_builder_config_t c = sparse_config(16, 0);
    attn_builder_t* b = NULL;
    c.decode_context_parallel_size = 2;
    ASSERT_ERROR(attn_builder_create("FLASH_ATTN_MLA_SPARSE", &spec, &c, &b),
                 ATTN_ERR_UNSUPPORTED, "does not support DCP");
    c.cp_kv_cache_interleave_size = 8;
    b = ts_builder("FLASHINFER_MLA_SPARSE", &spec, &c); /* supports_dcp_with_varlen */
    assert_int_equal(threshold_of(b), 128);
    attn_builder_destroy(b);
    c = sparse_config(16, 1);
    ASSERT_ERROR(attn_builder_create("FLASH_ATTN_MLA_SPARSE", &spec, &c, &b),
                 ATTN_ERR_UNSUPPORTED, "cache_dtype");
    /* SM120: the base FlashInfer builder (threshold table, no draft update), index_topk 2048
     * and fp8/auto caches only; FA4: the TRT-LLM builder, index_topk % 128 */
    b = ts_builder("FLASHINFER_MLA_SPARSE_SM120", &spec, &c);
    assert_int_equal(threshold_of(b), 128);
    {
      int32_t supported = -1;
      ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
      assert_int_equal(supported, 0);
    }
    attn_builder_destroy(b);
    c = sparse_config(16, 0);
    b = ts_builder("FLASH_ATTN_MLA_SPARSE_FA4", &spec, &c);
    assert_int_equal(threshold_of(b), 128);
    attn_builder_destroy(b);
    spec = sparse_spec(64, 1000);
    ASSERT_ERROR(attn_builder_create("FLASHINFER_MLA_SPARSE_SM120", &spec, &c, &b),
                 ATTN_ERR_UNSUPPORTED, "requires index_topk=2048; got 1000");
    ASSERT_ERROR(attn_builder_create("FLASH_ATTN_MLA_SPARSE_FA4", &spec, &c, &b),
                 ATTN_ERR_UNSUPPORTED, "index_topk % 128 == 0, got 1000");
  }
}

/* FLASHINFER_MLA_SPARSE_SM90 (FlashInferMLASparseSM90Builder): the FlashInfer sparse builder's
 * table B (32 heads -> 128, 64 -> 256, 128 -> 1024), no draft updates; 9.x, kv_lora_rank 512,
 * bf16 models, "auto"/bf16/fp8 caches. Its _SM90State plan staging, 16 batched tokens: queries
 * [1, 1, 3] onto [10, 20, 40] (all varlen decodes) have row contexts [10, 20, 38, 39, 40].
 * Without seq_lens_cpu_upper_bound the plan is exact: kv_len_arr [10, 20, 38, 39, 40, 0...],
 * qo_indptr [0..5, 5...], kv_indptr [0, 10, 30, 68, 107, 147, ...], planned -1. With the bound
 * (here the exact lengths) the lengths are padded by 32 (<= top-k): [42, 52, 70, 71, 72],
 * planned 5; the same batch again reuses the plan, as does one a token further on (42 <= 11 +
 * 32); 40 tokens further on (50 > 42) it plans again. Queries [1, 200] onto [10, 300]: a
 * dense-MHA prefill (300 <= 2048), so only the decode row is planned. */
static void test_sm90(void** state) {
  static const int32_t q[3] = {1, 1, 3}, s0[3] = {10, 20, 40};
  static const int32_t q2[2] = {1, 200}, s2[2] = {10, 300};
  const char* name = "FLASHINFER_MLA_SPARSE_SM90";
  attn_kv_cache_spec_t spec = sparse_spec(64, 0);
  attn_builder_config_t c = sparse_config(32, 0);
  attn_builder_t* b = NULL;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  int32_t s[3], level = -1, supported = 1, ub[3];
  int64_t shape[1] = {3};
  attn_tensor_t ubt;
  int i;
  (void)state;
  c.max_num_batched_tokens = 16;
  ASSERT_OK(attn_backend_cudagraph_support(name, &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  {
    static const int32_t heads[3] = {32, 64, 128}, want[3] = {128, 256, 1024};
    for (i = 0; i < 3; ++i) {
      attn_builder_config_t h = sparse_config(heads[i], 0);
      b = ts_builder(name, &spec, &h);
      assert_int_equal(threshold_of(b), want[i]);
      ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
      assert_int_equal(supported, 0);
      attn_builder_destroy(b);
    }
  }
  {
    attn_builder_config_t r = c;
    r.device_capability = 100;
    ASSERT_ERROR(attn_builder_create(name, &spec, &r, &b), ATTN_ERR_UNSUPPORTED,
                 "device_capability=100");
    r = c;
    r.model_dtype = ATTN_KV_DTYPE_FLOAT16;
    ASSERT_ERROR(attn_builder_create(name, &spec, &r, &b), ATTN_ERR_UNSUPPORTED, "float16");
    r = c;
    r.cache_dtype = ATTN_KV_DTYPE_FLOAT16;
    ASSERT_ERROR(attn_builder_create(name, &spec, &r, &b), ATTN_ERR_UNSUPPORTED, "cache_dtype");
  }
  b = ts_builder(name, &spec, &c);
  memcpy(s, s0, sizeof s);
  batch = ts_batch_make(q, s, 3, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  ts_expect_i32(m, "state_kv_len_arr",
                (int32_t[]){10, 20, 38, 39, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 16);
  ts_expect_i32(m, "state_qo_indptr",
                (int32_t[]){0, 1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 17);
  ts_expect_i32(m, "state_kv_indptr", (int32_t[]){0, 10, 30, 68, 107, 147, 147, 147, 147, 147,
                                                  147, 147, 147, 147, 147, 147, 147},
                17);
  assert_int_equal(ts_int(m, "state_planned_num_tokens"), -1);
  assert_int_equal(ts_int(m, "state_replanned"), 1);
  /* with the upper bound: padded, planned 5; then reused */
  for (i = 0; i < 3; ++i) ub[i] = s[i];
  ubt = ts_host_tensor(ub, 1, shape, ATTN_DTYPE_INT, 32);
  batch->common.seq_lens_cpu_upper_bound = &ubt;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i32(m, "state_kv_len_arr",
                (int32_t[]){42, 52, 70, 71, 72, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 16);
  assert_int_equal(ts_int(m, "state_planned_num_tokens"), 5);
  assert_int_equal(ts_int(m, "state_replanned"), 1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "state_replanned"), 0);
  for (i = 0; i < 3; ++i) ub[i] += 1;
  batch->common.max_seq_len = 41; /* the bound's maximum, as vLLM 0.33's runner sets it */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "state_replanned"), 0);
  ts_expect_i32(m, "state_kv_len_arr",
                (int32_t[]){42, 52, 70, 71, 72, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 16);
  for (i = 0; i < 3; ++i) ub[i] += 40;
  batch->common.max_seq_len = 81;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "state_replanned"), 1);
  ts_expect_i32(m, "state_kv_len_arr",
                (int32_t[]){83, 93, 111, 112, 113, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 16);
  batch->common.seq_lens_cpu_upper_bound = NULL;
  attn_builder_destroy(b);
  ts_batch_free(batch);
  /* a dense-MHA prefill: the decode row only */
  c.max_num_batched_tokens = 256;
  b = ts_builder(name, &spec, &c);
  batch = ts_batch_make(q2, s2, 2, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 1);
  {
    const attn_tensor_t* t = ts_tensor(m, "state_qo_indptr");
    assert_int_equal(t->shape[0], 257);
    assert_int_equal(((const int32_t*)t->data)[256], 1);
    t = ts_tensor(m, "state_kv_len_arr");
    assert_int_equal(((const int32_t*)t->data)[0], 10);
    assert_int_equal(((const int32_t*)t->data)[1], 0);
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* seq_lens_cpu_upper_bound: vLLM 0.33 reads the bound (not the exact lengths) for the prefills'
 * host plan; on an async spec-decode batch a uniform split counts the ragged spec rows as
 * prefills, whose bound exceeds the exact length by their rejected drafts. k = 3, queries
 * [4, 2, 3] onto exact [100, 50, 64], bound [100, 51, 66] (one decode, two prefills), index_topk
 * 64: prefill_max_seq_len 66 (exact 64), use_dense_mha off (66 > 64; exact 64 <= 64 would be
 * on), contexts 51 - 2 = 49 and 66 - 3 = 63. fp8, 64 heads, max_model_len 40 (workspace 5 x
 * 40 = 200 rows): queries [4, 3, 2, 1, 1, 1, 1] onto exact [40, 33 x6], bound [40, 35, 34,
 * 33 x4]: split_prefill_chunks over the bound's prefill rows [35, 34, 33, 33, 33, 33]: 168 rows,
 * then 201 > 200 starts a second chunk: chunks [0, 5) (tokens [4, 12), 168 rows) and [5, 6)
 * (tokens [12, 13), 33 rows), workspace starts [0, 35, 69, 102, 135, 0] (the exact 198 rows
 * would fit one chunk, starts [0, 33, 66, 99, 132, 165]); prefill_max_seq_len 35. Without the
 * bound the exact lengths plan. */
static void test_upper_bound(void** state) {
  static const int32_t q[3] = {4, 2, 3}, s[3] = {100, 50, 64};
  static const int32_t q2[7] = {4, 3, 2, 1, 1, 1, 1}, s2[7] = {40, 33, 33, 33, 33, 33, 33};
  int32_t ub[3] = {100, 51, 66}, ub2[7] = {40, 35, 34, 33, 33, 33, 33};
  int64_t shape[1] = {3}, shape2[1] = {7};
  attn_tensor_t ubt = ts_host_tensor(ub, 1, shape, ATTN_DTYPE_INT, 32);
  attn_tensor_t ubt2 = ts_host_tensor(ub2, 1, shape2, ATTN_DTYPE_INT, 32);
  attn_kv_cache_spec_t spec = sparse_spec(64, 64);
  attn_builder_config_t c = sparse_config(16, 0);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 64, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.num_speculative_tokens = 3;
  b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
  batch->common.seq_lens_cpu_upper_bound = &ubt;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  ts_expect_i32(m, "seq_lens", s, 3);
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 66);
  assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 0);
  ts_expect_i32(m, "prefill_chunked_context_context_lens_list", (int32_t[]){49, 63}, 2);
  batch->common.seq_lens_cpu_upper_bound = NULL; /* the exact lengths plan */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 64);
  assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 1);
  ts_expect_i32(m, "prefill_chunked_context_context_lens_list", (int32_t[]){48, 61}, 2);
  attn_builder_destroy(b);
  ts_batch_free(batch);

  spec = sparse_spec(64, 0);
  c = sparse_config(64, 1);
  c.num_speculative_tokens = 3;
  c.max_model_len = 40;
  b = ts_builder("FLASHMLA_SPARSE", &spec, &c);
  batch = ts_batch_make(q2, s2, 7, 64, 0, -1);
  batch->common.seq_lens_cpu_upper_bound = &ubt2;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "fp8_use_mixed_batch"), 0);
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 35);
  assert_int_equal(ts_int(m, "fp8_extra_metadata_prefill_num_chunks"), 2);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_workspace_starts",
                (int32_t[]){0, 35, 69, 102, 135, 0}, 6);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_token_start", (int32_t[]){4, 12}, 2);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_token_end", (int32_t[]){12, 13}, 2);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_req_start_idx", (int32_t[]){0, 5}, 2);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_req_end_idx", (int32_t[]){5, 6}, 2);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_chunk_tot_seqlen", (int32_t[]){168, 33},
                2);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_request_ids",
                (int32_t[]){-1, -1, -1, -1, 0, 0, 0, 1, 1, 2, 3, 4, 5}, 13);
  batch->common.seq_lens_cpu_upper_bound = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 33);
  assert_int_equal(ts_int(m, "fp8_extra_metadata_prefill_num_chunks"), 1);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_workspace_starts",
                (int32_t[]){0, 33, 66, 99, 132, 165}, 6);
  ts_expect_i32(m, "fp8_extra_metadata_prefill_chunk_chunk_tot_seqlen", (int32_t[]){198}, 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels_and_thresholds), cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_prefill_backend_inputs),
      cmocka_unit_test(test_fp8_mixed),             cmocka_unit_test(test_fp8_separate),
      cmocka_unit_test(test_refusals),              cmocka_unit_test(test_random),
      cmocka_unit_test(test_fa_and_flashinfer),     cmocka_unit_test(test_sm90),
      cmocka_unit_test(test_upper_bound),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
