/* The MLA family (FLASHMLA, FLASH_ATTN_MLA, CUTLASS_MLA, FLASHINFER_MLA, TRITON_MLA, and
 * TOKENSPEED_MLA in test_tokenspeed_mla): class
 * levels and reorder thresholds with and without speculative tokens and DCP, the decode/prefill
 * split, a hand-checked batch with its chunked context (tests/c/test_mla_chunks.c has the
 * chunked context's own cases: the workspace, splits, DCP, bad input), the variants' decode fields (FA3 scheduler inputs, FlashMLA scheduler inputs and its fixed
 * batch-invariant schedule), the prefill paths, capture and drafting, update_block_table
 * (unsupported, as in vLLM), bad input with its messages, and seeded random batches against a
 * naive computation written for this test. */
#include "mla_chunks_naive.h"
#include "test_support.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* 4 sequences, 2048 tokens, max_model_len 1024, 32 query heads, sm90. */
static attn_builder_config_t mla_config(void) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 1024;
  return c;
}

static const char* const kVariants[5] = {"FLASHMLA", "FLASH_ATTN_MLA", "CUTLASS_MLA",
                                         "FLASHINFER_MLA", "TRITON_MLA"};
static const int32_t kBlocks[5] = {64, 16, 128, 64, 16}; /* a block size each accepts */

static const int32_t* data_of(const attn_tensor_t* t) {
  return (const int32_t*)((const char*)t->data + t->byte_offset);
}

static void expect_bool(const attn_metadata_t* m, const char* name, int value) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  if (f.kind != ATTN_FIELD_BOOL) fail_msg("%s has kind %d, expected BOOL", name, f.kind);
  assert_int_equal(f.int_value, value);
}

/* Asserts a 2-D int32 tensor field equals `expected` (rows x cols, row-major). */
static void expect_i32_2d(const attn_metadata_t* m, const char* name, const int32_t* expected,
                          int64_t rows, int64_t cols) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t r, k;
  if (t == NULL) fail_msg("field %s is None", name);
  if (t->ndim != 2) fail_msg("%s has %d dimensions, expected 2", name, t->ndim);
  if (t->shape[0] != rows || t->shape[1] != cols)
    fail_msg("%s has shape (%lld, %lld), expected (%lld, %lld)", name, (long long)t->shape[0],
             (long long)t->shape[1], (long long)rows, (long long)cols);
  for (r = 0; r < rows; ++r)
    for (k = 0; k < cols; ++k) {
      const int32_t got = data_of(t)[r * t->strides[0] + k * t->strides[1]];
      if (got != expected[r * cols + k])
        fail_msg("%s[%lld][%lld] = %d, expected %d", name, (long long)r, (long long)k, got,
                 expected[r * cols + k]);
    }
}

/* A view of rows [first, first + n) of a 2-D table must alias the batch's block table. */
static void expect_rows_of(const attn_metadata_t* m, const char* name, const ts_batch* b,
                           int64_t first, int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  if (t == NULL) fail_msg("field %s is None", name);
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], n);
  assert_int_equal(t->shape[1], b->width);
  assert_ptr_equal(data_of(t), b->bt + first * b->width);
}

static int32_t threshold_of(attn_builder_t* b) {
  int32_t t = -1;
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &t));
  return t;
}

static int32_t dcp_local(int64_t len, int32_t dcp, int32_t rank, int32_t interleave) {
  const int64_t base = len / interleave / dcp * interleave;
  int64_t rem = len - base * dcp - (int64_t)rank * interleave;
  if (rem < 0) rem = 0;
  if (rem > interleave) rem = interleave;
  return (int32_t)(base + rem);
}

/* ---- class levels and thresholds -------------------------------------------------------- */

