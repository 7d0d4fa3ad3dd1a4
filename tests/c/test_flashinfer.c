/* FLASHINFER: the decode/prefill split (require_uniform, vLLM's threshold), the paged KV plan
 * inputs on vLLM's worked example, the TRT-LLM prefill/decode fields on a 10.x device, the
 * cascade plan, hyperparameter checks, capture, and seeded random batches against a naive
 * computation written for this test. */
#include "test_support.h"

static attn_builder_config_t config_for(int32_t capability) {
  attn_builder_config_t c = ts_config();
  c.device_capability = capability;
  c.max_model_len = 1024;
  return c;
}

static void expect_bool(const attn_metadata_t* m, const char* name, int value) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  if (f.kind != ATTN_FIELD_BOOL) fail_msg("%s has kind %d, expected BOOL", name, f.kind);
  assert_int_equal(f.int_value, value);
}

static void expect_none(const attn_metadata_t* m, const char* name) {
  if (ts_kind(m, name) != ATTN_FIELD_NONE) fail_msg("%s is not None", name);
}

static const int32_t* data_of(const attn_tensor_t* t) {
  return (const int32_t*)((const char*)t->data + t->byte_offset);
}

/* vLLM's worked example (flashinfer.py): two decodes (seq 33, 16) and a prefill of 8 tokens
 * onto 32 cached ones; page size 16. */
static void test_worked_example(void** state) {
  static const int32_t q[3] = {1, 1, 8}, s[3] = {33, 16, 40};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(90);
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
  assert_int_equal(ts_int(m, "q_data_type"), ATTN_KV_DTYPE_BFLOAT16);
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
  expect_bool(m, "decode_use_cudagraph", 0); /* a prefill is in the batch */
  expect_none(m, "prefill_block_tables");
  expect_none(m, "decode_block_tables");
  /* plan scalars */
  assert_int_equal(ts_int(m, "num_qo_heads"), 32);
  assert_int_equal(ts_int(m, "num_kv_heads"), 8);
  assert_int_equal(ts_int(m, "head_dim"), 128);
  assert_int_equal(ts_int(m, "page_size"), 16);
  assert_int_equal(ts_int(m, "window_left"), -1);
  assert_int_equal(ts_int(m, "prefill_fixed_split_size"), -1);
  expect_bool(m, "disable_split_kv", 0);
  expect_none(m, "logits_soft_cap");
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
  attn_builder_config_t c = config_for(90);
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
  expect_none(m, "prefill_qo_indptr_cpu");
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
  /* rebased, as vLLM 0.33 (0.13 passed the indptr tail [5, 9]); paged_kv_indptr stays whole */
  ts_expect_i32(m, "prefill_cum_seq_lens_kv", (int32_t[]){0, 4}, 2);
  assert_int_equal(ts_int(m, "prefill_max_q_len"), 9);
  assert_int_equal(ts_int(m, "prefill_max_seq_len"), 50);
  ts_expect_i32(m, "decode_seq_lens", (int32_t[]){20, 40}, 2);
  assert_int_equal(ts_tensor(m, "decode_block_tables")->shape[0], 2);
  assert_int_equal(ts_int(m, "decode_q_len_per_req"), 3);
  expect_none(m, "decode_paged_kv_indptr_cpu");
  /* TRT-LLM decode only: no paged KV layout at all, no host work */
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &decodes->common, &m, NULL));
  expect_none(m, "paged_kv_indptr");
  expect_none(m, "paged_kv_indices");
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

  /* a KV connector: the class level still says UNIFORM_BATCH (vLLM asks the class), the
   * builder avoids TRT-LLM */
  c.use_trtllm_attention = -1;
  c.kv_transfer_enabled = 1;
  ASSERT_OK(attn_backend_cudagraph_support("FLASHINFER", &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 0); /* 3-token queries are prefills now */
  expect_bool(m, "prefill_use_trtllm", 0);
  attn_builder_destroy(b);

  /* fp8 KV cache: the query is quantized too while every part runs on TRT-LLM */
  c.kv_transfer_enabled = 0;
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  b = ts_builder("FLASHINFER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "q_data_type"), ATTN_KV_DTYPE_FP8_E4M3);
  assert_int_equal(ts_int(m, "kv_data_type"), ATTN_KV_DTYPE_FP8_E4M3);
  assert_int_equal(ts_int(m, "o_data_type"), ATTN_KV_DTYPE_BFLOAT16);
  expect_bool(m, "prefill_use_trtllm", 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  ts_batch_free(decodes);
}

/* A shared prefix of two pages: the two-level cascade plan. */
static void test_cascade(void** state) {
  static const int32_t q[3] = {1, 1, 4}, s[3] = {40, 33, 36};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(90);
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
  expect_none(m, "prefill_qo_indptr_cpu"); /* the whole batch runs through the cascade */
  expect_none(m, "decode_paged_kv_indptr_cpu");
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
  attn_builder_config_t c = config_for(90);
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
               "attention sinks only on the TRT-LLM path");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  c.layers = NULL;
  c.num_layers = 0;
  /* kernel limits */
  spec.head_size = 96;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "head sizes 64, 128 and 256, got kv_cache_spec->head_size=96");
  spec.head_size = 128;
  spec.block_size = 128;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "block sizes 16, 32 and 64, got kv_cache_spec->block_size=128");
  spec.block_size = 16;
  spec.head_size = 256;
  c.device_capability = 100;
  ASSERT_ERROR(attn_builder_create("FLASHINFER", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "FlashInfer issue 1993");
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
    /* a host mirror that disagrees with the tensor: the host path computes from the validated
     * mirror, never from the unchecked values (they would overrun the indices) */
    static const int32_t q2[2] = {1, 1}, s2[2] = {2, 2};
    ts_batch* lying = ts_batch_make(q2, s2, 2, 16, 1, -1);
    int32_t huge[2] = {4000, 4000};
    int64_t shape[1] = {2};
    attn_tensor_t huge_t = ts_host_tensor(huge, 1, shape, ATTN_DTYPE_INT, 32);
    lying->common.seq_lens_cpu = &lying->seq_t;
    lying->common.seq_lens = &huge_t;
    ASSERT_OK(attn_build(b, 0, &lying->common, 0, &m, NULL));
    ts_expect_i32(m, "paged_kv_indptr", (int32_t[]){0, 1, 2}, 3);
    ts_batch_free(lying);
  }
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ASSERT_ERROR(attn_update_block_table(b, m, batch->common.block_table_tensor,
                                       batch->common.slot_mapping, &m, NULL),
               ATTN_ERR_UNSUPPORTED, "FLASHINFER does not support update_block_table");
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Seeded random batches (decodes first) against a direct computation of the split and of
 * FlashInfer's paged KV layout. */
static void test_random_batches(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(90);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_worked_example),
      cmocka_unit_test(test_pure_decode_and_capture),
      cmocka_unit_test(test_trtllm_paths),
      cmocka_unit_test(test_cascade),
      cmocka_unit_test(test_hyperparameters_and_bad_input),
      cmocka_unit_test(test_random_batches),
  };
  return cmocka_run_group_tests_name("flashinfer", tests, NULL, NULL);
}
