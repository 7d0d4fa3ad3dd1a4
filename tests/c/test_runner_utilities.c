/* ABI 1.7: vLLM 0.33's remaining utilities. CommonAttentionMetadata.naive_query_lens(),
 * reshape_attn_output_for_spec_decode (v1/attention/backends/utils.py), the DCP decisions of
 * v1/worker/cp_utils.py (get_dcp_dummy_context_len, should_split_fa2_dcp_context_attention) and
 * the micro-batch ones of v1/worker/ubatch_utils.py (is_last_ubatch_empty, get_num_ubatches,
 * check_ubatch_thresholds): values worked out by hand from vLLM's code, every argument refused
 * with its name and value (out params untouched), and seeded random inputs against naive
 * restatements written here. */
#include "test_support.h"

/* ---- naive_query_lens ----------------------------------------------------------------------- */

static void test_naive_query_lens(void** state) {
  /* query_start_loc [0, 3, 4, 4, 10] -> [3, 1, 0, 6] (vLLM: qsl[1:] - qsl[:-1]) */
  const int32_t q[4] = {3, 1, 0, 6}, s[4] = {5, 1, 7, 6};
  int32_t out[6] = {-7, -7, -7, -7, -7, -7};
  int64_t shape[1] = {6};
  attn_tensor_t ot = ts_host_tensor(out, 1, shape, ATTN_DTYPE_INT, 32);
  ts_batch* b = ts_batch_make(q, s, 4, 16, 0, -1);
  (void)state;
  ASSERT_OK(attn_common_metadata_naive_query_lens(&b->common, &ot, NULL));
  assert_int_equal(out[0], 3);
  assert_int_equal(out[1], 1);
  assert_int_equal(out[2], 0);
  assert_int_equal(out[3], 6);
  assert_int_equal(out[4], -7); /* past num_reqs: untouched */
  assert_int_equal(out[5], -7);
  ts_batch_free(b);

  /* an empty batch writes nothing */
  b = ts_batch_make(q, s, 0, 16, 1, -1);
  ASSERT_OK(attn_common_metadata_naive_query_lens(&b->common, &ot, NULL));
  assert_int_equal(out[0], 3);
  ts_batch_free(b);
}

