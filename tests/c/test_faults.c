/* Injected faults: an allocator that fails on its Nth call at every step of create -> build ->
 * clone gives a clean out-of-memory error and leaks nothing; a C++ plugin that throws is
 * contained; the CUDA path without a GPU reports the runtime's own reason. */
#include "test_support.h"

typedef struct {
  int calls, fail_at, live;
} faulty;

static void* faulty_alloc(void* user, size_t bytes, size_t alignment, attn_device_t device) {
  faulty* f = (faulty*)user;
  void* p = NULL;
  (void)alignment;
  (void)device;
  if (++f->calls == f->fail_at) return NULL;
  if (posix_memalign(&p, 256, bytes) != 0) return NULL;
  f->live++;
  return p;
}

static void faulty_free(void* user, void* ptr, size_t bytes, attn_device_t device) {
  faulty* f = (faulty*)user;
  (void)bytes;
  (void)device;
  f->live--;
  free(ptr);
}

static void test_allocator_fails_at_every_step(void** state) {
  static const int32_t q[3] = {1, 1, 6}, s[3] = {40, 50, 60};
  int n, reached_clone = 0, completed = 0;
  (void)state;
  for (n = 1; n <= 8; ++n) { /* create: 1 allocation; clone: 4 (each builder buffer once) */
    faulty f = {0, n, 0};
    attn_allocator_t a = ATTN_ALLOCATOR_INIT;
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t config = ts_config();
    attn_builder_t* b = NULL;
    attn_metadata_t* m = NULL;
    attn_metadata_t* kept = NULL;
    attn_error_t* err;
    ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
    a.alloc = faulty_alloc;
    a.free = faulty_free;
    a.user_data = &f;
    config.allocator = &a;
    err = attn_builder_create("FLASH_ATTN", &spec, &config, &b);
    if (err != NULL) {
      assert_int_equal(attn_error_code(err), ATTN_ERR_OUT_OF_MEMORY);
      assert_int_equal(n, 1);
      attn_error_destroy(err);
    } else {
      ASSERT_OK(attn_build(b, 16, &batch->common, 0, &m, NULL)); /* builds never allocate */
      reached_clone = 1;
      err = attn_metadata_clone(m, &kept); /* one allocation per builder-owned tensor */
      if (err != NULL) {
        assert_int_equal(attn_error_code(err), ATTN_ERR_OUT_OF_MEMORY);
        assert_non_null(strstr(attn_error_message(err), "to clone field"));
        attn_error_destroy(err);
      } else {
        ++completed;
        ts_expect_i32(kept, "suffix_kv_lens", (int32_t[]){24, 34, 44}, 3);
        attn_metadata_destroy(kept);
      }
      attn_builder_destroy(b);
    }
    assert_int_equal(f.live, 0); /* every successful allocation was released */
    ts_batch_free(batch);
  }
  assert_true(reached_clone);
  assert_true(completed > 0); /* past the last allocation, everything succeeds */
}

static void test_throwing_plugin(void** state) {
  attn_plugin_t* p = NULL;
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = NULL;
  attn_metadata_t* m = NULL;
  int32_t level = -1;
  static const int32_t q[1] = {1}, s[1] = {4};
  ts_batch* batch = ts_batch_make(q, s, 1, 16, 0, -1);
  (void)state;
  ASSERT_OK(attn_plugin_load(ATTN_TEST_PLUGIN_DIR "/libtest_plugin_throwing.so", &p));
  b = ts_builder("TEST_THROWS", &spec, &config);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INTERNAL,
               "internal error: boom from the plugin");
  /* the builder is not left busy */
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INTERNAL, "boom");
  config.max_num_seqs = 13;
  ASSERT_ERROR(attn_backend_cudagraph_support("TEST_THROWS", &spec, &config, &level),
               ATTN_ERR_INTERNAL, "internal error: unknown exception");
  attn_builder_destroy(b);
  ASSERT_OK(attn_plugin_unload(p));
  ts_batch_free(batch);
}

static void test_cuda_error_is_reported(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  int32_t n = -1;
  attn_error_t* count_err = attn_device_count(ATTN_DEVICE_CUDA, &n);
  attn_error_t* err;
  (void)state;
  config.device.device_type = ATTN_DEVICE_CUDA;
  if (count_err != NULL) {
    /* built without CUDA */
    assert_int_equal(attn_error_code(count_err), ATTN_ERR_UNSUPPORTED);
    attn_error_destroy(count_err);
    ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_UNSUPPORTED,
                 "libattn was built without CUDA support");
  } else if (n == 0) {
    /* CUDA compiled in, no GPU: the runtime's own error name and text */
    err = attn_builder_create("FLASH_ATTN", &spec, &config, &b);
    assert_non_null(err);
    assert_int_equal(attn_error_code(err), ATTN_ERR_CUDA);
    assert_non_null(strstr(attn_error_message(err), "0 CUDA device(s) are visible: cuda"));
    printf("CUDA error as reported: %s\n", attn_error_message(err));
    attn_error_destroy(err);
  } else {
    config.device.device_id = n; /* one past the last GPU */
    ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_CUDA,
                 "CUDA device(s) are visible");
  }
  assert_ptr_equal(b, UNTOUCHED_PTR);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_allocator_fails_at_every_step),
      cmocka_unit_test(test_throwing_plugin),
      cmocka_unit_test(test_cuda_error_is_reported),
  };
  return cmocka_run_group_tests_name("faults", tests, NULL, NULL);
}
