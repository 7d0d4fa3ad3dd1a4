/* Threads: a second call on a busy builder gets ATTN_ERR_BUSY; distinct builders build at once;
 * registry queries run while plugins are loaded and unloaded. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "test_support.h"

typedef struct {
  attn_builder_t* builder;
  const attn_common_metadata_t* common;
  attn_error_t* result;
} build_job;

static void* run_build(void* arg) {
  build_job* job = (build_job*)arg;
  attn_metadata_t* m = NULL;
  job->result = attn_build(job->builder, 0, job->common, 0, &m, NULL);
  return NULL;
}

static void test_busy_builder(void** state) {
  attn_plugin_t* plugin = NULL;
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b;
  attn_metadata_t* m = (attn_metadata_t*)UNTOUCHED_PTR;
  static const int32_t q[2] = {1, 1}, s[2] = {5, 6};
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 1, -1);
  void* handle;
  int (*entered)(void);
  void (*release)(void);
  void (*reset)(void);
  pthread_t thread;
  build_job job;
  int32_t level = -1;
  (void)state;
  ASSERT_OK(attn_plugin_load(ATTN_TEST_PLUGIN_DIR "/libtest_plugin_misbehaving.so", &plugin));
  handle = dlopen(ATTN_TEST_PLUGIN_DIR "/libtest_plugin_misbehaving.so", RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(handle);
  *(void**)(&entered) = dlsym(handle, "test_plugin_blocking_entered");
  *(void**)(&release) = dlsym(handle, "test_plugin_blocking_release");
  *(void**)(&reset) = dlsym(handle, "test_plugin_blocking_reset");
  assert_true(entered && release && reset);
  reset();
  b = ts_builder("TEST_BLOCKING", &spec, &config);
  job.builder = b;
  job.common = &batch->common;
  job.result = NULL;
  assert_int_equal(pthread_create(&thread, NULL, run_build, &job), 0);
  while (!entered()) sched_yield(); /* the first build is inside the plugin now */
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_BUSY,
               "builder 'TEST_BLOCKING' is in use by another call");
  ASSERT_ERROR(attn_build_for_drafting(b, &batch->common, 0, &m, NULL), ATTN_ERR_BUSY, "in use");
  assert_ptr_equal(m, UNTOUCHED_PTR);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level)); /* queries are not builds */
  release();
  assert_int_equal(pthread_join(thread, NULL), 0);
  ASSERT_OK(job.result);
  reset();
  release();
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL)); /* free again */
  assert_int_equal(ts_int(m, "num_reqs"), 2);
  attn_builder_destroy(b);
  dlclose(handle);
  ASSERT_OK(attn_plugin_unload(plugin));
  ts_batch_free(batch);
}

typedef struct {
  attn_builder_t* builder;
  attn_error_t* result;
} create_job;

static void* run_create(void* arg) {
  create_job* job = (create_job*)arg;
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  job->result = attn_builder_create("TEST_BLOCKING_LEVEL", &spec, &config, &job->builder);
  return NULL;
}

/* An unload while a builder of the plugin is being created (between the lookup of its backend
 * and the builder's existence) is BUSY, as with a live builder (issue 15, class 7): before the
 * fix the count rose only once the builder existed, and the unload succeeded. */