static void test_naive_query_lens_bad_input(void** state) {
  const int32_t q[3] = {2, 1, 4}, s[3] = {2, 9, 4};
  int32_t out[3] = {-7, -7, -7};
  int64_t out64[3] = {0, 0, 0};
  int64_t shape[1] = {3}, short_shape[1] = {2};
  attn_tensor_t ot = ts_host_tensor(out, 1, shape, ATTN_DTYPE_INT, 32), bad;
  ts_batch* b = ts_batch_make(q, s, 3, 16, 0, -1);
  (void)state;
  ASSERT_ERROR(attn_common_metadata_naive_query_lens(NULL, &ot, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common is NULL");
  ASSERT_ERROR(attn_common_metadata_naive_query_lens(&b->common, NULL, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out");
  bad = ts_host_tensor(out64, 1, shape, ATTN_DTYPE_INT, 64);
  ASSERT_ERROR(attn_common_metadata_naive_query_lens(&b->common, &bad, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out");
  bad = ts_host_tensor(out, 1, short_shape, ATTN_DTYPE_INT, 32);
  ASSERT_ERROR(attn_common_metadata_naive_query_lens(&b->common, &bad, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out");
  bad = ts_host_tensor(out, 1, shape, ATTN_DTYPE_INT, 32);
  bad.device.device_type = ATTN_DEVICE_CUDA; /* query_start_loc is host memory */
  ASSERT_ERROR(attn_common_metadata_naive_query_lens(&b->common, &bad, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out");
  /* the batch is validated: a query_start_loc that decreases, a missing one */
  b->qsl[2] = 1;
  ASSERT_ERROR(attn_common_metadata_naive_query_lens(&b->common, &ot, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "query_start_loc");
  b->qsl[2] = 3;
  b->common.query_start_loc = NULL;
  ASSERT_ERROR(attn_common_metadata_naive_query_lens(&b->common, &ot, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "query_start_loc");
  b->common.query_start_loc = &b->qsl_t;
  b->common.num_reqs = -1;
  ASSERT_ERROR(attn_common_metadata_naive_query_lens(&b->common, &ot, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "num_reqs");
  assert_int_equal(out[0], -7);
  ts_batch_free(b);
}

static void test_naive_query_lens_random(void** state) {
  uint64_t seed = 33;
  int iter;
  (void)state;
  for (iter = 0; iter < 2000; ++iter) {
    int32_t q[64], s[64], out[64];
    const int64_t n = ts_rand_range(&seed, 0, 64);
    int64_t shape[1] = {64}, r;
    attn_tensor_t ot = ts_host_tensor(out, 1, shape, ATTN_DTYPE_INT, 32);
    ts_batch* b;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 0, 40);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 300);
    }
    for (r = 0; r < 64; ++r) out[r] = -9;
    b = ts_batch_make(q, s, n, 16, 0, -1);
    ASSERT_OK(attn_common_metadata_naive_query_lens(&b->common, &ot, NULL));
    for (r = 0; r < 64; ++r) assert_int_equal(out[r], r < n ? q[r] : -9);
    ts_batch_free(b);
  }
}

/* ---- reshape_attn_output_for_spec_decode ------------------------------------------------------ */

static attn_tensor_t f16(int32_t ndim, int64_t* shape, int64_t* strides) {
  static uint16_t data[1];
  attn_tensor_t t = ts_host_tensor(data, ndim, shape, ATTN_DTYPE_FLOAT, 16);
  t.strides = strides;
  return t;
}

static void expect_view(const attn_tensor_t* v, int64_t s0, int64_t s1, int64_t s2, int64_t t0,
                        int64_t t1, int64_t t2) {
  assert_int_equal(v->ndim, 3);
  if (v->shape[0] != s0 || v->shape[1] != s1 || v->shape[2] != s2 || v->strides[0] != t0 ||
      v->strides[1] != t1 || v->strides[2] != t2)
    fail_msg("view shape [%lld, %lld, %lld] strides [%lld, %lld, %lld], expected [%lld, %lld, "
             "%lld] [%lld, %lld, %lld]",
             (long long)v->shape[0], (long long)v->shape[1], (long long)v->shape[2],
             (long long)v->strides[0], (long long)v->strides[1], (long long)v->strides[2],
             (long long)s0, (long long)s1, (long long)s2, (long long)t0, (long long)t1,
             (long long)t2);
}

static void test_reshape_attn_output(void** state) {
  int64_t shape[4] = {2, 3, 4, 5}, strides[4] = {60, 20, 5, 1}, vs[3], vt[3];
  attn_tensor_t t = f16(4, shape, strides), v;
  (void)state;
  /* torch: torch.empty(2, 3, 4, 5).view(6, 4, 5).stride() == (20, 5, 1) */
  t.byte_offset = 6;
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 6, 4, 5, 20, 5, 1);
  assert_ptr_equal(v.data, t.data);
  assert_int_equal(v.byte_offset, 6);
  assert_int_equal(v.dtype.bits, 16);
  assert_ptr_equal(v.shape, vs);
  assert_ptr_equal(v.strides, vt);
  /* compact strides given as NULL */
  t.strides = NULL;
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 6, 4, 5, 20, 5, 1);
  /* a padded head dimension: x[:, :, :, :5] of a (2, 3, 4, 8) tensor -> (6, 4, 5) (32, 8, 1) */
  strides[0] = 96, strides[1] = 32, strides[2] = 8, strides[3] = 1;
  t.strides = strides;
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 6, 4, 5, 32, 8, 1);
  /* seq_len 1 (decode-only spec batch): x.transpose-free stride of dim 1 is free:
   * (4, 1, 2, 8) strides (16, 999, 8, 1) -> (4, 2, 8) (16, 8, 1) */
  shape[0] = 4, shape[1] = 1, shape[2] = 2, shape[3] = 8;
  strides[0] = 16, strides[1] = 999, strides[2] = 8, strides[3] = 1;
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 4, 2, 8, 16, 8, 1);
  /* batch 1: (1, 4, 2, 8) strides (777, 16, 8, 1) -> (4, 2, 8) (16, 8, 1) */
  shape[0] = 1, shape[1] = 4;
  strides[0] = 777, strides[1] = 16;
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 4, 2, 8, 16, 8, 1);
  /* a 3-D output is returned as it is (vLLM: "Already in the correct shape") */
  shape[0] = 7, shape[1] = 2, shape[2] = 8;
  strides[0] = 100, strides[1] = 9, strides[2] = 1;
  t = f16(3, shape, strides);
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 7, 2, 8, 100, 9, 1);
  /* an empty output: torch gives the contiguous strides of the new shape */
  shape[0] = 0, shape[1] = 3, shape[2] = 4, shape[3] = 5;
  strides[0] = 60, strides[1] = 20, strides[2] = 5, strides[3] = 1;
  t = f16(4, shape, strides);
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 0, 4, 5, 20, 5, 1);
  /* ... whatever the empty tensor's strides; each size counted as at least 1:
   * torch.zeros(1).as_strided((2, 0, 0, 3), (5, 7, 1, 2)).view(0, 0, 3).stride() == (3, 3, 1) */
  shape[0] = 2, shape[1] = 0, shape[2] = 0, shape[3] = 3;
  strides[0] = 5, strides[1] = 7, strides[2] = 1, strides[3] = 2;
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 0, 0, 3, 3, 3, 1);
  /* ... and with NULL strides */
  t.strides = NULL;
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 0, 0, 3, 3, 3, 1);
  /* an empty 3-D output keeps its own strides (the lane's minimal batch: torch.zeros(0, 1, 0)
   * has strides (1, 1, 1)); the tensor conversion's compact strides would give (0, 0, 1) */
  shape[0] = 0, shape[1] = 1, shape[2] = 0;
  strides[0] = 1, strides[1] = 1, strides[2] = 1;
  t = f16(3, shape, strides);
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 0, 1, 0, 1, 1, 1);
  t.strides = NULL; /* NULL: torch's contiguous strides of (0, 1, 0) */
  ASSERT_OK(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt));
  expect_view(&v, 0, 1, 0, 1, 1, 1);
}

