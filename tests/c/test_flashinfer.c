/* FLASHINFER at vLLM 0.33: the decode/prefill split (require_uniform unless XQA or trtllm-gen
 * varlen, non-causal routing), the paged KV plan inputs on vLLM's worked example, the TRT-LLM
 * prefill / XQA and trtllm-gen decode fields, levels and thresholds per device, query dtypes,
 * fa2-native spec decode, DCP, the cascade plan, the sink prefill wrapper (SM 9.0 / 12.x),
 * hyperparameter checks, capture, and seeded
 * random batches against a naive computation written for this test. */
#include "test_support.h"

static attn_builder_config_t config_for(int32_t capability) {
  attn_builder_config_t c = ts_config();
  c.device_capability = capability;
  c.max_model_len = 1024;
  return c;
}

/* Compute capability 9.0 with TRT-LLM/XQA off: FlashInfer-native prefill and decode. */
static attn_builder_config_t native_config(void) {
  attn_builder_config_t c = config_for(90);
  c.use_trtllm_attention = 0;
  return c;
}

static void expect_bool(const attn_metadata_t* m, const char* name, int value) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  if (f.kind != ATTN_FIELD_BOOL) fail_msg("%s has kind %d, expected BOOL", name, f.kind);
  assert_int_equal(f.int_value, value);
}

/* Asserts a uint16 tensor field: its shape and its first n values (compact). */
static void expect_u16(const attn_metadata_t* m, const char* name, int32_t ndim,
                       const int64_t* shape, const uint16_t* values, int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  const uint16_t* data;
  int32_t d;
  int64_t i;
  if (t == NULL) fail_msg("%s is None", name);
  assert_int_equal(t->dtype.code, ATTN_DTYPE_UINT);
  assert_int_equal(t->dtype.bits, 16);
  assert_int_equal(t->ndim, ndim);
  for (d = 0; d < ndim; ++d) assert_int_equal(t->shape[d], shape[d]);
  data = (const uint16_t*)((const char*)t->data + t->byte_offset);
  for (i = 0; i < n; ++i)
    if (data[i] != values[i]) fail_msg("%s[%lld] = %u, expected %u", name, (long long)i, data[i], values[i]);
}

static const int32_t* data_of(const attn_tensor_t* t) {
  return (const int32_t*)((const char*)t->data + t->byte_offset);
}

/* vLLM's worked example (flashinfer.py): two decodes (seq 33, 16) and a prefill of 8 tokens
 * onto 32 cached ones; page size 16. */
