/* INKLING_SCONV_SWA at vLLM 0.33 (InklingSconvMetadataBuilder of models/inkling/nvidia and
 * models/inkling/amd sconv_swa_attn.py, the same builder): UNIFORM_BATCH, threshold None, no
 * update_block_table; the batch's block table and slot mapping, and per slot-mapping row the
 * request (seq_idx) and its first query row (query_start), 0 from query_start_loc[-1] on; the
 * refusals; seeded random batches against a naive restatement. Hand-checked values are worked
 * out in the comments. */
#include "test_support.h"

#define INKLING "INKLING_SCONV_SWA"

/* Inkling's conv-state spec: SlidingWindowSpec(block_size = sliding_window = kernel size 4,
 * 4 heads of the packed width 512, bfloat16). */
static attn_kv_cache_spec_t sconv_spec(void) {
  attn_kv_cache_spec_t s = ts_spec();
  s.kind = ATTN_KV_SLIDING_WINDOW;
  s.block_size = 4;
  s.sliding_window = 4;
  s.num_kv_heads = 4;
  s.head_size = 512;
  return s;
}

static void test_levels(void** state) {
  attn_kv_cache_spec_t spec = sconv_spec();
  attn_builder_config_t c = ts_config();
  int k;
  (void)state;
  for (k = 0; k < 2; ++k) { /* the class attribute, with and without speculative tokens */
    int32_t level = -1, th = -1, supported = 1;
    attn_builder_t* b;
    c.num_speculative_tokens = k * 3;
    ASSERT_OK(attn_backend_cudagraph_support(INKLING, &spec, &c, &level));
    assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
    b = ts_builder(INKLING, &spec, &c);
    ASSERT_OK(attn_builder_cudagraph_support(b, &level));
    assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
    ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
    assert_int_equal(th, ATTN_NO_REORDER);
    ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
    assert_int_equal(supported, 0);
    supported = 1;
    ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
    assert_int_equal(supported, 0);
    attn_builder_destroy(b);
  }
  /* vLLM asserts a SlidingWindowSpec */
  {
    attn_kv_cache_spec_t full = ts_spec();
    attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
    c = ts_config();
    ASSERT_ERROR(attn_builder_create(INKLING, &full, &c, &b), ATTN_ERR_UNSUPPORTED,
                 "kv_cache_spec->kind=");
    assert_ptr_equal(b, UNTOUCHED_PTR);
  }
}

/* Queries [2, 0, 3, 1] (query_start_loc [0, 2, 2, 5, 6]), num_actual_tokens 8 and 9 slot rows
 * (the runner's padding): vLLM maps up to query_start_loc_cpu[-1] = 6, over all 9 rows.
 * seq_idx: tokens 0, 1 -> 0; 2..4 -> 2 (request 1 is empty: the last request starting at or
 * before the token); 5 -> 3; 6..8 -> 0. query_start: qsl[seq_idx], 0 on the padding rows. */
