/* DOTS3_NOTE_TRITON_MLA at vLLM 0.33 (Dots3NoteMLAMetadataBuilder, models/dots3_note/nvidia/
 * attention.py, a TritonMLAMetadataBuilder subclass): TRITON_MLA's class answers; the refusals
 * (no window, head size, prefills under DCP, a request wider than the workspace); a
 * hand-checked mixed batch whose prefills take two sliding-window chunks; and seeded random
 * batches, with optimistic seq_lens_cpu_upper_bound rows, against a naive restatement of
 * _build_sliding_window_metadata and build()'s mixed-batch recomputation. Hand-checked values
 * are worked out in the comments. */
#include "test_support.h"

#define DOTS3 "DOTS3_NOTE_TRITON_MLA"

/* dots3 NOTE's latent cache: head size 1088 (kv_lora_rank 1024 + rope 64), block 16. */
static attn_kv_cache_spec_t note_spec(int32_t window) {
  attn_kv_cache_spec_t s = ts_mla_spec(16);
  s.head_size = 1088;
  s.sliding_window = window;
  return s;
}

static attn_builder_config_t note_config(int32_t workspace) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 64;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 1024;
  c.mla_kv_lora_rank = 1024;
  c.mla_qk_nope_head_dim = 192;
  c.mla_chunked_prefill_workspace_size = workspace;
  return c;
}

/* TRITON_MLA's answers (on DeepSeek's dimensions) with and without speculative tokens and DCP:
 * the class level, the threshold, update_block_table, the draft decode update. */
static void test_levels(void** state) {
  int k;
  (void)state;
  for (k = 0; k < 4; ++k) {
    attn_kv_cache_spec_t spec = note_spec(128), tspec = ts_mla_spec(16);
    attn_builder_config_t c = note_config(0), tc = ts_config();
    int32_t level = -1, tlevel = -2, th = -1, tth = -2, up = -1, tup = -2, dr = -1, tdr = -2;
    attn_builder_t *b, *t;
    c.num_speculative_tokens = tc.num_speculative_tokens = (k & 1) * 3;
    c.decode_context_parallel_size = tc.decode_context_parallel_size = (k & 2) ? 2 : 1;
    tc.max_num_seqs = c.max_num_seqs;
    tc.max_num_batched_tokens = c.max_num_batched_tokens;
    tc.max_model_len = c.max_model_len;
    ASSERT_OK(attn_backend_cudagraph_support(DOTS3, &spec, &c, &level));
    assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
    b = ts_builder(DOTS3, &spec, &c);
    t = ts_builder("TRITON_MLA", &tspec, &tc);
    ASSERT_OK(attn_builder_cudagraph_support(b, &level));
    ASSERT_OK(attn_builder_cudagraph_support(t, &tlevel));
    assert_int_equal(level, tlevel);
    ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
    ASSERT_OK(attn_builder_reorder_batch_threshold(t, &tth));
    assert_int_equal(th, tth);
    ASSERT_OK(attn_builder_supports_update_block_table(b, &up));
    ASSERT_OK(attn_builder_supports_update_block_table(t, &tup));
    assert_int_equal(up, tup);
    ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &dr));
    ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(t, &tdr));
    assert_int_equal(dr, tdr);
    assert_int_equal(dr, (k & 2) ? 0 : 1);
    attn_builder_destroy(b);
    attn_builder_destroy(t);
  }
}

