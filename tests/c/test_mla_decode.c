/* The decode side of the MLA family at vLLM 0.33: FLASHINFER_MLA's VARLEN split and its decode
 * fields (query_start_loc, the promised max_query_len bound, the unbuilt flattened rows),
 * TRITON_MLA's UNIFORM split (threshold 1 + k), FLASHMLA's padded uniform decode batches, its
 * scheduler inputs with DCP (q heads x DCP size) and its persistent fp8 tile-scheduler buffers
 * under full CUDA graphs, the non-causal multi-token decode path (and its refusals), capture,
 * DCP, and seeded random batches against a naive restatement of vLLM 0.33's split and decode
 * fields. Hand-checked values are worked out in the comments. */
#include "test_support.h"

/* 8 sequences, 2048 tokens, max_model_len 1024, 32 query heads, sm90, full CUDA graphs. */
static attn_builder_config_t mla_config(void) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 1024;
  return c;
}

static const int32_t* data_of(const attn_tensor_t* t) {
  return (const int32_t*)((const char*)t->data + t->byte_offset);
}

static void expect_split(const attn_metadata_t* m, int64_t nd, int64_t ndt, int64_t np) {
  assert_int_equal(ts_int(m, "num_decodes"), nd);
  assert_int_equal(ts_int(m, "num_decode_tokens"), ndt);
  assert_int_equal(ts_int(m, "num_prefills"), np);
}

static int32_t threshold_of(attn_builder_t* b) {
  int32_t t = -1;
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &t));
  return t;
}

/* FLASHINFER_MLA, k = 3 (threshold 4), VARLEN: queries [4, 2, 4, 9] split at the first query
 * longer than 4: three decodes (10 tokens), one prefill. Its decode part: query_start_loc
 * [0, 4, 6, 10], max_query_len = min(common max_query_len 9, threshold 4) = 4 (the promised
 * bound, not the decodes' measured 4 by coincidence: see the second batch), query_len 0 and
 * the flattened rows None (the impl builds them lazily). ALWAYS: capture of a mixed batch is
 * still refused by MLA's decode-only capture rule. */
