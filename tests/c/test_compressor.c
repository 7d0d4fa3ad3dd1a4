/* DEEPSEEK_V4_COMPRESSOR and DEEPSEEK_V41_COMPRESSOR at vLLM 0.33 (the CompressorMetadataBuilder
 * of models/deepseek_v4/compressor.py and models/deepseek_v41/compressor.py): ALWAYS, threshold
 * None; V4's block table clamped at 0 in place, token_to_req_indices, num_decode_tokens on ROCm
 * and c128_boundary; V4.1's ring slot mapping, on a FULL_ATTENTION and on a CIRCULAR_BUFFER
 * spec (one-column table); the refusals; and seeded random batches against a naive
 * restatement. Hand-checked values are worked out in the comments. */
#include "test_support.h"

#define V4 "DEEPSEEK_V4_COMPRESSOR"
#define V41 "DEEPSEEK_V41_COMPRESSOR"

static attn_kv_cache_spec_t v4_spec(int32_t block_size) {
  attn_kv_cache_spec_t s = ts_mla_spec(block_size);
  s.kind = ATTN_KV_SLIDING_WINDOW;
  s.head_size = 512;
  s.dtype = ATTN_KV_DTYPE_FLOAT32;
  s.sliding_window = block_size == 4 ? 8 : 128;
  return s;
}

static attn_kv_cache_spec_t ring_spec(int32_t capacity) {
  attn_kv_cache_spec_t s = ts_spec();
  s.block_size = capacity;
  s.num_kv_heads = 1;
  s.head_size = 1024;
  s.dtype = ATTN_KV_DTYPE_FLOAT32;
  return s;
}

static void expect_bool(const attn_metadata_t* m, const char* name, int want) {
  if (ts_kind(m, name) == ATTN_FIELD_NONE) fail_msg("%s is None", name);
  assert_int_equal(ts_int(m, name) != 0, want);
}

static void test_levels(void** state) {
  const char* names[2] = {V4, V41};
  attn_kv_cache_spec_t specs[2];
  attn_builder_config_t c = ts_config();
  int i;
  (void)state;
  specs[0] = v4_spec(8);
  specs[1] = ring_spec(8);
  for (i = 0; i < 2; ++i) {
    int32_t level = -1, th = -1, supported = 1;
    attn_builder_t* b;
    ASSERT_OK(attn_backend_cudagraph_support(names[i], &specs[i], &c, &level));
    assert_int_equal(level, ATTN_CG_ALWAYS);
    b = ts_builder(names[i], &specs[i], &c);
    ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
    assert_int_equal(th, ATTN_NO_REORDER);
    ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
    assert_int_equal(supported, 0);
    supported = 1;
    ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
    assert_int_equal(supported, 0);
    attn_builder_destroy(b);
  }
  /* V4 takes an MLA spec too */
  specs[0] = ts_mla_spec(4);
  attn_builder_destroy(ts_builder(V4, &specs[0], &c));
}

/* V4, block 8 (C128), width 20. Queries [1, 3] onto [130, 100]: token_to_req [0, 1, 1, 1].
 * The table's padding columns (request 0 has 17 blocks, request 1 13) set to -1 become 0 in
 * place; block_table is the input tensor itself. c128_boundary from the upper bound [130, 130]:
 * request 0 starts at 129 (129 % 128 + 1 = 2), request 1 at 127 (127 + 3 = 130 >= 128): True.
 * With the bound [130, 100]: 1 + 1 and 97 + 3 = 100 < 128: False. Without it: None. On ROCm
 * num_decode_tokens (threshold 1) is 1; on CUDA None. Block size 4, or async scheduling with
 * speculative tokens: c128_boundary None. */
