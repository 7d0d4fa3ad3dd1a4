/* QWEN4_EXP_EXP_QSA_STATE: vLLM 0.33's QSAMetadataBuilder (models/qwen4_exp/common/qsa_cache.py),
 * the builder of Qwen4-exp's QSA side caches. The class answers (UNIFORM_BATCH, threshold 1 or
 * 1 + k, no block-table or draft update), the spec kinds it takes (CIRCULAR_BUFFER and MLA), a
 * hand-checked batch for each cache (the ring of a CircularBufferSpec, the compressed cache of an
 * MLAAttentionSpec with tokens_per_state 4, the plain cache of tokens_per_state 1), seeded random
 * batches against a naive restatement of the builder (per token and per work item), and the
 * refusals. */
#include "test_support.h"

#define QSA "QWEN4_EXP_EXP_QSA_STATE"

/* QSAKeyStateCache's spec: CircularBufferSpec(block_size = the ring's capacity, 1 head). */
static attn_kv_cache_spec_t ring_spec(int32_t capacity) {
  attn_kv_cache_spec_t s = ts_spec();
  s.kind = ATTN_KV_CIRCULAR_BUFFER;
  s.block_size = capacity;
  s.num_kv_heads = 1;
  s.head_size = 136;
  return s;
}

/* QSACompressedKeyCache's spec: MLAAttentionSpec(block_size, 1 head, tokens_per_state). */
static attn_kv_cache_spec_t compressed_spec(int32_t block_size, int32_t ratio) {
  attn_kv_cache_spec_t s = ts_mla_spec(block_size);
  s.head_size = 128;
  s.tokens_per_state = ratio;
  return s;
}

/* A (rows, 1) int32 table: each request's ring block. */
typedef struct ring_table {
  int32_t ids[16];
  int64_t shape[2];
  attn_tensor_t t;
} ring_table;

static void ring_table_set(ring_table* rt, const int32_t* ids, int64_t rows) {
  int64_t r;
  for (r = 0; r < rows; ++r) rt->ids[r] = ids[r];
  rt->shape[0] = rows;
  rt->shape[1] = 1;
  rt->t = ts_host_tensor(rt->ids, 2, rt->shape, ATTN_DTYPE_INT, 32);
}

