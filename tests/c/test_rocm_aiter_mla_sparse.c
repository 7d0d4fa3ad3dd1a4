/* ROCM_AITER_MLA_SPARSE (vLLM 0.33's ROCMAiterMLASparseMetadataBuilder): the class answers, a
 * hand-checked batch (sparse lengths, their cumsum and its tail, qo_indptr, last-page lengths,
 * get_mla_metadata_v1's arguments and its relaunch cache), the dense-MHA prefill variant, the
 * shrink tail of paged_kv_indices, sink layers (no prefill part, no persistent metadata), long
 * BF16 prefills, the ROCm platform's unaligned context chunks, random batches against a naive
 * restatement of build(), bad input. */
#include <stdlib.h>
#include <string.h>

#include "mla_chunks_naive.h"
#include "test_support.h"

#define NAME "ROCM_AITER_MLA_SPARSE"

/* 8 sequences, 2048 tokens, max_model_len 1024, 20 query heads (aiter pads to 32). */
static attn_builder_config_t rocm_config(void) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 1024;
  c.num_attention_heads = 20;
  c.model_dtype = ATTN_KV_DTYPE_BFLOAT16;
  c.num_sms = 304;
  return c;
}

static attn_kv_cache_spec_t rocm_spec(int32_t block_size, int32_t topk) {
  attn_kv_cache_spec_t s = ts_mla_spec(block_size);
  s.index_topk = topk;
  return s;
}

static int32_t* i32_of(const attn_tensor_t* t) {
  return (int32_t*)((char*)t->data + t->byte_offset);
}

static int32_t threshold_of(attn_builder_t* b) {
  int32_t t = -1;
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &t));
  return t;
}

/* UNIFORM_BATCH; threshold 1, 1 + k with k speculative tokens (spec-as-decode); no block-table
 * update */
static void test_class(void** state) {
  attn_kv_cache_spec_t spec = rocm_spec(16, 0);
  attn_builder_config_t c = rocm_config();
  attn_builder_t* b;
  int32_t level = -1, supported = 1;
  (void)state;
  ASSERT_OK(attn_backend_cudagraph_support(NAME, &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  b = ts_builder(NAME, &spec, &c);
  assert_int_equal(threshold_of(b), 1);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
  assert_int_equal(supported, 0);
  attn_builder_destroy(b);
  c.num_speculative_tokens = 3;
  b = ts_builder(NAME, &spec, &c);
  assert_int_equal(threshold_of(b), 4);
  attn_builder_destroy(b);
}

/* top-k 8, queries [1, 1, 4] onto [5, 20, 30]: two decodes, one prefill (30 > 8: no dense MHA).
 * Sparse lengths: 5; min(20, 8); min(27..30, 8) x4 -> indptr [0, 5, 13, 21, 29, 37, 45] and its
 * tail 45; req_id_per_token [0, 1, 2 x4]; qo_indptr 0..6; six ones; 48 zero indices; aiter's
 * persistent schedule with 20 heads padded to 32 and max_split_per_batch
 * next_power_of_2(max(1, min(30, 8) // 128)) = 1; the same batch again does not relaunch it. */
static void test_hand_checked(void** state) {
  static const int32_t q[3] = {1, 1, 4}, s[3] = {5, 20, 30};
  attn_kv_cache_spec_t spec = rocm_spec(16, 8);
  attn_builder_config_t c = rocm_config();
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_builder_t* b = ts_builder(NAME, &spec, &c);
  attn_metadata_t* m = NULL;
  const int32_t* indptr;
  int k;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), NAME);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 0);
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 30);
  ts_expect_i32(m, "req_id_per_token", (int32_t[]){0, 1, 2, 2, 2, 2}, 6);
  ts_expect_i32(m, "paged_kv_indptr", (int32_t[]){0, 5, 13, 21, 29, 37, 45}, 7);
  indptr = i32_of(ts_tensor(m, "paged_kv_indptr"));
  /* the persistent buffer's tail (max_num_batched_tokens + 1 entries) repeats the last value */
  assert_int_equal(indptr[7], 45);
  assert_int_equal(indptr[2048], 45);
  ts_expect_i32(m, "qo_indptr", (int32_t[]){0, 1, 2, 3, 4, 5, 6}, 7);
  ts_expect_i32(m, "paged_kv_last_page_len", (int32_t[]){1, 1, 1, 1, 1, 1}, 6);
  assert_int_equal(ts_tensor(m, "paged_kv_indices")->shape[0], 48);
  for (k = 0; k < 48; ++k) assert_int_equal(i32_of(ts_tensor(m, "paged_kv_indices"))[k], 0);
  assert_int_equal(ts_int(m, "attn_out_dtype"), ATTN_KV_DTYPE_BFLOAT16);
  assert_int_equal(ts_int(m, "remapped_epoch"), -1);
  assert_int_equal(ts_int(m, "has_persistent_metadata"), 1);
  assert_int_equal(ts_int(m, "scheduler_launched"), 1);
  assert_int_equal(ts_int(m, "scheduler_num_heads_per_head_k"), 32);
  assert_int_equal(ts_int(m, "scheduler_num_heads_k"), 1);
  assert_int_equal(ts_int(m, "scheduler_is_causal"), 1);
  assert_int_equal(ts_int(m, "scheduler_page_size"), 1);
  assert_int_equal(ts_int(m, "scheduler_kv_granularity"), 16);
  assert_int_equal(ts_int(m, "scheduler_max_seqlen_qo"), 1);
  assert_int_equal(ts_int(m, "scheduler_uni_seqlen_qo"), 1);
  assert_int_equal(ts_int(m, "scheduler_fast_mode"), 1);
  assert_int_equal(ts_int(m, "scheduler_max_split_per_batch"), 1);
  assert_int_equal(ts_int(m, "scheduler_dtype_q"), ATTN_KV_DTYPE_BFLOAT16);
  assert_int_equal(ts_int(m, "scheduler_dtype_kv"), ATTN_KV_DTYPE_BFLOAT16);
  /* the ROCm platform's prefill backend */
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 4); /* ROCM_AITER_FA */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "has_persistent_metadata"), 1);
  assert_int_equal(ts_int(m, "scheduler_launched"), 0);
  /* a longer sequence past top-k keeps the clamped key: still no relaunch; a shorter one does */
  batch->seq[1] = 21;
  batch->common.max_seq_len = 30;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "scheduler_launched"), 0);
  batch->seq[0] = 6;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "scheduler_launched"), 1);
  ts_expect_i32(m, "paged_kv_indptr", (int32_t[]){0, 6, 14, 22, 30, 38, 46}, 7);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* top-k 64: the prefill fits (30 <= 64), so use_dense_mha and build() covers the decodes only:
 * req_id_per_token [0, 1], indptr [0, 5, 25], qo_indptr [0, 1, 2], 128 indices. The indices'
 * shrink tail is re-zeroed (the forward writes them: 7s here), the rest kept. */