static void test_v4_hand_checked(void** state) {
  static const int32_t q[2] = {1, 3}, s[2] = {130, 100}, t2r[4] = {0, 1, 1, 1};
  int32_t bound[2] = {130, 130};
  int64_t bshape[1] = {2};
  attn_tensor_t bound_t = ts_host_tensor(bound, 1, bshape, ATTN_DTYPE_INT, 32);
  attn_kv_cache_spec_t spec = v4_spec(8);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(V4, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 2, 8, 20, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int64_t i;
  (void)state;
  for (i = 0; i < 2 * 20; ++i)
    if (batch->bt[i] == 0) batch->bt[i] = -1;
  assert_int_equal(batch->bt[19], -1);
  batch->common.seq_lens_cpu_upper_bound = &bound_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  t = ts_tensor(m, "block_table");
  assert_ptr_equal(t->data, batch->bt);
  for (i = 0; i < 2 * 20; ++i) assert_true(batch->bt[i] >= 0);
  assert_int_equal(batch->bt[19], 0);
  assert_int_equal(batch->bt[16], 17);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  assert_int_equal(ts_int(m, "block_size"), 8);
  ts_expect_i32(m, "token_to_req_indices", t2r, 4);
  ts_expect_none(m, "num_decode_tokens");
  expect_bool(m, "c128_boundary", 1);
  bound[1] = 100;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_bool(m, "c128_boundary", 0);
  batch->common.seq_lens_cpu_upper_bound = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "c128_boundary");
  attn_builder_destroy(b);
  /* ROCm: num_decode_tokens */
  c.platform_rocm = 1;
  b = ts_builder(V4, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decode_tokens"), 1);
  attn_builder_destroy(b);
  /* async speculative decoding: no c128_boundary */
  c.platform_rocm = 0;
  c.async_scheduling = 1;
  c.num_speculative_tokens = 1;
  batch->common.seq_lens_cpu_upper_bound = &bound_t;
  b = ts_builder(V4, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "c128_boundary");
  attn_builder_destroy(b);
  /* block size 4 (C4): none either */
  c = ts_config();
  spec = v4_spec(4);
  b = ts_builder(V4, &spec, &c);
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 2, 4, 0, -1);
  batch->common.seq_lens_cpu_upper_bound = &bound_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "c128_boundary");
  assert_int_equal(ts_int(m, "block_size"), 4);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* V4.1, capacity 8. Queries [2, 1, 3] onto [18, 5, 40] (positions 16, 17 | 4 | 37, 38, 39),
 * request 1 on the null block (column 0 = 0), request 0 on block b0, request 2 on b2; 8 slot
 * rows (2 padding). Ring slots: b0 * 8 + 0, b0 * 8 + 1 | -1 | b2 * 8 + 5, 6, 7 | -1, -1.
 * token_to_req [0, 0, 1, 2, 2, 2]; query_start_loc the input's; the PCP fields None. */
