/* FLASH_ATTN metadata on hand-checked batches: every field of vLLM's FlashAttentionMetadata and
 * libattn's scheduler inputs, cascade, DCP, sliding windows, update_block_table, capture and
 * drafting builds, buffer stability, clones, the cascade heuristic, and seeded random batches
 * against a naive computation written for this test. */
#include "test_support.h"

static const int32_t kQ[5] = {1, 1, 1, 32, 20};   /* 3 decodes, chunked prefill, prefill */
static const int32_t kS[5] = {41, 100, 17, 96, 20};

static attn_builder_config_t config_for(int32_t capability) {
  attn_builder_config_t c = ts_config();
  c.device_capability = capability;
  c.max_model_len = 1024;
  return c;
}

static attn_builder_t* builder_for(const attn_builder_config_t* c) {
  attn_kv_cache_spec_t spec = ts_spec();
  return ts_builder("FLASH_ATTN", &spec, c);
}

static ts_batch* sample(void) { return ts_batch_make(kQ, kS, 5, 16, 64, -1); }

/* vLLM 0.33 removed cascade attention: a field a build without common_prefix_len lacks. */
static void expect_absent(const attn_metadata_t* m, const char* name) {
  attn_field_t f = ATTN_FIELD_INIT;
  attn_error_t* e = attn_metadata_get(m, name, &f);
  if (e == NULL) fail_msg("%s is present", name);
  assert_int_equal(attn_error_code(e), ATTN_ERR_NOT_FOUND);
  attn_error_destroy(e);
}

static const char* const kCascadeFields[] = {"use_cascade",    "common_prefix_len",
                                             "cu_prefix_query_lens", "prefix_kv_lens",
                                             "suffix_kv_lens", "prefix_scheduler_metadata",
                                             "prefix_scheduler_batch_size"};

static void expect_no_cascade_fields(const attn_metadata_t* m) {
  size_t i;
  for (i = 0; i < sizeof kCascadeFields / sizeof kCascadeFields[0]; ++i)
    expect_absent(m, kCascadeFields[i]);
}

static void expect_bool(const attn_metadata_t* m, const char* name, int value) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  if (f.kind != ATTN_FIELD_BOOL) fail_msg("%s has kind %d, expected BOOL", name, f.kind);
  assert_int_equal(f.int_value, value);
}

static const char* const kScheduleSuffixes[] = {
    "batch_size", "max_seqlen_q", "max_seqlen_k", "num_heads_q", "num_heads_kv",
    "headdim", "cache_seqlens", "cu_seqlens_q", "qkv_dtype", "page_size",
    "causal", "window_left", "window_right", "num_splits"};

static void expect_schedule_none(const attn_metadata_t* m, const char* prefix) {
  size_t i;
  char name[64];
  for (i = 0; i < sizeof kScheduleSuffixes / sizeof kScheduleSuffixes[0]; ++i) {
    snprintf(name, sizeof name, "%s%s", prefix, kScheduleSuffixes[i]);
    ts_expect_none(m, name);
  }
}

static void test_plain_build(void** state) {
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b = builder_for(&c);
  ts_batch* batch = sample();
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int64_t i;
  static const int32_t qsl[6] = {0, 1, 2, 3, 35, 55};
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "FLASH_ATTN");
  /* vLLM 0.33's FlashAttentionMetadata (21 fields), then libattn's 15 scheduler fields; no
   * cascade fields */
  assert_int_equal(attn_metadata_field_count(m), 36);
  {
    attn_field_t f = ATTN_FIELD_INIT;
    static const char* const order[] = {
        "num_actual_tokens", "max_query_len", "query_start_loc", "max_seq_len", "seq_lens",
        "block_table", "slot_mapping", "max_dcp_context_kv_len", "dcp_context_kv_lens",
        "num_decode_reqs", "num_prefill_reqs", "num_decode_tokens", "num_prefill_tokens",
        "scheduler_metadata", "max_num_splits", "causal", "mm_prefix_query_range_tensor",
        "rswa_prefix_lens", "rswa_window", "rswa_window_tensor"};
    for (i = 0; i < (int64_t)(sizeof order / sizeof order[0]); ++i) {
      ASSERT_OK(attn_metadata_field(m, (size_t)i, &f));
      assert_string_equal(f.name, order[i]);
    }
  }
  /* vLLM's FlashAttentionMetadata */
  assert_int_equal(ts_int(m, "num_actual_tokens"), 55);
  assert_int_equal(ts_int(m, "max_query_len"), 32);
  ts_expect_i32(m, "query_start_loc", qsl, 6);
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl); /* a view, no copy */
  assert_int_equal(ts_int(m, "max_seq_len"), 100);
  ts_expect_i32(m, "seq_lens", kS, 5);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  t = ts_tensor(m, "block_table");
  assert_ptr_equal(t->data, batch->bt);
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], 5);
  assert_int_equal(t->shape[1], 64);
  assert_int_equal(t->strides[0], 64);
  assert_int_equal(t->strides[1], 1);
  t = ts_tensor(m, "slot_mapping");
  assert_ptr_equal(t->data, batch->slots);
  assert_int_equal(t->dtype.bits, 64);
  assert_int_equal(t->shape[0], 55);
  expect_no_cascade_fields(m);
  assert_int_equal(ts_int(m, "max_dcp_context_kv_len"), 0);
  ts_expect_none(m, "dcp_context_kv_lens");
  assert_int_equal(ts_int(m, "num_decode_reqs"), 0);
  assert_int_equal(ts_int(m, "num_prefill_reqs"), 0);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 0);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 0);
  ts_expect_none(m, "scheduler_metadata");
  assert_int_equal(ts_int(m, "max_num_splits"), 0); /* no capture size: FA3's own heuristics */
  expect_bool(m, "causal", 1);
  /* FA3 ahead-of-time scheduling inputs */
  expect_bool(m, "aot_schedule", 1);
  t = ts_tensor(m, "scheduler_metadata_buffer");
  assert_non_null(t);
  assert_int_equal(t->shape[0], 1 + 256 * 4); /* 1 + round_up(max_num_seqs, 4) * 4 */
  for (i = 0; i < t->shape[0]; ++i) assert_int_equal(((int32_t*)t->data)[i], 0);
  assert_int_equal(ts_int(m, "scheduler_batch_size"), 5);
  assert_int_equal(ts_int(m, "scheduler_max_seqlen_q"), 32);
  assert_int_equal(ts_int(m, "scheduler_max_seqlen_k"), 100);
  assert_int_equal(ts_int(m, "scheduler_num_heads_q"), 32);
  assert_int_equal(ts_int(m, "scheduler_num_heads_kv"), 8);
  assert_int_equal(ts_int(m, "scheduler_headdim"), 128);
  assert_ptr_equal(ts_tensor(m, "scheduler_cache_seqlens")->data, batch->seq);
  assert_ptr_equal(ts_tensor(m, "scheduler_cu_seqlens_q")->data, batch->qsl);
  assert_int_equal(ts_int(m, "scheduler_qkv_dtype"), ATTN_KV_DTYPE_BFLOAT16);
  assert_int_equal(ts_int(m, "scheduler_page_size"), 16);
  expect_bool(m, "scheduler_causal", 1);
  assert_int_equal(ts_int(m, "scheduler_window_left"), -1);
  assert_int_equal(ts_int(m, "scheduler_window_right"), -1);
  assert_int_equal(ts_int(m, "scheduler_num_splits"), 0);
  /* non-causal batches pass causal through */
  batch->common.causal = 0;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_bool(m, "causal", 0);
  expect_bool(m, "scheduler_causal", 0);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* vLLM 0.33's multimodal PrefixLM, R-SWA and per-request causal inputs. Expected values from
 * vLLM 0.33.0's fill_mm_prefix_query_ranges on this batch with {3: [(70, 80), (90, 95)],
 * 4: [(2, 5)]} (run in the venv): request 3 (context 64, tokens 3..34) covers (70, 80) with
 * tokens 9..19 and (90, 95) with 29..34, request 4 (context 0, tokens 35..54) (2, 5) with
 * 37..40; every other token (-1, -1). */