static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = note_spec(0);
  attn_builder_config_t c = note_config(0);
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  (void)state;
  ASSERT_ERROR(attn_builder_create(DOTS3, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->sliding_window, got 0");
  spec = ts_mla_spec(16); /* DeepSeek's 576 */
  spec.sliding_window = 128;
  ASSERT_ERROR(attn_builder_create(DOTS3, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "supports head size 1088");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  {
    /* prefills under DCP: NotImplementedError in vLLM */
    static const int32_t q[2] = {4, 9}, s[2] = {4, 30};
    ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
    attn_metadata_t* m = (attn_metadata_t*)UNTOUCHED_PTR;
    spec = note_spec(64);
    c.decode_context_parallel_size = 2;
    b = ts_builder(DOTS3, &spec, &c);
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
                 "does not support decode context parallelism");
    assert_ptr_equal(m, UNTOUCHED_PTR);
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
  {
    /* a request reading more rows than the workspace: min(300, 40 + 63) = 103 > 32 */
    static const int32_t q[2] = {1, 40}, s[2] = {9, 300};
    static const int32_t ok_q[1] = {1}, ok_s[1] = {9};
    ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
    ts_batch* ok = ts_batch_make(ok_q, ok_s, 1, 16, 0, -1);
    attn_metadata_t* m = NULL;
    attn_metadata_t* bad = (attn_metadata_t*)UNTOUCHED_PTR;
    c = note_config(32);
    b = ts_builder(DOTS3, &spec, &c);
    ASSERT_OK(attn_build(b, 0, &ok->common, 0, &m, NULL));
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &bad, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "reads 103 latent rows");
    assert_ptr_equal(bad, UNTOUCHED_PTR);
    assert_int_equal(ts_int(m, "num_decodes"), 1); /* the previous result, still live */
    attn_builder_destroy(b);
    ts_batch_free(batch);
    ts_batch_free(ok);
  }
}

/* Decodes q [1, 1], seq [50, 7]; prefills q [5, 3, 8], seq [20, 3, 40]; window 8, workspace
 * 16. kv_len = min(seq, q + 7): 12, 3, 15. Chunk 0 takes requests 0, 1 (12 + 3 = 15 <= 16;
 * + 15 > 16), chunk 1 request 2. cu_seq_lens_q: [0, 5, 8] then [0, 8]; cu_seq_lens_k: [0, 12,
 * 15] then [0, 15]; starts: 20 - 12, 3 - 3, 40 - 15; token_to_seq: twelve 0s, three 1s, then
 * fifteen 0s. */
static void test_hand_checked(void** state) {
  static const int32_t q[5] = {1, 1, 5, 3, 8}, s[5] = {50, 7, 20, 3, 40};
  static const int32_t req_start[2] = {0, 2}, req_end[2] = {2, 3}, query_start[2] = {0, 8},
                       query_end[2] = {8, 16}, num_kv[2] = {15, 15}, max_q[2] = {5, 8},
                       max_k[2] = {12, 15};
  static const int32_t cu_q[5] = {0, 5, 8, 0, 8}, cu_k[5] = {0, 12, 15, 0, 15};
  static const int32_t starts[3] = {8, 0, 25};
  int32_t tts[30];
  int i;
  attn_kv_cache_spec_t spec = note_spec(8);
  attn_builder_config_t c = note_config(16);
  attn_builder_t* b = ts_builder(DOTS3, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 5, 16, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  for (i = 0; i < 30; ++i) tts[i] = i >= 12 && i < 15 ? 1 : 0;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  assert_int_equal(ts_int(m, "head_dim"), 1088);
  assert_int_equal(ts_int(m, "decode_query_len"), 1);
  assert_int_equal(ts_int(m, "prefill_prefill_backend"), 0); /* FLASH_ATTN, the layer's */
  ts_expect_none(m, "prefill_chunked_context_num_chunks");
  ts_expect_none(m, "prefill_chunked_context_chunk_cu_seq_lens");
  assert_int_equal(ts_int(m, "prefill_sliding_window_num_chunks"), 2);
  ts_expect_i32(m, "prefill_sliding_window_chunk_req_start", req_start, 2);
  ts_expect_i32(m, "prefill_sliding_window_chunk_req_end", req_end, 2);
  ts_expect_i32(m, "prefill_sliding_window_chunk_query_start", query_start, 2);
  ts_expect_i32(m, "prefill_sliding_window_chunk_query_end", query_end, 2);
  ts_expect_i32(m, "prefill_sliding_window_chunk_num_kv_tokens", num_kv, 2);
  ts_expect_i32(m, "prefill_sliding_window_chunk_max_seq_len_q", max_q, 2);
  ts_expect_i32(m, "prefill_sliding_window_chunk_max_seq_len_k", max_k, 2);
  ts_expect_i32(m, "prefill_sliding_window_chunk_cu_seq_lens_q", cu_q, 5);
  ts_expect_i32(m, "prefill_sliding_window_chunk_cu_seq_lens_k", cu_k, 5);
  ts_expect_i32(m, "prefill_sliding_window_chunk_starts", starts, 3);
  ts_expect_i32(m, "prefill_sliding_window_chunk_token_to_seq", tts, 30);
  /* a decode-only batch: the prefill part None, its sliding window too */
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 2, 16, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "prefill_query_start_loc");
  ts_expect_none(m, "prefill_sliding_window_num_chunks");
  ts_expect_none(m, "prefill_sliding_window_chunk_token_to_seq");
  assert_int_equal(ts_int(m, "decode_query_len"), 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* The naive restatement: chunks planned from the bounds `ub`; the tensors from `ub` without
 * decodes in the batch, else from the exact `seq` (token_to_seq then a linear scan of the
 * exact cumulative lengths, clamped to the chunk's last request). */
typedef struct naive_swa {
  int32_t chunks, rs[64], re[64], qs[64], qe[64], nkv[64], mq[64], mk[64];
  int32_t cu_q[128], cu_k[128], starts[64], tts[4096];
  int64_t tokens;
} naive_swa;

static int32_t imin32(int32_t a, int32_t b) { return a < b ? a : b; }

static void naive(const int32_t* q, const int32_t* seq, const int32_t* ub, int64_t np, int nd,
                  int32_t w, int32_t ws, naive_swa* o) {
  int32_t start = 0, end = 0, qoff = 0, c = 0;
  int64_t tok = 0;
  while (start < np) {
    int32_t kv = 0, mq = 0, mk = 0, r, j, cur_q = 0, cur_k = 0, n, base, t;
    while (end < np) {
      const int32_t next = imin32(ub[end], q[end] + w - 1);
      if (kv && kv + next > ws) break;
      kv += next;
      mq = q[end] > mq ? q[end] : mq;
      mk = next > mk ? next : mk;
      ++end;
    }
    o->rs[c] = start;
    o->re[c] = end;
    o->qs[c] = qoff;
    for (r = start; r < end; ++r) qoff += q[r];
    o->qe[c] = qoff;
    o->nkv[c] = kv;
    o->mq[c] = mq;
    o->mk[c] = mk;
    n = end - start;
    base = start + c;
    o->cu_q[base] = o->cu_k[base] = 0;
    for (j = 0; j < n; ++j) {
      const int32_t len = nd ? seq[start + j] : ub[start + j];
      const int32_t k = imin32(len, q[start + j] + w - 1);
      cur_q += q[start + j];
      cur_k += k;
      o->cu_q[base + j + 1] = cur_q;
      o->cu_k[base + j + 1] = cur_k;
      o->starts[start + j] = len - k;
    }
    for (t = 0; t < kv; ++t) {
      int32_t owner = 0;
      for (j = 0; j < n; ++j)
        if (o->cu_k[base + j + 1] <= t) owner = j + 1;
      o->tts[tok + t] = imin32(owner, n - 1);
    }
    tok += kv;
    start = end;
    ++c;
  }
  o->chunks = c;
  o->tokens = tok;
}

static void test_random_vs_naive(void** state) {
  uint64_t rng = 0xd0753;
  int iter;
  (void)state;
  for (iter = 0; iter < 400; ++iter) {
    const int32_t w = (int32_t)(ts_rand_range(&rng, 0, 2) == 0 ? 1 : ts_rand_range(&rng, 2, 300));
    const int32_t ws = (int32_t)(16 * ts_rand_range(&rng, 4, 40));
    attn_kv_cache_spec_t spec = note_spec(w);
    attn_builder_config_t c = note_config(ws);
    const int64_t n = ts_rand_range(&rng, 1, 24);
    int32_t q[24], s[24], ub[24];
    int64_t r, shape[1];
    int nd, total = 0;
    ts_batch* batch;
    attn_tensor_t ub_t;
    attn_metadata_t* m = NULL;
    naive_swa o;
    attn_builder_t* b = ts_builder(DOTS3, &spec, &c);
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)(ts_rand_range(&rng, 0, 2) == 0 ? 1 : ts_rand_range(&rng, 1, 60));
      s[r] = q[r] + (int32_t)ts_rand_range(&rng, 0, 400);
    }
    nd = ts_decodes_first(q, s, n, 1);
    for (r = 0; r < n; ++r) {
      /* an optimistic bound on some rows (an async spec-decode row counted as a prefill) */
      ub[r] = s[r] + (int32_t)(r >= nd && ts_rand_range(&rng, 0, 3) == 0
                                   ? ts_rand_range(&rng, 1, 20) : 0);
      if (r >= nd) total += imin32(ub[r], q[r] + w - 1) > ws;
    }
    batch = ts_batch_make(q, s, n, 16, 0, -1);
    shape[0] = n;
    ub_t = ts_host_tensor(ub, 1, shape, ATTN_DTYPE_INT, 32);
    batch->common.seq_lens_cpu_upper_bound = &ub_t;
    for (r = 0; r < n; ++r)
      if (ub[r] > batch->common.max_seq_len) batch->common.max_seq_len = ub[r];
    if (total > 0) { /* a request wider than the workspace: refused */
      attn_metadata_t* bad = (attn_metadata_t*)UNTOUCHED_PTR;
      ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &bad, NULL), ATTN_ERR_INVALID_ARGUMENT,
                   "latent rows");
      attn_builder_destroy(b);
      ts_batch_free(batch);
      continue;
    }
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    if (nd == n) {
      ts_expect_none(m, "prefill_sliding_window_num_chunks");
    } else {
      naive(q + nd, s + nd, ub + nd, n - nd, nd > 0, w, ws, &o);
      assert_int_equal(ts_int(m, "prefill_sliding_window_num_chunks"), o.chunks);
      ts_expect_i32(m, "prefill_sliding_window_chunk_req_start", o.rs, o.chunks);
      ts_expect_i32(m, "prefill_sliding_window_chunk_req_end", o.re, o.chunks);
      ts_expect_i32(m, "prefill_sliding_window_chunk_query_start", o.qs, o.chunks);
      ts_expect_i32(m, "prefill_sliding_window_chunk_query_end", o.qe, o.chunks);
      ts_expect_i32(m, "prefill_sliding_window_chunk_num_kv_tokens", o.nkv, o.chunks);
      ts_expect_i32(m, "prefill_sliding_window_chunk_max_seq_len_q", o.mq, o.chunks);
      ts_expect_i32(m, "prefill_sliding_window_chunk_max_seq_len_k", o.mk, o.chunks);
      ts_expect_i32(m, "prefill_sliding_window_chunk_cu_seq_lens_q", o.cu_q, n - nd + o.chunks);
      ts_expect_i32(m, "prefill_sliding_window_chunk_cu_seq_lens_k", o.cu_k, n - nd + o.chunks);
      ts_expect_i32(m, "prefill_sliding_window_chunk_starts", o.starts, n - nd);
      ts_expect_i32(m, "prefill_sliding_window_chunk_token_to_seq", o.tts, o.tokens);
    }
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_random_vs_naive),
  };
  return cmocka_run_group_tests_name("dots3_note", tests, NULL, NULL);
}
