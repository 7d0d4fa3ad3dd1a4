/* attn_should_skip_dcp_context_attention and attn_split_dcp_context_queries (vLLM 0.33's
 * v1/worker/cp_utils.py): hand-checked batches, bad input (out params untouched), and seeded
 * random ordered batches against a naive classifier written here. */
#include "test_support.h"

typedef struct {
  int64_t decode_reqs, prefill_reqs, decode_tokens, prefill_tokens;
} dcp_split;

static dcp_split split(const ts_batch* b) {
  dcp_split s = {-1, -1, -1, -1};
  ASSERT_OK(attn_split_dcp_context_queries(&b->common, &s.decode_reqs, &s.prefill_reqs,
                                           &s.decode_tokens, &s.prefill_tokens));
  return s;
}

static void expect(dcp_split s, int64_t dr, int64_t pr, int64_t dt, int64_t pt) {
  if (s.decode_reqs != dr || s.prefill_reqs != pr || s.decode_tokens != dt || s.prefill_tokens != pt)
    fail_msg("split (%lld, %lld, %lld, %lld), expected (%lld, %lld, %lld, %lld)",
             (long long)s.decode_reqs, (long long)s.prefill_reqs, (long long)s.decode_tokens,
             (long long)s.prefill_tokens, (long long)dr, (long long)pr, (long long)dt,
             (long long)pt);
}

static int32_t skip_of(const int32_t* lens, int64_t n) {
  int64_t shape[1];
  attn_tensor_t t;
  int32_t out = -1;
  shape[0] = n;
  t = ts_host_tensor((void*)lens, 1, shape, ATTN_DTYPE_INT, 32);
  ASSERT_OK(attn_should_skip_dcp_context_attention(&t, &out));
  return out;
}

static void test_should_skip(void** state) {
  (void)state;
  assert_int_equal(skip_of((int32_t[]){0}, 1), 1);           /* q=[3], ctx=[0] */
  assert_int_equal(skip_of((int32_t[]){0, 0, 0}, 3), 1);
  assert_int_equal(skip_of((int32_t[]){0, 5, 0}, 3), 0);     /* one rank holds context */
  assert_int_equal(skip_of((int32_t[]){1}, 1), 0);
  assert_int_equal(skip_of((int32_t[]){-2, 0}, 2), 1);       /* max() == 0, as vLLM compares */
  assert_int_equal(skip_of((int32_t[]){-2, -1}, 2), 0);
}