static void test_mm_prefix_rswa_causal(void** state) {
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b;
  ts_batch* batch = sample();
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int32_t ranges[3][3] = {{3, 70, 80}, {3, 90, 95}, {4, 2, 5}};
  int32_t causal[5] = {1, 0, 1, 1, 0};
  int32_t rswa[5] = {4, 8, 0, 2, 20};
  int32_t expected[55][2];
  int64_t rshape[2] = {3, 3}, n5[1] = {5};
  attn_tensor_t ranges_t = ts_host_tensor(ranges, 2, rshape, ATTN_DTYPE_INT, 32);
  attn_tensor_t causal_t = ts_host_tensor(causal, 1, n5, ATTN_DTYPE_INT, 32);
  attn_tensor_t rswa_t = ts_host_tensor(rswa, 1, n5, ATTN_DTYPE_INT, 32);
  int64_t i;
  (void)state;
  for (i = 0; i < 55; ++i) expected[i][0] = expected[i][1] = -1;
  for (i = 9; i <= 19; ++i) expected[i][0] = 70, expected[i][1] = 80;
  for (i = 29; i <= 34; ++i) expected[i][0] = 90, expected[i][1] = 95;
  for (i = 37; i <= 40; ++i) expected[i][0] = 2, expected[i][1] = 5;
  /* Without the model flags the inputs change nothing (vLLM builds neither buffer). */
  b = builder_for(&c);
  batch->common.mm_req_doc_ranges = &ranges_t;
  batch->common.rswa_prefix_lens = &rswa_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "mm_prefix_query_range_tensor");
  ts_expect_none(m, "rswa_prefix_lens");
  ts_expect_none(m, "rswa_window");
  ts_expect_none(m, "rswa_window_tensor");
  attn_builder_destroy(b);

  c.is_mm_prefix_lm = 1;
  c.rswa_window = 128;
  b = builder_for(&c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  t = ts_tensor(m, "mm_prefix_query_range_tensor");
  assert_non_null(t);
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], 55);
  assert_int_equal(t->shape[1], 2);
  assert_memory_equal(t->data, expected, sizeof expected);
  ts_expect_i32(m, "rswa_prefix_lens", rswa, 5);
  assert_ptr_not_equal(ts_tensor(m, "rswa_prefix_lens")->data, rswa); /* the persistent copy */
  assert_int_equal(ts_int(m, "rswa_window"), 128);
  {
    static const int32_t window[1] = {128};
    ts_expect_i32(m, "rswa_window_tensor", window, 1);
  }
  expect_bool(m, "causal", 1);
  /* 0.33's `causal: bool | Tensor`: the per-request tensor, also to the FA3 scheduler */
  batch->common.causal_per_request = &causal_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i32(m, "causal", causal, 5);
  ts_expect_i32(m, "scheduler_causal", causal, 5);
  /* 0.33 places the query tokens by seq_lens_cpu_upper_bound: an async spec-decode bound one
   * past request 4's exact 20 moves its positions by one, so (2, 5) covers rows 36..39 */
  {
    int32_t bound[5] = {41, 100, 17, 96, 21};
    attn_tensor_t bound_t = ts_host_tensor(bound, 1, n5, ATTN_DTYPE_INT, 32);
    batch->common.seq_lens_cpu_upper_bound = &bound_t;
    for (i = 35; i < 55; ++i) expected[i][0] = expected[i][1] = -1;
    for (i = 36; i <= 39; ++i) expected[i][0] = 2, expected[i][1] = 5;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_memory_equal(ts_tensor(m, "mm_prefix_query_range_tensor")->data, expected,
                        sizeof expected);
    batch->common.seq_lens_cpu_upper_bound = NULL;
  }
  /* no range covers a scheduled token: None (vLLM: 0 rows written) */
  ranges[0][1] = 0, ranges[0][2] = 10; /* request 3's context is 64: nothing scheduled */
  ranges[1][1] = 20, ranges[1][2] = 30;
  ranges[2][0] = 3, ranges[2][1] = 40, ranges[2][2] = 50;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "mm_prefix_query_range_tensor");
  /* without prefix lengths, no R-SWA fields */
  batch->common.rswa_prefix_lens = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_none(m, "rswa_prefix_lens");
  ts_expect_none(m, "rswa_window");
  attn_builder_destroy(b);
  /* a negative window is refused, naming it */
  c.rswa_window = -1;
  b = (attn_builder_t*)UNTOUCHED_PTR;
  {
    attn_kv_cache_spec_t spec = ts_spec();
    ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
                 "config->rswa_window=-1");
  }
  assert_ptr_equal(b, UNTOUCHED_PTR);
  ts_batch_free(batch);
}

