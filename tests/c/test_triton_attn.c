/* TRITON_ATTN: the passthrough fields, seq_threshold_3D against CUDA graph capture sizes, the
 * 3D-softmax buffers, vLLM 0.33's field set (no cascade fields without a common prefix; the
 * cascade extension with one), the capture build that writes 1 into seq_lens, and bad input. */
#include "test_support.h"

static void expect_bool(const attn_metadata_t* m, const char* name, int value) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  if (f.kind != ATTN_FIELD_BOOL) fail_msg("%s has kind %d, expected BOOL", name, f.kind);
  assert_int_equal(f.int_value, value);
}

static void expect_absent(const attn_metadata_t* m, const char* name) {
  attn_field_t f = ATTN_FIELD_INIT;
  attn_error_t* e = attn_metadata_get(m, name, &f);
  if (e == NULL) fail_msg("%s is present", name);
  assert_int_equal(attn_error_code(e), ATTN_ERR_NOT_FOUND);
  attn_error_destroy(e);
}

static int64_t threshold_for_spec(int32_t kv_heads, int32_t mode, const int32_t* sizes, size_t n,
                                  int32_t spec_tokens);
static int64_t threshold_for(int32_t kv_heads, int32_t mode, const int32_t* sizes, size_t n) {
  return threshold_for_spec(kv_heads, mode, sizes, n, 0);
}

static int64_t threshold_for_spec(int32_t kv_heads, int32_t mode, const int32_t* sizes, size_t n,
                                  int32_t spec_tokens) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  static const int32_t q[1] = {1}, s[1] = {4};
  ts_batch* batch = ts_batch_make(q, s, 1, 16, 1, -1);
  int64_t v;
  spec.num_kv_heads = kv_heads;
  c.cudagraph_mode = mode;
  c.cudagraph_capture_sizes = sizes;
  c.num_cudagraph_capture_sizes = n;
  c.num_speculative_tokens = spec_tokens;
  b = ts_builder("TRITON_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  v = ts_int(m, "seq_threshold_3D");
  attn_builder_destroy(b);
  ts_batch_free(batch);
  return v;
}

static void test_seq_threshold_3d(void** state) {
  static const int32_t custom[4] = {1, 2, 4, 32};
  static const int32_t descending[3] = {16, 8, 4};
  (void)state;
  /* 128 // 8 = 16 is a default capture size */
  assert_int_equal(threshold_for(8, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, NULL, 0), 16);
  /* 128 // 10 = 12: 8 and 16 are equally close, the first in the list wins */
  assert_int_equal(threshold_for(10, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, NULL, 0), 8);
  /* vLLM keeps the sizes sorted: the order given does not matter */
  assert_int_equal(threshold_for(10, ATTN_CUDAGRAPH_MODE_FULL, descending, 3), 8);
  /* without full decode graphs the raw value stays */
  assert_int_equal(threshold_for(10, ATTN_CUDAGRAPH_MODE_PIECEWISE, NULL, 0), 12);
  assert_int_equal(threshold_for(10, ATTN_CUDAGRAPH_MODE_NONE, NULL, 0), 12);
  /* the runtime's own sizes */
  assert_int_equal(threshold_for(8, ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY, custom, 4), 4);
  assert_int_equal(threshold_for(1, ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY, custom, 4), 32);
  /* spec decode (2 tokens) with full decode graphs: every size rounded up to a multiple of 3
   * (1, 2, 4, 8, 16, ... -> 3, 6, 9, 18, ...); 18 is the closest to 16 */
  assert_int_equal(threshold_for_spec(8, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, NULL, 0, 2), 18);
  /* sizes above max_num_batched_tokens (8192) are dropped */
  {
    static const int32_t big[2] = {16384, 64};
    assert_int_equal(threshold_for(1, ATTN_CUDAGRAPH_MODE_FULL, big, 2), 64);
  }
}

