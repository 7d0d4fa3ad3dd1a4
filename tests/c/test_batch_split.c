/* attn_split_decodes_and_prefills, attn_split_decodes_and_prefills_ex (ABI 1.4) and
 * attn_split_decodes_prefills_and_extends: vLLM's vectors, edge cases and cases whose answers
 * come from vLLM 0.33.0's own split_decodes_and_prefills, bad input, and seeded random batches
 * against a naive classifier written here. */
#include "json.h"
#include "test_support.h"

static attn_batch_split_t split(const ts_batch* b, int32_t threshold, int32_t uniform) {
  attn_batch_split_t s = ATTN_BATCH_SPLIT_INIT;
  ASSERT_OK(attn_split_decodes_and_prefills(&b->common, threshold, uniform, &s));
  return s;
}

static attn_batch_split_t split3(const ts_batch* b, int32_t threshold) {
  attn_batch_split_t s = ATTN_BATCH_SPLIT_INIT;
  ASSERT_OK(attn_split_decodes_prefills_and_extends(&b->common, threshold, &s));
  return s;
}

static void expect_split(attn_batch_split_t s, int64_t d, int64_t p, int64_t dt, int64_t pt) {
  if (s.num_decodes != d || s.num_prefills != p || s.num_decode_tokens != dt ||
      s.num_prefill_tokens != pt || s.num_extends != 0 || s.num_extend_tokens != 0)
    fail_msg("split (%lld, %lld, %lld, %lld | %lld, %lld), expected (%lld, %lld, %lld, %lld)",
             (long long)s.num_decodes, (long long)s.num_prefills, (long long)s.num_decode_tokens,
             (long long)s.num_prefill_tokens, (long long)s.num_extends,
             (long long)s.num_extend_tokens, (long long)d, (long long)p, (long long)dt,
             (long long)pt);
}

static void test_vectors_split(void** state) {
  char path[1024];
  json_value* v;
  const json_value* cases;
  size_t c;
  (void)state;
  snprintf(path, sizeof path, "%s/split_decodes_and_prefills.json", ATTN_TEST_VECTORS_DIR);
  v = json_load(path);
  assert_non_null(v);
  cases = json_get(v, "cases");
  for (c = 0; c < cases->count; ++c) {
    const json_value* cs = &cases->items[c];
    int64_t q64[16], e[4], r;
    int32_t q[16], s[16];
    const size_t n = json_ints(json_get(cs, "query_lens"), q64, 16);
    const json_value* padded = json_get(cs, "padded_num_tokens");
    ts_batch* b;
    for (r = 0; r < (int64_t)n; ++r) {
      q[r] = (int32_t)q64[r];
      s[r] = (int32_t)(10 * (r + 1));
    }
    json_ints(json_get(cs, "expected"), e, 4);
    b = ts_batch_make(q, s, (int64_t)n, 16, 0, padded ? (int64_t)padded->number : -1);
    expect_split(split(b, (int32_t)json_get(cs, "decode_threshold")->number,
                       json_get(cs, "require_uniform")->number != 0),
                 e[0], e[1], e[2], e[3]);
    ts_batch_free(b);
  }
  json_free(v);
}

static void test_vectors_split3(void** state) {
  char path[1024];
  json_value* v;
  const json_value* cs;
  int64_t q64[8], s64[8], e[6];
  int32_t q[8], s[8];
  size_t n, i;
  ts_batch* b;
  attn_batch_split_t r;
  (void)state;
  snprintf(path, sizeof path, "%s/split_decodes_prefills_and_extends.json", ATTN_TEST_VECTORS_DIR);
  v = json_load(path);
  assert_non_null(v);
  cs = &json_get(v, "cases")->items[0];
  n = json_ints(json_get(cs, "query_lens"), q64, 8);
  json_ints(json_get(cs, "seq_lens"), s64, 8);
  json_ints(json_get(cs, "expected"), e, 6);
  for (i = 0; i < n; ++i) {
    q[i] = (int32_t)q64[i];
    s[i] = (int32_t)s64[i];
  }
  b = ts_batch_make(q, s, (int64_t)n, 16, 0, -1);
  r = split3(b, (int32_t)json_get(cs, "decode_threshold")->number);
  assert_int_equal(r.num_decodes, e[0]);
  assert_int_equal(r.num_extends, e[1]);
  assert_int_equal(r.num_prefills, e[2]);
  assert_int_equal(r.num_decode_tokens, e[3]);
  assert_int_equal(r.num_extend_tokens, e[4]);
  assert_int_equal(r.num_prefill_tokens, e[5]);
  ts_batch_free(b);
  json_free(v);
}

