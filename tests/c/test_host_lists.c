/* attn_reorder_batch_to_split_decodes_and_prefills (and its vLLM 0.33 four-region _v2, ABI 1.4),
 * attn_split_prefill_chunks and the multimodal PrefixLM helpers (ABI 1.4): hand-checked cases,
 * vLLM 0.33.0's own answers, properties over seeded random batches, bad input. */
#include "test_support.h"

static int64_t reorder(const int32_t* sched, const int32_t* comp, int64_t n, int32_t th,
                       int32_t* swaps) {
  int64_t count = -1;
  ASSERT_OK(attn_reorder_batch_to_split_decodes_and_prefills(sched, comp, n, th, swaps, n, &count));
  return count;
}

static void test_reorder_hand_checked(void** state) {
  /* regions: [prefill, decode, extend, decode] -> target [decode, decode, extend, prefill]
   * misplaced: 0 (P, wants D), 3 (D, wants P); sources stable by region: 3 (D), 0 (P):
   * 3 -> 0, 0 -> 3: one swap (3, 0). */
  static const int32_t sched[4] = {7, 1, 5, 1}, comp[4] = {0, 10, 20, 30};
  static const int32_t sorted_sched[3] = {1, 1, 9}, sorted_comp[3] = {4, 5, 0};
  int32_t swaps[8];
  (void)state;
  assert_int_equal(reorder(sched, comp, 4, 1, swaps), 1);
  assert_int_equal(swaps[0], 3);
  assert_int_equal(swaps[1], 0);
  assert_int_equal(reorder(sorted_sched, sorted_comp, 3, 1, swaps), 0); /* already ordered */
  assert_int_equal(reorder(NULL, NULL, 0, 1, swaps), 0);
}

static void test_reorder_cycle(void** state) {
  /* [E, P, D]: targets [D, E, P]; all misplaced; sources sorted by region: 2 (D), 0 (E), 1 (P)
   * map 2->0, 0->1, 1->2; vLLM: src=2: swap(2,0), then dst=map[0]=1: swap(2,1), then dst=2 stop. */
  static const int32_t sched[3] = {6, 6, 1}, comp[3] = {3, 0, 3};
  int32_t swaps[6];
  (void)state;
  assert_int_equal(reorder(sched, comp, 3, 1, swaps), 2);
  assert_int_equal(swaps[0], 2);
  assert_int_equal(swaps[1], 0);
  assert_int_equal(swaps[2], 2);
  assert_int_equal(swaps[3], 1);
}

/* Region of a request, as vLLM defines it. */
static int region(int32_t sched, int32_t comp, int32_t th) {
  if (comp == 0) return 2;
  return sched <= th ? 0 : 1;
}

static void test_reorder_random(void** state) {
  uint64_t seed = 7;
  int iter;
  (void)state;
  for (iter = 0; iter < 2000; ++iter) {
    int32_t sched[64], comp[64], perm[64], swaps[128], expect[64];
    const int64_t n = ts_rand_range(&seed, 0, 64);
    const int32_t th = (int32_t)ts_rand_range(&seed, 1, 4);
    int64_t i, k, count, nd = 0, ne = 0, misplaced[64], nm = 0;
    for (i = 0; i < n; ++i) {
      sched[i] = (int32_t)ts_rand_range(&seed, 1, 8);
      comp[i] = ts_rand_range(&seed, 0, 2) ? (int32_t)ts_rand_range(&seed, 1, 100) : 0;
      perm[i] = (int32_t)i;
      nd += region(sched[i], comp[i], th) == 0;
      ne += region(sched[i], comp[i], th) == 1;
    }
    count = reorder(sched, comp, n, th, swaps);
    assert_true(count < (n > 0 ? n : 1));
    /* apply the swaps to the identity: perm[pos] = the original request now at pos */
    for (k = 0; k < count; ++k) {
      const int32_t a = swaps[2 * k], b = swaps[2 * k + 1], t = perm[a];
      assert_true(a >= 0 && a < n && b >= 0 && b < n && a != b);
      perm[a] = perm[b];
      perm[b] = t;
    }
    /* expected: positions whose region is wrong receive the misplaced requests, stably sorted
     * by region; every other position keeps its request */
    for (i = 0; i < n; ++i) {
      const int target = i < nd ? 0 : (i < nd + ne ? 1 : 2);
      expect[i] = (int32_t)i;
      if (region(sched[i], comp[i], th) != target) misplaced[nm++] = i;
    }
    {
      int64_t out = 0;
      int r;
      for (r = 0; r <= 2; ++r)
        for (k = 0; k < nm; ++k)
          if (region(sched[misplaced[k]], comp[misplaced[k]], th) == r)
            expect[misplaced[out++]] = (int32_t)misplaced[k];
    }
    for (i = 0; i < n; ++i)
      if (perm[i] != expect[i])
        fail_msg("iteration %d: position %lld holds request %d, expected %d", iter, (long long)i,
                 perm[i], expect[i]);
    assert_int_equal(count == 0, nm == 0);
  }
}

