/* vLLM's builder wrappers, chosen by the spec's kind and config->kv_sharing_fast_prefill:
 * chunked local attention on vLLM's worked example (tests/data/vectors) and its
 * update_block_table, KV-sharing fast prefill on vLLM's vector, cross attention, encoder-only
 * attention, stacked wrappers in a caller workspace, the level reduction over builders, a
 * config of ABI 1.0's size, StaticSink (hand-checked, random against a naive table, bad
 * input) and Whisper's causal block pooling (against the plain build of the pooled batch). */
#include "json.h"
#include "test_support.h"

static json_value* load(const char* name) {
  char path[1024];
  json_value* v;
  snprintf(path, sizeof path, "%s/%s", ATTN_TEST_VECTORS_DIR, name);
  v = json_load(path);
  if (v == NULL) fail_msg("cannot read %s", path);
  return v;
}

static void expect_i32_json(const attn_metadata_t* m, const char* field, const json_value* arr) {
  int64_t want[256];
  int32_t w[256];
  const size_t n = json_ints(arr, want, 256);
  size_t i;
  for (i = 0; i < n; ++i) w[i] = (int32_t)want[i];
  ts_expect_i32(m, field, w, (int64_t)n);
}

static void expect_bool(const attn_metadata_t* m, const char* name, int value) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  assert_int_equal(f.kind, ATTN_FIELD_BOOL);
  assert_int_equal(f.int_value, value);
}

/* vLLM's example: chunk 4, block 2 (CPU_ATTN takes any block size), q [4, 10, 5], kv [6, 17, 9],
 * block_table[i][j] = 10 * i + j. */
static void test_chunked_local_vector(void** state) {
  json_value* doc = load("local_attention_virtual_batches.json");
  const json_value* c0 = &json_get(doc, "cases")->items[0];
  const json_value* expected = json_get(c0, "expected");
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b;
  int64_t q64[3], s64[3];
  int32_t q[3], s[3], level = -1, threshold = -1, r, j;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  (void)state;
  json_ints(json_get(c0, "query_lens"), q64, 3);
  json_ints(json_get(c0, "seq_lens"), s64, 3);
  for (r = 0; r < 3; ++r) q[r] = (int32_t)q64[r], s[r] = (int32_t)s64[r];
  batch = ts_batch_make(q, s, 3, 2, 10, -1);
  for (r = 0; r < 3; ++r)
    for (j = 0; j < 10; ++j) batch->bt[r * 10 + j] = 10 * r + j;
  spec.kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION;
  spec.attention_chunk_size = (int32_t)json_get(c0, "attn_chunk_size")->number;
  spec.block_size = (int32_t)json_get(c0, "block_size")->number;
  ASSERT_OK(attn_backend_cudagraph_support("CPU_ATTN", &spec, &config, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  b = ts_builder("CPU_ATTN", &spec, &config);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, ATTN_NO_REORDER); /* CPU_ATTN's */
  assert_string_equal(attn_builder_backend_name(b), "CPU_ATTN");
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "ChunkedLocalAttention_4_CPU_ATTN");
  expect_i32_json(m, "query_start_loc", json_get(expected, "query_start_loc"));
  expect_i32_json(m, "seq_lens", json_get(expected, "seqlens_k_local"));
  assert_int_equal(ts_int(m, "max_query_len"), (int64_t)json_get(expected, "max_query_len")->number);
  assert_int_equal(ts_int(m, "max_seq_len"), (int64_t)json_get(expected, "max_seq_len")->number);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 19); /* unchanged */
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  t = ts_tensor(m, "block_table");
  assert_int_equal(t->shape[0], (int64_t)json_get(expected, "num_reqs")->number);
  assert_int_equal(t->shape[1], 2);
  {
    const json_value* rows = json_get(expected, "block_table_local");
    size_t v;
    for (v = 0; v < rows->count; ++v) {
      int64_t row[2];
      json_ints(&rows->items[v], row, 2);
      assert_int_equal(((const int32_t*)t->data)[v * t->strides[0]], row[0]);
      assert_int_equal(((const int32_t*)t->data)[v * t->strides[0] + 1], row[1]);
    }
  }
  ts_expect_i32(m, "virtual_req", (int32_t[]){0, 0, 1, 1, 1, 1, 2, 2}, 8);
  {
    /* a padding request over a table without columns: nothing to gather from (found by the
     * long fuzz run: the gather read row 0 of an empty table) */
    static const int32_t zq[1] = {0}, zs[1] = {0};
    ts_batch* empty = ts_batch_make(zq, zs, 1, 2, 0, -1);
    ASSERT_ERROR(attn_build(b, 0, &empty->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->block_table_tensor has no columns to gather the local blocks from");
    ts_batch_free(empty);
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
  json_free(doc);
}

/* update_block_table on a chunked-local FLASH_ATTN builder equals a fresh build with the new
 * table. */
static void test_chunked_local_update(void** state) {
  static const int32_t q[3] = {1, 40, 7}, s[3] = {70, 100, 7};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* a;
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 8, -1);
  ts_batch* other = ts_batch_make(q, s, 3, 16, 8, -1);
  attn_metadata_t* built = NULL;
  attn_metadata_t* kept = NULL;
  attn_metadata_t* updated = NULL;
  attn_metadata_t* fresh = NULL;
  const attn_tensor_t* ut;
  const attn_tensor_t* ft;
  int32_t support = 0, r, j;
  (void)state;
  for (r = 0; r < 3 * 8; ++r) other->bt[r] = 1000 + r;
  spec.kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION;
  spec.attention_chunk_size = 32;
  a = ts_builder("FLASH_ATTN", &spec, &config);
  b = ts_builder("FLASH_ATTN", &spec, &config);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &support));
  assert_int_equal(support, 1); /* FLASH_ATTN's */
  ASSERT_OK(attn_build(a, 0, &batch->common, 0, &built, NULL));
  ASSERT_OK(attn_metadata_clone(built, &kept));
  ASSERT_OK(attn_update_block_table(b, kept, &other->bt_t, &other->sm_t, &updated, NULL));
  ASSERT_OK(attn_build(a, 0, &other->common, 0, &fresh, NULL));
  ut = ts_tensor(updated, "block_table");
  ft = ts_tensor(fresh, "block_table");
  assert_int_equal(ut->shape[0], ft->shape[0]);
  assert_int_equal(ut->shape[1], 2);
  for (r = 0; r < ut->shape[0]; ++r)
    for (j = 0; j < 2; ++j)
      assert_int_equal(((const int32_t*)ut->data)[r * ut->strides[0] + j],
                       ((const int32_t*)ft->data)[r * ft->strides[0] + j]);
  assert_ptr_equal(ts_tensor(updated, "slot_mapping")->data, other->slots);
  assert_int_equal(ts_int(updated, "num_actual_tokens"), 48);
  /* the original table's shape is checked against the batch the metadata was built from */
  ASSERT_ERROR(attn_update_block_table(b, kept, ts_tensor(fresh, "block_table"), &other->sm_t,
                                       &updated, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "block_table has");
  attn_metadata_destroy(kept);
  attn_builder_destroy(a);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  ts_batch_free(other);
}