static void test_edge_cases(void** state) {
  static const int32_t one_q[1] = {1}, one_s[1] = {7};
  static const int32_t pf_q[3] = {5, 6, 7}, pf_s[3] = {5, 6, 7};
  static const int32_t pad_q[4] = {2, 2, 2, 0}, pad_s[4] = {9, 9, 9, 9};
  ts_batch* b;
  attn_batch_split_t r;
  (void)state;
  /* empty batch */
  b = ts_batch_make(NULL, NULL, 0, 16, 1, -1);
  expect_split(split(b, 1, 0), 0, 0, 0, 0);
  b->common.max_query_len = 5; /* an upper bound above every query (there are none) */
  expect_split(split(b, 1, 0), 0, 0, 0, 0);
  {
    /* a (0, W) table has no elements, so no meaningful strides: numpy reports column stride 0,
     * others anything; every one is accepted (nothing is read) */
    static int64_t odd[3][2] = {{16, 0}, {0, 0}, {-16, -1}};
    int i;
    for (i = 0; i < 3; ++i) {
      b->bt_t.strides = odd[i];
      expect_split(split(b, 1, 1), 0, 0, 0, 0);
      expect_split(split(b, 1, 0), 0, 0, 0, 0);
    }
    b->bt_t.strides = NULL;
  }
  ts_batch_free(b);
  /* one decode */
  b = ts_batch_make(one_q, one_s, 1, 16, 0, -1);
  expect_split(split(b, 1, 0), 1, 0, 1, 0);
  expect_split(split(b, 1, 1), 1, 0, 1, 0);
  ts_batch_free(b);
  /* all prefills (no context): 0 decodes, and in the 3-way split all are prefills */
  b = ts_batch_make(pf_q, pf_s, 3, 16, 0, -1);
  expect_split(split(b, 1, 0), 0, 3, 0, 18);
  r = split3(b, 1);
  assert_int_equal(r.num_prefills, 3);
  assert_int_equal(r.num_extends, 0);
  assert_int_equal(r.num_prefill_tokens, 18);
  ts_batch_free(b);
  /* padded uniform batch with a zero-length padding request whose token count is not
   * num_reqs * 2: vLLM 0.33 (which dropped the "tokens not padded correctly" assertion) gives
   * (4, 0, 7, 0) */
  b = ts_batch_make(pad_q, pad_s, 4, 16, 0, 7);
  expect_split(split(b, 3, 1), 4, 0, 7, 0);
  /* without require_uniform the same batch is simply all decodes */
  expect_split(split(b, 3, 0), 4, 0, 7, 0);
  ts_batch_free(b);
  /* an upper-bound max_query_len with no prefill in the 3-way split: vLLM's argmax of nothing
   * gives 0 decodes */
  b = ts_batch_make(one_q, one_s, 1, 16, 0, -1);
  b->common.max_query_len = 4;
  r = split3(b, 1);
  assert_int_equal(r.num_decodes, 0);
  assert_int_equal(r.num_decode_tokens, 0);
  assert_int_equal(r.num_prefills + r.num_extends, 0);
  ts_batch_free(b);
}

static void test_bad_input(void** state) {
  static const int32_t q[2] = {1, 4}, s[2] = {5, 9};
  ts_batch* b = ts_batch_make(q, s, 2, 16, 0, -1);
  attn_batch_split_t r = ATTN_BATCH_SPLIT_INIT;
  attn_tensor_t dev;
  (void)state;
  r.num_decodes = -7;
  ASSERT_ERROR(attn_split_decodes_and_prefills(NULL, 1, 0, &r), ATTN_ERR_INVALID_ARGUMENT, "common is NULL");
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, 1, 0, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, -1, 0, &r), ATTN_ERR_INVALID_ARGUMENT,
               "decode_threshold=-1 is negative");
  r.struct_size = 8;
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, 1, 0, &r), ATTN_ERR_INVALID_ARGUMENT,
               "out->struct_size=8");
  r.struct_size = ATTN_BATCH_SPLIT_STRUCT_SIZE;
  b->qsl[1] = 0;
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, 1, 0, &r), ATTN_ERR_INVALID_ARGUMENT,
               "query length of request 1 is 5");
  b->qsl[1] = 1;
  assert_int_equal(r.num_decodes, -7); /* untouched by every failure above */
  /* the 3-way split needs host seq_lens: a device seq_lens without a mirror is refused */
  dev = b->seq_t;
  dev.device.device_type = ATTN_DEVICE_CUDA;
  b->common.seq_lens = &dev;
  b->common.block_table_tensor = NULL; /* splits do not need the tables */
  b->common.slot_mapping = NULL;
  b->common.query_start_loc_cpu = &b->qsl_t;
  b->qsl_t.device.device_type = ATTN_DEVICE_CPU;
  {
    attn_tensor_t dq = b->qsl_t;
    dq.device.device_type = ATTN_DEVICE_CUDA;
    b->common.query_start_loc = &dq;
    ASSERT_ERROR(attn_split_decodes_prefills_and_extends(&b->common, 1, &r), ATTN_ERR_INVALID_ARGUMENT,
                 "common->seq_lens_cpu is NULL; it is required when common->seq_lens is on cuda:0");
    /* the 2-way split only reads query_start_loc_cpu: fine on a device batch */
    ASSERT_OK(attn_split_decodes_and_prefills(&b->common, 1, 0, &r));
    expect_split(r, 1, 1, 1, 4);
  }
  ts_batch_free(b);
}

