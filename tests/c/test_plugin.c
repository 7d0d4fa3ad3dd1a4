/* attn_plugin_load / unload / name: the example plugin end to end, a plugin built for another
 * ABI major, and plugins that are malformed or misbehave. */
#include <dlfcn.h>

#include "test_support.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define VERSION_STRING STR(ATTN_VERSION_MAJOR) "." STR(ATTN_VERSION_MINOR)

#ifndef ATTN_EXAMPLE_PLUGIN
#error "ATTN_EXAMPLE_PLUGIN must name libattn_example_plugin.so"
#endif

static char variant_path[1024];

static const char* variant(const char* name) {
  snprintf(variant_path, sizeof variant_path, "%s/libtest_plugin_%s.so", ATTN_TEST_PLUGIN_DIR,
           name);
  return variant_path;
}

static size_t index_of(const char* name) {
  size_t i, n = attn_backend_count();
  for (i = 0; i < n; ++i) {
    const char* got = NULL;
    ASSERT_OK(attn_backend_name(i, &got));
    if (strcmp(got, name) == 0) return i;
  }
  return (size_t)-1;
}

static void test_example_plugin(void** state) {
  const size_t before = attn_backend_count();
  attn_plugin_t* plugin = NULL;
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = NULL;
  attn_metadata_t* m = NULL;
  int32_t level = -1, threshold = -1, update = -1;
  static const int32_t q[3] = {1, 1, 7}, s[3] = {20, 30, 40}, ctx[3] = {19, 29, 33};
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 4, -1);
  ts_batch* other = ts_batch_make(q, s, 3, 16, 4, -1);
  (void)state;
  ASSERT_OK(attn_plugin_load(ATTN_EXAMPLE_PLUGIN, &plugin));
  assert_string_equal(attn_plugin_name(plugin), "example_plugin");
  assert_int_equal(attn_backend_count(), before + 1);
  assert_int_equal(index_of("EXAMPLE_PAGED"), before); /* after the built-ins */
  {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    ASSERT_OK(attn_backend_info(before, &info));
    assert_string_equal(info.name, "EXAMPLE_PAGED");
    assert_int_equal(info.origin, ATTN_BACKEND_PLUGIN);
    assert_string_equal(info.vllm_release, "plugin");
    /* a plugin's table does not say which kinds it accepts: every one */
    assert_int_equal(info.kv_cache_kinds, (1u << (ATTN_KV_CIRCULAR_BUFFER + 1)) - 1u);
    ASSERT_OK(attn_backend_info(0, &info));
    assert_int_equal(info.origin, ATTN_BACKEND_BUILTIN);
  }
  ASSERT_OK(attn_backend_cudagraph_support("EXAMPLE_PAGED", &spec, &config, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  ASSERT_OK(attn_builder_create("EXAMPLE_PAGED", &spec, &config, &b));
  assert_string_equal(attn_builder_backend_name(b), "EXAMPLE_PAGED");
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 1);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "EXAMPLE_PAGED");
  assert_int_equal(attn_metadata_field_count(m), 8);
  ts_expect_i32(m, "context_lens", ctx, 3);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "max_query_len"), 7);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  /* update_block_table, done by libattn for plugins that declare the two fields */
  ASSERT_OK(attn_update_block_table(b, m, &other->bt_t, &other->sm_t, &m, NULL));
  assert_ptr_equal(ts_tensor(m, "block_table")->data, other->bt);
  ts_expect_i32(m, "context_lens", ctx, 3);
  {
    /* a clone copies the plugin's own buffers (context_lens) and keeps views of the inputs
     * (seq_lens); the next build rewrites the former, not the clone's copy */
    static const int32_t q2[3] = {1, 1, 1}, s2[3] = {5, 6, 7}, ctx2[3] = {4, 5, 6};
    ts_batch* next = ts_batch_make(q2, s2, 3, 16, 4, -1);
    attn_metadata_t* kept = NULL;
    attn_metadata_t* m2 = NULL;
    ASSERT_OK(attn_metadata_clone(m, &kept));
    assert_ptr_not_equal(ts_tensor(kept, "context_lens")->data, ts_tensor(m, "context_lens")->data);
    assert_ptr_equal(ts_tensor(kept, "seq_lens")->data, batch->seq);
    ASSERT_OK(attn_build(b, 0, &next->common, 0, &m2, NULL));
    ts_expect_i32(m2, "context_lens", ctx2, 3);
    ts_expect_i32(kept, "context_lens", ctx, 3);
    attn_metadata_destroy(kept);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    ts_batch_free(next);
  }
  /* its level is NEVER: no capture */
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "EXAMPLE_PAGED has CUDA graph support NEVER");
  /* a plugin's own refusal comes back with its code and message */
  ASSERT_ERROR(attn_build(b, 16, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "plugin backend 'EXAMPLE_PAGED' build failed: EXAMPLE_PAGED has no cascade attention");
  /* libattn validates the batch before the plugin sees it */
  batch->seq[0] = 0;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->seq_lens[0]=0 is less than its query length 1");
  batch->seq[0] = 20;
  /* not while a builder exists */
  ASSERT_ERROR(attn_plugin_unload(plugin), ATTN_ERR_BUSY,
               "backend 'EXAMPLE_PAGED' still has 1 live builder(s)");
  assert_int_equal(attn_backend_count(), before + 1);
  attn_builder_destroy(b);
  ASSERT_OK(attn_plugin_unload(plugin));
  assert_int_equal(attn_backend_count(), before);
  assert_int_equal(index_of("EXAMPLE_PAGED"), (size_t)-1);
  ASSERT_ERROR(attn_builder_create("EXAMPLE_PAGED", &spec, &config, &b), ATTN_ERR_NOT_FOUND,
               "unknown backend 'EXAMPLE_PAGED'");
  ASSERT_OK(attn_plugin_unload(NULL));
  assert_string_equal(attn_plugin_name(NULL), "");
  ts_batch_free(batch);
  ts_batch_free(other);
}

