/* PLE_SHORT_CONV_ATTN at vLLM 0.33 (vllm/v1/attention/backends/short_conv_attn.py,
 * PleShortConvAttentionMetadataBuilder): the class answers (UNIFORM_BATCH, threshold 1 / 1 + k,
 * no update_block_table), the non-spec build (SHORT_CONV's without accepted counts or conv1d
 * metadata, the concatenated state slots, has_initial_states_d, max_prefill_query_len), the
 * spec build's classification by mask (token permutation, per-group slots, query_start_locs,
 * accepted counts, zero-length rows in no group), the all-spec CUDA-graph staging, capture, a
 * random spec batch against a naive classification, and bad input. */
#include "test_support.h"

static const char* base(const attn_tensor_t* t) { return (const char*)t->data + t->byte_offset; }

static int64_t elem(const attn_tensor_t* t, int64_t i) {
  const char* p = base(t) + i * t->strides[0] * (t->dtype.bits / 8);
  if (t->dtype.bits == 64) return *(const int64_t*)p;
  if (t->dtype.bits == 32) return *(const int32_t*)p;
  return *(const uint8_t*)p;
}

static void expect_vec(const attn_metadata_t* m, const char* name, int bits,
                       const int64_t* expected, int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t i;
  if (t == NULL) fail_msg("%s is None", name);
  assert_int_equal(t->ndim, 1);
  assert_int_equal(t->dtype.bits, bits);
  if (t->shape[0] != n)
    fail_msg("%s has %lld entries, expected %lld", name, (long long)t->shape[0], (long long)n);
  for (i = 0; i < n; ++i)
    if (elem(t, i) != expected[i])
      fail_msg("%s[%lld] = %lld, expected %lld", name, (long long)i, (long long)elem(t, i),
               (long long)expected[i]);
}

static attn_kv_cache_spec_t pspec(void) {
  attn_kv_cache_spec_t s = ts_spec();
  s.kind = ATTN_KV_MAMBA;
  s.mamba_type = ATTN_MAMBA_TYPE_SHORT_CONV;
  s.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_NONE;
  return s;
}

static attn_builder_config_t pconfig(int32_t k, int full) {
  attn_builder_config_t c = ts_config();
  c.num_speculative_tokens = k;
  c.cudagraph_mode = full ? ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE : ATTN_CUDAGRAPH_MODE_NONE;
  return c;
}

typedef struct {
  int32_t v[64];
  uint8_t b[64];
  int64_t shape[1];
  attn_tensor_t t;
} vec;
static attn_tensor_t* vec_i32(vec* x, const int32_t* values, int64_t n) {
  memcpy(x->v, values, (size_t)n * sizeof(int32_t));
  x->shape[0] = n;
  x->t = ts_host_tensor(x->v, 1, x->shape, ATTN_DTYPE_INT, 32);
  return &x->t;
}
static attn_tensor_t* vec_bool(vec* x, const int* values, int64_t n) {
  int64_t i;
  for (i = 0; i < n; ++i) x->b[i] = (uint8_t)(values[i] != 0);
  x->shape[0] = n;
  x->t = ts_host_tensor(x->b, 1, x->shape, ATTN_DTYPE_BOOL, 8);
  return &x->t;
}

static int64_t slot(const ts_batch* b, int64_t r) { return b->bt[r * b->width]; }

static void test_class_answers(void** state) {
  const attn_kv_cache_spec_t spec = pspec();
  int32_t k;
  (void)state;
  for (k = 0; k <= 2; k += 2) {
    const attn_builder_config_t c = pconfig(k, 1);
    attn_builder_t* b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
    int32_t level = -1, threshold = -1, supported = 1;
    ASSERT_OK(attn_builder_cudagraph_support(b, &level));
    assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
    ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
    assert_int_equal(threshold, 1 + k);
    ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
    assert_int_equal(supported, 0); /* the class attribute, spec decode or not */
    attn_builder_destroy(b);
  }
}

/* No spec decode, queries [1, 1, 4, 3], seq_lens [10, 1, 4, 13], prefilling [0, 0, 1, 1]: two
 * decodes and two prefills (SHORT_CONV's split); state_indices_tensor = the four rows' column 0
 * (decodes, then prefills); has_initial_states_d [1, 0] (computed 9 and 0);
 * has_initial_states_p [0, 1]; max_prefill_query_len 4; no conv1d metadata; no spec fields. */