static void test_fast_prefill_vector(void** state) {
  json_value* doc = load("kv_sharing_fast_prefill.json");
  const json_value* c0 = &json_get(doc, "cases")->items[0];
  const json_value* expected = json_get(c0, "expected");
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b;
  int64_t q64[3], s64[3], idx64[8], shape[1];
  int32_t q[3], s[3], idx[8], r;
  size_t n_idx;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  attn_tensor_t logits;
  (void)state;
  json_ints(json_get(c0, "query_lens"), q64, 3);
  json_ints(json_get(c0, "seq_lens"), s64, 3);
  n_idx = json_ints(json_get(c0, "logits_indices_padded"), idx64, 8);
  for (r = 0; r < 3; ++r) q[r] = (int32_t)q64[r], s[r] = (int32_t)s64[r];
  for (r = 0; r < (int32_t)n_idx; ++r) idx[r] = (int32_t)idx64[r];
  shape[0] = (int64_t)n_idx;
  logits = ts_host_tensor(idx, 1, shape, ATTN_DTYPE_INT, 32);
  batch = ts_batch_make(q, s, 3, 16, 3, -1);
  batch->common.logits_indices_padded = &logits;
  batch->common.num_logits_indices = (int64_t)json_get(c0, "num_logits_indices")->number;
  config.kv_sharing_fast_prefill = 1;
  b = ts_builder("FLASH_ATTN", &spec, &config);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "FastPrefillFLASH_ATTN");
  assert_string_equal(attn_builder_backend_name(b), "FLASH_ATTN");
  expect_i32_json(m, "query_start_loc", json_get(expected, "query_start_loc"));
  expect_i32_json(m, "seq_lens", json_get(expected, "seq_lens"));
  assert_int_equal(ts_int(m, "num_actual_tokens"), (int64_t)json_get(expected, "num_actual_tokens")->number);
  assert_int_equal(ts_int(m, "max_query_len"), (int64_t)json_get(expected, "max_query_len")->number);
  /* the original batch's logits fields ride along */
  assert_ptr_equal(ts_tensor(m, "logits_indices_padded")->data, idx);
  assert_int_equal(ts_int(m, "num_logits_indices"), 4);
  /* all decodes: the batch passes through, the fields still come along */
  {
    static const int32_t qd[2] = {1, 1}, sd[2] = {5, 9};
    ts_batch* d = ts_batch_make(qd, sd, 2, 16, 1, -1);
    d->common.logits_indices_padded = &logits;
    d->common.num_logits_indices = 2;
    ASSERT_OK(attn_build(b, 0, &d->common, 0, &m, NULL));
    assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, d->qsl);
    assert_int_equal(ts_int(m, "num_logits_indices"), 2);
    ts_batch_free(d);
  }
  /* not armed (no logits indices): vLLM 0.33 builds on the batch as it is */
  batch->common.logits_indices_padded = NULL;
  batch->common.num_logits_indices = 0;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
  assert_int_equal(ts_int(m, "num_actual_tokens"), batch->common.num_actual_tokens);
  assert_null(ts_tensor(m, "logits_indices_padded"));
  assert_int_equal(ts_kind(m, "num_logits_indices"), ATTN_FIELD_NONE); /* None, as vLLM 0.33 */
  attn_builder_destroy(b);
  ts_batch_free(batch);
  json_free(doc);
}

