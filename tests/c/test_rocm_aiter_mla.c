/* ROCM_AITER_MLA (vLLM 0.33's AiterMLAMetadataBuilder): the class answers, a hand-checked batch
 * (decodes and a prefill), uniform-MTP padding of dummy rows, adaptive varlen verify rows,
 * random batches against a naive restatement of _build_decode's index math (with and without
 * full CUDA graphs), bad input. */
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

/* 4 sequences, 2048 tokens, max_model_len 1024 (4096 one-token pages), 32 query heads. */
static attn_builder_config_t aiter_config(void) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 1024;
  return c;
}

static const int32_t* i32_of(const attn_tensor_t* t) {
  return (const int32_t*)((const char*)t->data + t->byte_offset);
}

static int64_t flat_index(const ts_batch* b, int64_t r, int64_t s) {
  return (int64_t)b->bt[r * b->width + s / b->block_size] * b->block_size + s % b->block_size;
}

/* the naive arrays of decodes [0, nd): kernel lengths `len`, every token's flat page index
 * (tokens past `real` repeat token 0) */
static void expect_pages(const attn_metadata_t* m, const ts_batch* b, int64_t nd,
                         const int32_t* len, const int32_t* real, int64_t capacity) {
  const attn_tensor_t* indptr = ts_tensor(m, "decode_paged_kv_indptr");
  const attn_tensor_t* idx = ts_tensor(m, "decode_paged_kv_indices");
  int64_t r, t, total = 0;
  assert_int_equal(indptr->shape[0], nd + 1);
  assert_int_equal(idx->shape[0], capacity);
  ts_expect_i32(m, "decode_seq_lens", len, nd);
  for (r = 0; r < nd; ++r) {
    assert_int_equal(i32_of(indptr)[r], total);
    for (t = 0; t < len[r]; ++t)
      assert_int_equal(i32_of(idx)[total + t], flat_index(b, r, t < real[r] ? t : 0));
    total += len[r];
    assert_int_equal(i32_of(ts_tensor(m, "decode_paged_kv_last_page_len"))[r], 1);
  }
  assert_int_equal(i32_of(indptr)[nd], total);
}

static void test_hand_checked(void** state) {
  static const int32_t q[3] = {1, 1, 7}, s[3] = {20, 5, 7};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = aiter_config();
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_builder_t* b = ts_builder("ROCM_AITER_MLA", &spec, &c);
  attn_metadata_t* m = NULL;
  int32_t level = -1, threshold = 0;
  (void)state;
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "ROCM_AITER_MLA");
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  expect_pages(m, batch, 2, (int32_t[]){20, 5}, (int32_t[]){20, 5}, 4 * 1024);
  /* indptr {0, 20, 25}; the indices' tail is -1 under full graphs */
  ts_expect_i32(m, "decode_paged_kv_indptr", (int32_t[]){0, 20, 25}, 3);
  assert_int_equal(i32_of(ts_tensor(m, "decode_paged_kv_indices"))[25], -1);
  assert_int_equal(i32_of(ts_tensor(m, "decode_paged_kv_indices"))[17],
                   batch->bt[1] * 16 + 1);
  ts_expect_i32(m, "decode_qo_indptr", (int32_t[]){0, 1, 2}, 3);
  assert_int_equal(ts_int(m, "decode_max_qo_len"), 1);
  assert_int_equal(ts_int(m, "decode_min_kv_seq_len"), 1);
  assert_int_equal(ts_int(m, "decode_dcp_route"), 0);
  assert_int_equal(ts_int(m, "decode_cp_world_size"), 1);
  assert_int_equal(ts_int(m, "decode_has_persistent_metadata"), 1);
  assert_int_equal(ts_int(m, "decode_use_gluon_decode"), 0);
  assert_int_equal(ts_kind(m, "decode_varlen_q_rows"), ATTN_FIELD_NONE);
  assert_int_equal(ts_int(m, "decode_attn_out_dtype"), ATTN_KV_DTYPE_BFLOAT16);
  /* get_mla_metadata_v1's arguments */
  assert_int_equal(ts_int(m, "decode_scheduler_num_heads_per_head_k"), 32);
  assert_int_equal(ts_int(m, "decode_scheduler_num_heads_k"), 1);
  assert_int_equal(ts_int(m, "decode_scheduler_is_causal"), 1);
  assert_int_equal(ts_int(m, "decode_scheduler_page_size"), 1);
  assert_int_equal(ts_int(m, "decode_scheduler_kv_granularity"), 16);
  assert_int_equal(ts_int(m, "decode_scheduler_max_seqlen_qo"), 1);
  assert_int_equal(ts_int(m, "decode_scheduler_uni_seqlen_qo"), 1);
  assert_int_equal(ts_int(m, "decode_scheduler_dtype_kv"), ATTN_KV_DTYPE_BFLOAT16);
  /* the prefill part is the MLA base's, with the ROCm platform's prefill backend */
  ts_expect_i32(m, "prefill_query_start_loc", (int32_t[]){0, 7}, 2);
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 4); /* ROCM_AITER_FA */
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* k = 2 (threshold 3), 10 heads (padded to 16): a full-graph batch of two 3-token decodes and a
 * dummy row (num_actual_tokens 9) runs at qlen 3 with the dummy's kernel length 3 */
