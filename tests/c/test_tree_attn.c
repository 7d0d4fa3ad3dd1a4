/* TREE_ATTN: the tree attention bias of a speculative token tree, the reorder threshold, the
 * decode/prefill split with its prefill_ and decode_ views, the drafting builds that swap the
 * bias, parse errors, and the NEVER level. */
#include <math.h>

#include "test_support.h"

static attn_builder_t* tree_builder(const char* tree) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  c.speculative_token_tree = tree;
  c.num_speculative_tokens = 3;
  return ts_builder("TREE_ATTN", &spec, &c);
}

static const float* bias_of(const attn_metadata_t* m, int64_t* rows, int64_t* cols) {
  const attn_tensor_t* t = ts_tensor(m, "tree_attn_bias");
  *rows = t->shape[0];
  *cols = t->ndim == 2 ? t->shape[1] : 0;
  return (const float*)((const char*)t->data + t->byte_offset);
}

static void test_bias_and_split(void** state) {
  /* root, (0,), (1,), (0, 0): L = 4; (0, 0) sees the root, (0,) and itself */
  static const char* tree = "[(0,), (1,), (0, 0)]";
  static const int expect_zero[4][4] = {{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 0, 1, 0}, {1, 1, 0, 1}};
  static const int32_t q[3] = {4, 4, 9}, s[3] = {20, 30, 9};
  attn_builder_t* b = tree_builder(tree);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 2, -1);
  attn_metadata_t* m = NULL;
  const float* bias;
  int64_t rows, cols, i, j;
  int32_t threshold = -1, level = -1;
  (void)state;
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 4); /* len(tree) + 1, without the spec-token adjustment */
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "TREE_ATTN");
  bias = bias_of(m, &rows, &cols);
  assert_int_equal(rows, 4);
  assert_int_equal(cols, 4);
  for (i = 0; i < 4; ++i)
    for (j = 0; j < 4; ++j) {
      const float v = bias[i * 4 + j];
      if (expect_zero[i][j] ? v != 0.0f : !(isinf(v) && v < 0))
        fail_msg("bias[%lld][%lld] = %f", (long long)i, (long long)j, (double)v);
    }
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 8);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 9);
  /* the prefill view: rebased query offsets, the rest sliced */
  ts_expect_i32(m, "prefill_query_start_loc", (int32_t[]){0, 9}, 2);
  assert_int_equal(ts_int(m, "prefill_num_actual_tokens"), 9);
  assert_int_equal(ts_int(m, "prefill_max_query_len"), 9);
  ts_expect_i32(m, "prefill_seq_lens", (int32_t[]){9}, 1);
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 9); /* read from the host seq_lens */
  assert_int_equal(ts_tensor(m, "prefill_slot_mapping")->shape[0], 9);
  assert_int_equal(((const int64_t*)ts_tensor(m, "prefill_slot_mapping")->data)[0], batch->slots[8]);
  /* the decode view */
  ts_expect_i32(m, "decode_query_start_loc", (int32_t[]){0, 4, 8}, 3);
  assert_int_equal(ts_int(m, "decode_max_query_len"), 4);
  ts_expect_i32(m, "decode_seq_lens", (int32_t[]){20, 30}, 2);
  assert_int_equal(ts_tensor(m, "decode_block_table")->shape[0], 2);
  assert_int_equal(ts_tensor(m, "decode_slot_mapping")->shape[0], 8);
  assert_int_equal(ts_int(m, "decode_max_seq_len"), 30);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "TREE_ATTN has CUDA graph support NEVER");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_drafting(void** state) {
  static const int32_t q[2] = {2, 2}, s[2] = {12, 14};
  attn_builder_t* b = tree_builder("[(0,), (1,), (0, 0), (1, 0)]");
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 1, -1);
  attn_metadata_t* m = NULL;
  const float* bias;
  int64_t rows, cols;
  (void)state;
  /* level 0 drafts with plain causal attention: an empty bias, every request a prefill */
  ASSERT_OK(attn_build_for_drafting(b, &batch->common, 0, &m, NULL));
  bias_of(m, &rows, &cols);
  assert_int_equal(rows, 0);
  assert_int_equal(ts_tensor(m, "tree_attn_bias")->ndim, 1);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  /* later levels: bias[1:1+max_query_len, 1:1+max_query_len], every request a decode */
  ASSERT_OK(attn_build_for_drafting(b, &batch->common, 1, &m, NULL));
  bias = bias_of(m, &rows, &cols);
  assert_int_equal(rows, 2);
  assert_int_equal(cols, 2);
  assert_true(bias[0] == 0.0f && isinf(bias[1]) && isinf(bias[2]) && bias[3] == 0.0f);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  /* an ordinary build has the whole tree again */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  bias_of(m, &rows, &cols);
  assert_int_equal(rows, 5);
  ASSERT_ERROR(attn_build_for_drafting(b, &batch->common, -1, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "draft_index=-1 is negative");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_default_tree_and_parse_errors(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  int32_t threshold = -1;
  (void)state;
  b = ts_builder("TREE_ATTN", &spec, &c); /* no tree: [(0,)] */
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 2);
  attn_builder_destroy(b);
  c.speculative_token_tree = "[[0], [1], [0, 1],]"; /* lists and a trailing comma parse too */
  b = ts_builder("TREE_ATTN", &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 4);
  attn_builder_destroy(b);
  b = (attn_builder_t*)UNTOUCHED_PTR;
  c.speculative_token_tree = "[(0, 0), (0,)]";
  ASSERT_ERROR(attn_builder_create("TREE_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "not sorted by depth: path 0 has length 2");
  c.speculative_token_tree = "[(0,), (1, 0)]";
  ASSERT_ERROR(attn_builder_create("TREE_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "path 1 has no earlier path for its prefix of length 1");
  c.speculative_token_tree = "[(0,), (x,)]";
  ASSERT_ERROR(attn_builder_create("TREE_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "expected a non-negative integer at character 8");
  c.speculative_token_tree = "[(0), (1,)]";
  ASSERT_ERROR(attn_builder_create("TREE_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "(n) is an integer in Python, not a path; write (n,)");
  c.speculative_token_tree = "[(0,), ()]";
  ASSERT_ERROR(attn_builder_create("TREE_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "a path is empty");
  c.speculative_token_tree = "[]";
  ASSERT_ERROR(attn_builder_create("TREE_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "has no paths");
  c.speculative_token_tree = "[(0,)] extra";
  ASSERT_ERROR(attn_builder_create("TREE_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "unexpected text after the list");
  c.speculative_token_tree = NULL;
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  ASSERT_ERROR(attn_builder_create("TREE_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "KV cache dtypes auto, float16 and bfloat16");
  c.cache_dtype = ATTN_KV_DTYPE_AUTO;
  spec.head_size = 80;
  ASSERT_ERROR(attn_builder_create("TREE_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "got kv_cache_spec->head_size=80");
  spec.head_size = 128;
  spec.kind = ATTN_KV_ENCODER_ONLY;
  ASSERT_ERROR(attn_builder_create("TREE_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "decoder self-attention only");
  assert_ptr_equal(b, UNTOUCHED_PTR);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bias_and_split),
      cmocka_unit_test(test_drafting),
      cmocka_unit_test(test_default_tree_and_parse_errors),
  };
  return cmocka_run_group_tests_name("tree_attn", tests, NULL, NULL);
}
