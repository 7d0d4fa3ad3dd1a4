/* DeepSeek V4 / V4.1 sparse MLA at vLLM 0.33 (DeepseekV4SparseMLAMetadataBuilder and its
 * subclasses): the levels and thresholds of the six names, the compressed slot mapping
 * (get_compressed_slot_mapping) and the in-place block table clamp, the C128A top-k rows
 * (build_c128a_topk_metadata), the refusals, and seeded random batches against a naive
 * restatement. Hand-checked values are worked out in the comments. */
#include <stdlib.h>

#include "test_support.h"

#define V4 "FLASHMLA_SPARSE_DSV4"

static attn_kv_cache_spec_t v4_spec(int32_t block_size, int32_t ratio) {
  attn_kv_cache_spec_t s = ts_mla_spec(block_size);
  s.head_size = 512;
  s.tokens_per_state = ratio;
  return s;
}

/* rows x width int32 entries of a 2-D (prefill) or (rows, 1, width) (decode) field. */
static void expect_rows(const attn_metadata_t* m, const char* name, const int32_t* expected,
                        int64_t rows, int64_t width) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t r, j;
  if (t == NULL) fail_msg("%s is None", name);
  assert_int_equal(t->shape[0], rows);
  assert_int_equal(t->shape[t->ndim - 1], width);
  if (t->ndim == 3) assert_int_equal(t->shape[1], 1);
  for (r = 0; r < rows; ++r)
    for (j = 0; j < width; ++j) {
      const int32_t got =
          ((const int32_t*)t->data)[r * t->strides[0] + j * t->strides[t->ndim - 1]];
      if (got != expected[r * width + j])
        fail_msg("%s[%lld][%lld] = %d, expected %d", name, (long long)r, (long long)j, got,
                 expected[r * width + j]);
    }
}

static void test_levels(void** state) {
  static const char* const names[7] = {"FLASHMLA_SPARSE_DSV4",     "FLASHINFER_MLA_SPARSE_DSV4",
                                       "CPU_V4_MLA_SPARSE",        "FLASHMLA_SPARSE_DSV41",
                                       "FLASHMLA_MEGA_ATTN_DSV41", "FLASHINFER_MLA_SPARSE_DSV41",
                                       "XPU_V4_MLA_SPARSE"};
  static const int32_t levels[7] = {ATTN_CG_ALWAYS, ATTN_CG_ALWAYS, ATTN_CG_UNIFORM_BATCH,
                                    ATTN_CG_ALWAYS, ATTN_CG_ALWAYS, ATTN_CG_ALWAYS,
                                    ATTN_CG_UNIFORM_BATCH};
  attn_kv_cache_spec_t spec = v4_spec(256, 2);
  attn_builder_config_t c = ts_config();
  int i;
  (void)state;
  for (i = 0; i < 7; ++i) {
    int32_t level = -1, th = -1;
    attn_builder_t* b;
    c.num_speculative_tokens = i % 3; /* supports_spec_as_decode: 1 + k */
    ASSERT_OK(attn_backend_cudagraph_support(names[i], &spec, &c, &level));
    assert_int_equal(level, levels[i]);
    b = ts_builder(names[i], &spec, &c);
    ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
    assert_int_equal(th, 1 + i % 3);
    attn_builder_destroy(b);
  }
}

/* Ratio 4, block 256 (64 states a block), index_topk 512. Queries [1, 5] onto [8, 13]: block
 * ids [1, x] and [2]; request 0's second entry set to -3 (clamped to 0 in place).
 *   token 0: position 7, (7 + 1) % 4 == 0: state 1, block 0 (id 1): 1 * 64 + 1 = 65.
 *   tokens 1..5: positions 8..12; only 11 ((11 + 1) % 4 == 0): state 2: 2 * 64 + 2 = 130.
 * slot_mapping [65, -1, -1, -1, 130, -1]; with token 4's own slot PAD it is -1 too. */