static void test_uniform_mtp_padding(void** state) {
  static const int32_t q[3] = {3, 3, 0}, s[3] = {10, 12, 0};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = aiter_config();
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 1, 9);
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  (void)state;
  c.num_speculative_tokens = 2;
  c.num_attention_heads = 10;
  b = ts_builder("ROCM_AITER_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  expect_pages(m, batch, 3, (int32_t[]){10, 12, 3}, (int32_t[]){10, 12, 3}, 4 * 1024);
  ts_expect_i32(m, "decode_qo_indptr", (int32_t[]){0, 3, 6, 9}, 4);
  assert_int_equal(ts_int(m, "decode_max_qo_len"), 3);
  assert_int_equal(ts_int(m, "decode_scheduler_uni_seqlen_qo"), 3);
  assert_int_equal(ts_int(m, "decode_scheduler_num_heads_per_head_k"), 16);
  /* without the padding tokens: measured qlen 3, rows of 3, 3, 0 are not uniform */
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 3, 16, 1, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_pages(m, batch, 3, (int32_t[]){10, 12, 0}, (int32_t[]){10, 12, 0}, 4 * 1024);
  ts_expect_i32(m, "decode_qo_indptr", (int32_t[]){0, 3, 6, 6}, 4);
  assert_int_equal(ts_int(m, "decode_scheduler_uni_seqlen_qo"), -1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* adaptive varlen verify (k = 2): every decode runs at 3 rows; short rows repeat token 0 */
static void test_adaptive_varlen(void** state) {
  static const int32_t q[3] = {3, 1, 2}, s[3] = {10, 8, 9};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = aiter_config();
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  static const int64_t q_rows[9] = {0, 1, 2, 3, 0, 0, 4, 5, 0};
  int64_t o_rows[13] = {0};
  int k;
  (void)state;
  c.num_speculative_tokens = 2;
  c.enable_adaptive_verification = 1;
  b = ts_builder("ROCM_AITER_MLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  expect_pages(m, batch, 3, (int32_t[]){10, 10, 10}, (int32_t[]){10, 8, 9},
               4 * 1024 + 4 * 2); /* max_num_seqs * (max_model_len + k) */
  ts_expect_i32(m, "decode_qo_indptr", (int32_t[]){0, 3, 6, 9}, 4);
  assert_int_equal(ts_int(m, "decode_max_qo_len"), 3);
  t = ts_tensor(m, "decode_varlen_q_rows");
  assert_int_equal(t->shape[0], 9);
  for (k = 0; k < 9; ++k) assert_int_equal(((const int64_t*)t->data)[k], q_rows[k]);
  o_rows[0] = 0, o_rows[1] = 1, o_rows[2] = 2, o_rows[3] = 3, o_rows[4] = 6, o_rows[5] = 7;
  o_rows[12] = 8; /* the dump slot: the last padding row */
  t = ts_tensor(m, "decode_varlen_o_rows");
  assert_int_equal(t->shape[0], 13);
  for (k = 0; k < 13; ++k) assert_int_equal(((const int64_t*)t->data)[k], o_rows[k]);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* random batches: decodes of 1..3 tokens (k = 2) or 1, then prefills; block 16 or 1 */
static void test_random_against_naive(void** state) {
  attn_metadata_t* m = NULL;
  uint64_t rng = 77;
  int it;
  (void)state;
  for (it = 0; it < 300; ++it) {
    const int full = it % 2, spec_k = (it / 2) % 2 ? 2 : 0, bs = (it / 4) % 3 ? 16 : 1;
    attn_kv_cache_spec_t spec = ts_mla_spec(bs);
    attn_builder_config_t c = aiter_config();
    int32_t q[4], s[4], len[4];
    const int64_t nd = ts_rand_range(&rng, 0, 3), np = ts_rand_range(&rng, nd ? 0 : 1, 4 - nd);
    const int32_t dq = spec_k ? (int32_t)ts_rand_range(&rng, 1, 3) : 1;
    int64_t r, total = 0;
    attn_builder_t* b;
    ts_batch* batch;
    c.num_speculative_tokens = spec_k;
    c.cudagraph_mode = full ? ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE : ATTN_CUDAGRAPH_MODE_NONE;
    for (r = 0; r < nd + np; ++r) {
      q[r] = r < nd ? dq : (int32_t)ts_rand_range(&rng, spec_k + 2, 40);
      s[r] = q[r] + (int32_t)ts_rand_range(&rng, 0, 200);
      len[r] = s[r];
    }
    batch = ts_batch_make(q, s, nd + np, bs, 0, -1);
    b = ts_builder("ROCM_AITER_MLA", &spec, &c);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    if (nd == 0) {
      assert_int_equal(ts_kind(m, "decode_paged_kv_indptr"), ATTN_FIELD_NONE);
    } else {
      const int32_t* idx = i32_of(ts_tensor(m, "decode_paged_kv_indices"));
      const int32_t* qo = i32_of(ts_tensor(m, "decode_qo_indptr"));
      expect_pages(m, batch, nd, len, len, 4 * 1024);
      for (r = 0; r < nd; ++r) total += len[r];
      if (full) assert_int_equal(idx[total], -1);
      for (r = 0; r <= nd; ++r) assert_int_equal(qo[r], r * dq);
      assert_int_equal(ts_int(m, "decode_max_qo_len"), dq);
      assert_int_equal(ts_int(m, "decode_has_persistent_metadata"), dq <= 1 + spec_k);
    }
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

static void test_bad_input(void** state) {
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = aiter_config();
  attn_builder_t* b = NULL;
  (void)state;
  c.decode_context_parallel_size = 2;
  ASSERT_ERROR(attn_builder_create("ROCM_AITER_MLA", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "ROCM_AITER_MLA with decode context parallelism is not in libattn");
  assert_null(b);
  c = aiter_config();
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E5M2; /* every fp8 cache, any block size */
  spec = ts_mla_spec(1);
  b = ts_builder("ROCM_AITER_MLA", &spec, &c);
  attn_builder_destroy(b);
  b = NULL;
  { /* a non-causal 2-token block on an fp8 cache with 16 heads: aiter has no kernel */
    static const int32_t q[2] = {2, 2}, s[2] = {9, 30};
    ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
    attn_metadata_t* m = NULL;
    c = aiter_config();
    c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
    c.num_attention_heads = 16;
    c.num_speculative_tokens = 1;
    spec = ts_mla_spec(16);
    b = ts_builder("ROCM_AITER_MLA", &spec, &c);
    batch->common.causal = 0;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "AITER has no non-causal fp8 MLA kernel");
    c.num_attention_heads = 32; /* folds onto a kernel */
    attn_builder_destroy(b);
    b = ts_builder("ROCM_AITER_MLA", &spec, &c);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "decode_scheduler_is_causal"), 0);
    assert_int_equal(ts_int(m, "decode_max_qo_len"), 2);
    attn_builder_destroy(b);
    b = NULL;
    ts_batch_free(batch);
  }
  spec = ts_spec(); /* not an MLA spec */
  ASSERT_ERROR(attn_builder_create("ROCM_AITER_MLA", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "ROCM_AITER_MLA builds metadata for MLA KV cache specs only");
  assert_null(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_uniform_mtp_padding),
      cmocka_unit_test(test_adaptive_varlen),
      cmocka_unit_test(test_random_against_naive),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests_name("rocm_aiter_mla", tests, NULL, NULL);
}