static void test_duplicate_and_reload(void** state) {
  attn_plugin_t* first = NULL;
  attn_plugin_t* second = (attn_plugin_t*)UNTOUCHED_PTR;
  const size_t before = attn_backend_count();
  (void)state;
  ASSERT_OK(attn_plugin_load(ATTN_EXAMPLE_PLUGIN, &first));
  ASSERT_ERROR(attn_plugin_load(ATTN_EXAMPLE_PLUGIN, &second), ATTN_ERR_INVALID_ARGUMENT,
               "backend 'EXAMPLE_PAGED' is already registered");
  assert_ptr_equal(second, UNTOUCHED_PTR);
  assert_int_equal(attn_backend_count(), before + 1);
  ASSERT_OK(attn_plugin_unload(first));
  ASSERT_OK(attn_plugin_load(ATTN_EXAMPLE_PLUGIN, &first)); /* loads again after an unload */
  ASSERT_OK(attn_plugin_unload(first));
  assert_int_equal(attn_backend_count(), before);
}

static void test_refused_plugins(void** state) {
  attn_plugin_t* p = (attn_plugin_t*)UNTOUCHED_PTR;
  char expected[128];
  const size_t before = attn_backend_count();
  (void)state;
  ASSERT_ERROR(attn_plugin_load(ATTN_EXAMPLE_PLUGIN_ABI2, &p), ATTN_ERR_ABI_MISMATCH,
               "plugin 'example_plugin' (" ATTN_EXAMPLE_PLUGIN_ABI2
               ") was built for libattn ABI 2." STR(ATTN_VERSION_MINOR) "; this library is " VERSION_STRING " and loads plugins of ABI "
               "major 1 only");
  ASSERT_ERROR(attn_plugin_load("/nonexistent/libnothing.so", &p), ATTN_ERR_NOT_FOUND,
               "cannot load plugin '/nonexistent/libnothing.so'");
  ASSERT_ERROR(attn_plugin_load(variant("no_entry"), &p), ATTN_ERR_NOT_FOUND,
               "does not export attn_plugin_entry");
  ASSERT_ERROR(attn_plugin_load(variant("null_table"), &p), ATTN_ERR_INVALID_ARGUMENT,
               "attn_plugin_entry() returned NULL");
  snprintf(expected, sizeof expected, "needs libattn >= %d.%d; this library is %d.%d",
           ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR + 1, ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR);
  ASSERT_ERROR(attn_plugin_load(variant("bad_minor"), &p), ATTN_ERR_ABI_MISMATCH, expected);
  ASSERT_ERROR(attn_plugin_load(variant("no_build"), &p), ATTN_ERR_INVALID_ARGUMENT,
               "plugin 'test_plugin' backend 0 ('TEST_NO_BUILD') has no build callback");
  ASSERT_ERROR(attn_plugin_load(variant("dup_field"), &p), ATTN_ERR_INVALID_ARGUMENT,
               "declares field 'num_reqs' twice");
  ASSERT_ERROR(attn_plugin_load(variant("update_no_fields"), &p), ATTN_ERR_INVALID_ARGUMENT,
               "supports update_block_table but has no 'block_table' and 'slot_mapping' fields");
  ASSERT_ERROR(attn_plugin_load(NULL, &p), ATTN_ERR_INVALID_ARGUMENT, "path is NULL");
  ASSERT_ERROR(attn_plugin_load(ATTN_EXAMPLE_PLUGIN, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  assert_ptr_equal(p, UNTOUCHED_PTR);
  assert_int_equal(attn_backend_count(), before); /* nothing half-registered */
}

static void test_misbehaving_plugin(void** state) {
  attn_plugin_t* p = NULL;
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  attn_metadata_t* m = NULL;
  int32_t level = -1;
  static const int32_t q[2] = {1, 1}, s[2] = {5, 6};
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 1, -1);
  void* handle;
  const int32_t* (*codes)(void);
  (void)state;
  ASSERT_OK(attn_plugin_load(variant("misbehaving"), &p));
  /* a failing build: its code and message */
  b = ts_builder("TEST_FAILING", &spec, &config);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "plugin backend 'TEST_FAILING' build failed: the test backend refuses every batch");
  attn_builder_destroy(b);
  /* garbage through the setters is refused field by field; the build itself succeeds */
  b = ts_builder("TEST_GARBAGE", &spec, &config);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_reqs"), 2);
  assert_int_equal(attn_metadata_field_count(m), 1);
  handle = dlopen(variant("misbehaving"), RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(handle);
  *(void**)(&codes) = dlsym(handle, "test_plugin_garbage_codes");
  assert_non_null(codes);
  assert_int_equal(codes()[0], ATTN_ERR_NOT_FOUND);        /* undeclared name */
  assert_int_equal(codes()[1], ATTN_ERR_INVALID_ARGUMENT); /* ndim 99 */
  assert_int_equal(codes()[2], ATTN_ERR_INVALID_ARGUMENT); /* negative shape */
  assert_int_equal(codes()[3], ATTN_ERR_INVALID_ARGUMENT); /* NULL name */
  assert_int_equal(codes()[4], ATTN_ERR_INVALID_ARGUMENT); /* NULL data, 5 elements */
  assert_int_equal(codes()[5], ATTN_ERR_INVALID_ARGUMENT); /* stride 2^61: extent overflows */
  assert_int_equal(codes()[6], ATTN_ERR_INVALID_ARGUMENT); /* misaligned int32 */
  {
    /* nothing of the garbage was kept: a clone copies no NULL or wild view */
    attn_metadata_t* kept = NULL;
    ASSERT_OK(attn_metadata_clone(m, &kept));
    assert_int_equal(ts_int(kept, "num_reqs"), 2);
    attn_metadata_destroy(kept);
  }
  dlclose(handle);
  attn_builder_destroy(b);
  /* an out-of-range level is the plugin's bug, reported as such */
  ASSERT_ERROR(attn_backend_cudagraph_support("TEST_BAD_LEVEL", &spec, &config, &level),
               ATTN_ERR_INTERNAL, "plugin backend 'TEST_BAD_LEVEL' returned CUDA graph level 7 (not 0..3)");
  b = (attn_builder_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_builder_create("TEST_BAD_LEVEL", &spec, &config, &b), ATTN_ERR_INTERNAL,
               "returned CUDA graph level 7");
  ASSERT_ERROR(attn_builder_create("TEST_CREATE_FAILS", &spec, &config, &b), ATTN_ERR_OUT_OF_MEMORY,
               "plugin backend 'TEST_CREATE_FAILS' create failed: no memory for the test");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  ASSERT_OK(attn_plugin_unload(p)); /* no builder left behind by the failed creates */
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_example_plugin),
      cmocka_unit_test(test_duplicate_and_reload),
      cmocka_unit_test(test_refused_plugins),
      cmocka_unit_test(test_misbehaving_plugin),
  };
  return cmocka_run_group_tests_name("plugin", tests, NULL, NULL);
}