static void test_worked_example(void** state) {
  static const int32_t q[3] = {1, 1, 8}, s[3] = {33, 16, 40};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = native_config();
  attn_builder_t* b = ts_builder("FLASHINFER", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 8, -1);
  attn_metadata_t* m = NULL;
  int32_t indices[7], threshold = -1, level = -1, update = 1;
  int k = 0, j;
  (void)state;
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 1);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 0);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "FLASHINFER");
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 8);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 10);
  {  /* vLLM 0.33 removed cascade attention: no cascade fields without a common prefix */
    static const char* const gone[] = {"use_cascade", "qo_indptr_cpu", "shared_qo_indptr_cpu",
                                       "shared_kv_page_indptr_cpu", "shared_kv_page_indices",
                                       "shared_kv_last_page_len_cpu"};
    size_t g;
    for (g = 0; g < sizeof gone / sizeof gone[0]; ++g) {
      attn_field_t f = ATTN_FIELD_INIT;
      attn_error_t* e = attn_metadata_get(m, gone[g], &f);
      if (e == NULL) fail_msg("%s is present", gone[g]);
      assert_int_equal(attn_error_code(e), ATTN_ERR_NOT_FOUND);
      attn_error_destroy(e);
    }
  }
  expect_bool(m, "prefill_use_trtllm", 0);
  expect_bool(m, "decode_use_trtllm", 0);
  assert_int_equal(ts_int(m, "q_data_type_prefill"), ATTN_KV_DTYPE_BFLOAT16);
  assert_int_equal(ts_int(m, "q_data_type_decode"), ATTN_KV_DTYPE_BFLOAT16);
  assert_int_equal(ts_int(m, "kv_cache_layout"), ATTN_KV_CACHE_LAYOUT_NHD);
  ts_expect_none(m, "decode_kernel"); /* FIDecode */
  {  /* 0.13's single query dtype is gone */
    attn_field_t f = ATTN_FIELD_INIT;
    attn_error_t* e = attn_metadata_get(m, "q_data_type", &f);
    assert_non_null(e);
    assert_int_equal(attn_error_code(e), ATTN_ERR_NOT_FOUND);
    attn_error_destroy(e);
  }
  ts_expect_i32(m, "paged_kv_indptr", (int32_t[]){0, 3, 4, 7}, 4);
  ts_expect_i32(m, "paged_kv_indptr_cpu", (int32_t[]){0, 3, 4, 7}, 4);
  for (j = 0; j < 3; ++j) indices[k++] = batch->bt[0 * 8 + j];
  indices[k++] = batch->bt[1 * 8 + 0];
  for (j = 0; j < 3; ++j) indices[k++] = batch->bt[2 * 8 + j];
  ts_expect_i32(m, "paged_kv_indices", indices, 7);
  ts_expect_i32(m, "paged_kv_last_page_len", (int32_t[]){1, 16, 8}, 3);
  ts_expect_i32(m, "paged_kv_last_page_len_cpu", (int32_t[]){1, 16, 8}, 3);
  /* the prefill plan: query offsets rebased to 0, page offsets absolute */
  ts_expect_i32(m, "prefill_qo_indptr_cpu", (int32_t[]){0, 8}, 2);
  ts_expect_i32(m, "prefill_paged_kv_indptr_cpu", (int32_t[]){4, 7}, 2);
  ts_expect_i32(m, "prefill_paged_kv_last_page_len_cpu", (int32_t[]){8}, 1);
  /* the decode plan */
  ts_expect_i32(m, "decode_paged_kv_indptr_cpu", (int32_t[]){0, 3, 4}, 3);
  ts_expect_i32(m, "decode_paged_kv_last_page_len_cpu", (int32_t[]){1, 16}, 2);
  ts_expect_i32(m, "decode_seq_lens_cpu", (int32_t[]){33, 16}, 2);
  assert_int_equal(ts_int(m, "decode_num_qo_heads"), 32);
  assert_int_equal(ts_int(m, "decode_q_len_per_req"), 1);
  expect_bool(m, "decode_use_cudagraph", 0); /* a prefill is in the batch */
  ts_expect_none(m, "prefill_block_tables");
  ts_expect_none(m, "decode_block_tables");
  /* plan scalars */
  assert_int_equal(ts_int(m, "num_qo_heads"), 32);
  assert_int_equal(ts_int(m, "num_kv_heads"), 8);
  assert_int_equal(ts_int(m, "head_dim"), 128);
  assert_int_equal(ts_int(m, "page_size"), 16);
  assert_int_equal(ts_int(m, "window_left"), -1);
  assert_int_equal(ts_int(m, "prefill_fixed_split_size"), -1);
  expect_bool(m, "disable_split_kv", 0);
  ts_expect_none(m, "logits_soft_cap");
  {
    attn_field_t f = ATTN_FIELD_INIT;
    ASSERT_OK(attn_metadata_get(m, "sm_scale", &f));
    assert_int_equal(f.kind, ATTN_FIELD_FLOAT);
    assert_true(f.float_value > 0.0883 && f.float_value < 0.0884); /* 128^-0.5 */
  }
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* A batch of single-token decodes only: the decode plan, a captured graph's decode wrapper. */
static void test_pure_decode_and_capture(void** state) {
  static const int32_t q[4] = {1, 1, 1, 1}, s[4] = {5, 17, 32, 1};
  static const int32_t q2[2] = {2, 2}, s2[2] = {5, 6};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = native_config();
  attn_builder_t* b = ts_builder("FLASHINFER", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 4, -1);
  ts_batch* spec_batch = ts_batch_make(q2, s2, 2, 16, 4, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 4);
  assert_int_equal(ts_int(m, "num_prefills"), 0);
  ts_expect_i32(m, "decode_paged_kv_indptr_cpu", (int32_t[]){0, 1, 3, 5, 6}, 5);
  ts_expect_i32(m, "decode_paged_kv_last_page_len_cpu", (int32_t[]){5, 1, 16, 1}, 4);
  expect_bool(m, "decode_use_cudagraph", 1);
  ts_expect_none(m, "prefill_qo_indptr_cpu");
  {
    /* a captured graph replays with new contents at the same addresses */
    static const int32_t q3[3] = {1, 1, 1}, s3[3] = {70, 2, 18};
    ts_batch* next = ts_batch_make(q3, s3, 3, 16, 5, -1);
    const void* indptr = ts_tensor(m, "paged_kv_indptr")->data;
    const void* indices = ts_tensor(m, "paged_kv_indices")->data;
    const void* last = ts_tensor(m, "paged_kv_last_page_len")->data;
    ASSERT_OK(attn_build(b, 0, &next->common, 0, &m, NULL));
    assert_ptr_equal(ts_tensor(m, "paged_kv_indptr")->data, indptr);
    assert_ptr_equal(ts_tensor(m, "paged_kv_indices")->data, indices);
    assert_ptr_equal(ts_tensor(m, "paged_kv_last_page_len")->data, last);
    ts_expect_i32(m, "paged_kv_indptr", (int32_t[]){0, 5, 6, 8}, 4);
    ts_batch_free(next);
  }
  /* UNIFORM_SINGLE_TOKEN_DECODE: a spec-decode batch cannot be captured */
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &spec_batch->common, &m, NULL),
               ATTN_ERR_UNSUPPORTED, "only single-token decodes");
  /* eagerly it builds: two queries per request are prefills at threshold 1 */
  ASSERT_OK(attn_build(b, 0, &spec_batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  ts_batch_free(batch);
  ts_batch_free(spec_batch);
  attn_builder_destroy(b);
}

/* Compute capability 10.x: the TRT-LLM paths, UNIFORM_BATCH, spec decode as decode. */
static void test_trtllm_paths(void** state) {
  static const int32_t q[3] = {3, 3, 9}, s[3] = {20, 40, 50};
  static const int32_t qd[2] = {3, 3}, sd[2] = {20, 33};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(100);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 8, -1);
  ts_batch* decodes = ts_batch_make(qd, sd, 2, 16, 8, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  int32_t level = -1, threshold = -1;
  (void)state;
  c.num_speculative_tokens = 2;
  ASSERT_OK(attn_backend_cudagraph_support("FLASHINFER", &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 3); /* 1 + num_speculative_tokens */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 6);
  expect_bool(m, "prefill_use_trtllm", 1); /* cache dtype auto */
  expect_bool(m, "decode_use_trtllm", 1);
  t = ts_tensor(m, "prefill_block_tables");
  assert_int_equal(t->shape[0], 1);
  assert_int_equal(data_of(t)[0], batch->bt[2 * 8]);
  ts_expect_i32(m, "prefill_seq_lens", (int32_t[]){50}, 1);
  ts_expect_i32(m, "prefill_cum_seq_lens_q", (int32_t[]){0, 9}, 2);
  ts_expect_none(m, "prefill_qo_indptr_cpu"); /* FIPrefill's plan() input only */
  /* rebased, as vLLM 0.33 (0.13 passed the indptr tail [5, 9]); paged_kv_indptr stays whole */
  ts_expect_i32(m, "prefill_cum_seq_lens_kv", (int32_t[]){0, 4}, 2);
  assert_int_equal(ts_int(m, "prefill_max_q_len"), 9);
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 50);
  ts_expect_i32(m, "decode_seq_lens", (int32_t[]){20, 40}, 2);
  assert_int_equal(ts_tensor(m, "decode_block_tables")->shape[0], 2);
  assert_int_equal(ts_int(m, "decode_q_len_per_req"), 3);
  ts_expect_none(m, "decode_paged_kv_indptr_cpu");
  /* TRT-LLM decode only: no paged KV layout at all, no host work */
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &decodes->common, &m, NULL));
  ts_expect_none(m, "paged_kv_indptr");
  ts_expect_none(m, "paged_kv_indices");
  expect_bool(m, "decode_use_trtllm", 1);
  assert_int_equal(ts_int(m, "decode_q_len_per_req"), 3);
  attn_builder_destroy(b);

  /* forced off: FlashInfer-native, single-token graphs, threshold 1 */
  c.use_trtllm_attention = 0;
  ASSERT_OK(attn_backend_cudagraph_support("FLASHINFER", &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 1);
  attn_builder_destroy(b);

  /* a KV connector: vLLM 0.33's FlashInfer no longer looks at it (0.13 avoided TRT-LLM) */
  c.use_trtllm_attention = -1;
  c.kv_transfer_enabled = 1;
  ASSERT_OK(attn_backend_cudagraph_support("FLASHINFER", &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 3);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  expect_bool(m, "prefill_use_trtllm", 1);
  assert_int_equal(ts_int(m, "decode_kernel"), ATTN_FLASHINFER_DECODE_TRTLLM_GEN);
  assert_int_equal(ts_int(m, "kv_cache_layout"), ATTN_KV_CACHE_LAYOUT_HND);
  ts_expect_none(m, "decode_q_cu_seq_lens"); /* uniform */
  ts_expect_none(m, "decode_dcp_query_start_loc");
  attn_builder_destroy(b);

  /* fp8 KV cache: the query is quantized too while every part runs on TRT-LLM */
  c.kv_transfer_enabled = 0;
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "q_data_type_prefill"), ATTN_KV_DTYPE_FP8_E4M3);
  assert_int_equal(ts_int(m, "q_data_type_decode"), ATTN_KV_DTYPE_FP8_E4M3);
  assert_int_equal(ts_int(m, "kv_data_type"), ATTN_KV_DTYPE_FP8_E4M3);
  assert_int_equal(ts_int(m, "o_data_type"), ATTN_KV_DTYPE_BFLOAT16);
  expect_bool(m, "prefill_use_trtllm", 1);
  assert_int_equal(ts_tensor(m, "prefill_block_tables")->shape[1], 8); /* fp8 Q: whole rows */
  attn_builder_destroy(b);
  /* fp8 e5m2 cache: Q is e5m2, not vLLM's FP8_DTYPE, so the prefill block table keeps only
   * the columns of the longest prefill: cdiv(50, 16) = 4 (max_seq_len without a bound) */
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E5M2;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "q_data_type_prefill"), ATTN_KV_DTYPE_FP8_E5M2);
  expect_bool(m, "prefill_use_trtllm", 0); /* auto: TRT-LLM prefill only on an "auto" cache */
  attn_builder_destroy(b);
  c.use_trtllm_attention = 1;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_bool(m, "prefill_use_trtllm", 1);
  t = ts_tensor(m, "prefill_block_tables");
  assert_int_equal(t->shape[0], 1);
  assert_int_equal(t->shape[1], 4);
  assert_int_equal(data_of(t)[3], batch->bt[2 * 8 + 3]);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  ts_batch_free(decodes);
}