static void test_reshape_attn_output_bad_input(void** state) {
  int64_t shape[4] = {2, 3, 4, 5}, strides[4] = {20, 40, 5, 1}, vs[3] = {-1, -1, -1}, vt[3];
  attn_tensor_t t = f16(4, shape, strides), v;
  (void)state;
  memset(&v, 0x5a, sizeof v);
  /* x.transpose(0, 1) of a (3, 2, 4, 5) tensor: torch's view refuses, so does libattn */
  ASSERT_ERROR(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt), ATTN_ERR_INVALID_ARGUMENT,
               "cannot be viewed as [6, 4, 5]");
  t = f16(2, shape, NULL);
  ASSERT_ERROR(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt), ATTN_ERR_INVALID_ARGUMENT,
               "attn_output must be 4D, got 2D");
  t = f16(5, (int64_t[]){1, 1, 1, 1, 1}, NULL);
  ASSERT_ERROR(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt), ATTN_ERR_INVALID_ARGUMENT,
               "attn_output must be 4D, got 5D");
  t = f16(4, shape, NULL);
  ASSERT_ERROR(attn_reshape_attn_output_for_spec_decode(NULL, &v, vs, vt),
               ATTN_ERR_INVALID_ARGUMENT, "attn_output");
  ASSERT_ERROR(attn_reshape_attn_output_for_spec_decode(&t, NULL, vs, vt),
               ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  ASSERT_ERROR(attn_reshape_attn_output_for_spec_decode(&t, &v, NULL, vt),
               ATTN_ERR_INVALID_ARGUMENT, "out_shape is NULL");
  ASSERT_ERROR(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_strides is NULL");
  /* an empty output with a negative stride (the conversion accepts any for an empty view) */
  shape[0] = 0, strides[0] = 20, strides[1] = -40;
  t = f16(4, shape, strides);
  ASSERT_ERROR(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt), ATTN_ERR_INVALID_ARGUMENT,
               "attn_output has strides[1]=-40; negative strides are not supported");
  /* an empty output whose contiguous strides overflow int64 */
  shape[0] = 5, shape[1] = (int64_t)1 << 40, shape[2] = (int64_t)1 << 40, shape[3] = 0;
  t = f16(4, shape, NULL);
  ASSERT_ERROR(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt), ATTN_ERR_INVALID_ARGUMENT,
               "attn_output has shape[1]=1099511627776: its contiguous strides overflow int64");
  shape[0] = 2, shape[1] = 3, shape[2] = 4, shape[3] = 5;
  t = f16(4, shape, NULL);
  shape[0] = (int64_t)1 << 40, shape[1] = (int64_t)1 << 30; /* the tensor conversion refuses */
  ASSERT_ERROR(attn_reshape_attn_output_for_spec_decode(&t, &v, vs, vt), ATTN_ERR_INVALID_ARGUMENT,
               "attn_output has more elements than libattn can index");
  assert_int_equal(vs[0], -1);
  assert_int_equal(v.ndim, 0x5a5a5a5a);
}

