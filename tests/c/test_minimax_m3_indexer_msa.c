/* MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM at vLLM 0.33 (the AMD MiniMaxM3IndexerMSAMetadataBuilder of
 * models/minimax_m3/amd/indexer_msa.py): MINIMAX_M3_SPARSE_INDEXER's class answers, config and
 * every field of its build, then the prefill rows' causal shape over the prefill tokens:
 * prefill_num_valid_pages (positions // 128 + 1), prefill_row_req_id
 * (searchsorted(cu_seqlens_q[1:], t, right=True)) and prefill_kv_lens (positions + 1); the
 * positions it needs with prefills (vLLM asserts them); seeded random batches against a naive
 * restatement and against the Triton indexer's build of the same batch. Hand-checked values are
 * worked out in the comments. */
#include "minimax_m3_checks.h"

#define MSA "MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM"
#define TRITON "MINIMAX_M3_SPARSE_INDEXER"
#define MAX_TOKENS (MM3_MAX_REQS * 600)

/* Each token's position: its request's context length plus its index in the query (the
 * runner's); with `scatter` 1 any value in [0, 200000); with 2 a negative one, one within 300
 * of 2^31 - 1 or any in [0, 2^33), a third each (vLLM reads the positions as given: negative
 * ones floor-divide, those past 2^31 - 2 keep their low 32 bits in the int32 buffers). */
static int64_t far_position(uint64_t* rng) {
  switch (ts_rand_range(rng, 0, 2)) {
    case 0: return ts_rand_range(rng, -300, -1);
    case 1: return ts_rand_range(rng, (int64_t)INT32_MAX - 300, (int64_t)INT32_MAX + 300);
    default: return ts_rand_range(rng, 0, (int64_t)1 << 33);
  }
}

static void make_positions(const ts_batch* b, uint64_t* rng, int scatter, int64_t* out) {
  int64_t t;
  ts_batch_positions(b, out);
  if (scatter != 0)
    for (t = 0; t < b->qsl[b->num_reqs]; ++t)
      out[t] = scatter == 1 ? ts_rand_range(rng, 0, 199999) : far_position(rng);
}

/* torch's int64 floor division by 128, then + 1, kept to int32 as copy_ keeps it */
static int32_t naive_pages(int64_t p) {
  const int64_t q = p >= 0 ? p / MM3_BLOCK : -((-p + MM3_BLOCK - 1) / MM3_BLOCK);
  return (int32_t)(uint32_t)(uint64_t)(q + 1);
}

