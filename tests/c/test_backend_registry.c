/* attn_backend_count, attn_backend_name, attn_backend_info, attn_backend_cudagraph_support. */
#include "test_support.h"

static void test_count_and_names(void** state) {
  const char* name = (const char*)UNTOUCHED_PTR;
  size_t i, n = attn_backend_count();
  int found = 0;
  (void)state;
  assert_true(n >= 1);
  for (i = 0; i < n; ++i) {
    ASSERT_OK(attn_backend_name(i, &name));
    assert_non_null(name);
    if (strcmp(name, "FLASH_ATTN") == 0) found = 1;
  }
  assert_true(found);
  ASSERT_OK(attn_backend_name(0, &name));
  assert_string_equal(name, "FLASH_ATTN"); /* built-ins come first, in a fixed order */
}

static void test_name_bad_input(void** state) {
  const char* name = (const char*)UNTOUCHED_PTR;
  (void)state;
  ASSERT_ERROR(attn_backend_name(attn_backend_count(), &name), ATTN_ERR_NOT_FOUND, "out of range");
  assert_ptr_equal(name, UNTOUCHED_PTR);
  ASSERT_ERROR(attn_backend_name((size_t)-1, &name), ATTN_ERR_NOT_FOUND, "backend index");
  ASSERT_ERROR(attn_backend_name(0, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
}

/* Every kind bit attn_backend_info may set: one per ATTN_KV_* value. */
#define ALL_KINDS ((1u << (ATTN_KV_CIRCULAR_BUFFER + 1)) - 1u)

static void test_info_of_every_backend(void** state) {
  size_t i, n = attn_backend_count();
  uint32_t union_of_kinds = 0;
  (void)state;
  for (i = 0; i < n; ++i) {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    const char* name = NULL;
    info.extension = UNTOUCHED_PTR;
    ASSERT_OK(attn_backend_info(i, &info));
    ASSERT_OK(attn_backend_name(i, &name));
    assert_int_equal(info.struct_size, ATTN_BACKEND_INFO_STRUCT_SIZE);
    assert_ptr_equal(info.name, name); /* the same library-owned string */
    assert_int_equal(info.origin, ATTN_BACKEND_BUILTIN);
    assert_non_null(info.vllm_release);
    assert_null(info.extension);
    assert_int_not_equal(info.kv_cache_kinds, 0);
    assert_int_equal(info.kv_cache_kinds & ~ALL_KINDS, 0);
    union_of_kinds |= info.kv_cache_kinds;
  }
  /* Between them the built-in backends build for every kind of spec. */
  assert_int_equal(union_of_kinds, ALL_KINDS);
}

/* A newer caller's larger struct: the library writes its own fields and nothing beyond. */
static void test_info_larger_struct(void** state) {
  union {
    attn_backend_info_t info;
    unsigned char bytes[sizeof(attn_backend_info_t) + 16];
  } u;
  size_t k;
  (void)state;
  memset(&u, 0xa5, sizeof u);
  u.info.struct_size = sizeof u;
  ASSERT_OK(attn_backend_info(0, &u.info));
  assert_int_equal(u.info.struct_size, sizeof u);
  assert_non_null(u.info.name);
  for (k = sizeof(attn_backend_info_t); k < sizeof u; ++k) assert_int_equal(u.bytes[k], 0xa5);
}

static void test_info_bad_input(void** state) {
  static const size_t bad_sizes[] = {0, 1, sizeof(size_t), ATTN_BACKEND_INFO_STRUCT_SIZE_1_3 - 1,
                                     ATTN_BACKEND_INFO_STRUCT_SIZE_1_3 - sizeof(void*)};
  /* between the 1.3 size and the 1.7 size: no published version of the struct */
  static const size_t between[] = {ATTN_BACKEND_INFO_STRUCT_SIZE_1_3 + 1,
                                   ATTN_BACKEND_INFO_STRUCT_SIZE - 1};
  attn_backend_info_t info, before;
  char expected[128];
  size_t k;
  (void)state;
  memset(&info, 0x5a, sizeof info);
  info.struct_size = ATTN_BACKEND_INFO_STRUCT_SIZE;
  before = info;
  ASSERT_ERROR(attn_backend_info(attn_backend_count(), &info), ATTN_ERR_NOT_FOUND,
               "out of range");
  ASSERT_ERROR(attn_backend_info((size_t)-1, &info), ATTN_ERR_NOT_FOUND, "backend index");
  assert_memory_equal(&info, &before, sizeof info);
  ASSERT_ERROR(attn_backend_info(0, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  for (k = 0; k < sizeof bad_sizes / sizeof bad_sizes[0]; ++k) {
    info.struct_size = bad_sizes[k];
    before = info;
    snprintf(expected, sizeof expected, "out->struct_size=%zu is smaller than %zu", bad_sizes[k],
             (size_t)ATTN_BACKEND_INFO_STRUCT_SIZE_1_3);
    ASSERT_ERROR(attn_backend_info(0, &info), ATTN_ERR_INVALID_ARGUMENT, expected);
    /* a bad size is reported before the index is looked at */
    ASSERT_ERROR(attn_backend_info(attn_backend_count(), &info), ATTN_ERR_INVALID_ARGUMENT,
                 expected);
    assert_memory_equal(&info, &before, sizeof info);
  }
  for (k = 0; k < sizeof between / sizeof between[0]; ++k) {
    info.struct_size = between[k];
    before = info;
    snprintf(expected, sizeof expected,
             "out->struct_size=%zu is not the size of an ABI version of this struct (%zu, or %zu "
             "for this version",
             between[k], (size_t)ATTN_BACKEND_INFO_STRUCT_SIZE_1_3,
             (size_t)ATTN_BACKEND_INFO_STRUCT_SIZE);
    ASSERT_ERROR(attn_backend_info(0, &info), ATTN_ERR_INVALID_ARGUMENT, expected);
    assert_memory_equal(&info, &before, sizeof info);
  }
}

static int32_t level_for(int32_t capability, int32_t fa_version, int32_t batch_invariant) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  int32_t level = -1;
  config.device_capability = capability;
  config.flash_attn_version = fa_version;
  config.batch_invariant = batch_invariant;
  ASSERT_OK(attn_backend_cudagraph_support("FLASH_ATTN", &spec, &config, &level));
  return level;
}

static void test_flash_attn_levels(void** state) {
  (void)state;
  /* vLLM 0.33: ALWAYS with FA3 (Hopper) or FA4 (Blackwell), UNIFORM_BATCH with FA2. */
  assert_int_equal(level_for(90, 0, 0), ATTN_CG_ALWAYS);
  assert_int_equal(level_for(80, 0, 0), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_for(0, 0, 0), ATTN_CG_UNIFORM_BATCH); /* unknown device: FA2 */
  assert_int_equal(level_for(100, 0, 0), ATTN_CG_ALWAYS); /* FA4 */
  assert_int_equal(level_for(120, 0, 0), ATTN_CG_UNIFORM_BATCH); /* FA2 */
  assert_int_equal(level_for(80, 3, 0), ATTN_CG_ALWAYS);        /* config forces FA3 */
  assert_int_equal(level_for(90, 2, 0), ATTN_CG_UNIFORM_BATCH); /* config forces FA2 */
  assert_int_equal(level_for(100, 3, 0), ATTN_CG_ALWAYS); /* FA3 -> FA4 on >= 10.x */
  assert_int_equal(level_for(100, 4, 1), ATTN_CG_UNIFORM_BATCH); /* batch invariance: FA2 */
  assert_int_equal(level_for(90, 0, 1), ATTN_CG_ALWAYS); /* batch invariance keeps FA3 */
}

static void test_cudagraph_support_bad_input(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  int32_t level = -7;
  (void)state;
  ASSERT_ERROR(attn_backend_cudagraph_support("NO_SUCH", &spec, &config, &level),
               ATTN_ERR_NOT_FOUND, "unknown backend 'NO_SUCH'; registered backends: FLASH_ATTN");
  ASSERT_ERROR(attn_backend_cudagraph_support(NULL, &spec, &config, &level),
               ATTN_ERR_INVALID_ARGUMENT, "backend is NULL");
  ASSERT_ERROR(attn_backend_cudagraph_support("FLASH_ATTN", NULL, &config, &level),
               ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec is NULL");
  ASSERT_ERROR(attn_backend_cudagraph_support("FLASH_ATTN", &spec, NULL, &level),
               ATTN_ERR_INVALID_ARGUMENT, "config is NULL");
  ASSERT_ERROR(attn_backend_cudagraph_support("FLASH_ATTN", &spec, &config, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_level is NULL");
  spec.block_size = 0;
  ASSERT_ERROR(attn_backend_cudagraph_support("FLASH_ATTN", &spec, &config, &level),
               ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->block_size=0 must be positive");
  spec = ts_spec();
  config.struct_size = 8;
  ASSERT_ERROR(attn_backend_cudagraph_support("FLASH_ATTN", &spec, &config, &level),
               ATTN_ERR_INVALID_ARGUMENT, "config->struct_size=8 is smaller than");
  assert_int_equal(level, -7);
}

/* The MLA family is registered and answers the classmethod for an MLA spec (vLLM's class
 * attributes, checked by name; tests/c/test_mla.c has the rest); the backends that build for an
 * MLA spec are found through the registry, and the others refuse to build for it. */
static void test_mla_family(void** state) {
  static const struct {
    const char* name;
    int32_t level;
  } expected[5] = {{"FLASHMLA", ATTN_CG_UNIFORM_BATCH},
                   {"FLASH_ATTN_MLA", ATTN_CG_UNIFORM_BATCH},
                   {"CUTLASS_MLA", ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE},
                   {"FLASHINFER_MLA", ATTN_CG_ALWAYS},
                   {"TRITON_MLA", ATTN_CG_UNIFORM_BATCH}};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  const attn_kv_cache_spec_t full = ts_spec();
  const char* mla[32];
  size_t i, n, k;
  int found = 0;
  (void)state;
  config.num_gpu_blocks = 64; /* FLEX_ATTENTION needs it to build at all */
  spec.kind = ATTN_KV_MLA;
  spec.block_size = 128;
  spec.num_kv_heads = 1;
  spec.head_size = 576;
  n = ts_backends_building(ATTN_BACKEND_BUILTIN, &spec, &config, mla, 32);
  assert_true(n <= 32);
  for (i = 0; i < n; ++i) {
    int32_t level = -1;
    ASSERT_OK(attn_backend_cudagraph_support(mla[i], &spec, &config, &level));
    for (k = 0; k < 5; ++k)
      if (strcmp(mla[i], expected[k].name) == 0) {
        assert_int_equal(level, expected[k].level);
        ++found;
      }
  }
  assert_int_equal(found, 5);
  /* none of the backends that build for a full-attention spec builds for an MLA spec, but
   * CACHE_ONLY_ATTN (vLLM 0.33's HiddenStateCacheSpec is an MLAAttentionSpec) */
  for (i = 0; i < attn_backend_count(); ++i) {
    const char* name = NULL;
    attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
    if (!ts_backend_builds(i, ATTN_BACKEND_BUILTIN, &full, &config, &name)) continue;
    if (strcmp(name, "CACHE_ONLY_ATTN") == 0) continue;
    ASSERT_ERROR(attn_builder_create(name, &spec, &config, &b), ATTN_ERR_UNSUPPORTED,
                 "MLA KV cache specs");
    assert_ptr_equal(b, UNTOUCHED_PTR);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_count_and_names),
      cmocka_unit_test(test_name_bad_input),
      cmocka_unit_test(test_info_of_every_backend),
      cmocka_unit_test(test_info_larger_struct),
      cmocka_unit_test(test_info_bad_input),
      cmocka_unit_test(test_flash_attn_levels),
      cmocka_unit_test(test_cudagraph_support_bad_input),
      cmocka_unit_test(test_mla_family),
  };
  return cmocka_run_group_tests_name("backend_registry", tests, NULL, NULL);
}
