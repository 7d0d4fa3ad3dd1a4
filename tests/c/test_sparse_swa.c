/* DEEPSEEK_SPARSE_SWA at vLLM 0.33 (DeepseekSparseSWAMetadataBuilder): UNIFORM_BATCH, threshold
 * None, the split at max_decode_query_len, the window rows of the decode and prefill tokens
 * (_compute_swa_indices_and_lens_kernel), the validity mask, token_to_req_indices, the prefill
 * fields (ComputePrefillMetadataKernel's gather lengths), update_draft_decode_metadata, build()'s
 * replay_start (common->replay_start, ABI 1.7), the refusals, and seeded random batches against
 * a naive restatement. Hand-checked values are
 * worked out in the comments. Every test runs once per member of the family (sparse_swa.cc:
 * vLLM's subclasses of the builder, named by libattn), which differ only in the level. */
#include "test_support.h"

static const struct {
  const char* name;
  int32_t level;
} kFamily[] = {
    {"DEEPSEEK_SPARSE_SWA", ATTN_CG_UNIFORM_BATCH},
    {"DEEPSEEK_SPARSE_SWA_FLASHMLA", ATTN_CG_ALWAYS},
    {"DEEPSEEK_SPARSE_SWA_FLASHINFER", ATTN_CG_ALWAYS},
    {"DEEPSEEK_V41_SPARSE_SWA", ATTN_CG_UNIFORM_BATCH},
    {"DEEPSEEK_V41_SPARSE_SWA_FLASHMLA", ATTN_CG_ALWAYS},
    {"DEEPSEEK_V41_SPARSE_SWA_FLASHINFER", ATTN_CG_ALWAYS},
};
static size_t g_member; /* the member main() runs the tests for */
#define NAME (kFamily[g_member].name)

static attn_builder_config_t swa_config(int32_t k) {
  attn_builder_config_t c = ts_config();
  c.num_speculative_tokens = k;
  return c;
}

/* A (rows, 1, width) int32 field against `expected` (rows * width values). */
static void expect_rows(const attn_metadata_t* m, const char* name, const int32_t* expected,
                        int64_t rows, int64_t width) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t r, j;
  if (t == NULL) fail_msg("%s is None", name);
  assert_int_equal(t->ndim, 3);
  assert_int_equal(t->shape[0], rows);
  assert_int_equal(t->shape[1], 1);
  assert_int_equal(t->shape[2], width);
  for (r = 0; r < rows; ++r)
    for (j = 0; j < width; ++j) {
      const int32_t got = ((const int32_t*)t->data)[r * t->strides[0] + j * t->strides[2]];
      if (got != expected[r * width + j])
        fail_msg("%s[%lld][0][%lld] = %d, expected %d", name, (long long)r, (long long)j, got,
                 expected[r * width + j]);
    }
}

