/* attn_common_metadata_unpadded and attn_metadata_to_common. */
#include "test_support.h"

/* vLLM's padded uniform-decode batch: three requests of 2 tokens plus a padding request, the
 * token count padded to 8 (vectors/split_decodes_and_prefills.json, last case). */
static const int32_t kQ[4] = {2, 2, 2, 0};
static const int32_t kS[4] = {10, 20, 30, 40};

static void test_unpadded_slices(void** state) {
  ts_batch* b = ts_batch_make(kQ, kS, 4, 16, 4, 8);
  attn_metadata_t* u = (attn_metadata_t*)UNTOUCHED_PTR;
  attn_common_metadata_t c = ATTN_COMMON_METADATA_INIT;
  static const int32_t qsl[4] = {0, 2, 4, 6};
  (void)state;
  b->common.max_seq_len = 40;
  ASSERT_OK(attn_common_metadata_unpadded(&b->common, 6, 3, &u));
  assert_string_equal(attn_metadata_kind(u), "common");
  ts_expect_i32(u, "query_start_loc", qsl, 4);
  ts_expect_i32(u, "seq_lens", kS, 3);
  assert_int_equal(ts_int(u, "num_reqs"), 3);
  assert_int_equal(ts_int(u, "num_actual_tokens"), 6);
  assert_int_equal(ts_int(u, "max_query_len"), 2);  /* kept */
  assert_int_equal(ts_int(u, "max_seq_len"), 40);   /* kept, an upper bound */
  assert_int_equal(ts_tensor(u, "block_table_tensor")->shape[0], 3);
  assert_int_equal(ts_tensor(u, "block_table_tensor")->shape[1], 4);
  assert_int_equal(ts_tensor(u, "slot_mapping")->shape[0], 6);
  assert_ptr_equal(ts_tensor(u, "seq_lens")->data, b->seq); /* views: nothing copied */
  assert_null(ts_tensor(u, "query_start_loc_cpu"));
  assert_null(ts_tensor(u, "logits_indices_padded"));
  assert_int_equal(ts_int(u, "causal"), 1);
  /* as an input batch: builds like the unpadded batch itself */
  ASSERT_OK(attn_metadata_to_common(u, &c));
  assert_int_equal(c.num_reqs, 3);
  assert_int_equal(c.num_actual_tokens, 6);
  assert_non_null(c.query_start_loc);
  assert_null(c.seq_lens_cpu);
  {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t config = ts_config();
    attn_builder_t* builder = ts_builder("FLASH_ATTN", &spec, &config);
    attn_metadata_t* m = NULL;
    ASSERT_OK(attn_build(builder, 0, &c, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_actual_tokens"), 6);
    ts_expect_i32(m, "query_start_loc", qsl, 4);
    attn_builder_destroy(builder);
  }
  attn_metadata_destroy(u);
  ts_batch_free(b);
}

static void test_unpadded_keeps_optional_fields(void** state) {
  ts_batch* b = ts_batch_make(kQ, kS, 4, 16, 4, 8);
  int64_t li_shape[1] = {3}, enc_shape[1] = {4};
  int64_t logits[3] = {1, 3, 5};
  int32_t enc[4] = {7, 8, 9, 10};
  attn_tensor_t li = ts_host_tensor(logits, 1, li_shape, ATTN_DTYPE_INT, 64);
  attn_tensor_t et = ts_host_tensor(enc, 1, enc_shape, ATTN_DTYPE_INT, 32);
  attn_metadata_t* u = NULL;
  static const int32_t enc3[3] = {7, 8, 9};
  (void)state;
  b->common.logits_indices_padded = &li;
  b->common.num_logits_indices = 2;
  b->common.encoder_seq_lens = &et;
  b->common.encoder_seq_lens_cpu = &et;
  b->common.query_start_loc_cpu = &b->qsl_t;
  b->common.causal = 0;
  ASSERT_OK(attn_common_metadata_unpadded(&b->common, 6, 3, &u));
  assert_int_equal(ts_tensor(u, "logits_indices_padded")->shape[0], 3); /* not sliced */
  assert_int_equal(ts_int(u, "num_logits_indices"), 2);
  ts_expect_i32(u, "encoder_seq_lens", enc3, 3);
  ts_expect_i32(u, "encoder_seq_lens_cpu", enc3, 3);
  assert_int_equal(ts_tensor(u, "query_start_loc_cpu")->shape[0], 4);
  assert_int_equal(ts_int(u, "causal"), 0);
  attn_metadata_destroy(u);
  ts_batch_free(b);
}

static void test_unpadded_bad_input(void** state) {
  ts_batch* b = ts_batch_make(kQ, kS, 4, 16, 4, 8);
  attn_metadata_t* u = (attn_metadata_t*)UNTOUCHED_PTR;
  (void)state;
  ASSERT_ERROR(attn_common_metadata_unpadded(&b->common, 6, 5, &u), ATTN_ERR_INVALID_ARGUMENT,
               "num_actual_reqs=5 is not in [0, common->num_reqs=4]");
  ASSERT_ERROR(attn_common_metadata_unpadded(&b->common, 9, 3, &u), ATTN_ERR_INVALID_ARGUMENT,
               "num_actual_tokens=9 is not in [0, common->num_actual_tokens=8]");
  ASSERT_ERROR(attn_common_metadata_unpadded(&b->common, -1, 3, &u), ATTN_ERR_INVALID_ARGUMENT,
               "num_actual_tokens=-1");
  ASSERT_ERROR(attn_common_metadata_unpadded(&b->common, 5, 3, &u), ATTN_ERR_INVALID_ARGUMENT,
               "common->query_start_loc[3]=6 exceeds common->num_actual_tokens=5");
  ASSERT_ERROR(attn_common_metadata_unpadded(NULL, 5, 3, &u), ATTN_ERR_INVALID_ARGUMENT, "common is NULL");
  ASSERT_ERROR(attn_common_metadata_unpadded(&b->common, 6, 3, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  b->seq[1] = 1;
  ASSERT_ERROR(attn_common_metadata_unpadded(&b->common, 6, 3, &u), ATTN_ERR_INVALID_ARGUMENT,
               "common->seq_lens[1]=1 is less than its query length 2");
  assert_ptr_equal(u, UNTOUCHED_PTR);
  ts_batch_free(b);
}

static void test_unpadded_to_nothing(void** state) {
  ts_batch* b = ts_batch_make(kQ, kS, 4, 16, 4, 8);
  attn_metadata_t* u = NULL;
  (void)state;
  ASSERT_OK(attn_common_metadata_unpadded(&b->common, 0, 0, &u));
  assert_int_equal(ts_int(u, "num_reqs"), 0);
  assert_int_equal(ts_tensor(u, "query_start_loc")->shape[0], 1);
  attn_metadata_destroy(u);
  ts_batch_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unpadded_slices),
      cmocka_unit_test(test_unpadded_keeps_optional_fields),
      cmocka_unit_test(test_unpadded_bad_input),
      cmocka_unit_test(test_unpadded_to_nothing),
  };
  return cmocka_run_group_tests_name("unpadded", tests, NULL, NULL);
}