static void test_v41_hand_checked(void** state) {
  static const int32_t q[3] = {2, 1, 3}, s[3] = {18, 5, 40}, t2r[6] = {0, 0, 1, 2, 2, 2};
  int64_t pos[8] = {16, 17, 4, 37, 38, 39, 0, 0}, shape[1] = {8};
  attn_tensor_t pt = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
  attn_kv_cache_spec_t spec = ring_spec(8);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(V41, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 8, 0, 8);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int64_t b0, b2;
  (void)state;
  batch->bt[1 * batch->width] = 0;
  b0 = batch->bt[0];
  b2 = batch->bt[2 * batch->width];
  batch->common.positions = &pt;
  batch->common.num_actual_tokens = 6;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  t = ts_tensor(m, "slot_mapping");
  assert_int_equal(t->shape[0], 8);
  assert_int_equal(t->dtype.bits, 64);
  {
    const int64_t want[8] = {b0 * 8, b0 * 8 + 1, -1, b2 * 8 + 5, b2 * 8 + 6, b2 * 8 + 7, -1, -1};
    const int64_t* got = (const int64_t*)t->data;
    int i;
    for (i = 0; i < 8; ++i) assert_int_equal(got[i], want[i]);
  }
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
  ts_expect_i32(m, "token_to_req_indices", t2r, 6);
  ts_expect_none(m, "gather_tokens");
  ts_expect_none(m, "ring_write_slots");
  ts_expect_none(m, "prev_row_indices");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* V4.1 on ATTN_KV_CIRCULAR_BUFFER (ABI 1.7), the layer's own CircularBufferSpec: the same
 * metadata as the FULL_ATTENTION spec of the same capacity, from a one-column table (request
 * 2's seq_len 40 needs five 8-token columns under FULL_ATTENTION, which refuses that table); no
 * column at all is refused. */
static void test_v41_circular(void** state) {
  static const int32_t q[3] = {2, 1, 3}, s[3] = {18, 5, 40};
  int64_t pos[8] = {16, 17, 4, 37, 38, 39, 0, 0}, shape[1] = {8};
  attn_tensor_t pt = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
  const attn_kv_cache_spec_t full = ring_spec(8);
  const attn_builder_config_t c = ts_config();
  ts_batch* batch = ts_batch_make(q, s, 3, 8, 0, 8);
  (void)state;
  batch->bt[1 * batch->width] = 0;
  batch->common.positions = &pt;
  batch->common.num_actual_tokens = 6;
  ts_expect_circular_as_full(V41, &full, &c, batch,
                             "common->block_table_tensor has 1 columns but request 0 needs "
                             "cdiv(seq_lens[0]=18, block_size=8)=3 blocks");
  ts_batch_free(batch);
}

/* Seeded random batches against a naive restatement: V4's clamp, token_to_req and
 * c128_boundary; V4.1's ring slots (null blocks, padding rows). */
static void test_random_vs_naive(void** state) {
  uint64_t rng = 0x5eedc0de;
  int iter;
  (void)state;
  for (iter = 0; iter < 200; ++iter) {
    const int v41 = iter % 2;
    const int32_t bs = v41 ? (iter % 4 == 1 ? 8 : 16) : (iter % 4 == 0 ? 4 : 8);
    const int64_t n = ts_rand_range(&rng, 1, 12), pad = v41 ? ts_rand_range(&rng, 0, 5) : 0;
    int32_t q[12], s[12], bound[12];
    int64_t pos[256], shape[1], bshape[1] = {n}, r, i, t = 0, tokens = 0;
    attn_tensor_t pt, bound_t;
    attn_kv_cache_spec_t spec = v41 ? ring_spec(bs) : v4_spec(bs);
    const int circular = v41 && iter % 4 == 3; /* CIRCULAR_BUFFER with a one-column table */
    attn_builder_config_t c = ts_config();
    attn_builder_t* b;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    int32_t* before;
    int crosses = 0;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&rng, 0, 12);
      s[r] = q[r] + (int32_t)ts_rand_range(&rng, 0, 300);
      bound[r] = s[r] + (int32_t)ts_rand_range(&rng, 0, 2);
      tokens += q[r];
      if (((bound[r] - q[r]) % 128) + q[r] >= 128) crosses = 1;
    }
    c.platform_rocm = (int32_t)ts_rand_range(&rng, 0, 1);
    if (circular) spec.kind = ATTN_KV_CIRCULAR_BUFFER;
    b = ts_builder(v41 ? V41 : V4, &spec, &c);
    batch = ts_batch_make(q, s, n, bs, 0, tokens + pad);
    if (circular && batch->width > 0) ts_narrow_table(batch, 1);
    batch->common.num_actual_tokens = tokens;
    for (r = 0; r < n; ++r) {
      for (i = 0; i < q[r]; ++i) pos[t++] = s[r] - q[r] + i;
      if (ts_rand_range(&rng, 0, 3) == 0) batch->bt[r * batch->width] = 0;
      for (i = 0; i < batch->width; ++i)
        if (batch->bt[r * batch->width + i] == 0 && ts_rand_range(&rng, 0, 1)) {
          if (!v41) batch->bt[r * batch->width + i] = -(int32_t)ts_rand_range(&rng, 1, 3);
        }
    }
    for (; t < tokens + pad; ++t) pos[t] = 0;
    shape[0] = tokens + pad;
    pt = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
    bound_t = ts_host_tensor(bound, 1, bshape, ATTN_DTYPE_INT, 32);
    batch->common.positions = &pt;
    batch->common.seq_lens_cpu_upper_bound = &bound_t;
    for (r = 0; r < n; ++r)
      if (bound[r] > batch->common.max_seq_len) batch->common.max_seq_len = bound[r];
    before = (int32_t*)malloc(sizeof(int32_t) * (size_t)(n * batch->width + 1));
    memcpy(before, batch->bt, sizeof(int32_t) * (size_t)(n * batch->width));
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    {
      const attn_tensor_t* tt = ts_tensor(m, "token_to_req_indices");
      assert_int_equal(tt->shape[0], tokens);
      for (i = 0; i < tokens; ++i) {
        int32_t want = 0;
        while (want < n - 1 && batch->qsl[want + 1] <= i) ++want;
        assert_int_equal(((const int32_t*)tt->data)[i], want);
      }
    }
    if (v41) {
      const int64_t* got = (const int64_t*)ts_tensor(m, "slot_mapping")->data;
      for (i = 0; i < tokens + pad; ++i) {
        int64_t want = -1;
        if (i < tokens) {
          int32_t req = 0;
          while (req < n - 1 && batch->qsl[req + 1] <= i) ++req;
          if (batch->bt[req * batch->width] != 0)
            want = (int64_t)batch->bt[req * batch->width] * bs + pos[i] % bs;
        }
        if (got[i] != want)
          fail_msg("iter %d: slot_mapping[%lld] = %lld, expected %lld", iter, (long long)i,
                   (long long)got[i], (long long)want);
      }
    } else {
      for (i = 0; i < n * batch->width; ++i)
        assert_int_equal(batch->bt[i], before[i] < 0 ? 0 : before[i]);
      if (bs == 8)
        expect_bool(m, "c128_boundary", crosses);
      else
        ts_expect_none(m, "c128_boundary");
      if (c.platform_rocm) {
        /* split_decodes_and_prefills at threshold 1: the tokens before the first query
         * longer than 1 (all of them when none is) */
        int64_t first = 0;
        while (first < n && q[first] <= 1) ++first;
        assert_int_equal(ts_int(m, "num_decode_tokens"), batch->qsl[first]);
      } else {
        ts_expect_none(m, "num_decode_tokens");
      }
    }
    free(before);
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

static void test_refusals(void** state) {
  static const int32_t q[2] = {1, 2}, s[2] = {5, 9};
  attn_kv_cache_spec_t spec = ring_spec(8), full = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = NULL;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  (void)state;
  /* V4: no FULL_ATTENTION spec (SlidingWindowMLASpec or MLAAttentionSpec) */
  ASSERT_ERROR(attn_builder_create(V4, &full, &c, &b), ATTN_ERR_UNSUPPORTED, V4);
  /* V4.1: prefill context parallelism */
  c.prefill_context_parallel_size = 2;
  ASSERT_ERROR(attn_builder_create(V41, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "prefill_context_parallel_size=2");
  c.prefill_context_parallel_size = -1;
  ASSERT_ERROR(attn_builder_create(V41, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->prefill_context_parallel_size=-1");
  c = ts_config();
  c.sparse_indexer_topk_backend = 8;
  ASSERT_ERROR(attn_builder_create(V41, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "sparse_indexer_topk_backend");
  c = ts_config();
  c.candidate_block_size = -4;
  ASSERT_ERROR(attn_builder_create(V41, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->candidate_block_size=-4");
  c = ts_config();
  /* V4.1 needs positions */
  b = ts_builder(V41, &spec, &c);
  batch = ts_batch_make(q, s, 2, 8, 0, -1);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->positions is NULL");
  ts_batch_free(batch);
  /* tokens without a request to read a ring block from; with 3 of them actual, the 4 slot
   * rows, more than a slot_mapping_buffer of max_num_batched_tokens=3 entries holds, are
   * refused before that */
  {
    int64_t pos[4] = {0, 1, 2, 3}, pshape[1] = {4};
    attn_tensor_t pt = ts_host_tensor(pos, 1, pshape, ATTN_DTYPE_INT, 64);
    attn_builder_t* small;
    batch = ts_batch_make(q, s, 0, 8, 1, 4);
    batch->common.positions = &pt;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "reads each token's request's ring block");
    c.max_num_batched_tokens = 3;
    small = ts_builder(V41, &spec, &c);
    batch->common.num_actual_tokens = 3;
    ASSERT_ERROR(attn_build(small, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->slot_mapping has 4 entries, more than config->max_num_batched_tokens=3 "
                 "(DEEPSEEK_V41_COMPRESSOR's slot_mapping_buffer)");
    attn_builder_destroy(small);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_v4_hand_checked),
      cmocka_unit_test(test_v41_hand_checked),
      cmocka_unit_test(test_v41_circular),
      cmocka_unit_test(test_random_vs_naive),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