/* The Triton builder's class answers; the same config it needs and refuses. */
static void test_class(void** state) {
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  attn_builder_config_t c = mm3_indexer_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  (void)state;
  mm3_expect_class_answers(MSA, &spec, c);
  c.sparse_num_index_heads = 0;
  ASSERT_ERROR(attn_builder_create(MSA, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "sparse_num_index_heads=0 (absent): " MSA);
  c = mm3_indexer_config();
  c.tensor_parallel_size = 3;
  ASSERT_ERROR(attn_builder_create(MSA, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "sparse_num_index_heads=4 and config->tensor_parallel_size=3");
  assert_ptr_equal(b, UNTOUCHED_PTR);
}

/* The mixed batch kMm3Q / kMm3S (mm3_expect_mixed_batch): 2 decodes (2 tokens), then the
 * prefills: request 2 (5 tokens at positions 128..132), the empty request 3 and request 4 (130
 * tokens at 0..129); cu_seqlens_q [0, 5, 5, 135].
 * prefill_num_valid_pages: 128 // 128 + 1 = 2 five times, then 1 for positions 0..127 and 2 for
 * 128 and 129. prefill_kv_lens: 129..133, then 1..130. prefill_row_req_id: searchsorted([5, 5,
 * 135], t, right=True): 0 for t < 5, 2 from 5 (both 5s are <= t: the empty request is skipped).
 * Without positions the batch is refused, the previous metadata staying live; a decode-only
 * batch needs none and has no prefill rows. */
static void test_hand_checked(void** state) {
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  attn_builder_config_t c = mm3_indexer_config();
  attn_builder_t* b = ts_builder(MSA, &spec, &c);
  ts_batch* batch = ts_batch_make(kMm3Q, kMm3S, 5, MM3_BLOCK, 0, -1);
  int64_t pos[140], shape[1] = {137};
  attn_tensor_t pt = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
  int32_t pages[138], kv[138], req[138];
  attn_metadata_t* m = NULL;
  int i;
  (void)state;
  make_positions(batch, NULL, 0, pos);
  for (i = 0; i < 135; ++i) {
    pages[i] = i < 5 ? 2 : (i - 5 < 128 ? 1 : 2);
    kv[i] = i < 5 ? 129 + i : i - 4;
    req[i] = i < 5 ? 0 : 2;
  }
  batch->common.positions = &pt;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  mm3_expect_mixed_batch(m, batch);
  assert_int_equal(ts_int(m, "decode_max_decode_query_len"), 1);
  ts_expect_i32(m, "prefill_num_valid_pages", pages, 135);
  ts_expect_i32(m, "prefill_kv_lens", kv, 135);
  ts_expect_i32(m, "prefill_row_req_id", req, 135);

  batch->common.positions = NULL;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->positions is NULL; " MSA);
  ts_expect_i32(m, "prefill_kv_lens", kv, 135); /* the previous result, live */
  ts_batch_free(batch);

  /* the same batch with 3 padding tokens past query_start_loc[-1] (140 tokens, positions 0
   * there): 138 prefill rows, the last three in no prefill's query: searchsorted gives 3
   * (num_prefills; vLLM does not clamp it), pages 1, kv_lens 1 */
  batch = ts_batch_make(kMm3Q, kMm3S, 5, MM3_BLOCK, 0, 140);
  make_positions(batch, NULL, 0, pos);
  pos[137] = pos[138] = pos[139] = 0;
  shape[0] = 140;
  for (i = 135; i < 138; ++i) pages[i] = 1, kv[i] = 1, req[i] = 3;
  batch->common.positions = &pt;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 138);
  ts_expect_i32(m, "prefill_num_valid_pages", pages, 138);
  ts_expect_i32(m, "prefill_kv_lens", kv, 138);
  ts_expect_i32(m, "prefill_row_req_id", req, 138);
  ts_batch_free(batch);
  {
    static const int32_t q1[2] = {1, 1}, s1[2] = {129, 7};
    batch = ts_batch_make(q1, s1, 2, MM3_BLOCK, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_prefills"), 0);
    ts_expect_none(m, "prefill_num_valid_pages");
    ts_expect_none(m, "prefill_row_req_id");
    ts_expect_none(m, "prefill_kv_lens");
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

/* Speculative decoding and its capture (mm3_expect_spec_decode). kMm3SpecQ / kMm3SpecS with
 * k = 2: decodes 0 and 1 (3 tokens each), prefills 2 (2 tokens at positions 68, 69) and 3 (7
 * tokens at 0..6), cu_seqlens_q [0, 2, 9]: pages 1 throughout (every position < 128), kv_lens
 * [69, 70, 1..7], requests [0, 0, 1 x 7]. The all-decode capture (k = 1) has no prefill rows. */
static void expect_spec_decode_own(const attn_metadata_t* m) {
  static const int32_t pages[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  static const int32_t kv[9] = {69, 70, 1, 2, 3, 4, 5, 6, 7}, req[9] = {0, 0, 1, 1, 1, 1, 1, 1, 1};
  assert_int_equal(ts_int(m, "decode_max_decode_query_len"), 3);
  ts_expect_i32(m, "prefill_num_valid_pages", pages, 9);
  ts_expect_i32(m, "prefill_kv_lens", kv, 9);
  ts_expect_i32(m, "prefill_row_req_id", req, 9);
}

static void expect_capture_own(const attn_metadata_t* m) {
  assert_int_equal(ts_int(m, "decode_max_decode_query_len"), 2);
  ts_expect_none(m, "prefill_num_valid_pages");
  ts_expect_none(m, "prefill_row_req_id");
  ts_expect_none(m, "prefill_kv_lens");
}

static void test_spec_decode(void** state) {
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  (void)state;
  mm3_expect_spec_decode(MSA, &spec, mm3_indexer_config(), 0, expect_spec_decode_own);
  mm3_expect_spec_decode(MSA, &spec, mm3_indexer_config(), 1, expect_capture_own);
}

/* The Triton builder's refusals (vLLM's assertions on the uniform split, before the positions
 * are looked at), the previous metadata staying live; more requests than the
 * context_len_buffer holds. */
static void test_refusals(void** state) {
  static const int32_t q[2] = {1, 3}, s[2] = {9, 3};
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  attn_builder_config_t c = mm3_indexer_config();
  attn_builder_t* b = ts_builder(MSA, &spec, &c);
  ts_batch* ok = ts_batch_make(q, s, 2, MM3_BLOCK, 0, -1);
  int64_t pos[4] = {8, 0, 1, 2}, shape[1] = {4};
  attn_tensor_t pt = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
  attn_metadata_t* m = NULL;
  static const int32_t kv[3] = {1, 2, 3};
  (void)state;
  ok->common.positions = &pt;
  ASSERT_OK(attn_build(b, 0, &ok->common, 0, &m, NULL));
  mm3_expect_uniform_refusals(b);
  ts_expect_i32(m, "prefill_kv_lens", kv, 3); /* the previous result, live */
  attn_builder_destroy(b);
  mm3_expect_context_len_refusal(MSA, &spec, c);
  ts_batch_free(ok);
}

/* Seeded random batches (mm3_random_batch_make, positions as the runner's on two in six,
 * scattered in [0, 200000) on two, negative or past 2^31 on two): every field of the Triton
 * indexer's build of the same batch, and the three arrays against a naive restatement (the
 * request by a linear scan of cu_seqlens_q). */
static void test_random_vs_naive(void** state) {
  uint64_t rng = 0x5eed3a;
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  static int64_t pos[MAX_TOKENS];
  static int32_t pages[MAX_TOKENS], kv[MAX_TOKENS], req[MAX_TOKENS];
  int iter, checked = 0;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    attn_builder_config_t c = mm3_indexer_config();
    mm3_random_batch rb;
    attn_builder_t *msa, *triton;
    attn_metadata_t *m = NULL, *want = NULL;
    int64_t shape[1], t, npt;
    attn_tensor_t pt;
    if (!mm3_random_batch_make(&rng, NULL, &rb)) continue; /* vLLM's assertion */
    c.num_speculative_tokens = rb.k;
    shape[0] = rb.tokens;
    pt = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
    make_positions(rb.batch, &rng, (int)(ts_rand_range(&rng, 0, 5) % 3), pos);
    rb.batch->common.positions = &pt;
    msa = ts_builder(MSA, &spec, &c);
    triton = ts_builder(TRITON, &spec, &c);
    ASSERT_OK(attn_build(msa, 0, &rb.batch->common, 0, &m, NULL));
    ASSERT_OK(attn_build(triton, 0, &rb.batch->common, 0, &want, NULL));
    mm3_expect_random_batch(m, &rb);
    ts_expect_leading_fields(want, m);
    npt = rb.tokens - rb.ndt;
    if (rb.np > 0) {
      for (t = 0; t < npt; ++t) {
        const int64_t p = pos[rb.ndt + t];
        int64_t r = 0;
        while (r < rb.np && rb.cu_q[r + 1] <= t) ++r;
        pages[t] = naive_pages(p);
        kv[t] = (int32_t)(uint32_t)(uint64_t)(p + 1);
        req[t] = (int32_t)r;
      }
      ts_expect_i32(m, "prefill_num_valid_pages", pages, npt);
      ts_expect_i32(m, "prefill_kv_lens", kv, npt);
      ts_expect_i32(m, "prefill_row_req_id", req, npt);
      ++checked;
    } else {
      ts_expect_none(m, "prefill_row_req_id");
    }
    attn_builder_destroy(msa);
    attn_builder_destroy(triton);
    ts_batch_free(rb.batch);
  }
  assert_true(checked > 100);
}

/* More tokens than the three buffers hold (max_num_batched_tokens entries, as vLLM's): refused
 * by the common checks before anything is written. */
static void test_capacity(void** state) {
  static const int32_t q[2] = {1, 40}, s[2] = {5, 40};
  attn_kv_cache_spec_t spec = mm3_indexer_spec();
  attn_builder_config_t c = mm3_indexer_config();
  ts_batch* batch = ts_batch_make(q, s, 2, MM3_BLOCK, 0, -1);
  int64_t pos[41], shape[1] = {41};
  attn_tensor_t pt = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  (void)state;
  make_positions(batch, NULL, 0, pos);
  batch->common.positions = &pt;
  c.max_num_batched_tokens = 32;
  b = ts_builder(MSA, &spec, &c);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->num_actual_tokens=41 exceeds config->max_num_batched_tokens=32");
  assert_null(m);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_class),
      cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_spec_decode),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_random_vs_naive),
      cmocka_unit_test(test_capacity),
  };
  return cmocka_run_group_tests_name("minimax_m3_indexer_msa", tests, NULL, NULL);
}