/* Naive check of a view: every element (t, h, d) of the 3-D view lies where element
 * (t / s1, t % s1, h, d) of the 4-D tensor lies; a refused view has no such strides, i.e. the
 * offsets of the merged index t are not an arithmetic progression (heads and dims kept). */
static int64_t off4(const int64_t* st, int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * st[0] + b * st[1] + c * st[2] + d * st[3];
}

static void test_reshape_attn_output_random(void** state) {
  uint64_t seed = 7;
  int iter, views = 0, refusals = 0;
  (void)state;
  for (iter = 0; iter < 5000; ++iter) {
    int64_t sh[4], st[4], vs[3], vt[3], t, h, d;
    attn_tensor_t x, v;
    attn_error_t* err;
    int k;
    for (k = 0; k < 4; ++k) sh[k] = ts_rand_range(&seed, 1, 4);
    if (ts_rand_range(&seed, 0, 2) == 0) {
      st[3] = 1, st[2] = sh[3], st[1] = sh[2] * sh[3], st[0] = sh[1] * st[1];
      if (ts_rand_range(&seed, 0, 1)) st[0] += ts_rand_range(&seed, 1, 3); /* padded batch */
    } else {
      for (k = 0; k < 4; ++k) st[k] = ts_rand_range(&seed, 0, 60);
    }
    x = f16(4, sh, st);
    err = attn_reshape_attn_output_for_spec_decode(&x, &v, vs, vt);
    if (err == NULL) {
      ++views;
      assert_int_equal(vs[0], sh[0] * sh[1]);
      for (t = 0; t < vs[0]; ++t)
        for (h = 0; h < sh[2]; ++h)
          for (d = 0; d < sh[3]; ++d)
            assert_int_equal(t * vt[0] + h * vt[1] + d * vt[2],
                             off4(st, t / sh[1], t % sh[1], h, d));
    } else {
      const int64_t n = sh[0] * sh[1];
      int affine = 1;
      ++refusals;
      assert_int_equal(attn_error_code(err), ATTN_ERR_INVALID_ARGUMENT);
      attn_error_destroy(err);
      for (t = 1; t + 1 < n; ++t)
        if (off4(st, (t + 1) / sh[1], (t + 1) % sh[1], 0, 0) - off4(st, t / sh[1], t % sh[1], 0, 0) !=
            off4(st, 1 / sh[1], 1 % sh[1], 0, 0))
          affine = 0;
      /* head / dim dimensions of size > 1 keep their strides, so a refusal is the merge's */
      if (affine) fail_msg("refused a mergeable view: shape [%lld %lld %lld %lld] strides [%lld "
                           "%lld %lld %lld]", (long long)sh[0], (long long)sh[1], (long long)sh[2],
                           (long long)sh[3], (long long)st[0], (long long)st[1], (long long)st[2],
                           (long long)st[3]);
    }
  }
  assert_true(views > 1000);
  assert_true(refusals > 500);
}

/* ---- the DCP decisions ------------------------------------------------------------------------ */

static int64_t dummy_len(int32_t w, int32_t i, int32_t cfg, int32_t mixed, int32_t cap,
                         int32_t uni) {
  int64_t out = -1;
  ASSERT_OK(attn_get_dcp_dummy_context_len(w, i, cfg, mixed, cap, uni, &out));
  return out;
}