static void test_reorder_bad_input(void** state) {
  static const int32_t sched[3] = {6, 6, 1}, comp[3] = {3, 0, 3}, neg[3] = {1, -2, 1};
  int32_t swaps[6];
  int64_t count = -7;
  (void)state;
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills(sched, comp, 3, 1, swaps, 1, &count),
               ATTN_ERR_INVALID_ARGUMENT, "swaps_capacity=1 is smaller than the 2 swaps this batch needs");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills(NULL, comp, 3, 1, swaps, 3, &count),
               ATTN_ERR_INVALID_ARGUMENT, "num_scheduled_tokens is NULL but num_reqs=3");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills(sched, neg, 3, 1, swaps, 3, &count),
               ATTN_ERR_INVALID_ARGUMENT, "num_computed_tokens[1]=-2 is negative");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills(sched, comp, -1, 1, swaps, 3, &count),
               ATTN_ERR_INVALID_ARGUMENT, "num_reqs=-1 is negative");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills(sched, comp, 3, -1, swaps, 3, &count),
               ATTN_ERR_INVALID_ARGUMENT, "decode_threshold=-1 is negative");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills(sched, comp, 3, 1, NULL, 3, &count),
               ATTN_ERR_INVALID_ARGUMENT, "out_swaps is NULL");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills(sched, comp, 3, 1, swaps, 3, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_num_swaps is NULL");
  assert_int_equal(count, -7);
}

/* ---- the four-region reorder (vLLM 0.33) ------------------------------------------------------ */

static int64_t reorder_v2(const int32_t* sched, const int32_t* comp, const int32_t* prompt,
                          int64_t n, int32_t th, int32_t* swaps) {
  int64_t count = -1;
  ASSERT_OK(attn_reorder_batch_to_split_decodes_and_prefills_v2(sched, comp, prompt, n, th, swaps,
                                                                n, &count));
  return count;
}

static void expect_swaps(const int32_t* swaps, int64_t count, const int32_t* want, int64_t n) {
  int64_t k;
  if (count != n) fail_msg("%lld swaps, expected %lld", (long long)count, (long long)n);
  for (k = 0; k < 2 * n; ++k)
    if (swaps[k] != want[k])
      fail_msg("swap %lld is (%d, %d), expected (%d, %d)", (long long)k / 2, swaps[k & ~1],
               swaps[k | 1], want[k & ~1], want[k | 1]);
}

/* The swap_states calls vLLM 0.33.0's reorder_batch_to_split_decodes_and_prefills makes (run in
 * its virtual environment on these batches). */
