/*
 * Plugins for the tests, one source built several times with one of:
 *   PLUGIN_NO_ENTRY             exports no entry point
 *   PLUGIN_NULL_TABLE           the entry point returns NULL
 *   PLUGIN_BAD_MINOR            built for a newer minor than the library
 *   PLUGIN_NO_BUILD             a backend without a build callback
 *   PLUGIN_DUP_FIELD            a backend that declares a field twice
 *   PLUGIN_UPDATE_NO_FIELDS     supports update_block_table without block_table/slot_mapping
 *   PLUGIN_MISBEHAVING          well-formed, with backends that fail, return garbage, return a
 *                               bad level, fail to create, or block until released
 *   PLUGIN_RECORDING            a backend that keeps a copy of the batch its build is given,
 *                               every field of attn_common_metadata_t (core/abi_fields.h)
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "attn_c.h"
#if defined(PLUGIN_RECORDING)
#include "core/abi_fields.h"
#endif

#define EXPORT __attribute__((visibility("default")))

static int32_t level_ok(const attn_kv_cache_spec_t* s, const attn_builder_config_t* c, int32_t* out,
                        char* err, size_t n) {
  (void)s; (void)c; (void)err; (void)n;
  *out = ATTN_CG_NEVER;
  return ATTN_OK;
}

static int32_t level_bad(const attn_kv_cache_spec_t* s, const attn_builder_config_t* c, int32_t* out,
                         char* err, size_t n) {
  (void)s; (void)c; (void)err; (void)n;
  *out = 7;
  return ATTN_OK;
}

static int g_state;

static int32_t create_ok(const attn_kv_cache_spec_t* s, const attn_builder_config_t* c, void** out,
                         int32_t* threshold, char* err, size_t n) {
  (void)s; (void)c; (void)threshold; (void)err; (void)n;
  *out = &g_state;
  return ATTN_OK;
}

static int32_t create_fails(const attn_kv_cache_spec_t* s, const attn_builder_config_t* c,
                            void** out, int32_t* threshold, char* err, size_t n) {
  (void)s; (void)c; (void)out; (void)threshold;
  snprintf(err, n, "no memory for the test");
  return ATTN_ERR_OUT_OF_MEMORY;
}

static void destroy_ok(void* state) { (void)state; }

static int32_t build_ok(void* state, int64_t prefix, const attn_common_metadata_t* c, int32_t fast,
                        const attn_plugin_output_t* out, attn_stream_t stream) {
  (void)state; (void)prefix; (void)fast; (void)stream;
  return out->set_int(out->ctx, "num_reqs", c->num_reqs);
}

static int32_t build_fails(void* state, int64_t prefix, const attn_common_metadata_t* c,
                           int32_t fast, const attn_plugin_output_t* out, attn_stream_t stream) {
  (void)state; (void)prefix; (void)c; (void)fast; (void)stream;
  out->set_error(out->ctx, "the test backend refuses every batch");
  return ATTN_ERR_UNSUPPORTED;
}

/* Record what the setters answered to garbage, then succeed anyway. */
static int32_t g_garbage_codes[7];
static int32_t g_garbage_words[4];

