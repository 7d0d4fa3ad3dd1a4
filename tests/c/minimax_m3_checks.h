/* What the tests of vLLM 0.33's MiniMax-M3 builders share (test_minimax_m3.c:
 * MINIMAX_M3_SPARSE, test_minimax_m3_indexer.c: MINIMAX_M3_SPARSE_INDEXER,
 * test_minimax_m3_indexer_msa.c: MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM): the class answers,
 * the hand-checked mixed and speculative-decoding batches, the refusals of vLLM's assertions on
 * the uniform split, and the seeded random batches with a naive restatement of what both
 * builds write (the uniform split, the rebased query starts, the context lengths seq - query).
 * Static functions: one copy per test binary. */
#ifndef ATTN_TESTS_MINIMAX_M3_CHECKS_H
#define ATTN_TESTS_MINIMAX_M3_CHECKS_H

#include "test_support.h"

#define MM3_BLOCK 128   /* SPARSE_BLOCK_SIZE, the kernel block size */
#define MM3_MAX_REQS 24 /* requests of a random batch, at most */

/* The lightning indexer's spec (MiniMaxM3IndexerCache.get_kv_cache_spec: MLAAttentionSpec, one
 * 128-wide key a token) and a config with its 4 index heads: both indexer builders' tests.
 * Inline: test_minimax_m3.c does not use them. */
static inline attn_kv_cache_spec_t mm3_indexer_spec(void) {
  attn_kv_cache_spec_t s = ts_mla_spec(MM3_BLOCK);
  s.head_size = 128;
  return s;
}

static inline attn_builder_config_t mm3_indexer_config(void) {
  attn_builder_config_t c = ts_config();
  c.sparse_num_index_heads = 4;
  return c;
}

/* UNIFORM_BATCH (a class attribute) from the backend and the builder; the reorder threshold 1,
 * and 1 + 3 with 3 speculative tokens; no update_block_table, no draft decode update. */
static void mm3_expect_class_answers(const char* backend, const attn_kv_cache_spec_t* spec,
                                     attn_builder_config_t c) {
  int k;
  for (k = 0; k < 2; ++k) {
    int32_t level = -1, th = -1, supported = 1;
    attn_builder_t* b;
    c.num_speculative_tokens = k * 3;
    ASSERT_OK(attn_backend_cudagraph_support(backend, spec, &c, &level));
    assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
    b = ts_builder(backend, spec, &c);
    ASSERT_OK(attn_builder_cudagraph_support(b, &level));
    assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
    ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
    assert_int_equal(th, 1 + k * 3);
    ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
    assert_int_equal(supported, 0);
    supported = 1;
    ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
    assert_int_equal(supported, 0);
    attn_builder_destroy(b);
  }
}

/* The mixed batch of both hand-checked tests: queries [1, 1, 5, 0, 130] onto
 * [40, 300, 133, 9, 130] (query_start_loc [0, 1, 2, 7, 7, 137]), threshold 1, uniform split:
 * queries 2 and 4 differ from the first and are not empty, the first of them is request 2:
 * 2 decodes (2 tokens), 3 prefills (135 tokens; the empty request 3 sits among them). Context
 * lengths seq - query = [39, 299, 128, 9, 0].
 * prefill: cu_seqlens_q = qsl[2:] - 2 = [0, 5, 5, 135]; seq_lens [133, 9, 130]; context_lens
 * [128, 9, 0]; the table from row 2; max_query_len 130, max_seq_len 300 (the batch's).
 * decode: seq_lens [40, 300], the table's first rows, decode_query_len 1. */
static const int32_t kMm3Q[5] = {1, 1, 5, 0, 130}, kMm3S[5] = {40, 300, 133, 9, 130};

/* What both builders write for kMm3Q / kMm3S, made into `batch` (ts_batch_make, no padding). */
static void mm3_expect_mixed_batch(const attn_metadata_t* m, const ts_batch* batch) {
  static const int32_t cu_q[4] = {0, 5, 5, 135};
  static const int32_t pseq[3] = {133, 9, 130}, pctx[3] = {128, 9, 0}, dseq[2] = {40, 300};
  const attn_tensor_t* t;
  assert_int_equal(ts_int(m, "num_actual_tokens"), 137);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 135);
  assert_int_equal(ts_int(m, "max_seq_len"), 300);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  ts_expect_i32(m, "prefill_cu_seqlens_q", cu_q, 4);
  ts_expect_i32(m, "prefill_seq_lens", pseq, 3);
  ts_expect_i32(m, "prefill_context_lens", pctx, 3);
  t = ts_tensor(m, "prefill_block_table");
  assert_ptr_equal(t->data, batch->bt + 2 * batch->width);
  assert_int_equal(t->shape[0], 3);
  assert_int_equal(ts_int(m, "prefill_max_query_len"), 130);
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 300);
  ts_expect_i32(m, "decode_seq_lens", dseq, 2);
  t = ts_tensor(m, "decode_block_table");
  assert_ptr_equal(t->data, batch->bt);
  assert_int_equal(t->shape[0], 2);
  assert_int_equal(ts_int(m, "decode_decode_query_len"), 1);
}