static void test_reorder_v2_vllm_cases(void** state) {
  /* the example: request 0 is a short extend (10 of 20 prompt tokens computed), request
   * 1 a decode: 0.33 swaps them, the three-region reorder does not */
  static const int32_t s1[2] = {1, 1}, c1[2] = {10, 10}, p1[2] = {20, 5}, w1[2] = {1, 0};
  static const int32_t s2[6] = {5, 1, 8, 1, 1, 2}, c2[6] = {0, 10, 3, 4, 7, 9},
                       p2[6] = {10, 10, 20, 9, 7, 5}, w2[6] = {4, 0, 4, 5, 3, 2};
  static const int32_t s3[4] = {1, 2, 1, 6}, c3[4] = {0, 6, 2, 9}, p3[4] = {4, 8, 9, 9},
                       w3[4] = {2, 0, 2, 3};
  static const int32_t s4[3] = {1, 1, 1}, c4[3] = {5, 6, 7};
  int32_t swaps[12];
  int64_t count;
  (void)state;
  expect_swaps(swaps, reorder_v2(s1, c1, p1, 2, 1, swaps), w1, 1);
  assert_int_equal(reorder(s1, c1, 2, 1, swaps), 0); /* the ABI 1.0 function: no short extends */
  expect_swaps(swaps, reorder_v2(s2, c2, p2, 6, 1, swaps), w2, 3);
  expect_swaps(swaps, reorder_v2(s3, c3, p3, 4, 2, swaps), w3, 2);
  assert_int_equal(reorder_v2(s4, c4, c4, 3, 1, swaps), 0); /* vLLM returns False */
  count = -1;
  ASSERT_OK(attn_reorder_batch_to_split_decodes_and_prefills_v2(NULL, NULL, NULL, 0, 1, NULL, 0,
                                                                &count));
  assert_int_equal(count, 0);
}

/* Region of a request in vLLM 0.33: 0 decode, 1 short extend, 2 long extend, 3 prefill. */
static int region4(int32_t sched, int32_t comp, int32_t prompt, int32_t th) {
  if (comp == 0) return 3;
  if (sched > th) return 2;
  return comp < prompt ? 1 : 0;
}

static void test_reorder_v2_random(void** state) {
  uint64_t seed = 33;
  int iter;
  (void)state;
  for (iter = 0; iter < 2000; ++iter) {
    int32_t sched[64], comp[64], prompt[64], zeros[64], perm[64], swaps[128], swaps1[128],
        expect[64];
    const int64_t n = ts_rand_range(&seed, 0, 64);
    const int32_t th = (int32_t)ts_rand_range(&seed, 1, 4);
    int64_t i, k, count, count1, cnt[4] = {0, 0, 0, 0}, misplaced[64], nm = 0;
    for (i = 0; i < n; ++i) {
      sched[i] = (int32_t)ts_rand_range(&seed, 0, 8);
      comp[i] = ts_rand_range(&seed, 0, 2) ? (int32_t)ts_rand_range(&seed, 1, 100) : 0;
      prompt[i] = (int32_t)ts_rand_range(&seed, 0, 120);
      zeros[i] = 0;
      perm[i] = (int32_t)i;
      ++cnt[region4(sched[i], comp[i], prompt[i], th)];
    }
    count = reorder_v2(sched, comp, prompt, n, th, swaps);
    assert_true(count < (n > 0 ? n : 1));
    /* with every prompt done, the four-region reorder is the three-region one */
    count1 = reorder_v2(sched, comp, zeros, n, th, swaps1);
    assert_int_equal(count1, reorder(sched, comp, n, th, swaps));
    count = reorder_v2(sched, comp, prompt, n, th, swaps);
    for (k = 0; k < count; ++k) {
      const int32_t a = swaps[2 * k], b = swaps[2 * k + 1], t = perm[a];
      assert_true(a >= 0 && a < n && b >= 0 && b < n && a != b);
      perm[a] = perm[b];
      perm[b] = t;
    }
    for (i = 0; i < n; ++i) {
      const int target = i < cnt[0] ? 0 : i < cnt[0] + cnt[1] ? 1 : i < cnt[0] + cnt[1] + cnt[2] ? 2 : 3;
      expect[i] = (int32_t)i;
      if (region4(sched[i], comp[i], prompt[i], th) != target) misplaced[nm++] = i;
    }
    {
      int64_t out = 0;
      int r;
      for (r = 0; r <= 3; ++r)
        for (k = 0; k < nm; ++k)
          if (region4(sched[misplaced[k]], comp[misplaced[k]], prompt[misplaced[k]], th) == r)
            expect[misplaced[out++]] = (int32_t)misplaced[k];
    }
    for (i = 0; i < n; ++i)
      if (perm[i] != expect[i])
        fail_msg("iteration %d: position %lld holds request %d, expected %d", iter, (long long)i,
                 perm[i], expect[i]);
    assert_int_equal(count == 0, nm == 0);
  }
}