/* ---- naive reference ------------------------------------------------------------------------ */
typedef struct {
  int64_t d, e, p, dt, et, pt;
} naive_split;

/* vLLM 0.33's split_decodes_and_prefills, written from its source: `pre` (may be NULL) is
 * is_prefilling, read only when short extends are not decodes. */
static naive_split naive2(const int32_t* q, const uint8_t* pre, int64_t n, int64_t tokens,
                          int64_t max_q, int32_t th, int uniform, int short_as_decode) {
  naive_split s = {0, 0, 0, 0, 0, 0};
  int64_t i, first = -1;
  int all_pad = 1;
  if (max_q <= th && (!uniform || th <= 1) && short_as_decode) {
    s.d = n;
    s.dt = tokens;
    return s;
  }
  if (n == 0) { /* vLLM would index an empty tensor; libattn: no requests */
    s.dt = tokens;
    return s;
  }
  if (q[0] > th) {
    s.p = n;
    s.pt = tokens;
    return s;
  }
  for (i = 0; i < n; ++i)
    if (q[i] != q[0] && q[i] != 0) all_pad = 0;
  if (uniform && short_as_decode && all_pad) {
    s.d = n;
    s.dt = tokens;
    return s;
  }
  for (i = 0; i < n && first < 0; ++i) {
    int prefill = uniform ? (q[i] != q[0] && q[i] != 0) : q[i] > th;
    if (!short_as_decode && pre != NULL && pre[i]) prefill = 1;
    if (prefill) first = i;
  }
  if (first < 0) {
    s.d = n;
    s.dt = tokens;
    return s;
  }
  s.d = first;
  s.p = n - first;
  for (i = 0; i < first; ++i) s.dt += q[i];
  s.pt = tokens - s.dt;
  return s;
}

static void test_random_batches(void** state) {
  uint64_t seed = 4242;
  int iter;
  (void)state;
  for (iter = 0; iter < 3000; ++iter) {
    int32_t q[40], s[40];
    uint8_t pre[40];
    int64_t shape[1];
    const int64_t n = ts_rand_range(&seed, 0, 40);
    const int32_t th = (int32_t)ts_rand_range(&seed, 1, 5);
    const int uniform = (int)ts_rand_range(&seed, 0, 1);
    const int short_as_decode = (int)ts_rand_range(&seed, 0, 1);
    int64_t r, tokens = 0, padded;
    ts_batch* b;
    naive_split want;
    attn_batch_split_t got = ATTN_BATCH_SPLIT_INIT, got_ex = ATTN_BATCH_SPLIT_INIT;
    attn_split_options_t o = ATTN_SPLIT_OPTIONS_INIT;
    attn_tensor_t pre_t;
    /* reordered: decodes (short queries) first, then short extends (short queries still in
     * their prompt), then prefills; sometimes uniform + zero-length padding anywhere */
    const int64_t nd = n ? ts_rand_range(&seed, 0, n) : 0;
    const int64_t ns = ts_rand_range(&seed, 0, n - nd);
    const int32_t uq = (int32_t)ts_rand_range(&seed, 1, th);
    for (r = 0; r < n; ++r) {
      if (r < nd + ns)
        q[r] = uniform && ts_rand_range(&seed, 0, 3) ? uq : (int32_t)ts_rand_range(&seed, 0, th);
      else
        q[r] = (int32_t)ts_rand_range(&seed, th + 1, th + 30);
      pre[r] = (uint8_t)(r >= nd);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 200);
      tokens += q[r];
    }
    padded = ts_rand_range(&seed, 0, 3) == 0 ? tokens + ts_rand_range(&seed, 0, 8) : tokens;
    b = ts_batch_make(q, s, n, 16, 0, padded);
    shape[0] = n;
    pre_t = ts_host_tensor(pre, 1, shape, ATTN_DTYPE_UINT, 8);
    b->common.is_prefilling = &pre_t;
    want = naive2(q, pre, n, padded, b->common.max_query_len, th, uniform, short_as_decode);
    o.decode_threshold = th;
    o.require_uniform = uniform;
    o.treat_short_extends_as_decodes = short_as_decode;
    ASSERT_OK(attn_split_decodes_and_prefills_ex(&b->common, &o, &got_ex));
    expect_split(got_ex, want.d, want.p, want.dt, want.pt);
    if (short_as_decode) { /* the ABI 1.0 function is the same split */
      ASSERT_OK(attn_split_decodes_and_prefills(&b->common, th, uniform, &got));
      expect_split(got, want.d, want.p, want.dt, want.pt);
    }
    ts_batch_free(b);
  }
}

