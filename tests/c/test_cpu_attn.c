/* CPU_ATTN: the passthrough and scheduler-input fields, the ISA choice, the group's sliding
 * window, the encoder-only KV layout, and bad input. */
#include "test_support.h"

static void expect_bool(const attn_metadata_t* m, const char* name, int value) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  assert_int_equal(f.kind, ATTN_FIELD_BOOL);
  assert_int_equal(f.int_value, value);
}

static int64_t isa_for(int32_t block_size, int32_t head_size, int32_t explicit_isa) {
  static const int32_t q[1] = {1}, s[1] = {3};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  ts_batch* batch = ts_batch_make(q, s, 1, block_size, 1, -1);
  int64_t isa;
  spec.block_size = block_size;
  spec.head_size = head_size;
  c.cpu_attn_isa = explicit_isa;
  b = ts_builder("CPU_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  isa = ts_int(m, "scheduler_isa");
  attn_builder_destroy(b);
  ts_batch_free(batch);
  return isa;
}

static void test_fields(void** state) {
  static const int32_t q[3] = {1, 4, 10}, s[3] = {30, 20, 10};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder("CPU_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 2, -1);
  attn_metadata_t* m = NULL;
  int32_t level = -1, threshold = -1, update = 1;
  (void)state;
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, ATTN_NO_REORDER); /* one kernel runs mixed batches */
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 0);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "CPU_ATTN");
  assert_int_equal(ts_int(m, "num_actual_tokens"), 15);
  assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  expect_bool(m, "causal", 1);
  expect_bool(m, "use_sdpa_prefill", 0);
  assert_null(ts_tensor(m, "scheduler_metadata"));
  assert_null(ts_tensor(m, "encoder_cache"));
  assert_null(ts_tensor(m, "dynamic_causal"));
  assert_null(ts_tensor(m, "scheduler_dynamic_causal"));
  {  /* vLLM 0.33: a per-request causal tensor is dynamic_causal, and causal is then False */
    int32_t causal[3] = {1, 0, 1};
    int64_t n3[1] = {3};
    attn_tensor_t causal_t = ts_host_tensor(causal, 1, n3, ATTN_DTYPE_INT, 32);
    batch->common.causal_per_request = &causal_t;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    expect_bool(m, "causal", 0);
    expect_bool(m, "scheduler_causal", 0);
    assert_ptr_equal(ts_tensor(m, "dynamic_causal")->data, causal);
    assert_ptr_equal(ts_tensor(m, "scheduler_dynamic_causal")->data, causal);
    batch->common.causal_per_request = NULL;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  }
  assert_int_equal(ts_int(m, "scheduler_num_reqs"), 3);
  assert_int_equal(ts_int(m, "scheduler_num_heads"), 32);
  assert_int_equal(ts_int(m, "scheduler_num_kv_heads"), 8);
  assert_int_equal(ts_int(m, "scheduler_head_dim"), 128);
  assert_int_equal(ts_int(m, "scheduler_dtype"), ATTN_KV_DTYPE_BFLOAT16);
  assert_int_equal(ts_int(m, "scheduler_sliding_window_size"), -1);
  assert_int_equal(ts_int(m, "scheduler_kv_cache_dtype"), ATTN_KV_DTYPE_AUTO);
  expect_bool(m, "scheduler_causal", 1);
  expect_bool(m, "scheduler_enable_kv_split", 1);
  ts_expect_i32(m, "scheduler_seq_lens", s, 3);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_isa_and_window(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_per_layer_params_t layers[2] = {ATTN_PER_LAYER_PARAMS_INIT, ATTN_PER_LAYER_PARAMS_INIT};
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  static const int32_t q[1] = {1}, s[1] = {3};
  ts_batch* batch = ts_batch_make(q, s, 1, 16, 1, -1);
  int64_t isa;
  (void)state;
  /* head sizes that are multiples of 16 but not 32 run on vec16; so do block sizes that are
   * not multiples of 32 */
  assert_int_equal(isa_for(32, 80, ATTN_CPU_ISA_DETECT), ATTN_CPU_ISA_VEC16);
  assert_int_equal(isa_for(16, 128, ATTN_CPU_ISA_DETECT), ATTN_CPU_ISA_VEC16);
  isa = isa_for(32, 128, ATTN_CPU_ISA_DETECT); /* this host: amx with AMX tiles, else vec */
#if defined(__x86_64__)
  assert_true(isa == ATTN_CPU_ISA_AMX || isa == ATTN_CPU_ISA_VEC);
#elif defined(__aarch64__)
  assert_int_equal(isa, ATTN_CPU_ISA_NEON);
#endif
  assert_int_equal(isa_for(32, 128, ATTN_CPU_ISA_VXE), ATTN_CPU_ISA_VXE); /* the caller's choice */
  /* the group's window: one value for every layer, else -1 (window_left is the window - 1) */
  layers[0].window_left = layers[1].window_left = 511;
  c.layers = layers;
  c.num_layers = 2;
  b = ts_builder("CPU_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "scheduler_sliding_window_size"), 512);
  attn_builder_destroy(b);
  layers[1].window_left = -1;
  b = ts_builder("CPU_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "scheduler_sliding_window_size"), -1);
  attn_builder_destroy(b);
  c.layers = NULL;
  c.num_layers = 0;
  spec.kind = ATTN_KV_SLIDING_WINDOW;
  spec.sliding_window = 64;
  b = ts_builder("CPU_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "scheduler_sliding_window_size"), 64);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_encoder_only(void** state) {
  static const int32_t q[3] = {5, 20, 1}, s[3] = {5, 20, 1};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 2, 28);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  const int32_t* bt;
  const int64_t* slots;
  const uint16_t* cache;
  int64_t k, i;
  (void)state;
  spec.kind = ATTN_KV_ENCODER_ONLY;
  b = ts_builder("CPU_ATTN", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "EncoderOnlyAttention_CPU_ATTN");
  expect_bool(m, "causal", 0);
  /* blocks 1, 2, 1 from 0: starts 0, 1, 3; each row start + j for j < 2 */
  t = ts_tensor(m, "block_table");
  assert_int_equal(t->shape[0], 3);
  assert_int_equal(t->shape[1], 2);
  bt = (const int32_t*)t->data;
  assert_int_equal(bt[0], 0);
  assert_int_equal(bt[1], 1);
  assert_int_equal(bt[t->strides[0]], 1);
  assert_int_equal(bt[t->strides[0] + 1], 2);
  assert_int_equal(bt[2 * t->strides[0]], 3);
  t = ts_tensor(m, "slot_mapping");
  assert_int_equal(t->shape[0], 28);
  slots = (const int64_t*)t->data;
  for (k = 0; k < 5; ++k) assert_int_equal(slots[k], k);
  for (k = 0; k < 20; ++k) assert_int_equal(slots[5 + k], 16 + k);
  assert_int_equal(slots[25], 48);
  assert_int_equal(slots[26], ATTN_PAD_SLOT_ID);
  assert_int_equal(slots[27], ATTN_PAD_SLOT_ID);
  assert_int_equal(batch->slots[0] != 0 || batch->slots[1] != 0, 1); /* the caller's is untouched */
  /* vLLM 0.33 writes the slot mapping from `positions` through the encoder block table
   * (compute_slot_mapping_kernel_impl): block_table[r][pos / 16] * 16 + pos % 16 */
  {
    int64_t positions[28];
    int64_t n28[1] = {28};
    attn_tensor_t positions_t = ts_host_tensor(positions, 1, n28, ATTN_DTYPE_INT, 64);
    for (k = 0; k < 28; ++k) positions[k] = 0;
    for (k = 0; k < 5; ++k) positions[k] = 4 - k;        /* request 0, reversed */
    for (k = 0; k < 20; ++k) positions[5 + k] = 19 - k;  /* request 1, reversed: blocks 1, 2 */
    positions[25] = 0;
    batch->common.positions = &positions_t;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    slots = (const int64_t*)ts_tensor(m, "slot_mapping")->data;
    for (k = 0; k < 5; ++k) assert_int_equal(slots[k], 4 - k);
    for (k = 0; k < 20; ++k) assert_int_equal(slots[5 + k], 16 + 19 - k);
    assert_int_equal(slots[25], 48);
    assert_int_equal(slots[26], ATTN_PAD_SLOT_ID);
    assert_int_equal(slots[27], ATTN_PAD_SLOT_ID);
    batch->common.positions = NULL;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  }
  t = ts_tensor(m, "encoder_cache");
  assert_int_equal(t->ndim, 4);
  assert_int_equal(t->shape[0], 4);
  assert_int_equal(t->shape[1], 8);
  assert_int_equal(t->shape[2], 16);
  assert_int_equal(t->shape[3], 256);
  assert_int_equal(t->dtype.code, ATTN_DTYPE_BFLOAT);
  cache = (const uint16_t*)t->data;
  for (i = 0; i < 4 * 8 * 16 * 256; ++i)
    if (cache[i] != 0) fail_msg("encoder_cache[%lld] is not zero", (long long)i);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_bad_input(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  (void)state;
  c.device.device_type = ATTN_DEVICE_CUDA;
  ASSERT_ERROR(attn_builder_workspace_size("CPU_ATTN", &spec, &c, &(size_t){0}),
               ATTN_ERR_UNSUPPORTED, "CPU_ATTN builds metadata for the host; config->device is cuda:0");
  c.device.device_type = ATTN_DEVICE_CPU;
  spec.head_size = 48;
  ASSERT_ERROR(attn_builder_create("CPU_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "got kv_cache_spec->head_size=48");
  spec.head_size = 80;
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  ASSERT_ERROR(attn_builder_create("CPU_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "fp8 KV caches only with head sizes that are multiples of 32");
  c.cache_dtype = ATTN_KV_DTYPE_AUTO;
  c.cpu_attn_isa = 8;
  ASSERT_ERROR(attn_builder_create("CPU_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->cpu_attn_isa=8 is not an ATTN_CPU_ISA_* value");
  c.cpu_attn_isa = 0;
  spec.kind = ATTN_KV_MAMBA;
  ASSERT_ERROR(attn_builder_create("CPU_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "CPU_ATTN does not build metadata for MAMBA");
  assert_ptr_equal(b, UNTOUCHED_PTR);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields),
      cmocka_unit_test(test_isa_and_window),
      cmocka_unit_test(test_encoder_only),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests_name("cpu_attn", tests, NULL, NULL);
}