static void test_dense_prefill_and_shrink_tail(void** state) {
  static const int32_t q[3] = {1, 1, 4}, s[3] = {5, 20, 30};
  static const int32_t q2[3] = {1, 1, 40}, s2[3] = {5, 20, 90};
  attn_kv_cache_spec_t spec = rocm_spec(16, 64);
  attn_builder_config_t c = rocm_config();
  ts_batch* dense = ts_batch_make(q, s, 3, 16, 0, -1);
  ts_batch* sparse = ts_batch_make(q2, s2, 3, 16, 0, -1);
  attn_builder_t* b = ts_builder(NAME, &spec, &c);
  attn_metadata_t* m = NULL;
  int32_t* idx;
  int64_t k, n;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &sparse->common, 0, &m, NULL)); /* 90 > 64: 42 tokens */
  assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 0);
  n = ts_tensor(m, "paged_kv_indices")->shape[0];
  assert_int_equal(n, 42 * 64);
  idx = i32_of(ts_tensor(m, "paged_kv_indices"));
  for (k = 0; k < n; ++k) idx[k] = 7; /* the forward's remap */
  ASSERT_OK(attn_build(b, 0, &dense->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 1);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  ts_expect_i32(m, "req_id_per_token", (int32_t[]){0, 1}, 2);
  ts_expect_i32(m, "paged_kv_indptr", (int32_t[]){0, 5, 25}, 3);
  ts_expect_i32(m, "qo_indptr", (int32_t[]){0, 1, 2}, 3);
  ts_expect_i32(m, "paged_kv_last_page_len", (int32_t[]){1, 1}, 2);
  assert_int_equal(ts_tensor(m, "paged_kv_indices")->shape[0], 128);
  for (k = 0; k < 128; ++k) assert_int_equal(idx[k], 7);
  for (k = 128; k < 42 * 64; ++k) assert_int_equal(idx[k], 0);
  assert_int_equal(ts_int(m, "scheduler_launched"), 1);
  attn_builder_destroy(b);
  ts_batch_free(dense);
  ts_batch_free(sparse);
}

/* A first layer with attention sinks has no prefill backend (supports_dense_mha_prefill is
 * False): no prefill part, prefill_max_seq_len 0, build() over every request; a sink layer
 * anywhere turns the persistent metadata off. */