/* attn_split_decodes_and_prefills_ex: answers of vLLM 0.33.0's split_decodes_and_prefills
 * (run in its virtual environment) on hand-made batches. */
static void test_split_ex_vllm_cases(void** state) {
  static const struct {
    int32_t n, q[4];
    uint8_t pre[4];
    int32_t th, uniform, short_as_decode;
    int64_t tokens, want[4];
  } cases[] = {
      {4, {2, 2, 2, 0}, {0, 0, 0, 0}, 3, 1, 1, 7, {4, 0, 7, 0}},  /* padded, tokens not 4*2 */
      {2, {1, 0}, {0, 0}, 1, 1, 1, -1, {2, 0, 1, 0}},              /* q=[1,0] */
      {4, {2, 0, 3, 2}, {0, 0, 0, 0}, 3, 1, 1, -1, {2, 2, 2, 5}},  /* padding is no prefill */
      {4, {1, 1, 1, 4}, {0, 0, 1, 1}, 1, 0, 0, -1, {2, 2, 2, 5}},  /* a short extend */
      {2, {1, 1}, {0, 1}, 1, 0, 0, -1, {1, 1, 1, 1}},              /* no shortcut */
      {2, {1, 1}, {0, 1}, 1, 0, 1, -1, {2, 0, 2, 0}},              /* the shortcut */
      {3, {2, 2, 0}, {0, 0, 0}, 2, 1, 0, -1, {3, 0, 4, 0}},
      {3, {2, 2, 0}, {0, 1, 0}, 2, 1, 0, -1, {1, 2, 2, 2}},
      {2, {3, 1}, {0, 0}, 2, 0, 0, -1, {0, 2, 0, 4}},              /* first too long */
  };
  size_t c;
  (void)state;
  for (c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    static const int32_t s[4] = {40, 40, 40, 40};
    int64_t shape[1];
    uint8_t pre[4];
    attn_tensor_t pre_t;
    attn_split_options_t o = ATTN_SPLIT_OPTIONS_INIT;
    attn_batch_split_t r = ATTN_BATCH_SPLIT_INIT;
    ts_batch* b = ts_batch_make(cases[c].q, s, cases[c].n, 16, 0, cases[c].tokens);
    memcpy(pre, cases[c].pre, sizeof pre);
    shape[0] = cases[c].n;
    pre_t = ts_host_tensor(pre, 1, shape, ATTN_DTYPE_BOOL, 8);
    b->common.is_prefilling = &pre_t;
    o.decode_threshold = cases[c].th;
    o.require_uniform = cases[c].uniform;
    o.treat_short_extends_as_decodes = cases[c].short_as_decode;
    ASSERT_OK(attn_split_decodes_and_prefills_ex(&b->common, &o, &r));
    expect_split(r, cases[c].want[0], cases[c].want[1], cases[c].want[2], cases[c].want[3]);
    ts_batch_free(b);
  }
}

/* vLLM 0.33's test_split_decodes_and_prefills_uniform_padded_batch_all_same: three requests of
 * 2 tokens and a padding request, num_actual_tokens padded to 8 with a 6-entry slot_mapping;
 * vLLM's split answers (4, 0, 8, 0). A utility checks what it reads (issue 32): the splits, the
 * DCP context split and the local-attention count read query_start_loc (and the host seq_lens),
 * never the slot mapping or the block table, so neither is checked; what they read still is. */