static void test_cross_attention(void** state) {
  /* request 0 is past its first decoder step (its cross KV is cached), request 1 is on it */
  static const int32_t q[2] = {1, 3}, s[2] = {9, 3};
  static int32_t enc[2] = {20, 18};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 2, -1);
  int32_t cross_bt[4] = {11, 12, 21, 22}, other_bt[4] = {31, 32, 41, 42};
  int64_t enc_shape[1] = {2}, bt_shape[2] = {2, 2};
  attn_tensor_t enc_t = ts_host_tensor(enc, 1, enc_shape, ATTN_DTYPE_INT, 32);
  attn_tensor_t cross_t = ts_host_tensor(cross_bt, 2, bt_shape, ATTN_DTYPE_INT, 32);
  attn_tensor_t other_t = ts_host_tensor(other_bt, 2, bt_shape, ATTN_DTYPE_INT, 32);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int64_t i;
  (void)state;
  spec.kind = ATTN_KV_CROSS_ATTENTION;
  config.max_encoder_len = 32;
  b = ts_builder("FLASH_ATTN", &spec, &config);
  batch->common.block_table_tensor = &cross_t;
  batch->common.encoder_seq_lens = &enc_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "CrossAttention_FLASH_ATTN");
  expect_bool(m, "causal", 0);
  ts_expect_i32(m, "seq_lens", enc, 2);
  assert_int_equal(ts_int(m, "max_seq_len"), 20);
  ts_expect_i32(m, "query_start_loc", batch->qsl, 3);
  ts_expect_i32(m, "decoder_seq_lens", s, 2);
  t = ts_tensor(m, "slot_mapping");
  assert_int_equal(t->shape[0], 18); /* request 1's encoder tokens only */
  for (i = 0; i < 18; ++i)
    assert_int_equal(((const int64_t*)t->data)[i], (i < 16 ? 21 : 22) * 16 + i % 16);
  /* another group's cross table: the slot mapping a fresh build would give */
  ASSERT_OK(attn_update_block_table(b, m, &other_t, batch->common.slot_mapping, &m, NULL));
  t = ts_tensor(m, "slot_mapping");
  for (i = 0; i < 18; ++i)
    assert_int_equal(((const int64_t*)t->data)[i], (i < 16 ? 41 : 42) * 16 + i % 16);
  assert_ptr_equal(ts_tensor(m, "block_table")->data, other_bt);
  {  /* vLLM 0.33: a batch with only seq_lens_cpu_upper_bound (request 0 optimistic) and a
      * per-request causal tensor: the wrapper's batch has the encoder lengths as its bound and
      * causal False (vLLM's `causal = False` replaces the tensor too) */
    int32_t bound[2] = {11, 3}, causal[2] = {1, 1};
    int64_t n2[1] = {2};
    attn_tensor_t bound_t = ts_host_tensor(bound, 1, n2, ATTN_DTYPE_INT, 32);
    attn_tensor_t causal_t = ts_host_tensor(causal, 1, n2, ATTN_DTYPE_INT, 32);
    batch->common.max_seq_len = 11; /* an upper bound too */
    batch->common.seq_lens_cpu_upper_bound = &bound_t;
    batch->common.causal_per_request = &causal_t;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    expect_bool(m, "causal", 0);
    ts_expect_i32(m, "seq_lens", enc, 2);
    assert_int_equal(ts_tensor(m, "slot_mapping")->shape[0], 18);
    batch->common.seq_lens_cpu_upper_bound = NULL;
    batch->common.causal_per_request = NULL;
    batch->common.max_seq_len = 9;
  }
  /* bad input */
  enc[1] = 40;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->encoder_seq_lens[1]=40 exceeds config->max_encoder_len=32");
  enc[1] = 18;
  batch->common.encoder_seq_lens = NULL;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->encoder_seq_lens is NULL; cross attention needs it");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_encoder_only(void** state) {
  static const int32_t q[2] = {3, 5}, s[2] = {3, 5};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 1, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  spec.kind = ATTN_KV_ENCODER_ONLY;
  config.attn_type = ATTN_TYPE_ENCODER_ONLY;
  b = ts_builder("FLASH_ATTN", &spec, &config);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "EncoderOnlyAttention_FLASH_ATTN");
  expect_bool(m, "causal", 0);
  ts_expect_i32(m, "seq_lens", s, 2);
  {  /* a per-request causal tensor is replaced by False, as vLLM 0.33's `causal = False` */
    int32_t causal[2] = {1, 1};
    int64_t n2[1] = {2};
    attn_tensor_t causal_t = ts_host_tensor(causal, 1, n2, ATTN_DTYPE_INT, 32);
    batch->common.causal_per_request = &causal_t;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    expect_bool(m, "causal", 0);
    batch->common.causal_per_request = NULL;
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
  {
    /* no KV cache: vLLM's runner hands encoder-only groups a dummy (num_reqs, 1) table */
    static const int32_t lq[2] = {40, 3}, ls[2] = {40, 3};
    ts_batch* longer = ts_batch_make(lq, ls, 2, 16, 1, -1);
    const char* backends[2] = {"FLASH_ATTN", "CPU_ATTN"};
    int k;
    for (k = 0; k < 2; ++k) {
      b = ts_builder(backends[k], &spec, &config);
      ASSERT_OK(attn_build(b, 0, &longer->common, 0, &m, NULL));
      attn_builder_destroy(b);
    }
    ts_batch_free(longer);
  }
}

