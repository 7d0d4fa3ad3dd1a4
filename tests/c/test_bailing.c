/* BAILING_LINEAR_ATTN at vLLM 0.33 (vllm/v1/attention/backends/linear_attn.py,
 * BailingLinearAttentionMetadataBuilder): the class answers (UNIFORM_BATCH, reorder threshold
 * 1 + k, no update_block_table), the split at 1 + k only when num_accepted_tokens is given, the
 * decode/prefill state indices, query_start_loc_d and accepted counts, the full-CUDA-graph
 * staging (PAD_SLOT_ID for padded rows), capture, random batches against a naive split, bad
 * input. */
#include "test_support.h"

static const char* base(const attn_tensor_t* t) { return (const char*)t->data + t->byte_offset; }

static int64_t elem(const attn_tensor_t* t, int64_t i, int64_t j) {
  const char* p = base(t) + (i * t->strides[0] + (t->ndim > 1 ? j * t->strides[1] : 0)) * 4;
  return *(const int32_t*)p;
}

static attn_kv_cache_spec_t bspec(void) {
  attn_kv_cache_spec_t s = ts_spec();
  s.kind = ATTN_KV_MAMBA;
  s.mamba_type = ATTN_MAMBA_TYPE_LINEAR_ATTENTION;
  return s;
}

static attn_builder_config_t bconfig(int32_t k, int full) {
  attn_builder_config_t c = ts_config();
  c.num_speculative_tokens = k;
  c.cudagraph_mode = full ? ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE : ATTN_CUDAGRAPH_MODE_NONE;
  return c;
}

typedef struct {
  int32_t v[64];
  int64_t shape[1];
  attn_tensor_t t;
} vec;
static attn_tensor_t* vec_i32(vec* x, const int32_t* values, int64_t n) {
  memcpy(x->v, values, (size_t)n * sizeof(int32_t));
  x->shape[0] = n;
  x->t = ts_host_tensor(x->v, 1, x->shape, ATTN_DTYPE_INT, 32);
  return &x->t;
}

static void test_class_answers(void** state) {
  const attn_kv_cache_spec_t spec = bspec();
  const attn_builder_config_t c = bconfig(2, 1);
  attn_builder_t* b = ts_builder("BAILING_LINEAR_ATTN", &spec, &c);
  int32_t level = -1, threshold = -1, supported = 1;
  (void)state;
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 3);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
  assert_int_equal(supported, 0);
  attn_builder_destroy(b);
}

/* k = 2, queries [2, 3, 1, 5]: with num_accepted_tokens the threshold is 3, so three decodes
 * (6 tokens) and one prefill: state_indices_tensor_d = table[:3, :3], _p = table[3:, 0],
 * query_start_loc_d [0, 2, 5, 6], num_accepted_tokens its first three. Without it the
 * threshold is 1: the first query (2) makes all four prefills, state_indices_tensor_d is
 * column 0 of no rows, no query_start_loc_d or accepted counts. */
static void test_split(void** state) {
  static const int32_t q[] = {2, 3, 1, 5}, s[] = {12, 23, 11, 5}, acc[] = {2, 3, 1, 1};
  const attn_kv_cache_spec_t spec = bspec();
  const attn_builder_config_t c = bconfig(2, 0);
  attn_builder_t* b = ts_builder("BAILING_LINEAR_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 3, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  vec ac;
  int64_t r, j;
  static const int32_t qsl_d[] = {0, 2, 5, 6}, acc_d[] = {2, 3, 1};
  (void)state;
  batch->common.num_accepted_tokens = vec_i32(&ac, acc, 4);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 6);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 5);
  t = ts_tensor(m, "state_indices_tensor_d");
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], 3);
  assert_int_equal(t->shape[1], 3);
  for (r = 0; r < 3; ++r)
    for (j = 0; j < 3; ++j) assert_int_equal(elem(t, r, j), batch->bt[r * batch->width + j]);
  t = ts_tensor(m, "state_indices_tensor_p");
  assert_int_equal(t->shape[0], 1);
  assert_int_equal(elem(t, 0, 0), batch->bt[3 * batch->width]);
  ts_expect_i32(m, "query_start_loc_d", qsl_d, 4);
  ts_expect_i32(m, "num_accepted_tokens", acc_d, 3);
  t = ts_tensor(m, "state_indices_tensor");
  assert_int_equal(t->shape[0], 4);
  batch->common.num_accepted_tokens = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  assert_int_equal(ts_int(m, "num_prefills"), 4);
  t = ts_tensor(m, "state_indices_tensor_d");
  assert_int_equal(t->ndim, 1);
  assert_int_equal(t->shape[0], 0);
  assert_int_equal(ts_kind(m, "query_start_loc_d"), ATTN_FIELD_NONE);
  assert_int_equal(ts_kind(m, "num_accepted_tokens"), ATTN_FIELD_NONE);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Full CUDA graphs, decodes only with a padded row (seq_len 0): staged state indices with
 * PAD_SLOT_ID (-1) on the padded row, query_start_loc_d padded with its last entry; without
 * spec decode state_indices_tensor_d is the staged state_indices_tensor itself. */