static void test_cascade(void** state) {
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b = builder_for(&c);
  ts_batch* batch = sample();
  attn_metadata_t* m = NULL;
  static const int32_t cu[2] = {0, 55}, prefix[1] = {16}, suffix[5] = {25, 84, 1, 80, 4};
  const void* suffix_addr;
  (void)state;
  ASSERT_OK(attn_build(b, 16, &batch->common, 0, &m, NULL));
  /* libattn's extension: the cascade fields follow 0.33's and libattn's 36 */
  assert_int_equal(attn_metadata_field_count(m), 56);
  expect_bool(m, "use_cascade", 1);
  assert_int_equal(ts_int(m, "common_prefix_len"), 16);
  ts_expect_i32(m, "cu_prefix_query_lens", cu, 2);
  ts_expect_i32(m, "prefix_kv_lens", prefix, 1);
  ts_expect_i32(m, "suffix_kv_lens", suffix, 5);
  /* the suffix pass: causal, over suffix lengths */
  assert_int_equal(ts_int(m, "scheduler_batch_size"), 5);
  assert_int_equal(ts_int(m, "scheduler_max_seqlen_q"), 32);
  assert_int_equal(ts_int(m, "scheduler_max_seqlen_k"), 84);
  assert_ptr_equal(ts_tensor(m, "scheduler_cache_seqlens")->data,
                   ts_tensor(m, "suffix_kv_lens")->data);
  expect_bool(m, "scheduler_causal", 1);
  /* the shared-prefix pass: one "request" of every token, not causal */
  assert_int_equal(ts_int(m, "prefix_scheduler_batch_size"), 1);
  assert_int_equal(ts_int(m, "prefix_scheduler_max_seqlen_q"), 55);
  assert_int_equal(ts_int(m, "prefix_scheduler_max_seqlen_k"), 16);
  assert_ptr_equal(ts_tensor(m, "prefix_scheduler_cu_seqlens_q")->data,
                   ts_tensor(m, "cu_prefix_query_lens")->data);
  assert_ptr_equal(ts_tensor(m, "prefix_scheduler_cache_seqlens")->data,
                   ts_tensor(m, "prefix_kv_lens")->data);
  expect_bool(m, "prefix_scheduler_causal", 0);
  /* the buffers are persistent: same addresses on the next build */
  suffix_addr = ts_tensor(m, "suffix_kv_lens")->data;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(attn_metadata_field_count(m), 36);
  expect_no_cascade_fields(m);
  ASSERT_OK(attn_build(b, 16, &batch->common, 0, &m, NULL));
  assert_ptr_equal(ts_tensor(m, "suffix_kv_lens")->data, suffix_addr);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* The max_num_splits a builder of config `c` gives the batch. */
static int64_t splits_of(const attn_builder_config_t* c, ts_batch* batch) {
  attn_builder_t* b = builder_for(c);
  attn_metadata_t* m = NULL;
  int64_t splits;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  splits = ts_int(m, "max_num_splits");
  attn_builder_destroy(b);
  return splits;
}

static void test_num_splits(void** state) {
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b;
  ts_batch* batch = sample();
  attn_metadata_t* m = NULL;
  (void)state;
  c.max_cudagraph_capture_size = 512;
  b = builder_for(&c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "max_num_splits"), 32); /* 55 tokens <= capture size */
  assert_int_equal(ts_int(m, "scheduler_num_splits"), 32);
  assert_int_equal(ts_tensor(m, "scheduler_metadata_buffer")->shape[0], 1 + 512 * 4);
  attn_builder_destroy(b);
  c.max_cudagraph_capture_size = 32;
  c.flash_attn_max_num_splits_for_cuda_graph = 8;
  assert_int_equal(splits_of(&c, batch), 0); /* 55 tokens > capture size */
  c.max_cudagraph_capture_size = 64;
  assert_int_equal(splits_of(&c, batch), 8);
  /* spec decode under full graphs: vLLM's engine rounds the capture sizes to multiples of
   * 1 + k before its builders read the largest (adjust_cudagraph_sizes_for_spec_decode): the
   * default sizes up to 56 become 3, 6, 9, 18, 24, 33, 42, 48 for k = 2, so 55 tokens are past
   * the largest; 56 itself for k = 0 and on model runner V2 (no rounding) */
  c.max_cudagraph_capture_size = 56;
  assert_int_equal(splits_of(&c, batch), 8);
  c.num_speculative_tokens = 2;
  assert_int_equal(splits_of(&c, batch), 0);
  c.use_v2_model_runner = 1;
  assert_int_equal(splits_of(&c, batch), 8);
  c.use_v2_model_runner = 0;
  c.num_speculative_tokens = 0;
  c.max_cudagraph_capture_size = 64;
  c.batch_invariant = 1;
  assert_int_equal(splits_of(&c, batch), 1);
  c.batch_invariant = 0;
  c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_PIECEWISE;
  b = builder_for(&c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "max_num_splits"), 0);
  expect_bool(m, "aot_schedule", 1);
  ts_expect_none(m, "scheduler_metadata_buffer"); /* no full graphs: no persistent buffer */
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_fa2_and_fast_build(void** state) {
  attn_builder_config_t c = config_for(80);
  attn_builder_t* b;
  ts_batch* batch = sample();
  attn_metadata_t* m = NULL;
  int32_t level = -1;
  (void)state;
  c.max_cudagraph_capture_size = 512;
  b = builder_for(&c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_build(b, 16, &batch->common, 0, &m, NULL));
  expect_bool(m, "aot_schedule", 0);
  ts_expect_none(m, "scheduler_metadata_buffer");
  expect_schedule_none(m, "scheduler_");
  expect_schedule_none(m, "prefix_scheduler_");
  assert_int_equal(ts_int(m, "max_num_splits"), 0); /* FA2 never sets a split bound */
  expect_bool(m, "use_cascade", 1);
  attn_builder_destroy(b);
  /* fast_build (drafting) turns AOT scheduling off on FA3 too */
  c = config_for(90);
  b = builder_for(&c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 1, &m, NULL));
  expect_bool(m, "aot_schedule", 0);
  expect_schedule_none(m, "scheduler_");
  ASSERT_OK(attn_build_for_drafting(b, &batch->common, 2, &m, NULL));
  expect_bool(m, "aot_schedule", 0);
  expect_no_cascade_fields(m);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_bool(m, "aot_schedule", 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void check_dcp(int32_t size, int32_t rank, int32_t interleave, const int32_t* expected,
                      int64_t expected_max) {
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b;
  ts_batch* batch = sample();
  attn_metadata_t* m = NULL;
  c.decode_context_parallel_size = size;
  c.dcp_rank = rank;
  c.cp_kv_cache_interleave_size = interleave;
  b = builder_for(&c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i32(m, "dcp_context_kv_lens", expected, 5);
  {  /* vLLM 0.33: a max_num_seqs buffer, zero past num_reqs */
    const int32_t* lens = (const int32_t*)ts_tensor(m, "dcp_context_kv_lens")->data;
    int64_t k;
    for (k = 5; k < c.max_num_seqs; ++k) assert_int_equal(lens[k], 0);
  }
  assert_int_equal(ts_int(m, "max_dcp_context_kv_len"), expected_max);
  /* split_dcp_context_queries: 3 decodes (3 tokens), 1 extend with context (32 tokens); the
   * pure prefill (20 tokens) is in neither */
  assert_int_equal(ts_int(m, "num_decode_reqs"), 3);
  assert_int_equal(ts_int(m, "num_prefill_reqs"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 3);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 32);
  assert_int_equal(ts_int(m, "scheduler_num_heads_q"), 32 * size);
  assert_int_equal(ts_int(m, "scheduler_max_seqlen_k"), expected_max);
  assert_ptr_equal(ts_tensor(m, "scheduler_cache_seqlens")->data,
                   ts_tensor(m, "dcp_context_kv_lens")->data);
  expect_bool(m, "scheduler_causal", 0);
  /* with DCP a common prefix sets use_cascade but no cascade tensors (vLLM's elif) */
  ASSERT_OK(attn_build(b, 16, &batch->common, 0, &m, NULL));
  expect_bool(m, "use_cascade", 1);
  ts_expect_none(m, "cu_prefix_query_lens");
  ts_expect_none(m, "suffix_kv_lens");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* vLLM 0.33.0's build on q = [3], context [0] under DCP 2: nothing to attend to in context, so
 * max_dcp_context_kv_len = 0 and no scheduler (should_skip_dcp_context_attention); the lone
 * prefill is neither a decode nor a context-bearing extend. */
static void test_dcp_skip(void** state) {
  static const int32_t q[1] = {3}, s[1] = {3};
  static const int32_t q2[2] = {1, 3}, s2[2] = {1, 3};
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 1, 16, 4, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.decode_context_parallel_size = 2;
  b = builder_for(&c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "max_dcp_context_kv_len"), 0);
  ts_expect_i32(m, "dcp_context_kv_lens", (int32_t[]){0}, 1);
  ts_expect_none(m, "scheduler_batch_size");
  ts_expect_none(m, "scheduler_cache_seqlens");
  assert_int_equal(ts_int(m, "num_decode_reqs"), 0);
  assert_int_equal(ts_int(m, "num_prefill_reqs"), 0);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 0);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 0);
  ts_batch_free(batch);
  /* max_query_len > 1 with a zero-context one-token row first: that row is a decode */
  batch = ts_batch_make(q2, s2, 2, 16, 4, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "max_dcp_context_kv_len"), 0);
  assert_int_equal(ts_int(m, "num_decode_reqs"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 1);
  assert_int_equal(ts_int(m, "num_prefill_reqs"), 0);
  ts_batch_free(batch);
  /* a decode-only batch: vLLM computes no split (all four stay 0) */
  batch = ts_batch_make(q2, (int32_t[]){5, 9}, 1, 16, 4, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "max_dcp_context_kv_len"), 3); /* cdiv(5, 2) */
  assert_int_equal(ts_int(m, "num_decode_reqs"), 0);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

