/* vLLM 0.33.0's backend names (ABI 1.7): every name of tests/data/vllm_backend_names.txt (derived
 * from vLLM's source by scripts/vllm_names.py; needs no vLLM here) resolves to its backend in
 * every entry point that takes a backend name, attn_backend_info's vllm_names lists exactly a
 * backend's names, and a name vLLM uses for no backend of libattn (or for several) is refused
 * with a message naming it. */
#include "test_support.h"

#ifndef ATTN_VLLM_NAMES_FILE
#error "ATTN_VLLM_NAMES_FILE (tests/data/vllm_backend_names.txt) must be defined"
#endif

enum { kMaxNames = 256, kMaxLen = 96 };

typedef struct vllm_name {
  char name[kMaxLen];
  char backend[kMaxLen]; /* "-" when it resolves to none */
} vllm_name;

static vllm_name names[kMaxNames];
static size_t num_names;

static int load_names(void** state) {
  FILE* f = fopen(ATTN_VLLM_NAMES_FILE, "r");
  char line[4096];
  (void)state;
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", ATTN_VLLM_NAMES_FILE);
    return -1;
  }
  num_names = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    char* tab1;
    char* tab2;
    if (line[0] == '#' || line[0] == '\n') continue;
    tab1 = strchr(line, '\t');
    tab2 = tab1 != NULL ? strchr(tab1 + 1, '\t') : NULL;
    if (tab2 == NULL || num_names == kMaxNames || tab1 - line >= kMaxLen ||
        tab2 - tab1 - 1 >= kMaxLen) {
      fprintf(stderr, "%s: malformed line: %s", ATTN_VLLM_NAMES_FILE, line);
      fclose(f);
      return -1;
    }
    memcpy(names[num_names].name, line, (size_t)(tab1 - line));
    names[num_names].name[tab1 - line] = '\0';
    memcpy(names[num_names].backend, tab1 + 1, (size_t)(tab2 - tab1 - 1));
    names[num_names].backend[tab2 - tab1 - 1] = '\0';
    ++num_names;
  }
  fclose(f);
  return num_names > 0 ? 0 : -1;
}

static size_t index_of(const char* backend) {
  size_t i, n = attn_backend_count();
  for (i = 0; i < n; ++i) {
    const char* name = NULL;
    ASSERT_OK(attn_backend_name(i, &name));
    if (strcmp(name, backend) == 0) return i;
  }
  fail_msg("%s names backend %s, which is not registered", ATTN_VLLM_NAMES_FILE, backend);
  return n;
}

/* Whether the comma-separated `list` has `name` as one of its entries. */
static int lists(const char* list, const char* name) {
  const size_t len = strlen(name);
  const char* p = list;
  while (*p != '\0') {
    const char* comma = strchr(p, ',');
    const size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
    if (n == len && strncmp(p, name, len) == 0) return 1;
    if (comma == NULL) break;
    p = comma + 1;
  }
  return 0;
}

static void test_the_issue_names_are_in_the_file(void** state) {
  /* issue 33's examples, so that the file cannot lose them quietly */
  static const char* const expected[][2] = {
      {"MAMBA2_ATTN", "MAMBA2"}, {"MAMBA1_ATTN", "MAMBA1"}, {"SHORT_CONV_ATTN", "SHORT_CONV"},
      {"LINEAR", "LINEAR_ATTN"}, {"ROCM_AITER_TRITON_MLA", "ROCM_AITER_MLA"},
      {"AITER_TRITON_MLA", "ROCM_AITER_MLA"}, {"FLASH_ATTN", "FLASH_ATTN"},
      {"CompressorBackend", "-"}};
  size_t k, i;
  (void)state;
  for (k = 0; k < sizeof expected / sizeof expected[0]; ++k) {
    for (i = 0; i < num_names; ++i)
      if (strcmp(names[i].name, expected[k][0]) == 0) break;
    if (i == num_names) fail_msg("%s lacks %s", ATTN_VLLM_NAMES_FILE, expected[k][0]);
    assert_string_equal(names[i].backend, expected[k][1]);
  }
}

/* Each resolved name creates its backend's builder (attn_builder_backend_name gives the backend's
 * own name), and answers attn_backend_cudagraph_support and attn_builder_workspace_size as the
 * backend's own name does, on a spec and config the backend builds for. */
static void test_every_vllm_name_resolves(void** state) {
  attn_builder_config_t base = ts_config();
  size_t i, resolved = 0;
  (void)state;
  base.num_gpu_blocks = 4096; /* the inputs some backends need (FLEX_ATTENTION, cross attention) */
  base.max_encoder_len = 256;
  for (i = 0; i < num_names; ++i) {
    attn_kv_cache_spec_t spec;
    attn_builder_config_t config;
    attn_builder_t* b = NULL;
    int32_t level = -1, own_level = -2;
    size_t bytes = 1, own_bytes = 2;
    const char* name = names[i].name;
    const char* backend = names[i].backend;
    if (strcmp(backend, "-") == 0) continue;
    if (!ts_backend_setup(index_of(backend), -1, &base, &spec, &config))
      fail_msg("no candidate spec and config build %s (for vLLM's name %s)", backend, name);
    ASSERT_OK(attn_builder_create(name, &spec, &config, &b));
    assert_string_equal(attn_builder_backend_name(b), backend);
    attn_builder_destroy(b);
    ASSERT_OK(attn_backend_cudagraph_support(name, &spec, &config, &level));
    ASSERT_OK(attn_backend_cudagraph_support(backend, &spec, &config, &own_level));
    assert_int_equal(level, own_level);
    ASSERT_OK(attn_builder_workspace_size(name, &spec, &config, &bytes));
    ASSERT_OK(attn_builder_workspace_size(backend, &spec, &config, &own_bytes));
    assert_int_equal(bytes, own_bytes);
    ++resolved;
  }
  assert_true(resolved >= 60);
}