static void test_sinks(void** state) {
  static const int32_t q[3] = {1, 1, 4}, s[3] = {5, 20, 30};
  attn_kv_cache_spec_t spec = rocm_spec(16, 64);
  attn_builder_config_t c = rocm_config();
  attn_per_layer_params_t layers[2] = {ATTN_PER_LAYER_PARAMS_INIT, ATTN_PER_LAYER_PARAMS_INIT};
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  (void)state;
  c.layers = layers;
  c.num_layers = 2;
  layers[0].has_sinks = 1;
  b = ts_builder(NAME, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 0);
  ts_expect_none(m, "prefill_query_start_loc");
  ts_expect_none(m, "prefill_use_dense_mha");
  ts_expect_i32(m, "req_id_per_token", (int32_t[]){0, 1, 2, 2, 2, 2}, 6);
  ts_expect_i32(m, "paged_kv_indptr", (int32_t[]){0, 5, 25, 52, 80, 109, 139}, 7);
  assert_int_equal(ts_int(m, "has_persistent_metadata"), 0);
  assert_int_equal(ts_int(m, "scheduler_launched"), 0);
  ts_expect_none(m, "scheduler_max_split_per_batch");
  attn_builder_destroy(b);
  layers[0].has_sinks = 0; /* the second layer's sinks: a prefill part, no schedule */
  layers[1].has_sinks = 1;
  b = ts_builder(NAME, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_use_dense_mha"), 1);
  ts_expect_i32(m, "paged_kv_indptr", (int32_t[]){0, 5, 25}, 3);
  assert_int_equal(ts_int(m, "has_persistent_metadata"), 0);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* _is_long_bf16_prefill: prefills only, the longest past top-k, a BF16 (non-fp8) cache: no
 * persistent metadata; an fp8 cache keeps it (fp8 query and KV dtypes). */
static void test_long_bf16_prefill(void** state) {
  static const int32_t q[2] = {4, 6}, s[2] = {30, 6};
  attn_kv_cache_spec_t spec = rocm_spec(16, 8);
  attn_builder_config_t c = rocm_config();
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
  attn_builder_t* b = ts_builder(NAME, &spec, &c);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  assert_int_equal(ts_int(m, "has_persistent_metadata"), 0);
  attn_builder_destroy(b);
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  spec.dtype = ATTN_KV_DTYPE_FP8_E4M3;
  b = ts_builder(NAME, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "has_persistent_metadata"), 1);
  assert_int_equal(ts_int(m, "scheduler_dtype_q"), ATTN_KV_DTYPE_FP8_E4M3);
  assert_int_equal(ts_int(m, "scheduler_dtype_kv"), ATTN_KV_DTYPE_FP8_E4M3);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* The sparse base off CUDA (align_chunk_to_block = current_platform.is_cuda()): a context split
 * across chunks of a 100-row workspace at any token, not at block boundaries of 16. */
static void test_unaligned_context_chunks(void** state) {
  static const int32_t q[2] = {3, 5}, s[2] = {173, 65};
  attn_kv_cache_spec_t spec = rocm_spec(16, 64);
  attn_builder_config_t c = rocm_config();
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  naive_coverage cov;
  (void)state;
  (void)naive_mla_workspace; /* the dense family's workspace size: not this builder's */
  c.mla_chunked_prefill_workspace_size = 100;
  b = ts_builder(NAME, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  cov = expect_mla_chunks(m, batch->qsl, batch->seq, 2, 100, 1, 1, 1);
  assert_true(cov.chunks >= 2);
  assert_true(cov.continuation);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* random batches (decodes of 1..3 tokens with k = 2, then prefills; padded tokens on some)
 * against a naive restatement of build(): the covered requests, req_id_per_token, the sparse
 * lengths' cumsum, and metadata_key's relaunch rule over a sequence of builds. */
static void test_random_against_naive(void** state) {
  attn_metadata_t* m = NULL;
  uint64_t rng = 2026;
  int32_t prev_key[3][8], prev_n = -1, prev_tokens = -1, prev_mql = -1;
  const int32_t topk = 32;
  attn_kv_cache_spec_t spec = rocm_spec(16, topk);
  attn_builder_config_t c = rocm_config();
  attn_builder_t* b;
  int it, relaunches = 0, dense_seen = 0;
  (void)state;
  c.num_speculative_tokens = 2;
  b = ts_builder(NAME, &spec, &c);
  for (it = 0; it < 400; ++it) {
    int32_t q[8], s[8], expect_ids[2048], expect_indptr[2049];
    const int64_t nd = ts_rand_range(&rng, 0, 4), np = ts_rand_range(&rng, nd ? 0 : 1, 8 - nd);
    const int64_t pad = ts_rand_range(&rng, 0, 3);
    int64_t r, t, n, tokens = 0, max_seq = 0, max_q = 0, prefill_max = 0;
    int dense, persistent, same;
    ts_batch* batch;
    for (r = 0; r < nd + np; ++r) {
      /* decodes repeat one query length when prefills follow (the uniform split) */
      q[r] = r < nd ? (r == 0 || np == 0 ? (int32_t)ts_rand_range(&rng, 1, 3) : q[0])
                    : (int32_t)ts_rand_range(&rng, 4, 40);
      s[r] = q[r] + (int32_t)ts_rand_range(&rng, 0, it % 3 ? 10 : 60);
      tokens += q[r];
      if (s[r] > max_seq) max_seq = s[r];
      if (q[r] > max_q) max_q = q[r];
      if (r >= nd && s[r] > prefill_max) prefill_max = s[r];
    }
    batch = ts_batch_make(q, s, nd + np, 16, 0, pad ? tokens + pad : -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), nd); /* q <= 1 + k decodes, q >= 4 prefills */
    assert_int_equal(ts_int(m, "num_prefills"), np);
    dense = np > 0 && prefill_max <= topk;
    dense_seen += dense;
    n = dense ? nd : nd + np;
    tokens = batch->qsl[n];
    expect_indptr[0] = 0;
    for (r = 0; r < n; ++r)
      for (t = batch->qsl[r]; t < batch->qsl[r + 1]; ++t) {
        int64_t len = s[r] - q[r] + (t - batch->qsl[r]) + 1;
        if (len > topk) len = topk;
        expect_ids[t] = (int32_t)r;
        expect_indptr[t + 1] = expect_indptr[t] + (int32_t)len;
      }
    ts_expect_i32(m, "req_id_per_token", expect_ids, tokens);
    ts_expect_i32(m, "paged_kv_indptr", expect_indptr, tokens + 1);
    persistent = tokens > 0 && !(nd == 0 && np > 0 && prefill_max > topk);
    assert_int_equal(ts_int(m, "has_persistent_metadata"), persistent);
    if (!persistent) {
      assert_int_equal(ts_int(m, "scheduler_launched"), 0);
    } else {
      same = prev_n == n && prev_tokens == tokens && prev_mql == max_q;
      for (r = 0; same && r < n; ++r)
        same = prev_key[0][r] == (s[r] < topk ? s[r] : topk) &&
               prev_key[1][r] == (s[r] - q[r] < topk ? s[r] - q[r] : topk) &&
               prev_key[2][r] == q[r];
      assert_int_equal(ts_int(m, "scheduler_launched"), !same);
      if (!same) {
        ++relaunches;
        prev_n = (int32_t)n, prev_tokens = (int32_t)tokens, prev_mql = (int32_t)max_q;
        for (r = 0; r < n; ++r) {
          prev_key[0][r] = s[r] < topk ? s[r] : topk;
          prev_key[1][r] = s[r] - q[r] < topk ? s[r] - q[r] : topk;
          prev_key[2][r] = q[r];
        }
      }
      {
        int64_t want = (max_seq < topk ? max_seq : topk) / 128, splits = 1;
        if (want < 1) want = 1;
        while (splits < want) splits *= 2;
        assert_int_equal(ts_int(m, "scheduler_max_split_per_batch"), splits);
      }
    }
    ts_batch_free(batch);
  }
  assert_true(relaunches > 10);
  assert_true(dense_seen > 10);
  attn_builder_destroy(b);
}

static void test_bad_input(void** state) {
  attn_kv_cache_spec_t spec = rocm_spec(16, 0);
  attn_builder_config_t c = rocm_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  (void)state;
  c.decode_context_parallel_size = 2;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "ROCM_AITER_MLA_SPARSE does not support decode context parallelism");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  c = rocm_config();
  c.num_attention_heads = 136; /* > 128 and not a multiple of 16 */
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->num_attention_heads=136");
  c.num_attention_heads = 144; /* a multiple of 16 */
  b = ts_builder(NAME, &spec, &c);
  attn_builder_destroy(b);
  b = (attn_builder_t*)UNTOUCHED_PTR;
  c = rocm_config();
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E5M2;
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "does not support config->cache_dtype");
  c = rocm_config();
  spec = ts_spec(); /* not an MLA spec */
  ASSERT_ERROR(attn_builder_create(NAME, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "ROCM_AITER_MLA_SPARSE builds metadata for MLA KV cache specs only");
  assert_ptr_equal(b, UNTOUCHED_PTR);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_class),
      cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_dense_prefill_and_shrink_tail),
      cmocka_unit_test(test_sinks),
      cmocka_unit_test(test_long_bf16_prefill),
      cmocka_unit_test(test_unaligned_context_chunks),
      cmocka_unit_test(test_random_against_naive),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests_name("rocm_aiter_mla_sparse", tests, NULL, NULL);
}