/* A shared prefix of two pages: the two-level cascade plan. */
static void test_cascade(void** state) {
  static const int32_t q[3] = {1, 1, 4}, s[3] = {40, 33, 36};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = native_config();
  attn_builder_t* b = ts_builder("FLASHINFER", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 8, -1);
  attn_metadata_t* m = NULL;
  int32_t indices[16], k = 0, r, j;
  (void)state;
  ASSERT_OK(attn_build(b, 32, &batch->common, 0, &m, NULL));
  expect_bool(m, "use_cascade", 1);
  ts_expect_i32(m, "shared_qo_indptr_cpu", (int32_t[]){0, 6}, 2);
  ts_expect_i32(m, "shared_kv_page_indptr_cpu", (int32_t[]){0, 2}, 2);
  ts_expect_i32(m, "shared_kv_page_indices", (int32_t[]){batch->bt[0], batch->bt[1]}, 2);
  ts_expect_i32(m, "shared_kv_last_page_len_cpu", (int32_t[]){16}, 1);
  ts_expect_i32(m, "qo_indptr_cpu", (int32_t[]){0, 1, 2, 6}, 4);
  /* each request keeps its pages after the prefix: cdiv(40,16)-2, cdiv(33,16)-2, cdiv(36,16)-2 */
  ts_expect_i32(m, "paged_kv_indptr_cpu", (int32_t[]){0, 1, 2, 3}, 4);
  for (r = 0; r < 3; ++r)
    for (j = 2; j < (s[r] + 15) / 16; ++j) indices[k++] = batch->bt[r * 8 + j];
  ts_expect_i32(m, "paged_kv_indices", indices, k);
  ts_expect_i32(m, "paged_kv_last_page_len_cpu", (int32_t[]){8, 1, 4}, 3);
  ts_expect_none(m, "prefill_qo_indptr_cpu"); /* the whole batch runs through the cascade */
  ts_expect_none(m, "decode_paged_kv_indptr_cpu");
  ASSERT_ERROR(attn_build(b, 8, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common_prefix_len=8 is not a multiple of block_size=16");
  ASSERT_ERROR(attn_build(b, 48, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "exceeds common->seq_lens[0]=40");
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

static void test_hyperparameters_and_bad_input(void** state) {
  static const int32_t q[2] = {1, 5}, s[2] = {9, 5};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = native_config();
  attn_per_layer_params_t layers[2] = {ATTN_PER_LAYER_PARAMS_INIT, ATTN_PER_LAYER_PARAMS_INIT};
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  attn_metadata_t* m = NULL;
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 4, -1);
  (void)state;
  /* the first layer's parameters are the plan's */
  layers[0].window_left = layers[1].window_left = 127;
  layers[0].has_logits_soft_cap = layers[1].has_logits_soft_cap = 1;
  layers[0].logits_soft_cap = layers[1].logits_soft_cap = 30.0;
  layers[0].sm_scale = layers[1].sm_scale = 0.125;
  c.layers = layers;
  c.num_layers = 2;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "window_left"), 127);
  {
    attn_field_t f = ATTN_FIELD_INIT;
    ASSERT_OK(attn_metadata_get(m, "logits_soft_cap", &f));
    assert_true(f.kind == ATTN_FIELD_FLOAT && f.float_value == 30.0);
    ASSERT_OK(attn_metadata_get(m, "sm_scale", &f));
    assert_true(f.float_value == 0.125);
  }
  attn_builder_destroy(b);
  /* layers that disagree cannot share FlashInfer's plan */
  layers[1].window_left = 63;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "same window_left in every layer");
  attn_builder_destroy(b);
  layers[1].window_left = 127;
  layers[1].sm_scale = 0.5;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "share window_left, logits_soft_cap, sm_scale and has_sinks");
  attn_builder_destroy(b);
  /* sinks need TRT-LLM */
  layers[1].sm_scale = 0.125;
  layers[0].has_sinks = layers[1].has_sinks = 1;
  b = (attn_builder_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "attention sinks only on TRT-LLM/XQA");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  c.device_capability = 80; /* no XQA below 9.0 */
  c.use_trtllm_attention = -1;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "attention sinks only on TRT-LLM/XQA");
  c.device_capability = 90; /* XQA: vLLM 0.33 runs sinks there (sink prefill wrapper) */
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  attn_builder_destroy(b);
  b = (attn_builder_t*)UNTOUCHED_PTR;
  c.use_trtllm_attention = 0;
  c.layers = NULL;
  c.num_layers = 0;
  /* kernel limits */
  spec.head_size = 96;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "head sizes 64, 128, 256 and 512, got kv_cache_spec->head_size=96");
  spec.head_size = 128;
  spec.block_size = 128;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "got kv_cache_spec->block_size=128");
  /* 128 and more: the trtllm-gen GQA path on 10.x (32 query heads over 8) */
  c.device_capability = 100;
  c.use_trtllm_attention = -1;
  b = ts_builder("FLASHINFER", &spec, &c);
  attn_builder_destroy(b);
  b = (attn_builder_t*)UNTOUCHED_PTR;
  c.use_trtllm_attention = 0;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "got kv_cache_spec->block_size=128");
  spec.block_size = 16;
  spec.head_size = 256; /* vLLM 0.33 dropped 0.13's FlashInfer issue 1993 refusal */
  b = ts_builder("FLASHINFER", &spec, &c);
  attn_builder_destroy(b);
  b = (attn_builder_t*)UNTOUCHED_PTR;
  spec.head_size = 128;
  c.device_capability = 90;
  c.model_dtype = ATTN_KV_DTYPE_FLOAT16;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->dtype=BFLOAT16 differs from config->model_dtype=FLOAT16");
  c.model_dtype = ATTN_KV_DTYPE_AUTO;
  c.model_dtype = ATTN_KV_DTYPE_FLOAT32;
  spec.dtype = ATTN_KV_DTYPE_FLOAT32;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "FLASHINFER runs float16 and bfloat16 models, got FLOAT32");
  c.model_dtype = ATTN_KV_DTYPE_AUTO;
  spec.dtype = ATTN_KV_DTYPE_BFLOAT16;
  spec.kind = ATTN_KV_MLA;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "FLASHINFER does not build metadata for MLA");
  /* decoder self-attention only, as vLLM's FlashInferImpl */
  spec.kind = ATTN_KV_CROSS_ATTENTION;
  c.max_encoder_len = 64;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "FLASHINFER does not build metadata for CROSS_ATTENTION");
  spec.kind = ATTN_KV_ENCODER_ONLY;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "FLASHINFER does not build metadata for ENCODER_ONLY");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  /* a padded uniform batch (q = [1, 0]) whose token count is not num_reqs * 1: vLLM 0.33
   * dropped the "tokens not padded correctly" assertion, its split is all decodes */
  spec.kind = ATTN_KV_FULL_ATTENTION;
  b = ts_builder("FLASHINFER", &spec, &c);
  {
    static const int32_t qp[2] = {1, 0}, sp[2] = {4, 0};
    ts_batch* padded = ts_batch_make(qp, sp, 2, 16, 1, 3);
    padded->common.max_query_len = 2;  /* forces the uniform check */
    ASSERT_OK(attn_build(b, 0, &padded->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), 2);
    assert_int_equal(ts_int(m, "num_decode_tokens"), 3);
    assert_int_equal(ts_int(m, "num_prefills"), 0);
    ts_batch_free(padded);
  }
  {
    /* a host mirror that disagrees with the tensor in host memory: refused, naming the tensor
     * (the host path must never compute from the unchecked values, which would overrun the
     * indices) */
    static const int32_t q2[2] = {1, 1}, s2[2] = {2, 2};
    ts_batch* lying = ts_batch_make(q2, s2, 2, 16, 1, -1);
    int32_t huge[2] = {4000, 4000};
    int64_t shape[1] = {2};
    attn_tensor_t huge_t = ts_host_tensor(huge, 1, shape, ATTN_DTYPE_INT, 32);
    lying->common.seq_lens_cpu = &lying->seq_t;
    lying->common.seq_lens = &huge_t;
    ASSERT_ERROR(attn_build(b, 0, &lying->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->seq_lens[0]=4000 differs from its host mirror common->seq_lens_cpu[0]=2");
    ts_batch_free(lying);
  }
  {
    /* one request: a dimension of size 1 may have any stride, even one whose byte stride
     * overflows int64 (the fuzzer's find: the mirror comparison multiplied it, UB) */
    static const int32_t q1[1] = {1}, s1[1] = {2};
    ts_batch* one = ts_batch_make(q1, s1, 1, 16, 1, -1);
    int32_t copy[1] = {2};
    int64_t shape[1] = {1}, strides[1] = {(int64_t)1 << 62};
    attn_tensor_t copy_t = ts_host_tensor(copy, 1, shape, ATTN_DTYPE_INT, 32);
    copy_t.strides = strides;
    one->common.seq_lens_cpu = &one->seq_t;
    one->common.seq_lens = &copy_t;
    ASSERT_OK(attn_build(b, 0, &one->common, 0, &m, NULL));
    copy[0] = 3; /* and a different value is still found */
    ASSERT_ERROR(attn_build(b, 0, &one->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->seq_lens[0]=3 differs from its host mirror common->seq_lens_cpu[0]=2");
    ts_batch_free(one);
  }
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ASSERT_ERROR(attn_update_block_table(b, m, batch->common.block_table_tensor,
                                       batch->common.slot_mapping, &m, NULL),
               ATTN_ERR_UNSUPPORTED, "FLASHINFER does not support update_block_table");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* vLLM 0.33's get_seq_lens of a decode plan's indptr and last-page lengths (int32). */
static void expect_decode_plan(const attn_metadata_t* m, const int32_t* indptr,
                               const int32_t* last, int64_t rows, int32_t page) {
  int32_t lens[8];
  int64_t i;
  assert_true(rows <= 8);
  for (i = 0; i < rows; ++i) {
    const int32_t pages = indptr[i + 1] - indptr[i] - 1;
    lens[i] = (pages > 0 ? pages : 0) * page + last[i];
  }
  ts_expect_i32(m, "decode_paged_kv_indptr_cpu", indptr, rows + 1);
  ts_expect_i32(m, "decode_paged_kv_last_page_len_cpu", last, rows);
  ts_expect_i32(m, "decode_seq_lens_cpu", lens, rows);
}

/* Issues 37 and 34: an all-decode batch whose num_actual_tokens is padded far past num_reqs
 * and max_num_seqs (5,000 and 60,000 tokens, one request, max_num_seqs 4), FlashInfer-native
 * decode on SM 9.0, 10.0 and 12.0. vLLM 0.33 plans num_decode_tokens rows from its persistent
 * buffers: paged_kv_indptr.cpu[:rows + 1] and paged_kv_last_page_len.cpu[:rows] stop at the
 * buffers' ends (max_num_seqs + 1 and max_num_seqs entries), and the rows past num_reqs keep
 * what earlier builds wrote (zeros on a fresh builder). libattn read lens[i] for every row: past
 * the caller's seq_lens and past its own max_num_seqs buffer (a crash under 60,000 tokens, a
 * length no request has with fewer). Run under ASan, this reads and writes nothing outside. */
static void test_padded_all_decode(void** state) {
  static const int32_t caps[3] = {90, 100, 120};
  static const int32_t q1[1] = {1}, s1[1] = {37}, s100[1] = {100};
  static const int32_t q4[4] = {1, 1, 1, 1}, s4[4] = {40, 50, 60, 70};
  static const int64_t padded[2] = {5000, 60000};
  (void)state;
  for (int k = 0; k < 3; ++k) {
    for (int p = 0; p < 2; ++p) {
      attn_kv_cache_spec_t spec = ts_spec();
      attn_builder_config_t c = config_for(caps[k]);
      attn_metadata_t* m = NULL;
      c.use_trtllm_attention = 0; /* FlashInfer-native decode (fast_plan_decode) */
      c.max_num_seqs = 4;
      c.max_num_batched_tokens = 65536;
      attn_builder_t* b = ts_builder("FLASHINFER", &spec, &c);
      ts_batch* one = ts_batch_make(q1, s1, 1, 16, 8, padded[p]);
      ts_batch* four = ts_batch_make(q4, s4, 4, 16, 8, -1);
      ts_batch* longer = ts_batch_make(q1, s100, 1, 16, 8, padded[p]);
      /* a fresh builder: the rows past the request are zeros, as vLLM's torch.zeros buffers */
      ASSERT_OK(attn_build(b, 0, &one->common, 0, &m, NULL));
      assert_int_equal(ts_int(m, "num_decodes"), 1);
      assert_int_equal(ts_int(m, "num_decode_tokens"), padded[p]);
      expect_bool(m, "decode_use_trtllm", 0);
      assert_int_equal(ts_int(m, "decode_q_len_per_req"), 1);
      expect_decode_plan(m, (int32_t[]){0, 3, 0, 0, 0}, (int32_t[]){5, 0, 0, 0}, 4, 16);
      /* four requests fill every row; the padded batch after them plans their leftovers */
      ASSERT_OK(attn_build(b, 0, &four->common, 0, &m, NULL));
      expect_decode_plan(m, (int32_t[]){0, 3, 7, 11, 16}, (int32_t[]){8, 2, 12, 6}, 4, 16);
      ASSERT_OK(attn_build(b, 0, &one->common, 0, &m, NULL));
      expect_decode_plan(m, (int32_t[]){0, 3, 7, 11, 16}, (int32_t[]){5, 2, 12, 6}, 4, 16);
      /* a first row longer than the leftover second: indptr decreases, the clamp holds */
      ASSERT_OK(attn_build(b, 0, &longer->common, 0, &m, NULL));
      expect_decode_plan(m, (int32_t[]){0, 7, 7, 11, 16}, (int32_t[]){4, 2, 12, 6}, 4, 16);
      /* the host lengths are read for the request only: the row past it is the buffer's */
      assert_int_equal(data_of(ts_tensor(m, "decode_seq_lens_cpu"))[0], 100);
      ts_batch_free(one);
      ts_batch_free(four);
      ts_batch_free(longer);
      attn_builder_destroy(b);
    }
  }
}

/* Issue 34: SM 10.0, FlashInfer-native decode (fast_plan_decode; its reorder threshold stays 1
 * with k = 9), FULL_AND_PIECEWISE, two builds in a row on one builder: a long all-decode batch,
 * then a shorter one padded as vLLM's runner pads a full decode graph (a zero-length request,
 * num_actual_tokens 8 past the scheduled tokens). Every token is a decode token and the decode
 * plan has num_decode_tokens rows, cut at max_num_seqs (8): the
 * rows up to num_reqs are this build's (the padding request's length 0), the rows past it are
 * what vLLM's persistent paged_kv_indptr / paged_kv_last_page_len hold: the first build's rows,
 * zeros where no build wrote. The caller's seq_lens is a view of a longer buffer (a runtime's
 * persistent one) whose tail holds an earlier batch's lengths: libattn read them for the rows
 * past num_reqs (decode_seq_lens_cpu 12321 where vLLM has 0) before 1ba2e58. Checked on the
 * plain build and on the capture build of the padded batch. */
static void test_padding_rows_after_longer_build(void** state) {
  static const int32_t q4[4] = {1, 1, 1, 1}, s4[4] = {12321, 700, 900, 33};
  static const int32_t q2[2] = {1, 0}, s2[2] = {40, 0};
  /* pages 771, 44, 57, 3; last pages 1, 12, 4, 1 */
  static const int32_t indptr1[9] = {0, 771, 815, 872, 875, 0, 0, 0, 0};
  static const int32_t last1[8] = {1, 12, 4, 1, 0, 0, 0, 0};
  /* this build's rows 0-1 (3 pages, last 8; the padding request 0 pages, last 0) */
  static const int32_t indptr2[9] = {0, 3, 3, 872, 875, 0, 0, 0, 0};
  static const int32_t last2[8] = {8, 0, 4, 1, 0, 0, 0, 0};
  /* what vLLM's get_seq_lens gives on those rows: the padding request and the rows no build
   * wrote are 0 */
  static const int32_t lens1[8] = {12321, 700, 900, 33, 0, 0, 0, 0};
  static const int32_t lens2[8] = {40, 0, 868 * 16 + 4, 33, 0, 0, 0, 0};
  int32_t store[8];
  int64_t shape4[1] = {4}, shape2[1] = {2};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(100);
  attn_builder_t* b;
  ts_batch* longer = ts_batch_make(q4, s4, 4, 16, 0, 8);
  ts_batch* padded = ts_batch_make(q2, s2, 2, 16, 0, 8);
  attn_tensor_t seq4, seq2;
  attn_metadata_t* m = NULL;
  int capture;
  (void)state;
  c.use_trtllm_attention = 0; /* FlashInfer-native decode through fast_plan_decode */
  c.max_num_seqs = 8;
  c.max_model_len = 16384;
  c.num_speculative_tokens = 9;
  c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
  b = ts_builder("FLASHINFER", &spec, &c);
  /* the caller's lengths: the batch's, then an earlier batch's left in its buffer */
  memcpy(store, s4, sizeof s4);
  store[4] = store[5] = store[6] = store[7] = 12321;
  seq4 = ts_host_tensor(store, 1, shape4, ATTN_DTYPE_INT, 32);
  longer->common.seq_lens = &seq4;
  ASSERT_OK(attn_build(b, 0, &longer->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 4);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 8);
  expect_bool(m, "decode_use_trtllm", 0);
  expect_bool(m, "decode_use_cudagraph", 1);
  expect_decode_plan(m, indptr1, last1, 8, 16);
  ts_expect_i32(m, "decode_seq_lens_cpu", lens1, 8);
  for (capture = 0; capture < 2; ++capture) {
    store[0] = 40;
    store[1] = 0;
    store[2] = 900;
    store[3] = 33; /* the buffer past num_reqs = 2: the first batch's lengths, then 12321 */
    seq2 = ts_host_tensor(store, 1, shape2, ATTN_DTYPE_INT, 32);
    padded->common.seq_lens = &seq2;
    if (capture)
      ASSERT_OK(attn_build_for_cudagraph_capture(b, &padded->common, &m, NULL));
    else
      ASSERT_OK(attn_build(b, 0, &padded->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), 2); /* a padded uniform batch: all decodes */
    assert_int_equal(ts_int(m, "num_decode_tokens"), 8);
    expect_bool(m, "decode_use_cudagraph", 1);
    assert_int_equal(ts_int(m, "decode_q_len_per_req"), 1);
    expect_decode_plan(m, indptr2, last2, 8, 16);
    ts_expect_i32(m, "decode_seq_lens_cpu", lens2, 8);
  }
  attn_builder_destroy(b);
  ts_batch_free(longer);
  ts_batch_free(padded);
}

/* Seeded random batches (decodes first) against a direct computation of the split and of
 * FlashInfer's paged KV layout. */
static void test_random_batches(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = native_config();
  attn_builder_t* b;
  uint64_t seed = 20261202;
  int round;
  (void)state;
  c.max_model_len = 4096;
  b = ts_builder("FLASHINFER", &spec, &c);
  for (round = 0; round < 200; ++round) {
    int32_t q[64], s[64], indptr[65], last[64], indices[64 * 256];
    const int64_t n = ts_rand_range(&seed, 1, 64), nd = ts_rand_range(&seed, 0, n);
    int64_t r, j, k = 0, decode_tokens = 0, tokens = 0;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    for (r = 0; r < n; ++r) {
      q[r] = r < nd ? 1 : (int32_t)ts_rand_range(&seed, 2, 120);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 3000);
      if (r < nd) decode_tokens += q[r];
      tokens += q[r];
    }
    batch = ts_batch_make(q, s, n, 16, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_prefills"), n - nd);
    assert_int_equal(ts_int(m, "num_decode_tokens"), decode_tokens);
    assert_int_equal(ts_int(m, "num_prefill_tokens"), tokens - decode_tokens);
    indptr[0] = 0;
    for (r = 0; r < n; ++r) {
      const int32_t pages = (s[r] + 15) / 16;
      for (j = 0; j < pages; ++j) indices[k++] = batch->bt[r * batch->width + j];
      indptr[r + 1] = indptr[r] + pages;
      last[r] = s[r] % 16 == 0 ? 16 : s[r] % 16;
    }
    ts_expect_i32(m, "paged_kv_indptr", indptr, n + 1);
    ts_expect_i32(m, "paged_kv_indices", indices, k);
    ts_expect_i32(m, "paged_kv_last_page_len", last, n);
    if (nd > 0) ts_expect_i32(m, "decode_paged_kv_indptr_cpu", indptr, nd + 1);
    if (nd < n) ts_expect_i32(m, "prefill_paged_kv_indptr_cpu", indptr + nd, n - nd + 1);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

static int32_t level_for(int32_t capability, int32_t head_size, void (*tweak)(attn_builder_config_t*)) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(capability);
  int32_t level = -1;
  spec.head_size = head_size;
  c.num_speculative_tokens = 2;
  if (tweak) tweak(&c);
  ASSERT_OK(attn_backend_cudagraph_support("FLASHINFER", &spec, &c, &level));
  return level;
}
static void non_causal(attn_builder_config_t* c) { c->use_non_causal = 1; }
static void trtllm_off(attn_builder_config_t* c) { c->use_trtllm_attention = 0; }
static void dcp2(attn_builder_config_t* c) { c->decode_context_parallel_size = 2; }
static void invariant(attn_builder_config_t* c) { c->batch_invariant = 1; }

static int32_t threshold_for(int32_t capability, int32_t head_size,
                             void (*tweak)(attn_builder_config_t*)) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(capability);
  attn_builder_t* b;
  int32_t threshold = -1;
  spec.head_size = head_size;
  c.num_speculative_tokens = 2;
  if (tweak) tweak(&c);
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  attn_builder_destroy(b);
  return threshold;
}

/* vLLM 0.33's get_cudagraph_support and reorder threshold per device (hand-derived from
 * flashinfer.py): fa2-native decode below 9.0 (and on an unknown device) takes uniform spec
 * batches; XQA on 9.0/12.x needs head_dim % 16 == 0 <= 256 and no DCP; trtllm-gen on 10.x;
 * DCP is single-token with threshold 1; use_non_causal keeps UNIFORM_BATCH only on XQA. */
static void test_levels_and_thresholds(void** state) {
  (void)state;
  assert_int_equal(level_for(80, 128, NULL), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_for(0, 128, NULL), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_for(89, 128, non_causal), ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  assert_int_equal(level_for(89, 128, trtllm_off), ATTN_CG_UNIFORM_BATCH); /* fa2, not TRT-LLM */
  assert_int_equal(level_for(90, 128, NULL), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_for(90, 512, NULL), ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  assert_int_equal(level_for(90, 128, non_causal), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_for(90, 128, trtllm_off), ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  assert_int_equal(level_for(90, 128, invariant), ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  assert_int_equal(level_for(90, 128, dcp2), ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  assert_int_equal(level_for(80, 128, dcp2), ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  assert_int_equal(level_for(100, 512, NULL), ATTN_CG_UNIFORM_BATCH); /* no XQA limit */
  assert_int_equal(level_for(100, 128, non_causal), ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  assert_int_equal(level_for(120, 128, NULL), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_for(121, 128, non_causal), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_for(110, 128, NULL), ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  /* thresholds: 1 + k with a spec-as-decode kernel (XQA, trtllm-gen, fa2), else 1 */
  assert_int_equal(threshold_for(80, 128, NULL), 3);
  assert_int_equal(threshold_for(90, 128, NULL), 3);
  assert_int_equal(threshold_for(90, 512, NULL), 1);
  assert_int_equal(threshold_for(90, 128, trtllm_off), 1);
  assert_int_equal(threshold_for(100, 128, NULL), 3);
  assert_int_equal(threshold_for(100, 128, dcp2), 1);
  assert_int_equal(threshold_for(80, 128, dcp2), 1);
  assert_int_equal(threshold_for(110, 128, NULL), 1);
}

/* vLLM 0.33's get_q_data_type per phase with an fp8 cache. */
static void test_query_dtypes(void** state) {
  static const int32_t q[2] = {1, 5}, s[2] = {9, 5};
  static const struct { int32_t cap, trtllm, disable, prefill, decode; } cases[] = {
      {90, -1, 0, ATTN_KV_DTYPE_FP8_E4M3, ATTN_KV_DTYPE_BFLOAT16},  /* FA3 prefill, XQA decode */
      {90, 0, 0, ATTN_KV_DTYPE_FP8_E4M3, ATTN_KV_DTYPE_FP8_E4M3},   /* no XQA */
      {100, -1, 0, ATTN_KV_DTYPE_FP8_E4M3, ATTN_KV_DTYPE_FP8_E4M3},
      {120, -1, 0, ATTN_KV_DTYPE_BFLOAT16, ATTN_KV_DTYPE_BFLOAT16}, /* fa2 prefill, XQA */
      {89, -1, 0, ATTN_KV_DTYPE_BFLOAT16, ATTN_KV_DTYPE_BFLOAT16},
      {100, -1, 1, ATTN_KV_DTYPE_BFLOAT16, ATTN_KV_DTYPE_BFLOAT16}, /* disabled */
  };
  attn_kv_cache_spec_t spec = ts_spec();
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 4, -1);
  attn_metadata_t* m = NULL;
  size_t i;
  (void)state;
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    attn_builder_config_t c = config_for(cases[i].cap);
    attn_builder_t* b;
    c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
    c.use_trtllm_attention = cases[i].trtllm;
    c.disable_flashinfer_q_quantization = cases[i].disable;
    b = ts_builder("FLASHINFER", &spec, &c);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "q_data_type_prefill"), cases[i].prefill);
    assert_int_equal(ts_int(m, "q_data_type_decode"), cases[i].decode);
    attn_builder_destroy(b);
  }
  ts_batch_free(batch);
}

/* XQA (9.0): no uniform requirement, ragged spec decodes with q_cu_seq_lens; non-causal
 * batches still split (XQA), but on 10.x they run as prefills only. */
static void test_xqa_ragged_and_non_causal(void** state) {
  static const int32_t q[3] = {3, 2, 5}, s[3] = {10, 12, 30};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(90);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 4, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.num_speculative_tokens = 2;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2); /* 3 and 2 <= threshold 3, not uniform */
  assert_int_equal(ts_int(m, "num_decode_tokens"), 5);
  expect_bool(m, "decode_use_trtllm", 1);
  assert_int_equal(ts_int(m, "decode_kernel"), ATTN_FLASHINFER_DECODE_XQA);
  assert_int_equal(ts_int(m, "decode_q_len_per_req"), 3);
  ts_expect_i32(m, "decode_q_cu_seq_lens", (int32_t[]){0, 3, 5}, 3);
  ts_expect_i32(m, "decode_seq_lens", (int32_t[]){10, 12}, 2);
  ts_expect_none(m, "decode_paged_kv_indptr_cpu");
  /* XQA's packed ragged draft mask: a row per decode token, bit kv set for kv <= q < len */
  expect_u16(m, "decode_mask", 2, (int64_t[]){5, 2},
             (uint16_t[]){1, 0, 3, 0, 7, 0, 1, 0, 3, 0}, 10);
  expect_bool(m, "prefill_use_trtllm", 0); /* no TRT-LLM prefill on 9.0 */
  ts_expect_i32(m, "prefill_paged_kv_indptr_cpu", (int32_t[]){2, 4}, 2);
  /* non-causal on XQA: the same split; the mask keeps every draft of the request */
  batch->common.causal = 0;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  expect_bool(m, "causal", 0);
  expect_u16(m, "decode_mask", 2, (int64_t[]){5, 2},
             (uint16_t[]){7, 0, 7, 0, 7, 0, 3, 0, 3, 0}, 10);
  batch->common.causal = 1;
  {  /* uniform spec decodes: (num_decodes, q, 2 * cdiv(q, 32)), no offsets */
    static const int32_t qu[2] = {3, 3}, su[2] = {10, 12};
    ts_batch* uniform = ts_batch_make(qu, su, 2, 16, 4, -1);
    ASSERT_OK(attn_build(b, 0, &uniform->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "decode_q_len_per_req"), 3);
    ts_expect_none(m, "decode_q_cu_seq_lens");
    expect_u16(m, "decode_mask", 3, (int64_t[]){2, 3, 2},
               (uint16_t[]){1, 0, 3, 0, 7, 0, 1, 0, 3, 0, 7, 0}, 12);
    ts_batch_free(uniform);
  }
  {  /* single-token decodes: no mask */
    static const int32_t q1[2] = {1, 1}, s1[2] = {10, 12};
    ts_batch* single = ts_batch_make(q1, s1, 2, 16, 4, -1);
    ASSERT_OK(attn_build(b, 0, &single->common, 0, &m, NULL));
    ts_expect_none(m, "decode_mask");
    ts_batch_free(single);
  }
  batch->common.causal = 0;
  attn_builder_destroy(b);
  /* non-causal on 10.x: everything is a prefill, on FlashInfer's native prefill */
  c.device_capability = 100;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 10);
  expect_bool(m, "prefill_use_trtllm", 0);
  ts_expect_i32(m, "prefill_paged_kv_indptr_cpu", (int32_t[]){0, 1, 2, 4}, 4);
  /* causal on 10.x: uniform decodes required, [3, 2] is not: the split stops at the 2 */
  batch->common.causal = 1;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  attn_builder_destroy(b);
  /* adaptive verification: trtllm-gen varlen decode, no uniform split, device offsets */
  c.enable_adaptive_verification = 1;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "decode_kernel"), ATTN_FLASHINFER_DECODE_TRTLLM_GEN);
  assert_int_equal(ts_int(m, "decode_q_len_per_req"), 3); /* min(max_query_len 5, 3) */
  ts_expect_i32(m, "decode_q_cu_seq_lens", (int32_t[]){0, 3, 5}, 3);
  attn_builder_destroy(b);
  /* DCP refuses non-causal batches */
  c.enable_adaptive_verification = 0;
  c.decode_context_parallel_size = 2;
  batch->common.causal = 0;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "non-causal prefill does not support DCP");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* fa2-native decode (below 9.0): uniform spec decodes planned one row per request with
 * q_len_per_req = decode tokens / decodes (padded zero-length rows are planned too). */
static void test_fa2_spec_decode(void** state) {
  static const int32_t q[2] = {2, 2}, s[2] = {5, 20};
  static const int32_t qp[3] = {2, 2, 0}, sp[3] = {5, 20, 0};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(80);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 4, -1);
  ts_batch* padded = ts_batch_make(qp, sp, 3, 16, 4, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.num_speculative_tokens = 1;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  expect_bool(m, "decode_use_trtllm", 0);
  assert_int_equal(ts_int(m, "decode_q_len_per_req"), 2);
  ts_expect_i32(m, "decode_paged_kv_indptr_cpu", (int32_t[]){0, 1, 3}, 3);
  ts_expect_i32(m, "decode_seq_lens_cpu", (int32_t[]){5, 20}, 2);
  expect_bool(m, "decode_use_cudagraph", 1);
  ASSERT_OK(attn_build(b, 0, &padded->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 4);
  ts_expect_i32(m, "decode_paged_kv_indptr_cpu", (int32_t[]){0, 1, 3, 3}, 4);
  ts_expect_i32(m, "decode_paged_kv_last_page_len_cpu", (int32_t[]){5, 4, 0}, 3);
  assert_int_equal(ts_int(m, "decode_q_len_per_req"), 1); /* vLLM's 4 // 3 */
  attn_builder_destroy(b);
  ts_batch_free(batch);
  ts_batch_free(padded);
}

/* DCP on 10.x: trtllm-gen decode on dcp_local_seq_lens; the native DCP prefill's page layout
 * from the rank-local context lengths (vLLM 0.33 derives the pages after the conversion). */
/* The field by index, its name and kind (the appended field's place in each variant). */
static void expect_field_at(const attn_metadata_t* m, size_t index, const char* name,
                            int32_t kind) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_field(m, index, &f));
  assert_string_equal(f.name, name);
  assert_int_equal(f.kind, kind);
}

/* prefill_sink_wrapper (appended, issue 34): vLLM 0.33's _get_prefill_wrapper makes FlashInfer's
 * BatchAttentionWithAttentionSinkWrapper for a FlashInfer-native prefill of a layer with sinks
 * on SM 9.0 and 12.x (XQA decode), the paged prefill wrapper otherwise; None without a prefill,
 * with TRT-LLM's prefill (SM 10.x) and with cascade. Its index: 51 in a build without cascade
 * (after decode_dcp_query_start_loc), 57 with it (after the cascade fields). */
static void test_sink_prefill_wrapper(void** state) {
  static const int32_t q[2] = {1, 8}, s[2] = {33, 20}, dq[2] = {1, 1}, ds[2] = {9, 5};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(90);
  attn_per_layer_params_t layer = ATTN_PER_LAYER_PARAMS_INIT;
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 4, -1);
  ts_batch* decodes = ts_batch_make(dq, ds, 2, 16, 4, -1);
  const int32_t caps[3] = {90, 120, 100};
  int i;
  (void)state;
  layer.window_left = -1;
  layer.sm_scale = 0.125;
  layer.has_sinks = 1;
  c.layers = &layer;
  c.num_layers = 1;
  for (i = 0; i < 3; ++i) {
    c.device_capability = caps[i];
    b = ts_builder("FLASHINFER", &spec, &c);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(attn_metadata_field_count(m), 52);
    if (caps[i] == 100) { /* TRT-LLM's prefill: no FlashInfer prefill wrapper */
      expect_bool(m, "prefill_use_trtllm", 1);
      ts_expect_none(m, "prefill_sink_wrapper");
    } else {
      expect_bool(m, "prefill_use_trtllm", 0);
      expect_field_at(m, 51, "prefill_sink_wrapper", ATTN_FIELD_BOOL);
      expect_bool(m, "prefill_sink_wrapper", 1);
    }
    ASSERT_OK(attn_build(b, 0, &decodes->common, 0, &m, NULL));
    ts_expect_none(m, "prefill_sink_wrapper"); /* no prefill */
    attn_builder_destroy(b);
  }
  /* no sinks: the paged prefill wrapper, on 9.0 and (XQA off) 8.0 alike */
  layer.has_sinks = 0;
  c.device_capability = 90;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_bool(m, "prefill_sink_wrapper", 0);
  attn_builder_destroy(b);
  c = native_config();
  c.device_capability = 80;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_bool(m, "prefill_sink_wrapper", 0);
  /* cascade: the whole batch runs through the cascade plan; the field follows its fields */
  ASSERT_OK(attn_build(b, 16, &batch->common, 0, &m, NULL));
  assert_int_equal(attn_metadata_field_count(m), 58);
  expect_field_at(m, 51, "use_cascade", ATTN_FIELD_BOOL);
  expect_field_at(m, 57, "prefill_sink_wrapper", ATTN_FIELD_NONE);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  ts_batch_free(decodes);
}

static void test_dcp(void** state) {
  static const int32_t q[3] = {1, 1, 4}, s[3] = {9, 16, 20};
  int32_t local[3] = {5, 8, 10};
  int64_t shape[1] = {3};
  attn_tensor_t local_t = ts_host_tensor(local, 1, shape, ATTN_DTYPE_INT, 32);
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(100);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 4, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.decode_context_parallel_size = 2;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->dcp_local_seq_lens is NULL");
  batch->common.dcp_local_seq_lens = &local_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  expect_bool(m, "decode_use_trtllm", 1);
  assert_int_equal(ts_int(m, "decode_kernel"), ATTN_FLASHINFER_DECODE_TRTLLM_GEN);
  ts_expect_i32(m, "decode_seq_lens", (int32_t[]){5, 8}, 2);
  ts_expect_i32(m, "decode_dcp_query_start_loc", (int32_t[]){0, 1, 2}, 3);
  expect_bool(m, "prefill_use_trtllm", 0);
  /* rank 0 of 2: local(9) = 5, local(16) = 8, the prefill's context 16 -> 8 */
  ts_expect_i32(m, "paged_kv_indptr_cpu", (int32_t[]){0, 1, 2, 3}, 4);
  ts_expect_i32(m, "paged_kv_last_page_len_cpu", (int32_t[]){5, 8, 8}, 3);
  ts_expect_i32(m, "paged_kv_last_page_len", (int32_t[]){5, 8, 8}, 3);
  ts_expect_i32(m, "prefill_paged_kv_indptr_cpu", (int32_t[]){2, 3}, 2);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_worked_example),
      cmocka_unit_test(test_pure_decode_and_capture),
      cmocka_unit_test(test_trtllm_paths),
      cmocka_unit_test(test_cascade),
      cmocka_unit_test(test_hyperparameters_and_bad_input),
      cmocka_unit_test(test_random_batches),
      cmocka_unit_test(test_padded_all_decode),
      cmocka_unit_test(test_padding_rows_after_longer_build),
      cmocka_unit_test(test_levels_and_thresholds),
      cmocka_unit_test(test_query_dtypes),
      cmocka_unit_test(test_xqa_ragged_and_non_causal),
      cmocka_unit_test(test_fa2_spec_decode),
      cmocka_unit_test(test_sink_prefill_wrapper),
      cmocka_unit_test(test_dcp),
  };
  return cmocka_run_group_tests_name("flashinfer", tests, NULL, NULL);
}
