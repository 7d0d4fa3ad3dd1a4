/* The utilities that make a new batch: KV-sharing fast prefill, local-attention virtual batches
 * (and the block-table remap), micro-batch slices. vLLM's vectors, edge cases, seeded random
 * batches against naive computations, and the results fed to a FLASH_ATTN build. */
#include "json.h"
#include "test_support.h"

#define I32(data, shape) ts_host_tensor((data), 1, (shape), ATTN_DTYPE_INT, 32)
#define I64(data, shape) ts_host_tensor((data), 1, (shape), ATTN_DTYPE_INT, 64)

static json_value* vectors(const char* name) {
  char path[1024];
  json_value* v;
  snprintf(path, sizeof path, "%s/%s", ATTN_TEST_VECTORS_DIR, name);
  v = json_load(path);
  if (v == NULL) fail_msg("cannot read %s", path);
  return v;
}

static const int32_t* i32_data(const attn_tensor_t* t) {
  return (const int32_t*)((const char*)t->data + t->byte_offset);
}

/* Builds FLASH_ATTN metadata on a "common" result, to show it is a valid batch. */
static void build_on(const attn_metadata_t* batch, int32_t block_size) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_common_metadata_t c = ATTN_COMMON_METADATA_INIT;
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  spec.block_size = block_size;
  config.device_capability = 80;
  ASSERT_OK(attn_metadata_to_common(batch, &c));
  b = ts_builder("FLASH_ATTN", &spec, &config);
  ASSERT_OK(attn_build(b, 0, &c, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_actual_tokens"), c.num_actual_tokens);
  attn_builder_destroy(b);
}

/* ---- fast prefill ----------------------------------------------------------------------------- */
static void test_fast_prefill_vector(void** state) {
  json_value* v = vectors("kv_sharing_fast_prefill.json");
  const json_value* cs = &json_get(v, "cases")->items[0];
  const json_value* e = json_get(cs, "expected");
  int64_t q64[8], s64[8], li[8], eq[8], es[8];
  int32_t q[8], s[8], qsl_out[4], qsl_cpu[4];
  int64_t li_shape[1], o_shape[1] = {4};
  size_t n = json_ints(json_get(cs, "query_lens"), q64, 8), i;
  const size_t nli = json_ints(json_get(cs, "logits_indices_padded"), li, 8);
  ts_batch* b;
  attn_tensor_t lit, ot = I32(qsl_out, o_shape), oct = I32(qsl_cpu, o_shape);
  attn_metadata_t* r = NULL;
  (void)state;
  json_ints(json_get(cs, "seq_lens"), s64, 8);
  for (i = 0; i < n; ++i) {
    q[i] = (int32_t)q64[i];
    s[i] = (int32_t)s64[i];
  }
  b = ts_batch_make(q, s, (int64_t)n, (int32_t)json_get(cs, "block_size")->number, 0, -1);
  li_shape[0] = (int64_t)nli;
  lit = I64(li, li_shape);
  b->common.logits_indices_padded = &lit;
  b->common.num_logits_indices = (int64_t)json_get(cs, "num_logits_indices")->number;
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct, &r, NULL));
  assert_int_equal(json_ints(json_get(e, "query_start_loc"), eq, 8), 4);
  ts_expect_i32(r, "query_start_loc", (int32_t[]){(int32_t)eq[0], (int32_t)eq[1], (int32_t)eq[2], (int32_t)eq[3]}, 4);
  ts_expect_i32(r, "query_start_loc_cpu", qsl_out, 4);
  assert_int_equal(ts_int(r, "num_actual_tokens"), (int64_t)json_get(e, "num_actual_tokens")->number);
  assert_int_equal(ts_int(r, "max_query_len"), (int64_t)json_get(e, "max_query_len")->number);
  json_ints(json_get(e, "seq_lens"), es, 8);
  for (i = 0; i < n; ++i) assert_int_equal(i32_data(ts_tensor(r, "seq_lens"))[i], es[i]);
  assert_ptr_equal(ts_tensor(r, "seq_lens")->data, b->seq);           /* kept as is */
  assert_ptr_equal(ts_tensor(r, "block_table_tensor")->data, b->bt);
  assert_int_equal(ts_tensor(r, "slot_mapping")->shape[0], 28);       /* the full one */
  assert_null(ts_tensor(r, "logits_indices_padded"));
  assert_int_equal(ts_int(r, "causal"), 1);
  build_on(r, 16);
  attn_metadata_destroy(r);
  /* vLLM 0.33 takes max_query_len from max_logits_per_req (no sync of the per-request counts):
   * a larger value is passed on as it is */
  {
    const int64_t max_q = (int64_t)json_get(e, "max_query_len")->number;
    assert_true(max_q > 0);
    b->common.max_logits_per_req = max_q + 2;
    r = NULL;
    ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct,
                                                                     &r, NULL));
    assert_int_equal(ts_int(r, "max_query_len"), max_q + 2);
    attn_metadata_destroy(r);
    /* one below the logits of one request is refused, named */
    b->common.max_logits_per_req = max_q - 1;
    r = (attn_metadata_t*)UNTOUCHED_PTR;
    ASSERT_ERROR(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot,
                                                                        &oct, &r, NULL),
                 ATTN_ERR_INVALID_ARGUMENT, "common->max_logits_per_req=");
    assert_ptr_equal(r, UNTOUCHED_PTR);
  }
  ts_batch_free(b);
  json_free(v);
}

static void test_fast_prefill_decodes_pass_through(void** state) {
  static const int32_t q[3] = {1, 1, 1}, s[3] = {5, 6, 7};
  ts_batch* b = ts_batch_make(q, s, 3, 16, 0, -1);
  int32_t out[4] = {-9, -9, -9, -9}, out_cpu[4] = {-9, -9, -9, -9};
  int64_t os[1] = {4};
  attn_tensor_t ot = I32(out, os), oct = I32(out_cpu, os);
  attn_metadata_t* r = NULL;
  (void)state;
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct, &r, NULL));
  assert_ptr_equal(ts_tensor(r, "query_start_loc")->data, b->qsl);
  assert_int_equal(ts_int(r, "num_actual_tokens"), 3);
  assert_int_equal(out[0], -9); /* outputs untouched */
  assert_int_equal(out_cpu[3], -9);
  attn_metadata_destroy(r);
  ts_batch_free(b);
}

/* Not armed (no logits indices, as in a CUDA graph capture): vLLM 0.33 returns the batch as it
 * is, whatever its query lengths (libattn 1.3 refused it). */