static void test_non_spec(void** state) {
  static const int32_t q[] = {1, 1, 4, 3}, s[] = {10, 1, 4, 13};
  static const int pf[] = {0, 0, 1, 1};
  static const int64_t qsl[] = {0, 1, 2, 6, 9}, hid[] = {1, 0}, hip[] = {0, 1};
  const attn_kv_cache_spec_t spec = pspec();
  const attn_builder_config_t c = pconfig(0, 0);
  attn_builder_t* b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 2, -1);
  attn_metadata_t* m = NULL;
  vec p;
  int64_t st[4], r;
  (void)state;
  batch->common.is_prefilling = vec_bool(&p, pf, 4);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 7);
  assert_int_equal(ts_int(m, "num_spec_decodes"), 0);
  assert_int_equal(ts_int(m, "num_spec_decode_tokens"), 0);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 9);
  assert_int_equal(ts_int(m, "spec_query_len"), 1);
  assert_int_equal(ts_int(m, "max_prefill_query_len"), 4);
  for (r = 0; r < 4; ++r) st[r] = slot(batch, r);
  expect_vec(m, "state_indices_tensor", 32, st, 4);
  expect_vec(m, "has_initial_states_d", 8, hid, 2);
  expect_vec(m, "has_initial_states_p", 8, hip, 2);
  expect_vec(m, "non_spec_query_start_loc", 32, qsl, 5);
  expect_vec(m, "query_start_loc", 32, qsl, 5);
  ts_expect_none(m, "nums_dict_nums");
  ts_expect_none(m, "nums_dict_tot");
  ts_expect_none(m, "batch_ptr");
  ts_expect_none(m, "token_chunk_offset_ptr");
  ts_expect_none(m, "spec_query_start_loc");
  ts_expect_none(m, "spec_state_indices_tensor");
  ts_expect_none(m, "spec_sequence_masks");
  ts_expect_none(m, "spec_token_indx");
  ts_expect_none(m, "non_spec_token_indx");
  ts_expect_none(m, "num_decode_draft_tokens_cpu");
  /* prefills only: state_indices_tensor is state_indices_tensor_p; no has_initial_states_d */
  {
    static const int32_t q1[] = {4, 3}, s1[] = {4, 13};
    static const int pf1[] = {1, 1};
    ts_batch* b1 = ts_batch_make(q1, s1, 2, 16, 2, -1);
    b1->common.is_prefilling = vec_bool(&p, pf1, 2);
    ASSERT_OK(attn_build(b, 0, &b1->common, 0, &m, NULL));
    st[0] = slot(b1, 0);
    st[1] = slot(b1, 1);
    expect_vec(m, "state_indices_tensor", 32, st, 2);
    ts_expect_none(m, "has_initial_states_d");
    assert_int_equal(ts_int(m, "max_prefill_query_len"), 4);
    ts_batch_free(b1);
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Full CUDA graphs, no spec decode, decodes [1, 1, 0] (the last a padded row): column 0 of the
 * staged decode slots (NULL_BLOCK_ID on no row here: every row is a decode) for all three rows,
 * has_initial_states_d [1, 0, 0] over the three rows; with k = 1 and no draft counts the decodes'
 * accepted counts are their query lengths (SHORT_CONV's build without num_accepted_tokens). */
static void test_non_spec_graphs(void** state) {
  static const int32_t q[] = {1, 1, 0}, s[] = {5, 1, 0};
  static const int pf[] = {0, 0, 0};
  static const int64_t hid[] = {1, 0, 0}, acc[] = {1, 1, 0}, none[] = {0};
  const attn_kv_cache_spec_t spec = pspec();
  attn_builder_config_t c = pconfig(0, 1);
  attn_builder_t* b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 2, -1);
  attn_metadata_t* m = NULL;
  vec p, ac;
  int64_t st[3], r;
  (void)state;
  (void)none;
  batch->common.is_prefilling = vec_bool(&p, pf, 3);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  for (r = 0; r < 3; ++r) st[r] = slot(batch, r);
  expect_vec(m, "state_indices_tensor", 32, st, 3);
  expect_vec(m, "has_initial_states_d", 8, hid, 3);
  attn_builder_destroy(b);
  c = pconfig(1, 0);
  b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
  {
    static const int32_t a[] = {7, 7, 7};
    batch->common.num_accepted_tokens = vec_i32(&ac, a, 3); /* not read: no draft counts */
  }
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_vec(m, "num_accepted_tokens", 32, acc, 3);
  assert_int_equal(ts_int(m, "spec_query_len"), 2);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* k = 2, rows: 0 spec (3 tokens), 1 decode (1), 2 spec (2), 3 prefill (4), 4 zero-length
 * non-spec; seq_lens [13, 8, 20, 4, 0]; accepted [2, 1, 1, 1, 1]. Order [0, 2, 1, 3]: spec
 * tokens [0, 1, 2, 4, 5], the others [3, 6, 7, 8, 9]; spec slots rows 0, 2, accepted [2, 1],
 * spec_query_start_loc [0, 3, 5]; non-spec slots rows 1, 3, non_spec_query_start_loc [0, 1, 5];
 * has_initial_states_d [1], _p [0]; query_start_loc_d [0, 1], _p [0, 4]. */
static void test_spec_mixed(void** state) {
  static const int32_t q[] = {3, 1, 2, 4, 0}, s[] = {13, 8, 20, 4, 0};
  static const int32_t dr[] = {2, -1, 1, -1, -1}, a[] = {2, 1, 1, 1, 1};
  static const int64_t sti[] = {0, 1, 2, 4, 5}, nsti[] = {3, 6, 7, 8, 9};
  static const int64_t acc[] = {2, 1}, sqsl[] = {0, 3, 5}, nsqsl[] = {0, 1, 5};
  static const int64_t hid[] = {1}, hip[] = {0}, qd[] = {0, 1}, qp[] = {0, 4};
  static const int64_t masks[] = {1, 0, 1, 0, 0};
  const attn_kv_cache_spec_t spec = pspec();
  const attn_builder_config_t c = pconfig(2, 1);
  attn_builder_t* b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 5, 16, 2, -1);
  attn_metadata_t* m = NULL;
  vec d, ac;
  int64_t x[2];
  (void)state;
  batch->common.num_decode_draft_tokens_cpu = vec_i32(&d, dr, 5);
  batch->common.num_accepted_tokens = vec_i32(&ac, a, 5);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_spec_decodes"), 2);
  assert_int_equal(ts_int(m, "num_spec_decode_tokens"), 5);
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 1);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 4);
  assert_int_equal(ts_int(m, "num_reqs"), 5);
  assert_int_equal(ts_int(m, "spec_query_len"), 3);
  assert_int_equal(ts_int(m, "max_prefill_query_len"), 4);
  expect_vec(m, "spec_token_indx", 64, sti, 5);
  expect_vec(m, "non_spec_token_indx", 64, nsti, 5);
  x[0] = slot(batch, 0);
  x[1] = slot(batch, 2);
  expect_vec(m, "spec_state_indices_tensor", 32, x, 2);
  expect_vec(m, "num_accepted_tokens", 32, acc, 2);
  expect_vec(m, "spec_query_start_loc", 32, sqsl, 3);
  x[0] = slot(batch, 1);
  x[1] = slot(batch, 3);
  expect_vec(m, "state_indices_tensor", 32, x, 2);
  expect_vec(m, "state_indices_tensor_d", 32, x, 1);
  expect_vec(m, "state_indices_tensor_p", 32, x + 1, 1);
  expect_vec(m, "non_spec_query_start_loc", 32, nsqsl, 3);
  expect_vec(m, "has_initial_states_d", 8, hid, 1);
  expect_vec(m, "has_initial_states_p", 8, hip, 1);
  expect_vec(m, "query_start_loc_d", 32, qd, 2);
  expect_vec(m, "query_start_loc_p", 32, qp, 2);
  expect_vec(m, "spec_sequence_masks", 8, masks, 5);
  ts_expect_none(m, "nums_dict_nums");
  ts_expect_none(m, "cu_chunk_seqlen_p");
  assert_int_equal(ts_tensor(m, "num_decode_draft_tokens_cpu")->shape[0], 5);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* All spec (queries [3, 3, 0], drafts [2, 2, -1]): the first rows' slots and accepted counts,
 * query_start_loc[:3], an empty state_indices_tensor, no token permutation; with full CUDA
 * graphs staged over the three rows: slots [s0, s1, 0], query_start_loc [0, 3, 6, 6], accepted
 * [3, 1, 1], masks [1, 1, 0]. */
