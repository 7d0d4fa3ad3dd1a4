/* Step5's builders at vLLM 0.33 (models/step5/nvidia/): STEP5_CSA_SUMMARY
 * (Step5SparseSummaryMetadataBuilder, whose build returns None): the class answers (ALWAYS, no
 * threshold, no block-table or draft update), a metadata with no fields from build, capture
 * and drafting builds, the batch still validated, and the spec kinds it refuses. */
#include "test_support.h"

#define SUMMARY "STEP5_CSA_SUMMARY"

/* Step5SparseSummaryCacheLayer's spec: FullAttentionSpec(block_size, 1 head, 256, uint8,
 * tokens_per_state 8). */
static attn_kv_cache_spec_t summary_spec(int32_t block_size) {
  attn_kv_cache_spec_t s = ts_spec();
  s.block_size = block_size;
  s.num_kv_heads = 1;
  s.head_size = 256;
  s.dtype = ATTN_KV_DTYPE_UINT8;
  s.tokens_per_state = 8;
  return s;
}

static void test_summary_answers(void** state) {
  attn_kv_cache_spec_t spec = summary_spec(64);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  int32_t level = -1, th = 0, v = 0, has = 1, yes = 1;
  (void)state;
  c.num_speculative_tokens = 3;
  ASSERT_OK(attn_backend_cudagraph_support(SUMMARY, &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  b = ts_builder(SUMMARY, &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
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

/* build() returns None: no fields, from a plain, a capture and a drafting build. */
static void test_summary_build(void** state) {
  static const int32_t q[3] = {1, 4, 1}, s[3] = {9, 20, 33};
  static const int32_t uq[2] = {1, 1}, us[2] = {5, 70};
  attn_kv_cache_spec_t spec = summary_spec(64);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(SUMMARY, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 64, 0, -1);
  ts_batch* uniform = ts_batch_make(uq, us, 2, 64, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_non_null(m);
  assert_int_equal(attn_metadata_field_count(m), 0);
  m = NULL;
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &uniform->common, &m, NULL));
  assert_int_equal(attn_metadata_field_count(m), 0);
  m = NULL;
  ASSERT_OK(attn_build_for_drafting(b, &batch->common, 1, &m, NULL));
  assert_int_equal(attn_metadata_field_count(m), 0);
  /* the batch is still validated (libattn's addition): a seq_len below its query length */
  batch->seq[1] = 2;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "seq_lens[1]=2");
  attn_builder_destroy(b);
  ts_batch_free(batch);
  ts_batch_free(uniform);
}

static void test_summary_refusals(void** state) {
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = NULL;
  (void)state;
  ASSERT_ERROR(attn_builder_create(SUMMARY, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "kind");
  spec = summary_spec(60); /* tokens_per_state 8 does not divide 60 */
  ASSERT_ERROR(attn_builder_create(SUMMARY, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "tokens_per_state=8");
  assert_null(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_summary_answers),
      cmocka_unit_test(test_summary_build),
      cmocka_unit_test(test_summary_refusals),
  };
  return cmocka_run_group_tests_name("step5", tests, NULL, NULL);
}
