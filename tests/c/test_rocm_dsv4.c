/* DeepSeek V4 / V4.1's ROCm builders at vLLM 0.33 (models/deepseek_v4/amd/rocm.py,
 * models/deepseek_v41/amd/rocm.py): ROCM_FLASHMLA_SPARSE_DSV4, ROCM_FLASHMLA_SPARSE_DSV41,
 * DEEPSEEK_SPARSE_SWA_ROCM_AITER and DEEPSEEK_V41_SPARSE_SWA_ROCM_AITER. Their levels (ALWAYS
 * under adaptive verification), thresholds and draft decode update, the ragged rows
 * (build_ragged_indices_from_dense into the persistent buffers of _copy_ragged_to_graph_buffers)
 * hand-checked and on seeded random batches against a naive compaction of the builders' own
 * dense rows, the capture build, and the refusals. Hand-checked values are worked out in the
 * comments. */
#include <stdlib.h>

#include "test_support.h"

#define MLA_V4 "ROCM_FLASHMLA_SPARSE_DSV4"
#define MLA_V41 "ROCM_FLASHMLA_SPARSE_DSV41"
#define SWA_V4 "DEEPSEEK_SPARSE_SWA_ROCM_AITER"
#define SWA_V41 "DEEPSEEK_V41_SPARSE_SWA_ROCM_AITER"

static attn_kv_cache_spec_t mla_spec(int32_t block_size, int32_t ratio) {
  attn_kv_cache_spec_t s = ts_mla_spec(block_size);
  s.head_size = 512;
  s.tokens_per_state = ratio;
  return s;
}

static attn_builder_config_t rocm_config(int32_t k) {
  attn_builder_config_t c = ts_config();
  c.platform_rocm = 1;
  c.num_speculative_tokens = k;
  return c;
}

static int64_t bool_field(const attn_metadata_t* m, const char* name) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  assert_int_equal(f.kind, ATTN_FIELD_BOOL);
  return f.int_value;
}

/* The ragged pair: indices `len` long (int32, 1-D) whose first indptr[rows] entries are
 * `expected`, indptr `rows + 1` entries. */
static void expect_ragged(const attn_metadata_t* m, const char* indices, const char* indptr,
                          const int32_t* expected_indptr, int64_t rows, const int32_t* expected,
                          int64_t len) {
  const attn_tensor_t* t = ts_tensor(m, indices);
  int64_t i;
  ts_expect_i32(m, indptr, expected_indptr, rows + 1);
  if (t == NULL) fail_msg("%s is None", indices);
  assert_int_equal(t->ndim, 1);
  assert_int_equal(t->shape[0], len);
  assert_int_equal(t->dtype.bits, 32);
  for (i = 0; i < expected_indptr[rows]; ++i)
    if (((const int32_t*)t->data)[i] != expected[i])
      fail_msg("%s[%lld] = %d, expected %d", indices, (long long)i, ((const int32_t*)t->data)[i],
               expected[i]);
}

/* Naive build_ragged_indices_from_dense of a (rows, [1,] width) dense field and its lengths. */
static void expect_compacted(const attn_metadata_t* m, const char* dense_name,
                             const char* lens_name, const char* indices, const char* indptr,
                             int64_t entries_per_row) {
  const attn_tensor_t* d = ts_tensor(m, dense_name);
  const attn_tensor_t* l = ts_tensor(m, lens_name);
  const int64_t rows = d->shape[0], width = d->shape[d->ndim - 1];
  int32_t* ptr = (int32_t*)malloc(sizeof(int32_t) * (size_t)(rows + 1));
  int32_t* flat = (int32_t*)malloc(sizeof(int32_t) * (size_t)(rows * width + 1));
  int64_t r, j, at = 0;
  ptr[0] = 0;
  for (r = 0; r < rows; ++r) {
    const int32_t len = ((const int32_t*)l->data)[r];
    for (j = 0; j < width && j < len; ++j) {
      const int32_t v = ((const int32_t*)d->data)[r * d->strides[0] + j * d->strides[d->ndim - 1]];
      if (v >= 0) flat[at++] = v;
    }
    ptr[r + 1] = (int32_t)at;
  }
  expect_ragged(m, indices, indptr, ptr, rows, flat, rows * entries_per_row > 1 ? rows * entries_per_row : 1);
  free(ptr);
  free(flat);
}