static void test_should_skip_bad_input(void** state) {
  static int32_t lens[2] = {0, 0};
  static int64_t lens64[2] = {0, 0};
  int64_t shape[2] = {2, 1}, strided[1] = {2};
  attn_tensor_t t;
  int32_t out = 7;
  (void)state;
  t = ts_host_tensor(lens, 1, shape, ATTN_DTYPE_INT, 32);
  ASSERT_ERROR(attn_should_skip_dcp_context_attention(NULL, &out), ATTN_ERR_INVALID_ARGUMENT,
               "context_kv_lens");
  ASSERT_ERROR(attn_should_skip_dcp_context_attention(&t, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out_skip is NULL");
  shape[0] = 0;
  t = ts_host_tensor(lens, 1, shape, ATTN_DTYPE_INT, 32);
  ASSERT_ERROR(attn_should_skip_dcp_context_attention(&t, &out), ATTN_ERR_INVALID_ARGUMENT,
               "context_kv_lens has 0 entries but 1 are needed");
  shape[0] = 2;
  t = ts_host_tensor(lens64, 1, shape, ATTN_DTYPE_INT, 64);
  ASSERT_ERROR(attn_should_skip_dcp_context_attention(&t, &out), ATTN_ERR_INVALID_ARGUMENT,
               "context_kv_lens");
  t = ts_host_tensor(lens, 2, shape, ATTN_DTYPE_INT, 32);
  ASSERT_ERROR(attn_should_skip_dcp_context_attention(&t, &out), ATTN_ERR_INVALID_ARGUMENT,
               "context_kv_lens has ndim=2");
  t = ts_host_tensor(lens, 1, shape, ATTN_DTYPE_INT, 32);
  t.strides = strided;
  ASSERT_ERROR(attn_should_skip_dcp_context_attention(&t, &out), ATTN_ERR_INVALID_ARGUMENT,
               "stride");
  t = ts_host_tensor(lens, 1, shape, ATTN_DTYPE_INT, 32);
  t.device.device_type = ATTN_DEVICE_CUDA;
  ASSERT_ERROR(attn_should_skip_dcp_context_attention(&t, &out), ATTN_ERR_INVALID_ARGUMENT,
               "host memory");
  t = ts_host_tensor(NULL, 1, shape, ATTN_DTYPE_INT, 32);
  ASSERT_ERROR(attn_should_skip_dcp_context_attention(&t, &out), ATTN_ERR_INVALID_ARGUMENT,
               "data=NULL");
  assert_int_equal(out, 7);
}

/* The values below were checked against vLLM 0.33.0's split_dcp_context_queries in its venv. */
static void test_split_hand_checked(void** state) {
  (void)state;
  {  /* 3 decodes, an extend with context (32 tokens), a pure prefill (20): FLASH_ATTN's sample */
    static const int32_t q[5] = {1, 1, 1, 32, 20}, s[5] = {41, 100, 17, 96, 20};
    ts_batch* b = ts_batch_make(q, s, 5, 16, 0, -1);
    expect(split(b), 3, 1, 3, 32);
    /* without a host seq_lens (a device batch with no seq_lens_cpu): everything "prefill" */
    ts_batch_free(b);
  }
  {  /* decode-only: max_query_len 1 gives every request as a decode */
    static const int32_t q[3] = {1, 1, 1}, s[3] = {5, 9, 2};
    ts_batch* b = ts_batch_make(q, s, 3, 16, 0, -1);
    expect(split(b), 3, 0, 3, 0);
    ts_batch_free(b);
  }
  {  /* q=[3], ctx=[0]: a pure prefill, in neither count */
    static const int32_t q[1] = {3}, s[1] = {3};
    ts_batch* b = ts_batch_make(q, s, 1, 16, 0, -1);
    expect(split(b), 0, 0, 0, 0);
    ts_batch_free(b);
  }
  {  /* extends only (no pure prefill): vLLM's early return counts all non-decodes */
    static const int32_t q[3] = {1, 4, 6}, s[3] = {10, 20, 30};
    ts_batch* b = ts_batch_make(q, s, 3, 16, 0, -1);
    expect(split(b), 1, 2, 1, 10);
    ts_batch_free(b);
  }
  {  /* max_query_len an upper bound (4) over one-token rows: vLLM's argmax over no extend is 0,
      * so it counts nothing (printed from vLLM 0.33.0: (0, 0, 0, 0)) */
    static const int32_t q[2] = {1, 1}, s[2] = {10, 20};
    ts_batch* b = ts_batch_make(q, s, 2, 16, 0, -1);
    b->common.max_query_len = 4;
    expect(split(b), 0, 0, 0, 0);
    ts_batch_free(b);
  }
}

static void test_split_without_host_seq_lens(void** state) {
  static const int32_t q[3] = {1, 4, 6}, s[3] = {10, 20, 6};
  ts_batch* b = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_tensor_t dev_seq;
  (void)state;
  /* seq_lens in device memory and no seq_lens_cpu: vLLM's seq_lens_cpu_upper_bound None */
  dev_seq = b->seq_t;
  dev_seq.device.device_type = ATTN_DEVICE_CUDA;
  b->common.seq_lens = &dev_seq;
  b->common.seq_lens_cpu = NULL;
  b->common.query_start_loc_cpu = &b->qsl_t;
  {
    dcp_split s2 = {-1, -1, -1, -1};
    attn_error_t* e = attn_split_dcp_context_queries(&b->common, &s2.decode_reqs, &s2.prefill_reqs,
                                                     &s2.decode_tokens, &s2.prefill_tokens);
    if (e != NULL) {  /* a library without CUDA refuses device tensors: nothing to check here */
      assert_int_equal(attn_error_code(e) == ATTN_ERR_UNSUPPORTED ||
                           attn_error_code(e) == ATTN_ERR_INVALID_ARGUMENT,
                       1);
      attn_error_destroy(e);
    } else {
      expect(s2, 0, 3, 0, 11);
    }
  }
  ts_batch_free(b);
}

static void test_split_bad_input(void** state) {
  static const int32_t q[2] = {1, 3}, s[2] = {5, 2};
  static const int32_t qg[2] = {1, 3}, sg[2] = {5, 9};
  ts_batch* bad = ts_batch_make(q, s, 2, 16, 1, -1);
  ts_batch* good = ts_batch_make(qg, sg, 2, 16, 1, -1);
  int64_t a = 7, b = 7, c = 7, d = 7;
  (void)state;
  ASSERT_ERROR(attn_split_dcp_context_queries(NULL, &a, &b, &c, &d), ATTN_ERR_INVALID_ARGUMENT,
               "common");
  ASSERT_ERROR(attn_split_dcp_context_queries(&good->common, NULL, &b, &c, &d),
               ATTN_ERR_INVALID_ARGUMENT, "out_num_decode_reqs is NULL");
  ASSERT_ERROR(attn_split_dcp_context_queries(&good->common, &a, NULL, &c, &d),
               ATTN_ERR_INVALID_ARGUMENT, "out_num_prefill_reqs is NULL");
  ASSERT_ERROR(attn_split_dcp_context_queries(&good->common, &a, &b, NULL, &d),
               ATTN_ERR_INVALID_ARGUMENT, "out_num_decode_tokens is NULL");
  ASSERT_ERROR(attn_split_dcp_context_queries(&good->common, &a, &b, &c, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_num_prefill_tokens is NULL");
  ASSERT_ERROR(attn_split_dcp_context_queries(&bad->common, &a, &b, &c, &d),
               ATTN_ERR_INVALID_ARGUMENT, "seq_lens[1]=2");
  good->common.max_query_len = 2; /* below a query length */
  ASSERT_ERROR(attn_split_dcp_context_queries(&good->common, &a, &b, &c, &d),
               ATTN_ERR_INVALID_ARGUMENT, "max_query_len");
  assert_int_equal(a, 7);
  assert_int_equal(b, 7);
  assert_int_equal(c, 7);
  assert_int_equal(d, 7);
  ts_batch_free(bad);
  ts_batch_free(good);
}

/* Ordered batches (decodes, then extends, then pure prefills) against a naive count. */
static void test_split_random(void** state) {
  uint64_t seed = 16;
  int round;
  (void)state;
  for (round = 0; round < 500; ++round) {
    int32_t q[24], s[24];
    const int64_t nd = ts_rand_range(&seed, 0, 8), ne = ts_rand_range(&seed, 0, 8),
                  np = ts_rand_range(&seed, 0, 8);
    const int64_t n = nd + ne + np;
    int64_t r, tokens = 0, dt = 0, et = 0, max_q = 0, longest_ctx = 0;
    ts_batch* b;
    if (n == 0) continue;
    for (r = 0; r < n; ++r) {
      if (r < nd) {
        q[r] = 1;
        s[r] = 1 + (int32_t)ts_rand_range(&seed, 0, 50);
      } else if (r < nd + ne) {
        q[r] = 2 + (int32_t)ts_rand_range(&seed, 0, 30);
        s[r] = q[r] + 1 + (int32_t)ts_rand_range(&seed, 0, 50);
      } else {
        q[r] = 2 + (int32_t)ts_rand_range(&seed, 0, 30);
        s[r] = q[r];
      }
      tokens += q[r];
      if (r < nd) dt += q[r];
      else if (r < nd + ne) et += q[r];
      if (q[r] > max_q) max_q = q[r];
      if (s[r] - q[r] > longest_ctx) longest_ctx = s[r] - q[r];
    }
    b = ts_batch_make(q, s, n, 16, 0, -1);
    /* decodes (one token), then extends (context); pure prefills count nowhere; a batch of
     * decodes only (max_query_len 1) is all decodes */
    expect(split(b), nd, ne, dt, et);
    assert_int_equal(dt + et + (tokens - dt - et), tokens);
    (void)max_q;
    {
      int32_t ctx[24];
      for (r = 0; r < n; ++r) ctx[r] = s[r] - q[r];
      assert_int_equal(skip_of(ctx, n), longest_ctx == 0);
    }
    ts_batch_free(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_should_skip),
      cmocka_unit_test(test_should_skip_bad_input),
      cmocka_unit_test(test_split_hand_checked),
      cmocka_unit_test(test_split_without_host_seq_lens),
      cmocka_unit_test(test_split_bad_input),
      cmocka_unit_test(test_split_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