static void test_reorder_v2_bad_input(void** state) {
  static const int32_t sched[2] = {1, 1}, comp[2] = {10, 10}, prompt[2] = {20, 5},
                       neg[2] = {3, -4};
  int32_t swaps[4] = {-3, -3, -3, -3};
  int64_t count = -7;
  (void)state;
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills_v2(sched, comp, NULL, 2, 1, swaps, 2, &count),
               ATTN_ERR_INVALID_ARGUMENT, "num_prompt_tokens is NULL but num_reqs=2");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills_v2(sched, comp, neg, 2, 1, swaps, 2, &count),
               ATTN_ERR_INVALID_ARGUMENT, "num_prompt_tokens[1]=-4 is negative");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills_v2(NULL, comp, prompt, 2, 1, swaps, 2, &count),
               ATTN_ERR_INVALID_ARGUMENT, "num_scheduled_tokens is NULL but num_reqs=2");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills_v2(sched, NULL, prompt, 2, 1, swaps, 2, &count),
               ATTN_ERR_INVALID_ARGUMENT, "num_computed_tokens is NULL but num_reqs=2");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills_v2(sched, comp, prompt, -2, 1, swaps, 2, &count),
               ATTN_ERR_INVALID_ARGUMENT, "num_reqs=-2 is negative");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills_v2(sched, comp, prompt, 2, -1, swaps, 2, &count),
               ATTN_ERR_INVALID_ARGUMENT, "decode_threshold=-1 is negative");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills_v2(sched, comp, prompt, 2, 1, swaps, 0, &count),
               ATTN_ERR_INVALID_ARGUMENT, "swaps_capacity=0 is smaller than the 1 swaps this batch needs");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills_v2(sched, comp, prompt, 2, 1, NULL, 2, &count),
               ATTN_ERR_INVALID_ARGUMENT, "out_swaps is NULL");
  ASSERT_ERROR(attn_reorder_batch_to_split_decodes_and_prefills_v2(sched, comp, prompt, 2, 1, swaps, 2, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_num_swaps is NULL");
  assert_int_equal(count, -7);
  assert_int_equal(swaps[0], -3); /* nothing written */
}

/* ---- multimodal PrefixLM ranges (vLLM 0.33) -------------------------------------------------- */

static attn_tensor_t rows_tensor(int32_t* rows, int64_t* shape, int64_t n) {
  shape[0] = n;
  shape[1] = 3;
  return ts_host_tensor(rows, 2, shape, ATTN_DTYPE_INT, 32);
}

/* Answers of vLLM 0.33.0's compute_mm_prefix_range_tensor and fill_mm_prefix_query_ranges (run
 * in its virtual environment) on the same dicts. */
static void test_mm_prefix_vllm_cases(void** state) {
  /* {0: [(2, 5), (9, 12)], 2: [(1, 3)], 5: [(7, 8)]} with num_seqs 3 */
  int32_t rows[4 * 3] = {0, 2, 5, 0, 9, 12, 2, 1, 3, 5, 7, 8};
  static const int32_t want_t[3 * 2 * 2] = {2, 5, 9, 12, 0, 0, 0, 0, 1, 3, 0, 0};
  /* {1: [(0, 0)]}: None */
  int32_t none_rows[3] = {1, 0, 0};
  /* fill: query_start_loc [0, 4, 4, 9], seq_lens [10, 3, 9],
   * {0: [(5, 7), (9, 9)], 2: [(2, 4), (6, 20)]} */
  int32_t f_rows[4 * 3] = {0, 5, 7, 0, 9, 9, 2, 2, 4, 2, 6, 20};
  int32_t qsl[4] = {0, 4, 4, 9}, seq[3] = {10, 3, 9}, out[10 * 2], tens[3 * 2 * 2];
  static const int32_t want_f[9 * 2] = {5, 7, 5, 7, -1, -1, -1, -1, 2, 4, -1, -1, 6, 20, 6, 20, 6, 20};
  int32_t miss_rows[3] = {0, 0, 2};
  int64_t rs[2], ns[2], fs[2], qs[1] = {4}, ss[1] = {3}, os[2] = {10, 2}, ts3[3] = {3, 2, 2};
  attn_tensor_t rt = rows_tensor(rows, rs, 4), nt = rows_tensor(none_rows, ns, 1);
  attn_tensor_t ft = rows_tensor(f_rows, fs, 4), mt = rows_tensor(miss_rows, ns, 1);
  attn_tensor_t qt = ts_host_tensor(qsl, 1, qs, ATTN_DTYPE_INT, 32);
  attn_tensor_t st = ts_host_tensor(seq, 1, ss, ATTN_DTYPE_INT, 32);
  attn_tensor_t ot = ts_host_tensor(out, 2, os, ATTN_DTYPE_INT, 32);
  attn_tensor_t tt = ts_host_tensor(tens, 3, ts3, ATTN_DTYPE_INT, 32);
  int64_t width = -1, written = -1, i;
  (void)state;
  ASSERT_OK(attn_compute_mm_prefix_range_tensor(&rt, 3, NULL, &width));
  assert_int_equal(width, 2);
  for (i = 0; i < 12; ++i) tens[i] = -7;
  ASSERT_OK(attn_compute_mm_prefix_range_tensor(&rt, 3, &tt, &width));
  assert_memory_equal(tens, want_t, sizeof want_t);
  ASSERT_OK(attn_compute_mm_prefix_range_tensor(&nt, 3, &tt, &width));
  assert_int_equal(width, 0); /* None */
  ASSERT_OK(attn_compute_mm_prefix_range_tensor(NULL, 3, &tt, &width));
  assert_int_equal(width, 0);
  assert_memory_equal(tens, want_t, sizeof want_t); /* untouched */
  for (i = 0; i < 20; ++i) out[i] = -7;
  ASSERT_OK(attn_fill_mm_prefix_query_ranges(&ot, &ft, &qt, &st, &written));
  assert_int_equal(written, 9);
  assert_memory_equal(out, want_f, sizeof want_f);
  assert_int_equal(out[18], -7); /* rows from T on are not written */
  /* (0, 2) of request 0 ends before its first scheduled position (6): 0, untouched */
  for (i = 0; i < 20; ++i) out[i] = -7;
  ASSERT_OK(attn_fill_mm_prefix_query_ranges(&ot, &mt, &qt, &st, &written));
  assert_int_equal(written, 0);
  assert_int_equal(out[0], -7);
  ASSERT_OK(attn_fill_mm_prefix_query_ranges(&ot, NULL, &qt, &st, &written)); /* None */
  assert_int_equal(written, 0);
}

/* Naive fill: each token's absolute position tested against every range, the last one wins. */
static void test_mm_prefix_fill_random(void** state) {
  uint64_t seed = 12;
  int iter;
  (void)state;
  for (iter = 0; iter < 1000; ++iter) {
    int32_t rows[16 * 3], qsl[9], seq[8], out[80 * 2], want[80 * 2];
    const int64_t n = ts_rand_range(&seed, 1, 8), nr = ts_rand_range(&seed, 0, 16);
    int64_t rs[2], qs[1] = {n + 1}, ss[1] = {n}, os[2] = {80, 2}, r, k, t, written = -1, any = 0;
    attn_tensor_t rt, qt, st, ot;
    qsl[0] = 0;
    for (r = 0; r < n; ++r) {
      qsl[r + 1] = qsl[r] + (int32_t)ts_rand_range(&seed, 0, 9);
      seq[r] = qsl[r + 1] - qsl[r] + (int32_t)ts_rand_range(&seed, 0, 20);
    }
    for (k = 0; k < nr; ++k) {
      rows[3 * k] = (int32_t)(k * n / (nr ? nr : 1));
      rows[3 * k + 1] = (int32_t)ts_rand_range(&seed, 0, 30);
      rows[3 * k + 2] = (int32_t)ts_rand_range(&seed, 0, 30);
    }
    for (t = 0; t < 160; ++t) out[t] = want[t] = -7;
    for (r = 0; r < n; ++r)
      for (t = qsl[r]; t < qsl[r + 1]; ++t) {
        const int64_t pos = seq[r] - (qsl[r + 1] - qsl[r]) + (t - qsl[r]);
        for (k = 0; k < nr; ++k)
          if (rows[3 * k] == r && rows[3 * k + 1] < rows[3 * k + 2] && rows[3 * k + 1] <= pos &&
              pos <= rows[3 * k + 2]) {
            want[2 * t] = rows[3 * k + 1];
            want[2 * t + 1] = rows[3 * k + 2];
            any = 1;
          }
      }
    if (any)
      for (t = 0; t < qsl[n]; ++t)
        if (want[2 * t] == -7) want[2 * t] = want[2 * t + 1] = -1;
    rt = rows_tensor(rows, rs, nr);
    qt = ts_host_tensor(qsl, 1, qs, ATTN_DTYPE_INT, 32);
    st = ts_host_tensor(seq, 1, ss, ATTN_DTYPE_INT, 32);
    ot = ts_host_tensor(out, 2, os, ATTN_DTYPE_INT, 32);
    ASSERT_OK(attn_fill_mm_prefix_query_ranges(&ot, &rt, &qt, &st, &written));
    assert_int_equal(written, any ? qsl[n] : 0);
    assert_memory_equal(out, want, sizeof want);
  }
}

static void test_mm_prefix_bad_input(void** state) {
  int32_t rows[2 * 3] = {1, 2, 5, 0, 1, 3}, qsl[3] = {0, 4, 9}, seq[2] = {10, 9}, out[4 * 2];
  int32_t far_rows[3] = {5, 1, 2}, tens[2 * 2];
  int64_t rs[2], qs[1] = {3}, ss[1] = {2}, os[2] = {4, 2}, bad_shape[2] = {2, 2}, ts3[3] = {2, 2, 2};
  attn_tensor_t rt = rows_tensor(rows, rs, 2), qt = ts_host_tensor(qsl, 1, qs, ATTN_DTYPE_INT, 32);
  attn_tensor_t st = ts_host_tensor(seq, 1, ss, ATTN_DTYPE_INT, 32);
  attn_tensor_t ot = ts_host_tensor(out, 2, os, ATTN_DTYPE_INT, 32);
  attn_tensor_t two_cols = ts_host_tensor(rows, 2, bad_shape, ATTN_DTYPE_INT, 32);
  attn_tensor_t tt = ts_host_tensor(tens, 3, ts3, ATTN_DTYPE_INT, 32), ft;
  int64_t fs[2], written = -5, width = -5;
  (void)state;
  ASSERT_ERROR(attn_fill_mm_prefix_query_ranges(&ot, &rt, &qt, &st, &written), ATTN_ERR_INVALID_ARGUMENT,
               "mm_req_doc_ranges[1] names request 0 after request 1 (rows must be grouped by request, in order)");
  rows[0] = 0;
  rows[3] = 1;
  ASSERT_ERROR(attn_fill_mm_prefix_query_ranges(&ot, &rt, &qt, &st, &written), ATTN_ERR_INVALID_ARGUMENT,
               "mm_prefix staging buffer holds 4 tokens, got 9");
  ft = rows_tensor(far_rows, fs, 1);
  os[0] = 9;
  ASSERT_ERROR(attn_fill_mm_prefix_query_ranges(&ot, &ft, &qt, &st, &written), ATTN_ERR_INVALID_ARGUMENT,
               "mm_req_doc_ranges[0] names request 5, outside the batch's 2 requests");
  ASSERT_ERROR(attn_fill_mm_prefix_query_ranges(&ot, &two_cols, &qt, &st, &written), ATTN_ERR_INVALID_ARGUMENT,
               "mm_req_doc_ranges must be a (num_ranges, 3) tensor");
  qsl[1] = 10;
  ASSERT_ERROR(attn_fill_mm_prefix_query_ranges(&ot, &rt, &qt, &st, &written), ATTN_ERR_INVALID_ARGUMENT,
               "query_start_loc_cpu[2]=9 is less than query_start_loc_cpu[1]=10");
  qsl[1] = 4;
  ss[0] = 1;
  ASSERT_ERROR(attn_fill_mm_prefix_query_ranges(&ot, &rt, &qt, &st, &written), ATTN_ERR_INVALID_ARGUMENT,
               "seq_lens_cpu has 1 entries but 2 are needed");
  ss[0] = 2;
  ASSERT_ERROR(attn_fill_mm_prefix_query_ranges(NULL, &rt, &qt, &st, &written), ATTN_ERR_INVALID_ARGUMENT,
               "out is NULL");
  ASSERT_ERROR(attn_fill_mm_prefix_query_ranges(&ot, &rt, NULL, &st, &written), ATTN_ERR_INVALID_ARGUMENT,
               "query_start_loc_cpu is NULL");
  ASSERT_ERROR(attn_fill_mm_prefix_query_ranges(&ot, &rt, &qt, &st, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out_num_rows is NULL");
  assert_int_equal(written, -5);
  /* the range tensor: an output of another shape names the one needed */
  ASSERT_ERROR(attn_compute_mm_prefix_range_tensor(&rt, 2, &tt, &width), ATTN_ERR_INVALID_ARGUMENT,
               "out must be a compact (2, 1, 2) int32 tensor");
  ASSERT_ERROR(attn_compute_mm_prefix_range_tensor(&rt, -1, NULL, &width), ATTN_ERR_INVALID_ARGUMENT,
               "num_seqs=-1 is negative");
  ASSERT_ERROR(attn_compute_mm_prefix_range_tensor(&rt, (int64_t)1 << 31, NULL, &width),
               ATTN_ERR_INVALID_ARGUMENT, "num_seqs=2147483648 exceeds 2^31-1");
  /* found by the fuzzer: a huge num_seqs allocated per-request counts; nothing is sized by it */
  {
    int64_t big = -1;
    ASSERT_OK(attn_compute_mm_prefix_range_tensor(&rt, ((int64_t)1 << 31) - 1, NULL, &big));
    assert_int_equal(big, 1);
  }
  ASSERT_ERROR(attn_compute_mm_prefix_range_tensor(&two_cols, 2, NULL, &width), ATTN_ERR_INVALID_ARGUMENT,
               "mm_req_doc_ranges must be a (num_ranges, 3) tensor");
  ASSERT_ERROR(attn_compute_mm_prefix_range_tensor(&rt, 2, NULL, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out_max_ranges is NULL");
  assert_int_equal(width, -5);
}

/* ---- split_prefill_chunks -------------------------------------------------------------------- */
static void test_chunks_hand_checked(void** state) {
  static const int32_t seq[6] = {4, 4, 2, 8, 1, 7};
  int64_t bounds[12], n = -1;
  (void)state;
  ASSERT_OK(attn_split_prefill_chunks(seq, 6, 8, 0, bounds, 6, &n));
  /* [4, 4] | [2] (2 + 8 > 8) | [8] | [1, 7] */
  assert_int_equal(n, 4);
  assert_int_equal(bounds[0], 0);
  assert_int_equal(bounds[1], 2);
  assert_int_equal(bounds[2], 2);
  assert_int_equal(bounds[3], 3);
  assert_int_equal(bounds[4], 3);
  assert_int_equal(bounds[5], 4);
  assert_int_equal(bounds[6], 4);
  assert_int_equal(bounds[7], 6);
  ASSERT_OK(attn_split_prefill_chunks(seq, 6, 100, 10, bounds, 6, &n));
  assert_int_equal(n, 1);
  assert_int_equal(bounds[0], 10);
  assert_int_equal(bounds[1], 16);
  ASSERT_OK(attn_split_prefill_chunks(NULL, 0, 8, 0, NULL, 0, &n));
  assert_int_equal(n, 0);
}

static void test_chunks_random(void** state) {
  uint64_t seed = 31;
  int iter;
  (void)state;
  for (iter = 0; iter < 3000; ++iter) {
    int32_t seq[64];
    int64_t bounds[128], n = -1, i, k, next = 0;
    const int64_t m = ts_rand_range(&seed, 0, 64), ws = ts_rand_range(&seed, 1, 500);
    const int64_t off = ts_rand_range(&seed, 0, 5);
    for (i = 0; i < m; ++i) seq[i] = (int32_t)ts_rand_range(&seed, 0, ws);
    ASSERT_OK(attn_split_prefill_chunks(seq, m, ws, off, bounds, m, &n));
    for (k = 0; k < n; ++k) {
      int64_t total = 0;
      assert_int_equal(bounds[2 * k], next + off); /* contiguous, covering everything */
      assert_true(bounds[2 * k + 1] > bounds[2 * k]);
      for (i = bounds[2 * k] - off; i < bounds[2 * k + 1] - off; ++i) total += seq[i];
      assert_true(total <= ws);
      /* greedy: the next request would not have fitted */
      if (bounds[2 * k + 1] - off < m) assert_true(total + seq[bounds[2 * k + 1] - off] > ws);
      next = bounds[2 * k + 1] - off;
    }
    assert_int_equal(next, m);
  }
}

static void test_chunks_bad_input(void** state) {
  static const int32_t seq[3] = {4, 9, 2}, neg[2] = {1, -1};
  int64_t bounds[6], n = -7;
  (void)state;
  ASSERT_ERROR(attn_split_prefill_chunks(seq, 3, 8, 0, bounds, 3, &n), ATTN_ERR_INVALID_ARGUMENT,
               "seq_lens[1]=9 exceeds workspace_size=8");
  ASSERT_ERROR(attn_split_prefill_chunks(seq, 3, 20, 0, bounds, 0, &n), ATTN_ERR_INVALID_ARGUMENT,
               "bounds_capacity=0 is smaller than the 1 chunks");
  ASSERT_ERROR(attn_split_prefill_chunks(neg, 2, 20, 0, bounds, 2, &n), ATTN_ERR_INVALID_ARGUMENT,
               "seq_lens[1]=-1 is negative");
  ASSERT_ERROR(attn_split_prefill_chunks(seq, 3, -1, 0, bounds, 3, &n), ATTN_ERR_INVALID_ARGUMENT,
               "workspace_size=-1 is negative");
  ASSERT_ERROR(attn_split_prefill_chunks(seq, 3, 20, -2, bounds, 3, &n), ATTN_ERR_INVALID_ARGUMENT,
               "request_offset=-2 is negative");
  ASSERT_ERROR(attn_split_prefill_chunks(seq, 3, 20, 0, bounds, 3, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out_num_chunks is NULL");
  assert_int_equal(n, -7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reorder_hand_checked), cmocka_unit_test(test_reorder_cycle),
      cmocka_unit_test(test_reorder_random),       cmocka_unit_test(test_reorder_bad_input),
      cmocka_unit_test(test_reorder_v2_vllm_cases), cmocka_unit_test(test_reorder_v2_random),
      cmocka_unit_test(test_reorder_v2_bad_input),
      cmocka_unit_test(test_mm_prefix_vllm_cases), cmocka_unit_test(test_mm_prefix_fill_random),
      cmocka_unit_test(test_mm_prefix_bad_input),
      cmocka_unit_test(test_chunks_hand_checked),  cmocka_unit_test(test_chunks_random),
      cmocka_unit_test(test_chunks_bad_input),
  };
  return cmocka_run_group_tests_name("host_lists", tests, NULL, NULL);
}