static void test_levels(void** state) {
  attn_kv_cache_spec_t spec = ts_swa_spec(64, 128);
  attn_builder_config_t c = swa_config(0);
  attn_builder_t* b;
  int32_t level = -1, th = -1, supported = 0;
  (void)state;
  ASSERT_OK(attn_backend_cudagraph_support(NAME, &spec, &c, &level));
  assert_int_equal(level, kFamily[g_member].level);
  b = ts_builder(NAME, &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
  assert_int_equal(th, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
  assert_int_equal(supported, 0);
  ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
  assert_int_equal(supported, 1);
  attn_builder_destroy(b);
  /* an MLA spec carries no window: DeepSeek V4's 128 */
  spec = ts_mla_spec(64);
  b = ts_builder(NAME, &spec, &c);
  attn_builder_destroy(b);
}

/* Window 4, block 32, k = 1 (decodes up to 2 tokens). Queries [1, 2, 3] onto [40, 6, 3];
 * blocks: request 0 [1, 2], request 1 [3], request 2 [4]. Split: two decodes (3 tokens), one
 * prefill (3 tokens); token_to_req [0, 1, 1, 2, 2, 2].
 *   token 0: pos 39, window [36, 40): block 36 / 32 = 1 (id 2): 64 + 4..7 = 68..71, len 4.
 *   token 1: padded slot (-1): invalid, len 0, a row of -1.
 *   token 2: pos 4 + 1 = 5, window [2, 6): id 3: 96 + 2..5 = 98..101, len 4.
 *   prefill tokens 3, 4, 5: pos 0, 1, 2 (no prefix), windows [0, 1), [0, 2), [0, 3) of id 4
 *   (128 + p), lens 1, 2, 3.
 * gather_lens [3 + min(0, 3)] = [3]; max_decode_query_len min(3, 2) = 2. */
static void test_hand_checked(void** state) {
  static const int32_t q[3] = {1, 2, 3}, s[3] = {40, 6, 3};
  static const int32_t t2r[6] = {0, 1, 1, 2, 2, 2}, dlens[3] = {4, 0, 4}, plens[3] = {1, 2, 3};
  static const int32_t drows[12] = {68, 69, 70, 71, -1, -1, -1, -1, 98, 99, 100, 101};
  static const int32_t prows[12] = {128, -1, -1, -1, 128, 129, -1, -1, 128, 129, 130, -1};
  static const int32_t three[1] = {3}, zero_replay[257] = {0};
  attn_kv_cache_spec_t spec = ts_swa_spec(32, 4);
  attn_builder_config_t c = swa_config(1);
  attn_builder_t* b = ts_builder(NAME, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 32, 0, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int i;
  (void)state;
  assert_int_equal(batch->bt[0], 1);
  assert_int_equal(batch->bt[1], 2);
  assert_int_equal(batch->bt[1 * batch->width], 3);
  assert_int_equal(batch->bt[2 * batch->width], 4);
  batch->slots[1] = ATTN_PAD_SLOT_ID;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 3);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 3);
  assert_int_equal(ts_int(m, "max_decode_query_len"), 2);
  assert_int_equal(ts_int(m, "block_size"), 32);
  assert_int_equal(ts_int(m, "decode_swa_width"), 4);
  ts_expect_i32(m, "token_to_req_indices", t2r, 6);
  t = ts_tensor(m, "is_valid_token");
  assert_int_equal(t->shape[0], 6);
  for (i = 0; i < 6; ++i) assert_int_equal(((const uint8_t*)t->data)[i], i != 1);
  expect_rows(m, "decode_swa_indices", drows, 3, 4);
  ts_expect_i32(m, "decode_swa_lens", dlens, 3);
  expect_rows(m, "prefill_swa_indices", prows, 3, 4);
  ts_expect_i32(m, "prefill_swa_lens", plens, 3);
  ts_expect_i32(m, "prefill_gather_lens", three, 1);
  ts_expect_i32(m, "prefill_query_lens_cpu", three, 1);
  ts_expect_i32(m, "prefill_seq_lens", three, 1);
  ts_expect_i32(m, "prefill_seq_lens_cpu", three, 1);
  ts_expect_i32(m, "replay_start", zero_replay, 257);
  assert_int_equal(ts_int(m, "prefill_window_size"), 4);
  assert_int_equal(ts_int(m, "prefill_max_model_len"), c.max_model_len);
  assert_int_equal(ts_int(m, "prefill_max_num_batched_tokens"), c.max_num_batched_tokens);
  assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
  ts_expect_none(m, "prefill_left_visible");
  ts_expect_none(m, "prefill_right_visible");
  ts_expect_none(m, "cache_slot_mapping");
  ts_expect_none(m, "cache_positions");
  ts_expect_none(m, "flashinfer_decode_topk_lens");
  ts_expect_none(m, "flashinfer_decode_seq_lens");
  ts_batch_free(batch);
  /* decode-only: no prefill part */
  batch = ts_batch_make(q, s, 2, 32, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_prefills"), 0);
  ts_expect_none(m, "prefill_swa_indices");
  ts_expect_none(m, "prefill_swa_lens");
  ts_expect_none(m, "prefill_seq_lens");
  ts_expect_none(m, "prefill_seq_lens_cpu");
  ts_expect_none(m, "prefill_gather_lens");
  ts_expect_none(m, "prefill_query_lens_cpu");
  assert_int_equal(ts_int(m, "prefill_window_size"), 0);
  assert_int_equal(ts_int(m, "prefill_max_model_len"), 0);
  assert_int_equal(ts_int(m, "max_decode_query_len"), 2);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* Draft update: decodes [1, 1] onto [40, 6] (window 4); the speculator advances seq_lens to
 * [41, 7]: token 0's window [37, 41): block 1 (id 2), 64 + 5..8 = 69..72; token 1's [3, 7):
 * id 3, 99..102. Again with replay_start {38, 0}, which the update reads from the metadata:
 * built [max(36, 38), 40) = 70, 71; advanced [38, 41) = 70..72. */
static void test_draft_update(void** state) {
  static const int32_t q[2] = {1, 1}, s[2] = {40, 6};
  static const int32_t rows[8] = {69, 70, 71, 72, 99, 100, 101, 102};
  static const int32_t built[8] = {70, 71, -1, -1, 98, 99, 100, 101};
  static const int32_t updated[8] = {70, 71, 72, -1, 99, 100, 101, 102};
  int32_t start[2] = {38, 0};
  int64_t n2[1] = {2};
  attn_tensor_t start_t = ts_host_tensor(start, 1, n2, ATTN_DTYPE_INT, 32);
  attn_kv_cache_spec_t spec = ts_swa_spec(32, 4);
  attn_builder_config_t c = swa_config(1);
  attn_builder_t* b = ts_builder(NAME, &spec, &c);
  attn_metadata_t* m = NULL;
  int replay;
  (void)state;
  for (replay = 0; replay < 2; ++replay) {
    ts_batch* batch = ts_batch_make(q, s, 2, 32, 0, -1);
    if (replay) batch->common.replay_start = &start_t;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    if (replay) expect_rows(m, "decode_swa_indices", built, 2, 4);
    batch->seq[0] = 41;
    batch->seq[1] = 7;
    ASSERT_OK(attn_update_draft_decode_metadata(b, m, NULL));
    expect_rows(m, "decode_swa_indices", replay ? updated : rows, 2, 4);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

static void test_refusals(void** state) {
  static const int32_t q[2] = {1, 3}, s[2] = {10, 3};
  attn_kv_cache_spec_t spec = ts_swa_spec(48, 4);
  attn_builder_config_t c = swa_config(0);
  attn_builder_t* b = NULL;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->block_size=48");
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, NAME);
  spec = ts_swa_spec(32, 4);
  spec.kind = ATTN_KV_FULL_ATTENTION;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "kind");
  spec = ts_swa_spec(32, 4);
  c.attn_type = ATTN_TYPE_ENCODER;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "config->attn_type=1");
  c = swa_config(0);
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q, s, 2, 32, 0, -1);
  batch->common.causal = 0; /* without config->speculative_dspark: refused */
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "common->causal=0");
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "config->speculative_dspark=1");
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED, NAME);
  ts_batch_free(batch);
  batch = ts_batch_make(q + 1, s + 1, 1, 32, 0, -1); /* prefill only: builds, width 0 */
  batch->common.causal = 0;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "decode_swa_width"), 0);
  ts_batch_free(batch);
  attn_builder_destroy(b);
  c = swa_config(0);
  c.max_num_batched_tokens = 4;
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q, s, 2, 32, 0, 6); /* 6 slots, 4 tokens of buffer */
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT, "");
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* SWA bounded replay: decode [1] onto 40 and a prefill of 3 onto a prefix of 7 (positions 7, 8,
 * 9), window 8, block 32, request 1 in block id 3 (slots 96 + position); replay_start {0, 5}.
 * Request 1's windows start at max(pos - 7, 0) = 0, 1, 2, raised to 5: lengths 3, 4, 5, slots
 * 101.. (without replay: 8 each from 96, 97, 98). Its gather length: 3 + min(max(7 - 5, 0),
 * 7) = 5 (10 without). Request 0 (replay 0): [32, 40), slots 64 + 0..7 = 64..71. The metadata
 * returns the caller's replay_start. A start past the first scheduled position is refused. */