static void test_fast_prefill_not_armed_passes_through(void** state) {
  static const int32_t q[2] = {4, 4}, s[2] = {9, 9};
  ts_batch* b = ts_batch_make(q, s, 2, 16, 0, -1);
  int32_t out[3] = {-9, -9, -9}, out_cpu[3] = {-9, -9, -9};
  int64_t os[1] = {3};
  attn_tensor_t ot = I32(out, os), oct = I32(out_cpu, os);
  attn_metadata_t* r = NULL;
  (void)state;
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct, &r, NULL));
  assert_ptr_equal(ts_tensor(r, "query_start_loc")->data, b->qsl);
  assert_int_equal(ts_int(r, "num_actual_tokens"), 8);
  assert_int_equal(ts_int(r, "max_query_len"), 4);
  assert_int_equal(out[0], -9); /* outputs untouched */
  assert_int_equal(out_cpu[2], -9);
  attn_metadata_destroy(r);
  /* libattn 1.7 (issue 18): the pass-through reads no value, as vLLM's returns at once, so a
   * value the caller got wrong is passed on (a build of the result checks it) ... */
  b->qsl[1] = 9;
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct, &r, NULL));
  assert_ptr_equal(ts_tensor(r, "query_start_loc")->data, b->qsl);
  attn_metadata_destroy(r);
  /* ... but a malformed view or scalar is still refused before the pass-through */
  b->common.max_query_len = -1;
  r = (attn_metadata_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct, &r, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "max_query_len=-1");
  assert_ptr_equal(r, UNTOUCHED_PTR);
  b->common.max_query_len = 4;
  b->qsl_shape[0] = 2;
  ASSERT_ERROR(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct, &r, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "query_start_loc");
  assert_ptr_equal(r, UNTOUCHED_PTR);
  ts_batch_free(b);
}

static void test_fast_prefill_random(void** state) {
  uint64_t seed = 13;
  int iter;
  (void)state;
  for (iter = 0; iter < 1000; ++iter) {
    int32_t q[32], s[32], out[33], out_cpu[33], idx[256];
    const int64_t n = ts_rand_range(&seed, 1, 32);
    int64_t r, k, ni = 0, os[1] = {n + 1}, is[1], total = 0, counts[32] = {0}, max_c = 0, acc;
    ts_batch* b;
    attn_tensor_t it, ot, oct;
    attn_metadata_t* res = NULL;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 0, 8);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 20);
      total += q[r];
    }
    if (total == 0) {
      q[0] = 2;
      s[0] = s[0] < 2 ? 2 : s[0];
      total = 2;
    }
    b = ts_batch_make(q, s, n, 16, 0, -1);
    if (b->common.max_query_len == 1) b->common.max_query_len = 2; /* an upper bound: still the fast path */
    /* a sorted subset of the tokens */
    for (k = 0; k < total && ni < 256; ++k)
      if (ts_rand_range(&seed, 0, 2) == 0) idx[ni++] = (int32_t)k;
    is[0] = ni + 2; /* CUDA-graph padding after the real indices */
    idx[ni] = idx[ni + 1] = 999999;
    it = I32(idx, is);
    b->common.logits_indices_padded = &it;
    b->common.num_logits_indices = ni;
    ot = I32(out, os);
    oct = I32(out_cpu, os);
    ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct, &res, NULL));
    for (k = 0; k < ni; ++k) { /* naive: the request whose token range holds the index */
      for (r = 0; r < n; ++r)
        if (idx[k] >= b->qsl[r] && idx[k] < b->qsl[r + 1]) break;
      counts[r]++;
    }
    acc = 0;
    assert_int_equal(out[0], 0);
    for (r = 0; r < n; ++r) {
      acc += counts[r];
      if (counts[r] > max_c) max_c = counts[r];
      assert_int_equal(out[r + 1], acc);
      assert_int_equal(out_cpu[r + 1], acc);
    }
    assert_int_equal(ts_int(res, "num_actual_tokens"), ni);
    assert_int_equal(ts_int(res, "max_query_len"), max_c);
    attn_metadata_destroy(res);
    ts_batch_free(b);
  }
}

static void test_fast_prefill_bad_input(void** state) {
  static const int32_t q[2] = {4, 4}, s[2] = {9, 9};
  ts_batch* b = ts_batch_make(q, s, 2, 16, 0, -1);
  int32_t idx[3] = {1, 5, 7}, out[3], out_cpu[3];
  int64_t is[1] = {3}, os[1] = {3}, small[1] = {2};
  attn_tensor_t it = I32(idx, is), ot = I32(out, os), oct = I32(out_cpu, os), sot = I32(out, small), dev;
  attn_metadata_t* r = (attn_metadata_t*)UNTOUCHED_PTR;
  (void)state;
  b->common.logits_indices_padded = &it;
  b->common.num_logits_indices = 3;
  idx[1] = 0;
  ASSERT_ERROR(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct, &r, NULL),
               ATTN_ERR_INVALID_ARGUMENT,
               "logits_indices_padded[1]=0 is less than logits_indices_padded[0]=1 (the indices must be sorted)");
  idx[1] = 5;
  idx[2] = 8;
  ASSERT_ERROR(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct, &r, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "logits_indices_padded[2]=8 is outside the batch's 8 query tokens");
  idx[2] = 7;
  ASSERT_ERROR(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &sot, &oct, &r, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_query_start_loc has 2 entries but 3 are needed");
  {
    /* a device batch (tensors tagged CUDA, host mirrors given): the logits need a host copy */
    attn_tensor_t dq = b->qsl_t, ds = b->seq_t, dbt = b->bt_t, dsm = b->sm_t, dout = ot;
    dev = it;
    dq.device.device_type = ds.device.device_type = dbt.device.device_type = ATTN_DEVICE_CUDA;
    dsm.device.device_type = dev.device.device_type = dout.device.device_type = ATTN_DEVICE_CUDA;
    b->common.query_start_loc = &dq;
    b->common.query_start_loc_cpu = &b->qsl_t;
    b->common.seq_lens = &ds;
    b->common.block_table_tensor = &dbt;
    b->common.slot_mapping = &dsm;
    b->common.logits_indices_padded = &dev;
    ASSERT_ERROR(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &dout, &oct, &r, NULL),
                 ATTN_ERR_INVALID_ARGUMENT,
                 "one is required when common->logits_indices_padded is on cuda:0");
  }
  assert_ptr_equal(r, UNTOUCHED_PTR);
  ts_batch_free(b);
}