static void test_levels_and_thresholds(void** state) {
  static const int32_t levels[5] = {ATTN_CG_UNIFORM_BATCH, ATTN_CG_UNIFORM_BATCH,
                                    ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE, ATTN_CG_ALWAYS,
                                    ATTN_CG_UNIFORM_BATCH};
  /* vLLM's class reorder_batch_threshold, then with 3 speculative tokens (spec-as-decode for
   * UNIFORM / VARLEN query support), with parallel drafting, with DCP 2 (1 unless the variant
   * supports DCP with varlen), with DCP 2 and interleave 2. Parallel drafting adds k more on
   * model runner V1 only (vLLM 0.33's max_decode_query_len; config->use_v2_model_runner). */
  static const int32_t plain[5] = {128, 512, 1, 1, 1};
  static const int32_t spec3[5] = {128, 512, 1, 4, 4};
  static const int32_t parallel[5] = {128, 512, 1, 7, 7};
  static const int32_t parallel_v2[5] = {128, 512, 1, 4, 4};
  static const int32_t dcp2[5] = {1, 512, 1, 4, 1};
  static const int32_t dcp2_interleave2[5] = {1, 1, 1, -1, 1}; /* FLASHINFER_MLA refuses it */
  int v, cap;
  (void)state;
  for (v = 0; v < 5; ++v) {
    const attn_kv_cache_spec_t spec = ts_mla_spec(kBlocks[v]);
    attn_builder_config_t c = mla_config();
    attn_builder_t* b;
    int32_t level = -1, update = 7;
    /* the classmethod needs no builder and is the same on every device */
    for (cap = 80; cap <= 100; cap += 10) {
      c.device_capability = cap;
      ASSERT_OK(attn_backend_cudagraph_support(kVariants[v], &spec, &c, &level));
      assert_int_equal(level, levels[v]);
    }
    c = mla_config();
    b = ts_builder(kVariants[v], &spec, &c);
    assert_string_equal(attn_builder_backend_name(b), kVariants[v]);
    ASSERT_OK(attn_builder_cudagraph_support(b, &level));
    assert_int_equal(level, levels[v]);
    assert_int_equal(threshold_of(b), plain[v]);
    ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
    assert_int_equal(update, 0);
    attn_builder_destroy(b);

    c.num_speculative_tokens = 3;
    b = ts_builder(kVariants[v], &spec, &c);
    assert_int_equal(threshold_of(b), spec3[v]);
    attn_builder_destroy(b);
    c.parallel_drafting = 1;
    b = ts_builder(kVariants[v], &spec, &c);
    assert_int_equal(threshold_of(b), parallel[v]);
    attn_builder_destroy(b);
    c.use_v2_model_runner = 1;
    b = ts_builder(kVariants[v], &spec, &c);
    assert_int_equal(threshold_of(b), parallel_v2[v]);
    attn_builder_destroy(b);
    c.use_v2_model_runner = 0;
    c.parallel_drafting = 0;
    c.decode_context_parallel_size = 2;
    b = ts_builder(kVariants[v], &spec, &c);
    assert_int_equal(threshold_of(b), dcp2[v]);
    attn_builder_destroy(b);
    c.cp_kv_cache_interleave_size = 2;
    if (dcp2_interleave2[v] < 0) {
      ASSERT_ERROR(attn_builder_create(kVariants[v], &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
                   "FLASHINFER_MLA with decode context parallelism needs "
                   "config->cp_kv_cache_interleave_size=1, got 2");
    } else {
      b = ts_builder(kVariants[v], &spec, &c);
      assert_int_equal(threshold_of(b), dcp2_interleave2[v]);
      attn_builder_destroy(b);
    }
  }
  { /* FLASHMLA: a draft longer than the class threshold raises it (max(128, 1 + 200)) */
    const attn_kv_cache_spec_t spec = ts_mla_spec(64);
    attn_builder_config_t c = mla_config();
    attn_builder_t* b;
    c.num_speculative_tokens = 200;
    b = ts_builder("FLASHMLA", &spec, &c);
    assert_int_equal(threshold_of(b), 201);
    attn_builder_destroy(b);
  }
}

/* ---- a hand-checked batch --------------------------------------------------------------- */

/* TRITON_MLA, block 16, a 128-token workspace. Two decodes (seq 10, 33) and three prefills:
 * 4 tokens onto a context of 100, a fresh prefill of 3, 5 tokens onto a context of 40.
 *   query_start_loc [0, 1, 2, 6, 9, 14]; split at threshold 1: 2 decodes (2 tokens), 3 prefills.
 *   contexts [100, 0, 40]: the fresh prefill ends the first run of prefills with context, so
 *   chunk 0 is request 0's whole context (100 <= 128 rows) and chunk 1 request 2's (40).
 *   Concatenated: cu_seq_lens [0, 100, 0, 40], query_start_loc [0, 4, 0, 5], starts [0, 0],
 *   seq_lens [100, 40], token_to_seq 140 zeros; empty_token_slices [[4, 7]]. The prefill
 *   query_start_loc is rebased: [0, 4, 7, 12]. */
static void test_hand_checked(void** state) {
  static const int32_t q[5] = {1, 1, 4, 3, 5}, s[5] = {10, 33, 104, 3, 45};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 5, 16, 0, -1);
  attn_metadata_t* m = NULL;
  int32_t tts[140];
  int i;
  (void)state;
  c.max_num_seqs = 8;
  c.mla_chunked_prefill_workspace_size = 128; /* the floor: 8 sequences x 16 */
  b = ts_builder("TRITON_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "TRITON_MLA");
  assert_int_equal(ts_int(m, "num_reqs"), 5);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 14);
  assert_int_equal(ts_int(m, "max_query_len"), 5);
  assert_int_equal(ts_int(m, "max_seq_len"), 104);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  assert_int_equal(ts_int(m, "head_dim"), 576);
  assert_int_equal(ts_int(m, "chunked_prefill_workspace_size"), 128);
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  /* decode: views of the batch's first two rows */
  expect_rows_of(m, "decode_block_table", batch, 0, 2);
  ts_expect_i32(m, "decode_seq_lens", (int32_t[]){10, 33}, 2);
  assert_ptr_equal(ts_tensor(m, "decode_seq_lens")->data, batch->seq);
  ts_expect_none(m, "decode_dcp_tot_seq_lens");
  /* prefill */
  expect_rows_of(m, "prefill_block_table", batch, 2, 3);
  ts_expect_i32(m, "prefill_query_start_loc", (int32_t[]){0, 4, 7, 12}, 4);
  assert_int_equal(ts_int(m, "prefill_max_query_len"), 5);
  ts_expect_none(m, "prefill_query_seq_lens");
  ts_expect_none(m, "prefill_num_qo_heads");
  /* the chunked context */
  assert_int_equal(ts_int(m, "prefill_chunked_context_num_chunks"), 2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens", (int32_t[]){0, 100, 0, 40}, 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_query_start_loc", (int32_t[]){0, 4, 0, 5}, 4);
  ts_expect_i32(m, "prefill_chunked_context_chunk_starts", (int32_t[]){0, 0}, 2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_seq_lens", (int32_t[]){100, 40}, 2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_request_start", (int32_t[]){0, 2}, 2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_end", (int32_t[]){4, 12}, 2);
  expect_i32_2d(m, "prefill_chunked_context_empty_token_slices", (int32_t[]){4, 7}, 1, 2);
  for (i = 0; i < 140; ++i) tts[i] = 0;
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_to_seq", tts, 140);
  assert_int_equal(ts_tensor(m, "prefill_chunked_context_chunk_seq_lens")->device.device_type,
                   ATTN_DEVICE_CPU);
  ts_expect_none(m, "prefill_chunked_context_chunk_padded_local_seq_lens");
  ts_expect_none(m, "prefill_chunked_context_chunk_local_context_lens_allranks");
  ts_expect_none(m, "prefill_chunked_context_chunk_padded_local_cu_seq_lens");
  ts_expect_none(m, "prefill_chunked_context_chunk_local_starts");
  expect_mla_chunks(m, batch->qsl + 2, batch->seq + 2, 3, 128, 16, 1, 1);
  {
    /* drafting is build(fast_build=True): the same metadata for MLA */
    attn_metadata_t* d = NULL;
    ASSERT_OK(attn_build_for_drafting(b, &batch->common, 0, &d, NULL));
    ts_expect_i32(d, "prefill_chunked_context_chunk_cu_seq_lens", (int32_t[]){0, 100, 0, 40}, 4);
    assert_int_equal(ts_int(d, "num_decodes"), 2);
  }
  {
    /* kept metadata (attn_metadata_clone) survives the next build */
    attn_metadata_t* kept = NULL;
    static const int32_t q2[1] = {1}, s2[1] = {7};
    ts_batch* next = ts_batch_make(q2, s2, 1, 16, 0, -1);
    ASSERT_ERROR(attn_metadata_clone(m, &kept), ATTN_ERR_INVALID_ARGUMENT,
                 "metadata is stale"); /* the drafting build above replaced m's result */
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    ASSERT_OK(attn_metadata_clone(m, &kept));
    ASSERT_OK(attn_build(b, 0, &next->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_prefills"), 0);
    ts_expect_none(m, "prefill_chunked_context_chunk_cu_seq_lens");
    ts_expect_i32(kept, "prefill_chunked_context_chunk_cu_seq_lens", (int32_t[]){0, 100, 0, 40}, 4);
    ts_expect_i32(kept, "prefill_chunked_context_chunk_seq_lens", (int32_t[]){100, 40}, 2);
    attn_metadata_destroy(kept);
    ts_batch_free(next);
  }
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* ---- decode context parallelism ----------------------------------------------------------- */

/* TRITON_MLA, DCP 2 (rank 0, interleave 1), block 16, a 128-token workspace. Decodes (seq 10,
 * 33) read their rank's lengths from common->dcp_local_seq_lens: 10 -> 5, 33 -> 17 (rank 0
 * holds the odd token). Prefills as in test_hand_checked but the third context is 41; the
 * chunked context (budget 128 / 2 = 64 local rows) is checked against the naive plan, and
 * test_mla_chunks.c has DCP's hand-checked split. max_seq_len becomes cdiv(104, 2) = 52 (the
 * most any rank holds). */
static void test_dcp(void** state) {
  static const int32_t q[5] = {1, 1, 4, 3, 5}, s[5] = {10, 33, 104, 3, 46};
  int32_t local[5] = {5, 17, 0, 0, 0};
  int64_t local_shape[1] = {5};
  attn_tensor_t local_t = ts_host_tensor(local, 1, local_shape, ATTN_DTYPE_INT, 32);
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 5, 16, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.max_num_seqs = 8;
  c.mla_chunked_prefill_workspace_size = 128;
  c.decode_context_parallel_size = 2;
  b = ts_builder("TRITON_MLA", &spec, &c);
  /* decodes under DCP read the local lengths */
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->dcp_local_seq_lens is NULL; TRITON_MLA decodes with "
               "decode_context_parallel_size=2 read this rank's lengths from it");
  assert_null(m);
  batch->common.dcp_local_seq_lens = &local_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "max_seq_len"), 52);
  ts_expect_i32(m, "decode_seq_lens", (int32_t[]){5, 17}, 2);
  ts_expect_i32(m, "decode_dcp_tot_seq_lens", (int32_t[]){10, 33}, 2);
  ts_expect_i32(m, "prefill_chunked_context_chunk_padded_local_cu_seq_lens",
                (int32_t[]){0, 50, 0, 21}, 4);
  expect_i32_2d(m, "prefill_chunked_context_chunk_local_context_lens_allranks",
                (int32_t[]){50, 50, 21, 20}, 2, 2);
  expect_mla_chunks(m, batch->qsl + 2, batch->seq + 2, 3, 128, 16, 2, 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* ---- the variants' decode fields ----------------------------------------------------------- */

/* FLASH_ATTN_MLA (VARLEN, threshold 512): decodes of 1, 3 and 2 tokens and a prefill of 600 onto
 * a context of 100. On sm90 (FA3) the FA3 scheduler inputs are returned; with full CUDA graphs
 * and 6 decode tokens <= the largest capture size (min(2 * 4, 512) = 8) max_num_splits is
 * flash_attn_max_num_splits_for_cuda_graph (32). */
static void test_flash_attn_mla(void** state) {
  static const int32_t q[4] = {1, 3, 2, 600}, s[4] = {20, 50, 7, 700};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 0, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* buf;
  (void)state;
  b = ts_builder("FLASH_ATTN_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 6);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  ts_expect_i32(m, "decode_query_start_loc", (int32_t[]){0, 1, 4, 6}, 4);
  assert_ptr_equal(ts_tensor(m, "decode_query_start_loc")->data, batch->qsl);
  assert_int_equal(ts_int(m, "decode_max_query_len"), 3);
  assert_int_equal(ts_int(m, "decode_max_seq_len"), 700);
  assert_int_equal(ts_int(m, "decode_max_num_splits"), 32);
  ts_expect_none(m, "decode_scheduler_metadata"); /* FA3's output */
  buf = ts_tensor(m, "decode_scheduler_metadata_buffer");
  assert_non_null(buf);
  /* 1 + round_up(max(max_num_seqs 4, largest capture size 8), 4) * 4 */
  assert_int_equal(buf->shape[0], 1 + 8 * 4);
  assert_int_equal(ts_int(m, "decode_scheduler_batch_size"), 3);
  assert_int_equal(ts_int(m, "decode_scheduler_max_seqlen_q"), 3);
  assert_int_equal(ts_int(m, "decode_scheduler_max_seqlen_k"), 700);
  assert_int_equal(ts_int(m, "decode_scheduler_num_heads_q"), 32);
  assert_int_equal(ts_int(m, "decode_scheduler_num_heads_kv"), 1);
  assert_int_equal(ts_int(m, "decode_scheduler_headdim"), 64);
  assert_int_equal(ts_int(m, "decode_scheduler_headdim_v"), 512);
  assert_int_equal(ts_int(m, "decode_scheduler_page_size"), 16);
  assert_int_equal(ts_int(m, "decode_scheduler_qkv_dtype"), ATTN_KV_DTYPE_BFLOAT16);
  assert_int_equal(ts_int(m, "decode_scheduler_num_splits"), 32);
  expect_bool(m, "decode_scheduler_causal", 1);
  ts_expect_i32(m, "decode_scheduler_cache_seqlens", (int32_t[]){20, 50, 7}, 3);
  ts_expect_i32(m, "decode_scheduler_cu_seqlens_q", (int32_t[]){0, 1, 4, 6}, 4);
  /* the prefill: one chunk of its whole context (default workspace 8192) */
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens", (int32_t[]){0, 100}, 2);
  ts_expect_i32(m, "prefill_query_start_loc", (int32_t[]){0, 600}, 2);
  attn_builder_destroy(b);

  /* sm80: FlashAttention 2 has no AOT scheduler and vLLM keeps max_num_splits 0 */
  c.device_capability = 80;
  b = ts_builder("FLASH_ATTN_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "decode_max_num_splits"), 0);
  ts_expect_none(m, "decode_scheduler_batch_size");
  ts_expect_none(m, "decode_scheduler_metadata_buffer");
  attn_builder_destroy(b);
  /* batch invariance: one split */
  c.device_capability = 90;
  c.batch_invariant = 1;
  b = ts_builder("FLASH_ATTN_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "decode_max_num_splits"), 1);
  assert_int_equal(ts_int(m, "decode_scheduler_num_splits"), 1);
  attn_builder_destroy(b);
  /* without full CUDA graphs: no buffer, no splits */
  c.batch_invariant = 0;
  c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_PIECEWISE;
  b = ts_builder("FLASH_ATTN_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "decode_max_num_splits"), 0);
  ts_expect_none(m, "decode_scheduler_metadata_buffer");
  assert_int_equal(ts_int(m, "decode_scheduler_batch_size"), 3);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* FLASH_ATTN_MLA_XPU (vLLM 0.33's XPUFlashAttnMLAMetadataBuilder): the same batch as
 * test_flash_attn_mla's, on the config where FLASH_ATTN_MLA plans FA3's schedule (sm90, full
 * graphs): SINGLE_ONLY with threshold 1, so only the 1-token request is a decode (then 3
 * prefills: 3 + 2 + 600 tokens); decode_query_start_loc [0, 1], no scheduler inputs, no
 * scheduler buffer, max_num_splits 0 (FlashAttention 2 on XPU), 1 when batch invariant.
 * UNIFORM_SINGLE_TOKEN_DECODE; threshold 1 also with spec decode; block sizes multiples of 64. */
static void test_flash_attn_mla_xpu(void** state) {
  static const int32_t q[4] = {1, 3, 2, 600}, s[4] = {20, 50, 7, 700};
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 4, 64, 0, -1);
  attn_metadata_t* m = NULL;
  int32_t level = -1;
  (void)state;
  b = ts_builder("FLASH_ATTN_MLA_XPU", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  assert_int_equal(threshold_of(b), 1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 1);
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  ts_expect_i32(m, "decode_query_start_loc", (int32_t[]){0, 1}, 2);
  assert_int_equal(ts_int(m, "decode_max_query_len"), 1);
  assert_int_equal(ts_int(m, "decode_max_seq_len"), 700); /* the batch's, as FLASH_ATTN_MLA's */
  assert_int_equal(ts_int(m, "decode_max_num_splits"), 0);
  ts_expect_none(m, "decode_scheduler_metadata");
  ts_expect_none(m, "decode_scheduler_metadata_buffer");
  ts_expect_none(m, "decode_scheduler_batch_size");
  ts_expect_none(m, "decode_scheduler_cu_seqlens_q");
  attn_builder_destroy(b);
  c.batch_invariant = 1;
  b = ts_builder("FLASH_ATTN_MLA_XPU", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "decode_max_num_splits"), 1);
  ts_expect_none(m, "decode_scheduler_num_splits");
  attn_builder_destroy(b);
  c.batch_invariant = 0;
  c.num_speculative_tokens = 2;
  b = ts_builder("FLASH_ATTN_MLA_XPU", &spec, &c);
  assert_int_equal(threshold_of(b), 1);
  attn_builder_destroy(b);
  c.num_speculative_tokens = 0;
  spec = ts_mla_spec(16);
  b = (attn_builder_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN_MLA_XPU", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "FLASH_ATTN_MLA_XPU needs kv_cache_spec->block_size to be a multiple of 64, got 16");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  ts_batch_free(batch);
}

/* FLASHMLA (UNIFORM, threshold 128), block 64: three 2-token decodes (spec decode) and a
 * 130-token prefill. FlashMLA's get_mla_metadata inputs: the decodes' seq_lens,
 * num_q_tokens_per_head_k = 2 * 32 heads, num_heads_k = 1. */
static void test_flashmla(void** state) {
  static const int32_t q[4] = {2, 2, 2, 130}, s[4] = {9, 70, 2, 300};
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 4, 64, 16, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  b = ts_builder("FLASHMLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 6);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  ts_expect_i32(m, "decode_scheduler_cache_seqlens", (int32_t[]){9, 70, 2}, 3);
  assert_int_equal(ts_int(m, "decode_scheduler_num_q_tokens_per_head_k"), 64);
  assert_int_equal(ts_int(m, "decode_scheduler_num_heads_k"), 1);
  expect_bool(m, "decode_scheduler_is_fp8_kvcache", 0);
  ts_expect_none(m, "decode_scheduler_metadata");
  ts_expect_none(m, "decode_tile_scheduler_metadata");
  ts_expect_none(m, "decode_num_splits");
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens", (int32_t[]){0, 170}, 2);
  attn_builder_destroy(b);

  /* batch-invariant decode: one partition, [0, 0, B - 1, width / 64, 0, 0, 0, 0] */
  c.batch_invariant = 1;
  b = ts_builder("FLASHMLA", &spec, &c);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "FLASHMLA's batch-invariant decode needs the block table width (16 columns) to be "
               "a multiple of 64");
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 4, 64, 128, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_i32_2d(m, "decode_tile_scheduler_metadata", (int32_t[]){0, 0, 2, 2, 0, 0, 0, 0}, 1, 8);
  ts_expect_i32(m, "decode_num_splits", (int32_t[]){0, 0, 0, 0}, 4);
  attn_builder_destroy(b);
  /* an fp8 cache keeps FlashMLA's own (fp8) schedule; under full CUDA graphs its output goes
   * into persistent (num_SMs, 8) and (max_num_seqs + 1) buffers (test_mla_decode.c) */
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  c.num_sms = 132;
  b = ts_builder("FLASHMLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_bool(m, "decode_scheduler_is_fp8_kvcache", 1);
  ts_expect_none(m, "decode_tile_scheduler_metadata");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* FLASHINFER_MLA with 3 speculative tokens: decodes of 4 tokens (1 + 3) stay decodes. */
static void test_flashinfer_mla_spec_decode(void** state) {
  static const int32_t q[3] = {4, 4, 9}, s[3] = {40, 12, 9};
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 64, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.num_speculative_tokens = 3;
  b = ts_builder("FLASHINFER_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 8);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  ts_expect_i32(m, "decode_seq_lens", (int32_t[]){40, 12}, 2);
  ts_expect_none(m, "prefill_chunked_context_chunk_cu_seq_lens"); /* the prefill is fresh */
  attn_builder_destroy(b);
  /* without speculative tokens the threshold is 1: all three are prefills */
  c.num_speculative_tokens = 0;
  b = ts_builder("FLASHINFER_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  /* contexts [36, 8, 0]: one chunk of the first two */
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens", (int32_t[]){0, 36, 44}, 3);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* vLLM 0.33's prefill backends (ABI 1.7 config->mla_prefill_backend): automatic FLASH_ATTN
 * (TRTLLM_RAGGED on 10.x for (192, 64, 256)), an explicit choice checked as
 * get_mla_prefill_backend does, FlashInfer's plan inputs on FLASHINFER, the device query
 * lengths on TRTLLM_RAGGED and TOKENSPEED_MLA, FP8 queries under
 * use_prefill_query_quantization; the 0.13 flags are refused. */
static void test_prefill_paths(void** state) {
  static const int32_t q[3] = {1, 5, 7}, s[3] = {8, 25, 7};
  attn_kv_cache_spec_t spec = ts_mla_spec(128);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 128, 0, -1);
  attn_metadata_t* m = NULL;
  attn_field_t f = ATTN_FIELD_INIT;
  int k;
  (void)state;
  c.device_capability = 100;
  /* automatic on 10.x with DeepSeek-R1 dimensions: FLASH_ATTN (0), no extension fields */
  b = ts_builder("CUTLASS_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 0);
  ts_expect_none(m, "prefill_num_qo_heads");
  ts_expect_none(m, "prefill_query_seq_lens");
  attn_builder_destroy(b);
  /* FLASHINFER (1): its ragged prefill's plan() inputs */
  c.mla_prefill_backend = ATTN_MLA_PREFILL_FLASHINFER;
  b = ts_builder("CUTLASS_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 1);
  assert_int_equal(ts_int(m, "prefill_num_qo_heads"), 32);
  assert_int_equal(ts_int(m, "prefill_num_kv_heads"), 32);
  assert_int_equal(ts_int(m, "prefill_head_dim_qk"), 192);
  assert_int_equal(ts_int(m, "prefill_head_dim_vo"), 128);
  assert_int_equal(ts_int(m, "prefill_window_left"), -1);
  assert_int_equal(ts_int(m, "prefill_q_data_type"), ATTN_KV_DTYPE_BFLOAT16);
  ts_expect_none(m, "prefill_logits_soft_cap");
  ASSERT_OK(attn_metadata_get(m, "prefill_sm_scale", &f));
  assert_int_equal(f.kind, ATTN_FIELD_FLOAT);
  assert_true(f.float_value > 0.07216 && f.float_value < 0.07217); /* 192^-0.5 */
  ts_expect_none(m, "prefill_query_seq_lens");
  ts_expect_i32(m, "prefill_query_start_loc", (int32_t[]){0, 5, 12}, 3);
  attn_builder_destroy(b);
  /* TRTLLM_RAGGED (2) and TOKENSPEED_MLA (3): the prefills' query lengths on the device */
  for (k = 0; k < 2; ++k) {
    c.mla_prefill_backend = k ? ATTN_MLA_PREFILL_TOKENSPEED_MLA : ATTN_MLA_PREFILL_TRTLLM_RAGGED;
    b = ts_builder("CUTLASS_MLA", &spec, &c);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "prefill_prefill_backend"), 2 + k);
    ts_expect_i32(m, "prefill_query_seq_lens", (int32_t[]){5, 7}, 2);
    ts_expect_none(m, "prefill_num_qo_heads");
    attn_builder_destroy(b);
  }
  /* FP8 prefill queries: an fp8 cache, 10.x, one of FLASHINFER / TRTLLM_RAGGED /
   * TOKENSPEED_MLA; the output keeps the model's dtype */
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  c.use_prefill_query_quantization = 1;
  b = ts_builder("CUTLASS_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_q_data_type"), ATTN_KV_DTYPE_FP8_E4M3);
  assert_int_equal(ts_int(m, "prefill_output_dtype"), ATTN_KV_DTYPE_BFLOAT16);
  attn_builder_destroy(b);
  c.mla_prefill_backend = ATTN_MLA_PREFILL_FLASH_ATTN; /* FLASH_ATTN: no FP8 queries */
  b = ts_builder("CUTLASS_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 0);
  assert_int_equal(ts_int(m, "prefill_q_data_type"), ATTN_KV_DTYPE_BFLOAT16);
  attn_builder_destroy(b);
  c.mla_prefill_backend = ATTN_MLA_PREFILL_AUTO;
  c.use_prefill_query_quantization = 0;
  c.cache_dtype = ATTN_KV_DTYPE_AUTO;
  /* (192, 64, 256) on 10.x: TRTLLM_RAGGED automatically; FLASHINFER refused for them */
  c.mla_qk_nope_head_dim = 192;
  c.mla_v_head_dim = 256;
  b = ts_builder("CUTLASS_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 2);
  attn_builder_destroy(b);
  c.mla_prefill_backend = ATTN_MLA_PREFILL_FLASHINFER;
  b = (attn_builder_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_builder_create("CUTLASS_MLA", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "Selected MLA prefill backend FLASHINFER is not valid for this configuration. "
               "Reason: ['Model does not have supported MLA dimensions (got (qk_nope_head_dim="
               "192, qk_rope_head_dim=64, v_head_dim=256); supported: (qk_nope_head_dim=128, "
               "qk_rope_head_dim=64, v_head_dim=128))'] (config->mla_prefill_backend=2)");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  c.mla_qk_nope_head_dim = 0;
  c.mla_v_head_dim = 0;
  /* on 9.0 FLASHINFER is refused; FLASH_ATTN stays the automatic choice */
  c.device_capability = 90;
  ASSERT_ERROR(attn_builder_create("CUTLASS_MLA", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "Reason: ['compute capability 9.0 not supported']");
  c.mla_prefill_backend = 5;
  ASSERT_ERROR(attn_builder_create("CUTLASS_MLA", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->mla_prefill_backend=5 is not an ATTN_MLA_PREFILL_* value (0..4)");
  c.mla_prefill_backend = ATTN_MLA_PREFILL_AUTO;
  /* a 1.6-sized config reads neither field: AUTO and no quantization */
  c.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_6;
  c.mla_prefill_backend = ATTN_MLA_PREFILL_FLASHINFER;
  b = ts_builder("CUTLASS_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 0);
  attn_builder_destroy(b);
  c.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE;
  c.mla_prefill_backend = ATTN_MLA_PREFILL_AUTO;
  /* the 0.13 flags: vLLM 0.33's AttentionConfig refuses them */
  {
    int32_t* flags[3];
    const char* names[3] = {"disable_flashinfer_prefill", "use_cudnn_prefill",
                            "use_trtllm_ragged_deepseek_prefill"};
    flags[0] = &c.disable_flashinfer_prefill;
    flags[1] = &c.use_cudnn_prefill;
    flags[2] = &c.use_trtllm_ragged_deepseek_prefill;
    b = (attn_builder_t*)UNTOUCHED_PTR;
    for (k = 0; k < 3; ++k) {
      char want[256];
      *flags[k] = 1;
      snprintf(want, sizeof want,
               "config->%s=1: attention_config.%s was removed in vLLM 0.33 (choose the MLA "
               "prefill backend with config->mla_prefill_backend)",
               names[k], names[k]);
      ASSERT_ERROR(attn_builder_create("CUTLASS_MLA", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
                   want);
      *flags[k] = 0;
    }
  }
  assert_ptr_equal(b, UNTOUCHED_PTR);
  ts_batch_free(batch);
}

/* ---- capture, update_block_table ---------------------------------------------------------- */

static void test_capture_and_update(void** state) {
  static const int32_t q1[3] = {1, 1, 1}, s1[3] = {9, 40, 3};
  static const int32_t q2[3] = {2, 2, 2}, s2[3] = {9, 40, 3};
  static const int32_t qp[4] = {1, 0, 0, 0}, sp[4] = {5, 0, 0, 0};
  static const int32_t qb[2] = {130, 130}, sb[2] = {200, 140};
  attn_kv_cache_spec_t spec = ts_mla_spec(128);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* ones = ts_batch_make(q1, s1, 3, 128, 0, -1);
  ts_batch* twos = ts_batch_make(q2, s2, 3, 128, 0, -1);
  ts_batch* padded = ts_batch_make(qp, sp, 4, 128, 1, -1);
  ts_batch* big = ts_batch_make(qb, sb, 2, 128, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  /* CUTLASS_MLA: single-token decodes only */
  b = ts_builder("CUTLASS_MLA", &spec, &c);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &ones->common, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  assert_int_equal(ts_int(m, "num_prefills"), 0);
  ts_expect_none(m, "prefill_query_start_loc");
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &twos->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "CUTLASS_MLA has CUDA graph support UNIFORM_SINGLE_TOKEN_DECODE: request 0 has "
               "query length 2");
  /* vLLM's MLA capture assert: num_reqs <= num_actual_tokens * reorder_batch_threshold */
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &padded->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "CUTLASS_MLA only supports decode-only full CUDA graph capture: num_reqs=4 exceeds "
               "num_actual_tokens=1 * reorder_batch_threshold=1");
  {
    /* update_block_table: not supported by any MLA builder (vLLM's default) */
    attn_metadata_t* out = (attn_metadata_t*)UNTOUCHED_PTR;
    ASSERT_OK(attn_build(b, 0, &ones->common, 0, &m, NULL));
    ASSERT_ERROR(attn_update_block_table(b, m, &ones->bt_t, &ones->sm_t, &out, NULL),
                 ATTN_ERR_UNSUPPORTED, "CUTLASS_MLA does not support update_block_table");
    assert_ptr_equal(out, UNTOUCHED_PTR);
  }
  attn_builder_destroy(b);
  /* FLASHMLA (UNIFORM_BATCH, threshold 128): uniform spec-decode batches capture; a uniform
   * batch above the threshold is not a decode batch */
  spec = ts_mla_spec(64);
  b = ts_builder("FLASHMLA", &spec, &c);
  ts_batch_free(twos);
  twos = ts_batch_make(q2, s2, 3, 64, 0, -1);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &twos->common, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  assert_int_equal(ts_int(m, "decode_scheduler_num_q_tokens_per_head_k"), 64);
  ts_batch_free(big);
  big = ts_batch_make(qb, sb, 2, 64, 0, -1);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &big->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "FLASHMLA only supports decode-only full CUDA graph capture: max_query_len=130 "
               "exceeds reorder_batch_threshold=128");
  attn_builder_destroy(b);
  ts_batch_free(ones);
  ts_batch_free(twos);
  ts_batch_free(padded);
  ts_batch_free(big);
}

/* ---- bad input ----------------------------------------------------------------------------- */

static void expect_create_error(const char* backend, const attn_kv_cache_spec_t* spec,
                                const attn_builder_config_t* config, int32_t code,
                                const char* message) {
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  size_t bytes = 99;
  attn_error_t* e = attn_builder_create(backend, spec, config, &b);
  if (e == NULL) fail_msg("%s was created; expected \"%s\"", backend, message);
  attn_error_destroy(e);
  ASSERT_ERROR(attn_builder_create(backend, spec, config, &b), code, message);
  assert_ptr_equal(b, UNTOUCHED_PTR);
  ASSERT_ERROR(attn_builder_workspace_size(backend, spec, config, &bytes), code, message);
  assert_int_equal(bytes, 99);
}

static void test_bad_input(void** state) {
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = mla_config();
  attn_kv_cache_spec_t full = ts_spec();
  (void)state;
  /* wrong spec kinds, both ways */
  expect_create_error("FLASHMLA", &full, &c, ATTN_ERR_UNSUPPORTED,
                      "FLASHMLA builds metadata for MLA KV cache specs only, not FULL_ATTENTION "
                      "(kv_cache_spec->kind=0)");
  full.kind = ATTN_KV_SLIDING_WINDOW;
  full.sliding_window = 64;
  expect_create_error("TRITON_MLA", &full, &c, ATTN_ERR_UNSUPPORTED,
                      "TRITON_MLA builds metadata for MLA KV cache specs only, not SLIDING_WINDOW");
  expect_create_error("FLASH_ATTN", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "FLASH_ATTN does not build metadata for MLA KV cache specs");
  expect_create_error("FLASHINFER", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "FLASHINFER does not build metadata for MLA KV cache specs");
  expect_create_error("TRITON_ATTN", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "TRITON_ATTN does not build metadata for MLA KV cache specs");
  /* the spec */
  spec.head_size = 512;
  expect_create_error("FLASHMLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "FLASHMLA supports head size 576 (kv_lora_rank + qk_rope_head_dim of the "
                      "latent cache), got kv_cache_spec->head_size=512");
  spec = ts_mla_spec(64);
  spec.num_kv_heads = 8;
  expect_create_error("FLASHMLA", &spec, &c, ATTN_ERR_INVALID_ARGUMENT,
                      "kv_cache_spec->num_kv_heads=8 must be 1 for an MLA spec");
  spec = ts_mla_spec(16);
  expect_create_error("FLASHMLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "FLASHMLA needs kv_cache_spec->block_size to be a multiple of 64, got 16");
  spec = ts_mla_spec(64);
  expect_create_error("CUTLASS_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "CUTLASS_MLA needs kv_cache_spec->block_size to be a multiple of 128, got 64");
  spec = ts_mla_spec(16);
  expect_create_error("FLASHINFER_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "FLASHINFER_MLA needs kv_cache_spec->block_size to be a multiple of 32 or 64, "
                      "got 16");
  spec = ts_mla_spec(8);
  expect_create_error("FLASH_ATTN_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "FLASH_ATTN_MLA needs kv_cache_spec->block_size to be a multiple of 16, got 8");
  /* the config */
  spec = ts_mla_spec(16);
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  expect_create_error("FLASH_ATTN_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "FLASH_ATTN_MLA does not support config->cache_dtype=FP8_E4M3");
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E5M2;
  expect_create_error("TRITON_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "TRITON_MLA does not support config->cache_dtype=FP8_E5M2");
  c = mla_config();
  c.mla_kv_lora_rank = 448;
  expect_create_error("TRITON_MLA", &spec, &c, ATTN_ERR_INVALID_ARGUMENT,
                      "config->mla_kv_lora_rank=448 + config->mla_qk_rope_head_dim=64 differs from "
                      "kv_cache_spec->head_size=576");
  c.mla_qk_rope_head_dim = 128; /* 448 + 128 = 576 is a valid split */
  attn_builder_destroy(ts_builder("TRITON_MLA", &spec, &c));
  c = mla_config();
  c.mla_v_head_dim = -1;
  expect_create_error("TRITON_MLA", &spec, &c, ATTN_ERR_INVALID_ARGUMENT,
                      "config->mla_v_head_dim=-1 is not in [0, 65536] (0 for 128)");
  c = mla_config();
  c.mla_chunked_prefill_workspace_size = -5;
  expect_create_error("TRITON_MLA", &spec, &c, ATTN_ERR_INVALID_ARGUMENT,
                      "config->mla_chunked_prefill_workspace_size=-5 is negative");
  c.mla_chunked_prefill_workspace_size = 100;
  c.decode_context_parallel_size = 3;
  expect_create_error("TRITON_MLA", &spec, &c, ATTN_ERR_INVALID_ARGUMENT,
                      "the MLA chunked-prefill workspace of 100 tokens is not a multiple of "
                      "config->decode_context_parallel_size=3");
  c = mla_config();
  c.model_dtype = ATTN_KV_DTYPE_FLOAT32;
  expect_create_error("TRITON_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "TRITON_MLA runs float16 and bfloat16 models, got FLOAT32");
  c = mla_config();
  c.attn_type = ATTN_TYPE_ENCODER_ONLY;
  expect_create_error("TRITON_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "TRITON_MLA runs decoder self-attention only (config->attn_type=2)");
  c = mla_config();
  c.kv_sharing_fast_prefill = 1;
  expect_create_error("TRITON_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "KV sharing is not supported for MLA");
  c = mla_config();
  {
    attn_per_layer_params_t layers[2] = {ATTN_PER_LAYER_PARAMS_INIT, ATTN_PER_LAYER_PARAMS_INIT};
    layers[1].window_left = 127;
    c.layers = layers;
    c.num_layers = 2;
    expect_create_error("TRITON_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                        "TRITON_MLA does not support sliding windows or logits soft capping "
                        "(config->layers[1])");
  }
  c = mla_config();
  spec = ts_mla_spec(64);
  c.mla_qk_nope_head_dim = 96;
  expect_create_error("FLASHINFER_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "FLASHINFER_MLA needs qk_nope_head_dim in [64, 128, 192], got "
                      "config->mla_qk_nope_head_dim=96");
  {
    /* batches: a sequence longer than the model, an unsplittable uniform batch */
    static const int32_t q[2] = {1, 2000}, s[2] = {5, 2000};
    static const int32_t qu[3] = {2, 3, 2}, su[3] = {5, 6, 7};
    attn_builder_t* b;
    ts_batch* batch = ts_batch_make(q, s, 2, 64, 0, -1);
    attn_metadata_t* m = (attn_metadata_t*)UNTOUCHED_PTR;
    c = mla_config();
    b = ts_builder("FLASHMLA", &spec, &c);
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->seq_lens[1]=2000 exceeds config->max_model_len=1024");
    assert_ptr_equal(m, UNTOUCHED_PTR);
    ts_batch_free(batch);
    /* FLASHMLA splits uniform decodes: [2, 3, 2] -> the first non-2 request starts the
     * prefills, so the last 2-token request counts as a prefill */
    batch = ts_batch_make(qu, su, 3, 64, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), 1);
    assert_int_equal(ts_int(m, "num_prefills"), 2);
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

/* ---- the ABI 1.2 config fields and older callers --------------------------------------------- */

/* A 1.1 caller (struct_size stops before the MLA fields) gets their defaults, even when the
 * bytes past its struct hold garbage; a size between two versions is refused. */
static void test_abi_1_1_config(void** state) {
  static const int32_t q[2] = {1, 4}, s[2] = {9, 300};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_1;
  c.mla_chunked_prefill_workspace_size = -77; /* not read */
  c.mla_kv_lora_rank = 3;
  b = ts_builder("TRITON_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "chunked_prefill_workspace_size"), 8192); /* 8 x 1024 */
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens", (int32_t[]){0, 296}, 2);
  attn_builder_destroy(b);
  c.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_1 + 4;
  ASSERT_ERROR(attn_builder_create("TRITON_MLA", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "is not the size of an ABI version of this struct");
  c = mla_config(); /* this header's size reads them */
  c.mla_chunked_prefill_workspace_size = 256;
  b = ts_builder("TRITON_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "chunked_prefill_workspace_size"), 256);
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens", (int32_t[]){0, 256, 0, 40}, 4);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* ---- seeded random batches against a naive computation ------------------------------------ */

static int g_several_chunks, g_dcp_chunks; /* what the random batches covered */

static void check_random_batch(const char* backend, const attn_builder_config_t* c,
                               int32_t block, const ts_batch* b, int64_t nd, const int32_t* local,
                               const attn_metadata_t* m) {
  const int64_t n = b->num_reqs, np = n - nd;
  const int32_t dcp = c->decode_context_parallel_size, il = c->cp_kv_cache_interleave_size;
  int64_t workspace = c->mla_chunked_prefill_workspace_size, i;
  int32_t row[17];
  naive_coverage cov;
  if (workspace == 0)
    workspace = naive_mla_workspace(c->max_model_len, c->max_num_seqs, block, dcp, il);
  assert_int_equal(ts_int(m, "chunked_prefill_workspace_size"), workspace);
  assert_int_equal(ts_int(m, "num_decodes"), nd);
  assert_int_equal(ts_int(m, "num_prefills"), np);
  assert_int_equal(ts_int(m, "num_decode_tokens"), b->qsl[nd]);
  (void)backend;
  if (nd > 0) {
    ts_expect_i32(m, "decode_seq_lens", dcp > 1 ? local : b->seq, nd);
    if (dcp > 1) {
      ts_expect_i32(m, "decode_dcp_tot_seq_lens", b->seq, nd);
      assert_int_equal(ts_int(m, "max_seq_len"),
                       (b->common.max_seq_len + dcp * il - 1) / (dcp * il) * il);
    } else {
      ts_expect_none(m, "decode_dcp_tot_seq_lens");
      assert_int_equal(ts_int(m, "max_seq_len"), b->common.max_seq_len);
    }
  } else {
    ts_expect_none(m, "decode_seq_lens");
  }
  if (np == 0) {
    ts_expect_none(m, "prefill_query_start_loc");
    return;
  }
  for (i = 0; i <= np; ++i) row[i] = b->qsl[nd + i] - b->qsl[nd];
  ts_expect_i32(m, "prefill_query_start_loc", row, np + 1);
  cov = expect_mla_chunks(m, b->qsl + nd, b->seq + nd, np, workspace, block, dcp, il);
  if (cov.chunks > 1) ++g_several_chunks;
  if (cov.chunks > 0 && dcp > 1) ++g_dcp_chunks;
}

static void test_random_batches(void** state) {
  uint64_t seed = 2024;
  int iter;
  (void)state;
  for (iter = 0; iter < 400; ++iter) {
    const int v = (int)ts_rand_range(&seed, 0, 4);
    static const int32_t dcps[4] = {1, 1, 2, 4};
    int32_t block = kBlocks[v] * (int32_t)ts_rand_range(&seed, 1, 2);
    attn_kv_cache_spec_t spec;
    attn_builder_config_t c = mla_config();
    attn_builder_t* b;
    attn_metadata_t* m = NULL;
    int32_t q[16], s[16], local[16], threshold, dq;
    int64_t n, nd, r;
    int64_t local_shape[1];
    attn_tensor_t local_t;
    ts_batch* batch;
    if (v == 3 && block == 128) block = 64;
    spec = ts_mla_spec(block);
    c.max_num_seqs = 16;
    c.max_num_batched_tokens = 16384;
    c.max_model_len = 2048;
    c.decode_context_parallel_size = dcps[ts_rand_range(&seed, 0, 3)];
    c.dcp_rank = (int32_t)ts_rand_range(&seed, 0, c.decode_context_parallel_size - 1);
    if (v != 3 && ts_rand_range(&seed, 0, 2) == 0) c.cp_kv_cache_interleave_size = 2;
    if (ts_rand_range(&seed, 0, 2) > 0)
      c.mla_chunked_prefill_workspace_size = 16 * block * (int32_t)ts_rand_range(&seed, 1, 4);
    b = ts_builder(kVariants[v], &spec, &c);
    threshold = threshold_of(b);
    n = ts_rand_range(&seed, 1, 16);
    nd = ts_rand_range(&seed, 0, n);
    /* decodes first: uniform unless the variant takes varlen decodes; prefills above the
     * threshold */
    dq = (int32_t)ts_rand_range(&seed, 1, threshold < 8 ? threshold : 8);
    for (r = 0; r < n; ++r) {
      const int decode = r < nd;
      int32_t ctx;
      q[r] = decode ? (v == 1 ? (int32_t)ts_rand_range(&seed, 1, threshold < 8 ? threshold : 8) : dq)
                    : threshold + (int32_t)ts_rand_range(&seed, 1, 24);
      ctx = ts_rand_range(&seed, 0, 3) == 0 ? 0 : (int32_t)ts_rand_range(&seed, 0, 2048 - q[r]);
      s[r] = q[r] + ctx;
      local[r] = dcp_local(s[r], c.decode_context_parallel_size, c.dcp_rank,
                           c.cp_kv_cache_interleave_size);
    }
    batch = ts_batch_make(q, s, n, block, 0, -1);
    local_shape[0] = n;
    local_t = ts_host_tensor(local, 1, local_shape, ATTN_DTYPE_INT, 32);
    if (c.decode_context_parallel_size > 1) batch->common.dcp_local_seq_lens = &local_t;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    /* every request's query > threshold counts as a prefill; with uniform decodes no shorter
     * prefill exists, so the split is the generated one */
    check_random_batch(kVariants[v], &c, block, batch, nd, local, m);
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
  printf("random batches: %d with several context chunks, %d with DCP chunks\n", g_several_chunks,
         g_dcp_chunks);
  assert_true(g_several_chunks > 50);
  assert_true(g_dcp_chunks > 50);
}

/* TOKENSPEED_MLA (vLLM 0.33's TokenspeedMLAMetadataBuilder): UNIFORM_BATCH; UNIFORM queries
 * (threshold 1, 1 + k with spec decode, kept under DCP: supports_dcp_with_varlen); fp8 caches
 * only, kernel blocks of 32 or 64; the base's decode metadata: a uniform spec batch of two
 * 3-token queries is all decodes, a ragged one is not. */
static void test_tokenspeed_mla(void** state) {
  static const int32_t q[] = {3, 3}, s[] = {40, 70}, q2[] = {3, 2}, s2[] = {40, 70};
  attn_kv_cache_spec_t spec = ts_mla_spec(32);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  ts_batch* batch;
  int32_t level = -1, update = 1;
  (void)state;
  c.cache_dtype = ATTN_KV_DTYPE_AUTO;
  expect_create_error("TOKENSPEED_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "TOKENSPEED_MLA does not support config->cache_dtype=AUTO");
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  c.model_dtype = ATTN_KV_DTYPE_BFLOAT16;
  spec = ts_mla_spec(16);
  expect_create_error("TOKENSPEED_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "multiple of 32 or 64, got 16");
  spec = ts_mla_spec(64);
  c.num_speculative_tokens = 2;
  c.decode_context_parallel_size = 2;
  b = ts_builder("TOKENSPEED_MLA", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(threshold_of(b), 3); /* 1 + k, kept under DCP (varlen DCP) */
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 0);
  attn_builder_destroy(b);
  c.decode_context_parallel_size = 1;
  b = ts_builder("TOKENSPEED_MLA", &spec, &c);
  batch = ts_batch_make(q, s, 2, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 0);
  ts_batch_free(batch);
  batch = ts_batch_make(q2, s2, 2, 64, 0, -1); /* UNIFORM: the 2 after a 3 is a prefill */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* CPU_MLA (vLLM 0.33's CPU platform reference MLA backend: the base builder): NEVER, threshold 1
 * even with speculative tokens (SINGLE_ONLY), no update_block_table, "auto" caches only, kernel
 * block 16, float32 models too; the prefill backend is the CPU platform's (CPU_SDPA_MLA, 5) even
 * on sm100 with config->mla_prefill_backend set (vLLM's CPU platform ignores it); capture refused
 * (NEVER). */
static void test_cpu_mla(void** state) {
  static const int32_t q[] = {1, 1, 5}, s[] = {10, 20, 5};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  ts_batch* batch;
  int32_t level = -1, update = 1;
  (void)state;
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  expect_create_error("CPU_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED,
                      "CPU_MLA does not support config->cache_dtype=FP8_E4M3");
  c.cache_dtype = ATTN_KV_DTYPE_AUTO;
  spec = ts_mla_spec(8);
  expect_create_error("CPU_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED, "multiple of 16, got 8");
  spec = ts_mla_spec(16);
  c.model_dtype = ATTN_KV_DTYPE_FLOAT32;
  c.num_speculative_tokens = 2;
  c.device_capability = 100;
  /* the CPU platform's get_mla_prefill_backend ignores attention_config.mla_prefill_backend */
  c.mla_prefill_backend = ATTN_MLA_PREFILL_TRTLLM_RAGGED;
  b = ts_builder("CPU_MLA", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  assert_int_equal(threshold_of(b), 1);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 0);
  batch = ts_batch_make(q, s, 3, 16, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 5);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "NEVER");
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

static int64_t at64(const attn_tensor_t* t, int64_t r, int64_t k) {
  const char* p = (const char*)t->data + t->byte_offset +
                  (r * t->strides[0] + (t->ndim > 1 ? k * t->strides[1] : 0)) * (t->dtype.bits / 8);
  return t->dtype.bits == 64 ? *(const int64_t*)p : *(const int32_t*)p;
}

/* AMX_MLA's attributes against a naive expansion: req_to_token[r][j * bs + o] =
 * table[row][j] * bs + o (int32 for the decodes, int64 for the prefills), the int64 copies,
 * arange indices, extend lengths/starts and num_kv_splits. */
static void check_amx(const attn_metadata_t* m, const ts_batch* b, int64_t nd, int64_t np,
                      int64_t splits) {
  const int64_t row = b->width * b->block_size;
  int64_t i, k;
  if (nd > 0) {
    const attn_tensor_t* t = ts_tensor(m, "decode_req_to_token");
    assert_int_equal(t->dtype.bits, 32);
    assert_int_equal(t->shape[0], nd);
    assert_int_equal(t->shape[1], row);
    for (i = 0; i < nd; ++i)
      for (k = 0; k < row; ++k)
        assert_int_equal(at64(t, i, k),
                         (int64_t)b->bt[i * b->width + k / b->block_size] * b->block_size +
                             k % b->block_size);
    t = ts_tensor(m, "decode_seq_lens_i64");
    assert_int_equal(t->dtype.bits, 64);
    for (i = 0; i < nd; ++i) assert_int_equal(at64(t, i, 0), b->seq[i]);
    t = ts_tensor(m, "decode_req_pool_indices");
    assert_int_equal(t->shape[0], nd);
    for (i = 0; i < nd; ++i) assert_int_equal(at64(t, i, 0), i);
    assert_int_equal(ts_int(m, "decode_num_kv_splits"), splits);
  } else {
    ts_expect_none(m, "decode_req_to_token");
    ts_expect_none(m, "decode_num_kv_splits");
  }
  if (np > 0) {
    const attn_tensor_t* t = ts_tensor(m, "prefill_req_to_token");
    int64_t longest = 0;
    assert_int_equal(t->dtype.bits, 64);
    assert_int_equal(t->shape[0], np);
    for (i = 0; i < np; ++i)
      for (k = 0; k < row; ++k)
        assert_int_equal(at64(t, i, k),
                         (int64_t)b->bt[(nd + i) * b->width + k / b->block_size] * b->block_size +
                             k % b->block_size);
    for (i = 0; i < np; ++i) {
      const int64_t ql = b->qsl[nd + i + 1] - b->qsl[nd + i];
      assert_int_equal(at64(ts_tensor(m, "prefill_cpu_seq_lens"), i, 0), b->seq[nd + i]);
      assert_int_equal(at64(ts_tensor(m, "prefill_req_pool_indices"), i, 0), i);
      assert_int_equal(at64(ts_tensor(m, "prefill_extend_seq_lens"), i, 0), ql);
      assert_int_equal(at64(ts_tensor(m, "prefill_extend_start_loc"), i, 0),
                       b->qsl[nd + i] - b->qsl[nd]);
      if (ql > longest) longest = ql;
    }
    assert_int_equal(ts_int(m, "prefill_max_len_extend"), longest);
  } else {
    ts_expect_none(m, "prefill_req_to_token");
    ts_expect_none(m, "prefill_max_len_extend");
  }
}

/* AMX_MLA: NEVER, threshold 1, bfloat16 models, blocks of multiples of 32, config->num_sms as
 * vLLM's num_compute_units(); a hand-checked batch (num_kv_splits: 3000 // 512 = 5 ->
 * 8, capped at 2 x config->num_sms = 3 threads = 6), a too-wide table refused, random batches
 * against the naive expansion. */
static void test_amx_mla(void** state) {
  static const int32_t q[] = {1, 1, 3}, s[] = {3000, 2100, 35};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  ts_batch* batch;
  int32_t level = -1;
  uint64_t seed = 4242;
  int iter;
  (void)state;
  c.max_model_len = 4096;
  c.num_sms = 3;
  expect_create_error("AMX_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED, "multiple of 32, got 16");
  spec = ts_mla_spec(32);
  c.model_dtype = ATTN_KV_DTYPE_FLOAT16;
  expect_create_error("AMX_MLA", &spec, &c, ATTN_ERR_UNSUPPORTED, "bfloat16 models only");
  c.model_dtype = ATTN_KV_DTYPE_BFLOAT16;
  c.num_sms = 3;
  b = ts_builder("AMX_MLA", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  assert_int_equal(threshold_of(b), 1);
  batch = ts_batch_make(q, s, 3, 32, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 5);
  assert_int_equal(ts_tensor(m, "decode_req_to_token")->shape[1], 94 * 32);
  check_amx(m, batch, 2, 1, 6);
  ts_batch_free(batch);
  /* 2 x 4 + 8 bytes a position of 257 columns: more than 4 seqs x 128 blocks x 8 bytes */
  batch = ts_batch_make(q, s, 3, 32, 257, -1);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "AMX_MLA's req_to_token");
  ts_batch_free(batch);
  for (iter = 0; iter < 100; ++iter) {
    const int64_t n = ts_rand_range(&seed, 1, 4);
    int32_t qq[4], ss[4];
    int64_t r, nd = 0, max_seq = 1, splits = 1;
    int prefill = 0;
    for (r = 0; r < n; ++r) {
      qq[r] = prefill || ts_rand_range(&seed, 0, 2) == 0 ? (int32_t)ts_rand_range(&seed, 2, 40) : 1;
      if (qq[r] > 1) prefill = 1;
      ss[r] = qq[r] + (int32_t)ts_rand_range(&seed, 0, 4000);
      if (ss[r] > 4096) ss[r] = 4096;
      if (ss[r] > max_seq) max_seq = ss[r];
      if (!prefill) ++nd;
    }
    while (splits < (max_seq / 512 > 1 ? max_seq / 512 : 1)) splits *= 2;
    if (splits > 6) splits = 6;
    batch = ts_batch_make(qq, ss, n, 32, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    check_amx(m, batch, nd, n - nd, splits);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

/* A batch AMX_MLA refuses (its req_to_token would not fit) leaves the previous metadata as it
 * was: the refusal comes before the chunk plan rewrites the host lists that metadata views. */
static void test_amx_mla_refusal_keeps_metadata(void** state) {
  static const int32_t q[] = {1, 1, 3}, kept_lens[] = {100, 90, 67};
  static const int32_t refused_lens[] = {100, 90, 1003};
  attn_kv_cache_spec_t spec = ts_mla_spec(32);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  attn_metadata_t* refused = (attn_metadata_t*)UNTOUCHED_PTR;
  ts_batch* batch;
  const int32_t contexts[] = {64};
  (void)state;
  c.max_model_len = 4096;
  c.model_dtype = ATTN_KV_DTYPE_BFLOAT16;
  c.num_sms = 3;
  b = ts_builder("AMX_MLA", &spec, &c);
  batch = ts_batch_make(q, kept_lens, 3, 32, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i32(m, "prefill_chunked_context_context_lens_list", contexts, 1);
  ts_batch_free(batch);
  /* a context of 1000 tokens, in a table of 257 columns: 2 x 4 + 8 bytes a position, more
   * than 4 seqs x 128 blocks x 32 x 8 bytes */
  batch = ts_batch_make(q, refused_lens, 3, 32, 257, -1);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &refused, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "AMX_MLA's req_to_token");
  assert_ptr_equal(refused, UNTOUCHED_PTR);
  ts_expect_i32(m, "prefill_chunked_context_context_lens_list", contexts, 1);
  ts_expect_i32(m, "prefill_chunked_context_chunk_num_context_tokens", contexts, 1);
  ts_expect_i32(m, "prefill_chunked_context_chunk_seq_lens", contexts, 1);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels_and_thresholds),
      cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_dcp),
      cmocka_unit_test(test_flash_attn_mla),
      cmocka_unit_test(test_flash_attn_mla_xpu),
      cmocka_unit_test(test_flashmla),
      cmocka_unit_test(test_flashinfer_mla_spec_decode),
      cmocka_unit_test(test_prefill_paths),
      cmocka_unit_test(test_capture_and_update),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_abi_1_1_config),
      cmocka_unit_test(test_random_batches),
      cmocka_unit_test(test_tokenspeed_mla),
      cmocka_unit_test(test_cpu_mla),
      cmocka_unit_test(test_amx_mla),
      cmocka_unit_test(test_amx_mla_refusal_keeps_metadata),
  };
  return cmocka_run_group_tests_name("mla", tests, NULL, NULL);
}