static void test_spec_all(void** state) {
  static const int32_t q[] = {3, 3, 0}, s[] = {13, 23, 0}, dr[] = {2, 2, -1}, a[] = {3, 1, 9};
  static const int64_t sq2[] = {0, 3, 6}, acc2[] = {3, 1}, sq3[] = {0, 3, 6, 6};
  static const int64_t acc3[] = {3, 1, 1}, masks[] = {1, 1, 0};
  const attn_kv_cache_spec_t spec = pspec();
  attn_builder_config_t c = pconfig(2, 0);
  attn_builder_t* b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 2, -1);
  attn_metadata_t* m = NULL;
  vec d, ac;
  int64_t x[3];
  (void)state;
  batch->common.num_decode_draft_tokens_cpu = vec_i32(&d, dr, 3);
  batch->common.num_accepted_tokens = vec_i32(&ac, a, 3);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_spec_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  assert_int_equal(ts_int(m, "num_prefills"), 0);
  x[0] = slot(batch, 0);
  x[1] = slot(batch, 1);
  x[2] = 0;
  expect_vec(m, "spec_state_indices_tensor", 32, x, 2);
  expect_vec(m, "spec_query_start_loc", 32, sq2, 3);
  expect_vec(m, "num_accepted_tokens", 32, acc2, 2);
  assert_int_equal(ts_tensor(m, "state_indices_tensor")->shape[0], 0);
  ts_expect_none(m, "spec_token_indx");
  ts_expect_none(m, "non_spec_token_indx");
  ts_expect_none(m, "non_spec_query_start_loc");
  ts_expect_none(m, "state_indices_tensor_d");
  ts_expect_none(m, "has_initial_states_d");
  attn_builder_destroy(b);
  c = pconfig(2, 1);
  b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_vec(m, "spec_state_indices_tensor", 32, x, 3);
  expect_vec(m, "spec_query_start_loc", 32, sq3, 4);
  expect_vec(m, "num_accepted_tokens", 32, acc3, 3);
  expect_vec(m, "spec_sequence_masks", 8, masks, 3);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Capture: with k = 2, accepted = query lengths and drafts = query lengths - 1 (all spec);
 * without spec decode the non-spec build; a batch beyond the capture sizes refused. */