static void test_levels(void** state) {
  static const char* const names[4] = {MLA_V4, MLA_V41, SWA_V4, SWA_V41};
  attn_builder_config_t c;
  int i, adaptive;
  (void)state;
  for (i = 0; i < 4; ++i)
    for (adaptive = 0; adaptive < 2; ++adaptive) {
      attn_kv_cache_spec_t spec = i < 2 ? mla_spec(256, i == 0 ? 4 : 2) : ts_swa_spec(64, 128);
      int32_t level = -1, th = -2, draft = -1;
      attn_builder_t* b;
      c = rocm_config(2);
      c.enable_adaptive_verification = adaptive;
      ASSERT_OK(attn_backend_cudagraph_support(names[i], &spec, &c, &level));
      /* the base builders' UNIFORM_BATCH; ALWAYS under adaptive verification */
      assert_int_equal(level, adaptive ? ATTN_CG_ALWAYS : ATTN_CG_UNIFORM_BATCH);
      b = ts_builder(names[i], &spec, &c);
      ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
      assert_int_equal(th, i < 2 ? 3 : ATTN_NO_REORDER); /* MLA: 1 + k; SWA: None */
      ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &draft));
      assert_int_equal(draft, 0);
      attn_builder_destroy(b);
    }
  /* adaptive verification without speculative decoding: no speculative_config */
  {
    attn_kv_cache_spec_t spec = ts_swa_spec(64, 128);
    int32_t level = -1;
    c = rocm_config(0);
    c.enable_adaptive_verification = 1;
    if (attn_backend_cudagraph_support(SWA_V4, &spec, &c, &level) == NULL)
      assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  }
}

/* C128A as in test_v4_sparse_mla: ratio 128, block 256, max_model_len 8192 (rows 128 apart).
 * Decode rows: token 0 [2, 3, -1, ...] lens 2; token 1 [6, -1, ...] lens 0 (its slot PAD).
 * Ragged: row 0 keeps 2, 3; row 1 nothing (length 0): indptr [0, 2, 2]; the indices tensor
 * max(2 * 128, 1) = 256 long (_copy_ragged_to_graph_buffers off gfx950). */
