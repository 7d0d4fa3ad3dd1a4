/* attn_get_dcp_local_seq_lens, attn_reshape_query_for_spec_decode, attn_compute_slot_mapping,
 * attn_compute_flashinfer_kv_metadata, attn_compute_causal_conv1d_metadata,
 * attn_compute_token_to_req_indices (ABI 1.4): hand-checked values,
 * edge cases, seeded random inputs against naive computations, bad input. */
#include "test_support.h"

#define I32(data, shape) ts_host_tensor((data), 1, (shape), ATTN_DTYPE_INT, 32)
#define I64(data, shape) ts_host_tensor((data), 1, (shape), ATTN_DTYPE_INT, 64)

/* ---- DCP local lengths ------------------------------------------------------------------- */
/* Token i of a sequence is stored on rank (i / interleave) % size. */
static int32_t naive_dcp(int32_t len, int32_t size, int32_t rank, int32_t interleave) {
  int32_t i, n = 0;
  for (i = 0; i < len; ++i) n += (i / interleave) % size == rank;
  return n;
}

static void test_dcp_lengths(void** state) {
  uint64_t seed = 5;
  int iter;
  (void)state;
  for (iter = 0; iter < 1000; ++iter) {
    int32_t seq[32], out[32 * 8];
    const int64_t n = ts_rand_range(&seed, 0, 32);
    const int32_t size = (int32_t)ts_rand_range(&seed, 1, 8);
    const int32_t interleave = (int32_t)ts_rand_range(&seed, 1, 16);
    const int32_t rank = ts_rand_range(&seed, 0, 1) ? (int32_t)ts_rand_range(&seed, 0, size - 1)
                                                    : ATTN_DCP_ALL_RANKS;
    int64_t s_shape[1] = {n}, o_shape[2] = {n, size}, i;
    attn_tensor_t st = I32(seq, s_shape), ot;
    int k;
    for (i = 0; i < n; ++i) seq[i] = (int32_t)ts_rand_range(&seed, 0, 3000);
    /* every rank: (n, size), also (n, 1) for size 1 as vLLM 0.33 returns; the (n,) output of
     * libattn 1.3 stays accepted for size 1 */
    if (rank == ATTN_DCP_ALL_RANKS && (size > 1 || ts_rand_range(&seed, 0, 1)))
      ot = ts_host_tensor(out, 2, o_shape, ATTN_DTYPE_INT, 32);
    else
      ot = I32(out, s_shape);
    ASSERT_OK(attn_get_dcp_local_seq_lens(&st, size, rank, interleave, &ot, NULL));
    for (i = 0; i < n; ++i) {
      if (rank >= 0) {
        assert_int_equal(out[i], naive_dcp(seq[i], size, rank, interleave));
      } else if (size == 1) {
        assert_int_equal(out[i], seq[i]); /* (n, 1) or (n,) */
      } else {
        int32_t sum = 0;
        for (k = 0; k < size; ++k) {
          assert_int_equal(out[i * size + k], naive_dcp(seq[i], size, k, interleave));
          sum += out[i * size + k];
        }
        assert_int_equal(sum, seq[i]);
      }
    }
  }
}