static void test_answers(void** state) {
  attn_kv_cache_spec_t ring = ring_spec(4), mla = compressed_spec(16, 4), full = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = NULL;
  int32_t level = -1, th = 0, v = 0, has = 1, yes = 1;
  (void)state;
  ASSERT_OK(attn_backend_cudagraph_support(QSA, &ring, &c, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_backend_cudagraph_support(QSA, &mla, &c, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  b = ts_builder(QSA, &ring, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
  assert_int_equal(th, 1);
  ASSERT_OK(attn_builder_varlen_cudagraph_max_query_len(b, &v, &has));
  assert_int_equal(has, 0);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &yes));
  assert_int_equal(yes, 0);
  yes = 1;
  ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &yes));
  assert_int_equal(yes, 0);
  attn_builder_destroy(b);
  /* _init_reorder_batch_threshold(1, supports_spec_as_decode=True): 1 + k */
  c.num_speculative_tokens = 2;
  b = ts_builder(QSA, &mla, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
  assert_int_equal(th, 3);
  attn_builder_destroy(b);
  /* the QSA layers' two kinds only */
  b = NULL;
  ASSERT_ERROR(attn_builder_create(QSA, &full, &c, &b), ATTN_ERR_UNSUPPORTED,
               "FULL_ATTENTION KV cache specs");
  assert_null(b);
}

/* The ring: capacity 4. Queries [1, 1, 5] onto [9, 4, 7], ring blocks [5, 0 (null), 7], one
 * padding row counted as actual (num_actual_tokens 8, query_start_loc[3] = 7).
 * token_to_req 0 1 2 2 2 2 2 | 0; logical_positions 8 3 2 3 4 5 6 | -1; visible_blocks (ratio 1)
 * min(pos + 1, seq_len): 9 4 3 4 5 6 7 | 0. slot_mapping: request 0: 5 * 4 + 8 % 4 = 20;
 * request 1: the null block, -1; request 2 keeps its query's last 4 rows (t + 4 >= 7): t = 2 is
 * -1, then 7 * 4 + 3, 0, 1, 2 = 31 28 29 30; padding -1. Split at threshold 1: the decodes 0 and
 * 1 (2 tokens), then the prefill (6 tokens: num_actual_tokens counts the padding).
 * storage_block_size 4, compress_ratio 1, k_work_metadata (0, 2). The table has one column
 * whatever the seq_lens (CircularBufferSpec: one block per request). */
static void test_ring_hand_checked(void** state) {
  static const int32_t q[3] = {1, 1, 5}, s[3] = {9, 4, 7}, ring[3] = {5, 0, 7};
  attn_kv_cache_spec_t spec = ring_spec(4);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(QSA, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, 8);
  ring_table rt;
  attn_metadata_t* m = NULL;
  const attn_tensor_t* kw;
  (void)state;
  ring_table_set(&rt, ring, 3);
  batch->common.block_table_tensor = &rt.t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), QSA);
  assert_int_equal(attn_metadata_field_count(m), 18);
  {
    const int32_t t2r[8] = {0, 1, 2, 2, 2, 2, 2, 0}, vis[8] = {9, 4, 3, 4, 5, 6, 7, 0};
    const int64_t pos[8] = {8, 3, 2, 3, 4, 5, 6, -1}, slot[8] = {20, -1, -1, 31, 28, 29, 30, -1};
    ts_expect_i32(m, "token_to_req", t2r, 8);
    ts_expect_i64(m, "logical_positions", pos, 8);
    ts_expect_i32(m, "visible_blocks", vis, 8);
    ts_expect_i64(m, "slot_mapping", slot, 8);
  }
  assert_ptr_equal(ts_tensor(m, "block_table")->data, rt.ids);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
  kw = ts_tensor(m, "k_work_metadata");
  assert_int_equal(kw->ndim, 2);
  assert_int_equal(kw->shape[0], 0);
  assert_int_equal(kw->shape[1], 2);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 8);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 6);
  assert_int_equal(ts_int(m, "max_query_len"), 5);
  assert_int_equal(ts_int(m, "decode_query_len"), 1);
  assert_int_equal(ts_int(m, "max_seq_len"), 9);
  assert_int_equal(ts_int(m, "storage_block_size"), 4);
  assert_int_equal(ts_int(m, "compress_ratio"), 1);
  /* capture builds are build's (the base class's), on a uniform batch: the first two */
  ts_batch_free(batch);
  batch = ts_batch_make(q, s, 2, 16, 0, -1);
  ring_table_set(&rt, ring, 2);
  batch->common.block_table_tensor = &rt.t;
  m = NULL;
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  {
    const int64_t slot[2] = {20, -1};
    ts_expect_i64(m, "slot_mapping", slot, 2);
  }
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* The compressed cache: MLAAttentionSpec(block_size 8, tokens_per_state 4): storage_block_size
 * 2, compress_ratio 4. Queries [2, 9] onto [12, 9]: block table [1, 2 | 3, 4].
 * logical_positions 10 11 | 0..8; visible_blocks min((pos + 1) / 4, seq / 4): 2 3 | 0 0 0 1 1 1 1
 * 2 2. Slots for the tokens that close a group ((pos + 1) % 4 == 0): pos 11 (t 1): state 2,
 * block [0][1] = 2: 2 * 2 + 0 = 4; pos 3 (t 5): state 0, block 3: 6; pos 7 (t 9): state 1,
 * block 3: 7. k_work_metadata: (11 + 3 * 2) / 4 = 4 rows; request 0 owns 12/4 - 10/4 = 1 item,
 * request 1 9/4 - 0 = 2: (0, 0) (1, 0) (1, 1) (-1, -1). All prefills (the first query is 2). */