/* Fast prefill around chunked local attention, in one caller workspace; the level reduction. */
static void test_stacking_and_min_level(void** state) {
  static const int32_t q[2] = {1, 20}, s[2] = {50, 20};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_kv_cache_spec_t plain = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* stacked;
  const attn_builder_t* builders[3];
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 4, -1);
  attn_metadata_t* m = NULL;
  size_t bytes = 0, plain_bytes = 0, k, n;
  int32_t idx[2] = {0, 20};
  int64_t idx_shape[1] = {2};
  attn_tensor_t logits = ts_host_tensor(idx, 1, idx_shape, ATTN_DTYPE_INT, 32);
  void* ws;
  int32_t level = -1;
  (void)state;
  spec.kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION;
  spec.attention_chunk_size = 32;
  config.kv_sharing_fast_prefill = 1;
  ASSERT_OK(attn_builder_workspace_size("FLASH_ATTN", &spec, &config, &bytes));
  ASSERT_OK(attn_builder_workspace_size("FLASH_ATTN", &plain, &config, &plain_bytes));
  assert_true(bytes > plain_bytes); /* the wrappers' buffers come first */
  ws = aligned_alloc(256, bytes);
  config.workspace = ws;
  config.workspace_size = bytes - 1;
  {
    attn_builder_t* x = (attn_builder_t*)UNTOUCHED_PTR;
    ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &x), ATTN_ERR_INVALID_ARGUMENT,
                 "config->workspace_size=");
    assert_ptr_equal(x, UNTOUCHED_PTR);
  }
  config.workspace_size = bytes;
  stacked = ts_builder("FLASH_ATTN", &spec, &config);
  batch->common.logits_indices_padded = &logits;  /* the last token of each request */
  batch->common.num_logits_indices = 2;
  ASSERT_OK(attn_build(stacked, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "FastPrefillChunkedLocalAttention_32_FLASH_ATTN");
  /* every builder-owned tensor lives in the workspace */
  n = attn_metadata_field_count(m);
  for (k = 0; k < n; ++k) {
    attn_field_t f = ATTN_FIELD_INIT;
    ASSERT_OK(attn_metadata_field(m, k, &f));
    if (f.kind == ATTN_FIELD_TENSOR && (strcmp(f.name, "query_start_loc") == 0 ||
                                        strcmp(f.name, "virtual_req") == 0))
      assert_true((const char*)f.tensor->data >= (const char*)ws &&
                  (const char*)f.tensor->data < (const char*)ws + bytes);
  }
  /* fast prefill keeps one query per request; chunked local attention then sees 50 % 32 and 20 */
  ts_expect_i32(m, "query_start_loc", (int32_t[]){0, 1, 2}, 3);
  ts_expect_i32(m, "seq_lens", (int32_t[]){18, 20}, 2);
  assert_int_equal(ts_int(m, "num_logits_indices"), 2);
  /* the level runtimes pick: the minimum over their builders */
  config.workspace = NULL;
  config.workspace_size = 0;
  config.kv_sharing_fast_prefill = 0;
  builders[0] = ts_builder("FLASH_ATTN", &plain, &config);  /* ALWAYS (FA3 on sm90) */
  builders[1] = ts_builder("FLASHINFER", &plain, &config);  /* UNIFORM_BATCH (XQA on sm90) */
  builders[2] = stacked;                                    /* NEVER (chunked local) */
  ASSERT_OK(attn_min_cudagraph_support(builders, 2, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_min_cudagraph_support(builders, 3, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  attn_builder_destroy((attn_builder_t*)builders[0]);
  attn_builder_destroy((attn_builder_t*)builders[1]);
  attn_builder_destroy(stacked);
  free(ws);
  ts_batch_free(batch);
}

/* A caller compiled against ABI 1.0 passes the smaller config: the 1.1 fields take their
 * defaults. */
static void test_abi_1_0_config(void** state) {
  static const int32_t q[1] = {1}, s[1] = {10};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 1, 16, 1, -1);
  attn_metadata_t* m = NULL;
  int32_t threshold = -1;
  (void)state;
  config.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0;
  config.kv_sharing_fast_prefill = 1;             /* beyond struct_size: not read */
  config.speculative_token_tree = "not a tree";   /* neither */
  b = ts_builder("TREE_ATTN", &spec, &config);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 2); /* the default tree */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "TREE_ATTN");
  attn_builder_destroy(b);
  batch->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_0;
  b = ts_builder("FLASH_ATTN", &spec, &config);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  attn_builder_destroy(b);
  config.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0 - 1;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->struct_size=");
  /* a size between two versions would cut a field (found by the long fuzz run: half a pointer) */
  config.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0 + 4;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "is not the size of an ABI version of this struct");
  config.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE;
  batch->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_1 - 4;
  b = ts_builder("FLASH_ATTN", &spec, &config);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->struct_size=156 is not the size of an ABI version of this struct");
  attn_builder_destroy(b);
  batch->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE;
  config.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE;
  config.speculative_token_tree = NULL;
  config.kv_sharing_fast_prefill = 0;
  config.reserved_1_1 = 3;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->reserved_1_1=3 must be 0");
  ts_batch_free(batch);
}

/* StaticSink (vLLM 0.33's create_static_sink_attention_backend): sink_len 32 on block 16 = two
 * sink blocks (ids 1, 2) prepended to a persistent max_num_seqs x (2 + cdiv(4096, 16)) table;
 * seq_lens + 32 (a padded request's 0 stays 0), max_seq_len + 32. */
static void expect_sink_row(const attn_tensor_t* t, int64_t r, const int32_t* want, int64_t n) {
  const int32_t* row = (const int32_t*)t->data + r * t->strides[0];
  int64_t j;
  for (j = 0; j < n; ++j)
    if (row[j] != want[j]) fail_msg("block_table[%d][%d]=%d, expected %d", (int)r, (int)j, row[j], want[j]);
}