static void test_capture(void** state) {
  static const int32_t q[] = {3, 3}, s[] = {13, 23};
  static const int64_t acc[] = {3, 3}, drafts[] = {2, 2}, sq[] = {0, 3, 6};
  const attn_kv_cache_spec_t spec = pspec();
  attn_builder_config_t c = pconfig(2, 1);
  attn_builder_t* b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 2, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  assert_int_equal(ts_int(m, "num_spec_decodes"), 2);
  expect_vec(m, "num_accepted_tokens", 32, acc, 2);
  expect_vec(m, "num_decode_draft_tokens_cpu", 32, drafts, 2);
  expect_vec(m, "spec_query_start_loc", 32, sq, 3);
  attn_builder_destroy(b);
  c = pconfig(2, 1);
  c.max_cudagraph_capture_size = 1;
  b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL),
               ATTN_ERR_UNSUPPORTED, "decode-only full CUDAGraph capture");
  attn_builder_destroy(b);
  ts_batch_free(batch);
  {
    static const int32_t q1[] = {1, 1}, s1[] = {4, 9};
    static const int pf[] = {0, 0};
    vec p;
    c = pconfig(0, 1);
    b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
    batch = ts_batch_make(q1, s1, 2, 16, 2, -1);
    batch->common.is_prefilling = vec_bool(&p, pf, 2);
    ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), 2);
    ts_expect_none(m, "spec_state_indices_tensor");
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

/* Random spec batches against a naive classification (spec by mask, decode = 1 token,
 * prefill = longer, zero-length non-spec rows in none). */