static void test_utilities_check_what_they_read(void** state) {
  static const int32_t q[4] = {2, 2, 2, 0}, s[4] = {10, 12, 14, 0};
  ts_batch* b = ts_batch_make(q, s, 4, 16, 0, 8);
  attn_batch_split_t r = ATTN_BATCH_SPLIT_INIT;
  attn_split_options_t o = ATTN_SPLIT_OPTIONS_INIT;
  int64_t d = 0, p = 0, dt = 0, pt = 0, v = 0;
  int64_t bad_shape[2] = {3, 1};
  attn_tensor_t bad_table;
  (void)state;
  b->sm_shape[0] = 6; /* the scheduled tokens only */
  ASSERT_OK(attn_split_decodes_and_prefills(&b->common, 2, 1, &r));
  expect_split(r, 4, 0, 8, 0);
  o.decode_threshold = 2;
  o.require_uniform = 1;
  ASSERT_OK(attn_split_decodes_and_prefills_ex(&b->common, &o, &r));
  expect_split(r, 4, 0, 8, 0);
  /* a block table of the wrong rows and dtype: not read either */
  bad_table = ts_host_tensor(b->bt, 2, bad_shape, ATTN_DTYPE_FLOAT, 32);
  b->common.block_table_tensor = &bad_table;
  ASSERT_OK(attn_split_decodes_and_prefills(&b->common, 2, 1, &r));
  expect_split(r, 4, 0, 8, 0);
  ASSERT_OK(attn_split_decodes_prefills_and_extends(&b->common, 2, &r));
  expect_split(r, 4, 0, 8, 0);
  ASSERT_OK(attn_split_dcp_context_queries(&b->common, &d, &p, &dt, &pt));
  ASSERT_OK(attn_local_attention_num_virtual_batches(32, &b->common, &v));
  assert_int_equal(v, 4);
  /* what they read is still checked: seq_lens for the 3-way split, the query starts for all */
  b->seq[1] = 1;
  ASSERT_ERROR(attn_split_decodes_prefills_and_extends(&b->common, 2, &r),
               ATTN_ERR_INVALID_ARGUMENT, "common->seq_lens[1]=1 is less than its query length 2");
  ASSERT_ERROR(attn_split_dcp_context_queries(&b->common, &d, &p, &dt, &pt),
               ATTN_ERR_INVALID_ARGUMENT, "common->seq_lens[1]=1 is less than its query length 2");
  ASSERT_OK(attn_split_decodes_and_prefills(&b->common, 2, 1, &r)); /* the split: not read */
  b->seq[1] = 12;
  b->qsl[2] = 1;
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, 2, 1, &r), ATTN_ERR_INVALID_ARGUMENT,
               "common->query_start_loc[2]=1 is less than common->query_start_loc[1]=2");
  b->qsl[2] = 4;
  b->common.num_actual_tokens = 5;
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, 2, 1, &r), ATTN_ERR_INVALID_ARGUMENT,
               "common->query_start_loc[4]=6 exceeds common->num_actual_tokens=5");
  /* a batch utility that returns a batch forwards the slot mapping: checked there */
  b->common.num_actual_tokens = 8;
  b->common.block_table_tensor = &b->bt_t;
  {
    attn_metadata_t* m = NULL;
    ASSERT_ERROR(attn_common_metadata_unpadded(&b->common, 8, 4, &m), ATTN_ERR_INVALID_ARGUMENT,
                 "common->slot_mapping has shape (6,), fewer than common->num_actual_tokens=8");
  }
  ts_batch_free(b);
}