static void test_flashinfer_mla_decode(void** state) {
  static const int32_t q[4] = {4, 2, 4, 9}, s[4] = {40, 12, 30, 9};
  static const int32_t q2[3] = {2, 1, 9}, s2[3] = {20, 7, 9};
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 4, 64, 0, -1);
  attn_metadata_t* m = NULL;
  int32_t level = -1;
  (void)state;
  c.num_speculative_tokens = 3;
  b = ts_builder("FLASHINFER_MLA", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  assert_int_equal(threshold_of(b), 4);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_split(m, 3, 10, 1);
  ts_expect_i32(m, "decode_query_start_loc", (int32_t[]){0, 4, 6, 10}, 4);
  assert_ptr_equal(data_of(ts_tensor(m, "decode_query_start_loc")), batch->qsl);
  assert_int_equal(ts_int(m, "decode_max_query_len"), 4);
  assert_int_equal(ts_int(m, "decode_query_len"), 0);
  ts_expect_none(m, "decode_flattened_block_table");
  ts_expect_none(m, "decode_flattened_seq_lens");
  ts_expect_none(m, "decode_flattened_row_req");
  ts_expect_i32(m, "decode_seq_lens", (int32_t[]){40, 12, 30}, 3);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL),
               ATTN_ERR_UNSUPPORTED, "max_query_len=9 exceeds reorder_batch_threshold=4");
  ts_batch_free(batch);
  /* decodes [2, 1] (measured 2), common max_query_len 9: the bound is min(9, 4) = 4 */
  batch = ts_batch_make(q2, s2, 3, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_split(m, 2, 3, 1);
  assert_int_equal(ts_int(m, "decode_max_query_len"), 4);
  ts_expect_i32(m, "decode_query_start_loc", (int32_t[]){0, 2, 3}, 3);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* TRITON_MLA at 0.33: UNIFORM query support, so k = 2 makes the threshold 3. [3, 3, 3] is all
 * decodes; [3, 1, 3] splits at the first query differing from the first (index 1): one decode
 * (3 tokens), two prefills; a padded [3, 3, 0] batch is all decodes; capture of [3, 3] works. */
static void test_triton_mla_uniform(void** state) {
  static const int32_t qa[3] = {3, 3, 3}, qb[3] = {3, 1, 3}, qc[3] = {3, 3, 0};
  static const int32_t s[3] = {20, 30, 40}, sc[3] = {20, 30, 0};
  attn_kv_cache_spec_t spec = ts_mla_spec(16);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  (void)state;
  c.num_speculative_tokens = 2;
  b = ts_builder("TRITON_MLA", &spec, &c);
  assert_int_equal(threshold_of(b), 3);
  batch = ts_batch_make(qa, s, 3, 16, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_split(m, 3, 9, 0);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  expect_split(m, 3, 9, 0);
  ts_batch_free(batch);
  batch = ts_batch_make(qb, s, 3, 16, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_split(m, 1, 3, 2);
  ts_batch_free(batch);
  batch = ts_batch_make(qc, sc, 3, 16, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_split(m, 3, 6, 0);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* FLASHMLA (threshold 128, UNIFORM): the padded uniform decode batch q = [1, 0], ctx = [5, 0]
 * (block 64) that vLLM 0.33 builds: two decodes, one token; the scheduler inputs are the
 * decodes' lengths [6, 0] and max query 1 x 32 heads. With k = 2, the padded spec batch
 * [3, 3, 0, 0] is four decodes, 3 x 32 = 96 q tokens per KV head. With DCP 2 the threshold is
 * 1 (FLASHMLA has no DCP with varlen) and the query heads double: [1, 1] gives 1 x 32 x 2 = 64,
 * the cache lengths are this rank's ([5, 17] of [10, 33]). */
static void test_flashmla_padded_and_dcp(void** state) {
  static const int32_t q[2] = {1, 0}, s[2] = {6, 0};
  static const int32_t qs[4] = {3, 3, 0, 0}, ss[4] = {50, 9, 0, 0};
  static const int32_t qd[2] = {1, 1}, sd[2] = {10, 33};
  int32_t local[2] = {5, 17};
  int64_t local_shape[1] = {2};
  attn_tensor_t local_t = ts_host_tensor(local, 1, local_shape, ATTN_DTYPE_INT, 32);
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 2, 64, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  b = ts_builder("FLASHMLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_split(m, 2, 1, 0);
  ts_expect_i32(m, "decode_scheduler_cache_seqlens", (int32_t[]){6, 0}, 2);
  assert_int_equal(ts_int(m, "decode_scheduler_num_q_tokens_per_head_k"), 32);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  expect_split(m, 2, 1, 0);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  /* spec decode k = 2 with padding: 3 x 32 = 96 q tokens per KV head */
  c.num_speculative_tokens = 2;
  b = ts_builder("FLASHMLA", &spec, &c);
  batch = ts_batch_make(qs, ss, 4, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_split(m, 4, 6, 0);
  assert_int_equal(ts_int(m, "decode_scheduler_num_q_tokens_per_head_k"), 96);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  /* DCP 2: threshold 1 (no DCP with varlen), heads x 2 */
  c.num_speculative_tokens = 0;
  c.decode_context_parallel_size = 2;
  b = ts_builder("FLASHMLA", &spec, &c);
  assert_int_equal(threshold_of(b), 1);
  batch = ts_batch_make(qd, sd, 2, 64, 0, -1);
  batch->common.dcp_local_seq_lens = &local_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_split(m, 2, 2, 0);
  assert_int_equal(ts_int(m, "decode_scheduler_num_q_tokens_per_head_k"), 64);
  ts_expect_i32(m, "decode_scheduler_cache_seqlens", (int32_t[]){5, 17}, 2);
  ts_expect_i32(m, "decode_dcp_tot_seq_lens", (int32_t[]){10, 33}, 2);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* FLASHMLA with an fp8 cache under full CUDA graphs: vLLM 0.33 keeps a zeroed (num_SMs, 8) and a
 * (max_num_seqs + 1) int32 buffer for get_mla_metadata_dense_fp8's output; libattn returns
 * them whole (the same memory every build); without full graphs, or with a 16-bit cache,
 * there are none; an unknown SM count is refused at create. */
static void test_flashmla_fp8_buffers(void** state) {
  static const int32_t q[3] = {1, 1, 1}, s[3] = {70, 5, 129};
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = mla_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 64, 0, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t *tile, *splits;
  const void* first;
  int64_t i;
  (void)state;
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  ASSERT_ERROR(attn_builder_create("FLASHMLA", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->num_sms=0: FLASHMLA with an fp8 KV cache and full CUDA graphs keeps a "
               "(num_SMs, 8) tile-scheduler buffer");
  c.num_sms = 78;
  b = ts_builder("FLASHMLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  tile = ts_tensor(m, "decode_tile_scheduler_metadata_buffer");
  splits = ts_tensor(m, "decode_num_splits_buffer");
  assert_non_null(tile);
  assert_non_null(splits);
  assert_int_equal(tile->ndim, 2);
  assert_int_equal(tile->shape[0], 78);
  assert_int_equal(tile->shape[1], 8);
  assert_int_equal(splits->ndim, 1);
  assert_int_equal(splits->shape[0], 9);
  for (i = 0; i < 78 * 8; ++i) assert_int_equal(data_of(tile)[i], 0);
  first = data_of(tile);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_ptr_equal(data_of(ts_tensor(m, "decode_tile_scheduler_metadata_buffer")), first);
  ts_expect_none(m, "decode_tile_scheduler_metadata");
  attn_builder_destroy(b);
  c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_PIECEWISE;
  b = ts_builder("FLASHMLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "decode_tile_scheduler_metadata_buffer");
  ts_expect_none(m, "decode_num_splits_buffer");
  attn_builder_destroy(b);
  c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
  c.cache_dtype = ATTN_KV_DTYPE_BFLOAT16; /* 0.33 accepts 16-bit caches too */
  b = ts_builder("FLASHMLA", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "decode_tile_scheduler_metadata_buffer");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* vLLM 0.33's non-causal multi-token decode (common->causal = 0): for FLASHINFER_MLA and
 * TRITON_MLA every request is a decode, whatever the threshold (1 here), provided the queries
 * are one uniform block with trailing zero-length padding; others refuse; a per-request causal
 * tensor keeps the causal path. */
static void test_non_causal(void** state) {
  static const int32_t q[3] = {3, 3, 0}, s[3] = {20, 9, 0};
  static const int32_t bad[3] = {3, 2, 0}, gap[3] = {3, 0, 3};
  static const char* const supported[2] = {"FLASHINFER_MLA", "TRITON_MLA"};
  static const char* const refusing[3] = {"FLASHMLA", "FLASH_ATTN_MLA", "CUTLASS_MLA"};
  static const int32_t refusing_blocks[3] = {64, 64, 128};
  int32_t causal_rows[3] = {1, 1, 1};
  int64_t rows_shape[1] = {3};
  attn_tensor_t rows_t = ts_host_tensor(causal_rows, 1, rows_shape, ATTN_DTYPE_INT, 32);
  attn_builder_config_t c = mla_config();
  attn_metadata_t* m = NULL;
  int v;
  (void)state;
  for (v = 0; v < 2; ++v) {
    attn_kv_cache_spec_t spec = ts_mla_spec(64);
    attn_builder_t* b = ts_builder(supported[v], &spec, &c);
    ts_batch* batch = ts_batch_make(q, s, 3, 64, 0, -1);
    assert_int_equal(threshold_of(b), 1);
    batch->common.causal = 0;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    expect_split(m, 3, 6, 0);
    ts_expect_i32(m, "decode_seq_lens", (int32_t[]){20, 9, 0}, 3);
    /* a per-request tensor is not `causal is False`: the causal split (queries of 3 > 1) */
    batch->common.causal_per_request = &rows_t;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    expect_split(m, 0, 0, 3);
    ts_batch_free(batch);
    batch = ts_batch_make(bad, s, 3, 64, 0, -1);
    batch->common.causal = 0;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "Non-causal MLA requires a uniform query block; got query lengths [3, 2, 0]");
    ts_batch_free(batch);
    batch = ts_batch_make(gap, (int32_t[]){20, 9, 5}, 3, 64, 0, -1);
    batch->common.causal = 0;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "got query lengths [3, 0, 3]");
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
  for (v = 0; v < 3; ++v) {
    attn_kv_cache_spec_t spec = ts_mla_spec(refusing_blocks[v]);
    attn_builder_t* b = ts_builder(refusing[v], &spec, &c);
    ts_batch* batch = ts_batch_make(q, s, 3, refusing_blocks[v], 0, -1);
    batch->common.causal = 0;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
                 "non-causal multi-token MLA (common->causal=0) requires an explicitly "
                 "supported attention group");
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

/* ---- seeded random batches against a naive restatement ------------------------------------ */

/* vLLM 0.33's split_decodes_and_prefills as written there (treat_short_extends_as_decodes). */
static void naive_split(const int32_t* q, int64_t n, int64_t tokens, int64_t max_q, int64_t thr,
                        int uniform, int64_t* nd, int64_t* ndt) {
  int64_t i, first = -1, acc = 0;
  int all_uniform = 1;
  *nd = n;
  *ndt = tokens;
  if (max_q <= thr && (!uniform || thr <= 1)) return;
  if (n == 0) return;
  if (q[0] > thr) {
    *nd = 0;
    *ndt = 0;
    return;
  }
  if (uniform) {
    for (i = 0; i < n; ++i) all_uniform &= q[i] == q[0] || q[i] == 0;
    if (all_uniform) return;
  }
  for (i = 0; i < n && first < 0; ++i)
    if (uniform ? (q[i] != q[0] && q[i] != 0) : q[i] > thr) first = i;
  if (first < 0) return;
  for (i = 0; i < first; ++i) acc += q[i];
  *nd = first;
  *ndt = acc;
}

static void test_random_decode(void** state) {
  static const char* const variants[5] = {"FLASHMLA", "FLASH_ATTN_MLA", "CUTLASS_MLA",
                                          "FLASHINFER_MLA", "TRITON_MLA"};
  static const int32_t blocks[5] = {64, 16, 128, 64, 16};
  static const int uniform[5] = {1, 0, 1, 0, 1};
  static const int spec_as_decode[5] = {1, 1, 0, 1, 1};
  static const int32_t base[5] = {128, 512, 1, 1, 1};
  uint64_t rng = 0x5eed0017u;
  int iter, checked_prefills = 0, checked_bound = 0;
  (void)state;
  for (iter = 0; iter < 400; ++iter) {
    const int v = (int)ts_rand_range(&rng, 0, 4);
    const int32_t k = (int32_t)ts_rand_range(&rng, 0, 3);
    const int64_t n = ts_rand_range(&rng, 1, 8);
    int32_t q[8], s[8];
    int64_t i, tokens = 0, max_q = 0, nd, ndt, thr, measured = 0;
    attn_kv_cache_spec_t spec = ts_mla_spec(blocks[v]);
    attn_builder_config_t c = mla_config();
    attn_builder_t* b;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    c.num_speculative_tokens = k;
    b = ts_builder(variants[v], &spec, &c);
    thr = spec_as_decode[v] && k > 0 ? (base[v] > 1 + k ? base[v] : 1 + k) : base[v];
    assert_int_equal(threshold_of(b), thr);
    for (i = 0; i < n; ++i) {
      const int64_t r = ts_rand_range(&rng, 0, 9);
      q[i] = (int32_t)(r < 5 ? 1 + k : r < 7 ? ts_rand_range(&rng, 1, 1 + k)
                                             : r < 8 ? 0 : ts_rand_range(&rng, 1, 300));
      s[i] = q[i] + (int32_t)ts_rand_range(&rng, q[i] ? 1 : 0, 600);
      if (q[i] == 0) s[i] = 0;
      tokens += q[i];
      if (q[i] > max_q) max_q = q[i];
    }
    batch = ts_batch_make(q, s, n, blocks[v], 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    naive_split(q, n, tokens, max_q, thr, uniform[v], &nd, &ndt);
    expect_split(m, nd, ndt, n - nd);
    checked_prefills += nd < n;
    for (i = 0; i < nd; ++i)
      if (q[i] > measured) measured = q[i];
    if (nd > 0) {
      ts_expect_i32(m, "decode_seq_lens", s, nd);
      if (v == 3) { /* FLASHINFER_MLA: the promised bound */
        assert_int_equal(ts_int(m, "decode_max_query_len"), max_q < thr ? max_q : thr);
        ts_expect_i32(m, "decode_query_start_loc", batch->qsl, nd + 1);
        checked_bound += max_q > thr;
      }
      if (v == 1) assert_int_equal(ts_int(m, "decode_max_query_len"), measured);
      if (v == 0)
        assert_int_equal(ts_int(m, "decode_scheduler_num_q_tokens_per_head_k"), measured * 32);
    } else {
      ts_expect_none(m, "decode_block_table");
    }
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
  print_message("random decode batches: %d with prefills, %d with the bound below max_query_len\n",
                checked_prefills, checked_bound);
  assert_true(checked_prefills > 50 && checked_bound > 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flashinfer_mla_decode), cmocka_unit_test(test_triton_mla_uniform),
      cmocka_unit_test(test_flashmla_padded_and_dcp), cmocka_unit_test(test_flashmla_fp8_buffers),
      cmocka_unit_test(test_non_causal),           cmocka_unit_test(test_random_decode),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