static void test_unload_during_create(void** state) {
  attn_plugin_t* plugin = NULL;
  void* handle;
  void (*arm)(void);
  int (*entered)(void);
  void (*release)(void);
  pthread_t thread;
  create_job job = {NULL, NULL};
  (void)state;
  ASSERT_OK(attn_plugin_load(ATTN_TEST_PLUGIN_DIR "/libtest_plugin_misbehaving.so", &plugin));
  handle = dlopen(ATTN_TEST_PLUGIN_DIR "/libtest_plugin_misbehaving.so", RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(handle);
  *(void**)(&arm) = dlsym(handle, "test_plugin_level_arm");
  *(void**)(&entered) = dlsym(handle, "test_plugin_level_entered");
  *(void**)(&release) = dlsym(handle, "test_plugin_level_release");
  assert_true(arm && entered && release);
  arm();
  assert_int_equal(pthread_create(&thread, NULL, run_create, &job), 0);
  while (!entered()) sched_yield(); /* the create is inside the plugin, no builder yet */
  ASSERT_ERROR(attn_plugin_unload(plugin), ATTN_ERR_BUSY,
               "backend 'TEST_BLOCKING_LEVEL' still has 1 live builder(s)");
  release();
  assert_int_equal(pthread_join(thread, NULL), 0);
  ASSERT_OK(job.result);
  ASSERT_ERROR(attn_plugin_unload(plugin), ATTN_ERR_BUSY, "live builder(s)");
  attn_builder_destroy(job.builder);
  dlclose(handle);
  ASSERT_OK(attn_plugin_unload(plugin));
}

typedef struct {
  uint64_t seed;
  int failures;
} worker;

/* One thread, one builder: 200 cascade builds of random batches, each checked. */
static void* build_many(void* arg) {
  worker* w = (worker*)arg;
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = NULL;
  int iter;
  if (attn_builder_create("FLASH_ATTN", &spec, &config, &b) != NULL) {
    w->failures++;
    return NULL;
  }
  for (iter = 0; iter < 200; ++iter) {
    int32_t q[32], s[32];
    int64_t n = ts_rand_range(&w->seed, 1, 32), r, total = 0, tokens = -1;
    ts_batch* batch;
    attn_metadata_t* m = NULL;
    const attn_tensor_t* suffix = NULL;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&w->seed, 1, 8);
      s[r] = q[r] + (int32_t)ts_rand_range(&w->seed, 16, 500);
      total += q[r];
    }
    batch = ts_batch_make(q, s, n, 16, 0, -1);
    if (attn_build(b, 16, &batch->common, 0, &m, NULL) != NULL ||
        attn_metadata_get_int(m, "num_actual_tokens", &tokens) != NULL || tokens != total ||
        attn_metadata_get_tensor(m, "suffix_kv_lens", &suffix) != NULL || suffix == NULL) {
      w->failures++;
    } else {
      for (r = 0; r < n; ++r)
        if (((const int32_t*)suffix->data)[r] != s[r] - 16) w->failures++;
    }
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
  return NULL;
}

static void test_builders_in_parallel(void** state) {
  enum { kThreads = 8 };
  pthread_t threads[kThreads];
  worker workers[kThreads];
  int i;
  (void)state;
  for (i = 0; i < kThreads; ++i) {
    workers[i].seed = 1000u + (uint64_t)i;
    workers[i].failures = 0;
    assert_int_equal(pthread_create(&threads[i], NULL, build_many, &workers[i]), 0);
  }
  for (i = 0; i < kThreads; ++i) {
    assert_int_equal(pthread_join(threads[i], NULL), 0);
    assert_int_equal(workers[i].failures, 0);
  }
}

static atomic_int g_stop;

static void* load_unload(void* arg) {
  int i, *loaded = (int*)arg;
  for (i = 0; i < 50; ++i) {
    attn_plugin_t* p = NULL;
    attn_error_t* err = attn_plugin_load(ATTN_EXAMPLE_PLUGIN, &p);
    if (err == NULL) {
      (*loaded)++;
      attn_error_destroy(attn_plugin_unload(p));
    } else {
      attn_error_destroy(err); /* another thread holds it: "already registered" */
    }
  }
  return NULL;
}

static size_t g_builtin; /* backends before any plugin is loaded */

static void* query_registry(void* arg) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  int* bad = (int*)arg;
  while (!atomic_load(&g_stop)) {
    int32_t level = -1;
    const size_t n = attn_backend_count();
    if (n < g_builtin || n > g_builtin + 1) (*bad)++;
    if (attn_backend_cudagraph_support("FLASH_ATTN", &spec, &config, &level) != NULL ||
        level != ATTN_CG_ALWAYS)
      (*bad)++;
  }
  return NULL;
}

static void test_registry_under_load(void** state) {
  pthread_t loaders[4], reader;
  int loaded[4] = {0, 0, 0, 0}, bad = 0, i, total = 0;
  (void)state;
  atomic_store(&g_stop, 0);
  g_builtin = attn_backend_count();
  assert_true(g_builtin >= 1);
  assert_int_equal(pthread_create(&reader, NULL, query_registry, &bad), 0);
  for (i = 0; i < 4; ++i) assert_int_equal(pthread_create(&loaders[i], NULL, load_unload, &loaded[i]), 0);
  for (i = 0; i < 4; ++i) {
    assert_int_equal(pthread_join(loaders[i], NULL), 0);
    total += loaded[i];
  }
  atomic_store(&g_stop, 1);
  assert_int_equal(pthread_join(reader, NULL), 0);
  assert_int_equal(bad, 0);
  assert_true(total >= 1);
  assert_int_equal(attn_backend_count(), g_builtin); /* every load was unloaded */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_busy_builder),
      cmocka_unit_test(test_unload_during_create),
      cmocka_unit_test(test_builders_in_parallel),
      cmocka_unit_test(test_registry_under_load),
  };
  return cmocka_run_group_tests_name("concurrency", tests, NULL, NULL);
}