static void test_replay_start(void** state) {
  static const int32_t q[2] = {1, 3}, s[2] = {40, 10};
  static const int32_t drows[8] = {64, 65, 66, 67, 68, 69, 70, 71}, eight[1] = {8};
  static const int32_t prows[24] = {101, 102, 103, -1,  -1,  -1,  -1,  -1,
                                    101, 102, 103, 104, -1,  -1,  -1,  -1,
                                    101, 102, 103, 104, 105, -1,  -1,  -1};
  static const int32_t plens[3] = {3, 4, 5}, five[1] = {5};
  int32_t start[2] = {0, 5};
  int64_t n2[1] = {2};
  attn_tensor_t start_t = ts_host_tensor(start, 1, n2, ATTN_DTYPE_INT, 32);
  attn_kv_cache_spec_t spec = ts_swa_spec(32, 8);
  attn_builder_config_t c = swa_config(0);
  attn_builder_t* b = ts_builder(NAME, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 2, 32, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  assert_int_equal(batch->bt[1 * batch->width], 3);
  batch->common.replay_start = &start_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_rows(m, "decode_swa_indices", drows, 1, 8);
  ts_expect_i32(m, "decode_swa_lens", eight, 1);
  expect_rows(m, "prefill_swa_indices", prows, 3, 8);
  ts_expect_i32(m, "prefill_swa_lens", plens, 3);
  ts_expect_i32(m, "prefill_gather_lens", five, 1);
  assert_ptr_equal(ts_tensor(m, "replay_start")->data, start);
  assert_int_equal(ts_tensor(m, "replay_start")->shape[0], 2);
  /* the first scheduled position of request 1 is 7: a start of 7 builds, 8 is refused */
  start[1] = 7;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  start[1] = 8;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->replay_start[1]=8 is past request 1's first scheduled position 7");
  start[1] = -1;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->replay_start[1]=-1 is negative");
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* DSpark (config->speculative_dspark, k = 2, window 8: rows align_up(8 + 2, 64) = 64 wide): a
 * non-causal batch of decodes [3, 3] onto [40, 6], block 32 (request 0 in blocks 1, 2; request
 * 1 in block 3). Every token of a request sees the window before its block and the block:
 * request 0 [max(37 - 8, 0), 40) = [29, 40): slots 61..63, 64..71 (11); request 1 [0, 6): slots
 * 96..101 (6). V4.1 FlashInfer also returns max(len, 8) = 11, 11, 11, 8, 8, 8 and the requests'
 * seq_lens per token. Advanced to [41, 7] (draft update): [30, 41) = 62..72 and [0, 7) =
 * 96..102. A causal batch keeps the window rows; a non-causal prefill-only batch has width 64. */
static void test_dspark(void** state) {
  static const int32_t q[2] = {3, 3}, s[2] = {40, 6};
  static const int32_t lens[6] = {11, 11, 11, 6, 6, 6}, topk[6] = {11, 11, 11, 8, 8, 8};
  static const int32_t seqs[6] = {40, 40, 40, 6, 6, 6}, seqs2[6] = {41, 41, 41, 7, 7, 7};
  int32_t rows[6 * 64], rows2[6 * 64];
  const int fi = strcmp(NAME, "DEEPSEEK_V41_SPARSE_SWA_FLASHINFER") == 0;
  attn_kv_cache_spec_t spec = ts_swa_spec(32, 8);
  attn_builder_config_t c = swa_config(2);
  attn_builder_t* b = NULL;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  int i, j;
  (void)state;
  for (i = 0; i < 6; ++i)
    for (j = 0; j < 64; ++j) {
      const int r0 = i < 3;
      rows[i * 64 + j] = r0 ? (j < 3 ? 61 + j : j < 11 ? 64 + j - 3 : -1) : (j < 6 ? 96 + j : -1);
      rows2[i * 64 + j] = r0 ? (j < 2 ? 62 + j : j < 11 ? 64 + j - 2 : -1) : (j < 7 ? 96 + j : -1);
    }
  c.speculative_dspark = 1;
  b = ts_builder(NAME, &spec, &c);
  batch = ts_batch_make(q, s, 2, 32, 0, -1);
  batch->common.causal = 0;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decode_tokens"), 6);
  assert_int_equal(ts_int(m, "decode_swa_width"), 64);
  expect_rows(m, "decode_swa_indices", rows, 6, 64);
  ts_expect_i32(m, "decode_swa_lens", lens, 6);
  if (fi) {
    ts_expect_i32(m, "flashinfer_decode_topk_lens", topk, 6);
    ts_expect_i32(m, "flashinfer_decode_seq_lens", seqs, 6);
  } else {
    ts_expect_none(m, "flashinfer_decode_topk_lens");
    ts_expect_none(m, "flashinfer_decode_seq_lens");
  }
  batch->seq[0] = 41;
  batch->seq[1] = 7;
  ASSERT_OK(attn_update_draft_decode_metadata(b, m, NULL));
  expect_rows(m, "decode_swa_indices", rows2, 6, 64);
  if (fi) ts_expect_i32(m, "flashinfer_decode_seq_lens", seqs2, 6);
  /* causal: the window rows, 8 wide */
  batch->seq[0] = 40;
  batch->seq[1] = 6;
  batch->common.causal = 1;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "decode_swa_width"), 8);
  assert_int_equal(ts_tensor(m, "decode_swa_indices")->shape[2], 8);
  ts_expect_none(m, "flashinfer_decode_topk_lens");
  ts_batch_free(batch);
  /* non-causal without decode tokens: DSpark's width, no rows */
  {
    static const int32_t pq[1] = {20}, ps[1] = {30};
    batch = ts_batch_make(pq, ps, 1, 32, 0, -1);
    batch->common.causal = 0;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "decode_swa_width"), 64);
    assert_int_equal(ts_int(m, "num_decode_tokens"), 0);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
  /* DSpark drafts need speculative tokens */
  c = swa_config(0);
  c.speculative_dspark = 1;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->speculative_dspark=1 with config->num_speculative_tokens=0");
  c = swa_config(1);
  c.reserved_1_7_b = 3;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->reserved_1_7_b=3 must be 0");
}