static void test_mla_ragged(void** state) {
  static const int32_t q[3] = {1, 1, 2}, s[3] = {300, 129, 256};
  static const int32_t ptr[3] = {0, 2, 2}, flat[2] = {2, 3};
  int64_t positions[4] = {299, 128, 254, 255}, pshape[1] = {4};
  attn_kv_cache_spec_t spec = mla_spec(256, 128);
  attn_builder_config_t c = rocm_config(0);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 256, 0, -1);
  attn_tensor_t pt = ts_host_tensor(positions, 1, pshape, ATTN_DTYPE_INT, 64);
  attn_metadata_t* m = NULL;
  const void* stable;
  (void)state;
  c.max_model_len = 8192;
  b = ts_builder(MLA_V4, &spec, &c);
  batch->slots[1] = ATTN_PAD_SLOT_ID;
  batch->common.positions = &pt;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(attn_metadata_field_count(m), 16);
  expect_ragged(m, "c128a_decode_topk_ragged_indices", "c128a_decode_topk_ragged_indptr", ptr, 2,
                flat, 256);
  assert_int_equal(bool_field(m, "for_cudagraph_capture"), 0);
  stable = ts_tensor(m, "c128a_decode_topk_ragged_indices")->data;
  /* build_for_cudagraph_capture (UNIFORM_BATCH: the two decodes alone): the same rows, in the
   * same buffers; not gfx950: False */
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 2, 256, 0, -1);
  batch->slots[1] = ATTN_PAD_SLOT_ID;
  pshape[0] = 2;
  batch->common.positions = &pt;
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  expect_ragged(m, "c128a_decode_topk_ragged_indices", "c128a_decode_topk_ragged_indptr", ptr, 2,
                flat, 256);
  assert_ptr_equal(ts_tensor(m, "c128a_decode_topk_ragged_indices")->data, stable);
  assert_int_equal(bool_field(m, "for_cudagraph_capture"), 0);
  attn_builder_destroy(b);
  /* gfx950 (platform_rocm with device capability 9.5) and max_model_len 131072: buffer rows
   * c128a_max_compressed = 1024 apart, W = 128. Off gfx950 the indices are max(2 * 1024, 1) =
   * 2048 long; on gfx950 cut to the dense source, max(2 * 128, 1) = 256, and the capture build
   * sets for_cudagraph_capture. */
  c.max_model_len = 131072;
  b = ts_builder(MLA_V4, &spec, &c);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  expect_ragged(m, "c128a_decode_topk_ragged_indices", "c128a_decode_topk_ragged_indptr", ptr, 2,
                flat, 2048);
  assert_int_equal(bool_field(m, "for_cudagraph_capture"), 0);
  attn_builder_destroy(b);
  c.device_capability = 95;
  b = ts_builder(MLA_V4, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_ragged(m, "c128a_decode_topk_ragged_indices", "c128a_decode_topk_ragged_indptr", ptr, 2,
                flat, 256);
  assert_int_equal(bool_field(m, "for_cudagraph_capture"), 0); /* build: the default */
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  assert_int_equal(bool_field(m, "for_cudagraph_capture"), 1);
  c.device_capability = 90;
  c.max_model_len = 8192;
  /* no decode rows (one prefill): None */
  {
    static const int32_t q1[1] = {2}, s1[1] = {256};
    int64_t p1[2] = {254, 255}, ps1[1] = {2};
    ts_batch* pre = ts_batch_make(q1, s1, 1, 256, 0, -1);
    attn_tensor_t pt1 = ts_host_tensor(p1, 1, ps1, ATTN_DTYPE_INT, 64);
    pre->common.positions = &pt1;
    ASSERT_OK(attn_build(b, 0, &pre->common, 0, &m, NULL));
    ts_expect_none(m, "c128a_decode_topk_ragged_indices");
    ts_expect_none(m, "c128a_decode_topk_ragged_indptr");
    assert_non_null(ts_tensor(m, "c128a_prefill_topk_indices"));
    ts_batch_free(pre);
  }
  attn_builder_destroy(b);
  /* ratio 4: no C128A rows, so no ragged ones; V4.1: the base's ten fields */
  spec = mla_spec(256, 4);
  b = ts_builder(MLA_V4, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "c128a_decode_topk_ragged_indices");
  ts_expect_none(m, "c128a_decode_topk_ragged_indptr");
  attn_builder_destroy(b);
  spec = mla_spec(64, 2); /* ROCM_FLASHMLA_SPARSE_DSV41: kernel blocks [64, 128] */
  b = ts_builder(MLA_V41, &spec, &c);
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 3, 64, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(attn_metadata_field_count(m), 10);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Window 4, block 32. Decodes q [1, 1] onto [3, 10] (blocks [1], [2]) and a prefill q 2 onto 5
 * (block [3]).
 *   token 0 (pos 2): window [0, 3): slots 32, 33, 34; lens 3.
 *   token 1 (pos 9): window [6, 10): 70, 71, 72, 73; lens 4.
 * Ragged: [32, 33, 34, 70, 71, 72, 73], indptr [0, 3, 7], indices max(2 * 4, 1) = 8 long.
 * The capture build (UNIFORM_BATCH: the two decodes alone) with token 0's slot PAD (invalid:
 * lens 0): [70, 71, 72, 73], indptr [0, 0, 4].
 * prefill_swa_ragged_*: None (aiter's Triton sparse MLA off). */
static void test_swa_ragged(void** state) {
  static const int32_t q[3] = {1, 1, 2}, s[3] = {3, 10, 5};
  static const int32_t ptr[3] = {0, 3, 7}, flat[7] = {32, 33, 34, 70, 71, 72, 73};
  static const int32_t ptr_pad[3] = {0, 0, 4}, flat_pad[4] = {70, 71, 72, 73};
  static const char* const names[2] = {SWA_V4, SWA_V41};
  int i;
  (void)state;
  for (i = 0; i < 2; ++i) {
    attn_kv_cache_spec_t spec = ts_swa_spec(32, 4);
    attn_builder_config_t c = rocm_config(0);
    attn_builder_t* b = ts_builder(names[i], &spec, &c);
    ts_batch* batch = ts_batch_make(q, s, 3, 32, 0, -1);
    attn_metadata_t* m = NULL;
    const void* stable;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
    expect_ragged(m, "decode_swa_ragged_indices", "decode_swa_ragged_indptr", ptr, 2, flat, 8);
    ts_expect_none(m, "prefill_swa_ragged_indices");
    ts_expect_none(m, "prefill_swa_ragged_indptr");
    assert_non_null(ts_tensor(m, "prefill_swa_indices"));
    stable = ts_tensor(m, "decode_swa_ragged_indices")->data;
    ts_batch_free(batch);
    batch = ts_batch_make(q, s, 2, 32, 0, -1);
    batch->slots[0] = ATTN_PAD_SLOT_ID;
    ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
    expect_ragged(m, "decode_swa_ragged_indices", "decode_swa_ragged_indptr", ptr_pad, 2,
                  flat_pad, 8);
    assert_ptr_equal(ts_tensor(m, "decode_swa_ragged_indices")->data, stable);
    /* the draft decode update is refused (vLLM keeps it off for the ROCm builders) */
    ASSERT_ERROR(attn_update_draft_decode_metadata(b, m, NULL), ATTN_ERR_UNSUPPORTED,
                 "ragged SWA rows");
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

static void test_refusals(void** state) {
  static const char* const names[4] = {MLA_V4, MLA_V41, SWA_V4, SWA_V41};
  attn_kv_cache_spec_t spec;
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = NULL;
  int i;
  (void)state;
  for (i = 0; i < 4; ++i) { /* ROCm builders off ROCm */
    spec = i < 2 ? mla_spec(256, 1) : ts_swa_spec(64, 128);
    ASSERT_ERROR(attn_builder_create(names[i], &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
                 "config->platform_rocm=0");
  }
  /* on ROCm vLLM's DEEPSEEK_SPARSE_SWA builds with the ROCm builder */
  c = rocm_config(0);
  spec = ts_swa_spec(64, 128);
  ASSERT_ERROR(attn_builder_create("DEEPSEEK_SPARSE_SWA", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "DEEPSEEK_SPARSE_SWA_ROCM_AITER");
  /* block sizes: V4's multiples of 256, V4.1's of 64 ([64, 128]), SWA's of 32 */
  spec = mla_spec(128, 4);
  ASSERT_ERROR(attn_builder_create(MLA_V4, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->block_size=128");
  spec = mla_spec(32, 2);
  ASSERT_ERROR(attn_builder_create(MLA_V41, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "multiples of 64");
  spec = mla_spec(128, 4);
  ASSERT_ERROR(attn_builder_create(MLA_V41, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->tokens_per_state=4");
  spec = ts_swa_spec(48, 128);
  ASSERT_ERROR(attn_builder_create(SWA_V41, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->block_size=48");
  /* ratio 128 without positions: vLLM asserts */
  {
    static const int32_t q[1] = {1}, s[1] = {300};
    ts_batch* batch = ts_batch_make(q, s, 1, 256, 0, -1);
    attn_metadata_t* m = NULL;
    spec = mla_spec(256, 128);
    b = ts_builder(MLA_V4, &spec, &c);
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->positions is NULL");
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
  /* a non-causal batch with decode tokens (DSpark's rows): refused as by the base */
  {
    static const int32_t q[1] = {1}, s[1] = {30};
    ts_batch* batch = ts_batch_make(q, s, 1, 64, 0, -1);
    attn_metadata_t* m = NULL;
    spec = ts_swa_spec(64, 128);
    b = ts_builder(SWA_V4, &spec, &c);
    batch->common.causal = 0;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
                 "common->causal=0");
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

/* Seeded random batches: each builder's ragged rows against a naive compaction of its own dense
 * rows (whose values test_v4_sparse_mla and test_sparse_swa check against their restatements). */
static void test_random(void** state) {
  uint64_t rng = 20261205;
  int it;
  (void)state;
  for (it = 0; it < 200; ++it) {
    const int mla = it % 2;
    const int32_t k = (int32_t)ts_rand_range(&rng, 0, 2), th = 1 + k;
    const int32_t block = mla ? 256 : 32 << ts_rand_range(&rng, 0, 3);
    const int32_t window = (int32_t)(ts_rand_range(&rng, 0, 1) ? 128 : ts_rand_range(&rng, 1, 64));
    attn_kv_cache_spec_t spec = mla ? mla_spec(256, 128) : ts_swa_spec(block, window);
    attn_builder_config_t c = rocm_config(k);
    attn_builder_t* b;
    int32_t q[10], s[10];
    const int64_t n = ts_rand_range(&rng, 1, 10);
    int64_t r, t, tokens = 0, *pos, pshape[1];
    ts_batch* batch;
    attn_tensor_t pt;
    attn_metadata_t* m = NULL;
    c.max_model_len = 4096;
    b = ts_builder(mla ? MLA_V4 : (it % 4 == 1 ? SWA_V41 : SWA_V4), &spec, &c);
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&rng, 1, ts_rand_range(&rng, 0, 1) ? th : 40);
      s[r] = q[r] + (int32_t)ts_rand_range(&rng, 0, 3000);
      tokens += q[r];
    }
    ts_decodes_first(q, s, n, th);
    batch = ts_batch_make(q, s, n, block, 0, -1);
    for (t = 0; t < tokens; ++t)
      if (ts_rand_range(&rng, 0, 7) == 0) batch->slots[t] = ATTN_PAD_SLOT_ID;
    pos = (int64_t*)malloc(sizeof(int64_t) * (size_t)tokens);
    for (r = 0; r < n; ++r)
      for (t = batch->qsl[r]; t < batch->qsl[r + 1]; ++t) pos[t] = s[r] - q[r] + t - batch->qsl[r];
    pshape[0] = tokens;
    pt = ts_host_tensor(pos, 1, pshape, ATTN_DTYPE_INT, 64);
    batch->common.positions = &pt;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    if (mla) {
      if (ts_kind(m, "c128a_global_decode_topk_indices") == ATTN_FIELD_NONE)
        ts_expect_none(m, "c128a_decode_topk_ragged_indices");
      else /* rows 128 apart: cdiv(4096, 128) = 32 aligned to 128 */
        expect_compacted(m, "c128a_global_decode_topk_indices", "c128a_decode_topk_lens",
                         "c128a_decode_topk_ragged_indices", "c128a_decode_topk_ragged_indptr",
                         128);
    } else if (ts_int(m, "num_decode_tokens") == 0) {
      ts_expect_none(m, "decode_swa_ragged_indices");
      ts_expect_none(m, "decode_swa_ragged_indptr");
    } else {
      expect_compacted(m, "decode_swa_indices", "decode_swa_lens", "decode_swa_ragged_indices",
                       "decode_swa_ragged_indptr", window);
    }
    free(pos);
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),   cmocka_unit_test(test_mla_ragged),
      cmocka_unit_test(test_swa_ragged), cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_random),
  };
  return cmocka_run_group_tests_name("rocm_dsv4", tests, NULL, NULL);
}