static int32_t build_garbage(void* state, int64_t prefix, const attn_common_metadata_t* c,
                             int32_t fast, const attn_plugin_output_t* out, attn_stream_t stream) {
  attn_tensor_t bad;
  int64_t shape[1] = {-3};
  (void)state; (void)prefix; (void)fast; (void)stream;
  memset(&bad, 0, sizeof bad);
  bad.ndim = 99;
  g_garbage_codes[0] = out->set_int(out->ctx, "not_declared", 1);
  g_garbage_codes[1] = out->set_tensor(out->ctx, "num_reqs", &bad);
  bad.ndim = 1;
  bad.shape = shape;
  bad.dtype.bits = 32;
  bad.dtype.lanes = 1;
  g_garbage_codes[2] = out->set_tensor(out->ctx, "num_reqs", &bad);
  g_garbage_codes[3] = out->set_int(out->ctx, NULL, 1);
  /* hostile views (issue 15, class 4): validated as strictly as a caller's */
  shape[0] = 5;
  bad.data = NULL; /* NULL data under a non-empty shape (a clone would copy from NULL) */
  g_garbage_codes[4] = out->set_tensor(out->ctx, "num_reqs", &bad);
  {
    int64_t strides[1] = {(int64_t)1 << 61}; /* byte extent overflows */
    bad.data = g_garbage_words;
    bad.strides = strides;
    g_garbage_codes[5] = out->set_tensor(out->ctx, "num_reqs", &bad);
    bad.strides = NULL;
    shape[0] = 2;
    bad.byte_offset = 1; /* misaligned for int32 */
    g_garbage_codes[6] = out->set_tensor(out->ctx, "num_reqs", &bad);
  }
  out->set_int(out->ctx, "num_reqs", c->num_reqs);
  return ATTN_OK;
}

EXPORT const int32_t* test_plugin_garbage_codes(void) { return g_garbage_codes; }

/* BLOCKING: the build waits until the test releases it. */
static atomic_int g_entered, g_release;

static int32_t build_blocking(void* state, int64_t prefix, const attn_common_metadata_t* c,
                              int32_t fast, const attn_plugin_output_t* out, attn_stream_t stream) {
  (void)state; (void)prefix; (void)fast; (void)stream;
  atomic_store(&g_entered, 1);
  while (!atomic_load(&g_release)) sched_yield();
  return out->set_int(out->ctx, "num_reqs", c->num_reqs);
}

EXPORT int test_plugin_blocking_entered(void) { return atomic_load(&g_entered); }
EXPORT void test_plugin_blocking_release(void) { atomic_store(&g_release, 1); }
EXPORT void test_plugin_blocking_reset(void) {
  atomic_store(&g_entered, 0);
  atomic_store(&g_release, 0);
}

/* BLOCKING_LEVEL: once armed, the next cudagraph_support call (made while a builder is being
 * created, before the builder exists) waits until the test releases it. */
static atomic_int g_level_armed, g_level_entered, g_level_release;

static int32_t level_blocking(const attn_kv_cache_spec_t* s, const attn_builder_config_t* c,
                              int32_t* out, char* err, size_t n) {
  if (atomic_exchange(&g_level_armed, 0)) {
    atomic_store(&g_level_entered, 1);
    while (!atomic_load(&g_level_release)) sched_yield();
  }
  return level_ok(s, c, out, err, n);
}

EXPORT void test_plugin_level_arm(void) {
  atomic_store(&g_level_entered, 0);
  atomic_store(&g_level_release, 0);
  atomic_store(&g_level_armed, 1);
}
EXPORT int test_plugin_level_entered(void) { return atomic_load(&g_level_entered); }
EXPORT void test_plugin_level_release(void) { atomic_store(&g_level_release, 1); }

#if defined(PLUGIN_RECORDING)
/* The last batch a build was given, its tensor views copied (they live for the call only). */
static attn_common_metadata_t g_seen;
static attn_tensor_t g_seen_tensors[64];
static int64_t g_seen_shapes[64][8];
static int g_builds;

static const attn_tensor_t* keep(const attn_tensor_t* t, size_t k) {
  int32_t d;
  if (t == NULL || k >= 64) return NULL;
  g_seen_tensors[k] = *t;
  for (d = 0; d < t->ndim && d < 8; ++d) g_seen_shapes[k][d] = t->shape[d];
  g_seen_tensors[k].shape = g_seen_shapes[k];
  g_seen_tensors[k].strides = NULL; /* not kept */
  return &g_seen_tensors[k];
}