static void test_dcp_bad_input(void** state) {
  int32_t seq[2] = {5, 6}, out[4];
  int64_t s_shape[1] = {2}, o_shape[2] = {2, 2};
  attn_tensor_t st = I32(seq, s_shape), ot = I32(out, s_shape);
  attn_tensor_t both = ts_host_tensor(out, 2, o_shape, ATTN_DTYPE_INT, 32);
  (void)state;
  ASSERT_ERROR(attn_get_dcp_local_seq_lens(&st, 2, 2, 1, &ot, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "dcp_rank=2 is not in [-1, dcp_size=2)");
  ASSERT_ERROR(attn_get_dcp_local_seq_lens(&st, 0, 0, 1, &ot, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "dcp_size=0 must be positive");
  ASSERT_ERROR(attn_get_dcp_local_seq_lens(&st, 2, 0, 0, &ot, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "cp_kv_cache_interleave_size=0 must be positive");
  ASSERT_ERROR(attn_get_dcp_local_seq_lens(&st, 2, ATTN_DCP_ALL_RANKS, 1, &ot, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out must be a compact (2, 2) tensor for every rank");
  ASSERT_ERROR(attn_get_dcp_local_seq_lens(&st, 2, 0, 1, &both, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out has ndim=2, expected 1");
  /* dcp_size 1, every rank: (n, 1) (vLLM 0.33's shape), not (n, 2) */
  ASSERT_ERROR(attn_get_dcp_local_seq_lens(&st, 1, ATTN_DCP_ALL_RANKS, 1, &both, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out must be a compact (2, 1) tensor for every rank");
  seq[1] = -1;
  ASSERT_ERROR(attn_get_dcp_local_seq_lens(&st, 2, 0, 1, &ot, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "seq_lens[1]=-1 is negative");
  ASSERT_ERROR(attn_get_dcp_local_seq_lens(NULL, 2, 0, 1, &ot, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "seq_lens is NULL");
  ASSERT_ERROR(attn_get_dcp_local_seq_lens(&st, 2, 0, 1, NULL, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out is NULL");
}

/* ---- compute_token_to_req_indices ------------------------------------------------------------- */
/* Naive: the request whose query holds token t (the last when none does; -1 without requests);
 * 0 from num_mapped on. */
static int32_t naive_token_req(const int32_t* qsl, int64_t n, int64_t t, int64_t num_mapped) {
  int64_t r;
  if (t >= num_mapped) return 0;
  for (r = 0; r < n; ++r)
    if (t < qsl[r + 1]) return (int32_t)r;
  return (int32_t)(n - 1);
}

static void test_token_to_req_hand_checked(void** state) {
  /* values of vLLM 0.33's Triton kernel (_token_request: the first r with qsl[r + 1] > t,
   * clipped to num_reqs - 1), worked by hand: an empty request is skipped, tokens past the batch
   * map to the last request, unmapped tokens to 0, and with no request to -1 */
  static const struct {
    int32_t nq, qsl[4];
    int64_t mapped, tokens;
    int32_t want[8];
  } cases[] = {
      {4, {0, 3, 3, 5}, 5, 7, {0, 0, 0, 2, 2, 0, 0}},
      {3, {0, 2, 4}, 6, 6, {0, 0, 1, 1, 1, 1}},
      {1, {0}, 2, 3, {-1, -1, 0}},
      {3, {0, 0, 1}, 1, 1, {1}},
      {3, {0, 2, 4}, 0, 0, {0}},
  };
  size_t c;
  (void)state;
  for (c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    int32_t qsl[4], out[8];
    int64_t qs[1], os[1] = {8}, t;
    attn_tensor_t qt, ot = I32(out, os);
    memcpy(qsl, cases[c].qsl, sizeof qsl);
    qs[0] = cases[c].nq;
    qt = I32(qsl, qs);
    for (t = 0; t < 8; ++t) out[t] = -9;
    ASSERT_OK(attn_compute_token_to_req_indices(&qt, &ot, cases[c].mapped, cases[c].tokens, NULL));
    for (t = 0; t < cases[c].tokens; ++t) assert_int_equal(out[t], cases[c].want[t]);
    for (; t < 8; ++t) assert_int_equal(out[t], -9); /* entries from num_tokens on: untouched */
  }
}

static void test_token_to_req_random(void** state) {
  uint64_t seed = 21;
  int iter;
  (void)state;
  for (iter = 0; iter < 1000; ++iter) {
    int32_t q[65], out[700];
    const int64_t n = ts_rand_range(&seed, 0, 64);
    int64_t qs[1] = {n + 1}, os[1] = {700}, r, t, tokens, mapped;
    attn_tensor_t qt = I32(q, qs), ot = I32(out, os);
    q[0] = 0;
    for (r = 0; r < n; ++r) q[r + 1] = q[r] + (int32_t)ts_rand_range(&seed, 0, 8);
    tokens = ts_rand_range(&seed, 0, q[n] + 20);
    mapped = ts_rand_range(&seed, 0, q[n] + 20);
    ASSERT_OK(attn_compute_token_to_req_indices(&qt, &ot, mapped, tokens, NULL));
    for (t = 0; t < tokens; ++t)
      if (out[t] != naive_token_req(q, n, t, mapped))
        fail_msg("iteration %d: token %lld maps to %d, expected %d", iter, (long long)t, out[t],
                 naive_token_req(q, n, t, mapped));
  }
}

/* Offsets that are not sorted (the utility does not check their order): every entry below
 * num_tokens is still written, with a request index (or 0 past num_mapped), none past it. */
static void test_token_to_req_unsorted_writes_every_token(void** state) {
  uint64_t seed = 22;
  int iter;
  (void)state;
  for (iter = 0; iter < 1000; ++iter) {
    int32_t q[33], out[300];
    const int64_t n = ts_rand_range(&seed, 1, 32);
    int64_t qs[1] = {n + 1}, os[1] = {300}, r, t, tokens, mapped;
    attn_tensor_t qt = I32(q, qs), ot = I32(out, os);
    for (r = 0; r <= n; ++r) q[r] = (int32_t)ts_rand_range(&seed, -20, 200);
    tokens = ts_rand_range(&seed, 0, 250);
    mapped = ts_rand_range(&seed, 0, 260);
    for (t = 0; t < 300; ++t) out[t] = -9;
    ASSERT_OK(attn_compute_token_to_req_indices(&qt, &ot, mapped, tokens, NULL));
    for (t = 0; t < tokens; ++t)
      if (t < mapped ? out[t] < 0 || out[t] >= n : out[t] != 0)
        fail_msg("iteration %d: token %lld of %lld (mapped %lld) holds %d", iter, (long long)t,
                 (long long)tokens, (long long)mapped, out[t]);
    for (; t < 300; ++t) assert_int_equal(out[t], -9);
  }
}

static void test_token_to_req_bad_input(void** state) {
  int32_t q[3] = {0, 2, 5}, out[4] = {-9, -9, -9, -9};
  int64_t qs[1] = {3}, os[1] = {4}, zero[1] = {0}, two[2] = {3, 1};
  attn_tensor_t qt = I32(q, qs), ot = I32(out, os), empty = I32(q, zero);
  attn_tensor_t q2d = ts_host_tensor(q, 2, two, ATTN_DTYPE_INT, 32);
  attn_tensor_t q64 = I64(q, zero), o64 = I64(out, os);
  (void)state;
  ASSERT_ERROR(attn_compute_token_to_req_indices(NULL, &ot, 4, 4, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "query_start_loc is NULL");
  ASSERT_ERROR(attn_compute_token_to_req_indices(&qt, NULL, 4, 4, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out is NULL");
  ASSERT_ERROR(attn_compute_token_to_req_indices(&qt, &ot, 4, 5, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out has 4 entries but 5 are needed");
  ASSERT_ERROR(attn_compute_token_to_req_indices(&qt, &ot, -1, 4, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "num_mapped_tokens=-1 is negative");
  ASSERT_ERROR(attn_compute_token_to_req_indices(&qt, &ot, 4, -2, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "num_tokens=-2 is negative");
  ASSERT_ERROR(attn_compute_token_to_req_indices(&qt, &ot, 4, (int64_t)1 << 31, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "num_tokens=2147483648 exceeds 2^31-1");
  ASSERT_ERROR(attn_compute_token_to_req_indices(&empty, &ot, 4, 4, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "query_start_loc has no entries");
  ASSERT_ERROR(attn_compute_token_to_req_indices(&q2d, &ot, 4, 4, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "query_start_loc has ndim=2, expected 1");
  q64.shape = qs;
  ASSERT_ERROR(attn_compute_token_to_req_indices(&q64, &ot, 4, 4, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "query_start_loc");
  ASSERT_ERROR(attn_compute_token_to_req_indices(&qt, &o64, 4, 4, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out");
  assert_int_equal(out[0], -9); /* untouched by every failure */
}

/* ---- reshape_query_for_spec_decode ------------------------------------------------------------ */
static void test_reshape(void** state) {
  float data[12 * 2 * 4];
  int64_t shape[3] = {12, 2, 4}, out_shape[4], out_strides[4];
  attn_tensor_t q = ts_host_tensor(data, 3, shape, ATTN_DTYPE_FLOAT, 32), v;
  (void)state;
  q.byte_offset = 16;
  ASSERT_OK(attn_reshape_query_for_spec_decode(&q, 3, &v, out_shape, out_strides));
  assert_ptr_equal(v.data, data);
  assert_int_equal(v.byte_offset, 16);
  assert_int_equal(v.ndim, 4);
  assert_ptr_equal(v.shape, out_shape);
  assert_int_equal(out_shape[0], 3);
  assert_int_equal(out_shape[1], 4);
  assert_int_equal(out_shape[2], 2);
  assert_int_equal(out_shape[3], 4);
  assert_int_equal(out_strides[0], 32);
  assert_int_equal(out_strides[1], 8);
  assert_int_equal(out_strides[2], 4);
  assert_int_equal(out_strides[3], 1);
  v.ndim = -5;
  ASSERT_ERROR(attn_reshape_query_for_spec_decode(&q, 5, &v, out_shape, out_strides),
               ATTN_ERR_INVALID_ARGUMENT, "total_tokens=12 is not divisible by batch_size=5");
  assert_int_equal(v.ndim, -5);
  ASSERT_ERROR(attn_reshape_query_for_spec_decode(&q, 0, &v, out_shape, out_strides),
               ATTN_ERR_INVALID_ARGUMENT, "batch_size=0 must be positive");
  q.ndim = 2;
  ASSERT_ERROR(attn_reshape_query_for_spec_decode(&q, 3, &v, out_shape, out_strides),
               ATTN_ERR_INVALID_ARGUMENT, "query must be 3D, got 2D");
  ASSERT_ERROR(attn_reshape_query_for_spec_decode(&q, 3, NULL, out_shape, out_strides),
               ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
}

/* ---- compute_slot_mapping ---------------------------------------------------------------------- */
/* The slot of one position: with DCP the rank's local offset is the count of this rank's tokens
 * before it in its virtual block (virtual block = block_size * size tokens, groups of
 * `interleave` tokens dealt round-robin to the ranks). */
static int64_t naive_slot(const int32_t* row, int64_t pos, int32_t bs, int32_t size, int32_t rank,
                          int32_t il) {
  const int64_t vb = (int64_t)bs * size, block = pos / vb, start = block * vb;
  int64_t p, local = 0;
  if (((pos - start) / il) % size != rank) return ATTN_PAD_SLOT_ID;
  for (p = start; p < pos; ++p) local += ((p - start) / il) % size == rank;
  return (int64_t)row[block] * bs + local;
}

static void test_slot_mapping_random(void** state) {
  uint64_t seed = 11;
  int iter;
  (void)state;
  for (iter = 0; iter < 1000; ++iter) {
    enum { kWidth = 16 };
    int32_t qsl[17], bt[16 * kWidth];
    int64_t pos[600], slots[700];
    const int64_t n = ts_rand_range(&seed, 0, 16);
    const int32_t sizes[3] = {1, 2, 4}, bss[3] = {16, 8, 4};
    const int32_t size = sizes[ts_rand_range(&seed, 0, 2)], bs = bss[ts_rand_range(&seed, 0, 2)];
    const int32_t rank = (int32_t)ts_rand_range(&seed, 0, size - 1);
    const int32_t il = bs % 2 == 0 && ts_rand_range(&seed, 0, 1) ? 2 : 1;
    int64_t r, t = 0, max_tokens;
    int64_t qsl_shape[1] = {n + 1}, bt_shape[2] = {n > 0 ? n : 1, kWidth}, pos_shape[1], sm_shape[1];
    attn_slot_mapping_args_t a = ATTN_SLOT_MAPPING_ARGS_INIT;
    attn_tensor_t qt, pt, btt, smt;
    qsl[0] = 0;
    for (r = 0; r < n; ++r) {
      const int64_t ctx = ts_rand_range(&seed, 0, 100), q = ts_rand_range(&seed, 0, 30);
      int64_t k;
      for (k = 0; k < q; ++k) pos[t++] = ctx + k;
      qsl[r + 1] = (int32_t)t;
      for (k = 0; k < kWidth; ++k) bt[r * kWidth + k] = (int32_t)ts_rand_range(&seed, 1, 1000);
    }
    /* positions must fit the table: keep ctx + q < bs * size * width */
    for (r = 0; r < t; ++r) pos[r] %= (int64_t)bs * size * kWidth;
    max_tokens = t + ts_rand_range(&seed, 0, 20);
    for (r = 0; r < max_tokens; ++r) slots[r] = 12345;
    pos_shape[0] = t;
    sm_shape[0] = max_tokens;
    qt = I32(qsl, qsl_shape);
    pt = I64(pos, pos_shape);
    btt = ts_host_tensor(bt, 2, bt_shape, ATTN_DTYPE_INT, 32);
    smt = I64(slots, sm_shape);
    a.query_start_loc = &qt;
    a.num_reqs = n;
    a.positions = &pt;
    a.block_table = &btt;
    a.block_size = bs;
    a.dcp_world_size = size;
    a.dcp_rank = rank;
    a.cp_kv_cache_interleave_size = il;
    a.slot_mapping = &smt;
    ASSERT_OK(attn_compute_slot_mapping(&a, NULL));
    for (r = 0; r < n; ++r) {
      int64_t k;
      for (k = qsl[r]; k < qsl[r + 1]; ++k)
        assert_int_equal(slots[k], naive_slot(&bt[r * kWidth], pos[k], bs, size, rank, il));
    }
    for (r = t; r < max_tokens; ++r) assert_int_equal(slots[r], ATTN_PAD_SLOT_ID);
  }
}

static void test_slot_mapping_bad_input(void** state) {
  int32_t qsl[3] = {0, 2, 3}, bt[2 * 2] = {5, 6, 7, 8};
  int64_t pos[3] = {0, 17, 40}, slots[4];
  int64_t qs[1] = {3}, ps[1] = {3}, bs[2] = {2, 2}, ss[1] = {4}, short_s[1] = {2};
  attn_tensor_t qt = I32(qsl, qs), pt = I64(pos, ps), bt2 = ts_host_tensor(bt, 2, bs, ATTN_DTYPE_INT, 32);
  attn_tensor_t st = I64(slots, ss), short_t = I64(slots, short_s), dq;
  attn_slot_mapping_args_t a = ATTN_SLOT_MAPPING_ARGS_INIT;
  (void)state;
  a.query_start_loc = &qt;
  a.num_reqs = 2;
  a.positions = &pt;
  a.block_table = &bt2;
  a.block_size = 16;
  a.slot_mapping = &st;
  /* position 40 of request 1 needs block 2 of a 2-column table */
  ASSERT_ERROR(attn_compute_slot_mapping(&a, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "args->positions[2]=40 needs block 2 of args->block_table row 1, which has 2 columns");
  pos[2] = 20;
  ASSERT_OK(attn_compute_slot_mapping(&a, NULL));
  assert_int_equal(slots[0], 5 * 16);
  assert_int_equal(slots[1], 6 * 16 + 1);
  assert_int_equal(slots[2], 8 * 16 + 4);
  assert_int_equal(slots[3], ATTN_PAD_SLOT_ID);
  a.slot_mapping = &short_t;
  ASSERT_ERROR(attn_compute_slot_mapping(&a, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "args->slot_mapping has 2 entries but 3 are needed");
  a.slot_mapping = &st;
  a.block_size = 0;
  ASSERT_ERROR(attn_compute_slot_mapping(&a, NULL), ATTN_ERR_INVALID_ARGUMENT, "args->block_size=0");
  a.block_size = 16;
  a.dcp_world_size = 2;
  a.dcp_rank = 2;
  ASSERT_ERROR(attn_compute_slot_mapping(&a, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "args->dcp_rank=2 is not in [0, args->dcp_world_size=2)");
  a.dcp_rank = 0;
  a.cp_kv_cache_interleave_size = 3;
  ASSERT_ERROR(attn_compute_slot_mapping(&a, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "args->block_size=16 is not a multiple of args->cp_kv_cache_interleave_size=3");
  a.cp_kv_cache_interleave_size = 1;
  a.dcp_world_size = 1;
  qsl[1] = 3;
  qsl[2] = 2;
  ASSERT_ERROR(attn_compute_slot_mapping(&a, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "args->query_start_loc[2]=2 is less than args->query_start_loc[1]=3");
  qsl[1] = 2;
  qsl[2] = 4;
  ASSERT_ERROR(attn_compute_slot_mapping(&a, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "args->query_start_loc[2]=4 exceeds the 3 positions");
  qsl[2] = 3;
  pos[0] = -1;
  ASSERT_ERROR(attn_compute_slot_mapping(&a, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "args->positions[0]=-1 is negative");
  pos[0] = 0;
  dq = qt;
  dq.device.device_type = ATTN_DEVICE_CUDA;
  a.query_start_loc = &dq;
  ASSERT_ERROR(attn_compute_slot_mapping(&a, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "args->positions is on cpu but the op runs on cuda:0");
  a.query_start_loc = &qt;
  a.struct_size = 8;
  ASSERT_ERROR(attn_compute_slot_mapping(&a, NULL), ATTN_ERR_INVALID_ARGUMENT, "args->struct_size=8");
  ASSERT_ERROR(attn_compute_slot_mapping(NULL, NULL), ATTN_ERR_INVALID_ARGUMENT, "args is NULL");
}

/* ---- FlashInfer paged KV ---------------------------------------------------------------------- */
static void test_paged_kv_hand_checked(void** state) {
  int32_t seq[4] = {33, 16, 0, 1}, bt[4 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  int32_t indptr[5], indices[8], last[4];
  int64_t ss[1] = {4}, bs[2] = {4, 3}, is[1] = {5}, xs[1] = {8}, ls[1] = {4}, pages = -1;
  attn_tensor_t st = I32(seq, ss), btt = ts_host_tensor(bt, 2, bs, ATTN_DTYPE_INT, 32);
  attn_tensor_t ip = I32(indptr, is), ix = I32(indices, xs), lp = I32(last, ls);
  static const int32_t want_indptr[5] = {0, 3, 4, 4, 5}, want_indices[5] = {1, 2, 3, 4, 10};
  static const int32_t want_last[4] = {1, 16, 0, 1};
  int i;
  (void)state;
  ASSERT_OK(attn_compute_flashinfer_kv_metadata(&st, NULL, &btt, 16, &ip, &ix, &lp, &pages, NULL));
  assert_int_equal(pages, 5);
  for (i = 0; i < 5; ++i) assert_int_equal(indptr[i], want_indptr[i]);
  for (i = 0; i < 5; ++i) assert_int_equal(indices[i], want_indices[i]);
  for (i = 0; i < 4; ++i) assert_int_equal(last[i], want_last[i]); /* 0 stays 0; 16 -> 16 */
}

static void test_paged_kv_random(void** state) {
  uint64_t seed = 17;
  int iter;
  (void)state;
  for (iter = 0; iter < 1000; ++iter) {
    enum { kWidth = 40 };
    int32_t seq[64], bt[64 * kWidth], indptr[65], indices[64 * kWidth], last[64];
    const int64_t n = ts_rand_range(&seed, 0, 64);
    const int32_t page = (int32_t)(ts_rand_range(&seed, 0, 1) ? 16 : 64);
    int64_t ss[1] = {n}, bs[2] = {n > 0 ? n : 1, kWidth}, is[1] = {n + 1}, xs[1] = {64 * kWidth},
            ls[1] = {n > 0 ? n : 1}, pages = -1, r, k, off = 0;
    attn_tensor_t st = I32(seq, ss), btt = ts_host_tensor(bt, 2, bs, ATTN_DTYPE_INT, 32);
    attn_tensor_t ip = I32(indptr, is), ix = I32(indices, xs), lp = I32(last, ls);
    for (r = 0; r < n; ++r) {
      seq[r] = (int32_t)ts_rand_range(&seed, 0, page * kWidth);
      for (k = 0; k < kWidth; ++k) bt[r * kWidth + k] = (int32_t)ts_rand_range(&seed, 0, 99999);
    }
    ASSERT_OK(attn_compute_flashinfer_kv_metadata(&st, NULL, &btt, page, &ip, &ix, &lp, &pages, NULL));
    assert_int_equal(indptr[0], 0);
    for (r = 0; r < n; ++r) {
      const int64_t np = (seq[r] + page - 1) / page;
      for (k = 0; k < np; ++k) assert_int_equal(indices[off + k], bt[r * kWidth + k]);
      off += np;
      assert_int_equal(indptr[r + 1], off);
      assert_int_equal(last[r], seq[r] == 0 ? 0 : (seq[r] % page == 0 ? page : seq[r] % page));
    }
    assert_int_equal(pages, off);
  }
}

static void test_paged_kv_large(void** state) {
  /* 4096 requests of up to 2048 tokens (128 pages of 16): the largest batch the tests build */
  enum { kN = 4096, kWidth = 128 };
  static int32_t seq[kN], bt[kN * kWidth], indptr[kN + 1], indices[kN * kWidth], last[kN];
  int64_t ss[1] = {kN}, bs[2] = {kN, kWidth}, is[1] = {kN + 1}, xs[1] = {kN * kWidth}, pages = 0, r, total = 0;
  attn_tensor_t st = I32(seq, ss), btt = ts_host_tensor(bt, 2, bs, ATTN_DTYPE_INT, 32);
  attn_tensor_t ip = I32(indptr, is), ix = I32(indices, xs), lp = I32(last, ss);
  uint64_t seed = 8;
  (void)state;
  for (r = 0; r < kN * kWidth; ++r) bt[r] = (int32_t)r;
  for (r = 0; r < kN; ++r) {
    seq[r] = (int32_t)ts_rand_range(&seed, 0, 16 * kWidth);
    total += (seq[r] + 15) / 16;
  }
  ASSERT_OK(attn_compute_flashinfer_kv_metadata(&st, NULL, &btt, 16, &ip, &ix, &lp, &pages, NULL));
  assert_int_equal(pages, total);
  assert_int_equal(indptr[kN], total);
  for (r = 0; r < kN; ++r) {
    int64_t j;
    assert_int_equal(indptr[r + 1] - indptr[r], (seq[r] + 15) / 16);
    for (j = indptr[r]; j < indptr[r + 1]; ++j)
      assert_int_equal(indices[j], bt[r * kWidth + (j - indptr[r])]);
  }
}

static void test_paged_kv_bad_input(void** state) {
  int32_t seq[2] = {40, 8}, bt[2 * 2] = {1, 2, 3, 4}, indptr[3], indices[8], last[2];
  int64_t ss[1] = {2}, bs[2] = {2, 2}, is[1] = {3}, small_is[1] = {2}, xs[1] = {8}, ls[1] = {2}, pages = -7;
  attn_tensor_t st = I32(seq, ss), btt = ts_host_tensor(bt, 2, bs, ATTN_DTYPE_INT, 32);
  attn_tensor_t ip = I32(indptr, is), small_ip = I32(indptr, small_is), ix = I32(indices, xs), lp = I32(last, ls);
  attn_tensor_t dev = st;
  (void)state;
  ASSERT_ERROR(attn_compute_flashinfer_kv_metadata(&st, NULL, &btt, 16, &ip, &ix, &lp, &pages, NULL),
               ATTN_ERR_INVALID_ARGUMENT,
               "request 0 needs cdiv(seq_lens[0]=40, page_size=16)=3 pages but block_table has 2 columns");
  seq[0] = 20;
  ASSERT_ERROR(attn_compute_flashinfer_kv_metadata(&st, NULL, &btt, 16, &small_ip, &ix, &lp, &pages, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_indptr has 2 entries but 3 are needed");
  ASSERT_ERROR(attn_compute_flashinfer_kv_metadata(&st, NULL, &btt, 0, &ip, &ix, &lp, &pages, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "page_size=0 must be positive");
  dev.device.device_type = ATTN_DEVICE_CUDA;
  ASSERT_ERROR(attn_compute_flashinfer_kv_metadata(&dev, NULL, &btt, 16, &ip, &ix, &lp, &pages, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "seq_lens_cpu is NULL; it is required when seq_lens is on cuda:0");
  ASSERT_ERROR(attn_compute_flashinfer_kv_metadata(&st, NULL, &btt, 16, &ip, &ix, &lp, NULL, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_num_pages is NULL");
  assert_int_equal(pages, -7);
}

/* ---- causal conv1d metadata ---------------------------------------------------------------- */
static void test_conv1d(void** state) {
  int32_t qsl[4] = {0, 9, 9, 25}, batch[2048], off[2048], nums[3];
  int64_t qs[1] = {4}, bs[1] = {2048}, ns[1] = {3};
  attn_tensor_t qt = I32(qsl, qs), bt = I32(batch, bs), ot = I32(off, bs), nt = I32(nums, ns);
  attn_conv1d_info_t info = ATTN_CONV1D_INFO_INIT;
  static const int32_t want_batch[4] = {0, 0, 2, 2}, want_off[4] = {0, 1, 0, 1};
  int i;
  (void)state;
  ASSERT_OK(attn_compute_causal_conv1d_metadata(&qt, &qt, &bt, &ot, &nt, &info, NULL));
  assert_int_equal(info.tot, 4);           /* cdiv(9, 8) + cdiv(0, 8) + cdiv(16, 8) */
  assert_int_equal(info.num_programs, 2048); /* max(1024, 4) * 2 */
  assert_int_equal(nums[0], 2);
  assert_int_equal(nums[1], 0);
  assert_int_equal(nums[2], 2);
  for (i = 0; i < 4; ++i) {
    assert_int_equal(batch[i], want_batch[i]);
    assert_int_equal(off[i], want_off[i]);
  }
  for (i = 4; i < 2048; ++i) {
    assert_int_equal(batch[i], ATTN_PAD_SLOT_ID);
    assert_int_equal(off[i], ATTN_PAD_SLOT_ID);
  }
}

static void test_conv1d_large_and_bad(void** state) {
  /* 300 requests of 64 tokens: 2400 programs > 1024 -> 4800 entries */
  static int32_t qsl[301], batch[4800], off[4800];
  int64_t qs[1] = {301}, bs[1] = {4800}, small[1] = {4799};
  attn_tensor_t qt = I32(qsl, qs), bt = I32(batch, bs), ot = I32(off, bs), sbt = I32(batch, small);
  attn_conv1d_info_t info = ATTN_CONV1D_INFO_INIT;
  int i;
  (void)state;
  for (i = 0; i <= 300; ++i) qsl[i] = 64 * i;
  ASSERT_OK(attn_compute_causal_conv1d_metadata(&qt, &qt, &bt, &ot, NULL, &info, NULL));
  assert_int_equal(info.tot, 2400);
  assert_int_equal(info.num_programs, 4800);
  for (i = 0; i < 2400; ++i) {
    assert_int_equal(batch[i], i / 8);
    assert_int_equal(off[i], i % 8);
  }
  assert_int_equal(batch[2400], ATTN_PAD_SLOT_ID);
  ASSERT_ERROR(attn_compute_causal_conv1d_metadata(&qt, &qt, &sbt, &ot, NULL, &info, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_batch_ptr has 4799 entries but 4800 are needed");
  qsl[5] = 0;
  ASSERT_ERROR(attn_compute_causal_conv1d_metadata(&qt, &qt, &bt, &ot, NULL, &info, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "query_start_loc_p_cpu[5]=0 is less than query_start_loc_p_cpu[4]=256");
  info.struct_size = 4;
  ASSERT_ERROR(attn_compute_causal_conv1d_metadata(&qt, &qt, &bt, &ot, NULL, &info, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "info->struct_size=4");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dcp_lengths),           cmocka_unit_test(test_dcp_bad_input),
      cmocka_unit_test(test_reshape),               cmocka_unit_test(test_slot_mapping_random),
      cmocka_unit_test(test_slot_mapping_bad_input), cmocka_unit_test(test_paged_kv_hand_checked),
      cmocka_unit_test(test_paged_kv_random),       cmocka_unit_test(test_paged_kv_large),
      cmocka_unit_test(test_paged_kv_bad_input),
      cmocka_unit_test(test_conv1d),                cmocka_unit_test(test_conv1d_large_and_bad),
      cmocka_unit_test(test_token_to_req_hand_checked), cmocka_unit_test(test_token_to_req_random),
      cmocka_unit_test(test_token_to_req_unsorted_writes_every_token),
      cmocka_unit_test(test_token_to_req_bad_input),
  };
  return cmocka_run_group_tests_name("tensor_utilities", tests, NULL, NULL);
}
