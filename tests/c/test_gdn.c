/* GDN_ATTN at vLLM 0.33 (vllm/v1/attention/backends/gdn_attn.py), what 0.33 added: first
 * chunks as prefills and padding out of the prefill counts in the non-spec split, the spec path
 * on any marked request, spec_sequence_masks_cpu and uniform_spec_sequence_length, the prefill
 * part (prefill_query_start_loc, prefill_state_indices, prefill_has_initial_state) and FLA's
 * chunk_indices / chunk_offsets (Triton prefill; none on compute capability 9.0, where 0.33 runs
 * FlashInfer's prefill), the prefill checkpoints and FlashInfer's checkpoint plan ("align"),
 * update_block_table's support (model runner V2 on CUDA only), bad input.
 * The older GDN cases (spec/non-spec split, CUDA-graph buffers, capture) are in test_mamba.c. */
#include "test_support.h"

static const char* base(const attn_tensor_t* t) { return (const char*)t->data + t->byte_offset; }

static attn_kv_cache_spec_t gspec(int32_t nsb) {
  attn_kv_cache_spec_t s = ts_spec();
  s.kind = ATTN_KV_MAMBA;
  s.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_NONE;
  s.num_speculative_blocks = nsb;
  return s;
}

/* capability 80: Triton/FLA prefill (chunk metadata); 90: FlashInfer's (none) */
static attn_builder_config_t gconfig(int32_t k, int32_t capability) {
  attn_builder_config_t c = ts_config();
  c.num_speculative_tokens = k;
  c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_NONE;
  c.device_capability = capability;
  return c;
}

static attn_metadata_t* build(attn_builder_t* b, const attn_common_metadata_t* c) {
  attn_metadata_t* m = NULL;
  ASSERT_OK(attn_build(b, 0, c, 0, &m, NULL));
  return m;
}

static int64_t elem(const attn_tensor_t* t, int64_t i, int64_t j) {
  const char* p = base(t) + (i * t->strides[0] + (t->ndim > 1 ? j * t->strides[1] : 0)) *
                                (t->dtype.bits / 8);
  if (t->dtype.bits == 64) return *(const int64_t*)p;
  if (t->dtype.bits == 32) return *(const int32_t*)p;
  return *(const uint8_t*)p;
}

/* A 1-D field of `bits`-bit entries equals `expected`. */
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
    if (elem(t, i, 0) != expected[i])
      fail_msg("%s[%lld] = %lld, expected %lld", name, (long long)i, (long long)elem(t, i, 0),
               (long long)expected[i]);
}

static void expect_none(const attn_metadata_t* m, const char* name) {
  assert_int_equal(ts_kind(m, name), ATTN_FIELD_NONE);
}