static void test_static_sink(void** state) {
  static const int32_t q[3] = {1, 3, 0}, s[3] = {20, 40, 0};
  int64_t i;
  attn_kv_cache_spec_t spec = ts_spec();
  attn_kv_cache_spec_t plain = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 8, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int32_t level = -1, plain_level = -2, threshold = -1, plain_threshold = -2;
  size_t bytes = 0, plain_bytes = 0;
  (void)state;
  spec.sink_len = 32;
  for (i = 0; i < 8; ++i) batch->bt[8 + i] = 100 + (int32_t)i; /* row 1: every column set */
  b = ts_builder("FLASH_ATTN", &spec, &config);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "StaticSink_FLASH_ATTN");
  ts_expect_i32(m, "seq_lens", (int32_t[]){52, 72, 0}, 3);
  assert_int_equal(ts_int(m, "max_seq_len"), 72);
  t = ts_tensor(m, "block_table");
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], 3);
  assert_int_equal(t->shape[1], 2 + 4096 / 16);
  /* cdiv(72, 16) = 5 columns copied behind the sinks; the rest of the persistent table is 0 */
  expect_sink_row(t, 0, (int32_t[]){1, 2, 1, 2, 0, 0, 0, 0, 0}, 9);
  expect_sink_row(t, 1, (int32_t[]){1, 2, 100, 101, 102, 103, 104, 0, 0}, 9);
  expect_sink_row(t, 2, (int32_t[]){1, 2, 0, 0, 0, 0, 0, 0, 0}, 9);
  /* the caller's seq_lens are not touched (vLLM edits its tensor in place) */
  assert_int_equal(batch->seq[0], 20);
  /* persistent: a shorter batch rewrites cdiv(10 + 32, 16) = 3 columns; row 1 keeps the rest */
  {
    static const int32_t q2[2] = {1, 1}, s2[2] = {10, 3};
    ts_batch* shorter = ts_batch_make(q2, s2, 2, 16, 3, -1);
    shorter->bt[0] = 7; shorter->bt[1] = 0; shorter->bt[2] = 0;
    shorter->bt[3] = 9; shorter->bt[4] = 0; shorter->bt[5] = 0;
    ASSERT_OK(attn_build(b, 0, &shorter->common, 0, &m, NULL));
    t = ts_tensor(m, "block_table");
    expect_sink_row(t, 0, (int32_t[]){1, 2, 7, 0, 0, 0}, 6);
    expect_sink_row(t, 1, (int32_t[]){1, 2, 9, 0, 0, 103, 104, 0}, 8);
    ts_expect_i32(m, "seq_lens", (int32_t[]){42, 35}, 2);
    ts_batch_free(shorter);
  }
  /* level, threshold, update support and workspace: the wrapped builder's, plus the table */
  {
    attn_builder_t* p = ts_builder("FLASH_ATTN", &plain, &config);
    ASSERT_OK(attn_builder_cudagraph_support(b, &level));
    ASSERT_OK(attn_builder_cudagraph_support(p, &plain_level));
    assert_int_equal(level, plain_level);
    ASSERT_OK(attn_backend_cudagraph_support("FLASH_ATTN", &spec, &config, &level));
    assert_int_equal(level, plain_level);
    ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
    ASSERT_OK(attn_builder_reorder_batch_threshold(p, &plain_threshold));
    assert_int_equal(threshold, plain_threshold);
    ASSERT_OK(attn_builder_supports_update_block_table(b, &level));
    ASSERT_OK(attn_builder_supports_update_block_table(p, &plain_level));
    assert_int_equal(level, plain_level);
    assert_int_equal(level, 1);
    attn_builder_destroy(p);
  }
  ASSERT_OK(attn_builder_workspace_size("FLASH_ATTN", &spec, &config, &bytes));
  ASSERT_OK(attn_builder_workspace_size("FLASH_ATTN", &plain, &config, &plain_bytes));
  assert_true(bytes >= plain_bytes + 256 * (2 + 256) * 4);
  /* update_block_table: vLLM's subclass inherits FLASH_ATTN's, which installs the table given */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ASSERT_OK(attn_update_block_table(b, m, batch->common.block_table_tensor,
                                    batch->common.slot_mapping, &m, NULL));
  assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
  /* bad input: a table narrower than the cdiv(max_seq_len + sink_len, block) columns vLLM copies */
  {
    static const int32_t q3[1] = {1}, s3[1] = {40};
    ts_batch* narrow = ts_batch_make(q3, s3, 1, 16, 3, -1);
    ASSERT_ERROR(attn_build(b, 0, &narrow->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->block_table_tensor has 3 columns: vLLM 0.33's StaticSink copies "
                 "min(k, its width) = 3 of them into min(k, cdiv(max_model_len, block_size)) = 5");
    ts_batch_free(narrow);
  }
  {  /* ... except a one-column table, which torch broadcasts to the cdiv(12 + 32, 16) = 3 */
    static const int32_t q4[2] = {1, 2}, s4[2] = {12, 5};
    ts_batch* one = ts_batch_make(q4, s4, 2, 16, 1, -1);
    ASSERT_OK(attn_build(b, 0, &one->common, 0, &m, NULL));
    t = ts_tensor(m, "block_table");
    expect_sink_row(t, 0, (int32_t[]){1, 2, one->bt[0], one->bt[0], one->bt[0], 0}, 6);
    expect_sink_row(t, 1, (int32_t[]){1, 2, one->bt[1], one->bt[1], one->bt[1], 103}, 6);
    ts_batch_free(one);
  }
  {  /* ... and one wider than the persistent table's cdiv(4096, 16) = 256 columns when
      * cdiv(max_seq_len + sink_len, 16) = 258 exceeds them (torch: 258 into 256) */
    static const int32_t q5[1] = {1}, s5[1] = {4090};
    ts_batch* wide = ts_batch_make(q5, s5, 1, 16, 258, -1);
    ASSERT_ERROR(attn_build(b, 0, &wide->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "copies min(k, its width) = 258 of them into min(k, cdiv(max_model_len, "
                 "block_size)) = 256 columns");
    ts_batch_free(wide);
    wide = ts_batch_make(q5, s5, 1, 16, 256, -1); /* the runner's width: fine */
    ASSERT_OK(attn_build(b, 0, &wide->common, 0, &m, NULL));
    ts_batch_free(wide);
  }
  attn_builder_destroy(b);
  /* TRITON_ATTN: capture writes 1 into the (sink) seq_lens, as vLLM's override after build */
  b = ts_builder("TRITON_ATTN", &spec, &config);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "StaticSink_TRITON_ATTN");
  ts_expect_i32(m, "seq_lens", (int32_t[]){52, 72, 0}, 3);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  ts_expect_i32(m, "seq_lens", (int32_t[]){1, 1, 1}, 3);
  assert_int_equal(ts_int(m, "max_seq_len"), 72);
  expect_sink_row(ts_tensor(m, "block_table"), 1, (int32_t[]){1, 2, 100, 101, 102}, 5);
  attn_builder_destroy(b);
  /* bad specs */
  spec.sink_len = 24;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->sink_len=24 is not a multiple of kv_cache_spec->block_size=16");
  spec.sink_len = -16;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->sink_len=-16 is negative");
  spec.sink_len = 16;
  spec.kind = ATTN_KV_SLIDING_WINDOW;
  spec.sliding_window = 128;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->sink_len=16 needs kind ATTN_KV_FULL_ATTENTION");
  /* a 1.6 caller's smaller spec: no sink whatever follows */
  spec = ts_spec();
  spec.struct_size = ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_6;
  spec.sink_len = 32;
  b = ts_builder("FLASH_ATTN", &spec, &config);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "FLASH_ATTN");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* StaticSink against a naive persistent table on random batches (FLASH_ATTN and TRITON_ATTN). */