static void test_hand_checked(void** state) {
  static const int32_t q[4] = {2, 0, 3, 1}, s[4] = {9, 5, 40, 17};
  static const int32_t seq_idx[9] = {0, 0, 2, 2, 2, 3, 0, 0, 0};
  static const int32_t query_start[9] = {0, 0, 2, 2, 2, 5, 0, 0, 0};
  attn_kv_cache_spec_t spec = sconv_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(INKLING, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 4, 0, 9);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  (void)state;
  batch->common.num_actual_tokens = 8;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  t = ts_tensor(m, "block_table");
  assert_ptr_equal(t->data, batch->bt);
  assert_int_equal(t->shape[0], 4);
  assert_int_equal(t->shape[1], batch->width);
  t = ts_tensor(m, "slot_mapping");
  assert_ptr_equal(t->data, batch->slots);
  assert_int_equal(t->shape[0], 9);
  ts_expect_i32(m, "seq_idx", seq_idx, 9);
  ts_expect_i32(m, "query_start", query_start, 9);
  /* the same rows through build_for_cudagraph_capture (the base class's: build()) on a
   * uniform batch, and through build_for_drafting */
  ts_batch_free(batch);
  {
    static const int32_t uq[3] = {2, 2, 2}, us[3] = {10, 3, 21};
    static const int32_t useq[7] = {0, 0, 1, 1, 2, 2, 0}, ustart[7] = {0, 0, 2, 2, 4, 4, 0};
    batch = ts_batch_make(uq, us, 3, 4, 0, 7);
    batch->common.num_actual_tokens = 6;
    ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
    ts_expect_i32(m, "seq_idx", useq, 7);
    ts_expect_i32(m, "query_start", ustart, 7);
    ASSERT_OK(attn_build_for_drafting(b, &batch->common, 0, &m, NULL));
    ts_expect_i32(m, "seq_idx", useq, 7);
    ts_expect_i32(m, "query_start", ustart, 7);
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* What build() refuses, leaving the previous metadata live: more slot rows than the
 * max_num_batched_tokens buffers hold (vLLM's "seq_idx_out is too small"); no slot mapping or
 * block table; at capture, a batch whose first query is shorter than the next
 * (UNIFORM_BATCH allows only the last to be shorter). A batch of no request with padding
 * rows builds: zeros. */
static void test_refusals(void** state) {
  static const int32_t q[2] = {1, 3}, s[2] = {7, 30};
  static const int32_t seq_idx[4] = {0, 1, 1, 1};
  attn_kv_cache_spec_t spec = sconv_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  attn_metadata_t* bad = (attn_metadata_t*)UNTOUCHED_PTR;
  int64_t rows;
  (void)state;
  c.max_num_batched_tokens = 16;
  b = ts_builder(INKLING, &spec, &c);
  batch = ts_batch_make(q, s, 2, 4, 0, 17);
  batch->common.num_actual_tokens = 4;
  rows = batch->sm_shape[0];
  batch->sm_shape[0] = 4;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  batch->sm_shape[0] = rows;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &bad, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->slot_mapping has 17 entries, more than config->max_num_batched_tokens=16");
  assert_ptr_equal(bad, UNTOUCHED_PTR);
  ts_expect_i32(m, "seq_idx", seq_idx, 4); /* the previous result, still live */
  batch->sm_shape[0] = 16;                 /* as many rows as the buffers: builds */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_tensor(m, "seq_idx")->shape[0], 16);
  batch->common.slot_mapping = NULL;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &bad, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->slot_mapping is NULL");
  batch->common.slot_mapping = &batch->sm_t;
  batch->common.block_table_tensor = NULL;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &bad, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->block_table_tensor is NULL");
  batch->common.block_table_tensor = &batch->bt_t;
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &batch->common, &bad, NULL),
               ATTN_ERR_UNSUPPORTED, "UNIFORM_BATCH");
  assert_ptr_equal(bad, UNTOUCHED_PTR);
  ts_batch_free(batch);
  {
    static const int32_t z[5] = {0, 0, 0, 0, 0};
    batch = ts_batch_make(NULL, NULL, 0, 4, 1, 5);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    ts_expect_i32(m, "seq_idx", z, 5);
    ts_expect_i32(m, "query_start", z, 5);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

/* Seeded random batches (empty queries, padding rows past num_actual_tokens and past
 * query_start_loc[-1]) against a naive restatement: a linear scan for the last request whose
 * query starts at or before the token. */
static void test_random_vs_naive(void** state) {
  uint64_t rng = 0x1a4c11a6;
  attn_kv_cache_spec_t spec = sconv_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(INKLING, &spec, &c);
  int iter;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    const int64_t n = ts_rand_range(&rng, 1, 40);
    int32_t q[40], s[40], want_seq[1024], want_start[1024];
    int64_t r, t, tokens = 0, actual, rows;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)(ts_rand_range(&rng, 0, 3) == 0 ? 0 : ts_rand_range(&rng, 1, 20));
      s[r] = q[r] + (int32_t)ts_rand_range(&rng, 0, 200);
      tokens += q[r];
    }
    actual = tokens + ts_rand_range(&rng, 0, 3);
    rows = actual + ts_rand_range(&rng, 0, 8);
    batch = ts_batch_make(q, s, n, 4, 0, rows);
    batch->common.num_actual_tokens = actual;
    for (t = 0; t < rows; ++t) {
      int32_t owner = 0;
      if (t < tokens)
        for (r = 0; r < n; ++r)
          if (batch->qsl[r] <= t) owner = (int32_t)r;
      want_seq[t] = owner;
      want_start[t] = t < tokens ? batch->qsl[owner] : 0;
    }
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    ts_expect_i32(m, "seq_idx", want_seq, rows);
    ts_expect_i32(m, "query_start", want_start, rows);
    assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
    assert_int_equal(ts_tensor(m, "slot_mapping")->shape[0], rows);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_random_vs_naive),
  };
  return cmocka_run_group_tests_name("inkling_sconv", tests, NULL, NULL);
}