/* The naive restatement of build(): every token's window row (`replay`: per-request starts,
 * NULL for none). */
static void naive_rows(const ts_batch* b, const int32_t* replay, int64_t first, int64_t count,
                       int32_t window, int32_t* rows, int32_t* lens) {
  int64_t i, j;
  for (i = 0; i < count; ++i) {
    const int64_t t = first + i;
    int64_t r = 0, pos, start;
    if (b->slots[t] < 0) {
      lens[i] = 0;
      for (j = 0; j < window; ++j) rows[i * window + j] = -1;
      continue;
    }
    while (r + 1 < b->num_reqs && b->qsl[r + 1] <= t) ++r;
    pos = b->seq[r] - (b->qsl[r + 1] - b->qsl[r]) + t - b->qsl[r];
    start = pos - (window - 1) > 0 ? pos - (window - 1) : 0;
    if (replay != NULL && replay[r] > start) start = replay[r];
    lens[i] = (int32_t)(pos + 1 - start);
    for (j = 0; j < window; ++j) {
      const int64_t p = start + j;
      rows[i * window + j] =
          j < lens[i] ? b->bt[r * b->width + p / b->block_size] * b->block_size +
                            (int32_t)(p % b->block_size)
                      : -1;
    }
  }
}

static void test_random(void** state) {
  static const int32_t windows[3] = {4, 16, 128}, blocks[3] = {32, 64, 256};
  uint64_t rng = 20260412;
  int it;
  (void)state;
  for (it = 0; it < 150; ++it) {
    const int32_t window = windows[it % 3], bs = blocks[(it / 3) % 3];
    const int32_t k = (int32_t)ts_rand_range(&rng, 0, 3), th = 1 + k;
    attn_kv_cache_spec_t spec = ts_swa_spec(bs, window);
    attn_builder_config_t c = swa_config(k);
    attn_builder_t* b = ts_builder(NAME, &spec, &c);
    int32_t q[12], s[12], nd = 0, ndt = 0, max_q = 0;
    const int64_t n = ts_rand_range(&rng, 1, 12);
    int64_t r, tokens = 0, np, actual;
    int32_t *rows, *lens, replay[12];
    int64_t n_t[1];
    attn_tensor_t replay_t;
    const int32_t* replay_of = NULL;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&rng, 1, ts_rand_range(&rng, 0, 1) ? th : 40);
      s[r] = q[r] + (int32_t)ts_rand_range(&rng, 0, 300);
      tokens += q[r];
    }
    /* decodes first, as the reorder leaves them */
    nd = ts_decodes_first(q, s, n, th);
    batch = ts_batch_make(q, s, n, bs, 0, tokens + ts_rand_range(&rng, 0, 3));
    for (r = 0; r < tokens; ++r)
      if (ts_rand_range(&rng, 0, 9) == 0) batch->slots[r] = ATTN_PAD_SLOT_ID;
    if (it % 2 == 1) { /* bounded replay: a start in [0, prefix] per request */
      for (r = 0; r < n; ++r) replay[r] = (int32_t)ts_rand_range(&rng, 0, s[r] - q[r]);
      n_t[0] = n;
      replay_t = ts_host_tensor(replay, 1, n_t, ATTN_DTYPE_INT, 32);
      batch->common.replay_start = &replay_t;
      replay_of = replay;
    }
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    if (q[0] > th) nd = 0; /* the first query over the threshold: all prefills */
    for (r = 0; r < nd; ++r) ndt += q[r];
    for (r = 0; r < n; ++r) max_q = q[r] > max_q ? q[r] : max_q;
    if (max_q <= th) ndt = (int32_t)batch->common.num_actual_tokens; /* padding included */
    np = n - nd;
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_decode_tokens"), ndt);
    actual = batch->common.num_actual_tokens; /* the split counts the padding */
    assert_int_equal(ts_int(m, "num_prefill_tokens"), nd == n ? 0 : actual - ndt);
    assert_int_equal(ts_int(m, "max_decode_query_len"), max_q < th ? max_q : th);
    rows = (int32_t*)malloc(sizeof(int32_t) * (size_t)((tokens + 3) * window));
    lens = (int32_t*)malloc(sizeof(int32_t) * (size_t)(tokens + 3));
    naive_rows(batch, replay_of, 0, ndt, window, rows, lens);
    expect_rows(m, "decode_swa_indices", rows, ndt, window);
    ts_expect_i32(m, "decode_swa_lens", lens, ndt);
    if (nd < n) {
      naive_rows(batch, replay_of, ndt, actual - ndt, window, rows, lens);
      expect_rows(m, "prefill_swa_indices", rows, actual - ndt, window);
      ts_expect_i32(m, "prefill_swa_lens", lens, actual - ndt);
      for (r = 0; r < np; ++r) {
        const int32_t ql = q[nd + r];
        int32_t prefix = s[nd + r] - ql;
        if (replay_of != NULL) prefix = prefix > replay_of[nd + r] ? prefix - replay_of[nd + r] : 0;
        lens[r] = ql + (prefix < window - 1 ? prefix : window - 1);
      }
      ts_expect_i32(m, "prefill_gather_lens", lens, np);
    } else {
      ts_expect_none(m, "prefill_gather_lens");
    }
    free(rows);
    free(lens);
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),       cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_draft_update), cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_random),       cmocka_unit_test(test_replay_start),
      cmocka_unit_test(test_dspark),
  };
  int failed = 0;
  for (g_member = 0; g_member < sizeof(kFamily) / sizeof(kFamily[0]); ++g_member)
    failed += cmocka_run_group_tests_name(kFamily[g_member].name, tests, NULL, NULL);
  return failed;
}