static void test_dcp(void** state) {
  /* context lengths (seq - query): 40, 99, 16, 64, 0 */
  static const int32_t r0[5] = {20, 50, 8, 32, 0}, r1[5] = {20, 49, 8, 32, 0};
  static const int32_t i16r0[5] = {24, 51, 16, 32, 0}, i16r1[5] = {16, 48, 0, 32, 0};
  (void)state;
  check_dcp(2, 0, 1, r0, 50); /* cdiv(100, 2) * 1 */
  check_dcp(2, 1, 1, r1, 50);
  check_dcp(2, 0, 16, i16r0, 64); /* cdiv(100, 32) * 16 */
  check_dcp(2, 1, 16, i16r1, 64);
}

static void check_window(int32_t kind, int32_t window, int32_t attn_type,
                         const int32_t* lefts, size_t n, int expect_aot, int64_t left,
                         int64_t right) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(90);
  attn_per_layer_params_t layers[4];
  attn_builder_t* b = NULL;
  ts_batch* batch = sample();
  attn_metadata_t* m = NULL;
  size_t i;
  spec.kind = kind;
  spec.sliding_window = window;
  c.attn_type = attn_type;
  for (i = 0; i < n; ++i) {
    attn_per_layer_params_t p = ATTN_PER_LAYER_PARAMS_INIT;
    p.window_left = lefts[i];
    layers[i] = p;
  }
  c.layers = n ? layers : NULL;
  c.num_layers = n;
  ASSERT_OK(attn_builder_create("FLASH_ATTN", &spec, &c, &b));
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_bool(m, "aot_schedule", expect_aot);
  if (expect_aot) {
    assert_int_equal(ts_int(m, "scheduler_window_left"), left);
    assert_int_equal(ts_int(m, "scheduler_window_right"), right);
  } else {
    expect_schedule_none(m, "scheduler_");
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_sliding_windows(void** state) {
  static const int32_t same[2] = {127, 127}, mixed[3] = {127, -1, 127}, enc[1] = {63},
                       none[2] = {-1, -1};
  (void)state;
  check_window(ATTN_KV_SLIDING_WINDOW, 128, ATTN_TYPE_DECODER, NULL, 0, 1, 127, 0);
  check_window(ATTN_KV_FULL_ATTENTION, 0, ATTN_TYPE_DECODER, same, 2, 1, 127, 0);
  check_window(ATTN_KV_FULL_ATTENTION, 0, ATTN_TYPE_DECODER, mixed, 3, 0, 0, 0);
  check_window(ATTN_KV_ENCODER_ONLY, 0, ATTN_TYPE_ENCODER_ONLY, enc, 1, 1, 63, 63);
  check_window(ATTN_KV_FULL_ATTENTION, 0, ATTN_TYPE_DECODER, none, 2, 1, -1, -1);
}

/* Issue 34: vLLM 0.33's _get_scheduler_metadata hands FA3's scheduler
 * _maybe_symmetrize_window(aot_sliding_window, causal): a causal window (w, 0) becomes (w, w) when
 * the call is non-causal (causal=False, any per-request causal tensor, and DCP's context pass,
 * which it schedules with causal=False), in build() and the capture build alike. libattn kept
 * (w, 0): scheduler_window_right was 0 where vLLM passes w. */
static void expect_window(attn_builder_t* b, ts_batch* batch, int capture, int64_t left,
                          int64_t right) {
  attn_metadata_t* m = NULL;
  if (capture)
    ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  else
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_bool(m, "aot_schedule", 1);
  assert_int_equal(ts_int(m, "scheduler_window_left"), left);
  assert_int_equal(ts_int(m, "scheduler_window_right"), right);
}

static void test_non_causal_windows(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(90); /* FA3: ahead-of-time scheduling */
  attn_builder_t* b;
  ts_batch* batch = sample();
  int32_t causal[5] = {1, 1, 1, 1, 1};
  int64_t n5[1] = {5};
  attn_tensor_t causal_t = ts_host_tensor(causal, 1, n5, ATTN_DTYPE_INT, 32);
  int capture;
  (void)state;
  c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
  spec.kind = ATTN_KV_SLIDING_WINDOW;
  spec.sliding_window = 128; /* impl.sliding_window (127, 0) */
  b = ts_builder("FLASH_ATTN", &spec, &c);
  for (capture = 0; capture < 2; ++capture) {
    batch->common.causal = 1;
    expect_window(b, batch, capture, 127, 0);
    batch->common.causal = 0;
    expect_window(b, batch, capture, 127, 127);
    /* a tensor is non-causal to vLLM whatever it holds (isinstance(causal, torch.Tensor)) */
    batch->common.causal = 1;
    batch->common.causal_per_request = &causal_t;
    expect_window(b, batch, capture, 127, 127);
    causal[2] = 0;
    expect_window(b, batch, capture, 127, 127);
    causal[2] = 1;
    batch->common.causal_per_request = NULL;
    expect_window(b, batch, capture, 127, 0); /* the next causal build: (w, 0) again */
  }
  attn_builder_destroy(b);
  /* per-layer windows, all the same: one AOT window, symmetrized likewise */
  {
    attn_per_layer_params_t layers[2] = {ATTN_PER_LAYER_PARAMS_INIT, ATTN_PER_LAYER_PARAMS_INIT};
    attn_builder_config_t lc = c;
    attn_kv_cache_spec_t full = ts_spec();
    layers[0].window_left = layers[1].window_left = 511;
    lc.layers = layers;
    lc.num_layers = 2;
    b = ts_builder("FLASH_ATTN", &full, &lc);
    batch->common.causal = 0;
    expect_window(b, batch, 0, 511, 511);
    expect_window(b, batch, 1, 511, 511);
    attn_builder_destroy(b);
  }
  /* full attention (-1, -1) and an encoder-only window (w, w) stay as they are */
  {
    attn_kv_cache_spec_t full = ts_spec();
    b = ts_builder("FLASH_ATTN", &full, &c);
    batch->common.causal = 0;
    expect_window(b, batch, 0, -1, -1);
    attn_builder_destroy(b);
  }
  /* DCP: vLLM schedules the context pass with causal=False, whatever the batch's causal */
  c.decode_context_parallel_size = 2;
  c.dcp_rank = 1;
  c.cp_kv_cache_interleave_size = 1;
  b = ts_builder("FLASH_ATTN", &spec, &c);
  batch->common.causal = 1;
  expect_window(b, batch, 0, 127, 127);
  attn_builder_destroy(b);
  batch->common.causal = 1;
  ts_batch_free(batch);
}

static void test_qkv_dtype(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b;
  ts_batch* batch = sample();
  attn_metadata_t* m = NULL;
  (void)state;
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  spec.dtype = ATTN_KV_DTYPE_UINT8;
  b = ts_builder("FLASH_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "scheduler_qkv_dtype"), ATTN_KV_DTYPE_FP8_E4M3);
  attn_builder_destroy(b);
  c.cache_dtype = ATTN_KV_DTYPE_FLOAT16;
  spec.dtype = ATTN_KV_DTYPE_FLOAT16;
  b = ts_builder("FLASH_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "scheduler_qkv_dtype"), ATTN_KV_DTYPE_FLOAT16);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Head sizes as vLLM 0.33's FlashAttentionBackend.supports_head_size: multiples of 8 up to 256,
 * up to 512 where FlashAttention 4 runs (config->flash_attn_version 4, or 10.x by default). */
static void test_head_sizes(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  ts_batch* batch = sample();
  attn_metadata_t* m = NULL;
  (void)state;
  spec.head_size = 512;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "got kv_cache_spec->head_size=512 on FlashAttention 3");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  c.flash_attn_version = 4;
  b = ts_builder("FLASH_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  attn_builder_destroy(b);
  c = config_for(100); /* FlashAttention 4 by default */
  b = ts_builder("FLASH_ATTN", &spec, &c);
  attn_builder_destroy(b);
  b = (attn_builder_t*)UNTOUCHED_PTR;
  spec.head_size = 520;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "up to 256 (512 on FlashAttention 4), got kv_cache_spec->head_size=520");
  spec.head_size = 260; /* not a multiple of 8 */
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "head_size=260");
  c = config_for(80);
  spec.head_size = 264;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "head_size=264 on FlashAttention 2");
  ts_batch_free(batch);
}

static void test_update_block_table(void** state) {
  attn_builder_config_t c = config_for(90);
  attn_builder_t* a = builder_for(&c);
  attn_builder_t* other = builder_for(&c);
  ts_batch* batch = sample();
  ts_batch* group2 = sample(); /* same batch, another KV cache group's table and slots */
  attn_metadata_t* m = NULL;
  attn_metadata_t* m2 = (attn_metadata_t*)UNTOUCHED_PTR;
  size_t i;
  (void)state;
  for (i = 0; i < (size_t)(5 * 64); ++i) group2->bt[i] += group2->bt[i] ? 1000 : 0;
  for (i = 0; i < 55; ++i) group2->slots[i] += 16000;
  ASSERT_OK(attn_build(a, 16, &batch->common, 0, &m, NULL));
  /* on another builder of the same backend: its own metadata, A's stays as it was */
  ASSERT_OK(attn_update_block_table(other, m, &group2->bt_t, &group2->sm_t, &m2, NULL));
  assert_ptr_not_equal(m2, m);
  assert_ptr_equal(ts_tensor(m2, "block_table")->data, group2->bt);
  assert_ptr_equal(ts_tensor(m2, "slot_mapping")->data, group2->slots);
  assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
  for (i = 0; i < attn_metadata_field_count(m); ++i) {
    attn_field_t f1 = ATTN_FIELD_INIT, f2 = ATTN_FIELD_INIT;
    ASSERT_OK(attn_metadata_field(m, i, &f1));
    ASSERT_OK(attn_metadata_field(m2, i, &f2));
    assert_string_equal(f1.name, f2.name);
    assert_int_equal(f1.kind, f2.kind);
    if (strcmp(f1.name, "block_table") == 0 || strcmp(f1.name, "slot_mapping") == 0) continue;
    assert_int_equal(f1.int_value, f2.int_value);
    if (f1.kind == ATTN_FIELD_TENSOR) assert_ptr_equal(f1.tensor->data, f2.tensor->data);
  }
  /* in place, on the builder that built it: a new handle, and the old one (whose fields the
   * update rewrote) is stale, as is other's result, which shared them */
  {
    attn_metadata_t* old = m;
    const attn_tensor_t* t = NULL;
    attn_metadata_t* other_result = m2;
    ASSERT_OK(attn_update_block_table(a, m, &group2->bt_t, &group2->sm_t, &m2, NULL));
    assert_ptr_not_equal(m2, m);
    m = m2;
    ASSERT_ERROR(attn_metadata_get_tensor(old, "block_table", &t), ATTN_ERR_INVALID_ARGUMENT,
                 "metadata is stale: it is result #1 of a FLASH_ATTN builder that has since "
                 "published result #2");
    ASSERT_ERROR(attn_metadata_get_tensor(other_result, "block_table", &t),
                 ATTN_ERR_INVALID_ARGUMENT,
                 "metadata is stale: it is an update_block_table result sharing the fields of "
                 "result #1 of another FLASH_ATTN builder, which has since built again");
    assert_null(t);
  }
  assert_ptr_equal(ts_tensor(m, "block_table")->data, group2->bt);
  assert_int_equal(ts_int(m, "common_prefix_len"), 16);
  /* bad input */
  m2 = (attn_metadata_t*)UNTOUCHED_PTR;
  group2->sm_t.dtype.bits = 32;
  group2->sm_shape[0] = 55;
  ASSERT_ERROR(attn_update_block_table(a, m, &group2->bt_t, &group2->sm_t, &m2, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "slot_mapping has dtype int32, expected int64");
  group2->sm_t.dtype.bits = 64;
  group2->bt_shape[1] = 6;
  ASSERT_ERROR(attn_update_block_table(a, m, &group2->bt_t, &group2->sm_t, &m2, NULL),
               ATTN_ERR_INVALID_ARGUMENT,
               "block_table has 6 columns but the longest sequence (100 tokens) needs 7 blocks of 16");
  group2->bt_shape[1] = 64;
  group2->bt_shape[0] = 4;
  ASSERT_ERROR(attn_update_block_table(a, m, &group2->bt_t, &group2->sm_t, &m2, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "block_table has 4 rows");
  group2->bt_shape[0] = 5;
  group2->sm_t.device.device_type = ATTN_DEVICE_CUDA;
  ASSERT_ERROR(attn_update_block_table(a, m, &group2->bt_t, &group2->sm_t, &m2, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "slot_mapping is on cuda:0 but the builder runs on cpu");
  group2->sm_t.device.device_type = ATTN_DEVICE_CPU;
  group2->bt_t.device.device_type = ATTN_DEVICE_CUDA;
  ASSERT_ERROR(attn_update_block_table(a, m, &group2->bt_t, &group2->sm_t, &m2, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "block_table is on cuda:0 but the builder runs on cpu");
  group2->bt_t.device.device_type = ATTN_DEVICE_CPU;
  ASSERT_ERROR(attn_update_block_table(a, m, NULL, &group2->sm_t, &m2, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "block_table is NULL");
  ASSERT_ERROR(attn_update_block_table(a, m, &group2->bt_t, NULL, &m2, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "slot_mapping is NULL");
  ASSERT_ERROR(attn_update_block_table(a, NULL, &group2->bt_t, &group2->sm_t, &m2, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "metadata is NULL");
  {
    attn_metadata_t* common = NULL;
    ASSERT_OK(attn_common_metadata_unpadded(&batch->common, 55, 5, &common));
    ASSERT_ERROR(attn_update_block_table(a, common, &group2->bt_t, &group2->sm_t, &m2, NULL),
                 ATTN_ERR_INVALID_ARGUMENT, "metadata was built by 'common', this builder is 'FLASH_ATTN'");
    attn_metadata_destroy(common);
  }
  assert_ptr_equal(m2, UNTOUCHED_PTR);
  attn_builder_destroy(a);
  attn_builder_destroy(other);
  ts_batch_free(batch);
  ts_batch_free(group2);
}

static void test_capture_levels(void** state) {
  attn_builder_config_t c90 = config_for(90), c80 = config_for(80);
  attn_builder_t* always = builder_for(&c90);
  attn_builder_t* uniform = builder_for(&c80);
  ts_batch* mixed = sample();
  static const int32_t uq[4] = {4, 4, 4, 3}, us[4] = {50, 60, 70, 80};
  static const int32_t bq[3] = {4, 3, 4}, bs[3] = {50, 60, 70};
  ts_batch* spec_decode = ts_batch_make(uq, us, 4, 16, 64, -1);
  ts_batch* ragged = ts_batch_make(bq, bs, 3, 16, 64, -1);
  attn_metadata_t* m = (attn_metadata_t*)UNTOUCHED_PTR;
  (void)state;
  ASSERT_OK(attn_build_for_cudagraph_capture(always, &mixed->common, &m, NULL));
  expect_no_cascade_fields(m);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 55);
  m = (attn_metadata_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_build_for_cudagraph_capture(uniform, &mixed->common, &m, NULL),
               ATTN_ERR_UNSUPPORTED,
               "FLASH_ATTN has CUDA graph support UNIFORM_BATCH: request 0 has query length 1 but "
               "the batch is uniform in 32");
  assert_ptr_equal(m, UNTOUCHED_PTR);
  ASSERT_OK(attn_build_for_cudagraph_capture(uniform, &spec_decode->common, &m, NULL));
  assert_int_equal(ts_int(m, "max_query_len"), 4);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(uniform, &ragged->common, &m, NULL),
               ATTN_ERR_UNSUPPORTED, "request 1 has query length 3");
  {
    /* zero-length requests pad a captured batch, as vLLM's capture batches are padded */
    static const int32_t pq[4] = {2, 2, 0, 0}, ps[4] = {30, 40, 0, 0};
    ts_batch* padded = ts_batch_make(pq, ps, 4, 16, 64, -1);
    ASSERT_OK(attn_build_for_cudagraph_capture(uniform, &padded->common, &m, NULL));
    ts_batch_free(padded);
  }
  attn_builder_destroy(always);
  attn_builder_destroy(uniform);
  ts_batch_free(mixed);
  ts_batch_free(spec_decode);
  ts_batch_free(ragged);
}

static void test_clone_outlives_rebuild(void** state) {
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b = builder_for(&c);
  ts_batch* batch = sample();
  attn_metadata_t* m = NULL;
  attn_metadata_t* kept = (attn_metadata_t*)UNTOUCHED_PTR;
  static const int32_t suffix16[5] = {25, 84, 1, 80, 4};
  (void)state;
  ASSERT_OK(attn_build(b, 16, &batch->common, 0, &m, NULL));
  ASSERT_OK(attn_metadata_clone(m, &kept));
  assert_ptr_not_equal(kept, m);
  assert_string_equal(attn_metadata_kind(kept), "FLASH_ATTN");
  assert_ptr_not_equal(ts_tensor(kept, "suffix_kv_lens")->data, ts_tensor(m, "suffix_kv_lens")->data);
  assert_ptr_equal(ts_tensor(kept, "seq_lens")->data, batch->seq); /* inputs stay views */
  /* aliases of one builder buffer stay aliases in the clone */
  assert_ptr_equal(ts_tensor(kept, "scheduler_cache_seqlens")->data, ts_tensor(kept, "suffix_kv_lens")->data);
  assert_ptr_equal(ts_tensor(kept, "prefix_scheduler_cu_seqlens_q")->data,
                   ts_tensor(kept, "cu_prefix_query_lens")->data);
  /* a rebuild rewrites the builder's buffers, not the clone's */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i32(kept, "suffix_kv_lens", suffix16, 5);
  expect_bool(kept, "use_cascade", 1);
  expect_absent(m, "suffix_kv_lens");
  attn_metadata_destroy(kept);
  attn_metadata_destroy(m); /* builder-owned: ignored */
  ASSERT_OK(attn_build(b, 16, &batch->common, 0, &m, NULL));
  ts_expect_i32(m, "suffix_kv_lens", suffix16, 5);
  ASSERT_ERROR(attn_metadata_clone(NULL, &kept), ATTN_ERR_INVALID_ARGUMENT, "metadata is NULL");
  ASSERT_ERROR(attn_metadata_clone(m, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* ---- use_cascade_attention ---------------------------------------------------------------- */
static int32_t cascade(const attn_builder_t* b, int64_t prefix, const int32_t* q, int64_t n,
                       int32_t heads, int32_t kv_heads, int32_t alibi, int32_t window,
                       int32_t local, int32_t sms, int32_t dcp) {
  attn_cascade_query_t query = ATTN_CASCADE_QUERY_INIT;
  int32_t out = -1;
  query.common_prefix_len = prefix;
  query.query_lens = q;
  query.num_reqs = n;
  query.num_query_heads = heads;
  query.num_kv_heads = kv_heads;
  query.use_alibi = alibi;
  query.use_sliding_window = window;
  query.use_local_attention = local;
  query.num_sms = sms;
  query.dcp_world_size = dcp;
  ASSERT_OK(attn_use_cascade_attention(b, &query, &out));
  return out;
}

static void test_use_cascade_attention(void** state) {
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b = builder_for(&c);
  static int32_t decodes[2048];
  int32_t mixed[8] = {1, 1, 1, 1, 1, 1, 1, 2};
  int32_t out = -7;
  attn_cascade_query_t q = ATTN_CASCADE_QUERY_INIT;
  int i;
  (void)state;
  for (i = 0; i < 2048; ++i) decodes[i] = 1;
  assert_int_equal(cascade(b, 255, decodes, 8, 32, 8, 0, 0, 0, 132, 1), 0); /* prefix < 256 */
  assert_int_equal(cascade(b, 1024, decodes, 8, 32, 8, 1, 0, 0, 132, 1), 0); /* ALiBi */
  assert_int_equal(cascade(b, 1024, decodes, 8, 32, 8, 0, 1, 0, 132, 1), 0); /* sliding window */
  assert_int_equal(cascade(b, 1024, decodes, 8, 32, 8, 0, 0, 1, 132, 1), 0); /* local attention */
  assert_int_equal(cascade(b, 1024, decodes, 7, 32, 8, 0, 0, 0, 132, 1), 0); /* < 8 requests */
  assert_int_equal(cascade(b, 1024, decodes, 8, 32, 8, 0, 0, 0, 132, 2), 0); /* DCP */
  /* no FlashDecoding (MHA, or a prefill in the batch): cascade */
  assert_int_equal(cascade(b, 1024, decodes, 8, 32, 32, 0, 0, 0, 132, 1), 1);
  assert_int_equal(cascade(b, 1024, mixed, 8, 32, 8, 0, 0, 0, 132, 1), 1);
  /* FlashDecoding, 8 decodes: cascade 1 wave x 8 tiles = 8 vs FlashDecoding cdiv(512, 132) = 4 */
  assert_int_equal(cascade(b, 1024, decodes, 8, 32, 8, 0, 0, 0, 132, 1), 0);
  /* 256 decodes: cascade cdiv(64, 132) x 8 = 8 vs cdiv(256*8*1*8, 132) = 125 */
  assert_int_equal(cascade(b, 1024, decodes, 256, 32, 8, 0, 0, 0, 132, 1), 1);
  /* the cost model stays exact at the int32 limits (vLLM uses unbounded integers) */
  /* (products reach 2^64 before the division by num_sms; values checked with Python) */
  assert_int_equal(cascade(b, 2147483647, decodes, 2048, 1 << 30, 1 << 29, 0, 0, 0, 132, 1), 1);
  assert_int_equal(cascade(b, 2147483647, decodes, 8, 16, 8, 0, 0, 0, 2147483647, 1), 0);
  /* bad input */
  q.num_query_heads = 32;
  q.num_kv_heads = 8;
  q.num_sms = 132;
  q.num_reqs = 4;
  ASSERT_ERROR(attn_use_cascade_attention(b, &q, &out), ATTN_ERR_INVALID_ARGUMENT,
               "query->query_lens is NULL but query->num_reqs=4");
  q.query_lens = decodes;
  q.num_kv_heads = 0;
  ASSERT_ERROR(attn_use_cascade_attention(b, &q, &out), ATTN_ERR_INVALID_ARGUMENT,
               "query->num_kv_heads=0 must be positive");
  q.num_kv_heads = 8;
  q.num_sms = 0;
  ASSERT_ERROR(attn_use_cascade_attention(b, &q, &out), ATTN_ERR_INVALID_ARGUMENT, "query->num_sms=0");
  q.num_sms = 132;
  q.common_prefix_len = -1;
  ASSERT_ERROR(attn_use_cascade_attention(b, &q, &out), ATTN_ERR_INVALID_ARGUMENT,
               "query->common_prefix_len=-1 is negative");
  q.common_prefix_len = (int64_t)1 << 31;
  ASSERT_ERROR(attn_use_cascade_attention(b, &q, &out), ATTN_ERR_INVALID_ARGUMENT,
               "query->common_prefix_len=2147483648 exceeds 2^31-1");
  q.common_prefix_len = 0;
  q.struct_size = 8;
  ASSERT_ERROR(attn_use_cascade_attention(b, &q, &out), ATTN_ERR_INVALID_ARGUMENT, "query->struct_size=8");
  ASSERT_ERROR(attn_use_cascade_attention(NULL, &q, &out), ATTN_ERR_INVALID_ARGUMENT, "builder is NULL");
  ASSERT_ERROR(attn_use_cascade_attention(b, NULL, &out), ATTN_ERR_INVALID_ARGUMENT, "query is NULL");
  assert_int_equal(out, -7);
  attn_builder_destroy(b);
}

/* ---- seeded random batches against a naive computation ----------------------------------- */

/* Tokens [0, ctx) of a request, token i on rank (i / interleave) % size: count rank's tokens. */
static int32_t naive_dcp_len(int32_t ctx, int32_t size, int32_t rank, int32_t interleave) {
  int32_t i, n = 0;
  for (i = 0; i < ctx; ++i)
    if ((i / interleave) % size == rank) ++n;
  return n;
}

static void test_random_batches(void** state) {
  uint64_t seed = 20261202;
  int iter;
  (void)state;
  for (iter = 0; iter < 600; ++iter) {
    const int32_t dcp_sizes[3] = {1, 2, 4}, interleaves[3] = {1, 4, 16};
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = config_for(ts_rand_range(&seed, 0, 1) ? 90 : 80);
    attn_builder_t* b;
    attn_metadata_t* m = NULL;
    int32_t q[64], s[64];
    int64_t n = ts_rand_range(&seed, 0, 64), r, prefix = 0, min_seq = 1 << 30;
    ts_batch* batch;
    c.decode_context_parallel_size = dcp_sizes[ts_rand_range(&seed, 0, 2)];
    c.dcp_rank = (int32_t)ts_rand_range(&seed, 0, c.decode_context_parallel_size - 1);
    c.cp_kv_cache_interleave_size = interleaves[ts_rand_range(&seed, 0, 2)];
    c.max_cudagraph_capture_size = (int32_t)ts_rand_range(&seed, 0, 1) * 512;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)(ts_rand_range(&seed, 0, 3) == 0 ? ts_rand_range(&seed, 0, 100) : 1);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 900);
      if (s[r] < min_seq) min_seq = s[r];
    }
    batch = ts_batch_make(q, s, n, 16, 64, -1);
    if (ts_rand_range(&seed, 0, 1) && n > 0) batch->common.max_seq_len += ts_rand_range(&seed, 0, 50);
    if (n > 0 && min_seq >= 16) prefix = 16 * ts_rand_range(&seed, 0, min_seq / 16);
    b = ts_builder("FLASH_ATTN", &spec, &c);
    ASSERT_OK(attn_build(b, prefix, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_actual_tokens"), batch->num_tokens);
    assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
    assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
    if (prefix > 0) expect_bool(m, "use_cascade", 1);
    else expect_no_cascade_fields(m);
    if (c.decode_context_parallel_size > 1) {
      const int64_t parts = (int64_t)c.decode_context_parallel_size * c.cp_kv_cache_interleave_size;
      const attn_tensor_t* t = ts_tensor(m, "dcp_context_kv_lens");
      int any_context = 0;
      for (r = 0; r < n; ++r) any_context |= s[r] != q[r];
      for (r = 0; r < n; ++r)
        assert_int_equal(((int32_t*)t->data)[r],
                         naive_dcp_len(s[r] - q[r], c.decode_context_parallel_size, c.dcp_rank,
                                       c.cp_kv_cache_interleave_size));
      assert_int_equal(ts_int(m, "max_dcp_context_kv_len"),
                       any_context ? (batch->common.max_seq_len + parts - 1) / parts *
                                         c.cp_kv_cache_interleave_size
                                   : 0);
      if (prefix > 0) ts_expect_none(m, "suffix_kv_lens");
    } else if (prefix > 0) {
      const attn_tensor_t* t = ts_tensor(m, "suffix_kv_lens");
      for (r = 0; r < n; ++r) assert_int_equal(((int32_t*)t->data)[r], s[r] - prefix);
      assert_int_equal(((int32_t*)ts_tensor(m, "cu_prefix_query_lens")->data)[1], batch->num_tokens);
      assert_int_equal(((int32_t*)ts_tensor(m, "prefix_kv_lens")->data)[0], prefix);
    } else {
      ts_expect_none(m, "dcp_context_kv_lens");
    }
    if (c.device_capability == 90 && c.max_cudagraph_capture_size > 0 && batch->num_tokens <= 512)
      assert_int_equal(ts_int(m, "max_num_splits"), 32);
    else
      assert_int_equal(ts_int(m, "max_num_splits"), 0);
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain_build),          cmocka_unit_test(test_cascade),
      cmocka_unit_test(test_mm_prefix_rswa_causal),
      cmocka_unit_test(test_num_splits),           cmocka_unit_test(test_fa2_and_fast_build),
      cmocka_unit_test(test_dcp),                  cmocka_unit_test(test_dcp_skip),                  cmocka_unit_test(test_sliding_windows),
      cmocka_unit_test(test_non_causal_windows),
      cmocka_unit_test(test_qkv_dtype),            cmocka_unit_test(test_head_sizes),
      cmocka_unit_test(test_update_block_table),
      cmocka_unit_test(test_capture_levels),       cmocka_unit_test(test_clone_outlives_rebuild),
      cmocka_unit_test(test_use_cascade_attention), cmocka_unit_test(test_random_batches),
  };
  return cmocka_run_group_tests_name("flash_attn", tests, NULL, NULL);
}