static void test_random(void** state) {
  uint64_t seed = 2027;
  int iter;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    const int32_t k = (int32_t)ts_rand_range(&seed, 1, 3);
    const attn_kv_cache_spec_t spec = pspec();
    const attn_builder_config_t c = pconfig(k, iter % 2);
    attn_builder_t* b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
    const int64_t n = ts_rand_range(&seed, 1, 40);
    int32_t q[40], s[40], dr[40], a[40];
    int64_t r, j, nsd = 0, nd = 0, np = 0, nst = 0, max_seq = 1, qsl[41];
    int64_t sti[40 * 20], nsti[40 * 20], nsv = 0, nnv = 0, sst[40], nst_[40], sacc[40];
    int64_t sq[41], nsq[41], hi[40];
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    vec d, ac;
    qsl[0] = 0;
    for (r = 0; r < n; ++r) {
      const int64_t kind = ts_rand_range(&seed, 0, 9);
      dr[r] = -1;
      if (kind < 4) { /* spec */
        q[r] = (int32_t)ts_rand_range(&seed, 1, 1 + k);
        dr[r] = q[r] - 1;
      } else if (kind < 6) {
        q[r] = 1;
      } else if (kind < 9) {
        q[r] = (int32_t)ts_rand_range(&seed, 2, 20);
      } else {
        q[r] = 0;
      }
      s[r] = q[r] == 0 ? 0 : q[r] + (int32_t)ts_rand_range(&seed, 0, 3) * (int32_t)ts_rand_range(&seed, 0, 20);
      a[r] = (int32_t)ts_rand_range(&seed, 1, 4);
      qsl[r + 1] = qsl[r] + q[r];
      if (s[r] > max_seq) max_seq = s[r];
    }
    sq[0] = nsq[0] = 0;
    for (r = 0; r < n; ++r)
      if (dr[r] >= 0) {
        for (j = 0; j < q[r]; ++j) sti[nsv++] = qsl[r] + j;
        sacc[nsd] = a[r];
        sq[nsd + 1] = sq[nsd] + q[r];
        nst += q[r];
        ++nsd;
      }
    for (r = 0; r < n; ++r)
      if (dr[r] < 0 && q[r] == 1) {
        nsti[nnv++] = qsl[r];
        hi[nd] = s[r] - q[r] > 0;
        nsq[nd + 1] = nsq[nd] + 1;
        ++nd;
      }
    for (r = 0; r < n; ++r)
      if (dr[r] < 0 && q[r] > 1) {
        for (j = 0; j < q[r]; ++j) nsti[nnv++] = qsl[r] + j;
        hi[nd + np] = s[r] - q[r] > 0;
        nsq[nd + np + 1] = nsq[nd + np] + q[r];
        ++np;
      }
    batch = ts_batch_make(q, s, n, 16, (max_seq + 15) / 16 + 1, -1);
    batch->common.num_decode_draft_tokens_cpu = vec_i32(&d, dr, n);
    batch->common.num_accepted_tokens = vec_i32(&ac, a, n);
    if (nsd == 0) { /* the non-spec build needs is_prefilling; every row is a decode or not */
      ts_batch_free(batch);
      attn_builder_destroy(b);
      continue;
    }
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_spec_decodes"), nsd);
    assert_int_equal(ts_int(m, "num_spec_decode_tokens"), nst);
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_prefills"), np);
    if (nd + np > 0) {
      j = 0;
      for (r = 0; r < n; ++r)
        if (dr[r] >= 0) sst[j++] = slot(batch, r);
      j = 0;
      for (r = 0; r < n; ++r)
        if (dr[r] < 0 && q[r] == 1) nst_[j++] = slot(batch, r);
      for (r = 0; r < n; ++r)
        if (dr[r] < 0 && q[r] > 1) nst_[j++] = slot(batch, r);
      expect_vec(m, "spec_token_indx", 64, sti, nsv);
      expect_vec(m, "non_spec_token_indx", 64, nsti, nnv);
      expect_vec(m, "spec_state_indices_tensor", 32, sst, nsd);
      expect_vec(m, "num_accepted_tokens", 32, sacc, nsd);
      expect_vec(m, "spec_query_start_loc", 32, sq, nsd + 1);
      expect_vec(m, "state_indices_tensor", 32, nst_, nd + np);
      expect_vec(m, "non_spec_query_start_loc", 32, nsq, nd + np + 1);
      if (nd > 0) expect_vec(m, "has_initial_states_d", 8, hi, nd);
      if (np > 0) expect_vec(m, "has_initial_states_p", 8, hi + nd, np);
    } else {
      ts_expect_none(m, "spec_token_indx");
      assert_int_equal(ts_tensor(m, "spec_state_indices_tensor")->shape[0],
                       iter % 2 && nsd <= 256 ? n : nsd);
    }
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

static void test_refusals(void** state) {
  static const int32_t q[] = {2, 1}, s[] = {9, 4}, dr[] = {1, -1};
  attn_kv_cache_spec_t spec = pspec();
  attn_builder_config_t c = pconfig(1, 0);
  attn_builder_t* b = NULL;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  vec d;
  (void)state;
  spec.mamba_type = ATTN_MAMBA_TYPE_MAMBA2;
  ASSERT_ERROR(attn_builder_create("PLE_SHORT_CONV_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "mamba_type");
  spec = ts_spec();
  ASSERT_ERROR(attn_builder_create("PLE_SHORT_CONV_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "MAMBA KV cache specs");
  spec = pspec();
  c = pconfig(1, 0);
  b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
  batch = ts_batch_make(q, s, 2, 16, 2, -1);
  batch->common.num_decode_draft_tokens_cpu = vec_i32(&d, dr, 2);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "num_accepted_tokens is NULL");
  batch->common.num_decode_draft_tokens_cpu = NULL; /* non-spec: is_prefilling needed */
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "is_prefilling");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Prefill checkpoints ("align", one checkpoint block, hash and alignment 16, block 16): rows
 * [decode q=1 seq=10, prefill q=40 seq=40] -> over every row (the non-spec build): offsets
 * [0, 32] (the prefill's position floor(39 / 16) * 16 = 32 from its start 0; the decode's start
 * 9 is not hash-aligned), query_lens [1, 40], request_rows [0, 1], block_cols [-1, 1] (cdiv(40,
 * 16) - 2), state_indices [NULL_BLOCK_ID, table[1][1]]; without prefills none. */
static void test_checkpoints(void** state) {
  static const int32_t q[] = {1, 40}, s[] = {10, 40}, q1[] = {1, 1}, s1[] = {10, 40};
  static const int pf[] = {0, 1}, pf1[] = {0, 0};
  static const int64_t off[] = {0, 32}, ql[] = {1, 40}, rows[] = {0, 1}, cols[] = {-1, 1};
  attn_kv_cache_spec_t spec = pspec();
  attn_builder_config_t c = pconfig(0, 0);
  attn_builder_t* b;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  vec p;
  int64_t st[2];
  (void)state;
  spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_ALIGN;
  spec.num_prefill_checkpoint_blocks = 1;
  spec.prefill_checkpoint_alignment = 16;
  c.hash_block_size = 16;
  c.cache_hit_alignment_tokens = 16;
  b = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
  batch = ts_batch_make(q, s, 2, 16, 0, -1);
  batch->common.is_prefilling = vec_bool(&p, pf, 2);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  expect_vec(m, "checkpoint_checkpoint_offsets", 32, off, 2);
  expect_vec(m, "checkpoint_offsets", 32, off, 2);
  expect_vec(m, "checkpoint_query_lens", 32, ql, 2);
  expect_vec(m, "checkpoint_request_rows", 64, rows, 2);
  expect_vec(m, "checkpoint_block_cols", 64, cols, 2);
  st[0] = 0;
  st[1] = batch->bt[batch->width + 1];
  expect_vec(m, "checkpoint_state_indices", 32, st, 2);
  ts_batch_free(batch);
  batch = ts_batch_make(q1, s1, 2, 16, 0, -1); /* no prefills: no checkpoint */
  batch->common.is_prefilling = vec_bool(&p, pf1, 2);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "checkpoint_offsets");
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_class_answers), cmocka_unit_test(test_non_spec),
      cmocka_unit_test(test_non_spec_graphs), cmocka_unit_test(test_spec_mixed),
      cmocka_unit_test(test_spec_all),      cmocka_unit_test(test_capture),
      cmocka_unit_test(test_random),        cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_checkpoints),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