static void test_build_fields(void** state) {
  static const int32_t q[4] = {1, 1, 7, 20}, s[4] = {30, 18, 40, 20};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 4, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int32_t level = -1, threshold = -1, update = 1;
  (void)state;
  spec.head_size = 96; /* the softmax buffer pads it to the next power of two */
  b = ts_builder("TRITON_ATTN", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 0);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "TRITON_ATTN");
  assert_int_equal(ts_int(m, "num_actual_tokens"), 29);
  assert_int_equal(ts_int(m, "max_query_len"), 20);
  assert_int_equal(ts_int(m, "max_seq_len"), 40);
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  assert_int_equal(ts_int(m, "num_par_softmax_segments"), 16);
  t = ts_tensor(m, "softmax_segm_output");
  assert_int_equal(t->ndim, 4);
  assert_int_equal(t->shape[0], 16);
  assert_int_equal(t->shape[1], 32);
  assert_int_equal(t->shape[2], 16);
  assert_int_equal(t->shape[3], 128);
  assert_int_equal(t->dtype.code, ATTN_DTYPE_FLOAT);
  assert_int_equal(t->dtype.bits, 32);
  t = ts_tensor(m, "softmax_segm_max");
  assert_int_equal(t->ndim, 3);
  assert_int_equal(t->shape[2], 16);
  assert_non_null(ts_tensor(m, "softmax_segm_expsum"));
  expect_bool(m, "causal", 1);
  assert_null(ts_tensor(m, "scheduler_metadata"));
  assert_null(ts_tensor(m, "mm_prefix_range_tensor"));
  {  /* vLLM 0.33's TritonAttentionMetadata, in order */
    static const char* const order[] = {
        "num_actual_tokens", "max_query_len", "query_start_loc", "max_seq_len", "seq_lens",
        "block_table", "slot_mapping", "seq_threshold_3D", "num_par_softmax_segments",
        "softmax_segm_output", "softmax_segm_max", "softmax_segm_expsum", "causal",
        "scheduler_metadata", "mm_prefix_range", "mm_prefix_range_tensor", "rswa_prefix_lens",
        "rswa_window"};
    static const char* const gone[] = {
        "use_cascade", "common_prefix_len", "cu_prefix_query_lens", "prefix_kv_lens",
        "suffix_kv_lens", "prefix_scheduler_metadata", "all_pure_first_prefill", "num_decodes",
        "num_decode_tokens", "prefill_is_first_chunk", "seq_lens_cpu", "query_start_loc_cpu",
        "q_to_req", "q_to_klen"};
    attn_field_t f = ATTN_FIELD_INIT;
    size_t k;
    assert_int_equal(attn_metadata_field_count(m), 18);
    for (k = 0; k < sizeof order / sizeof order[0]; ++k) {
      ASSERT_OK(attn_metadata_field(m, k, &f));
      assert_string_equal(f.name, order[k]);
    }
    for (k = 0; k < sizeof gone / sizeof gone[0]; ++k) expect_absent(m, gone[k]);
  }
  /* libattn's extension: with a common prefix the cascade fields follow, built as 0.13 did */
  ASSERT_OK(attn_build(b, 16, &batch->common, 0, &m, NULL));
  assert_int_equal(attn_metadata_field_count(m), 24);
  expect_bool(m, "use_cascade", 1);
  assert_int_equal(ts_int(m, "common_prefix_len"), 16);
  ts_expect_i32(m, "cu_prefix_query_lens", (int32_t[]){0, 29}, 2);
  ts_expect_i32(m, "prefix_kv_lens", (int32_t[]){16}, 1);
  ts_expect_i32(m, "suffix_kv_lens", (int32_t[]){14, 2, 24, 4}, 4);
  assert_null(ts_tensor(m, "prefix_scheduler_metadata"));
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL)); /* and back */
  assert_int_equal(attn_metadata_field_count(m), 18);
  expect_absent(m, "use_cascade");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Rows of the softmax scratch for a config: vLLM indexes it by query token, so spec decode
 * multiplies the requests (min(seq_threshold_3D, max_num_seqs)) by the query length (1 + spec
 * tokens, doubled with parallel drafting, at most MAX_3D_QUERY_LEN = 8). */