static void test_dcp_dummy_context_len(void** state) {
  (void)state;
  assert_int_equal(dummy_len(4, 16, 1, 1, 0, 0), 64);  /* mixed batch: 4 * 16 */
  assert_int_equal(dummy_len(2, 1, 1, 0, 1, 1), 2);    /* capturing a uniform decode */
  assert_int_equal(dummy_len(2, 1, 1, 0, 1, 0), 0);    /* capturing, not uniform */
  assert_int_equal(dummy_len(2, 1, 1, 0, 0, 1), 0);    /* uniform, not capturing */
  assert_int_equal(dummy_len(2, 8, 0, 1, 1, 1), 0);    /* no KV cache config */
  assert_int_equal(dummy_len(1, 8, 1, 1, 1, 1), 0);    /* no DCP */
  assert_int_equal(dummy_len(8, 64, 1, 1, 1, 1), 512);
}

static void test_dcp_dummy_context_len_bad_input(void** state) {
  int64_t out = 77;
  (void)state;
  ASSERT_ERROR(attn_get_dcp_dummy_context_len(0, 1, 1, 1, 0, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "dcp_world_size=0 must be positive");
  ASSERT_ERROR(attn_get_dcp_dummy_context_len(2, 0, 1, 1, 0, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "cp_kv_cache_interleave_size=0 must be positive");
  ASSERT_ERROR(attn_get_dcp_dummy_context_len(2, 1, 2, 1, 0, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "has_kv_cache_config=2 must be 0 or 1");
  ASSERT_ERROR(attn_get_dcp_dummy_context_len(2, 1, 1, -1, 0, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "create_mixed_batch=-1 must be 0 or 1");
  ASSERT_ERROR(attn_get_dcp_dummy_context_len(2, 1, 1, 1, 3, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "is_graph_capturing=3 must be 0 or 1");
  ASSERT_ERROR(attn_get_dcp_dummy_context_len(2, 1, 1, 1, 0, 9, &out), ATTN_ERR_INVALID_ARGUMENT,
               "uniform_decode=9 must be 0 or 1");
  ASSERT_ERROR(attn_get_dcp_dummy_context_len(2, 1, 1, 1, 0, 0, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out_len is NULL");
  assert_int_equal(out, 77);
}

static int32_t fa2_split(int32_t fa, int64_t mq, int64_t n, int64_t nd, int64_t nc) {
  int32_t out = -1;
  ASSERT_OK(attn_should_split_fa2_dcp_context_attention(fa, mq, n, nd, nc, &out));
  return out;
}

static void test_should_split_fa2(void** state) {
  (void)state;
  assert_int_equal(fa2_split(2, 5, 4, 1, 3), 1);  /* decodes and context extends */
  assert_int_equal(fa2_split(2, 5, 4, 0, 2), 1);  /* extends and pure prefills */
  assert_int_equal(fa2_split(2, 5, 4, 0, 4), 0);  /* context extends only */
  assert_int_equal(fa2_split(2, 1, 4, 1, 3), 0);  /* max_query_len 1 */
  assert_int_equal(fa2_split(2, 5, 4, 4, 0), 0);  /* no prefills */
  assert_int_equal(fa2_split(3, 5, 4, 1, 3), 0);  /* FA3 */
  assert_int_equal(fa2_split(ATTN_FA_VERSION_NONE, 5, 4, 1, 3), 0);
  assert_int_equal(fa2_split(2, 2, 1, 0, 0), 1);  /* one pure prefill */
  assert_int_equal(fa2_split(2, 0, 0, 0, 0), 0);  /* empty batch */
}

static void test_should_split_fa2_bad_input(void** state) {
  int32_t out = 77;
  (void)state;
  ASSERT_ERROR(attn_should_split_fa2_dcp_context_attention(-1, 5, 4, 1, 3, &out),
               ATTN_ERR_INVALID_ARGUMENT, "fa_version=-1 is negative");
  ASSERT_ERROR(attn_should_split_fa2_dcp_context_attention(2, -5, 4, 1, 3, &out),
               ATTN_ERR_INVALID_ARGUMENT, "max_query_len=-5 is negative");
  ASSERT_ERROR(attn_should_split_fa2_dcp_context_attention(2, 5, -4, 0, 0, &out),
               ATTN_ERR_INVALID_ARGUMENT, "num_reqs=-4 is negative");
  ASSERT_ERROR(attn_should_split_fa2_dcp_context_attention(2, 5, 4, 5, 0, &out),
               ATTN_ERR_INVALID_ARGUMENT, "num_decode_reqs=5 is not in [0, num_reqs=4]");
  ASSERT_ERROR(attn_should_split_fa2_dcp_context_attention(2, 5, 4, -1, 0, &out),
               ATTN_ERR_INVALID_ARGUMENT, "num_decode_reqs=-1");
  ASSERT_ERROR(attn_should_split_fa2_dcp_context_attention(2, 5, 4, 1, 4, &out),
               ATTN_ERR_INVALID_ARGUMENT, "num_context_prefill_reqs=4 is not in [0, num_reqs - "
               "num_decode_reqs=3]");
  ASSERT_ERROR(attn_should_split_fa2_dcp_context_attention(2, 5, 4, 1, -2, &out),
               ATTN_ERR_INVALID_ARGUMENT, "num_context_prefill_reqs=-2");
  ASSERT_ERROR(attn_should_split_fa2_dcp_context_attention(2, 5, 4, 1, 3, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_split is NULL");
  assert_int_equal(out, 77);
}

/* ---- micro-batching ---------------------------------------------------------------------------- */

static int32_t last_empty(int64_t orig, int64_t padded, int32_t n) {
  int32_t out = -1;
  ASSERT_OK(attn_is_last_ubatch_empty(orig, padded, n, &out));
  return out;
}

static void test_ubatch_checks(void** state) {
  int32_t out = -1;
  (void)state;
  /* (padded // n) * (n - 1) >= orig */
  assert_int_equal(last_empty(5, 16, 2), 1);   /* 8 >= 5 */
  assert_int_equal(last_empty(9, 16, 2), 0);   /* 8 < 9 */
  assert_int_equal(last_empty(8, 16, 2), 1);   /* 8 >= 8 */
  assert_int_equal(last_empty(10, 17, 3), 1);  /* 5 * 2 = 10 >= 10 */
  assert_int_equal(last_empty(11, 17, 3), 0);
  assert_int_equal(last_empty(0, 0, 1), 1);    /* one ubatch: 0 >= orig only when orig is 0 */
  assert_int_equal(last_empty(1, 4, 1), 0);
  /* ParallelConfig: use_ubatching = enable_dbo or ubatch_size > 1 */
  ASSERT_OK(attn_get_num_ubatches(0, 0, &out));
  assert_int_equal(out, 1);
  ASSERT_OK(attn_get_num_ubatches(0, 1, &out));
  assert_int_equal(out, 1);
  ASSERT_OK(attn_get_num_ubatches(0, 4, &out));
  assert_int_equal(out, 4);
  ASSERT_OK(attn_get_num_ubatches(1, 0, &out));
  assert_int_equal(out, 2);
  ASSERT_OK(attn_get_num_ubatches(1, 4, &out)); /* enable_dbo wins: 2 */
  assert_int_equal(out, 2);
  /* thresholds */
  ASSERT_OK(attn_check_ubatch_thresholds(0, 1, 32, 512, 100000, 0, &out));
  assert_int_equal(out, 0); /* no ubatching */
  ASSERT_OK(attn_check_ubatch_thresholds(1, 0, 32, 512, 32, 1, &out));
  assert_int_equal(out, 1);
  ASSERT_OK(attn_check_ubatch_thresholds(1, 0, 32, 512, 31, 1, &out));
  assert_int_equal(out, 0);
  ASSERT_OK(attn_check_ubatch_thresholds(1, 0, 32, 512, 100, 0, &out));
  assert_int_equal(out, 0); /* a prefill batch below 512 */
  ASSERT_OK(attn_check_ubatch_thresholds(0, 3, 32, 512, 512, 0, &out));
  assert_int_equal(out, 1);
}

static void test_ubatch_checks_bad_input(void** state) {
  int32_t out = 77;
  (void)state;
  ASSERT_ERROR(attn_is_last_ubatch_empty(-1, 4, 2, &out), ATTN_ERR_INVALID_ARGUMENT,
               "orig_num_tokens=-1 is negative");
  ASSERT_ERROR(attn_is_last_ubatch_empty(1, -4, 2, &out), ATTN_ERR_INVALID_ARGUMENT,
               "padded_num_tokens=-4 is negative");
  ASSERT_ERROR(attn_is_last_ubatch_empty(1, 4, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "num_ubatches=0 must be positive");
  ASSERT_ERROR(attn_is_last_ubatch_empty(1, 4, 2, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out_empty is NULL");
  ASSERT_ERROR(attn_get_num_ubatches(2, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "enable_dbo=2 must be 0 or 1");
  ASSERT_ERROR(attn_get_num_ubatches(0, -2, &out), ATTN_ERR_INVALID_ARGUMENT,
               "ubatch_size=-2 is negative");
  ASSERT_ERROR(attn_get_num_ubatches(0, 2, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out_num_ubatches is NULL");
  ASSERT_ERROR(attn_check_ubatch_thresholds(-1, 0, 1, 1, 1, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "enable_dbo=-1 must be 0 or 1");
  ASSERT_ERROR(attn_check_ubatch_thresholds(1, -1, 1, 1, 1, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "ubatch_size=-1 is negative");
  ASSERT_ERROR(attn_check_ubatch_thresholds(1, 0, -1, 1, 1, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "dbo_decode_token_threshold=-1 is negative");
  ASSERT_ERROR(attn_check_ubatch_thresholds(1, 0, 1, -1, 1, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "dbo_prefill_token_threshold=-1 is negative");
  ASSERT_ERROR(attn_check_ubatch_thresholds(1, 0, 1, 1, -1, 0, &out), ATTN_ERR_INVALID_ARGUMENT,
               "num_tokens=-1 is negative");
  ASSERT_ERROR(attn_check_ubatch_thresholds(1, 0, 1, 1, 1, 5, &out), ATTN_ERR_INVALID_ARGUMENT,
               "uniform_decode=5 must be 0 or 1");
  ASSERT_ERROR(attn_check_ubatch_thresholds(1, 0, 1, 1, 1, 0, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out_ubatch is NULL");
  assert_int_equal(out, 77);
}

/* is_last_ubatch_empty against a token-by-token count: the last of n micro-batches of
 * padded // n tokens starts at (n - 1) * (padded // n); it is empty when no real token
 * (index < orig) lies at or after that start. */
static void test_last_ubatch_empty_random(void** state) {
  uint64_t seed = 5;
  int iter;
  (void)state;
  for (iter = 0; iter < 20000; ++iter) {
    const int32_t n = (int32_t)ts_rand_range(&seed, 1, 8);
    const int64_t padded = ts_rand_range(&seed, 0, 200);
    const int64_t orig = ts_rand_range(&seed, 0, padded + 3);
    int64_t start = 0, k, tok;
    int has_real = 0;
    for (k = 0; k + 1 < n; ++k) start += padded / n;
    for (tok = start; tok < orig; ++tok) has_real = 1;
    assert_int_equal(last_empty(orig, padded, n), !has_real);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_naive_query_lens),
      cmocka_unit_test(test_naive_query_lens_bad_input),
      cmocka_unit_test(test_naive_query_lens_random),
      cmocka_unit_test(test_reshape_attn_output),
      cmocka_unit_test(test_reshape_attn_output_bad_input),
      cmocka_unit_test(test_reshape_attn_output_random),
      cmocka_unit_test(test_dcp_dummy_context_len),
      cmocka_unit_test(test_dcp_dummy_context_len_bad_input),
      cmocka_unit_test(test_should_split_fa2),
      cmocka_unit_test(test_should_split_fa2_bad_input),
      cmocka_unit_test(test_ubatch_checks),
      cmocka_unit_test(test_ubatch_checks_bad_input),
      cmocka_unit_test(test_last_ubatch_empty_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