/* ---- local attention -------------------------------------------------------------------------- */
typedef struct {
  int32_t qsl[129], qsl_cpu[129], seq[128], seq_cpu[128], computed[128], bt[128 * 8], vreq[128],
      vstart[128];
  int64_t s_v1[1], s_v[1], s_bt[2];
  attn_tensor_t qsl_t, qsl_cpu_t, seq_t, seq_cpu_t, computed_t, bt_t, vreq_t, vstart_t;
  attn_local_attention_out_t out;
} local_out;

static void local_out_init(local_out* o, int64_t v, int64_t pages) {
  const attn_local_attention_out_t init = ATTN_LOCAL_ATTENTION_OUT_INIT;
  o->s_v1[0] = v + 1;
  o->s_v[0] = v;
  o->s_bt[0] = v;
  o->s_bt[1] = pages;
  o->qsl_t = I32(o->qsl, o->s_v1);
  o->qsl_cpu_t = I32(o->qsl_cpu, o->s_v1);
  o->seq_t = I32(o->seq, o->s_v);
  o->seq_cpu_t = I32(o->seq_cpu, o->s_v);
  o->computed_t = I32(o->computed, o->s_v);
  o->bt_t = ts_host_tensor(o->bt, 2, o->s_bt, ATTN_DTYPE_INT, 32);
  o->vreq_t = I32(o->vreq, o->s_v);
  o->vstart_t = I32(o->vstart, o->s_v);
  o->out = init;
  o->out.query_start_loc = &o->qsl_t;
  o->out.query_start_loc_cpu = &o->qsl_cpu_t;
  o->out.seq_lens = &o->seq_t;
  o->out.seq_lens_cpu = &o->seq_cpu_t;
  o->out.num_computed_tokens_cpu = &o->computed_t;
  o->out.block_table = &o->bt_t;
  o->out.virtual_req = &o->vreq_t;
  o->out.virtual_block_start = &o->vstart_t;
}

static void test_local_attention_vector(void** state) {
  json_value* v = vectors("local_attention_virtual_batches.json");
  const json_value* cs = &json_get(v, "cases")->items[0];
  const json_value* e = json_get(cs, "expected");
  const json_value* bt_rows = json_get(cs, "block_table");
  const json_value* want_bt = json_get(e, "block_table_local");
  int64_t q64[8], s64[8], eq[16], ek[16], ec[16], estart[16], nv = -1, k;
  int32_t q[8], s[8];
  const int32_t chunk = (int32_t)json_get(cs, "attn_chunk_size")->number;
  const int32_t block = (int32_t)json_get(cs, "block_size")->number;
  size_t n = json_ints(json_get(cs, "query_lens"), q64, 8), i;
  ts_batch* b;
  static local_out o;
  attn_metadata_t* r = NULL;
  (void)state;
  json_ints(json_get(cs, "seq_lens"), s64, 8);
  for (i = 0; i < n; ++i) {
    q[i] = (int32_t)q64[i];
    s[i] = (int32_t)s64[i];
  }
  b = ts_batch_make(q, s, (int64_t)n, block, 10, -1);
  for (i = 0; i < n; ++i) {
    int64_t row[16];
    size_t j, w = json_ints(&bt_rows->items[i], row, 16);
    for (j = 0; j < w; ++j) b->bt[i * 10 + j] = (int32_t)row[j];
  }
  ASSERT_OK(attn_local_attention_num_virtual_batches(chunk, &b->common, &nv));
  assert_int_equal(nv, (int64_t)json_get(e, "num_reqs")->number);
  local_out_init(&o, nv, chunk / block);
  ASSERT_OK(attn_make_local_attention_virtual_batches(chunk, &b->common, block, &o.out, &r, NULL));
  assert_int_equal(ts_int(r, "num_reqs"), nv);
  assert_int_equal(ts_int(r, "max_query_len"), (int64_t)json_get(e, "max_query_len")->number);
  assert_int_equal(ts_int(r, "max_seq_len"), (int64_t)json_get(e, "max_seq_len")->number);
  assert_int_equal(ts_int(r, "num_actual_tokens"), 19); /* kept */
  assert_ptr_equal(ts_tensor(r, "slot_mapping")->data, b->slots);
  json_ints(json_get(e, "query_start_loc"), eq, 16);
  json_ints(json_get(e, "seqlens_k_local"), ek, 16);
  json_ints(json_get(e, "num_computed_tokens_local"), ec, 16);
  json_ints(json_get(e, "k_seqstarts_absolute"), estart, 16);
  for (k = 0; k <= nv; ++k) {
    assert_int_equal(o.qsl[k], eq[k]);
    assert_int_equal(o.qsl_cpu[k], eq[k]);
  }
  for (k = 0; k < nv; ++k) {
    int64_t row[4];
    size_t j, w = json_ints(&want_bt->items[k], row, 4);
    assert_int_equal(o.seq[k], ek[k]);
    assert_int_equal(o.seq_cpu[k], ek[k]);
    assert_int_equal(o.computed[k], ec[k]);
    assert_int_equal(o.vstart[k], estart[k] / block);
    for (j = 0; j < w; ++j) assert_int_equal(o.bt[k * (chunk / block) + (int64_t)j], row[j]);
  }
  assert_int_equal(ts_tensor(r, "block_table_tensor")->shape[1], chunk / block);
  attn_metadata_destroy(r);
  ts_batch_free(b);
  json_free(v);
}

/* Naive: walk the query tokens of each request, one virtual batch per chunk they touch. */
typedef struct {
  int64_t v;
  int32_t q[512], kv[512], req[512], kstart[512];
} naive_local;

static void naive_local_batches(const int32_t* q, const int32_t* s, int64_t n, int32_t chunk,
                                naive_local* out) {
  int64_t r;
  out->v = 0;
  for (r = 0; r < n; ++r) {
    const int64_t ctx = s[r] - q[r];
    int64_t p = ctx;
    if (q[r] == 0) { /* vLLM still makes one (empty) virtual batch */
      const int64_t start = s[r] == 0 ? 0 : (s[r] - 1) / chunk * chunk;
      out->q[out->v] = 0;
      out->kv[out->v] = (int32_t)(s[r] == 0 ? chunk : s[r] - start);
      out->req[out->v] = (int32_t)r;
      out->kstart[out->v] = (int32_t)(s[r] == 0 ? -chunk : start);
      out->v++;
      continue;
    }
    while (p < s[r]) {
      const int64_t start = p / chunk * chunk, end = start + chunk < s[r] ? start + chunk : s[r];
      out->q[out->v] = (int32_t)(end - p);
      out->kv[out->v] = (int32_t)(end == s[r] ? s[r] - start : chunk);
      out->req[out->v] = (int32_t)r;
      out->kstart[out->v] = (int32_t)start;
      out->v++;
      p = end;
    }
  }
}