static int64_t scratch_rows(int32_t max_num_seqs, int32_t spec_tokens, int32_t parallel) {
  static const int32_t q[1] = {1}, s[1] = {5};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 1, 16, 1, -1);
  attn_metadata_t* m = NULL;
  int64_t rows;
  c.max_num_seqs = max_num_seqs;
  c.num_speculative_tokens = spec_tokens;
  c.parallel_drafting = parallel;
  b = ts_builder("TRITON_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  rows = ts_tensor(m, "softmax_segm_output")->shape[0];
  assert_int_equal(ts_tensor(m, "softmax_segm_max")->shape[0], rows);
  assert_int_equal(ts_tensor(m, "softmax_segm_expsum")->shape[0], rows);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  return rows;
}

static void test_scratch_rows_per_query_token(void** state) {
  (void)state;
  /* 8 KV heads: seq_threshold_3D 128 // 8 = 16 (a capture size already) */
  assert_int_equal(scratch_rows(256, 0, 0), 16);
  assert_int_equal(scratch_rows(256, 3, 0), 16 * 4);
  assert_int_equal(scratch_rows(256, 3, 1), 16 * 7);
  /* 10 spec tokens: capture sizes are multiples of 11, so seq_threshold_3D is 11; the query
   * length is capped at MAX_3D_QUERY_LEN */
  assert_int_equal(scratch_rows(256, 10, 0), 11 * 8);
  assert_int_equal(scratch_rows(4, 3, 0), 4 * 4);     /* fewer sequences than the threshold */
}

/* vLLM 0.33 on compute capability 12.0: 64 softmax segments while the 16-segment grid would
 * under-fill the SMs. 1 KV head, 170 SMs: max_seqs_64_segments = (170 - 1) // (16 * 1) = 10;
 * seq_threshold_3D = 128 (a capture size); rows = max(min(10, 128) * 1, cdiv(128, 4)) = 32.
 * Batches of more than 10 requests, or more tokens than 32 rows, get the 16-segment view of the
 * same memory (128 rows). Without the SM count, or on another capability, 16 segments. */
