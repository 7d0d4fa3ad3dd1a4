/* TURBOQUANT and ULTRAQUANT at vLLM 0.33 (vllm/v1/attention/backends/turboquant_attn.py,
 * TurboQuantMetadataBuilder, which ultraquant_attn.py keeps): the class answers (UNIFORM_BATCH,
 * threshold 1 also with speculative tokens, no update_block_table), a hand-checked build (the
 * batch's tensors as they are, the split, is_prefill, the host mirrors), capture filling seq_lens
 * with 1, random batches against a naive split, bad input. */
#include "test_support.h"

static attn_builder_config_t tconfig(int32_t k) {
  attn_builder_config_t c = ts_config();
  c.num_speculative_tokens = k;
  return c;
}

static void test_class_answers(void** state) {
  static const char* const names[2] = {"TURBOQUANT", "ULTRAQUANT"};
  const attn_kv_cache_spec_t spec = ts_spec();
  int v;
  (void)state;
  for (v = 0; v < 2; ++v) {
    const attn_builder_config_t c = tconfig(2);
    attn_builder_t* b = ts_builder(names[v], &spec, &c);
    int32_t level = -1, threshold = -1, update = 1;
    ASSERT_OK(attn_builder_cudagraph_support(b, &level));
    assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
    ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
    assert_int_equal(threshold, 1); /* supports_spec_as_decode=False */
    ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
    assert_int_equal(update, 0);
    attn_builder_destroy(b);
  }
}

/* Queries [1, 1, 4, 2], seq_lens [10, 20, 4, 9]: two decodes (2 tokens), is_prefill (4 > 1);
 * seq_lens, slot_mapping, block_table and query_start_loc are the batch's own tensors. */
static void test_build(void** state) {
  static const int32_t q[] = {1, 1, 4, 2}, s[] = {10, 20, 4, 9};
  const attn_kv_cache_spec_t spec = ts_spec();
  const attn_builder_config_t c = tconfig(0);
  attn_builder_t* b = ts_builder("TURBOQUANT", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 0, -1);
  attn_metadata_t* m = NULL;
  static const int32_t qsl[] = {0, 1, 2, 6, 8};
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 8);
  assert_int_equal(ts_int(m, "max_query_len"), 4);
  assert_int_equal(ts_int(m, "max_seq_len"), 20);
  assert_int_equal(ts_kind(m, "is_prefill"), ATTN_FIELD_BOOL);
  assert_int_equal(ts_int(m, "is_prefill"), 1);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  ts_expect_i32(m, "query_start_loc", qsl, 5);
  ts_expect_i32(m, "query_start_loc_cpu", qsl, 5); /* the host query_start_loc */
  ts_expect_i32(m, "seq_lens_cpu", s, 4);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Capture (decode-only): the build, then seq_lens filled with 1 in the caller's buffer; a
 * spec batch of 2-token queries is not a decode (threshold 1) and is_prefill. */
static void test_capture(void** state) {
  static const int32_t q[] = {1, 1, 1}, s[] = {10, 20, 30}, q2[] = {2, 2}, s2[] = {8, 9};
  const attn_kv_cache_spec_t spec = ts_spec();
  const attn_builder_config_t c = tconfig(1);
  attn_builder_t* b = ts_builder("ULTRAQUANT", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_metadata_t* m = NULL;
  int64_t i;
  (void)state;
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  assert_int_equal(ts_int(m, "is_prefill"), 0);
  for (i = 0; i < 3; ++i) assert_int_equal(batch->seq[i], 1);
  ts_batch_free(batch);
  batch = ts_batch_make(q2, s2, 2, 16, 0, -1);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  assert_int_equal(ts_int(m, "is_prefill"), 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Random batches (decodes first) against the naive split at threshold 1. */
static void test_random(void** state) {
  uint64_t seed = 808;
  int iter;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    const attn_kv_cache_spec_t spec = ts_spec();
    const attn_builder_config_t c = tconfig((int32_t)ts_rand_range(&seed, 0, 3));
    attn_builder_t* b = ts_builder(iter % 2 ? "ULTRAQUANT" : "TURBOQUANT", &spec, &c);
    const int64_t n = ts_rand_range(&seed, 1, 40);
    int32_t q[40], s[40];
    int64_t r, nd = -1, ndt = 0, maxq = 0;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 1, ts_rand_range(&seed, 0, 2) ? 1 : 30);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 300);
      if (q[r] > maxq) maxq = q[r];
    }
    for (r = 0; r < n && nd < 0; ++r)
      if (q[r] > 1) nd = r;
    if (nd < 0) nd = n;
    for (r = 0; r < nd; ++r) ndt += q[r];
    batch = ts_batch_make(q, s, n, 16, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_decode_tokens"), ndt);
    assert_int_equal(ts_int(m, "is_prefill"), maxq > 1);
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = tconfig(0);
  attn_builder_t* b = NULL;
  (void)state;
  spec.block_size = 8;
  ASSERT_ERROR(attn_builder_create("TURBOQUANT", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "multiple of a kernel block size");
  spec = ts_mla_spec(64);
  ASSERT_ERROR(attn_builder_create("TURBOQUANT", &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "MLA");
  spec = ts_spec();
  spec.kind = ATTN_KV_CROSS_ATTENTION;
  c.max_encoder_len = 32;
  ASSERT_ERROR(attn_builder_create("TURBOQUANT", &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "CROSS");
  spec = ts_spec();
  c = tconfig(0);
  c.model_dtype = ATTN_KV_DTYPE_FLOAT16;
  ASSERT_ERROR(attn_builder_create("ULTRAQUANT", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "bfloat16 models only");
  b = ts_builder("TURBOQUANT", &spec, &c); /* float16 is TURBOQUANT's */
  attn_builder_destroy(b);
  c.model_dtype = ATTN_KV_DTYPE_FLOAT32;
  ASSERT_ERROR(attn_builder_create("TURBOQUANT", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "float16 and bfloat16 models");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_class_answers), cmocka_unit_test(test_build),
      cmocka_unit_test(test_capture),       cmocka_unit_test(test_random),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