/* Host int32 / bool inputs. */
typedef struct {
  int32_t v[1100];
  uint8_t b[1100];
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

/* The case and padding, hand-checked. Requests (query, context, is_prefilling):
 *   0: 1, 10, no   a decode
 *   1: 1,  0, yes  a one-token first chunk: a prefill in 0.33 (no prior state)
 *   2: 5,  0, yes  a prefill
 *   3, 4: 0        zero-length padding, and num_actual_tokens 8 (one padded token)
 * query_start_loc [0, 1, 2, 7, 7, 7]. is_prefill = [0, 1, 1, 0, 0]: num_decodes 1 (1 token);
 * num_prefills 5 - 1 = 4 minus the 2 zero-length rows = 2; num_prefill_tokens
 * query_start_loc[1 + 2] - 1 = 6 (not 8 - 1: the padded token is out too).
 * The prefill part is requests 1..4: prefill_query_start_loc = [0, 1, 6, 6, 6]
 * (query_start_loc[1:] - 1), prefill_state_indices = block_table[1:, 0], has_initial_state
 * (all five) [1, 0, 0, 0, 0], prefill_has_initial_state its [1:]. FLA's chunks (64 tokens) of
 * [0, 1, 6, 6, 6]: one each for the first two sequences: chunk_indices [[0, 0], [1, 0]],
 * chunk_offsets [0, 1, 2, 2, 2] (int64). Without is_prefilling request 1 is a decode (no
 * request is a first chunk): num_decodes 2, num_prefills 1, num_prefill_tokens 5. */
static void test_first_chunks_and_padding(void** state) {
  static const int32_t q[] = {1, 1, 5, 0, 0}, s[] = {11, 1, 5, 0, 0};
  static const int prefilling[] = {0, 1, 1, 0, 0};
  static const int64_t pqsl[] = {0, 1, 6, 6, 6}, has[] = {1, 0, 0, 0, 0}, phas[] = {0, 0, 0, 0};
  static const int64_t offsets[] = {0, 1, 2, 2, 2};
  const attn_kv_cache_spec_t spec = gspec(0);
  attn_builder_config_t c = gconfig(0, 80);
  attn_builder_t* b = ts_builder("GDN_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 5, 16, 1, 8);
  vec pf;
  attn_metadata_t* m;
  const attn_tensor_t* ci;
  int64_t col0[4];
  int r;
  (void)state;
  batch->common.is_prefilling = vec_bool(&pf, prefilling, 5);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 1);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 6);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 8);
  expect_vec(m, "prefill_query_start_loc", 32, pqsl, 5);
  for (r = 0; r < 4; ++r) col0[r] = batch->bt[(r + 1) * batch->width];
  expect_vec(m, "prefill_state_indices", 32, col0, 4);
  expect_vec(m, "has_initial_state", 8, has, 5);
  expect_vec(m, "prefill_has_initial_state", 8, phas, 4);
  ci = ts_tensor(m, "chunk_indices");
  assert_non_null(ci);
  assert_int_equal(ci->ndim, 2);
  assert_int_equal(ci->shape[0], 2);
  assert_int_equal(ci->shape[1], 2);
  assert_int_equal(ci->dtype.bits, 32);
  assert_int_equal(elem(ci, 0, 0), 0);
  assert_int_equal(elem(ci, 0, 1), 0);
  assert_int_equal(elem(ci, 1, 0), 1);
  assert_int_equal(elem(ci, 1, 1), 0);
  expect_vec(m, "chunk_offsets", 64, offsets, 5);
  expect_none(m, "spec_sequence_masks_cpu");
  expect_none(m, "uniform_spec_sequence_length");
  /* without is_prefilling no request is a first chunk */
  batch->common.is_prefilling = NULL;
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 5);
  attn_builder_destroy(b);
  /* compute capability 9.0: vLLM's FlashInfer prefill reads cu_seqlens only */
  c.device_capability = 90;
  b = ts_builder("GDN_ATTN", &spec, &c);
  batch->common.is_prefilling = &pf.t;
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  expect_vec(m, "prefill_query_start_loc", 32, pqsl, 5);
  expect_none(m, "chunk_indices");
  expect_none(m, "chunk_offsets");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* A first chunk counted by seq_lens_cpu_upper_bound (0.33's no_prior_state reads the bound):
 * a bound above the query length means prior state, so the one-token row stays a decode. */
static void test_upper_bound(void** state) {
  static const int32_t q[] = {1, 1, 4}, s[] = {1, 1, 4}, bound[] = {1, 3, 4};
  static const int prefilling[] = {1, 1, 1};
  const attn_kv_cache_spec_t spec = gspec(0);
  const attn_builder_config_t c = gconfig(0, 80);
  attn_builder_t* b = ts_builder("GDN_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 1, -1);
  vec pf, ub;
  attn_metadata_t* m;
  (void)state;
  batch->common.is_prefilling = vec_bool(&pf, prefilling, 3);
  m = build(b, &batch->common); /* exact lengths: request 0 is a first chunk */
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  batch->common.seq_lens_cpu_upper_bound = vec_i32(&ub, bound, 3);
  m = build(b, &batch->common); /* request 0 still; the bound is exact there */
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  ub.v[0] = 2; /* request 0 now looks like it has state: a decode; request 1 too */
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* The spec path's new fields. Uniform: three spec decodes of 3 tokens ->
 * uniform_spec_sequence_length 3, spec_sequence_masks_cpu [1, 1, 1, 0] (host). Ragged
 * ([3, 2]) or a marked zero-length request first -> None. Every marked request with no draft
 * (0): the spec path still (spec_sequence_masks present), uniform length 1. */
static void test_spec_fields(void** state) {
  static const int32_t q[] = {3, 3, 3, 0}, s[] = {20, 30, 40, 0}, draft[] = {2, 2, 2, -1};
  static const int32_t acc[] = {1, 2, 3, 1};
  static const int64_t masks[] = {1, 1, 1, 0};
  const attn_kv_cache_spec_t spec = gspec(2);
  const attn_builder_config_t c = gconfig(2, 80);
  attn_builder_t* b = ts_builder("GDN_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 3, -1);
  vec dr, ac;
  attn_metadata_t* m;
  const attn_tensor_t* t;
  (void)state;
  batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, draft, 4);
  batch->common.num_accepted_tokens = vec_i32(&ac, acc, 4);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "uniform_spec_sequence_length"), 3);
  expect_vec(m, "spec_sequence_masks_cpu", 8, masks, 4);
  t = ts_tensor(m, "spec_sequence_masks_cpu");
  assert_int_equal(t->device.device_type, ATTN_DEVICE_CPU);
  expect_none(m, "prefill_query_start_loc");
  expect_none(m, "chunk_indices");
  ts_batch_free(batch);
  {
    static const int32_t q2[] = {3, 2, 5}, s2[] = {9, 9, 5}, d2[] = {2, 1, -1};
    static const int64_t pqsl[] = {0, 5}, offsets[] = {0, 1};
    batch = ts_batch_make(q2, s2, 3, 16, 3, -1);
    batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, d2, 3);
    batch->common.num_accepted_tokens = vec_i32(&ac, acc, 3);
    m = build(b, &batch->common);
    expect_none(m, "uniform_spec_sequence_length");
    assert_int_equal(ts_int(m, "num_prefills"), 1);
    /* the prefill part is the whole non-spec part: the same tensor */
    expect_vec(m, "prefill_query_start_loc", 32, pqsl, 2);
    assert_ptr_equal(ts_tensor(m, "prefill_query_start_loc")->data,
                     ts_tensor(m, "non_spec_query_start_loc")->data);
    assert_int_equal(elem(ts_tensor(m, "prefill_state_indices"), 0, 0),
                     batch->bt[2 * batch->width]);
    expect_vec(m, "chunk_offsets", 64, offsets, 2);
    ts_batch_free(batch);
  }
  {
    static const int32_t q3[] = {1, 1}, s3[] = {9, 4}, d3[] = {0, 0};
    batch = ts_batch_make(q3, s3, 2, 16, 3, -1);
    batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, d3, 2);
    batch->common.num_accepted_tokens = vec_i32(&ac, acc, 2);
    m = build(b, &batch->common);
    assert_int_equal(ts_int(m, "num_spec_decodes"), 2);
    assert_int_equal(ts_int(m, "uniform_spec_sequence_length"), 1);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

/* A naive version of 0.33's non-spec split and FLA's chunk metadata on random batches:
 * decodes, one-token and longer first chunks, extends, zero-length rows (trailing, and in a
 * quarter of the batches also between the others). */
static void test_random_non_spec(void** state) {
  uint64_t seed = 1717;
  int iter;
  (void)state;
  for (iter = 0; iter < 400; ++iter) {
    const attn_kv_cache_spec_t spec = gspec(0);
    const attn_builder_config_t c = gconfig(0, 80);
    attn_builder_t* b = ts_builder("GDN_ATTN", &spec, &c);
    const int64_t n = ts_rand_range(&seed, 1, 40), pad = ts_rand_range(&seed, 0, 3);
    const int64_t total = n + pad;
    int32_t q[48], s[48];
    int prefilling[48];
    int64_t r, first = -1, nd, np, ndt, npt, tokens = 0, qsl[49], max_seq = 1;
    int64_t pqsl[49], offsets[49], chunks = 0, nonempty = 0;
    ts_batch* batch;
    vec pf;
    attn_metadata_t* m;
    for (r = 0; r < total; ++r) {
      /* decode, extend, first chunk, zero-length (trailing padding, and in one batch of four
       * anywhere: FLA's chunk rows then count non-empty sequences, not rows) */
      const int64_t kind = r >= n ? 4 : ts_rand_range(&seed, 0, iter % 4 == 0 ? 4 : 3);
      q[r] = kind == 4 ? 0 : kind == 0 ? 1 : (int32_t)ts_rand_range(&seed, 1, 200);
      s[r] = q[r] + (kind == 2 || kind == 4 ? 0 : (int32_t)ts_rand_range(&seed, 1, 300));
      prefilling[r] = kind == 1 || kind == 2;
      if (s[r] > max_seq) max_seq = s[r];
    }
    qsl[0] = 0;
    for (r = 0; r < total; ++r) qsl[r + 1] = qsl[r] + q[r];
    tokens = qsl[total];
    /* 0.33: is_prefill = query > 1 or a first chunk; all prefills when query 0 > 1 */
    for (r = 0; r < total && first < 0; ++r)
      if (q[r] > 1 || (q[r] > 0 && s[r] <= q[r] && prefilling[r])) first = r;
    if (q[0] > 1) first = 0;
    if (first < 0) {
      nd = total, np = 0, ndt = tokens, npt = 0;
    } else {
      nd = first, np = total - first, ndt = qsl[first], npt = tokens - ndt;
      for (r = first; r < total; ++r) np -= q[r] == 0;
      npt = qsl[nd + np] - ndt;
    }
    batch = ts_batch_make(q, s, total, 16, (max_seq + 15) / 16, -1);
    batch->common.is_prefilling = vec_bool(&pf, prefilling, total);
    m = build(b, &batch->common);
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_prefills"), np);
    assert_int_equal(ts_int(m, "num_decode_tokens"), ndt);
    assert_int_equal(ts_int(m, "num_prefill_tokens"), npt);
    if (np == 0) {
      expect_none(m, "prefill_query_start_loc");
      expect_none(m, "chunk_indices");
    } else {
      const attn_tensor_t* ci = ts_tensor(m, "chunk_indices");
      int64_t k, j;
      for (r = nd; r <= total; ++r) pqsl[r - nd] = qsl[r] - qsl[nd];
      expect_vec(m, "prefill_query_start_loc", 32, pqsl, total - nd + 1);
      for (r = 0; r < total - nd; ++r) {
        const int64_t len = pqsl[r + 1] - pqsl[r], cnt = (len + 63) / 64;
        offsets[r] = chunks;
        assert_non_null(ci);
        for (j = 0; j < cnt; ++j) {
          assert_int_equal(elem(ci, chunks + j, 0), nonempty);
          assert_int_equal(elem(ci, chunks + j, 1), j);
        }
        chunks += cnt;
        nonempty += cnt > 0;
      }
      offsets[total - nd] = chunks;
      assert_int_equal(ci->shape[0], chunks);
      expect_vec(m, "chunk_offsets", 64, offsets, total - nd + 1);
      for (k = 0; k < total - nd; ++k)
        assert_int_equal(elem(ts_tensor(m, "prefill_state_indices"), k, 0),
                         batch->bt[(nd + k) * batch->width]);
    }
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

/* Refusals: an empty batch without spec decodes (0.33 indexes its first query length),
 * update_block_table on a CPU builder (0.33: model runner V2 on CUDA only). */
static void test_refusals(void** state) {
  static const int32_t q[] = {2}, s[] = {2};
  const attn_kv_cache_spec_t spec = gspec(0);
  attn_builder_config_t c = gconfig(0, 80);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 1, 16, 1, -1);
  attn_metadata_t* m = (attn_metadata_t*)UNTOUCHED_PTR;
  int32_t supported = -1;
  (void)state;
  c.use_v2_model_runner = 1;
  b = ts_builder("GDN_ATTN", &spec, &c);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
  assert_int_equal(supported, 0); /* a CPU builder, even on model runner V2 */
  batch->common.num_reqs = 0;
  batch->qsl_shape[0] = 1;
  batch->seq_shape[0] = 0;
  batch->bt_shape[0] = 0;
  batch->common.num_actual_tokens = 0;
  batch->common.max_query_len = 0;
  batch->sm_shape[0] = 0;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->num_reqs=0: vLLM 0.33's GDN_ATTN build() splits a batch without spec "
               "decodes by its first request's query length");
  assert_ptr_equal(m, UNTOUCHED_PTR);
  batch->common.num_reqs = 1;
  batch->qsl_shape[0] = 2;
  batch->seq_shape[0] = 1;
  batch->bt_shape[0] = 1;
  batch->sm_shape[0] = 2;
  batch->common.num_actual_tokens = 2;
  batch->common.max_query_len = 2;
  m = build(b, &batch->common);
  ASSERT_ERROR(attn_update_block_table(b, m, &batch->bt_t, &batch->sm_t, &m, NULL),
               ATTN_ERR_UNSUPPORTED, "GDN_ATTN");
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* ABI 1.6: config->gdn_prefill_backend overrides the capability's choice (TRITON on 9.0 gives
 * the chunk metadata, FLASHINFER on 8.0 none); a 1.4-sized config reads AUTO; bad values and a
 * non-zero reserved_1_6 are refused naming the field. */
static void test_prefill_backend_config(void** state) {
  static const int32_t q[] = {70}, s[] = {70};
  static const int64_t offsets[] = {0, 2};
  const attn_kv_cache_spec_t spec = gspec(0);
  attn_builder_config_t c = gconfig(0, 90);
  attn_builder_t* b = NULL;
  ts_batch* batch = ts_batch_make(q, s, 1, 16, 0, -1);
  attn_metadata_t* m;
  (void)state;
  c.gdn_prefill_backend = ATTN_GDN_PREFILL_TRITON;
  b = ts_builder("GDN_ATTN", &spec, &c);
  m = build(b, &batch->common);
  expect_vec(m, "chunk_offsets", 64, offsets, 2);
  assert_int_equal(ts_tensor(m, "chunk_indices")->shape[0], 2);
  attn_builder_destroy(b);
  c.device_capability = 80;
  c.gdn_prefill_backend = ATTN_GDN_PREFILL_FLASHINFER;
  b = ts_builder("GDN_ATTN", &spec, &c);
  m = build(b, &batch->common);
  expect_none(m, "chunk_indices");
  expect_none(m, "chunk_offsets");
  attn_builder_destroy(b);
  c.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_4; /* the field is not read: AUTO on 8.0 */
  b = ts_builder("GDN_ATTN", &spec, &c);
  m = build(b, &batch->common);
  expect_vec(m, "chunk_offsets", 64, offsets, 2);
  attn_builder_destroy(b);
  c.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE;
  c.gdn_prefill_backend = 3;
  b = (attn_builder_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_builder_create("GDN_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->gdn_prefill_backend=3 is not an ATTN_GDN_PREFILL_* value (0..2)");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  c.gdn_prefill_backend = ATTN_GDN_PREFILL_AUTO;
  c.reserved_1_6 = 1;
  ASSERT_ERROR(attn_builder_create("GDN_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->reserved_1_6=1 must be 0");
  ts_batch_free(batch);
}

/* vLLM 0.33's prefill checkpoints ("align", block 16; hash_block_size and
 * cache_hit_alignment_tokens 16, one checkpoint block), over every non-spec row (decodes too).
 * Triton, prefill_checkpoint_alignment 8: rows (query, seq) = (1, 20) a decode, then the
 * prefills (40, 40), (20, 36), (10, 15) (test_mamba.c's MAMBA2 case): positions 16, 32, 32, 0;
 * valid for rows 1 and 2 only: offsets [0, 32, 16, 0], columns [-1, 1, 1, -1], state indices
 * [0, bt[1][1], bt[2][1], 0]. No FlashInfer plan on Triton.
 * FlashInfer (capability 9.0), alignment 64: (1, 20), (200, 200), (70, 86): positions 16, 192,
 * 80; offsets [0, 192, 64] (80 - 16), columns [-1, 11, 4]; every_n_tokens gcd = 64; the prefill
 * kernel's rows are the last two: cu_starts [0, 200 // 64, 3 + 70 // 64] = [0, 3, 4],
 * num_checkpoints 4, rows [0, 0 + 192 // 64 - 1, 3 + 64 // 64 - 1] = [0, 2, 3]. */
static void test_prefill_checkpoints(void** state) {
  static const int32_t q[] = {1, 40, 20, 10}, s[] = {20, 40, 36, 15};
  static const int prefilling[] = {0, 1, 1, 1};
  static const int64_t offs[] = {0, 32, 16, 0}, qls[] = {1, 40, 20, 10};
  static const int64_t rows[] = {0, 1, 2, 3}, cols[] = {-1, 1, 1, -1};
  attn_kv_cache_spec_t spec = gspec(0);
  attn_builder_config_t c = gconfig(0, 80);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 0, -1);
  attn_builder_t* b;
  attn_metadata_t* m;
  vec pf;
  int64_t states[4];
  (void)state;
  spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_ALIGN;
  spec.num_prefill_checkpoint_blocks = 1;
  spec.prefill_checkpoint_alignment = 8;
  batch->common.is_prefilling = vec_bool(&pf, prefilling, 4);
  /* without the config's hash sizes (vLLM's profiling KV cache): None */
  b = ts_builder("GDN_ATTN", &spec, &c);
  m = build(b, &batch->common);
  expect_none(m, "checkpoint_state_indices");
  attn_builder_destroy(b);
  c.hash_block_size = 16;
  c.cache_hit_alignment_tokens = 16;
  b = ts_builder("GDN_ATTN", &spec, &c);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  expect_vec(m, "checkpoint_checkpoint_offsets", 32, offs, 4);
  expect_vec(m, "checkpoint_offsets", 32, offs, 4);
  assert_int_equal(ts_tensor(m, "checkpoint_offsets")->device.device_type, ATTN_DEVICE_CPU);
  expect_vec(m, "checkpoint_query_lens", 32, qls, 4);
  expect_vec(m, "checkpoint_request_rows", 64, rows, 4);
  expect_vec(m, "checkpoint_block_cols", 64, cols, 4);
  states[0] = 0, states[3] = 0;
  states[1] = batch->bt[1 * batch->width + 1], states[2] = batch->bt[2 * batch->width + 1];
  expect_vec(m, "checkpoint_state_indices", 32, states, 4);
  expect_none(m, "flashinfer_checkpoint_plan_every_n_tokens");
  expect_none(m, "flashinfer_checkpoint_plan_rows");
  attn_builder_destroy(b);
  ts_batch_free(batch);
  {
    static const int32_t q2[] = {1, 200, 70}, s2[] = {20, 200, 86};
    static const int pf2[] = {0, 1, 1};
    static const int64_t offs2[] = {0, 192, 64}, cols2[] = {-1, 11, 4};
    static const int64_t cu[] = {0, 3, 4}, fi_rows[] = {0, 2, 3};
    batch = ts_batch_make(q2, s2, 3, 16, 0, -1);
    batch->common.is_prefilling = vec_bool(&pf, pf2, 3);
    spec.prefill_checkpoint_alignment = 64;
    c.device_capability = 90;
    b = ts_builder("GDN_ATTN", &spec, &c);
    m = build(b, &batch->common);
    expect_vec(m, "checkpoint_offsets", 32, offs2, 3);
    expect_vec(m, "checkpoint_block_cols", 64, cols2, 3);
    assert_int_equal(ts_int(m, "flashinfer_checkpoint_plan_every_n_tokens"), 64);
    assert_int_equal(ts_int(m, "flashinfer_checkpoint_plan_num_checkpoints"), 4);
    expect_vec(m, "flashinfer_checkpoint_plan_cu_starts", 64, cu, 3);
    expect_vec(m, "flashinfer_checkpoint_plan_rows", 64, fi_rows, 3);
    attn_builder_destroy(b);
    /* alignment 32 (not a multiple of 64): checkpoints, but no FlashInfer plan */
    spec.prefill_checkpoint_alignment = 32;
    b = ts_builder("GDN_ATTN", &spec, &c);
    m = build(b, &batch->common);
    expect_vec(m, "checkpoint_offsets", 32, offs2, 3);
    expect_none(m, "flashinfer_checkpoint_plan_cu_starts");
    attn_builder_destroy(b);
    /* "none" mode: no checkpoints */
    spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_NONE;
    b = ts_builder("GDN_ATTN", &spec, &c);
    m = build(b, &batch->common);
    expect_none(m, "checkpoint_offsets");
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

/* KIMI_K3_KDA_ROCM (vLLM 0.33's KimiK3ROCmKDAMetadataBuilder, GDN's subclass): GDN's build but
 * 1. the prefill checkpoints keyed on the prefill rows: test_prefill_checkpoints' batch (a
 *    decode, then prefills (40, 40), (20, 36), (10, 15)) gives request_rows [1, 2, 3], offsets
 *    [32, 16, 0], query_lens [40, 20, 10], columns [1, 1, -1] (GDN_ATTN: all four rows);
 * 2. Triton/FLA's chunk metadata whatever the prefill backend asked (FLASHINFER here, and
 *    capability 9.0): chunk_offsets [0, 1, 2, 3];
 * 3. prepare_chunk_metadata_device's chunk indices, by row: prefills of 70, 0 (a context-only
 *    row) and 5 tokens: chunk_offsets [0, 2, 2, 3], chunk_indices [[0,0],[0,1],[2,0]] (GDN_ATTN,
 *    FLA's prepare_chunk_indices: [[0,0],[0,1],[1,0]]);
 * 4. adaptive verification (k = 2): varlen_cudagraph_max_query_len 3 and no
 *    uniform_spec_sequence_length (test_spec_fields' uniform batch); without it None and 3;
 * 5. UNIFORM_BATCH, threshold 1 + k, no update_block_table. */
static void test_kimi_k3_kda_rocm(void** state) {
  attn_kv_cache_spec_t spec = gspec(0);
  attn_builder_config_t c = gconfig(0, 90);
  attn_builder_t* b;
  attn_metadata_t* m;
  vec pf, dr, ac;
  int32_t v = 0, has = 0;
  (void)state;
  c.gdn_prefill_backend = ATTN_GDN_PREFILL_FLASHINFER;
  {
    static const int32_t q[] = {1, 40, 20, 10}, s[] = {20, 40, 36, 15};
    static const int prefilling[] = {0, 1, 1, 1};
    static const int64_t offs[] = {32, 16, 0}, qls[] = {40, 20, 10}, rows[] = {1, 2, 3};
    static const int64_t cols[] = {1, 1, -1}, chunk_offsets[] = {0, 1, 2, 3};
    ts_batch* batch = ts_batch_make(q, s, 4, 16, 0, -1);
    int64_t states[3];
    spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_ALIGN;
    spec.num_prefill_checkpoint_blocks = 1;
    spec.prefill_checkpoint_alignment = 64;
    c.hash_block_size = 16;
    c.cache_hit_alignment_tokens = 16;
    batch->common.is_prefilling = vec_bool(&pf, prefilling, 4);
    b = ts_builder("KIMI_K3_KDA_ROCM", &spec, &c);
    m = build(b, &batch->common);
    assert_int_equal(ts_int(m, "num_decodes"), 1);
    assert_int_equal(ts_int(m, "num_prefills"), 3);
    /* a 64-multiple alignment: GDN_ATTN's FlashInfer prefill would plan; Triton does not */
    expect_none(m, "flashinfer_checkpoint_plan_every_n_tokens");
    spec.prefill_checkpoint_alignment = 8;
    attn_builder_destroy(b);
    b = ts_builder("KIMI_K3_KDA_ROCM", &spec, &c);
    m = build(b, &batch->common);
    expect_vec(m, "checkpoint_request_rows", 64, rows, 3);
    expect_vec(m, "checkpoint_offsets", 32, offs, 3);
    expect_vec(m, "checkpoint_checkpoint_offsets", 32, offs, 3);
    expect_vec(m, "checkpoint_query_lens", 32, qls, 3);
    expect_vec(m, "checkpoint_block_cols", 64, cols, 3);
    states[0] = batch->bt[1 * batch->width + 1], states[1] = batch->bt[2 * batch->width + 1];
    states[2] = 0;
    expect_vec(m, "checkpoint_state_indices", 32, states, 3);
    expect_none(m, "flashinfer_checkpoint_plan_every_n_tokens");
    expect_vec(m, "chunk_offsets", 64, chunk_offsets, 4);
    attn_builder_destroy(b);
    ts_batch_free(batch);
    spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_NONE;
    spec.num_prefill_checkpoint_blocks = 0;
    spec.prefill_checkpoint_alignment = 0;
  }
  {
    static const int32_t q[] = {70, 0, 5}, s[] = {70, 3, 5};
    static const int64_t offsets[] = {0, 2, 2, 3};
    static const int64_t rocm[3][2] = {{0, 0}, {0, 1}, {2, 0}}, fla[3][2] = {{0, 0}, {0, 1}, {1, 0}};
    const char* names[] = {"KIMI_K3_KDA_ROCM", "GDN_ATTN"};
    ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
    int which, i;
    c.device_capability = 80;
    c.gdn_prefill_backend = ATTN_GDN_PREFILL_AUTO;
    for (which = 0; which < 2; ++which) {
      const attn_tensor_t* t;
      b = ts_builder(names[which], &spec, &c);
      m = build(b, &batch->common);
      expect_vec(m, "chunk_offsets", 64, offsets, 4);
      t = ts_tensor(m, "chunk_indices");
      assert_int_equal(t->shape[0], 3);
      assert_int_equal(t->shape[1], 2);
      for (i = 0; i < 3; ++i) {
        assert_int_equal(elem(t, i, 0), which == 0 ? rocm[i][0] : fla[i][0]);
        assert_int_equal(elem(t, i, 1), which == 0 ? rocm[i][1] : fla[i][1]);
      }
      attn_builder_destroy(b);
    }
    ts_batch_free(batch);
  }
  {
    static const int32_t q[] = {3, 3, 3, 0}, s[] = {20, 30, 40, 0}, draft[] = {2, 2, 2, -1};
    static const int32_t acc[] = {1, 2, 3, 1};
    ts_batch* batch = ts_batch_make(q, s, 4, 16, 3, -1);
    int adaptive;
    spec = gspec(2);
    c = gconfig(2, 80);
    c.use_v2_model_runner = 1;
    batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, draft, 4);
    batch->common.num_accepted_tokens = vec_i32(&ac, acc, 4);
    for (adaptive = 0; adaptive < 2; ++adaptive) {
      c.enable_adaptive_verification = adaptive;
      b = ts_builder("KIMI_K3_KDA_ROCM", &spec, &c);
      ASSERT_OK(attn_builder_varlen_cudagraph_max_query_len(b, &v, &has));
      assert_int_equal(has, adaptive);
      assert_int_equal(v, adaptive ? 3 : -1);
      ASSERT_OK(attn_builder_cudagraph_support(b, &v));
      assert_int_equal(v, ATTN_CG_UNIFORM_BATCH);
      ASSERT_OK(attn_builder_reorder_batch_threshold(b, &v));
      assert_int_equal(v, 3);
      ASSERT_OK(attn_builder_supports_update_block_table(b, &v));
      assert_int_equal(v, 0);
      m = build(b, &batch->common);
      if (adaptive)
        expect_none(m, "uniform_spec_sequence_length");
      else
        assert_int_equal(ts_int(m, "uniform_spec_sequence_length"), 3);
      attn_builder_destroy(b);
    }
    ts_batch_free(batch);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_chunks_and_padding),
      cmocka_unit_test(test_upper_bound),
      cmocka_unit_test(test_spec_fields),
      cmocka_unit_test(test_random_non_spec),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_prefill_backend_config),
      cmocka_unit_test(test_prefill_checkpoints),
      cmocka_unit_test(test_kimi_k3_kda_rocm),
  };
  return cmocka_run_group_tests_name("gdn", tests, NULL, NULL);
}
