/* KIMI_K3_KDA at vLLM 0.33 (vllm/models/kimi_k3/nvidia/kda_metadata.py): the class answers
 * (ALWAYS, GDN's reorder threshold, no update_block_table), the spec path's own split (zero-length
 * padding out of the non-spec tensors, the non-spec requests all prefills or all packed decodes),
 * spec_token_start / non_spec_token_start, RecoverSSM (one state slot, accepted counts of one,
 * active decodes on the spec path, the commit metadata), the all-spec CUDA-graph staging,
 * FlashInfer's prefill order, a random spec batch against a naive split, and bad input. */
#include "test_support.h"

static const char* base(const attn_tensor_t* t) { return (const char*)t->data + t->byte_offset; }

static attn_kv_cache_spec_t kspec(int32_t nsb) {
  attn_kv_cache_spec_t s = ts_spec();
  s.kind = ATTN_KV_MAMBA;
  s.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_NONE;
  s.num_speculative_blocks = nsb;
  return s;
}

static attn_builder_config_t kconfig(int32_t k) {
  attn_builder_config_t c = ts_config();
  c.num_speculative_tokens = k;
  c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_NONE;
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

typedef struct {
  int32_t v[256];
  uint8_t b[256];
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

/* The class answers: ALWAYS (the class attribute, for every config), GDN's reorder threshold
 * (1, 1 + k with spec decode), update_block_table never (vLLM's `type(self) is
 * GDNAttentionMetadataBuilder`, even on model runner V2). */
static void test_class_answers(void** state) {
  const attn_kv_cache_spec_t spec = kspec(0);
  attn_builder_config_t c = kconfig(2);
  attn_builder_t* b;
  int32_t level = -1, threshold = -1;
  int32_t supported = 1;
  (void)state;
  ASSERT_OK(attn_backend_cudagraph_support("KIMI_K3_KDA", &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  c.use_v2_model_runner = 1;
  b = ts_builder("KIMI_K3_KDA", &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 3);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
  assert_int_equal(supported, 0);
  attn_builder_destroy(b);
}

/* Hand-checked spec batch, k = 2 (requests: query, seq, draft; none prefilling):
 *   0: 3, 20,  2  spec
 *   1: 1, 10, -1  an active non-spec decode
 *   2: 0,  0, -1  zero-length padding: in no non-spec tensor
 *   3: 2, 30,  1  spec
 * num_spec_decodes 2 (5 tokens), num_decodes 1 (one token), num_prefills 0: the non-spec
 * requests are packed decodes, so non_spec_query_start_loc is None. spec_state_indices_tensor
 * = block_table[[0, 3], :3], non_spec_state_indices_tensor = block_table[[1], 0],
 * spec_query_start_loc [0, 3, 5], num_accepted_tokens acc[[0, 3]], token indices (int64) spec
 * [0, 1, 2, 4, 5], non-spec [3]. The non-empty mask [S, N, S] changes twice: no token starts.
 * Request 1 prefilling: every active non-spec request is a prefill (num_prefills 1),
 * non_spec_query_start_loc [0, 1], has_initial_state [1], nums_dict. */
static void test_spec_split(void** state) {
  static const int32_t q[] = {3, 1, 0, 2}, s[] = {20, 10, 0, 30}, draft[] = {2, -1, -1, 1};
  static const int32_t acc[] = {2, 1, 1, 3};
  static const int prefilling[] = {0, 0, 0, 0}, prefilling1[] = {0, 1, 0, 0};
  static const int64_t sqsl[] = {0, 3, 5}, sacc[] = {2, 3}, stok[] = {0, 1, 2, 4, 5};
  static const int64_t ntok[] = {3}, nqsl[] = {0, 1}, has[] = {1};
  const attn_kv_cache_spec_t spec = kspec(0);
  const attn_builder_config_t c = kconfig(2);
  attn_builder_t* b = ts_builder("KIMI_K3_KDA", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 3, -1);
  vec dr, ac, pf;
  attn_metadata_t* m;
  const attn_tensor_t* t;
  int64_t j, nstate[1];
  (void)state;
  batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, draft, 4);
  batch->common.num_accepted_tokens = vec_i32(&ac, acc, 4);
  batch->common.is_prefilling = vec_bool(&pf, prefilling, 4);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_spec_decodes"), 2);
  assert_int_equal(ts_int(m, "num_spec_decode_tokens"), 5);
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 1);
  assert_int_equal(ts_int(m, "num_prefills"), 0);
  ts_expect_none(m, "non_spec_query_start_loc");
  ts_expect_none(m, "has_initial_state");
  ts_expect_none(m, "spec_token_start");
  ts_expect_none(m, "non_spec_token_start");
  expect_vec(m, "spec_query_start_loc", 32, sqsl, 3);
  expect_vec(m, "num_accepted_tokens", 32, sacc, 2);
  expect_vec(m, "spec_token_indx", 64, stok, 5);
  expect_vec(m, "non_spec_token_indx", 64, ntok, 1);
  nstate[0] = batch->bt[1 * batch->width];
  expect_vec(m, "non_spec_state_indices_tensor", 32, nstate, 1);
  t = ts_tensor(m, "spec_state_indices_tensor");
  assert_non_null(t);
  assert_int_equal(t->shape[0], 2);
  assert_int_equal(t->shape[1], 3);
  for (j = 0; j < 3; ++j) {
    assert_int_equal(elem(t, 0, j), batch->bt[0 * batch->width + j]);
    assert_int_equal(elem(t, 1, j), batch->bt[3 * batch->width + j]);
  }
  ts_expect_none(m, "recoverssm_commit_state_indices");
  ts_expect_none(m, "flashinfer_prefill_query_start_loc");
  /* request 1 prefilling: a prefill, with its query_start_loc and initial state */
  batch->common.is_prefilling = vec_bool(&pf, prefilling1, 4);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 1);
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  expect_vec(m, "non_spec_query_start_loc", 32, nqsl, 2);
  expect_vec(m, "has_initial_state", 8, has, 1);
  assert_int_equal(ts_int(m, "nums_dict_tot"), 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* One spec run then one non-spec run (padding between ignored): spec_token_start 0,
 * non_spec_token_start = the spec tokens (4); the reverse order gives non-spec first. */
static void test_token_starts(void** state) {
  static const int32_t q[] = {2, 2, 0, 4}, s[] = {12, 22, 0, 4}, draft[] = {1, 1, -1, -1};
  static const int32_t q2[] = {4, 2, 2}, s2[] = {4, 12, 22}, draft2[] = {-1, 1, 1};
  static const int32_t acc[] = {1, 1, 1, 1};
  static const int prefilling[] = {0, 0, 0, 1}, prefilling2[] = {1, 0, 0};
  const attn_kv_cache_spec_t spec = kspec(0);
  const attn_builder_config_t c = kconfig(2);
  attn_builder_t* b = ts_builder("KIMI_K3_KDA", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 3, -1);
  vec dr, ac, pf;
  attn_metadata_t* m;
  (void)state;
  batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, draft, 4);
  batch->common.num_accepted_tokens = vec_i32(&ac, acc, 4);
  batch->common.is_prefilling = vec_bool(&pf, prefilling, 4);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "spec_token_start"), 0);
  assert_int_equal(ts_int(m, "non_spec_token_start"), 4);
  ts_batch_free(batch);
  batch = ts_batch_make(q2, s2, 3, 16, 3, -1);
  batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, draft2, 3);
  batch->common.num_accepted_tokens = vec_i32(&ac, acc, 3);
  batch->common.is_prefilling = vec_bool(&pf, prefilling2, 3);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "spec_token_start"), 4);
  assert_int_equal(ts_int(m, "non_spec_token_start"), 0);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* RecoverSSM (use_replayssm with k = 2): an unmarked active decode (request 1) joins the spec
 * path, a row longer than 1 + k (request 2, 4 tokens, marked) leaves it; one state slot per spec
 * decode; num_accepted_tokens all ones whatever the caller's; the commit metadata: the spec
 * state and query_start_loc, request_indices [0, 1] (a batch with non-spec requests), and in
 * "align" mode the block table, num_computed_tokens and the block size. */