static void test_local_attention_random(void** state) {
  uint64_t seed = 21;
  int iter;
  (void)state;
  for (iter = 0; iter < 2000; ++iter) {
    const int32_t blocks[3] = {1, 2, 4};
    const int32_t block = blocks[ts_rand_range(&seed, 0, 2)];
    const int32_t chunk = block * (int32_t)ts_rand_range(&seed, 1, 4);
    int32_t q[16], s[16];
    const int64_t n = ts_rand_range(&seed, 0, 16), width = 64;
    int64_t r, nv = -1, k, j;
    ts_batch* b;
    static local_out o;
    static naive_local want;
    attn_metadata_t* res = NULL;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 0, 3) ? (int32_t)ts_rand_range(&seed, 1, 12) : 0;
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 20);
    }
    b = ts_batch_make(q, s, n, block, width, -1);
    naive_local_batches(q, s, n, chunk, &want);
    if (want.v > 128) {
      ts_batch_free(b);
      continue;
    }
    ASSERT_OK(attn_local_attention_num_virtual_batches(chunk, &b->common, &nv));
    assert_int_equal(nv, want.v);
    local_out_init(&o, nv, chunk / block);
    ASSERT_OK(attn_make_local_attention_virtual_batches(chunk, &b->common, block, &o.out, &res, NULL));
    assert_int_equal(o.qsl[0], 0);
    for (k = 0; k < nv; ++k) {
      const int64_t pages = chunk / block;
      assert_int_equal(o.qsl[k + 1] - o.qsl[k], want.q[k]);
      assert_int_equal(o.seq[k], want.kv[k]);
      assert_int_equal(o.computed[k], want.kv[k] - want.q[k]);
      assert_int_equal(o.vreq[k], want.req[k]);
      for (j = 0; j < pages; ++j) {
        /* numpy: floor division, clip to the last column, negative indices from the end */
        int64_t col = (want.kstart[k] >= 0 ? want.kstart[k] / block
                                           : -((-want.kstart[k] + block - 1) / block)) + j;
        if (col > width - 1) col = width - 1;
        if (col < 0) col += width;
        assert_int_equal(o.bt[k * pages + j], b->bt[want.req[k] * width + col]);
      }
    }
    if (nv > 0) build_on(res, 16);
    attn_metadata_destroy(res);
    ts_batch_free(b);
  }
}