static void test_static_sink_random(void** state) {
  enum { kSeqs = 16, kLen = 512, kBlock = 16, kSinks = 3 };
  const int64_t width = kSinks + kLen / kBlock;
  static int32_t shadow[kSeqs * (kSinks + kLen / kBlock)];
  const char* backends[2] = {"FLASH_ATTN", "TRITON_ATTN"};
  uint64_t rng = 20;
  int k, it;
  (void)state;
  for (k = 0; k < 2; ++k) {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t config = ts_config();
    attn_builder_t* b;
    int64_t r, j;
    spec.sink_len = kSinks * kBlock;
    config.max_num_seqs = kSeqs;
    config.max_model_len = kLen;
    b = ts_builder(backends[k], &spec, &config);
    for (r = 0; r < kSeqs; ++r)
      for (j = 0; j < width; ++j) shadow[r * width + j] = j < kSinks ? (int32_t)j + 1 : 0;
    for (it = 0; it < 200; ++it) {
      int32_t q[kSeqs], s[kSeqs], want[kSeqs];
      const int64_t n = ts_rand_range(&rng, 1, kSeqs);
      int64_t maxs = 0, cols;
      ts_batch* batch;
      attn_metadata_t* m = NULL;
      const attn_tensor_t* t;
      for (r = 0; r < n; ++r) {
        s[r] = (int32_t)ts_rand_range(&rng, 0, kLen);
        q[r] = s[r] == 0 ? 0 : (int32_t)ts_rand_range(&rng, 1, s[r] < 8 ? s[r] : 8);
        want[r] = s[r] == 0 ? 0 : s[r] + kSinks * kBlock;
        if (s[r] > maxs) maxs = s[r];
      }
      batch = ts_batch_make(q, s, n, kBlock, kLen / kBlock, -1);
      cols = (maxs + kSinks * kBlock + kBlock - 1) / kBlock;
      if (cols > kLen / kBlock) cols = kLen / kBlock;
      for (r = 0; r < n; ++r)
        for (j = 0; j < cols; ++j) shadow[r * width + kSinks + j] = batch->bt[r * batch->width + j];
      ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
      ts_expect_i32(m, "seq_lens", want, n);
      assert_int_equal(ts_int(m, "max_seq_len"), maxs + kSinks * kBlock);
      t = ts_tensor(m, "block_table");
      assert_int_equal(t->shape[0], n);
      assert_int_equal(t->shape[1], width);
      for (r = 0; r < n; ++r) expect_sink_row(t, r, shadow + r * width, width);
      ts_batch_free(batch);
    }
    attn_builder_destroy(b);
  }
}

/* Whisper causal block pooling (config->block_pool_size): the pooled build equals the wrapped
 * backend's plain build, at block_size * P, of the batch with query_start_loc, seq_lens and the
 * scalars multiplied by P and every slot expanded into P slots (hand-checked here). */
static void expect_same_fields(const attn_metadata_t* a, const attn_metadata_t* b, const char* what) {
  char why[512];
  if (!ts_same_fields(a, b, why, sizeof why)) fail_msg("%s: %s", what, why);
}

