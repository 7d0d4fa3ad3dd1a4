/* XPU_MLA_SPARSE at vLLM 0.33 (XPUMLASparseMetadataBuilder, v1/attention/backends/mla/
 * xpu_mla_sparse.py): the class answers (NEVER, no threshold, no block-table or draft update),
 * a hand-checked build, the whole request-id buffer zero-filled on every build, seeded random
 * batches (padded ones included) against np.repeat restated, and the refusals. */
#include <stdlib.h>

#include "test_support.h"

#define XPU "XPU_MLA_SPARSE"

static void test_answers(void** state) {
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  int32_t level = -1, th = 0, v = 0, has = 1, yes = 1;
  (void)state;
  c.num_speculative_tokens = 2; /* no _init_reorder_batch_threshold: None whatever k is */
  ASSERT_OK(attn_backend_cudagraph_support(XPU, &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  b = ts_builder(XPU, &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
  assert_int_equal(th, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_varlen_cudagraph_max_query_len(b, &v, &has));
  assert_int_equal(has, 0);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &yes));
  assert_int_equal(yes, 0);
  yes = 1;
  ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &yes));
  assert_int_equal(yes, 0);
  attn_builder_destroy(b);
}

/* Queries [2, 1, 3] onto [5, 9, 3] (a prefill first: vLLM's builder splits nothing), block 16,
 * index_topk 512: req_id_per_token [0, 0, 1, 2, 2, 2]; every request a "decode":
 * num_decodes 3, num_prefills 0, num_decode_tokens 6; the tensors are the batch's own. */
static void test_build(void** state) {
  static const int32_t q[3] = {2, 1, 3}, s[3] = {5, 9, 3}, ids[6] = {0, 0, 1, 2, 2, 2};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  spec.index_topk = 512;
  b = ts_builder(XPU, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(attn_metadata_field_count(m), 13);
  assert_int_equal(ts_int(m, "num_reqs"), 3);
  assert_int_equal(ts_int(m, "max_query_len"), 3);
  assert_int_equal(ts_int(m, "max_seq_len"), 9);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 6);
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
  ts_expect_i32(m, "req_id_per_token", ids, 6);
  assert_int_equal(ts_int(m, "block_size"), 16);
  assert_int_equal(ts_int(m, "topk_tokens"), 512);
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  assert_int_equal(ts_int(m, "num_prefills"), 0);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 6);
  attn_builder_destroy(b);
  spec.index_topk = 0; /* hf_text_config.index_topk's default, 2048 */
  b = ts_builder(XPU, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "topk_tokens"), 2048);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* vLLM zero-fills the whole persistent buffer before each copy: after a batch of 40 tokens of
 * requests 0..3, a batch of 3 tokens leaves zeros in the buffer's entries 3..39 (read through
 * the field's data pointer: the buffer is max_num_batched_tokens long). Padded tokens past
 * query_start_loc[-1] are 0 too. */
static void test_zero_filled(void** state) {
  static const int32_t q1[4] = {10, 10, 10, 10}, s1[4] = {10, 20, 30, 40};
  static const int32_t q2[2] = {1, 2}, s2[2] = {7, 8}, ids[5] = {0, 1, 1, 0, 0};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(XPU, &spec, &c);
  ts_batch* big = ts_batch_make(q1, s1, 4, 16, 0, -1);
  ts_batch* small = ts_batch_make(q2, s2, 2, 16, 0, 5); /* 3 tokens, 2 padding */
  attn_metadata_t* m = NULL;
  const int32_t* data;
  int t;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &big->common, 0, &m, NULL));
  data = (const int32_t*)ts_tensor(m, "req_id_per_token")->data;
  assert_int_equal(data[39], 3);
  ASSERT_OK(attn_build(b, 0, &small->common, 0, &m, NULL));
  ts_expect_i32(m, "req_id_per_token", ids, 5);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 5);
  assert_ptr_equal(ts_tensor(m, "req_id_per_token")->data, data);
  for (t = 5; t < 40; ++t)
    if (data[t] != 0) fail_msg("req_id_per_token buffer[%d] = %d after a smaller batch", t, data[t]);
  attn_builder_destroy(b);
  ts_batch_free(big);
  ts_batch_free(small);
}

/* np.repeat(arange(num_reqs), diff(query_start_loc)) into zeros of num_actual_tokens. */
static void test_random(void** state) {
  uint64_t seed = 33;
  int iter;
  attn_kv_cache_spec_t spec = ts_mla_spec(32);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  (void)state;
  spec.index_topk = 256;
  b = ts_builder(XPU, &spec, &c);
  for (iter = 0; iter < 200; ++iter) {
    int32_t q[48], s[48], expected[8192];
    const int64_t n = ts_rand_range(&seed, 0, 48);
    int64_t r, t = 0, tokens = 0, padded;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 0, 60);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, q[r] == 0 ? 1 : 0, 500);
      tokens += q[r];
    }
    padded = tokens + (ts_rand_range(&seed, 0, 3) == 0 ? ts_rand_range(&seed, 1, 16) : 0);
    batch = ts_batch_make(q, s, n, 32, 0, padded);
    for (r = 0; r < n; ++r)
      for (int32_t j = 0; j < q[r]; ++j) expected[t++] = (int32_t)r;
    while (t < padded) expected[t++] = 0;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    ts_expect_i32(m, "req_id_per_token", expected, padded);
    assert_int_equal(ts_int(m, "num_reqs"), n);
    assert_int_equal(ts_int(m, "num_decodes"), n);
    assert_int_equal(ts_int(m, "num_prefills"), 0);
    assert_int_equal(ts_int(m, "num_actual_tokens"), padded);
    assert_int_equal(ts_int(m, "num_decode_tokens"), padded);
    assert_int_equal(ts_int(m, "topk_tokens"), 256);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = NULL;
  (void)state;
  spec.head_size = 512;
  ASSERT_ERROR(attn_builder_create(XPU, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->head_size=512");
  spec = ts_mla_spec(16);
  spec.kind = ATTN_KV_FULL_ATTENTION;
  ASSERT_ERROR(attn_builder_create(XPU, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "kind");
  spec = ts_mla_spec(16);
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3; /* supported_kv_cache_dtypes: auto, float16, bfloat16 */
  ASSERT_ERROR(attn_builder_create(XPU, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "config->cache_dtype");
  c = ts_config();
  c.model_dtype = ATTN_KV_DTYPE_FLOAT32; /* supported_dtypes: float16, bfloat16 */
  ASSERT_ERROR(attn_builder_create(XPU, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "got FLOAT32");
  c = ts_config();
  c.attn_type = ATTN_TYPE_ENCODER;
  ASSERT_ERROR(attn_builder_create(XPU, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "config->attn_type=1");
  c = ts_config();
  c.cache_dtype = ATTN_KV_DTYPE_FLOAT16;
  b = ts_builder(XPU, &spec, &c); /* float16 and bfloat16 caches are accepted */
  attn_builder_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_answers),     cmocka_unit_test(test_build),
      cmocka_unit_test(test_zero_filled), cmocka_unit_test(test_random),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests_name("xpu_mla_sparse", tests, NULL, NULL);
}