static void test_sm120_64_segments(void** state) {
  static const int32_t q3[3] = {1, 1, 1}, s3[3] = {100, 50, 7};
  static const int32_t q11[11] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  static const int32_t s11[11] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
  static const int32_t q5[5] = {8, 8, 8, 8, 8}, s5[5] = {20, 20, 20, 20, 20};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* few = ts_batch_make(q3, s3, 3, 16, 0, -1);
  ts_batch* many = ts_batch_make(q11, s11, 11, 16, 0, -1);
  ts_batch* tokens = ts_batch_make(q5, s5, 5, 16, 0, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  const void* data;
  (void)state;
  spec.num_kv_heads = 1;
  c.device_capability = 120;
  c.num_sms = 170;
  b = ts_builder("TRITON_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &few->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "seq_threshold_3D"), 128);
  assert_int_equal(ts_int(m, "num_par_softmax_segments"), 64);
  t = ts_tensor(m, "softmax_segm_output");
  assert_int_equal(t->shape[0], 32);
  assert_int_equal(t->shape[1], 32);
  assert_int_equal(t->shape[2], 64);
  assert_int_equal(t->shape[3], 128);
  data = t->data;
  t = ts_tensor(m, "softmax_segm_max");
  assert_int_equal(t->shape[0], 32);
  assert_int_equal(t->shape[2], 64);
  ASSERT_OK(attn_build(b, 0, &many->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_par_softmax_segments"), 16);
  t = ts_tensor(m, "softmax_segm_output");
  assert_ptr_equal(t->data, data); /* the same scratch */
  assert_int_equal(t->shape[0], 128);
  assert_int_equal(t->shape[2], 16);
  assert_int_equal(ts_tensor(m, "softmax_segm_expsum")->shape[0], 128);
  ASSERT_OK(attn_build(b, 0, &tokens->common, 0, &m, NULL)); /* 40 tokens > 32 rows */
  assert_int_equal(ts_int(m, "num_par_softmax_segments"), 16);
  ASSERT_OK(attn_build(b, 0, &few->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_par_softmax_segments"), 64);
  attn_builder_destroy(b);
  /* SM count unknown, or not 12.0: vLLM 0.33's 16 segments */
  c.num_sms = 0;
  b = ts_builder("TRITON_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &few->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_par_softmax_segments"), 16);
  assert_int_equal(ts_tensor(m, "softmax_segm_output")->shape[0], 128);
  attn_builder_destroy(b);
  c.num_sms = 170;
  c.device_capability = 100;
  b = ts_builder("TRITON_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &few->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_par_softmax_segments"), 16);
  attn_builder_destroy(b);
  /* 8 KV heads: (170 - 1) // 128 = 1 request; rows max(1, cdiv(16, 4)) = 4 */
  spec.num_kv_heads = 8;
  c.device_capability = 120;
  b = ts_builder("TRITON_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &few->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_par_softmax_segments"), 16); /* 3 requests > 1 */
  assert_int_equal(ts_tensor(m, "softmax_segm_output")->shape[0], 16);
  attn_builder_destroy(b);
  /* a negative SM count is refused */
  c.num_sms = -1;
  b = (attn_builder_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_builder_create("TRITON_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->num_sms=-1");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  ts_batch_free(few);
  ts_batch_free(many);
  ts_batch_free(tokens);
}

/* vLLM 0.33's mm_prefix_range (the dict as rows), mm_prefix_range_tensor, R-SWA fields and
 * per-request causal. compute_mm_prefix_range_tensor({1: [(3, 9), (12, 15)], 3: [(0, 4)]}, 4)
 * in vLLM 0.33.0 gives [[[0,0],[0,0]], [[3,9],[12,15]], [[0,0],[0,0]], [[0,4],[0,0]]]; every
 * list (0, 0) gives None. */
static void test_mm_prefix_rswa_causal(void** state) {
  static const int32_t q[4] = {1, 1, 7, 20}, s[4] = {30, 18, 40, 20};
  static const int32_t expected[4][2][2] = {
      {{0, 0}, {0, 0}}, {{3, 9}, {12, 15}}, {{0, 0}, {0, 0}}, {{0, 4}, {0, 0}}};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 4, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int32_t ranges[3][3] = {{1, 3, 9}, {1, 12, 15}, {3, 0, 4}};
  int32_t empty[2][3] = {{0, 0, 0}, {2, 0, 0}};
  int32_t causal[4] = {0, 1, 1, 0};
  int32_t rswa[4] = {5, 6, 7, 8};
  int64_t rshape[2] = {3, 3}, eshape[2] = {2, 3}, n4[1] = {4};
  attn_tensor_t ranges_t = ts_host_tensor(ranges, 2, rshape, ATTN_DTYPE_INT, 32);
  attn_tensor_t empty_t = ts_host_tensor(empty, 2, eshape, ATTN_DTYPE_INT, 32);
  attn_tensor_t causal_t = ts_host_tensor(causal, 1, n4, ATTN_DTYPE_INT, 32);
  attn_tensor_t rswa_t = ts_host_tensor(rswa, 1, n4, ATTN_DTYPE_INT, 32);
  (void)state;
  c.is_mm_prefix_lm = 1;
  c.rswa_window = 64;
  b = ts_builder("TRITON_ATTN", &spec, &c);
  batch->common.mm_req_doc_ranges = &ranges_t;
  batch->common.rswa_prefix_lens = &rswa_t;
  batch->common.causal_per_request = &causal_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  t = ts_tensor(m, "mm_prefix_range");
  assert_ptr_equal(t->data, ranges); /* the dict, as the batch's (request, start, end) rows */
  t = ts_tensor(m, "mm_prefix_range_tensor");
  assert_non_null(t);
  assert_int_equal(t->ndim, 3);
  assert_int_equal(t->shape[0], 4);
  assert_int_equal(t->shape[1], 2);
  assert_int_equal(t->shape[2], 2);
  assert_memory_equal(t->data, expected, sizeof expected);
  ts_expect_i32(m, "rswa_prefix_lens", rswa, 4);
  assert_ptr_not_equal(ts_tensor(m, "rswa_prefix_lens")->data, rswa);
  assert_int_equal(ts_int(m, "rswa_window"), 64);
  ts_expect_i32(m, "causal", causal, 4);
  /* every request's list is [(0, 0)]: the dict is passed on, the tensor is None */
  batch->common.mm_req_doc_ranges = &empty_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_ptr_equal(ts_tensor(m, "mm_prefix_range")->data, empty);
  assert_null(ts_tensor(m, "mm_prefix_range_tensor"));
  attn_builder_destroy(b);
  /* without is_mm_prefix_lm there is no buffer for the tensor: refused, named */
  c.is_mm_prefix_lm = 0;
  c.rswa_window = 0;
  b = ts_builder("TRITON_ATTN", &spec, &c);
  batch->common.mm_req_doc_ranges = &ranges_t;
  m = (attn_metadata_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "config->is_mm_prefix_lm is 0");
  assert_ptr_equal(m, UNTOUCHED_PTR);
  /* without rswa_window, no R-SWA fields (vLLM: model_config.rswa_window is None) */
  batch->common.mm_req_doc_ranges = NULL;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_null(ts_tensor(m, "rswa_prefix_lens"));
  assert_int_equal(ts_kind(m, "rswa_window"), ATTN_FIELD_NONE);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_capture(void** state) {
  static const int32_t q[2] = {5, 9}, s[2] = {5, 9};
  static const int32_t qd[3] = {1, 1, 1}, sd[3] = {300, 17, 90};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder("TRITON_ATTN", &spec, &c);
  ts_batch* fresh = ts_batch_make(q, s, 2, 16, 1, -1);
  ts_batch* decodes = ts_batch_make(qd, sd, 3, 16, 20, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &fresh->common, 0, &m, NULL));
  /* capture: vLLM writes 1 into the runtime's seq_lens so capture does not run long sequences */
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &fresh->common, &m, NULL));
  ts_expect_i32(m, "seq_lens", (int32_t[]){1, 1}, 2);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &decodes->common, &m, NULL));
  ts_expect_i32(m, "seq_lens", (int32_t[]){1, 1, 1}, 3);
  assert_int_equal(decodes->seq[0], 1);
  assert_int_equal(decodes->seq[2], 1);
  assert_int_equal(ts_int(m, "max_seq_len"), 300); /* not changed, as in vLLM */
  attn_builder_destroy(b);
  ts_batch_free(fresh);
  ts_batch_free(decodes);
}