/* Speculative decoding (k = 2, threshold 3): queries [3, 3, 2, 7] onto [50, 60, 70, 7]: the
 * ragged third (2 != 3) is a prefill under the uniform split, as vLLM's require_uniform makes it:
 * 2 decodes of 3 tokens, decode_query_len 3; prefills [2, 7] with cu_seqlens_q [0, 2, 9],
 * context lengths [68, 0]. Capture: a uniform batch [2, 2, 2] onto [10, 3, 21] with k = 1
 * (threshold 2) is all decodes, decode_query_len 2. */
static const int32_t kMm3SpecQ[4] = {3, 3, 2, 7}, kMm3SpecS[4] = {50, 60, 70, 7};
static const int32_t kMm3UniformQ[3] = {2, 2, 2}, kMm3UniformS[3] = {10, 3, 21};

/* Builds kMm3SpecQ / kMm3SpecS (capture 0: attn_build, k = 2) or kMm3UniformQ / kMm3UniformS
 * (capture 1: attn_build_for_cudagraph_capture, k = 1), with the runner's positions, with
 * `backend` and config `c`, checks
 * what both builders write, then calls extra(m) (may be NULL) for the caller's own fields. */
static void mm3_expect_spec_decode(const char* backend, const attn_kv_cache_spec_t* spec,
                                   attn_builder_config_t c, int capture,
                                   void (*extra)(const attn_metadata_t* m)) {
  static const int32_t cu_q[3] = {0, 2, 9}, ctx[2] = {68, 0};
  ts_batch* batch = capture ? ts_batch_make(kMm3UniformQ, kMm3UniformS, 3, MM3_BLOCK, 0, -1)
                            : ts_batch_make(kMm3SpecQ, kMm3SpecS, 4, MM3_BLOCK, 0, -1);
  attn_metadata_t* m = NULL;
  attn_builder_t* b;
  int64_t pos[16], pos_shape[1];
  attn_tensor_t pt;
  /* the tokens' positions, the runner's (the AMD MSA indexer reads the prefill rows') */
  ts_batch_positions(batch, pos);
  pos_shape[0] = batch->num_tokens;
  pt = ts_host_tensor(pos, 1, pos_shape, ATTN_DTYPE_INT, 64);
  batch->common.positions = &pt;
  c.num_speculative_tokens = capture ? 1 : 2;
  b = ts_builder(backend, spec, &c);
  if (capture) {
    ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), 3);
    assert_int_equal(ts_int(m, "num_prefills"), 0);
    assert_int_equal(ts_int(m, "decode_decode_query_len"), 2);
  } else {
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), 2);
    assert_int_equal(ts_int(m, "num_decode_tokens"), 6);
    assert_int_equal(ts_int(m, "decode_decode_query_len"), 3);
    ts_expect_i32(m, "prefill_cu_seqlens_q", cu_q, 3);
    ts_expect_i32(m, "prefill_context_lens", ctx, 2);
  }
  if (extra != NULL) extra(m);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* vLLM's assertions on the decodes of a uniform split, refused by builder `b` (threshold 1)
 * with the out-param untouched: a padded uniform batch (queries [1, 1, 0]: all decodes, 2
 * tokens, not 3 * 1) and a first decode of no token ([0, 1, 1]: decode_query_len 0). */
static void mm3_expect_uniform_refusals(attn_builder_t* b) {
  static const int32_t padded[3] = {1, 1, 0}, empty_first[3] = {0, 1, 1}, s[3] = {5, 6, 7};
  attn_metadata_t* bad = (attn_metadata_t*)UNTOUCHED_PTR;
  ts_batch* batch = ts_batch_make(padded, s, 3, MM3_BLOCK, 0, -1);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &bad, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "num_decode_tokens=2 tokens, not 3");
  ts_batch_free(batch);
  batch = ts_batch_make(empty_first, s, 3, MM3_BLOCK, 0, -1);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &bad, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "decode_query_len > 0");
  ts_batch_free(batch);
  assert_ptr_equal(bad, UNTOUCHED_PTR);
}

/* 5 requests against a context_len_buffer of 4 (config->max_num_batched_tokens = 4): refused. */
static void mm3_expect_context_len_refusal(const char* backend, const attn_kv_cache_spec_t* spec,
                                           attn_builder_config_t c) {
  static const int32_t q[5] = {0, 0, 0, 0, 0}, s[5] = {1, 2, 3, 4, 5};
  attn_metadata_t* bad = (attn_metadata_t*)UNTOUCHED_PTR;
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 5, MM3_BLOCK, 0, -1);
  c.max_num_batched_tokens = 4;
  b = ts_builder(backend, spec, &c);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &bad, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "context_len_buffer");
  assert_ptr_equal(bad, UNTOUCHED_PTR);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* A seeded random batch (decodes first, empty queries, spec decoding) and what both builders
 * write for it, restated naively. */