static void test_split_ex_bad_input(void** state) {
  static const int32_t q[3] = {1, 1, 4}, s[3] = {5, 9, 4};
  ts_batch* b = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_batch_split_t r = ATTN_BATCH_SPLIT_INIT;
  attn_split_options_t o = ATTN_SPLIT_OPTIONS_INIT;
  (void)state;
  /* NULL options: vLLM's defaults (threshold 1, short extends are decodes) */
  ASSERT_OK(attn_split_decodes_and_prefills_ex(&b->common, NULL, &r));
  expect_split(r, 2, 1, 2, 4);
  r.num_decodes = -7;
  ASSERT_ERROR(attn_split_decodes_and_prefills_ex(NULL, &o, &r), ATTN_ERR_INVALID_ARGUMENT,
               "common is NULL");
  ASSERT_ERROR(attn_split_decodes_and_prefills_ex(&b->common, &o, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out is NULL");
  o.decode_threshold = -2;
  ASSERT_ERROR(attn_split_decodes_and_prefills_ex(&b->common, &o, &r), ATTN_ERR_INVALID_ARGUMENT,
               "decode_threshold=-2 is negative");
  o.decode_threshold = 1;
  o.reserved = 3;
  ASSERT_ERROR(attn_split_decodes_and_prefills_ex(&b->common, &o, &r), ATTN_ERR_INVALID_ARGUMENT,
               "options->reserved=3 must be 0");
  o.reserved = 0;
  o.struct_size = 4;
  ASSERT_ERROR(attn_split_decodes_and_prefills_ex(&b->common, &o, &r), ATTN_ERR_INVALID_ARGUMENT,
               "options->struct_size=4");
  o.struct_size = ATTN_SPLIT_OPTIONS_STRUCT_SIZE;
  o.treat_short_extends_as_decodes = 0; /* vLLM asserts is_prefilling is not None */
  ASSERT_ERROR(attn_split_decodes_and_prefills_ex(&b->common, &o, &r), ATTN_ERR_INVALID_ARGUMENT,
               "common->is_prefilling is NULL; treat_short_extends_as_decodes=0 needs it");
  r.struct_size = 8;
  ASSERT_ERROR(attn_split_decodes_and_prefills_ex(&b->common, NULL, &r), ATTN_ERR_INVALID_ARGUMENT,
               "out->struct_size=8");
  r.struct_size = ATTN_BATCH_SPLIT_STRUCT_SIZE;
  b->qsl[1] = 3; /* decreasing query_start_loc */
  ASSERT_ERROR(attn_split_decodes_and_prefills_ex(&b->common, NULL, &r), ATTN_ERR_INVALID_ARGUMENT,
               "query_start_loc");
  b->qsl[1] = 1;
  assert_int_equal(r.num_decodes, -7); /* untouched by every failure above */
  ts_batch_free(b);
}

static void test_random_split3(void** state) {
  uint64_t seed = 99;
  int iter;
  (void)state;
  for (iter = 0; iter < 3000; ++iter) {
    int32_t q[40], s[40];
    const int64_t n = ts_rand_range(&seed, 1, 40);
    const int32_t th = (int32_t)ts_rand_range(&seed, 1, 4);
    const int64_t nd = ts_rand_range(&seed, 0, n), ne = ts_rand_range(&seed, 0, n - nd);
    int64_t r, tokens = 0, dt = 0, et = 0;
    ts_batch* b;
    attn_batch_split_t got;
    for (r = 0; r < n; ++r) {
      if (r < nd) { /* decode */
        q[r] = (int32_t)ts_rand_range(&seed, 1, th);
        s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 50);
      } else if (r < nd + ne) { /* extend: context > 0 */
        q[r] = (int32_t)ts_rand_range(&seed, th + 1, th + 20);
        s[r] = q[r] + (int32_t)ts_rand_range(&seed, 1, 50);
      } else { /* prefill: no context */
        q[r] = (int32_t)ts_rand_range(&seed, th + 1, th + 20);
        s[r] = q[r];
      }
      tokens += q[r];
      if (r < nd) dt += q[r];
      else if (r < nd + ne) et += q[r];
    }
    b = ts_batch_make(q, s, n, 16, 0, -1);
    got = split3(b, th);
    if (nd == n) { /* vLLM's first branch: max_query_len <= threshold */
      assert_int_equal(got.num_decodes, n);
      assert_int_equal(got.num_decode_tokens, tokens);
    } else {
      assert_int_equal(got.num_decodes, nd);
      assert_int_equal(got.num_extends, ne);
      assert_int_equal(got.num_prefills, n - nd - ne);
      assert_int_equal(got.num_decode_tokens, dt);
      assert_int_equal(got.num_extend_tokens, et);
      assert_int_equal(got.num_prefill_tokens, tokens - dt - et);
    }
    ts_batch_free(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vectors_split),  cmocka_unit_test(test_vectors_split3),
      cmocka_unit_test(test_edge_cases),     cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_random_batches), cmocka_unit_test(test_random_split3),
      cmocka_unit_test(test_split_ex_vllm_cases), cmocka_unit_test(test_split_ex_bad_input),
      cmocka_unit_test(test_utilities_check_what_they_read),
  };
  return cmocka_run_group_tests_name("batch_split", tests, NULL, NULL);
}
