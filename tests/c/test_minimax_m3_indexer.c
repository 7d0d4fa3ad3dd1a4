/* MINIMAX_M3_SPARSE_INDEXER at vLLM 0.33 (MiniMaxM3IndexerTritonMetadataBuilder of
 * models/minimax_m3/common/indexer.py): UNIFORM_BATCH, threshold 1 + k with speculative tokens,
 * no update_block_table; the config it needs (sparse_num_index_heads, tensor_parallel_size) and
 * vLLM's assertions on them; the uniform split, the context lengths, the prefill and decode parts;
 * the refusals (vLLM's assertions); seeded random batches against a naive restatement.
 * Hand-checked values are worked out in the comments. */
#include "minimax_m3_checks.h"

#define INDEXER "MINIMAX_M3_SPARSE_INDEXER"
#define BLOCK MM3_BLOCK

static void test_levels(void** state) {
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  attn_builder_config_t c = mm3_indexer_config();
  (void)state;
  mm3_expect_class_answers(INDEXER, &spec, c);
  { /* the kernel block size 128; an MLA (indexer cache) spec only */
    attn_kv_cache_spec_t other = ts_mla_spec(64);
    attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
    ASSERT_ERROR(attn_builder_create(INDEXER, &other, &c, &b), ATTN_ERR_UNSUPPORTED,
                 "kernel block size 128");
    other = ts_spec();
    other.block_size = BLOCK;
    ASSERT_ERROR(attn_builder_create(INDEXER, &other, &c, &b), ATTN_ERR_UNSUPPORTED,
                 "kv_cache_spec->kind=0");
    assert_ptr_equal(b, UNTOUCHED_PTR);
  }
}

/* MiniMaxM3IndexerMetadataBuilder.__init__: sparse_attention_config["sparse_num_index_heads"]
 * is read (KeyError without it); with TP size tp, heads >= tp asserts heads % tp == 0, heads < tp
 * asserts tp % heads == 0. 4 heads: tp 1, 2, 4, 8 build; tp 3 and 6 are refused; 0 heads (absent)
 * is unsupported (not a MiniMax-M3 model); a negative value or a TP size past the limit is an
 * invalid config. */