static void test_staged(void** state) {
  static const int32_t q[] = {1, 2, 0}, s[] = {11, 12, 0}, acc[] = {1, 2, 1};
  static const int32_t qsl_d[] = {0, 1, 3, 3}, acc_d[] = {1, 2, 1};
  const attn_kv_cache_spec_t spec = bspec();
  attn_builder_config_t c = bconfig(2, 1);
  attn_builder_t* b = ts_builder("BAILING_LINEAR_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 3, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t *t, *legacy;
  vec ac;
  int64_t j;
  (void)state;
  batch->common.num_accepted_tokens = vec_i32(&ac, acc, 3);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  t = ts_tensor(m, "state_indices_tensor_d");
  assert_int_equal(t->shape[0], 3);
  for (j = 0; j < 3; ++j) {
    assert_int_equal(elem(t, 0, j), batch->bt[j]);
    assert_int_equal(elem(t, 1, j), batch->bt[batch->width + j]);
    assert_int_equal(elem(t, 2, j), -1);
  }
  legacy = ts_tensor(m, "state_indices_tensor");
  assert_int_equal(elem(legacy, 2, 0), -1);
  assert_int_equal(elem(legacy, 1, 0), batch->bt[batch->width]);
  ts_expect_i32(m, "query_start_loc_d", qsl_d, 4);
  ts_expect_i32(m, "num_accepted_tokens", acc_d, 3);
  attn_builder_destroy(b);
  c = bconfig(0, 1);
  b = ts_builder("BAILING_LINEAR_ATTN", &spec, &c);
  batch->common.num_accepted_tokens = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL)); /* threshold 1: the 2 is a prefill */
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  {
    static const int32_t q1[] = {1, 1, 0}, s1[] = {5, 6, 0};
    batch = ts_batch_make(q1, s1, 3, 16, 1, -1);
    b = ts_builder("BAILING_LINEAR_ATTN", &spec, &c);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    t = ts_tensor(m, "state_indices_tensor_d");
    assert_ptr_equal(t->data, ts_tensor(m, "state_indices_tensor")->data);
    assert_int_equal(elem(t, 2, 0), -1);
    assert_int_equal(elem(t, 0, 0), batch->bt[0]);
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

/* Capture: num_accepted_tokens = diff(query_start_loc); a query longer than 1 + k refused. */
static void test_capture(void** state) {
  static const int32_t q[] = {3, 3}, s[] = {13, 23}, acc_d[] = {3, 3};
  const attn_kv_cache_spec_t spec = bspec();
  attn_builder_config_t c = bconfig(2, 1);
  attn_builder_t* b = ts_builder("BAILING_LINEAR_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 3, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  ts_expect_i32(m, "num_accepted_tokens", acc_d, 2);
  attn_builder_destroy(b);
  c = bconfig(1, 1);
  b = ts_builder("BAILING_LINEAR_ATTN", &spec, &c);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL),
               ATTN_ERR_UNSUPPORTED, "query length <= 1 + number of speculative tokens");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Random batches (decodes of 1..1 + k tokens, then longer queries) against the naive split. */
static void test_random(void** state) {
  uint64_t seed = 99;
  int iter;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 3);
    const attn_kv_cache_spec_t spec = bspec();
    const attn_builder_config_t c = bconfig(k, iter % 2);
    attn_builder_t* b = ts_builder("BAILING_LINEAR_ATTN", &spec, &c);
    const int64_t n = ts_rand_range(&seed, 1, 40);
    const int with_acc = (int)ts_rand_range(&seed, 0, 1);
    const int32_t threshold = k > 0 && with_acc ? 1 + k : 1;
    int32_t q[40], s[40], acc[40];
    int64_t r, nd = -1, max_seq = 1, ndt = 0;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    vec ac;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 1, ts_rand_range(&seed, 0, 3) == 0 ? 20 : 1 + k);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 50);
      acc[r] = 1;
      if (s[r] > max_seq) max_seq = s[r];
    }
    for (r = 0; r < n && nd < 0; ++r)
      if (q[r] > threshold) nd = r;
    if (nd < 0) nd = n;
    for (r = 0; r < nd; ++r) ndt += q[r];
    batch = ts_batch_make(q, s, n, 16, (max_seq + 15) / 16 + 3, -1);
    if (with_acc) batch->common.num_accepted_tokens = vec_i32(&ac, acc, n);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_prefills"), n - nd);
    assert_int_equal(ts_int(m, "num_decode_tokens"), ndt);
    assert_int_equal(ts_tensor(m, "state_indices_tensor_p")->shape[0], n - nd);
    if (n - nd > 0)
      assert_int_equal(elem(ts_tensor(m, "state_indices_tensor_p"), 0, 0),
                       batch->bt[nd * batch->width]);
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = bspec();
  const attn_builder_config_t c = bconfig(0, 0);
  attn_builder_t* b = NULL;
  (void)state;
  spec.mamba_type = ATTN_MAMBA_TYPE_GDN_ATTENTION;
  ASSERT_ERROR(attn_builder_create("BAILING_LINEAR_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "mamba_type");
  spec = ts_spec();
  ASSERT_ERROR(attn_builder_create("BAILING_LINEAR_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "MAMBA KV cache specs");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_class_answers), cmocka_unit_test(test_split),
      cmocka_unit_test(test_staged),        cmocka_unit_test(test_capture),
      cmocka_unit_test(test_random),        cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