static void test_block_pooling(void** state) {
  enum { kP = 4 };
  static const int32_t q[3] = {1, 3, 2}, s[3] = {5, 3, 40};
  static const int32_t qp[3] = {4, 12, 8}, sp[3] = {20, 12, 160};
  const char* backends[2] = {"FLASH_ATTN", "TRITON_ATTN"};
  attn_builder_config_t config = ts_config();
  attn_builder_config_t plain_config = ts_config();
  attn_kv_cache_spec_t spec = ts_spec();
  attn_kv_cache_spec_t pooled_spec = ts_spec();
  int k;
  (void)state;
  config.block_pool_size = kP;
  pooled_spec.block_size = 16 * kP;
  /* vLLM's wrapped builder keeps the model config except num_heads_q = num_kv_heads, and libattn
   * sizes it for the pooled tokens and lengths */
  plain_config.max_num_batched_tokens = config.max_num_batched_tokens * kP;
  plain_config.max_model_len = config.max_model_len * kP;
  for (k = 0; k < 2; ++k) {
    /* FLASH_ATTN's schedule reads vLLM's overridden num_heads_q (FA3 here: ts_config's sm90) */
    plain_config.num_attention_heads = k == 0 ? spec.num_kv_heads : config.num_attention_heads;
    ts_batch* batch = ts_batch_make(q, s, 3, 16, 3, 8); /* 6 tokens + 2 padding slots */
    ts_batch* scaled = ts_batch_make(qp, sp, 3, 64, 3, 32);
    attn_builder_t* b = ts_builder(backends[k], &spec, &config);
    attn_builder_t* p = ts_builder(backends[k], &pooled_spec, &plain_config);
    attn_metadata_t* m = NULL;
    attn_metadata_t* want = NULL;
    int64_t slots[32];
    int64_t i, j;
    int32_t level = -1;
    char kind[96];
    memcpy(scaled->bt, batch->bt, sizeof(int32_t) * 9);
    for (i = 0; i < 8; ++i)
      for (j = 0; j < kP; ++j) {
        const int64_t v = batch->slots[i] * kP + j;
        slots[i * kP + j] = v < -1 ? -1 : v;
      }
    memcpy(scaled->slots, slots, sizeof slots);
    /* the hand-checked expansion: token 0 of request 0 sits at position 4 of block bt[0][0] */
    assert_int_equal(slots[0], (int64_t)batch->bt[0] * 64 + 16);
    assert_int_equal(slots[3], (int64_t)batch->bt[0] * 64 + 19);
    assert_int_equal(slots[6 * kP], -1);
    assert_int_equal(slots[8 * kP - 1], -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    snprintf(kind, sizeof kind, "WhisperCausalAttentionWithBlockPooling_%s", backends[k]);
    assert_string_equal(attn_metadata_kind(m), kind);
    ts_expect_i32(m, "query_start_loc", (int32_t[]){0, 4, 16, 24}, 4);
    ts_expect_i32(m, "seq_lens", sp, 3);
    ts_expect_i64(m, "slot_mapping", slots, 32);
    assert_int_equal(ts_int(m, "num_actual_tokens"), 32);
    assert_int_equal(ts_int(m, "max_query_len"), 12);
    assert_int_equal(ts_int(m, "max_seq_len"), 160);
    ASSERT_OK(attn_build(p, 0, &scaled->common, 0, &want, NULL));
    expect_same_fields(m, want, backends[k]);
    /* the caller's batch is left alone */
    assert_int_equal(batch->seq[2], 40);
    assert_int_equal(batch->qsl[3], 6);
    /* vLLM's class attributes: UNIFORM_SINGLE_TOKEN_DECODE, no update_block_table */
    ASSERT_OK(attn_builder_cudagraph_support(b, &level));
    assert_int_equal(level, ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
    ASSERT_OK(attn_backend_cudagraph_support(backends[k], &spec, &config, &level));
    assert_int_equal(level, ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
    ASSERT_OK(attn_builder_supports_update_block_table(b, &level));
    assert_int_equal(level, 0);
    /* the common prefix is pooled too (FLASH_ATTN's cascade fields) */
    if (k == 0) {
      static const int32_t q2[2] = {1, 1}, s2[2] = {40, 40};
      static const int32_t q2p[2] = {4, 4}, s2p[2] = {160, 160};
      ts_batch* c = ts_batch_make(q2, s2, 2, 16, 3, -1);
      ts_batch* cp = ts_batch_make(q2p, s2p, 2, 64, 3, -1);
      memcpy(cp->bt, c->bt, sizeof(int32_t) * 6);
      for (i = 0; i < 2; ++i) cp->bt[3 + i] = cp->bt[i];
      for (i = 0; i < 2; ++i) c->bt[3 + i] = c->bt[i];
      for (i = 0; i < 2; ++i)
        for (j = 0; j < kP; ++j) cp->slots[i * kP + j] = c->slots[i] * kP + j;
      ASSERT_OK(attn_build(b, 32, &c->common, 0, &m, NULL));
      ASSERT_OK(attn_build(p, 128, &cp->common, 0, &want, NULL));
      expect_same_fields(m, want, "common prefix");
      ts_batch_free(c);
      ts_batch_free(cp);
    }
    attn_builder_destroy(b);
    attn_builder_destroy(p);
    ts_batch_free(batch);
    ts_batch_free(scaled);
  }
  /* bad configs, named */
  {
    attn_builder_t* b = NULL;
    config.block_pool_size = -2;
    ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
                 "config->block_pool_size=-2 is negative");
    config.block_pool_size = 4;
    ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &config, &b), ATTN_ERR_UNSUPPORTED,
                 "config->block_pool_size=4: FLASHINFER has no Whisper block-pooling wrapper");
    ASSERT_ERROR(attn_builder_create("CPU_ATTN", &spec, &config, &b), ATTN_ERR_UNSUPPORTED,
                 "CPU_ATTN has no Whisper block-pooling wrapper");
    config.device_capability = 120;
    config.num_sms = 188;
    ASSERT_ERROR(attn_builder_create("TRITON_ATTN", &spec, &config, &b), ATTN_ERR_UNSUPPORTED,
                 "with TRITON_ATTN on SM 12.0 (config->num_sms=188) and "
                 "config->num_attention_heads=32 != kv_cache_spec->num_kv_heads=8");
    config.num_attention_heads = spec.num_kv_heads; /* Whisper's encoder: no GQA, no view */
    b = ts_builder("TRITON_ATTN", &spec, &config);
    attn_builder_destroy(b);
    config = ts_config();
    config.block_pool_size = 4;
    config.max_model_len = 1 << 23;
    ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
                 "config->max_model_len=8388608 * block_pool_size=4 exceeds 16777216");
    config = ts_config();
    config.block_pool_size = 4;
    config.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_6; /* an older caller: no pooling */
    b = ts_builder("FLASH_ATTN", &spec, &config);
    {
      static const int32_t q1[1] = {1}, s1[1] = {5};
      ts_batch* one = ts_batch_make(q1, s1, 1, 16, 1, -1);
      attn_metadata_t* m = NULL;
      ASSERT_OK(attn_build(b, 0, &one->common, 0, &m, NULL));
      assert_string_equal(attn_metadata_kind(m), "FLASH_ATTN");
      ts_batch_free(one);
    }
    attn_builder_destroy(b);
  }
}