static void test_compressed_hand_checked(void** state) {
  static const int32_t q[2] = {2, 9}, s[2] = {12, 9};
  attn_kv_cache_spec_t spec = compressed_spec(8, 4);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(QSA, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 2, 8, 0, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* kw;
  (void)state;
  assert_int_equal(batch->width, 2);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  {
    const int32_t t2r[11] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int32_t vis[11] = {2, 3, 0, 0, 0, 1, 1, 1, 1, 2, 2};
    const int64_t pos[11] = {10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8};
    const int64_t slot[11] = {-1, 4, -1, -1, -1, 6, -1, -1, -1, 7, -1};
    const int32_t work[8] = {0, 0, 1, 0, 1, 1, -1, -1};
    int i;
    ts_expect_i32(m, "token_to_req", t2r, 11);
    ts_expect_i64(m, "logical_positions", pos, 11);
    ts_expect_i32(m, "visible_blocks", vis, 11);
    ts_expect_i64(m, "slot_mapping", slot, 11);
    kw = ts_tensor(m, "k_work_metadata");
    assert_int_equal(kw->ndim, 2);
    assert_int_equal(kw->shape[0], 4);
    assert_int_equal(kw->shape[1], 2);
    assert_int_equal(kw->dtype.bits, 32);
    for (i = 0; i < 8; ++i) assert_int_equal(((const int32_t*)kw->data)[i], work[i]);
  }
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 11);
  assert_int_equal(ts_int(m, "decode_query_len"), 0);
  assert_int_equal(ts_int(m, "storage_block_size"), 2);
  assert_int_equal(ts_int(m, "compress_ratio"), 4);
  /* a negative block gives -1, the null block 0 a slot (valid &= block >= 0), and a token whose
   * batch slot is -1 no slot */
  batch->bt[1 * batch->width + 0] = 0;
  batch->slots[9] = -1;
  batch->bt[0 * batch->width + 1] = -1;
  m = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  {
    const int64_t slot[11] = {-1, -1, -1, -1, -1, 0, -1, -1, -1, -1, -1};
    ts_expect_i64(m, "slot_mapping", slot, 11);
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* The plain cache (tokens_per_state 1): the batch's slot_mapping (a view, cut to
 * num_actual_tokens), no work items. A padded uniform batch with k = 2 (threshold 3): queries
 * [3, 3, 0, 3] are all decodes, decode_query_len 3; queries [0, 3, 3]: the empty first request
 * is the one decode (its query is 0: decode_query_len 0). */
static void test_plain_and_uniform(void** state) {
  static const int32_t q[4] = {3, 3, 0, 3}, s[4] = {10, 5, 0, 3};
  static const int32_t q2[3] = {0, 3, 3}, s2[3] = {4, 6, 3};
  attn_kv_cache_spec_t spec = compressed_spec(16, 0);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 0, 12);
  ts_batch* other = ts_batch_make(q2, s2, 3, 16, 0, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* sm;
  (void)state;
  c.num_speculative_tokens = 2;
  b = ts_builder(QSA, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  sm = ts_tensor(m, "slot_mapping");
  assert_ptr_equal(sm->data, batch->slots);
  assert_int_equal(sm->shape[0], 12);
  assert_int_equal(ts_tensor(m, "k_work_metadata")->shape[0], 0);
  assert_int_equal(ts_int(m, "num_decodes"), 4);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 12);
  assert_int_equal(ts_int(m, "num_prefills"), 0);
  assert_int_equal(ts_int(m, "decode_query_len"), 3);
  assert_int_equal(ts_int(m, "storage_block_size"), 16);
  assert_int_equal(ts_int(m, "compress_ratio"), 1);
  {
    const int64_t pos[12] = {7, 8, 9, 2, 3, 4, 0, 1, 2, -1, -1, -1};
    const int32_t vis[12] = {8, 9, 10, 3, 4, 5, 1, 2, 3, 0, 0, 0};
    ts_expect_i64(m, "logical_positions", pos, 12);
    ts_expect_i32(m, "visible_blocks", vis, 12);
  }
  m = NULL;
  ASSERT_OK(attn_build(b, 0, &other->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 0);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 6);
  assert_int_equal(ts_int(m, "decode_query_len"), 0);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  ts_batch_free(other);
}

/* vLLM's split_decodes_and_prefills(threshold, require_uniform=True), restated. */
static void naive_split(const int32_t* q, int64_t n, int64_t tokens, int64_t max_q,
                        int64_t threshold, int64_t* nd, int64_t* ndt) {
  int64_t r, first = -1, uniform = 1, sum = 0;
  if (max_q <= threshold && threshold <= 1) {
    *nd = n;
    *ndt = tokens;
    return;
  }
  if (q[0] > threshold) {
    *nd = 0;
    *ndt = 0;
    return;
  }
  for (r = 0; r < n; ++r) uniform &= q[r] == q[0] || q[r] == 0;
  if (uniform) {
    *nd = n;
    *ndt = tokens;
    return;
  }
  for (r = 0; r < n && first < 0; ++r)
    if (q[r] != q[0] && q[r] != 0) first = r;
  for (r = 0; r < first; ++r) sum += q[r];
  *nd = first;
  *ndt = sum;
}

/* Seeded random batches against a naive restatement of QSAMetadataBuilder.build: the three
 * caches (ring capacities 4 and 8, compress ratios 1, 2 and 4 at block sizes 8 and 16), empty
 * queries, padding rows counted as actual tokens, null and negative blocks, batch slots of -1,
 * speculative thresholds. */
static void test_random_vs_naive(void** state) {
  uint64_t rng = 0x95a5eULL;
  int iter;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    const int cache = iter % 3; /* 0 ring, 1 compressed, 2 plain */
    const int32_t cap = iter % 2 ? 4 : 8, bs = iter % 4 < 2 ? 8 : 16;
    const int32_t ratio = cache == 1 ? (iter % 5 < 2 ? 2 : 4) : 1;
    const int64_t k = ts_rand_range(&rng, 0, 2), n = ts_rand_range(&rng, 1, 12);
    const int64_t pad = ts_rand_range(&rng, 0, 4);
    const int uniform = ts_rand_range(&rng, 0, 2) == 0;
    int32_t q[12], s[12], ring[12];
    int64_t r, i, t, tokens = 0, max_q = 0, nd, ndt, dql = 0, storage, rows;
    attn_kv_cache_spec_t spec = cache == 0 ? ring_spec(cap) : compressed_spec(bs, ratio);
    attn_builder_config_t c = ts_config();
    attn_builder_t* b;
    ts_batch* batch;
    ring_table rt;
    attn_metadata_t* m = NULL;
    const attn_tensor_t *kw, *t2r_t, *pos_t, *vis_t, *slot_t;
    int64_t work_owner[512], work_item[512], total = 0;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)(uniform ? (ts_rand_range(&rng, 0, 4) ? 1 + k : 0)
                               : ts_rand_range(&rng, 0, 20));
      s[r] = q[r] + (int32_t)ts_rand_range(&rng, 0, 60);
      tokens += q[r];
      if (q[r] > max_q) max_q = q[r];
      ring[r] = (int32_t)ts_rand_range(&rng, -1, 9);
    }
    c.num_speculative_tokens = (int32_t)k;
    b = ts_builder(QSA, &spec, &c);
    batch = ts_batch_make(q, s, n, cache == 0 ? 16 : bs, 0, tokens + pad);
    if (cache == 0) {
      ring_table_set(&rt, ring, n);
      batch->common.block_table_tensor = &rt.t;
    } else {
      for (i = 0; i < n * batch->width; ++i)
        if (ts_rand_range(&rng, 0, 9) == 0) batch->bt[i] = (int32_t)ts_rand_range(&rng, -1, 0);
      for (t = 0; t < tokens; ++t)
        if (ts_rand_range(&rng, 0, 9) == 0) batch->slots[t] = -1;
    }
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    /* the split and its scalars */
    naive_split(q, n, tokens + pad, max_q, 1 + k, &nd, &ndt);
    for (r = 0; r < nd && dql == 0; ++r) dql = q[r];
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_decode_tokens"), ndt);
    assert_int_equal(ts_int(m, "num_prefills"), n - nd);
    assert_int_equal(ts_int(m, "num_prefill_tokens"), tokens + pad - ndt);
    assert_int_equal(ts_int(m, "decode_query_len"), dql);
    assert_int_equal(ts_int(m, "num_actual_tokens"), tokens + pad);
    storage = cache == 0 ? cap : bs / (ratio > 0 ? ratio : 1);
    assert_int_equal(ts_int(m, "storage_block_size"), storage);
    assert_int_equal(ts_int(m, "compress_ratio"), ratio);
    /* per token (Python's torch fallback, restated; every value here is >= 0 where it
     * divides, so floor and C division agree) */
    t2r_t = ts_tensor(m, "token_to_req");
    pos_t = ts_tensor(m, "logical_positions");
    vis_t = ts_tensor(m, "visible_blocks");
    slot_t = ts_tensor(m, "slot_mapping");
    assert_int_equal(t2r_t->shape[0], tokens + pad);
    assert_int_equal(slot_t->shape[0], tokens + pad);
    for (t = 0, r = 0; t < tokens + pad; ++t) {
      int64_t req = 0, pos = -1, seq = 0, end = 0, want_slot = -1, got_slot;
      if (t < tokens) {
        while (batch->qsl[r + 1] <= t) ++r;
        req = r;
        seq = s[r];
        end = batch->qsl[r + 1];
        pos = seq - q[r] + (t - batch->qsl[r]);
      }
      if (cache == 2) {
        want_slot = batch->slots[t];
      } else if (cache == 0) {
        if (pos >= 0 && t + cap >= end && ring[req] > 0) want_slot = ring[req] * cap + pos % cap;
      } else if (pos >= 0 && (pos + 1) % ratio == 0 && batch->slots[t] >= 0) {
        const int64_t state_index = pos / ratio, col = state_index / storage;
        if (col < batch->width && batch->bt[req * batch->width + col] >= 0)
          want_slot = batch->bt[req * batch->width + col] * storage + state_index % storage;
      }
      {
        const int64_t vis = (pos + 1) / ratio < seq / ratio ? (pos + 1) / ratio : seq / ratio;
        if (((const int32_t*)t2r_t->data)[t] != req ||
            ((const int64_t*)pos_t->data)[t] != pos ||
            ((const int32_t*)vis_t->data)[t] != (vis > 0 ? vis : 0))
          fail_msg("iter %d: token %lld: request/position/visible %d %lld %d, expected %lld %lld "
                   "%lld", iter, (long long)t, ((const int32_t*)t2r_t->data)[t],
                   (long long)((const int64_t*)pos_t->data)[t],
                   ((const int32_t*)vis_t->data)[t], (long long)req, (long long)pos,
                   (long long)(vis > 0 ? vis : 0));
      }
      got_slot = ((const int64_t*)slot_t->data)[t];
      if (got_slot != want_slot)
        fail_msg("iter %d (cache %d): token %lld: slot %lld, expected %lld", iter, cache,
                 (long long)t, (long long)got_slot, (long long)want_slot);
    }
    /* per work item: each request's items listed in order */
    kw = ts_tensor(m, "k_work_metadata");
    rows = cache == 1 ? (tokens + pad + (ratio - 1) * n) / ratio : 0;
    assert_int_equal(kw->shape[0], rows);
    for (r = 0; r < n && cache == 1; ++r) {
      int64_t groups = s[r] / ratio - (s[r] - q[r]) / ratio, j;
      if (q[r] == 0) groups = 0;
      else if (groups < 1) groups = 1;
      for (j = 0; j < groups; ++j, ++total) {
        work_owner[total] = r;
        work_item[total] = j;
      }
    }
    assert_true(total <= rows);
    for (i = 0; i < rows; ++i) {
      const int32_t* w = (const int32_t*)kw->data + 2 * i;
      const int64_t owner = i < total ? work_owner[i] : -1, item = i < total ? work_item[i] : -1;
      if (w[0] != owner || w[1] != item)
        fail_msg("iter %d: work %lld: (%d, %d), expected (%lld, %lld)", iter, (long long)i, w[0],
                 w[1], (long long)owner, (long long)item);
    }
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