typedef struct mm3_random_batch {
  int32_t k, th; /* speculative tokens; the reorder threshold 1 + k */
  int64_t n;     /* requests */
  int32_t q[MM3_MAX_REQS], s[MM3_MAX_REQS], max_q, max_s;
  int64_t tokens;      /* num_actual_tokens: the sum of the queries */
  int64_t nd, ndt, np; /* the uniform split */
  /* the prefills' cu_seqlens_q (query_start_loc[nd:] - ndt, np + 1) and context lengths (np) */
  int32_t cu_q[MM3_MAX_REQS + 1], ctx[MM3_MAX_REQS];
  ts_batch* batch;
} mm3_random_batch;

/* Draws the next batch from `rng` into `rb` (rb->batch: ts_batch_free it). `coin`, when not
 * NULL, receives 0 or 1 drawn after the batch's shape and before its lengths (the sparse test's
 * AITER switch). Returns 0, and makes no batch, when the draw breaks vLLM's assertion
 * num_decode_tokens == num_decodes * decode_query_len (mm3_expect_uniform_refusals). */
static int mm3_random_batch_make(uint64_t* rng, int32_t* coin, mm3_random_batch* rb) {
  int64_t r, nd_want;
  int32_t dq;
  memset(rb, 0, sizeof(*rb));
  rb->k = (int32_t)ts_rand_range(rng, 0, 2);
  rb->th = 1 + rb->k;
  rb->n = ts_rand_range(rng, 1, MM3_MAX_REQS);
  nd_want = ts_rand_range(rng, 0, rb->n);
  dq = (int32_t)ts_rand_range(rng, 1, rb->th);
  if (coin != NULL) *coin = (int32_t)ts_rand_range(rng, 0, 1);
  for (r = 0; r < rb->n; ++r) {
    rb->q[r] = r < nd_want ? dq : (int32_t)ts_rand_range(rng, 0, 40);
    rb->s[r] = rb->q[r] + (int32_t)ts_rand_range(rng, 0, 600);
    rb->tokens += rb->q[r];
  }
  if (rb->q[0] == 0) rb->q[0] = 1, rb->s[0] += 1, rb->tokens += 1;
  for (r = 0; r < rb->n; ++r) {
    if (rb->q[r] > rb->max_q) rb->max_q = rb->q[r];
    if (rb->s[r] > rb->max_s) rb->max_s = rb->s[r];
  }
  /* the uniform split, restated: decodes while the queries are the first's (at most the
   * threshold) or empty */
  rb->nd = rb->q[0] > rb->th ? 0 : rb->n;
  for (r = 0; r < rb->nd; ++r)
    if (rb->q[r] != rb->q[0] && rb->q[r] != 0) {
      rb->nd = r;
      break;
    }
  for (r = 0; r < rb->nd; ++r) rb->ndt += rb->q[r];
  if (rb->nd > 0 && rb->ndt != rb->nd * rb->q[0]) return 0;
  rb->np = rb->n - rb->nd;
  rb->batch = ts_batch_make(rb->q, rb->s, rb->n, MM3_BLOCK, 0, -1);
  for (r = 0; r <= rb->np; ++r) rb->cu_q[r] = rb->batch->qsl[rb->nd + r] - (int32_t)rb->ndt;
  for (r = 0; r < rb->np; ++r) rb->ctx[r] = rb->s[rb->nd + r] - rb->q[rb->nd + r];
  return 1;
}

/* What both builders write for `rb`: the top fields, the prefill part's cu_seqlens_q and
 * context lengths (None without prefills), the decode part's decode_query_len (the first
 * query; decode_seq_lens None without decodes). */
static void mm3_expect_random_batch(const attn_metadata_t* m, const mm3_random_batch* rb) {
  assert_int_equal(ts_int(m, "num_actual_tokens"), rb->tokens);
  assert_int_equal(ts_int(m, "max_seq_len"), rb->max_s);
  assert_int_equal(ts_int(m, "num_decodes"), rb->nd);
  assert_int_equal(ts_int(m, "num_decode_tokens"), rb->ndt);
  assert_int_equal(ts_int(m, "num_prefills"), rb->np);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), rb->tokens - rb->ndt);
  if (rb->np > 0) {
    ts_expect_i32(m, "prefill_cu_seqlens_q", rb->cu_q, rb->np + 1);
    ts_expect_i32(m, "prefill_context_lens", rb->ctx, rb->np);
  } else {
    ts_expect_none(m, "prefill_cu_seqlens_q");
  }
  if (rb->nd > 0)
    assert_int_equal(ts_int(m, "decode_decode_query_len"), rb->q[0]);
  else
    ts_expect_none(m, "decode_seq_lens");
}

#endif