static void test_local_attention_edges_and_remap(void** state) {
  /* chunk == block, a sequence ending exactly on a chunk boundary, a zero-length query */
  static const int32_t q[3] = {4, 2, 0}, s[3] = {8, 6, 5};
  ts_batch* b = ts_batch_make(q, s, 3, 2, 8, -1);
  static local_out o;
  attn_metadata_t* r = NULL;
  int64_t nv = -1, k;
  int32_t other[3 * 8], remapped[16 * 1];
  int64_t os[2] = {3, 8}, rs[2] = {16, 1};
  attn_tensor_t ot = ts_host_tensor(other, 2, os, ATTN_DTYPE_INT, 32);
  attn_tensor_t rt = ts_host_tensor(remapped, 2, rs, ATTN_DTYPE_INT, 32);
  (void)state;
  ASSERT_OK(attn_local_attention_num_virtual_batches(2, &b->common, &nv));
  /* request 0: tokens 4..7 -> chunks [4,6), [6,8); request 1: 4..5 -> [4,6); request 2: empty */
  assert_int_equal(nv, 4);
  local_out_init(&o, nv, 1);
  ASSERT_OK(attn_make_local_attention_virtual_batches(2, &b->common, 2, &o.out, &r, NULL));
  assert_int_equal(o.seq[0], 2);
  assert_int_equal(o.seq[1], 2); /* 8 % -2 == 0: the last block is full */
  assert_int_equal(o.seq[2], 2);
  assert_int_equal(o.qsl[4] - o.qsl[3], 0);
  assert_int_equal(o.seq[3], 1); /* seq 5: the last chunk holds 1 token */
  /* the remap on another KV cache group's table gives that table's blocks */
  for (k = 0; k < 3 * 8; ++k) other[k] = 1000 + (int32_t)k;
  ASSERT_OK(attn_remap_local_block_table(&ot, &o.vreq_t, &o.vstart_t, nv, &rt, NULL));
  for (k = 0; k < nv; ++k) {
    int64_t col = o.vstart[k] > 7 ? 7 : o.vstart[k];
    assert_int_equal(remapped[k], other[o.vreq[k] * 8 + col]);
  }
  /* bad input */
  o.vreq[0] = 3;
  ASSERT_ERROR(attn_remap_local_block_table(&ot, &o.vreq_t, &o.vstart_t, nv, &rt, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "virtual_req[0]=3 is not a row of block_table (3 rows)");
  ASSERT_ERROR(attn_make_local_attention_virtual_batches(3, &b->common, 2, &o.out, &r, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "attn_chunk_size 3 is not divisible by block_size 2");
  local_out_init(&o, nv - 1, 1);
  ASSERT_ERROR(attn_make_local_attention_virtual_batches(2, &b->common, 2, &o.out, &r, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out->query_start_loc has 4 entries but 5 are needed");
  ASSERT_ERROR(attn_local_attention_num_virtual_batches(0, &b->common, &nv), ATTN_ERR_INVALID_ARGUMENT,
               "attn_chunk_size=0 must be positive");
  attn_metadata_destroy(r);
  ts_batch_free(b);
}

/* The remap on its own, with block starts past the row, negative (a padding request's first
 * chunk) and below -width, against numpy's indexing: clip(max=width - 1), then a negative index
 * counts from the end (libattn reads column 0 where vLLM would raise). */
static void test_remap_local_block_table_random(void** state) {
  uint64_t seed = 77;
  int iter;
  (void)state;
  for (iter = 0; iter < 3000; ++iter) {
    const int64_t rows = ts_rand_range(&seed, 1, 5), width = ts_rand_range(&seed, 1, 9);
    const int64_t nv = ts_rand_range(&seed, 0, 12), pages = ts_rand_range(&seed, 1, 7);
    int32_t table[5 * 9], vreq[12], vstart[12], out[12 * 7];
    int64_t ts[2] = {rows, width}, vs[1] = {nv}, os[2] = {nv, pages}, k, j;
    attn_tensor_t tt = ts_host_tensor(table, 2, ts, ATTN_DTYPE_INT, 32);
    attn_tensor_t rt = ts_host_tensor(vreq, 1, vs, ATTN_DTYPE_INT, 32);
    attn_tensor_t st = ts_host_tensor(vstart, 1, vs, ATTN_DTYPE_INT, 32);
    attn_tensor_t ot = ts_host_tensor(out, 2, os, ATTN_DTYPE_INT, 32);
    for (k = 0; k < rows * width; ++k) table[k] = 100 + (int32_t)k;
    for (k = 0; k < nv; ++k) {
      vreq[k] = (int32_t)ts_rand_range(&seed, 0, rows - 1);
      vstart[k] = (int32_t)ts_rand_range(&seed, -2 * width - 2, 2 * width + 2);
    }
    for (k = 0; k < nv * pages; ++k) out[k] = -7;
    ASSERT_OK(attn_remap_local_block_table(&tt, &rt, &st, nv, &ot, NULL));
    for (k = 0; k < nv; ++k)
      for (j = 0; j < pages; ++j) {
        int64_t col = vstart[k] + j > width - 1 ? width - 1 : vstart[k] + j;
        if (col < 0) col += width;
        if (col < 0) col = 0;
        assert_int_equal(out[k * pages + j], table[vreq[k] * width + col]);
      }
  }
}

/* ---- micro-batch slicing ---------------------------------------------------------------------- */
static void test_slice_query_start_locs_vectors(void** state) {
  json_value* v = vectors("ubatch_slicing.json");
  const json_value* cases = json_get(v, "cases");
  size_t c;
  (void)state;
  for (c = 0; c < cases->count; ++c) {
    const json_value* cs = &cases->items[c];
    int64_t qsl64[16], slice[2], e[16];
    int32_t qsl[16], out[16];
    const size_t nq = json_ints(json_get(cs, "query_start_loc"), qsl64, 16);
    const size_t ne = json_ints(json_get(cs, "expected"), e, 16);
    int64_t qs[1] = {(int64_t)nq}, os[1] = {16};
    attn_tensor_t qt = I32(qsl, qs), ot = I32(out, os);
    size_t k;
    json_ints(json_get(cs, "slice"), slice, 2);
    for (k = 0; k < nq; ++k) qsl[k] = (int32_t)qsl64[k];
    /* slice = (start, stop): requests [start, stop), out = qsl[start : stop + 1] - qsl[start] */
    ASSERT_OK(attn_slice_query_start_locs(&qt, slice[0], slice[1], &ot, NULL));
    for (k = 0; k < ne; ++k) assert_int_equal(out[k], e[k]);
  }
  {
    int32_t qsl[3] = {0, 4, 9}, out[2];
    int64_t qs[1] = {3}, os[1] = {1};
    attn_tensor_t qt = I32(qsl, qs), ot = I32(out, os);
    ASSERT_ERROR(attn_slice_query_start_locs(&qt, 1, 3, &ot, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "request slice [1, 3) is not within the 2 requests of query_start_loc");
    ASSERT_ERROR(attn_slice_query_start_locs(&qt, 0, 2, &ot, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "out has 1 entries but 3 are needed");
  }
  {
    /* hostile values wrap as torch's int32 arithmetic does (found by the long fuzz run: the
     * subtraction overflowed) */
    int32_t qsl[3] = {-687841040, 2139062017, 5}, out[3];
    int64_t qs[1] = {3}, os[1] = {3};
    attn_tensor_t qt = I32(qsl, qs), ot = I32(out, os);
    ASSERT_OK(attn_slice_query_start_locs(&qt, 0, 2, &ot, NULL));
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], (int32_t)((uint32_t)2139062017 - (uint32_t)-687841040));
  }
  json_free(v);
}

typedef struct {
  int32_t qsl[65], qsl_cpu[65], seq[64], seq_cpu[64];
  int64_t s1[1], s[1];
  attn_tensor_t qsl_t, qsl_cpu_t, seq_t, seq_cpu_t;
  attn_ubatch_out_t out;
} slice_out;

static void slice_out_init(slice_out* o, int64_t n) {
  const attn_ubatch_out_t init = ATTN_UBATCH_OUT_INIT;
  o->s1[0] = n + 1;
  o->s[0] = n;
  o->qsl_t = I32(o->qsl, o->s1);
  o->qsl_cpu_t = I32(o->qsl_cpu, o->s1);
  o->seq_t = I32(o->seq, o->s);
  o->seq_cpu_t = I32(o->seq_cpu, o->s);
  o->out = init;
  o->out.query_start_loc = &o->qsl_t;
  o->out.query_start_loc_cpu = &o->qsl_cpu_t;
  o->out.seq_lens = &o->seq_t;
  o->out.seq_lens_cpu = &o->seq_cpu_t;
}

static void test_metadata_slice_vectors(void** state) {
  json_value* v = vectors("ubatch_slicing.json");
  const json_value* ms = json_get(v, "metadata_slices");
  size_t c;
  (void)state;
  {
    const json_value* cs = &ms->items[0];
    const json_value* e = json_get(cs, "expected");
    int64_t q64[8], s64[8], rs[2], tsl[2], eq[8], es[8];
    int32_t q[8], s[8];
    size_t n = json_ints(json_get(cs, "query_lens"), q64, 8), i;
    ts_batch* b;
    static slice_out o;
    attn_ubatch_slice_t sl = ATTN_UBATCH_SLICE_INIT;
    attn_metadata_t* r = NULL;
    json_ints(json_get(cs, "seq_lens"), s64, 8);
    for (i = 0; i < n; ++i) {
      q[i] = (int32_t)q64[i];
      s[i] = (int32_t)s64[i];
    }
    json_ints(json_get(cs, "request_slice"), rs, 2);
    json_ints(json_get(cs, "token_slice"), tsl, 2);
    b = ts_batch_make(q, s, (int64_t)n, 16, 0, -1);
    sl.request_start = rs[0];
    sl.request_stop = rs[1];
    sl.token_start = tsl[0];
    sl.token_stop = tsl[1];
    slice_out_init(&o, rs[1] - rs[0]);
    ASSERT_OK(attn_make_metadata_with_slice(&b->common, &sl, &o.out, &r, NULL));
    assert_int_equal(ts_int(r, "num_reqs"), (int64_t)json_get(e, "num_reqs")->number);
    assert_int_equal(ts_int(r, "num_actual_tokens"), (int64_t)json_get(e, "num_actual_tokens")->number);
    assert_int_equal(ts_int(r, "max_query_len"), (int64_t)json_get(e, "max_query_len")->number);
    json_ints(json_get(e, "query_start_loc"), eq, 8);
    json_ints(json_get(e, "seq_lens"), es, 8);
    for (i = 0; i < 3; ++i) assert_int_equal(o.qsl[i], eq[i]);
    for (i = 0; i < 2; ++i) assert_int_equal(o.seq[i], es[i]);
    /* views of the batch's rows and tokens */
    assert_ptr_equal(ts_tensor(r, "block_table_tensor")->data, b->bt + 1 * b->width);
    assert_ptr_equal(ts_tensor(r, "slot_mapping")->data, b->slots + 1);
    build_on(r, 16);
    attn_metadata_destroy(r);
    ts_batch_free(b);
  }
  for (c = 1; c < ms->count; ++c) {
    /* a split point inside a request: maybe_create_ubatch_slices then the two metadata */
    const json_value* cs = &ms->items[c];
    int64_t q64[8], s64[8];
    int32_t q[8], s[8];
    size_t n = json_ints(json_get(cs, "query_lens"), q64, 8), i;
    const int64_t split = (int64_t)json_get(cs, "split_point")->number;
    attn_ubatch_slice_t slices[2], padded[2];
    ts_batch* b;
    static slice_out o0, o1;
    attn_ubatch_out_t outs[2];
    attn_metadata_t* r[2] = {NULL, NULL};
    json_ints(json_get(cs, "seq_lens"), s64, 8);
    for (i = 0; i < n; ++i) {
      q[i] = (int32_t)q64[i];
      s[i] = (int32_t)s64[i];
    }
    slices[0].struct_size = slices[1].struct_size = ATTN_UBATCH_SLICE_STRUCT_SIZE;
    padded[0].struct_size = padded[1].struct_size = ATTN_UBATCH_SLICE_STRUCT_SIZE;
    ASSERT_OK(attn_maybe_create_ubatch_slices(q, (int64_t)n, 16, (int64_t)n, 2, split, slices, padded));
    assert_int_equal(slices[0].request_stop - slices[0].request_start,
                     (int64_t)json_get(cs, "expected_first_reqs")->number);
    assert_int_equal(slices[1].request_stop - slices[1].request_start,
                     (int64_t)json_get(cs, "expected_second_reqs")->number);
    b = ts_batch_make(q, s, (int64_t)n, 16, 0, -1);
    slice_out_init(&o0, slices[0].request_stop - slices[0].request_start);
    slice_out_init(&o1, slices[1].request_stop - slices[1].request_start);
    outs[0] = o0.out;
    outs[1] = o1.out;
    ASSERT_OK(attn_split_attn_metadata(&b->common, slices, 2, outs, r, NULL));
    if (split == 12) {
      /* request 1 (seq 40, 8 new tokens 32..39) is cut after 4 of them: the first part sees
       * context 32 + 4 tokens, the second keeps the full 40 */
      assert_int_equal(o0.seq[1], 36);
      assert_int_equal(o0.qsl[2], 12);
      assert_int_equal(o1.seq[0], 40);
      assert_int_equal(o1.qsl[1], 4);
    } else {
      assert_int_equal(o0.seq[0], 28); /* request 0 cut after 4 of its 8 tokens */
      assert_int_equal(o1.qsl[1], 4);
      assert_int_equal(o1.seq[0], 32);
    }
    build_on(r[0], 16);
    build_on(r[1], 16);
    attn_metadata_destroy(r[0]);
    attn_metadata_destroy(r[1]);
    ts_batch_free(b);
  }
  json_free(v);
}

static void test_slices_random(void** state) {
  uint64_t seed = 3;
  int iter;
  (void)state;
  for (iter = 0; iter < 1000; ++iter) {
    int32_t q[32], s[32];
    const int64_t n = ts_rand_range(&seed, 1, 32);
    int64_t r, total = 0, u, t;
    int32_t nub;
    attn_ubatch_slice_t slices[4], padded[4];
    ts_batch* b;
    static slice_out outs_store[4];
    attn_ubatch_out_t outs[4];
    attn_metadata_t* res[4];
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 1, 20);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 100);
      total += q[r];
    }
    nub = (int32_t)ts_rand_range(&seed, 2, 4);
    if (total < nub) continue;
    for (u = 0; u < 4; ++u) slices[u].struct_size = padded[u].struct_size = ATTN_UBATCH_SLICE_STRUCT_SIZE;
    ASSERT_OK(attn_maybe_create_ubatch_slices(q, n, total, n, nub, 0, slices, padded));
    b = ts_batch_make(q, s, n, 16, 0, -1);
    for (u = 0; u < nub; ++u) {
      slice_out_init(&outs_store[u], slices[u].request_stop - slices[u].request_start);
      outs[u] = outs_store[u].out;
    }
    ASSERT_OK(attn_split_attn_metadata(&b->common, slices, (size_t)nub, outs, res, NULL));
    /* naive: every token of the batch appears in exactly one slice, in its request, and each
     * slice's seq_lens end where its tokens end */
    t = 0;
    for (u = 0; u < nub; ++u) {
      const attn_ubatch_slice_t* sl = &slices[u];
      const int64_t m = sl->request_stop - sl->request_start;
      int64_t k;
      assert_int_equal(sl->token_start, t);
      for (k = 0; k < m; ++k) {
        const int64_t req = sl->request_start + k;
        const int64_t lo = b->qsl[req] > sl->token_start ? b->qsl[req] : sl->token_start;
        const int64_t hi = b->qsl[req + 1] < sl->token_stop ? b->qsl[req + 1] : sl->token_stop;
        const slice_out* o = &outs_store[u];
        assert_int_equal(o->qsl[k + 1] - o->qsl[k], hi - lo);
        /* seq_len = context + tokens up to the slice's end */
        assert_int_equal(o->seq[k], s[req] - (b->qsl[req + 1] - hi));
        assert_int_equal(o->seq_cpu[k], o->seq[k]);
      }
      assert_int_equal(ts_int(res[u], "num_actual_tokens"), sl->token_stop - sl->token_start);
      t = sl->token_stop;
      attn_metadata_destroy(res[u]);
    }
    assert_int_equal(t, total);
    ts_batch_free(b);
  }
}

static void test_slice_bad_input(void** state) {
  static const int32_t q[2] = {4, 4}, s[2] = {9, 9};
  ts_batch* b = ts_batch_make(q, s, 2, 16, 0, -1);
  static slice_out o;
  attn_ubatch_slice_t sl = ATTN_UBATCH_SLICE_INIT;
  attn_metadata_t* r = (attn_metadata_t*)UNTOUCHED_PTR;
  attn_metadata_t* rs[2] = {(attn_metadata_t*)UNTOUCHED_PTR, (attn_metadata_t*)UNTOUCHED_PTR};
  attn_ubatch_slice_t two[2];
  attn_ubatch_out_t outs[2];
  attn_ubatch_slice_t sl_out[2], pad_out[2];
  (void)state;
  slice_out_init(&o, 2);
  sl.request_start = 0;
  sl.request_stop = 0;
  sl.token_stop = 3;
  ASSERT_ERROR(attn_make_metadata_with_slice(&b->common, &sl, &o.out, &r, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "ubatch slice requests [0, 0) tokens [0, 3) is empty");
  sl.request_start = 1;
  sl.request_stop = 2;
  sl.token_start = 2;
  sl.token_stop = 8;
  ASSERT_ERROR(attn_make_metadata_with_slice(&b->common, &sl, &o.out, &r, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "slice token_start=2 is outside its first request 1 (tokens [4, 8))");
  sl.request_start = 0;
  sl.request_stop = 3;
  ASSERT_ERROR(attn_make_metadata_with_slice(&b->common, &sl, &o.out, &r, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "slice requests [0, 3) are not within the 2 requests");
  assert_ptr_equal(r, UNTOUCHED_PTR);
  /* split_attn_metadata is all or nothing, and names the slice */
  two[0] = sl;
  two[0].request_stop = 1;
  two[0].token_stop = 4;
  two[1] = sl;
  two[1].request_start = 1;
  two[1].request_stop = 2;
  two[1].token_start = 9;
  two[1].token_stop = 10;
  outs[0] = outs[1] = o.out;
  ASSERT_ERROR(attn_split_attn_metadata(&b->common, two, 2, outs, rs, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "slices[1]: slice tokens [9, 10) are not within the 8 tokens");
  assert_ptr_equal(rs[0], UNTOUCHED_PTR);
  sl_out[0].struct_size = sl_out[1].struct_size = ATTN_UBATCH_SLICE_STRUCT_SIZE;
  pad_out[0].struct_size = pad_out[1].struct_size = ATTN_UBATCH_SLICE_STRUCT_SIZE;
  ASSERT_ERROR(attn_maybe_create_ubatch_slices(q, 2, 7, 2, 2, 0, sl_out, pad_out), ATTN_ERR_INVALID_ARGUMENT,
               "num_tokens_padded=7 is less than the 8 scheduled tokens");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices(q, 2, 8, 1, 2, 0, sl_out, pad_out), ATTN_ERR_INVALID_ARGUMENT,
               "num_reqs_padded=1 is less than num_reqs=2");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices(q, 2, 8, 2, 0, 0, sl_out, pad_out), ATTN_ERR_INVALID_ARGUMENT,
               "num_ubatches=0 must be positive");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices(q, 2, 8, 2, 1025, 0, sl_out, pad_out), ATTN_ERR_INVALID_ARGUMENT,
               "num_ubatches=1025 exceeds libattn's limit of 1024");
  /* more micro-batches than tokens is no error since 0.33: test_ubatch_slices_vllm_033 */
  ASSERT_ERROR(attn_maybe_create_ubatch_slices(q, 2, 8, 2, 2, (int64_t)1 << 62, sl_out, pad_out),
               ATTN_ERR_INVALID_ARGUMENT, "split_point=4611686018427387904 exceeds num_tokens_padded=8");
  /* found by the long fuzz run: split_point * i overflowed for huge padded token counts */
  ASSERT_ERROR(attn_maybe_create_ubatch_slices(q, 2, (int64_t)1 << 40, 2, 2, (int64_t)1 << 39, sl_out,
                                               pad_out),
               ATTN_ERR_INVALID_ARGUMENT, "num_tokens_padded=1099511627776 exceeds 2^31-1");
  ts_batch_free(b);
}

static void expect_slices(const attn_ubatch_slice_t* got, const int64_t (*want)[4], int n) {
  int u;
  for (u = 0; u < n; ++u)
    if (got[u].request_start != want[u][0] || got[u].request_stop != want[u][1] ||
        got[u].token_start != want[u][2] || got[u].token_stop != want[u][3])
      fail_msg("slice %d is (%lld, %lld, %lld, %lld), expected (%lld, %lld, %lld, %lld)", u,
               (long long)got[u].request_start, (long long)got[u].request_stop,
               (long long)got[u].token_start, (long long)got[u].token_stop, (long long)want[u][0],
               (long long)want[u][1], (long long)want[u][2], (long long)want[u][3]);
}

/* maybe_create_ubatch_slices at vLLM 0.33.0: answers of its own function (run in its virtual
 * environment), as (request_start, request_stop, token_start, token_stop). */
static void test_ubatch_slices_vllm_033(void** state) {
  static const int32_t one[2] = {1, 1}, four[2] = {4, 4};
  static const int64_t empty3[3][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 2, 0, 2}};
  static const int64_t list_s[3][4] = {{0, 1, 0, 3}, {0, 2, 3, 6}, {1, 2, 6, 8}};
  static const int64_t list_p[3][4] = {{0, 1, 0, 3}, {0, 2, 3, 6}, {1, 3, 6, 10}};
  static const int64_t equal[3][4] = {{0, 1, 0, 4}, {1, 1, 4, 4}, {1, 2, 4, 8}};
  static const int64_t none2[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
  const int64_t points[2] = {3, 6}, same[2] = {4, 4};
  attn_ubatch_slice_t sl[3], pad[3];
  int u;
  (void)state;
  for (u = 0; u < 3; ++u) sl[u].struct_size = pad[u].struct_size = ATTN_UBATCH_SLICE_STRUCT_SIZE;
  /* 3 micro-batches of 2 tokens: split point 0, two empty slices */
  ASSERT_OK(attn_maybe_create_ubatch_slices(one, 2, 2, 2, 3, 0, sl, pad));
  expect_slices(sl, empty3, 3);
  expect_slices(pad, empty3, 3);
  ASSERT_OK(attn_maybe_create_ubatch_slices_ex(one, 2, 2, 2, 3, NULL, 0, sl, pad));
  expect_slices(sl, empty3, 3);
  /* a list of split points */
  ASSERT_OK(attn_maybe_create_ubatch_slices_ex(four, 2, 10, 3, 3, points, 2, sl, pad));
  expect_slices(sl, list_s, 3);
  expect_slices(pad, list_p, 3);
  ASSERT_OK(attn_maybe_create_ubatch_slices_ex(four, 2, 8, 2, 3, same, 2, sl, pad));
  expect_slices(sl, equal, 3);
  expect_slices(pad, equal, 3);
  /* an empty batch */
  ASSERT_OK(attn_maybe_create_ubatch_slices_ex(NULL, 0, 0, 0, 2, NULL, 0, sl, pad));
  expect_slices(sl, none2, 2);
  expect_slices(pad, none2, 2);
}

/* The list form against the integer form (split_point * i), and a naive overlap check. */
static void test_ubatch_slices_list_random(void** state) {
  uint64_t seed = 16;
  int iter;
  (void)state;
  for (iter = 0; iter < 1000; ++iter) {
    int32_t q[16];
    int64_t points[7], r, total = 0, cu[17];
    const int64_t n = ts_rand_range(&seed, 0, 16);
    const int32_t nub = (int32_t)ts_rand_range(&seed, 1, 8);
    int64_t padded, i, sp;
    attn_ubatch_slice_t a[8], pa[8], b[8], pb[8];
    cu[0] = 0;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 0, 6);
      total += q[r];
      cu[r + 1] = total;
    }
    padded = total + ts_rand_range(&seed, 0, 5);
    for (i = 0; i < 8; ++i)
      a[i].struct_size = pa[i].struct_size = b[i].struct_size = pb[i].struct_size =
          ATTN_UBATCH_SLICE_STRUCT_SIZE;
    sp = padded / nub;
    for (i = 1; i < nub; ++i) points[i - 1] = sp * i;
    ASSERT_OK(attn_maybe_create_ubatch_slices(q, n, padded, n + 1, nub, 0, a, pa));
    ASSERT_OK(attn_maybe_create_ubatch_slices_ex(q, n, padded, n + 1, nub, points, nub - 1, b, pb));
    for (i = 0; i < nub; ++i) {
      int64_t lo = 0, hi = 0;
      assert_memory_equal(&a[i], &b[i], sizeof a[i]);
      assert_memory_equal(&pa[i], &pb[i], sizeof pa[i]);
      /* naive: the last request starting at or before token_start; the first starting at or
       * after token_stop */
      for (r = 0; r <= n; ++r)
        if (cu[r] <= b[i].token_start) lo = r;
      for (hi = 0; hi <= n && cu[hi] < b[i].token_stop; ++hi) {
      }
      assert_int_equal(b[i].request_start, lo);
      assert_int_equal(b[i].request_stop, hi);
    }
    assert_int_equal(pb[nub - 1].token_stop, padded);
    assert_int_equal(pb[nub - 1].request_stop, n + 1);
  }
}

