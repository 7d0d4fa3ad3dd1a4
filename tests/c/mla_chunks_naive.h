/* vLLM 0.33's MLA chunked context (plan_mla_context_chunks, build_mla_chunked_context_metadata)
 * restated naively for the tests: the split length by a downward linear scan (libattn's planner
 * bisects, as vLLM does), every field recomputed from the entries; and a check of every
 * prefill_chunked_context_* field of a build against it. Included by test_mla.c and
 * test_mla_chunks.c (static functions: one copy per test binary). */
#ifndef ATTN_TESTS_MLA_CHUNKS_NAIVE_H
#define ATTN_TESTS_MLA_CHUNKS_NAIVE_H

#include <string.h>

#include "test_support.h"

#define NAIVE_MAX_ENTRIES 4096
#define NAIVE_MAX_ROWS (1 << 20)

typedef struct {
  int64_t chunks, entries;
  int32_t chunk_first[NAIVE_MAX_ENTRIES + 1]; /* chunk c: entries [first[c], first[c + 1]) */
  int32_t req[NAIVE_MAX_ENTRIES], start[NAIVE_MAX_ENTRIES], len[NAIVE_MAX_ENTRIES];
  int64_t alignment, budget, max_chunk;
  int32_t dcp, il;
} naive_chunk_plan;

static int64_t naive_padded(const naive_chunk_plan* p, int64_t rows) {
  if (p->dcp <= 1) return rows;
  return (rows + (int64_t)p->dcp * p->il - 1) / ((int64_t)p->dcp * p->il) * p->il;
}

static int64_t naive_gcd(int64_t a, int64_t b) { return b == 0 ? a : naive_gcd(b, a % b); }

/* The plan of contexts ctx[0..np) for a workspace of W rows, block size B, DCP size dcp and
 * interleave il. Returns 0 when vLLM would return None (no context) and -1 when it asserts
 * (max_context_chunk == 0). */
static int64_t naive_mla_plan(const int32_t* ctx, int64_t np, int64_t workspace, int32_t block,
                              int32_t dcp, int32_t il, naive_chunk_plan* p) {
  int64_t i, request = 0, start = 0, any = 0;
  memset(p, 0, sizeof *p);
  p->dcp = dcp;
  p->il = il;
  for (i = 0; i < np; ++i) any |= ctx[i] > 0;
  if (!any) return 0;
  p->alignment = block;
  p->budget = workspace;
  if (dcp > 1) {
    const int64_t vb = (int64_t)dcp * il;
    p->budget = workspace / dcp;
    p->alignment = p->alignment / naive_gcd(p->alignment, vb) * vb;
  }
  p->max_chunk = workspace / p->alignment * p->alignment;
  if (p->max_chunk <= 0) return -1;
  while (request < np) {
    int64_t rows = 0;
    if (ctx[request] == 0) {
      ++request;
      continue;
    }
    p->chunk_first[p->chunks] = (int32_t)p->entries;
    while (request < np && ctx[request] > 0) {
      const int64_t remaining = ctx[request] - start;
      const int64_t need = naive_padded(p, start + remaining) - naive_padded(p, start);
      if (rows + need > p->budget) {
        /* the longest aligned piece that fits, at most max_chunk, shorter than remaining */
        int64_t len = (remaining - 1) / p->alignment * p->alignment;
        if (len > p->max_chunk) len = p->max_chunk;
        while (len > 0 && naive_padded(p, start + len) - naive_padded(p, start) > p->budget - rows)
          len -= p->alignment;
        if (len > 0) {
          assert_true(p->entries < NAIVE_MAX_ENTRIES);
          p->req[p->entries] = (int32_t)request;
          p->start[p->entries] = (int32_t)start;
          p->len[p->entries++] = (int32_t)len;
          start += len;
        }
        break;
      }
      assert_true(p->entries < NAIVE_MAX_ENTRIES);
      p->req[p->entries] = (int32_t)request;
      p->start[p->entries] = (int32_t)start;
      p->len[p->entries++] = (int32_t)remaining;
      rows += need;
      ++request;
      start = 0;
    }
    assert_true(p->entries > p->chunk_first[p->chunks]); /* vLLM asserts a chunk is not empty */
    ++p->chunks;
  }
  p->chunk_first[p->chunks] = (int32_t)p->entries;
  return p->chunks;
}

static int32_t naive_dcp_local(int64_t len, int32_t dcp, int32_t rank, int32_t il) {
  const int64_t base = len / il / dcp * il;
  int64_t rem = len - base * dcp - (int64_t)rank * il;
  if (rem < 0) rem = 0;
  if (rem > il) rem = il;
  return (int32_t)(base + rem);
}