static int32_t build_recording(void* state, int64_t prefix, const attn_common_metadata_t* c,
                               int32_t fast, const attn_plugin_output_t* out, attn_stream_t stream) {
  size_t k = 0;
  (void)state; (void)prefix; (void)fast; (void)stream;
  g_seen = *c;
#define KEEP(kind, ...) KEEP_##kind(__VA_ARGS__)
#define KEEP_SIZE(name)
#define KEEP_EXT(name)
#define KEEP_I64(name, value)
#define KEEP_BOOL(name, value)
#define KEEP_OPT_I64(name)
#define KEEP_TENSOR(name, ...) g_seen.name = keep(c->name, k++);
  ATTN_COMMON_METADATA_FIELDS(KEEP)
  ++g_builds;
  return out->set_int(out->ctx, "num_reqs", c->num_reqs);
}

/* The batch of the last build (NULL before the first). */
EXPORT const attn_common_metadata_t* test_plugin_seen(void) { return g_builds ? &g_seen : NULL; }
#endif

static const char* const kFields[] = {"num_reqs"};
static const char* const kDupFields[] = {"num_reqs", "num_reqs"};

#define BACKEND(var, name, fields, nfields, update, level, create, build)                       \
  static const attn_plugin_backend_t var = {ATTN_PLUGIN_BACKEND_STRUCT_SIZE, name, fields,     \
                                            nfields, update, level, create, destroy_ok, build, \
                                            NULL}

#if defined(PLUGIN_NO_BUILD)
BACKEND(kB0, "TEST_NO_BUILD", kFields, 1, 0, level_ok, create_ok, NULL);
static const attn_plugin_backend_t* const kBackends[] = {&kB0};
#elif defined(PLUGIN_DUP_FIELD)
BACKEND(kB0, "TEST_DUP_FIELD", kDupFields, 2, 0, level_ok, create_ok, build_ok);
static const attn_plugin_backend_t* const kBackends[] = {&kB0};
#elif defined(PLUGIN_UPDATE_NO_FIELDS)
BACKEND(kB0, "TEST_UPDATE", kFields, 1, 1, level_ok, create_ok, build_ok);
static const attn_plugin_backend_t* const kBackends[] = {&kB0};
#elif defined(PLUGIN_RECORDING)
BACKEND(kB0, "TEST_RECORDING", kFields, 1, 0, level_ok, create_ok, build_recording);
static const attn_plugin_backend_t* const kBackends[] = {&kB0};
#else
BACKEND(kB0, "TEST_FAILING", kFields, 1, 0, level_ok, create_ok, build_fails);
BACKEND(kB1, "TEST_GARBAGE", kFields, 1, 0, level_ok, create_ok, build_garbage);
BACKEND(kB2, "TEST_BAD_LEVEL", kFields, 1, 0, level_bad, create_ok, build_ok);
BACKEND(kB3, "TEST_CREATE_FAILS", kFields, 1, 0, level_ok, create_fails, build_ok);
BACKEND(kB4, "TEST_BLOCKING", kFields, 1, 0, level_ok, create_ok, build_blocking);
BACKEND(kB5, "TEST_BLOCKING_LEVEL", kFields, 1, 0, level_blocking, create_ok, build_ok);
static const attn_plugin_backend_t* const kBackends[] = {&kB0, &kB1, &kB2, &kB3, &kB4, &kB5};
#endif

#if defined(PLUGIN_BAD_MINOR)
#define MINOR (ATTN_VERSION_MINOR + 1)
#else
#define MINOR ATTN_VERSION_MINOR
#endif

static const attn_plugin_table_t kTable = {ATTN_PLUGIN_TABLE_STRUCT_SIZE, ATTN_VERSION_MAJOR, MINOR,
                                           "test_plugin", kBackends,
                                           sizeof kBackends / sizeof kBackends[0], NULL};

#if !defined(PLUGIN_NO_ENTRY)
EXPORT const attn_plugin_table_t* attn_plugin_entry(void) {
#if defined(PLUGIN_NULL_TABLE)
  return NULL;
#else
  return &kTable;
#endif
}
#else
EXPORT const attn_plugin_table_t* some_other_function(void) { return &kTable; }
#endif
