/* MLA's chunked context at vLLM 0.33 (mla_attention.py: plan_mla_context_chunks,
 * build_mla_chunked_context_metadata, align_mla_chunked_context_workspace_size), through the
 * TRITON_MLA builder: the workspace rule, hand-checked plans (several chunks of one request, a
 * run split into a continuation chunk, DCP with interleave), the prefill metadata's 0.33 fields,
 * contexts from seq_lens_cpu_upper_bound, bad input, and seeded random batches (some with
 * optimistic upper bounds) against the naive restatement of mla_chunks_naive.h. */
#include "mla_chunks_naive.h"
#include "test_support.h"

static attn_builder_config_t mla_config(void) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 1024;
  return c;
}

/* ---- the workspace ---------------------------------------------------------------------- */

static int64_t workspace_for(int32_t max_model_len, int32_t max_num_seqs, int32_t block_size,
                             int32_t dcp, int32_t interleave) {
  attn_kv_cache_spec_t spec = ts_mla_spec(block_size);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  static const int32_t q[1] = {2}, s[1] = {2};
  ts_batch* batch = ts_batch_make(q, s, 1, block_size, 0, -1);
  int64_t w;
  c.max_model_len = max_model_len;
  c.max_num_seqs = max_num_seqs;
  c.decode_context_parallel_size = dcp;
  c.cp_kv_cache_interleave_size = interleave;
  b = ts_builder("TRITON_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  w = ts_int(m, "chunked_prefill_workspace_size");
  assert_int_equal(w,
                   naive_mla_workspace(max_model_len, max_num_seqs, block_size, dcp, interleave));
  ts_batch_free(batch);
  attn_builder_destroy(b);
  return w;
}

static void test_workspace_size(void** state) {
  (void)state;
  /* min(max(8 * L, 4 * S * B), 65536), rounded up to B (lcm(B, dcp * interleave) with DCP) */
  assert_int_equal(workspace_for(1024, 256, 16, 1, 1), 16384);  /* 4 * 256 * 16 */
  assert_int_equal(workspace_for(4096, 8, 16, 1, 1), 32768);    /* 8 * 4096 */
  assert_int_equal(workspace_for(131072, 8, 64, 1, 1), 65536);  /* capped at 64k tokens */
  assert_int_equal(workspace_for(16, 1024, 128, 1, 1), 65536);  /* 0.13's S * B floor is gone */
  assert_int_equal(workspace_for(64, 4, 16, 1, 1), 512);        /* 8 * 64 */
  assert_int_equal(workspace_for(100, 1, 48, 1, 1), 816);       /* 800 rounded up to 48 */
  assert_int_equal(workspace_for(100, 1, 16, 3, 1), 816);       /* lcm(16, 3) = 48 */
  assert_int_equal(workspace_for(101, 1, 16, 3, 8), 816);       /* lcm(16, 24) = 48: 808 -> 816 */
  assert_int_equal(workspace_for(131072, 8, 16, 3, 16), 65568); /* lcm(16, 48) = 48 */
}

/* ---- hand-checked plans ------------------------------------------------------------------- */

static attn_builder_t* chunk_builder(int32_t block, int32_t workspace, int32_t dcp,
                                     int32_t interleave) {
  attn_kv_cache_spec_t spec = ts_mla_spec(block);
  attn_builder_config_t c = mla_config();
  c.mla_chunked_prefill_workspace_size = workspace;
  c.decode_context_parallel_size = dcp;
  c.cp_kv_cache_interleave_size = interleave;
  return ts_builder("TRITON_MLA", &spec, &c);
}

/* One prefill with 250 tokens of context, block 16, a 64-row workspace: four chunks of one
 * request, 64, 64, 64 and 58 rows from 0, 64, 128, 192; every one after the first continues. */
static void test_many_chunks(void** state) {
  static const int32_t q[1] = {6}, s[1] = {256};
  attn_builder_t* b = chunk_builder(16, 64, 1, 1);
  ts_batch* batch = ts_batch_make(q, s, 1, 16, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_chunked_context_num_chunks"), 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_seq_lens", (int32_t[]){64, 64, 64, 58}, 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_starts", (int32_t[]){0, 64, 128, 192}, 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_is_continuation", (int32_t[]){0, 1, 1, 1}, 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens",
                (int32_t[]){0, 64, 0, 64, 0, 64, 0, 58}, 8);
  ts_expect_i32(m, "prefill_chunked_context_chunk_query_start_loc",
                (int32_t[]){0, 6, 0, 6, 0, 6, 0, 6}, 8);
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_offsets", (int32_t[]){0, 64, 128, 192, 250},
                5);
  ts_expect_i32(m, "prefill_chunked_context_chunk_continuation_token_end", (int32_t[]){6, 6, 6, 6},
                4);
  ts_expect_i32(m, "prefill_query_start_loc", (int32_t[]){0, 6}, 2);
  expect_mla_chunks(m, batch->qsl, batch->seq, 1, 64, 16, 1, 1);
  {
    /* fresh prefills have no context: no chunked context at all */
    static const int32_t q2[2] = {6, 9}, s2[2] = {6, 9};
    ts_batch* fresh = ts_batch_make(q2, s2, 2, 16, 0, -1);
    ASSERT_OK(attn_build(b, 0, &fresh->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_prefills"), 2);
    ts_expect_i32(m, "prefill_query_start_loc", (int32_t[]){0, 6, 15}, 3);
    assert_null(ts_tensor(m, "prefill_chunked_context_chunk_cu_seq_lens"));
    assert_null(ts_tensor(m, "prefill_chunked_context_context_lens"));
    assert_null(ts_tensor(m, "prefill_chunked_context_empty_token_slices"));
    {
      attn_field_t f = ATTN_FIELD_INIT;
      ASSERT_OK(attn_metadata_get(m, "prefill_chunked_context_num_chunks", &f));
      assert_int_equal(f.kind, ATTN_FIELD_NONE);
    }
    ts_batch_free(fresh);
  }
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* Block 16, a 128-row workspace, three prefills of 4, 3 and 5 tokens onto contexts of 40, 200
 * and 50 (prefill query_start_loc [0, 4, 7, 12]):
 *   chunk 0: request 0 whole (40 rows); request 1 needs 200 > 88 left: the longest multiple of
 *     16 within min(128, round_down(199, 16) = 192) that fits 88 is 80: (1, 0, 80). 120 rows.
 *   chunk 1: request 1 continues from 80: 120 rows fit; request 2's 50 do not fit the 8 rows
 *     left and round_down(49, 16) = 48 > 8: no piece, the chunk ends. is_continuation.
 *   chunk 2: request 2 whole.
 * Concatenated: cu_seq_lens [0, 40, 120 | 0, 120 | 0, 50], query_start_loc [0, 4, 7 | 0, 3 |
 * 0, 5], starts [0, 0 | 80 | 0], seq_lens [40, 80 | 120 | 50]; token_to_seq 40 x 0, 80 x 1 |
 * 120 x 0 | 50 x 0. */
static void test_split_with_continuation(void** state) {
  static const int32_t q[3] = {4, 3, 5}, s[3] = {44, 203, 55};
  attn_builder_t* b = chunk_builder(16, 128, 1, 1);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_metadata_t* m = NULL;
  int32_t tts[290];
  int i;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_chunked_context_num_chunks"), 3);
  ts_expect_i32(m, "prefill_chunked_context_context_lens", (int32_t[]){40, 200, 50}, 3);
  ts_expect_i32(m, "prefill_chunked_context_context_lens_list", (int32_t[]){40, 200, 50}, 3);
  assert_int_equal(ts_tensor(m, "prefill_chunked_context_empty_token_slices")->shape[0], 0);
  ts_expect_i32(m, "prefill_chunked_context_chunk_request_start", (int32_t[]){0, 1, 2}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_request_end", (int32_t[]){2, 2, 3}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_start", (int32_t[]){0, 4, 7}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_end", (int32_t[]){7, 7, 12}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_continuation_token_end", (int32_t[]){4, 7, 12},
                3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_is_continuation", (int32_t[]){0, 1, 0}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_num_context_tokens", (int32_t[]){120, 120, 50},
                3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_num_local_context_tokens",
                (int32_t[]){120, 120, 50}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_max_query_len", (int32_t[]){4, 3, 5}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_max_seq_len", (int32_t[]){80, 120, 50}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_all_rows_active", (int32_t[]){1, 1, 1}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_request_offsets", (int32_t[]){0, 2, 3, 4}, 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_boundary_offsets", (int32_t[]){0, 3, 5}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_offsets", (int32_t[]){0, 120, 240, 290}, 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens",
                (int32_t[]){0, 40, 120, 0, 120, 0, 50}, 7);
  ts_expect_i32(m, "prefill_chunked_context_chunk_query_start_loc",
                (int32_t[]){0, 4, 7, 0, 3, 0, 5}, 7);
  ts_expect_i32(m, "prefill_chunked_context_chunk_starts", (int32_t[]){0, 0, 80, 0}, 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_seq_lens", (int32_t[]){40, 80, 120, 50}, 4);
  for (i = 0; i < 290; ++i) tts[i] = i >= 40 && i < 120 ? 1 : 0;
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_to_seq", tts, 290);
  assert_null(ts_tensor(m, "prefill_chunked_context_chunk_local_token_offsets"));
  assert_null(ts_tensor(m, "prefill_chunked_context_chunk_local_starts"));
  expect_mla_chunks(m, batch->qsl, batch->seq, 3, 128, 16, 1, 1);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* vLLM 0.33 takes the prefills' contexts from seq_lens_cpu_upper_bound, not the exact lengths:
 * the batch above with request 2's bound at 60 (an async spec-decode row with optimistic drafts;
 * exact 55) plans contexts [40, 200, 55]: chunk 0 = 40 + the first 80 of request 1, chunk 1 =
 * its last 120 (8 rows left: request 2 needs a 16-aligned piece), chunk 2 = request 2's 55. */
static void test_contexts_from_upper_bound(void** state) {
  static const int32_t q[3] = {4, 3, 5}, s[3] = {44, 203, 55};
  static int32_t bound[3] = {44, 203, 60};
  static int64_t n3[1] = {3};
  attn_builder_t* b = chunk_builder(16, 128, 1, 1);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_tensor_t bound_t = ts_host_tensor(bound, 1, n3, ATTN_DTYPE_INT, 32);
  attn_metadata_t* m = NULL;
  int32_t tts[295];
  int i;
  (void)state;
  batch->common.seq_lens_cpu_upper_bound = &bound_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i32(m, "prefill_chunked_context_context_lens", (int32_t[]){40, 200, 55}, 3);
  ts_expect_i32(m, "prefill_chunked_context_context_lens_list", (int32_t[]){40, 200, 55}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_seq_lens", (int32_t[]){40, 80, 120, 55}, 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_num_context_tokens", (int32_t[]){120, 120, 55},
                3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_offsets", (int32_t[]){0, 120, 240, 295}, 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens",
                (int32_t[]){0, 40, 120, 0, 120, 0, 55}, 7);
  for (i = 0; i < 295; ++i) tts[i] = i >= 40 && i < 120 ? 1 : 0;
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_to_seq", tts, 295);
  expect_mla_chunks(m, batch->qsl, bound, 3, 128, 16, 1, 1);
  /* the exact lengths decide nothing else: the same batch without the bound plans 50 */
  batch->common.seq_lens_cpu_upper_bound = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i32(m, "prefill_chunked_context_context_lens", (int32_t[]){40, 200, 50}, 3);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* DCP 2 with interleave 4, block 16, a 96-row workspace: alignment lcm(16, 8) = 16, a budget of
 * 96 // 2 = 48 local rows, padded_rows(r) = cdiv(r, 8) * 4. Prefills of 2 and 3 tokens onto
 * contexts of 70 and 60 (prefill query_start_loc [0, 2, 5]):
 *   chunk 0: request 0 whole (cdiv(70, 8) * 4 = 36 rows); request 1 needs 32 > 12 left: 16
 *     tokens take 8 rows, 32 take 16: (1, 0, 16), 44 rows.
 *   chunk 1: request 1 from 16: padded_rows(60) - padded_rows(16) = 32 - 8 = 24 rows.
 * starts are local (padded_rows of the start): [0, 0 | 8]; padded_local_seq_lens [36, 8 | 24];
 * local_context_lens_allranks (get_dcp_local_seq_lens of the whole contexts, both ranks):
 * 70 -> [36, 34], 60 -> [32, 28], per entry. */
static void test_dcp_interleave(void** state) {
  static const int32_t q[2] = {2, 3}, s[2] = {72, 63};
  attn_builder_t* b = chunk_builder(16, 96, 2, 4);
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
  attn_metadata_t* m = NULL;
  int32_t tts[130], ltts[68];
  int i;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_chunked_context_num_chunks"), 2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_seq_lens", (int32_t[]){70, 16, 44}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_starts", (int32_t[]){0, 0, 8}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_local_starts", (int32_t[]){0, 0, 8}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_padded_local_seq_lens", (int32_t[]){36, 8, 24},
                3);
  expect_i32_matrix(m, "prefill_chunked_context_chunk_local_context_lens_allranks",
                    (int32_t[]){36, 34, 32, 28, 32, 28}, 3, 2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens", (int32_t[]){0, 70, 86, 0, 44}, 5);
  ts_expect_i32(m, "prefill_chunked_context_chunk_padded_local_cu_seq_lens",
                (int32_t[]){0, 36, 44, 0, 24}, 5);
  ts_expect_i32(m, "prefill_chunked_context_chunk_query_start_loc", (int32_t[]){0, 2, 5, 0, 3}, 5);
  ts_expect_i32(m, "prefill_chunked_context_chunk_num_context_tokens", (int32_t[]){86, 44}, 2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_num_local_context_tokens", (int32_t[]){44, 24},
                2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_is_continuation", (int32_t[]){0, 1}, 2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_continuation_token_end", (int32_t[]){2, 5}, 2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_offsets", (int32_t[]){0, 86, 130}, 3);
  ts_expect_i32(m, "prefill_chunked_context_chunk_local_token_offsets", (int32_t[]){0, 44, 68}, 3);
  for (i = 0; i < 130; ++i) tts[i] = i >= 70 && i < 86 ? 1 : 0;
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_to_seq", tts, 130);
  for (i = 0; i < 68; ++i) ltts[i] = i >= 36 && i < 44 ? 1 : 0;
  ts_expect_i32(m, "prefill_chunked_context_chunk_padded_local_token_to_seq", ltts, 68);
  expect_mla_chunks(m, batch->qsl, batch->seq, 2, 96, 16, 2, 4);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* ---- the prefill metadata's 0.33 fields -------------------------------------------------- */

static void test_prefill_fields(void** state) {
  static const int32_t q[3] = {1, 4, 0}, s[3] = {9, 30, 0};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.model_dtype = ATTN_KV_DTYPE_FLOAT16;
  b = ts_builder("TRITON_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  /* one decode, then the prefill of 4 onto 26 and a zero-length padding row (a prefill too) */
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "causal"), 1);
  assert_int_equal(ts_int(m, "prefill_q_data_type"), ATTN_KV_DTYPE_FLOAT16);
  assert_int_equal(ts_int(m, "prefill_output_dtype"), ATTN_KV_DTYPE_FLOAT16);
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 0); /* FLASH_ATTN on sm90 */
  assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 0);
  ts_expect_i32(m, "prefill_query_lens_cpu", (int32_t[]){4, 0}, 2);
  assert_int_equal(ts_tensor(m, "prefill_query_lens_cpu")->device.device_type, ATTN_DEVICE_CPU);
  /* the padding row has no context: one chunk, and all_rows_active is about its own rows */
  ts_expect_i32(m, "prefill_chunked_context_chunk_all_rows_active", (int32_t[]){1}, 1);
  expect_i32_matrix(m, "prefill_chunked_context_empty_token_slices", (int32_t[]){4, 4}, 1, 2);
  attn_builder_destroy(b);
  /* 10.x with DeepSeek-V4-like dimensions (192, 64, 256): TRTLLM_RAGGED first */
  c.device_capability = 100;
  c.mla_qk_nope_head_dim = 192;
  c.mla_v_head_dim = 256;
  b = ts_builder("TRITON_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 2);
  attn_builder_destroy(b);
  c.mla_qk_nope_head_dim = 128;
  c.mla_v_head_dim = 128;
  b = ts_builder("TRITON_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 0); /* FLASH_ATTN first otherwise */
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* ---- bad input ---------------------------------------------------------------------------- */

static void test_bad_input(void** state) {
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b = NULL;
  (void)state;
  c.mla_chunked_prefill_workspace_size = 32; /* below one block of 64 */
  ASSERT_ERROR(attn_builder_create("TRITON_MLA", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->mla_chunked_prefill_workspace_size=32 is smaller than the context chunk "
               "alignment of 64 rows");
  assert_null(b);
  spec = ts_mla_spec(16);
  c.mla_chunked_prefill_workspace_size = 42; /* DCP 3, interleave 8: alignment lcm(16, 24) */
  c.decode_context_parallel_size = 3;
  c.cp_kv_cache_interleave_size = 8;
  ASSERT_ERROR(attn_builder_create("TRITON_MLA", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "is smaller than the context chunk alignment of 48 rows");
  c.mla_chunked_prefill_workspace_size = 50; /* >= 48 but not a multiple of 3 */
  ASSERT_ERROR(attn_builder_create("TRITON_MLA", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "the MLA chunked-prefill workspace of 50 tokens is not a multiple of "
               "config->decode_context_parallel_size=3");
  c.mla_chunked_prefill_workspace_size = 51; /* accepted: 51 // 48 * 48 = 48 rows a chunk */
  b = ts_builder("TRITON_MLA", &spec, &c);
  {
    /* 100 tokens of context in chunks of 48: 48, 48, 4 */
    static const int32_t q[1] = {4}, s[1] = {104};
    ts_batch* one = ts_batch_make(q, s, 1, 16, 0, -1);
    attn_metadata_t* m = NULL;
    ASSERT_OK(attn_build(b, 0, &one->common, 0, &m, NULL));
    ts_expect_i32(m, "prefill_chunked_context_chunk_seq_lens", (int32_t[]){48, 48, 4}, 3);
    ts_expect_i32(m, "prefill_chunked_context_chunk_local_starts", (int32_t[]){0, 16, 32}, 3);
    expect_mla_chunks(m, one->qsl, one->seq, 1, 51, 16, 3, 8);
    ts_batch_free(one);
  }
  attn_builder_destroy(b);
}

/* ---- seeded random batches against the naive restatement ---------------------------------- */

static void test_random_batches(void** state) {
  uint64_t seed = 33;
  int iter, several = 0, continued = 0, dcp_chunks = 0, none = 0;
  (void)state;
  for (iter = 0; iter < 1500; ++iter) {
    static const int32_t blocks[5] = {1, 2, 16, 32, 64}, dcps[5] = {1, 1, 2, 3, 4};
    static const int32_t interleaves[4] = {1, 2, 4, 8};
    const int32_t block = blocks[ts_rand_range(&seed, 0, 4)];
    const int32_t dcp = dcps[ts_rand_range(&seed, 0, 4)];
    int32_t il = dcp > 1 ? interleaves[ts_rand_range(&seed, 0, 3)] : 1;
    int64_t alignment, workspace, n, r;
    attn_kv_cache_spec_t spec = ts_mla_spec(block);
    attn_builder_config_t c = mla_config();
    attn_builder_t* b;
    attn_metadata_t* m = NULL;
    int32_t q[12], s[12], local[12], bound[12], max_bound = 0;
    int64_t local_shape[1];
    attn_tensor_t local_t, bound_t;
    ts_batch* batch;
    naive_coverage cov;
    while (block % il != 0) il /= 2; /* libattn's config check: interleave divides the block */
    alignment = block;
    if (dcp > 1) alignment = alignment / naive_gcd(alignment, (int64_t)dcp * il) * dcp * il;
    workspace = alignment * ts_rand_range(&seed, 1, 6);
    if (ts_rand_range(&seed, 0, 3) == 0) workspace += ts_rand_range(&seed, 0, alignment - 1);
    if (dcp > 1) workspace = workspace / dcp * dcp;
    if (workspace < alignment) workspace = alignment;
    c.max_num_seqs = 12;
    c.max_model_len = (int32_t)(4 * workspace + 64);
    c.max_num_batched_tokens = 4096;
    c.mla_chunked_prefill_workspace_size = (int32_t)workspace;
    c.decode_context_parallel_size = dcp;
    c.cp_kv_cache_interleave_size = il;
    b = ts_builder("TRITON_MLA", &spec, &c);
    n = ts_rand_range(&seed, 1, 12);
    for (r = 0; r < n; ++r) {
      const int32_t ctx =
          ts_rand_range(&seed, 0, 3) == 0 ? 0 : (int32_t)ts_rand_range(&seed, 1, 3 * workspace);
      q[r] = (int32_t)ts_rand_range(&seed, 2, 40); /* > threshold 1: all prefills */
      s[r] = q[r] + ctx;
      local[r] = naive_dcp_local(s[r], dcp, 0, il);
      /* vLLM 0.33's optimistic upper bound (drafts assumed accepted) on some rows */
      bound[r] = s[r] + (ts_rand_range(&seed, 0, 3) == 0 ? (int32_t)ts_rand_range(&seed, 1, 3) : 0);
      if (bound[r] > max_bound) max_bound = bound[r];
    }
    batch = ts_batch_make(q, s, n, block, 0, -1);
    local_shape[0] = n;
    local_t = ts_host_tensor(local, 1, local_shape, ATTN_DTYPE_INT, 32);
    bound_t = ts_host_tensor(bound, 1, local_shape, ATTN_DTYPE_INT, 32);
    if (dcp > 1) batch->common.dcp_local_seq_lens = &local_t;
    batch->common.seq_lens_cpu_upper_bound = &bound_t;
    batch->common.max_seq_len = max_bound;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_prefills"), n);
    cov = expect_mla_chunks(m, batch->qsl, bound, n, workspace, block, dcp, il);
    several += cov.chunks > 1;
    continued += cov.continuation;
    dcp_chunks += cov.chunks > 0 && cov.dcp;
    none += cov.chunks == 0;
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
  printf(
      "random batches: %d with several chunks, %d with a continuation, %d with DCP chunks, "
      "%d without context\n",
      several, continued, dcp_chunks, none);
  assert_true(several > 300);
  assert_true(continued > 300);
  assert_true(dcp_chunks > 300);
  assert_true(none > 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_workspace_size),          cmocka_unit_test(test_many_chunks),
      cmocka_unit_test(test_split_with_continuation), cmocka_unit_test(test_dcp_interleave),
      cmocka_unit_test(test_prefill_fields),          cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_contexts_from_upper_bound), cmocka_unit_test(test_random_batches),
  };
  return cmocka_run_group_tests_name("mla_chunks", tests, NULL, NULL);
}