static void test_recoverssm(void** state) {
  static const int32_t q[] = {3, 1, 4}, s[] = {20, 10, 4}, draft[] = {2, -1, 3};
  static const int32_t acc[] = {3, 2, 2};
  static const int prefilling[] = {0, 0, 1};
  static const int64_t ones[] = {1, 1}, ridx[] = {0, 1}, sqsl[] = {0, 3, 4};
  attn_kv_cache_spec_t spec = kspec(0);
  attn_builder_config_t c = kconfig(2);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 3, -1);
  vec dr, ac, pf;
  attn_metadata_t* m;
  const attn_tensor_t* t;
  (void)state;
  c.use_replayssm = 1;
  b = ts_builder("KIMI_K3_KDA", &spec, &c);
  batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, draft, 3);
  batch->common.num_accepted_tokens = vec_i32(&ac, acc, 3);
  batch->common.is_prefilling = vec_bool(&pf, prefilling, 3);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_spec_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  expect_vec(m, "num_accepted_tokens", 32, ones, 2);
  t = ts_tensor(m, "spec_state_indices_tensor");
  assert_int_equal(t->shape[1], 1);
  assert_int_equal(elem(t, 1, 0), batch->bt[1 * batch->width]);
  expect_vec(m, "recoverssm_commit_request_indices", 32, ridx, 2);
  expect_vec(m, "recoverssm_commit_query_start_loc", 32, sqsl, 3);
  assert_int_equal(ts_tensor(m, "recoverssm_commit_state_indices")->shape[1], 1);
  ts_expect_none(m, "recoverssm_commit_align_block_table");
  attn_builder_destroy(b);
  /* "align": the commit carries the raw block table, computed tokens and the block size */
  spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_ALIGN;
  b = ts_builder("KIMI_K3_KDA", &spec, &c);
  m = build(b, &batch->common);
  {
    static const int64_t computed[] = {17, 9, 0};
    expect_vec(m, "recoverssm_commit_align_num_computed_tokens", 32, computed, 3);
    assert_int_equal(ts_int(m, "recoverssm_commit_align_block_size"), 16);
    assert_ptr_equal(ts_tensor(m, "recoverssm_commit_align_block_table")->data, batch->bt);
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* All spec decodes with trailing padding under full CUDA graphs: the first num_spec_decodes rows
 * (vLLM: real requests precede the padding), staged to num_reqs rows: state indices padded with
 * the null block (0), query_start_loc with its last entry, accepted counts with 1; no token
 * indices. */
static void test_all_spec_staged(void** state) {
  static const int32_t q[] = {3, 2, 0}, s[] = {20, 30, 0}, draft[] = {2, 1, -1};
  static const int32_t acc[] = {2, 1, 1};
  static const int prefilling[] = {0, 0, 0};
  static const int64_t sqsl[] = {0, 3, 5, 5}, sacc[] = {2, 1, 1};
  const attn_kv_cache_spec_t spec = kspec(0);
  attn_builder_config_t c = kconfig(2);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 3, -1);
  vec dr, ac, pf;
  attn_metadata_t* m;
  const attn_tensor_t* t;
  int64_t j;
  (void)state;
  c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
  b = ts_builder("KIMI_K3_KDA", &spec, &c);
  batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, draft, 3);
  batch->common.num_accepted_tokens = vec_i32(&ac, acc, 3);
  batch->common.is_prefilling = vec_bool(&pf, prefilling, 3);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_spec_decodes"), 2);
  ts_expect_none(m, "spec_token_indx");
  ts_expect_none(m, "non_spec_token_indx");
  ts_expect_none(m, "non_spec_state_indices_tensor");
  expect_vec(m, "spec_query_start_loc", 32, sqsl, 4);
  expect_vec(m, "num_accepted_tokens", 32, sacc, 3);
  t = ts_tensor(m, "spec_state_indices_tensor");
  assert_int_equal(t->shape[0], 3);
  for (j = 0; j < 3; ++j) {
    assert_int_equal(elem(t, 0, j), batch->bt[j]);
    assert_int_equal(elem(t, 1, j), batch->bt[batch->width + j]);
    assert_int_equal(elem(t, 2, j), 0);
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* kda_prefill_backend "flashinfer" (config->gdn_prefill_backend FLASHINFER): the non-spec
 * query_start_loc as int64 and, with more tokens than requests, the requests by length,
 * longest first: lengths [1, 5, 3] -> [1, 2, 0]. */
static void test_flashinfer_prefill(void** state) {
  static const int32_t q[] = {1, 5, 3}, s[] = {9, 5, 3};
  static const int prefilling[] = {0, 1, 1};
  static const int64_t fqsl[] = {0, 1, 6, 9}, order[] = {1, 2, 0};
  const attn_kv_cache_spec_t spec = kspec(0);
  attn_builder_config_t c = kconfig(0);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 1, -1);
  vec pf;
  attn_metadata_t* m;
  (void)state;
  c.gdn_prefill_backend = ATTN_GDN_PREFILL_FLASHINFER;
  b = ts_builder("KIMI_K3_KDA", &spec, &c);
  batch->common.is_prefilling = vec_bool(&pf, prefilling, 3);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  expect_vec(m, "flashinfer_prefill_query_start_loc", 64, fqsl, 4);
  expect_vec(m, "flashinfer_prefill_seq_order", 32, order, 3);
  attn_builder_destroy(b);
  c.gdn_prefill_backend = ATTN_GDN_PREFILL_AUTO;
  b = ts_builder("KIMI_K3_KDA", &spec, &c);
  m = build(b, &batch->common);
  ts_expect_none(m, "flashinfer_prefill_query_start_loc");
  ts_expect_none(m, "flashinfer_prefill_seq_order");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Random spec batches against a naive split: counts, the spec/non-spec state columns and
 * query_start_loc of each group. */
static void test_random_spec(void** state) {
  uint64_t seed = 4242;
  int iter;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    const int32_t k = 1 + (int32_t)ts_rand_range(&seed, 0, 2);
    const attn_kv_cache_spec_t spec = kspec(0);
    const attn_builder_config_t c = kconfig(k);
    attn_builder_t* b = ts_builder("KIMI_K3_KDA", &spec, &c);
    const int64_t real = ts_rand_range(&seed, 1, 28), n = real + ts_rand_range(&seed, 0, 3);
    int32_t q[32], s[32], draft[32], acc[32];
    int prefilling[32];
    int64_t r, ns = 0, active = 0, tokens = 0, all = 0, max_seq = 1, use_prefill = 0;
    int64_t sqsl[33], nqsl[33], sacc[32], nstate[32];
    ts_batch* batch;
    vec dr, ac, pf;
    attn_metadata_t* m;
    for (r = 0; r < n; ++r) {
      /* spec, decode, prefill, extend; zero-length padding trails (vLLM's all-spec path takes
       * the first num_spec_decodes rows) */
      const int64_t kind = r >= real ? 4 : ts_rand_range(&seed, 0, 3);
      q[r] = kind == 0 ? (int32_t)ts_rand_range(&seed, 1, 1 + k)
             : kind == 1 ? 1 : kind == 4 ? 0 : (int32_t)ts_rand_range(&seed, 1, 40);
      s[r] = q[r] + (kind == 2 || kind == 4 ? 0 : (int32_t)ts_rand_range(&seed, 1, 60));
      draft[r] = kind == 0 ? q[r] - 1 : -1;
      prefilling[r] = kind == 2 || kind == 3;
      acc[r] = (int32_t)ts_rand_range(&seed, 1, 1 + k);
      if (s[r] > max_seq) max_seq = s[r];
    }
    sqsl[0] = nqsl[0] = 0;
    for (r = 0; r < n; ++r) {
      all += q[r];
      if (draft[r] >= 0) {
        sqsl[ns + 1] = sqsl[ns] + q[r];
        sacc[ns++] = acc[r];
      } else if (q[r] > 0) {
        nqsl[active + 1] = nqsl[active] + q[r];
        ++active;
        tokens += q[r];
        use_prefill = use_prefill || prefilling[r] || q[r] != 1;
      }
    }
    batch = ts_batch_make(q, s, n, 16, (max_seq + 15) / 16, -1);
    for (r = 0, active = 0; r < n; ++r)
      if (draft[r] < 0 && q[r] > 0) nstate[active++] = batch->bt[r * batch->width];
    batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, draft, n);
    batch->common.num_accepted_tokens = vec_i32(&ac, acc, n);
    batch->common.is_prefilling = vec_bool(&pf, prefilling, n);
    if (ns == 0) {  /* the non-spec path (GDN's split): covered by test_gdn */
      ts_batch_free(batch);
      attn_builder_destroy(b);
      continue;
    }
    m = build(b, &batch->common);
    assert_int_equal(ts_int(m, "num_spec_decodes"), ns);
    assert_int_equal(ts_int(m, "num_spec_decode_tokens"), all - tokens);
    assert_int_equal(ts_int(m, "num_prefills"), use_prefill ? active : 0);
    assert_int_equal(ts_int(m, "num_decodes"), use_prefill ? 0 : active);
    assert_int_equal(ts_int(m, "num_prefill_tokens"), use_prefill ? tokens : 0);
    expect_vec(m, "spec_query_start_loc", 32, sqsl, ns + 1);
    expect_vec(m, "num_accepted_tokens", 32, sacc, ns);
    if (active > 0) expect_vec(m, "non_spec_state_indices_tensor", 32, nstate, active);
    if (active > 0 && use_prefill) expect_vec(m, "non_spec_query_start_loc", 32, nqsl, active + 1);
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

/* What vLLM refuses, and what libattn cannot build. */
static void test_refusals(void** state) {
  static const int32_t q[] = {2, 3}, s[] = {12, 3}, draft[] = {1, -1}, acc[] = {1, 1};
  static const int prefilling[] = {0, 1};
  attn_kv_cache_spec_t spec = kspec(0);
  attn_builder_config_t c = kconfig(2);
  attn_builder_t* b = ts_builder("KIMI_K3_KDA", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 3, -1);
  attn_metadata_t* m = NULL;
  vec dr, ac, pf;
  (void)state;
  batch->common.num_decode_draft_tokens_cpu = vec_i32(&dr, draft, 2);
  batch->common.is_prefilling = vec_bool(&pf, prefilling, 2);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "num_accepted_tokens is NULL");
  batch->common.num_accepted_tokens = vec_i32(&ac, acc, 2);
  batch->common.is_prefilling = NULL;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "is_prefilling is NULL");
  attn_builder_destroy(b);
  b = NULL;
  spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_ALIGN;
  c.use_v2_model_runner = 1;
  ASSERT_ERROR(attn_builder_create("KIMI_K3_KDA", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "mamba_aligned_state_indices");
  c.use_v2_model_runner = 0;
  spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_NONE;
  spec.num_prefill_checkpoint_blocks = 2;
  ASSERT_ERROR(attn_builder_create("KIMI_K3_KDA", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "prefill checkpoints");
  spec.num_prefill_checkpoint_blocks = 0;
  spec.mamba_type = ATTN_MAMBA_TYPE_MAMBA2;
  ASSERT_ERROR(attn_builder_create("KIMI_K3_KDA", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "mamba_type");
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_class_answers),     cmocka_unit_test(test_spec_split),
      cmocka_unit_test(test_token_starts),      cmocka_unit_test(test_recoverssm),
      cmocka_unit_test(test_all_spec_staged),   cmocka_unit_test(test_flashinfer_prefill),
      cmocka_unit_test(test_random_spec),       cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
