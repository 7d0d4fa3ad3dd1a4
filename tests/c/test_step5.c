/* Step5's builders at vLLM 0.33 (models/step5/nvidia/): STEP5_CSA_SUMMARY
 * (Step5SparseSummaryMetadataBuilder, whose build returns None): the class answers (ALWAYS, no
 * threshold, no block-table or draft update), a metadata with no fields from build, capture
 * and drafting builds, the batch still validated, and the spec kinds it refuses.
 * STEP5_CSA_TAIL_RING (Step5CSATailRingMetadataBuilder): the same answers, a hand-checked batch
 * (null block, positions before the ring's window, graph padding counted as actual tokens, a
 * block stride wider than the page), the CIRCULAR_BUFFER spec (ABI 1.7) on a one-column table
 * against the FULL_ATTENTION spec on the whole table, seeded random batches against a naive
 * restatement of _ring_metadata_kernel, and the refusals. */
#include "test_support.h"

#define SUMMARY "STEP5_CSA_SUMMARY"
#define TAIL_RING "STEP5_CSA_TAIL_RING"

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

/* Both builders' class answers, with `k` speculative tokens: ALWAYS from the backend and the
 * builder, no reorder threshold (the base class's None), no varlen capture length, no
 * block-table or draft decode update. */
static void expect_answers(const char* backend, const attn_kv_cache_spec_t* spec, int32_t k) {
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  int32_t level = -1, th = 0, v = 0, has = 1, yes = 1;
  c.num_speculative_tokens = k;
  ASSERT_OK(attn_backend_cudagraph_support(backend, spec, &c, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  b = ts_builder(backend, spec, &c);
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

static void test_summary_answers(void** state) {
  attn_kv_cache_spec_t spec = summary_spec(64);
  (void)state;
  expect_answers(SUMMARY, &spec, 3);
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

/* Step5CSATailRing's CircularBufferSpec(block_size, 1 head, head_size, head_size_v 0, bf16):
 * a page of block_size * head_size * 2 bytes, capacity = page / 1024 rows. */
static attn_kv_cache_spec_t ring_spec(int32_t block_size, int32_t head_size,
                                      int32_t block_stride_bytes) {
  attn_kv_cache_spec_t s = ts_spec();
  s.block_size = block_size;
  s.num_kv_heads = 1;
  s.head_size = head_size;
  s.block_stride_bytes = block_stride_bytes;
  return s;
}

static void test_tail_ring_answers(void** state) {
  attn_kv_cache_spec_t spec = ring_spec(16, 256, 0);
  (void)state;
  expect_answers(TAIL_RING, &spec, 1);
}

/* The tail ring's batches: the queries `q` onto `s` (n requests, blocks of `block_size`), `rows`
 * slot rows (num_actual_tokens = rows: padding counted as actual), and common.positions viewing
 * pos[0 .. rows) (int64, filled by the caller before the build) through `view`, which must
 * stay in place while the batch is built. */
typedef struct positions_view {
  int64_t shape[1];
  attn_tensor_t tensor;
} positions_view;

static ts_batch* ring_batch(const int32_t* q, const int32_t* s, int64_t n, int32_t block_size,
                            int64_t rows, int64_t* pos, positions_view* view) {
  ts_batch* batch = ts_batch_make(q, s, n, block_size, 0, rows);
  view->shape[0] = rows;
  view->tensor = ts_host_tensor(pos, 1, view->shape, ATTN_DTYPE_INT, 64);
  batch->common.positions = &view->tensor;
  return batch;
}

/* Block 16, head_size 256: a page of 8,192 bytes, capacity 8 rows; block stride 24,576 bytes:
 * 24 rows per block. Queries [2, 1, 10] onto [18, 5, 12] (positions 16, 17 | 4 | 2..11),
 * request 1 on the null block 0; 15 slot rows, num_actual_tokens 15 (graph padding counted as
 * actual: rows 13 and 14 lie past query_start_loc[3] = 13 and own no slot).
 * base: b0 * 24 twice | -1 | b2 * 24 ten times | -1 -1.
 * slot_mapping: request 0 keeps positions >= 18 - 8 = 10: b0 * 24 + 0, + 1; request 1 -1;
 * request 2 keeps positions >= 12 - 8 = 4: -1, -1 (positions 2, 3), then b2 * 24 + 4, 5, 6, 7,
 * 0, 1, 2, 3 (positions 4..11 mod 8); padding -1 -1. */
static void test_tail_ring_hand_checked(void** state) {
  static const int32_t q[3] = {2, 1, 10}, s[3] = {18, 5, 12};
  int64_t pos[15] = {16, 17, 4, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0};
  positions_view pv;
  attn_kv_cache_spec_t spec = ring_spec(16, 256, 24576);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(TAIL_RING, &spec, &c);
  ts_batch* batch = ring_batch(q, s, 3, 16, 15, pos, &pv);
  attn_metadata_t* m = NULL;
  int64_t b0, b2;
  (void)state;
  batch->bt[1 * batch->width] = 0;
  b0 = batch->bt[0];
  b2 = batch->bt[2 * batch->width];
  assert_true(b0 > 0 && b2 > 0);
  assert_int_equal(batch->common.num_actual_tokens, 15);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(attn_metadata_field_count(m), 2);
  {
    const int64_t B0 = b0 * 24, B2 = b2 * 24;
    const int64_t base[15] = {B0, B0, -1, B2, B2, B2, B2, B2, B2, B2, B2, B2, B2, -1, -1};
    const int64_t slot[15] = {B0,     B0 + 1, -1,     -1,     -1,     B2 + 4, B2 + 5, B2 + 6,
                              B2 + 7, B2,     B2 + 1, B2 + 2, B2 + 3, -1,     -1};
    ts_expect_i64(m, "base", base, 15);
    ts_expect_i64(m, "slot_mapping", slot, 15);
  }
  /* the default stride (0): the page, rows_per_block = capacity = 8 */
  attn_builder_destroy(b);
  spec.block_stride_bytes = 0;
  b = ts_builder(TAIL_RING, &spec, &c);
  m = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(((const int64_t*)ts_tensor(m, "base")->data)[0], b0 * 8);
  assert_int_equal(((const int64_t*)ts_tensor(m, "slot_mapping")->data)[1], b0 * 8 + 1);
  /* capture and drafting builds are build's (the base class's) */
  m = NULL;
  ASSERT_OK(attn_build_for_drafting(b, &batch->common, 1, &m, NULL));
  assert_int_equal(((const int64_t*)ts_tensor(m, "slot_mapping")->data)[12], b2 * 8 + 3);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* ATTN_KV_CIRCULAR_BUFFER (ABI 1.7), the layer's own CircularBufferSpec: the same metadata as
 * the FULL_ATTENTION spec of the same sizes, from a one-column table (request 0's seq_len 18
 * would need two 16-token columns under FULL_ATTENTION, which refuses that table); a table of
 * no columns is refused by both kinds. */
static void test_tail_ring_circular(void** state) {
  static const int32_t q[3] = {2, 1, 10}, s[3] = {18, 5, 12};
  int64_t pos[15] = {16, 17, 4, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0};
  positions_view pv;
  const attn_kv_cache_spec_t full = ring_spec(16, 256, 24576);
  const attn_builder_config_t c = ts_config();
  ts_batch* batch = ring_batch(q, s, 3, 16, 15, pos, &pv);
  (void)state;
  batch->bt[1 * batch->width] = 0;
  ts_expect_circular_as_full(TAIL_RING, &full, &c, batch,
                             "common->block_table_tensor has 1 columns but request 0 needs "
                             "cdiv(seq_lens[0]=18, block_size=16)=2 blocks");
  ts_batch_free(batch);
}

/* Seeded random batches against a naive restatement of _ring_metadata_kernel: null and
 * negative ring blocks, padding rows past the scheduled tokens counted as actual or not, long
 * queries whose early positions fall before the ring's window, strides wider than the page;
 * every fourth with a CIRCULAR_BUFFER spec and a one-column table. */
static void test_tail_ring_random_vs_naive(void** state) {
  uint64_t rng = 0x57e95ULL;
  int iter;
  (void)state;
  for (iter = 0; iter < 200; ++iter) {
    const int32_t bs = iter % 2 ? 16 : 64, head = iter % 3 ? 256 : 512;
    const int64_t cap = (int64_t)bs * head * 2 / 1024;
    const int64_t rows = cap * ts_rand_range(&rng, 1, 3);
    const int64_t n = ts_rand_range(&rng, 0, 12), pad = ts_rand_range(&rng, 0, 5);
    const int padding_is_actual = (int)ts_rand_range(&rng, 0, 1);
    const int circular = iter % 4 == 0; /* CIRCULAR_BUFFER with a one-column table */
    int32_t q[12], s[12];
    int64_t pos[256], r, i, t = 0, tokens = 0;
    positions_view pv;
    attn_kv_cache_spec_t spec = ring_spec(bs, head, (int32_t)(rows * 1024));
    attn_builder_config_t c = ts_config();
    attn_builder_t* b;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    const int64_t *got_base, *got_slot;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&rng, 0, 20);
      s[r] = q[r] + (int32_t)ts_rand_range(&rng, 0, 300);
      tokens += q[r];
    }
    if (circular) spec.kind = ATTN_KV_CIRCULAR_BUFFER;
    b = ts_builder(TAIL_RING, &spec, &c);
    batch = ring_batch(q, s, n, bs, tokens + pad, pos, &pv);
    if (circular && batch->width > 0) ts_narrow_table(batch, 1);
    if (!padding_is_actual) batch->common.num_actual_tokens = tokens;
    for (r = 0; r < n; ++r) {
      for (i = 0; i < q[r]; ++i) pos[t++] = s[r] - q[r] + i;
      if (batch->width > 0 && ts_rand_range(&rng, 0, 3) == 0)
        batch->bt[r * batch->width] = ts_rand_range(&rng, 0, 1) ? 0 : -1;
    }
    for (; t < tokens + pad; ++t) pos[t] = ts_rand_range(&rng, 0, 50);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_tensor(m, "base")->shape[0], tokens + pad);
    assert_int_equal(ts_tensor(m, "slot_mapping")->shape[0], tokens + pad);
    got_base = (const int64_t*)ts_tensor(m, "base")->data;
    got_slot = (const int64_t*)ts_tensor(m, "slot_mapping")->data;
    for (i = 0; i < tokens + pad; ++i) {
      int64_t want_base = -1, want_slot = -1;
      if (i < tokens) { /* scheduled (padding rows past qsl[n] own no slot) */
        int32_t req = 0;
        int64_t block;
        while (req < n - 1 && batch->qsl[req + 1] <= i) ++req;
        block = batch->bt[req * batch->width];
        if (block > 0) {
          want_base = block * rows;
          if (pos[i] >= s[req] - cap) want_slot = want_base + pos[i] % cap;
        }
      }
      if (got_base[i] != want_base || got_slot[i] != want_slot)
        fail_msg("iter %d: token %lld: base %lld slot %lld, expected %lld %lld", iter,
                 (long long)i, (long long)got_base[i], (long long)got_slot[i],
                 (long long)want_base, (long long)want_slot);
    }
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

static void test_tail_ring_refusals(void** state) {
  static const int32_t q[2] = {1, 2}, s[2] = {5, 9};
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = NULL;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_ERROR(attn_builder_create(TAIL_RING, &spec, &c, &b), ATTN_ERR_UNSUPPORTED, "kind");
  /* the page must hold whole 1 KB rows, at least 7 + k of them (the layer's ValueError) */
  spec = ring_spec(16, 200, 0); /* 6,400 bytes */
  ASSERT_ERROR(attn_builder_create(TAIL_RING, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "= 6400 bytes must hold a whole number of 1024-byte rows");
  spec = ring_spec(16, 128, 0); /* 4 rows */
  ASSERT_ERROR(attn_builder_create(TAIL_RING, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "at least 7 + num_speculative_tokens=7");
  spec = ring_spec(16, 256, 0); /* 8 rows: k = 1 fits, k = 2 does not */
  c.num_speculative_tokens = 2;
  ASSERT_ERROR(attn_builder_create(TAIL_RING, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "at least 7 + num_speculative_tokens=9");
  c.num_speculative_tokens = 1;
  /* the stride must be whole rows (bind_kv_cache's assertion), and not negative (every kind) */
  spec = ring_spec(16, 256, 8200);
  ASSERT_ERROR(attn_builder_create(TAIL_RING, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->block_stride_bytes=8200 is not a multiple of 1024");
  spec = ring_spec(16, 256, -1024);
  ASSERT_ERROR(attn_builder_create(TAIL_RING, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->block_stride_bytes=-1024 is negative");
  spec = ts_spec();
  spec.block_stride_bytes = -1;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->block_stride_bytes=-1 is negative");
  assert_null(b);
  /* build: positions are required (vLLM asserts), slot rows beyond the buffers */
  spec = ring_spec(16, 256, 0);
  b = ts_builder(TAIL_RING, &spec, &c);
  batch = ts_batch_make(q, s, 2, 16, 0, -1);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->positions is NULL");
  ts_batch_free(batch);
  attn_builder_destroy(b);
  c.max_num_batched_tokens = 2;
  b = ts_builder(TAIL_RING, &spec, &c);
  {
    static const int32_t q1[2] = {1, 1};
    int64_t pos[3] = {4, 8, 0};
    positions_view pv;
    batch = ring_batch(q1, s, 2, 16, 3, pos, &pv); /* a padding row past 2 actual tokens */
    batch->common.num_actual_tokens = 2;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->slot_mapping has 3 entries, more than "
                 "config->max_num_batched_tokens=2 (STEP5_CSA_TAIL_RING's base and "
                 "slot_mapping buffers)");
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_summary_answers),
      cmocka_unit_test(test_summary_build),
      cmocka_unit_test(test_summary_refusals),
      cmocka_unit_test(test_tail_ring_answers),
      cmocka_unit_test(test_tail_ring_hand_checked),
      cmocka_unit_test(test_tail_ring_circular),
      cmocka_unit_test(test_tail_ring_random_vs_naive),
      cmocka_unit_test(test_tail_ring_refusals),
  };
  return cmocka_run_group_tests_name("step5", tests, NULL, NULL);
}