/* attn_backend_info's vllm_names of every built-in backend is exactly its names in the file. */
static void test_info_lists_the_names(void** state) {
  size_t i, k, n = attn_backend_count();
  (void)state;
  for (i = 0; i < n; ++i) {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    size_t listed = 0, entries = 0;
    const char* p;
    ASSERT_OK(attn_backend_info(i, &info));
    assert_non_null(info.vllm_names);
    if (info.origin != ATTN_BACKEND_BUILTIN) continue;
    for (k = 0; k < num_names; ++k) {
      if (strcmp(names[k].backend, info.name) != 0) continue;
      if (!lists(info.vllm_names, names[k].name))
        fail_msg("%s: vllm_names \"%s\" lacks %s", info.name, info.vllm_names, names[k].name);
      ++listed;
    }
    /* ... and nothing else: as many entries, none empty, no spaces */
    assert_null(strchr(info.vllm_names, ' '));
    if (info.vllm_names[0] != '\0') {
      entries = 1;
      for (p = info.vllm_names; *p != '\0'; ++p) {
        if (*p != ',') continue;
        assert_true(p[1] != '\0' && p[1] != ',' && p != info.vllm_names);
        ++entries;
      }
    }
    if (entries != listed)
      fail_msg("%s: vllm_names \"%s\" has %zu names, %s gives it %zu", info.name,
               info.vllm_names, entries, ATTN_VLLM_NAMES_FILE, listed);
  }
}

/* A name vLLM uses for no libattn backend, or for several (CompressorBackend), is refused by
 * every entry point that takes a backend name, with a message naming it. */
static void test_other_vllm_names_are_refused(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  size_t i, refused = 0;
  char expected[160];
  (void)state;
  for (i = 0; i < num_names; ++i) {
    attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
    int32_t level = -7;
    size_t bytes = 7;
    if (strcmp(names[i].backend, "-") != 0) continue;
    snprintf(expected, sizeof expected, "unknown backend '%s'; registered backends: FLASH_ATTN",
             names[i].name);
    ASSERT_ERROR(attn_builder_create(names[i].name, &spec, &config, &b), ATTN_ERR_NOT_FOUND,
                 expected);
    assert_ptr_equal(b, UNTOUCHED_PTR);
    ASSERT_ERROR(attn_backend_cudagraph_support(names[i].name, &spec, &config, &level),
                 ATTN_ERR_NOT_FOUND, expected);
    assert_int_equal(level, -7);
    ASSERT_ERROR(attn_builder_workspace_size(names[i].name, &spec, &config, &bytes),
                 ATTN_ERR_NOT_FOUND, expected);
    assert_int_equal(bytes, 7);
    ++refused;
  }
  assert_true(refused >= 1);
}

/* Only whole names match: not a different case, a prefix, a padded name or a whole list. */
static void test_near_names_are_refused(void** state) {
  static const char* const bad[] = {"mamba2_attn", "MAMBA2_ATT", "MAMBA2_ATTN ", " LINEAR",
                                    "MAMBA2,MAMBA2_ATTN", ",", "", "AITER_TRITON", "LINEAR,"};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  char expected[160];
  size_t k;
  (void)state;
  for (k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
    attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
    snprintf(expected, sizeof expected, "unknown backend '%s'", bad[k]);
    ASSERT_ERROR(attn_builder_create(bad[k], &spec, &config, &b), ATTN_ERR_NOT_FOUND, expected);
    assert_ptr_equal(b, UNTOUCHED_PTR);
  }
}

/* A 1.3-1.6 caller's smaller struct: filled up to `extension`, vllm_names not written. */
static void test_info_old_struct_size(void** state) {
  union {
    attn_backend_info_t info;
    unsigned char bytes[sizeof(attn_backend_info_t)];
  } u;
  size_t k, i = index_of("MAMBA2");
  (void)state;
  assert_int_equal(ATTN_BACKEND_INFO_STRUCT_SIZE_1_3, 5 * sizeof(void*));
  assert_int_equal(ATTN_BACKEND_INFO_STRUCT_SIZE, 6 * sizeof(void*));
  memset(&u, 0xa5, sizeof u);
  u.info.struct_size = ATTN_BACKEND_INFO_STRUCT_SIZE_1_3;
  ASSERT_OK(attn_backend_info(i, &u.info));
  assert_int_equal(u.info.struct_size, ATTN_BACKEND_INFO_STRUCT_SIZE_1_3);
  assert_string_equal(u.info.name, "MAMBA2");
  assert_null(u.info.extension);
  for (k = ATTN_BACKEND_INFO_STRUCT_SIZE_1_3; k < sizeof u; ++k) assert_int_equal(u.bytes[k], 0xa5);
  /* the 1.7 size gets the names */
  u.info.struct_size = ATTN_BACKEND_INFO_STRUCT_SIZE;
  ASSERT_OK(attn_backend_info(i, &u.info));
  assert_string_equal(u.info.vllm_names, "MAMBA2,MAMBA2_ATTN");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_the_issue_names_are_in_the_file),
      cmocka_unit_test(test_every_vllm_name_resolves),
      cmocka_unit_test(test_info_lists_the_names),
      cmocka_unit_test(test_other_vllm_names_are_refused),
      cmocka_unit_test(test_near_names_are_refused),
      cmocka_unit_test(test_info_old_struct_size),
  };
  return cmocka_run_group_tests(tests, load_names, NULL);
}