static void test_config(void** state) {
  static const int32_t builds[4] = {1, 2, 4, 8}, refused[2] = {3, 6};
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  attn_builder_config_t c = mm3_indexer_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  int i;
  (void)state;
  for (i = 0; i < 4; ++i) {
    c.tensor_parallel_size = builds[i];
    attn_builder_destroy(ts_builder(INDEXER, &spec, &c));
  }
  for (i = 0; i < 2; ++i) {
    static const char* const want[2] = {
        "sparse_num_index_heads=4 and config->tensor_parallel_size=3",
        "sparse_num_index_heads=4 and config->tensor_parallel_size=6"};
    c.tensor_parallel_size = refused[i];
    ASSERT_ERROR(attn_builder_create(INDEXER, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT, want[i]);
  }
  c = mm3_indexer_config();
  c.tensor_parallel_size = 0; /* 0 means 1 */
  attn_builder_destroy(ts_builder(INDEXER, &spec, &c));
  c.sparse_num_index_heads = 0;
  ASSERT_ERROR(attn_builder_create(INDEXER, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "sparse_num_index_heads=0 (absent)");
  c.sparse_num_index_heads = -1;
  ASSERT_ERROR(attn_builder_create(INDEXER, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->sparse_num_index_heads=-1 is negative");
  c = mm3_indexer_config();
  c.tensor_parallel_size = -2;
  ASSERT_ERROR(attn_builder_create(INDEXER, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->tensor_parallel_size=-2 must be positive");
  c.tensor_parallel_size = 4096;
  ASSERT_ERROR(attn_builder_create(INDEXER, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->tensor_parallel_size=4096 exceeds");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  { /* other backends ignore both */
    attn_kv_cache_spec_t full = ts_spec();
    c = ts_config();
    c.tensor_parallel_size = 3;
    c.sparse_num_index_heads = 4;
    attn_builder_destroy(ts_builder("FLASH_ATTN", &full, &c));
  }
}

/* The mixed batch kMm3Q / kMm3S (mm3_expect_mixed_batch) and this builder's own fields: decode
 * max_seq_len 300 (the batch's), max_decode_query_len 1 (the threshold). */
static void test_hand_checked(void** state) {
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  attn_builder_config_t c = mm3_indexer_config();
  attn_builder_t* b = ts_builder(INDEXER, &spec, &c);
  ts_batch* batch = ts_batch_make(kMm3Q, kMm3S, 5, BLOCK, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  mm3_expect_mixed_batch(m, batch);
  assert_int_equal(ts_int(m, "decode_max_seq_len"), 300);
  assert_int_equal(ts_int(m, "decode_max_decode_query_len"), 1);
  ts_batch_free(batch);
  { /* a decode-only batch: no prefill part */
    static const int32_t q1[2] = {1, 1}, s1[2] = {129, 7};
    batch = ts_batch_make(q1, s1, 2, BLOCK, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_prefills"), 0);
    ts_expect_none(m, "prefill_cu_seqlens_q");
    ts_expect_none(m, "prefill_max_query_len");
    assert_int_equal(ts_int(m, "decode_max_seq_len"), 129);
    ts_batch_free(batch);
  }
  { /* a prefill-only batch: no decode part */
    static const int32_t q2[2] = {3, 4}, s2[2] = {3, 10};
    static const int32_t cu2[3] = {0, 3, 7}, ctx2[2] = {0, 6};
    batch = ts_batch_make(q2, s2, 2, BLOCK, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), 0);
    ts_expect_i32(m, "prefill_cu_seqlens_q", cu2, 3);
    ts_expect_i32(m, "prefill_context_lens", ctx2, 2);
    ts_expect_none(m, "decode_seq_lens");
    ts_expect_none(m, "decode_max_decode_query_len");
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

/* Speculative decoding and its capture (mm3_expect_spec_decode): max_decode_query_len is the
 * threshold, 3 (k = 2) and 2 (the capture's k = 1); the all-decode capture has no prefill
 * part. */
static void expect_spec_decode_own(const attn_metadata_t* m) {
  assert_int_equal(ts_int(m, "decode_max_decode_query_len"), 3);
}

static void expect_capture_own(const attn_metadata_t* m) {
  assert_int_equal(ts_int(m, "decode_max_decode_query_len"), 2);
  ts_expect_none(m, "prefill_cu_seqlens_q");
}

static void test_spec_decode(void** state) {
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  (void)state;
  mm3_expect_spec_decode(INDEXER, &spec, mm3_indexer_config(), 0, expect_spec_decode_own);
  mm3_expect_spec_decode(INDEXER, &spec, mm3_indexer_config(), 1, expect_capture_own);
}

/* What build() refuses (vLLM's assertions), leaving the previous metadata live: the uniform
 * split's (mm3_expect_uniform_refusals); more requests than the context_len_buffer holds. */
static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  attn_builder_config_t c = mm3_indexer_config();
  attn_builder_t* b = ts_builder(INDEXER, &spec, &c);
  attn_metadata_t* m = NULL;
  ts_batch* ok = ts_batch_make(kMm3Q, kMm3S, 5, BLOCK, 0, -1);
  (void)state;
  ASSERT_OK(attn_build(b, 0, &ok->common, 0, &m, NULL));
  mm3_expect_uniform_refusals(b);
  assert_int_equal(ts_int(m, "prefill_max_query_len"), 130); /* the previous result, live */
  attn_builder_destroy(b);
  mm3_expect_context_len_refusal(INDEXER, &spec, c);
  ts_batch_free(ok);
}

/* Seeded random batches (mm3_random_batch_make) against a naive restatement of every array and
 * scalar (mm3_expect_random_batch and the views and scalars below). */
static void test_random_vs_naive(void** state) {
  uint64_t rng = 0x3a11dd;
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  int iter;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    attn_builder_config_t c = mm3_indexer_config();
    mm3_random_batch rb;
    attn_builder_t* b;
    attn_metadata_t* m = NULL;
    if (!mm3_random_batch_make(&rng, NULL, &rb)) continue; /* vLLM's assertion: test_refusals */
    c.num_speculative_tokens = rb.k;
    b = ts_builder(INDEXER, &spec, &c);
    ASSERT_OK(attn_build(b, 0, &rb.batch->common, 0, &m, NULL));
    mm3_expect_random_batch(m, &rb);
    if (rb.np > 0) {
      ts_expect_i32(m, "prefill_seq_lens", rb.s + rb.nd, rb.np);
      assert_int_equal(ts_tensor(m, "prefill_block_table")->shape[0], rb.np);
      assert_int_equal(ts_int(m, "prefill_max_query_len"), rb.max_q);
      assert_int_equal(ts_int(m, "prefill_max_seq_len"), rb.max_s);
    }
    if (rb.nd > 0) {
      ts_expect_i32(m, "decode_seq_lens", rb.s, rb.nd);
      assert_int_equal(ts_tensor(m, "decode_block_table")->shape[0], rb.nd);
      assert_int_equal(ts_int(m, "decode_max_decode_query_len"), rb.th);
    }
    attn_builder_destroy(b);
    ts_batch_free(rb.batch);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_config),
      cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_spec_decode),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_random_vs_naive),
  };
  return cmocka_run_group_tests_name("minimax_m3_indexer", tests, NULL, NULL);
}