/* Random batches: the pooled build against the plain build of the hand-pooled batch. */
static void test_block_pooling_random(void** state) {
  enum { kSeqs = 8, kBlock = 16, kWidth = 16 };
  const char* backends[2] = {"FLASH_ATTN", "TRITON_ATTN"};
  uint64_t rng = 33;
  int k, it;
  (void)state;
  for (k = 0; k < 2; ++k)
    for (it = 0; it < 150; ++it) {
      const int32_t pool = (int32_t)ts_rand_range(&rng, 1, 8);
      attn_builder_config_t config = ts_config();
      attn_builder_config_t plain_config = ts_config();
      attn_kv_cache_spec_t spec = ts_spec();
      attn_kv_cache_spec_t pooled_spec = ts_spec();
      int32_t q[kSeqs], s[kSeqs], qp[kSeqs], sp[kSeqs];
      const int64_t n = ts_rand_range(&rng, 1, kSeqs);
      int64_t r, i, j, tokens = 0;
      ts_batch *batch, *scaled;
      attn_builder_t *b, *p;
      attn_metadata_t *m = NULL, *want = NULL;
      config.block_pool_size = pool;
      pooled_spec.block_size = kBlock * pool;
      plain_config.num_attention_heads = k == 0 ? spec.num_kv_heads : config.num_attention_heads;
      plain_config.max_num_batched_tokens = config.max_num_batched_tokens * pool;
      plain_config.max_model_len = config.max_model_len * pool;
      for (r = 0; r < n; ++r) {
        s[r] = (int32_t)ts_rand_range(&rng, 1, kBlock * kWidth);
        q[r] = (int32_t)ts_rand_range(&rng, 1, s[r] < 6 ? s[r] : 6);
        qp[r] = q[r] * pool;
        sp[r] = s[r] * pool;
        tokens += q[r];
      }
      batch = ts_batch_make(q, s, n, kBlock, kWidth, tokens + 3);
      scaled = ts_batch_make(qp, sp, n, kBlock * pool, kWidth, (tokens + 3) * pool);
      memcpy(scaled->bt, batch->bt, sizeof(int32_t) * (size_t)(n * kWidth));
      for (i = 0; i < tokens + 3; ++i)
        for (j = 0; j < pool; ++j) {
          const int64_t v = batch->slots[i] * pool + j;
          scaled->slots[i * pool + j] = v < -1 ? -1 : v;
        }
      b = ts_builder(backends[k], &spec, &config);
      p = ts_builder(backends[k], &pooled_spec, &plain_config);
      ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
      ASSERT_OK(attn_build(p, 0, &scaled->common, 0, &want, NULL));
      expect_same_fields(m, want, backends[k]);
      attn_builder_destroy(b);
      attn_builder_destroy(p);
      ts_batch_free(batch);
      ts_batch_free(scaled);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chunked_local_vector),
      cmocka_unit_test(test_chunked_local_update),
      cmocka_unit_test(test_fast_prefill_vector),
      cmocka_unit_test(test_cross_attention),
      cmocka_unit_test(test_encoder_only),
      cmocka_unit_test(test_stacking_and_min_level),
      cmocka_unit_test(test_abi_1_0_config),
      cmocka_unit_test(test_static_sink),
      cmocka_unit_test(test_static_sink_random),
      cmocka_unit_test(test_block_pooling),
      cmocka_unit_test(test_block_pooling_random),
  };
  return cmocka_run_group_tests_name("wrappers", tests, NULL, NULL);
}