static void test_ubatch_slices_ex_bad_input(void** state) {
  static const int32_t q[2] = {4, 4};
  const int64_t ok[1] = {4}, down[2] = {5, 3}, far[1] = {9}, neg[1] = {-1};
  attn_ubatch_slice_t sl[3], pad[3];
  int u;
  (void)state;
  for (u = 0; u < 3; ++u) {
    sl[u].struct_size = pad[u].struct_size = ATTN_UBATCH_SLICE_STRUCT_SIZE;
    sl[u].token_stop = pad[u].token_stop = -5;
  }
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(q, 2, 8, 2, 2, ok, 1, NULL, pad), ATTN_ERR_INVALID_ARGUMENT,
               "out_slices is NULL");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(q, 2, 8, 2, 2, ok, 1, sl, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "out_padded_slices is NULL");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(q, 2, 8, 2, 2, NULL, 1, sl, pad), ATTN_ERR_INVALID_ARGUMENT,
               "split_points is NULL but num_split_points=1");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(q, 2, 8, 2, 3, ok, 1, sl, pad), ATTN_ERR_INVALID_ARGUMENT,
               "num_split_points=1 must be num_ubatches - 1 = 2");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(q, 2, 8, 2, 3, down, 2, sl, pad), ATTN_ERR_INVALID_ARGUMENT,
               "split_points[1]=3 is less than split_points[0]=5 (the split points must not decrease)");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(q, 2, 8, 2, 2, far, 1, sl, pad), ATTN_ERR_INVALID_ARGUMENT,
               "split_points[0]=9 is outside [0, num_tokens_padded=8]");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(q, 2, 8, 2, 2, neg, 1, sl, pad), ATTN_ERR_INVALID_ARGUMENT,
               "split_points[0]=-1 is outside");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(NULL, 2, 8, 2, 2, ok, 1, sl, pad), ATTN_ERR_INVALID_ARGUMENT,
               "num_scheduled_tokens is NULL but num_reqs=2");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(q, 2, 7, 2, 2, ok, 1, sl, pad), ATTN_ERR_INVALID_ARGUMENT,
               "num_tokens_padded=7 is less than the 8 scheduled tokens");
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(q, 2, 8, 2, 0, NULL, 0, sl, pad), ATTN_ERR_INVALID_ARGUMENT,
               "num_ubatches=0 must be positive");
  pad[1].struct_size = 3;
  ASSERT_ERROR(attn_maybe_create_ubatch_slices_ex(q, 2, 8, 2, 2, ok, 1, sl, pad), ATTN_ERR_INVALID_ARGUMENT,
               "out_padded_slices[1].struct_size=3");
  for (u = 0; u < 3; ++u) { /* nothing written by any failure */
    assert_int_equal(sl[u].token_stop, -5);
    assert_int_equal(pad[u].token_stop, -5);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fast_prefill_vector),
      cmocka_unit_test(test_fast_prefill_decodes_pass_through),
      cmocka_unit_test(test_fast_prefill_not_armed_passes_through),
      cmocka_unit_test(test_fast_prefill_random),
      cmocka_unit_test(test_fast_prefill_bad_input),
      cmocka_unit_test(test_local_attention_vector),
      cmocka_unit_test(test_local_attention_random),
      cmocka_unit_test(test_local_attention_edges_and_remap),
      cmocka_unit_test(test_remap_local_block_table_random),
      cmocka_unit_test(test_slice_query_start_locs_vectors),
      cmocka_unit_test(test_metadata_slice_vectors),
      cmocka_unit_test(test_slices_random),
      cmocka_unit_test(test_slice_bad_input),
      cmocka_unit_test(test_ubatch_slices_vllm_033),
      cmocka_unit_test(test_ubatch_slices_list_random),
      cmocka_unit_test(test_ubatch_slices_ex_bad_input),
  };
  return cmocka_run_group_tests_name("batch_transforms", tests, NULL, NULL);
}
