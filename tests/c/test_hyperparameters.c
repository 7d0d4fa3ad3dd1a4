/* attn_infer_global_hyperparameters (vLLM's PerLayerParameters). */
#include "test_support.h"

static attn_per_layer_params_t layer(int32_t window_left, int has_cap, double cap, double scale,
                                     int sinks) {
  attn_per_layer_params_t p = ATTN_PER_LAYER_PARAMS_INIT;
  p.window_left = window_left;
  p.has_logits_soft_cap = has_cap;
  p.logits_soft_cap = cap;
  p.sm_scale = scale;
  p.has_sinks = sinks;
  return p;
}

static void infer(const attn_per_layer_params_t* layers, size_t n, attn_per_layer_params_t* g,
                  int32_t* same_window, int32_t* same_all) {
  *g = layer(0, 0, 0, 0, 0);
  ASSERT_OK(attn_infer_global_hyperparameters(layers, n, g, same_window, same_all));
}

static void test_all_same(void** state) {
  attn_per_layer_params_t layers[3], g;
  int32_t w = -1, a = -1;
  (void)state;
  layers[0] = layers[1] = layers[2] = layer(127, 1, 30.0, 0.125, 0);
  infer(layers, 3, &g, &w, &a);
  assert_int_equal(g.window_left, 127);
  assert_int_equal(g.has_logits_soft_cap, 1);
  assert_true(g.logits_soft_cap == 30.0);
  assert_true(g.sm_scale == 0.125);
  assert_int_equal(w, 1);
  assert_int_equal(a, 1);
}

static void test_differences(void** state) {
  attn_per_layer_params_t layers[2], g;
  int32_t w = -1, a = -1;
  (void)state;
  /* gemma-style: alternating sliding and global layers */
  layers[0] = layer(4095, 0, 0, 0.0625, 0);
  layers[1] = layer(-1, 0, 0, 0.0625, 0);
  infer(layers, 2, &g, &w, &a);
  assert_int_equal(g.window_left, 4095); /* the first layer's */
  assert_int_equal(w, 0);
  assert_int_equal(a, 0);
  /* same windows, soft cap None vs a value */
  layers[1] = layer(4095, 1, 0.0, 0.0625, 0);
  infer(layers, 2, &g, &w, &a);
  assert_int_equal(w, 1);
  assert_int_equal(a, 0);
  assert_int_equal(g.has_logits_soft_cap, 0);
  /* sinks differ */
  layers[1] = layer(4095, 0, 0, 0.0625, 1);
  infer(layers, 2, &g, &w, &a);
  assert_int_equal(a, 0);
  /* sm_scale differs */
  layers[1] = layer(4095, 0, 0, 0.125, 0);
  infer(layers, 2, &g, &w, &a);
  assert_int_equal(w, 1);
  assert_int_equal(a, 0);
  /* an unset soft cap's value is not compared */
  layers[0] = layer(-1, 0, 1.0, 1.0, 0);
  layers[1] = layer(-1, 0, 2.0, 1.0, 0);
  infer(layers, 2, &g, &w, &a);
  assert_int_equal(a, 1);
}

static void test_bad_input(void** state) {
  attn_per_layer_params_t layers[2], g = ATTN_PER_LAYER_PARAMS_INIT;
  int32_t w = -7, a = -7;
  (void)state;
  layers[0] = layers[1] = layer(3, 0, 0, 1.0, 0);
  g.window_left = 99;
  ASSERT_ERROR(attn_infer_global_hyperparameters(layers, 0, &g, &w, &a), ATTN_ERR_INVALID_ARGUMENT,
               "No attention layers found in the model");
  ASSERT_ERROR(attn_infer_global_hyperparameters(NULL, 2, &g, &w, &a), ATTN_ERR_INVALID_ARGUMENT,
               "layers is NULL but its count is 2");
  layers[1].struct_size = 8;
  ASSERT_ERROR(attn_infer_global_hyperparameters(layers, 2, &g, &w, &a), ATTN_ERR_INVALID_ARGUMENT,
               "layers[1].struct_size=8 differs from layers[0].struct_size=");
  layers[1].struct_size = ATTN_PER_LAYER_PARAMS_STRUCT_SIZE;
  layers[0].window_left = -2;
  ASSERT_ERROR(attn_infer_global_hyperparameters(layers, 2, &g, &w, &a), ATTN_ERR_INVALID_ARGUMENT,
               "layers[0].window_left=-2 is below -1");
  layers[0].window_left = 3;
  ASSERT_ERROR(attn_infer_global_hyperparameters(layers, 2, NULL, &w, &a), ATTN_ERR_INVALID_ARGUMENT, "out_global is NULL");
  ASSERT_ERROR(attn_infer_global_hyperparameters(layers, 2, &g, NULL, &a), ATTN_ERR_INVALID_ARGUMENT, "out_has_same_window_lefts is NULL");
  ASSERT_ERROR(attn_infer_global_hyperparameters(layers, 2, &g, &w, NULL), ATTN_ERR_INVALID_ARGUMENT, "out_has_same_all_params is NULL");
  g.struct_size = 4;
  ASSERT_ERROR(attn_infer_global_hyperparameters(layers, 2, &g, &w, &a), ATTN_ERR_INVALID_ARGUMENT, "out_global->struct_size=4");
  assert_int_equal(g.window_left, 99);
  assert_int_equal(w, -7);
  assert_int_equal(a, -7);
}

static void test_array_of_larger_structs(void** state) {
  /* entries a newer header made bigger need a library at least as new (ATTN_CHECK_VERSION):
   * the element stride (layers[0].struct_size) must be a published size, or a huge struct_size
   * would step past the caller's array (issue 15, class 3) */
  struct big {
    attn_per_layer_params_t p;
    double future;
  } layers[2];
  attn_per_layer_params_t g = ATTN_PER_LAYER_PARAMS_INIT;
  int32_t w = -1, a = -1;
  static const size_t bad_sizes[] = {sizeof(struct big), (size_t)1 << 30, (size_t)1 << 32,
                                     ATTN_PER_LAYER_PARAMS_STRUCT_SIZE + 8};
  size_t k;
  (void)state;
  layers[0].p = layer(7, 0, 0, 1.0, 0);
  layers[1].p = layer(9, 0, 0, 1.0, 0);
  for (k = 0; k < sizeof bad_sizes / sizeof bad_sizes[0]; ++k) {
    char expected[128];
    layers[0].p.struct_size = layers[1].p.struct_size = bad_sizes[k];
    snprintf(expected, sizeof expected, "layers[0].struct_size=%zu is not a published size",
             bad_sizes[k]);
    ASSERT_ERROR(attn_infer_global_hyperparameters(&layers[0].p, 2, &g, &w, &a),
                 ATTN_ERR_INVALID_ARGUMENT, expected);
    assert_int_equal(w, -1);
  }
  /* and the builder config's layers the same way */
  {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = ts_config();
    attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
    c.layers = &layers[0].p;
    c.num_layers = 2;
    layers[0].p.struct_size = layers[1].p.struct_size = (size_t)1 << 30;
    ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
                 "config->layers[0].struct_size=1073741824 is not a published size");
    assert_ptr_equal(b, UNTOUCHED_PTR);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_same),
      cmocka_unit_test(test_differences),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_array_of_larger_structs),
  };
  return cmocka_run_group_tests_name("hyperparameters", tests, NULL, NULL);
}