static void test_refusals(void** state) {
  static const int32_t q[1] = {1}, s[1] = {5};
  attn_kv_cache_spec_t spec = ring_spec(4);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = NULL;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  (void)state;
  /* a kind past the last one */
  spec.kind = ATTN_KV_CIRCULAR_BUFFER + 1;
  ASSERT_ERROR(attn_builder_create(QSA, &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->kind=8 is not an ATTN_KV_* kind (0..7)");
  /* other backends refuse the ring's kind by name */
  spec = ring_spec(16);
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "CIRCULAR_BUFFER KV cache specs");
  assert_null(b);
  /* build_qsa_metadata_triton asserts num_reqs > 0 */
  spec = ring_spec(4);
  b = ts_builder(QSA, &spec, &c);
  batch = ts_batch_make(q, s, 1, 16, 0, -1);
  batch->common.num_reqs = 0;
  batch->qsl_shape[0] = 1;
  batch->seq_shape[0] = 0;
  batch->bt_shape[0] = 0;
  batch->common.num_actual_tokens = 0;
  batch->common.max_query_len = 0;
  batch->common.max_seq_len = 0;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->num_reqs=0: " QSA " needs a request");
  assert_null(m);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_answers),
      cmocka_unit_test(test_ring_hand_checked),
      cmocka_unit_test(test_compressed_hand_checked),
      cmocka_unit_test(test_plain_and_uniform),
      cmocka_unit_test(test_random_vs_naive),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests_name("qsa_state", tests, NULL, NULL);
}