static void test_bad_input(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  static const int32_t zero[1] = {0};
  (void)state;
  spec.head_size = 16;
  ASSERT_ERROR(attn_builder_create("TRITON_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "head sizes of at least 32, got kv_cache_spec->head_size=16");
  spec.head_size = 128;
  spec.block_size = 8;
  ASSERT_ERROR(attn_builder_create("TRITON_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "multiple of 16, got 8");
  spec.block_size = 16;
  spec.kind = ATTN_KV_MAMBA;
  ASSERT_ERROR(attn_builder_create("TRITON_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "TRITON_ATTN does not build metadata for MAMBA");
  spec.kind = ATTN_KV_FULL_ATTENTION;
  c.cudagraph_capture_sizes = zero;
  c.num_cudagraph_capture_sizes = 1;
  ASSERT_ERROR(attn_builder_create("TRITON_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->cudagraph_capture_sizes[0]=0 must be positive");
  c.cudagraph_capture_sizes = NULL;
  ASSERT_ERROR(attn_builder_create("TRITON_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->cudagraph_capture_sizes is NULL but config->num_cudagraph_capture_sizes=1");
  assert_ptr_equal(b, UNTOUCHED_PTR);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seq_threshold_3d),
      cmocka_unit_test(test_build_fields),
      cmocka_unit_test(test_mm_prefix_rswa_causal),
      cmocka_unit_test(test_scratch_rows_per_query_token),
      cmocka_unit_test(test_capture),
      cmocka_unit_test(test_sm120_64_segments),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests_name("triton_attn", tests, NULL, NULL);
}