static void test_compressed_slots(void** state) {
  static const int32_t q[2] = {1, 5}, s[2] = {8, 13}, t2r[6] = {0, 1, 1, 1, 1, 1};
  static const int64_t expected[6] = {65, -1, -1, -1, 130, -1};
  static const int64_t padded[6] = {65, -1, -1, -1, -1, -1};
  attn_kv_cache_spec_t spec = v4_spec(256, 4);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 2, 256, 2, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  spec.index_topk = 512;
  b = ts_builder(V4, &spec, &c);
  assert_int_equal(batch->bt[0], 1);
  assert_int_equal(batch->bt[2], 2);
  batch->bt[1] = -3;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(batch->bt[1], 0); /* vLLM's block_table_tensor.clamp_(min=0) */
  ts_expect_i64(m, "slot_mapping", expected, 6);
  ts_expect_i32(m, "req_id_per_token", t2r, 6);
  assert_int_equal(ts_int(m, "num_reqs"), 2);
  assert_int_equal(ts_int(m, "max_query_len"), 5);
  assert_int_equal(ts_int(m, "max_seq_len"), 13);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 6);
  assert_int_equal(ts_int(m, "block_size"), 256);
  assert_int_equal(ts_int(m, "topk_tokens"), 512);
  assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
  ts_expect_none(m, "c128a_global_decode_topk_indices");
  ts_expect_none(m, "c128a_decode_topk_lens");
  ts_expect_none(m, "c128a_prefill_topk_indices");
  assert_int_equal(attn_metadata_field_count(m), 13);
  batch->slots[4] = ATTN_PAD_SLOT_ID; /* a replayed token: its state is cached already */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i64(m, "slot_mapping", padded, 6);
  attn_builder_destroy(b);
  /* ratio 1: the batch's own slots, the table untouched */
  spec = v4_spec(256, 0);
  b = ts_builder("FLASHMLA_SPARSE_DSV41", &spec, &c);
  batch->bt[1] = -3;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(batch->bt[1], -3);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  assert_int_equal(ts_int(m, "topk_tokens"), 2048);
  assert_int_equal(attn_metadata_field_count(m), 10); /* V4.1: no C128A fields */
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* C128A: ratio 128, block 256 (2 states a block), max_model_len 8192 (buffers 128 wide).
 * Queries [1, 1, 2] onto [300, 129, 256]: two decodes, one prefill; blocks [1, 2], [3], [4].
 * Width: min(max(next_pow2(300 / 128 = 2), 128), 128) = 128.
 *   token 0 (pos 299): n = 300 / 128 = 2: block 0 (id 1): 2, 3; lens 2.
 *   token 1 (pos 128): n = 1: id 3: 6; its slot PAD: lens 0.
 *   prefill tokens 2, 3 (pos 254, 255): n = 1, 2: [0, -1, ...], [0, 1, -1, ...].
 * slot_mapping: only position 255 closes a state: state 1 of id 4: 4 * 2 + 1 = 9. */