/* Asserts a 2-D int32 tensor field equals `expected` (rows x cols, row-major). */
static void expect_i32_matrix(const attn_metadata_t* m, const char* name, const int32_t* expected,
                              int64_t rows, int64_t cols) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t r, c;
  if (t == NULL) fail_msg("field %s is None", name);
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], rows);
  assert_int_equal(t->shape[1], cols);
  assert_int_equal(t->dtype.bits, 32);
  for (r = 0; r < rows; ++r)
    for (c = 0; c < cols; ++c) {
      const int64_t at = t->strides ? r * t->strides[0] + c * t->strides[1] : r * cols + c;
      const int32_t got = ((const int32_t*)((const char*)t->data + t->byte_offset))[at];
      if (got != expected[r * cols + c])
        fail_msg("%s[%lld][%lld] = %d, expected %d", name, (long long)r, (long long)c, got,
                 expected[r * cols + c]);
    }
}

/* What a check covered (for the tests' coverage assertions). */
typedef struct {
  int64_t chunks;
  int continuation, dcp;
} naive_coverage;

/* Every prefill_chunked_context_* field of `m` against the naive plan of the prefills whose
 * query_start_loc (np + 1 entries, any base) and seq_lens are given. */
static naive_coverage expect_mla_chunks(const attn_metadata_t* m, const int32_t* qsl,
                                        const int32_t* seq_lens, int64_t np, int64_t workspace,
                                        int32_t block, int32_t dcp, int32_t il) {
  static naive_chunk_plan p;
  static int32_t ctx[NAIVE_MAX_ENTRIES], a[NAIVE_MAX_ENTRIES * 2], b[NAIVE_MAX_ENTRIES * 2];
  static int32_t scal[11][NAIVE_MAX_ENTRIES], tts[NAIVE_MAX_ROWS], ltts[NAIVE_MAX_ROWS];
  static int32_t starts[NAIVE_MAX_ENTRIES], lens[NAIVE_MAX_ENTRIES], llens[NAIVE_MAX_ENTRIES],
      lstarts[NAIVE_MAX_ENTRIES], allranks[NAIVE_MAX_ENTRIES * 8], ro[NAIVE_MAX_ENTRIES + 1],
      to[NAIVE_MAX_ENTRIES + 1], lo[NAIVE_MAX_ENTRIES + 1], bo[NAIVE_MAX_ENTRIES];
  static const char* const names[11] = {"request_start",
                                        "request_end",
                                        "token_start",
                                        "token_end",
                                        "continuation_token_end",
                                        "is_continuation",
                                        "num_context_tokens",
                                        "max_query_len",
                                        "max_seq_len",
                                        "all_rows_active",
                                        "num_local_context_tokens"};
  naive_coverage cov = {0, 0, dcp > 1};
  int64_t i, c, e, t, k = 0, rows = 0, lrows = 0, chunks;
  char name[96];
  assert_true(np <= NAIVE_MAX_ENTRIES);
  for (i = 0; i < np; ++i) ctx[i] = seq_lens[i] - (qsl[i + 1] - qsl[i]);
  chunks = naive_mla_plan(ctx, np, workspace, block, dcp, il, &p);
  assert_true(chunks >= 0);
  cov.chunks = chunks;
  if (chunks == 0) {
    assert_null(ts_tensor(m, "prefill_chunked_context_context_lens"));
    assert_null(ts_tensor(m, "prefill_chunked_context_chunk_cu_seq_lens"));
    return cov;
  }
  assert_int_equal(ts_int(m, "prefill_chunked_context_num_chunks"), chunks);
  ts_expect_i32(m, "prefill_chunked_context_context_lens", ctx, np);
  ts_expect_i32(m, "prefill_chunked_context_context_lens_list", ctx, np);
  for (i = 0; i < np; ++i)
    if (ctx[i] == 0) {
      a[2 * k] = qsl[i] - qsl[0];
      a[2 * k + 1] = qsl[i + 1] - qsl[0];
      ++k;
    }
  expect_i32_matrix(m, "prefill_chunked_context_empty_token_slices", a, k, 2);
  for (c = 0; c < chunks; ++c) {
    const int64_t e0 = p.chunk_first[c], e1 = p.chunk_first[c + 1];
    const int64_t rs = p.req[e0], re = p.req[e1 - 1] + 1;
    int64_t tokens = 0, local = 0, max_len = 0, max_q = 0, active = 1, cu = 0, lcu = 0;
    ro[c] = (int32_t)e0;
    bo[c] = (int32_t)(e0 + c);
    to[c] = (int32_t)rows;
    lo[c] = (int32_t)lrows;
    a[e0 + c] = 0;
    b[e0 + c] = 0;
    for (e = e0; e < e1; ++e) {
      const int64_t ls = naive_padded(&p, p.start[e]);
      const int64_t ll = naive_padded(&p, p.start[e] + p.len[e]) - ls;
      starts[e] = dcp > 1 ? (int32_t)ls : p.start[e];
      lens[e] = p.len[e];
      llens[e] = (int32_t)ll;
      lstarts[e] = (int32_t)ls;
      for (i = 0; i < dcp; ++i)
        allranks[e * dcp + i] = naive_dcp_local(ctx[p.req[e]], dcp, (int32_t)i, il);
      for (t = 0; t < p.len[e]; ++t) tts[rows + cu + t] = (int32_t)(e - e0);
      for (t = 0; t < ll; ++t) ltts[lrows + lcu + t] = (int32_t)(e - e0);
      cu += p.len[e];
      lcu += ll;
      a[e + c + 1] = (int32_t)cu;  /* cu_seq_lens, the chunk's boundaries */
      b[e + c + 1] = (int32_t)lcu; /* padded_local_cu_seq_lens */
      tokens += p.len[e];
      local += ll;
      if (p.len[e] > max_len) max_len = p.len[e];
      if (p.len[e] <= 0) active = 0;
    }
    for (i = rs; i < re; ++i) {
      const int64_t q = qsl[i + 1] - qsl[i];
      if (q > max_q) max_q = q;
      if (q <= 0) active = 0;
    }
    scal[0][c] = (int32_t)rs;
    scal[1][c] = (int32_t)re;
    scal[2][c] = qsl[rs] - qsl[0];
    scal[3][c] = qsl[re] - qsl[0];
    scal[4][c] = qsl[rs + 1] - qsl[0];
    scal[5][c] = p.start[e0] > 0;
    scal[6][c] = (int32_t)tokens;
    scal[7][c] = (int32_t)max_q;
    scal[8][c] = (int32_t)max_len;
    scal[9][c] = (int32_t)active;
    scal[10][c] = (int32_t)(dcp > 1 ? local : tokens);
    if (p.start[e0] > 0) cov.continuation = 1;
    rows += tokens;
    lrows += dcp > 1 ? local : tokens;
    assert_true(rows <= NAIVE_MAX_ROWS && lrows <= NAIVE_MAX_ROWS);
  }
  ro[chunks] = (int32_t)p.entries;
  to[chunks] = (int32_t)rows;
  lo[chunks] = (int32_t)lrows;
  for (i = 0; i < 11; ++i) {
    snprintf(name, sizeof name, "prefill_chunked_context_chunk_%s", names[i]);
    ts_expect_i32(m, name, scal[i], chunks);
  }
  ts_expect_i32(m, "prefill_chunked_context_chunk_request_offsets", ro, chunks + 1);
  ts_expect_i32(m, "prefill_chunked_context_chunk_boundary_offsets", bo, chunks);
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_offsets", to, chunks + 1);
  ts_expect_i32(m, "prefill_chunked_context_chunk_cu_seq_lens", a, p.entries + chunks);
  ts_expect_i32(m, "prefill_chunked_context_chunk_starts", starts, p.entries);
  ts_expect_i32(m, "prefill_chunked_context_chunk_seq_lens", lens, p.entries);
  ts_expect_i32(m, "prefill_chunked_context_chunk_token_to_seq", tts, rows);
  /* query_start_loc: qsl[r] - qsl[request_start] over each chunk's requests */
  for (c = 0; c < chunks; ++c) {
    const int64_t e0 = p.chunk_first[c], e1 = p.chunk_first[c + 1], rs = p.req[e0];
    for (e = e0; e <= e1; ++e) a[e + c] = qsl[rs + (e - e0)] - qsl[rs];
  }
  ts_expect_i32(m, "prefill_chunked_context_chunk_query_start_loc", a, p.entries + chunks);
  if (dcp > 1) {
    ts_expect_i32(m, "prefill_chunked_context_chunk_local_token_offsets", lo, chunks + 1);
    ts_expect_i32(m, "prefill_chunked_context_chunk_padded_local_seq_lens", llens, p.entries);
    ts_expect_i32(m, "prefill_chunked_context_chunk_local_starts", lstarts, p.entries);
    expect_i32_matrix(m, "prefill_chunked_context_chunk_local_context_lens_allranks", allranks,
                      p.entries, dcp);
    ts_expect_i32(m, "prefill_chunked_context_chunk_padded_local_cu_seq_lens", b,
                  p.entries + chunks);
    ts_expect_i32(m, "prefill_chunked_context_chunk_padded_local_token_to_seq", ltts, lrows);
  } else {
    assert_null(ts_tensor(m, "prefill_chunked_context_chunk_padded_local_seq_lens"));
    assert_null(ts_tensor(m, "prefill_chunked_context_chunk_local_context_lens_allranks"));
    assert_null(ts_tensor(m, "prefill_chunked_context_chunk_padded_local_token_to_seq"));
  }
  return cov;
}

/* vLLM 0.33's determine_chunked_prefill_workspace_size, aligned up. */
static int64_t naive_mla_workspace(int32_t max_model_len, int32_t max_num_seqs, int32_t block,
                                   int32_t dcp, int32_t il) {
  int64_t w = 8 * (int64_t)max_model_len;
  int64_t a = block;
  if (4 * (int64_t)max_num_seqs * block > w) w = 4 * (int64_t)max_num_seqs * block;
  if (w > 65536) w = 65536;
  if (dcp > 1) a = a / naive_gcd(a, (int64_t)dcp * il) * ((int64_t)dcp * il);
  if (w < a) w = a;
  return (w + a - 1) / a * a;
}

#endif