static void test_c128a(void** state) {
  static const int32_t q[3] = {1, 1, 2}, s[3] = {300, 129, 256}, lens[2] = {2, 0};
  static const int64_t slots[4] = {-1, -1, -1, 9};
  int64_t positions[4] = {299, 128, 254, 255}, pshape[1] = {4};
  int32_t dec[2 * 128], pre[2 * 128];
  attn_kv_cache_spec_t spec = v4_spec(256, 128);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 256, 0, -1);
  attn_tensor_t pt = ts_host_tensor(positions, 1, pshape, ATTN_DTYPE_INT, 64);
  attn_metadata_t* m = NULL;
  int j;
  (void)state;
  c.max_model_len = 8192;
  b = ts_builder(V4, &spec, &c);
  for (j = 0; j < 256; ++j) dec[j] = pre[j] = -1;
  dec[0] = 2;
  dec[1] = 3;
  dec[128] = 6;
  pre[0] = 0;
  pre[128] = 0;
  pre[129] = 1;
  batch->slots[1] = ATTN_PAD_SLOT_ID;
  batch->common.positions = &pt;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_tensor(m, "c128a_global_decode_topk_indices")->ndim, 3);
  expect_rows(m, "c128a_global_decode_topk_indices", dec, 2, 128);
  ts_expect_i32(m, "c128a_decode_topk_lens", lens, 2);
  expect_rows(m, "c128a_prefill_topk_indices", pre, 2, 128);
  ts_expect_i64(m, "slot_mapping", slots, 4);
  /* build_for_cudagraph_capture: the base class's build (level ALWAYS), the same rows */
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  expect_rows(m, "c128a_global_decode_topk_indices", dec, 2, 128);
  ts_expect_i32(m, "c128a_decode_topk_lens", lens, 2);
  expect_rows(m, "c128a_prefill_topk_indices", pre, 2, 128);
  /* missing positions: vLLM asserts */
  batch->common.positions = NULL;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->positions is NULL");
  attn_builder_destroy(b);
  /* the CPU builder skips the C128A metadata (and needs no positions) */
  b = ts_builder("CPU_V4_MLA_SPARSE", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "c128a_global_decode_topk_indices");
  ts_expect_none(m, "c128a_prefill_topk_indices");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = v4_spec(128, 4);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = NULL;
  (void)state;
  ASSERT_ERROR(attn_builder_create(V4, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->block_size=128");
  spec = v4_spec(256, 4);
  ASSERT_ERROR(attn_builder_create("FLASHMLA_SPARSE_DSV41", &spec, &c, &b),
               ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->tokens_per_state=4");
  spec = v4_spec(256, 3);
  ASSERT_ERROR(attn_builder_create(V4, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->tokens_per_state=3 does not divide");
  spec = v4_spec(256, -1);
  ASSERT_ERROR(attn_builder_create(V4, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->tokens_per_state=-1 is negative");
  spec = v4_spec(256, 4);
  spec.reserved_1_7 = 1;
  ASSERT_ERROR(attn_builder_create(V4, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->reserved_1_7=1");
  spec = v4_spec(256, 4);
  spec.kind = ATTN_KV_FULL_ATTENTION;
  ASSERT_ERROR(attn_builder_create(V4, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "kind");
  spec = v4_spec(256, 4);
  c.attn_type = ATTN_TYPE_ENCODER;
  ASSERT_ERROR(attn_builder_create(V4, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "config->attn_type=1");
}

/* Naive restatements. */
static int64_t naive_slot(const ts_batch* b, int64_t t, int32_t ratio) {
  int64_t r = 0, pos, st;
  while (r + 1 < b->num_reqs && b->qsl[r + 1] <= t) ++r;
  if (t >= b->qsl[b->num_reqs]) return -1;
  pos = b->seq[r] - (b->qsl[r + 1] - b->qsl[r]) + t - b->qsl[r];
  if ((pos + 1) % ratio != 0 || b->slots[t] == -1) return -1;
  st = pos / ratio;
  return (int64_t)b->bt[r * b->width + st / (b->block_size / ratio)] * (b->block_size / ratio) +
         st % (b->block_size / ratio);
}

static void test_random(void** state) {
  static const int32_t ratios[3] = {1, 4, 128};
  uint64_t rng = 20261204;
  int it;
  (void)state;
  for (it = 0; it < 150; ++it) {
    const int32_t ratio = ratios[it % 3], k = (int32_t)ts_rand_range(&rng, 0, 2), th = 1 + k;
    attn_kv_cache_spec_t spec = v4_spec(256, ratio);
    attn_builder_config_t c = ts_config();
    attn_builder_t* b;
    int32_t q[10], s[10], nd = 0, ndt = 0, max_q = 0, max_s = 0;
    const int64_t n = ts_rand_range(&rng, 1, 10);
    int64_t r, t, tokens = 0, width = 0, wmax, *pos, pshape[1], *slots;
    int32_t *rows, *lens;
    ts_batch* batch;
    attn_tensor_t pt;
    attn_metadata_t* m = NULL;
    c.num_speculative_tokens = k;
    c.max_model_len = 4096;
    b = ts_builder(V4, &spec, &c);
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&rng, 1, ts_rand_range(&rng, 0, 1) ? th : 40);
      s[r] = q[r] + (int32_t)ts_rand_range(&rng, 0, 3000);
      tokens += q[r];
    }
    nd = ts_decodes_first(q, s, n, th);
    batch = ts_batch_make(q, s, n, 256, 0, -1);
    for (t = 0; t < tokens; ++t)
      if (ts_rand_range(&rng, 0, 9) == 0) batch->slots[t] = ATTN_PAD_SLOT_ID;
    pos = (int64_t*)malloc(sizeof(int64_t) * (size_t)tokens);
    for (r = 0; r < n; ++r)
      for (t = batch->qsl[r]; t < batch->qsl[r + 1]; ++t) pos[t] = s[r] - q[r] + t - batch->qsl[r];
    pshape[0] = tokens;
    pt = ts_host_tensor(pos, 1, pshape, ATTN_DTYPE_INT, 64);
    batch->common.positions = &pt;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    slots = (int64_t*)malloc(sizeof(int64_t) * (size_t)tokens);
    if (ratio > 1) {
      for (t = 0; t < tokens; ++t) slots[t] = naive_slot(batch, t, ratio);
      ts_expect_i64(m, "slot_mapping", slots, tokens);
    }
    if (ratio == 128) {
      if (q[0] > th) nd = 0;
      for (r = 0; r < nd; ++r) ndt += q[r];
      for (r = 0; r < n; ++r) {
        max_q = q[r] > max_q ? q[r] : max_q;
        max_s = s[r] > max_s ? s[r] : max_s;
      }
      if (max_q <= th) ndt = (int32_t)tokens;
      wmax = 128; /* cdiv(4096, 128) = 32, aligned to 128 */
      width = 1;
      while (width < (max_s / 128 > 1 ? max_s / 128 : 1)) width <<= 1;
      width = width < 128 ? 128 : width;
      width = width > wmax ? wmax : width;
      rows = (int32_t*)malloc(sizeof(int32_t) * (size_t)(tokens * width));
      lens = (int32_t*)malloc(sizeof(int32_t) * (size_t)tokens);
      for (t = 0; t < tokens; ++t) {
        int64_t j, nc = (pos[t] + 1) / 128;
        nc = nc > width ? width : nc;
        r = 0;
        while (r + 1 < n && batch->qsl[r + 1] <= t) ++r;
        for (j = 0; j < width; ++j)
          rows[t * width + j] = j >= nc ? -1
                                : t < ndt
                                    ? batch->bt[r * batch->width + j / 2] * 2 + (int32_t)(j % 2)
                                    : (int32_t)j;
        lens[t] = batch->slots[t] >= 0 ? (int32_t)nc : 0;
      }
      if (ndt > 0) {
        expect_rows(m, "c128a_global_decode_topk_indices", rows, ndt, width);
        ts_expect_i32(m, "c128a_decode_topk_lens", lens, ndt);
      } else {
        ts_expect_none(m, "c128a_global_decode_topk_indices");
      }
      if (tokens > ndt)
        expect_rows(m, "c128a_prefill_topk_indices", rows + ndt * width, tokens - ndt, width);
      else
        ts_expect_none(m, "c128a_prefill_topk_indices");
      free(rows);
      free(lens);
    }
    free(slots);
    free(pos);
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels), cmocka_unit_test(test_compressed_slots),
      cmocka_unit_test(test_c128a),  cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_random),
  };
  return cmocka_run_group_tests_name("v4_sparse_mla", tests, NULL, NULL);
}
