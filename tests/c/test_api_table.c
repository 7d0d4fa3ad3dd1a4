/* attn_get_api: the function table checked member by member against the symbols a dlopen user
 * resolves, version refusals, and calls through the table. The member list comes from the
 * header's ATTN_API_FUNCTIONS, not from a list of this test's own. */
#include <dlfcn.h>

#include "test_support.h"

#ifndef ATTN_LIBRARY
#error "ATTN_LIBRARY must name the built libattn.so"
#endif

static void test_every_member_is_the_exported_symbol(void** state) {
  const attn_api_t* api = (const attn_api_t*)UNTOUCHED_PTR;
  void* lib = dlopen(ATTN_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  size_t count = 0;
  (void)state;
  if (lib == NULL) fail_msg("dlopen(%s): %s", ATTN_LIBRARY, dlerror());
  ASSERT_OK(attn_get_api(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR, &api));
  assert_non_null(api);
  assert_int_equal(api->struct_size, ATTN_API_STRUCT_SIZE);
  assert_int_equal(api->struct_size, sizeof(attn_api_t));
  /* Each member equals dlsym's answer for its name and the function this test links to; the
   * PFN_ typed assignment also checks the typedef against the declaration (-Werror). */
#define CHECK_MEMBER(name)                                                            \
  {                                                                                   \
    PFN_##name linked = name;                                                         \
    void* member;                                                                     \
    void* found = dlsym(lib, #name);                                                  \
    if (found == NULL) fail_msg("dlsym(%s): %s", #name, dlerror());                   \
    memcpy(&member, &api->name, sizeof member);                                       \
    if (member != found) fail_msg("api->%s differs from dlsym", #name);              \
    if (api->name != linked) fail_msg("api->%s differs from &%s", #name, #name);      \
    ++count;                                                                          \
  }
  ATTN_API_FUNCTIONS(CHECK_MEMBER)
#undef CHECK_MEMBER
  assert_int_equal(sizeof(size_t) + count * sizeof(void*), ATTN_API_STRUCT_SIZE);
  /* The table is static: a second call gives the same one. */
  {
    const attn_api_t* again = NULL;
    ASSERT_OK(attn_get_api(ATTN_VERSION_MAJOR, 0, &again));
    assert_ptr_equal(again, api);
  }
  dlclose(lib);
}

/* A dlopen user resolves attn_get_api alone and calls everything else through the table. */
static void test_calls_through_the_table(void** state) {
  void* lib = dlopen(ATTN_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  PFN_attn_get_api get_api;
  const attn_api_t* api = NULL;
  uint32_t major = 0, minor = 0, patch = 0;
  const char* name = NULL;
  attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
  attn_error_t* err;
  (void)state;
  if (lib == NULL) fail_msg("dlopen(%s): %s", ATTN_LIBRARY, dlerror());
  *(void**)&get_api = dlsym(lib, "attn_get_api");
  assert_non_null(get_api);
  ASSERT_OK(get_api(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR, &api));
  api->attn_get_version(&major, &minor, &patch);
  assert_int_equal(major, ATTN_VERSION_MAJOR);
  assert_int_equal(minor, ATTN_VERSION_MINOR);
  assert_true(api->attn_backend_count() >= 1);
  assert_int_equal(api->attn_backend_count(), attn_backend_count());
  ASSERT_OK(api->attn_backend_name(0, &name));
  ASSERT_OK(api->attn_backend_info(0, &info));
  assert_string_equal(info.name, name);
  err = api->attn_backend_name(api->attn_backend_count(), &name);
  assert_int_equal(api->attn_error_code(err), ATTN_ERR_NOT_FOUND);
  assert_non_null(strstr(api->attn_error_message(err), "out of range"));
  api->attn_error_destroy(err);
  dlclose(lib);
}

static void test_version_refusals(void** state) {
  const attn_api_t* api = (const attn_api_t*)UNTOUCHED_PTR;
  char expected[160];
  (void)state;
  /* An older minor of the same major is served (the table only grows). */
  {
    const attn_api_t* old = NULL;
    ASSERT_OK(attn_get_api(ATTN_VERSION_MAJOR, 0, &old));
    assert_true(old->struct_size >= ATTN_API_STRUCT_SIZE);
  }
  snprintf(expected, sizeof expected, "asked for libattn %d.%d but the loaded library is %d.%d.%d",
           ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR + 1, ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR,
           ATTN_VERSION_PATCH);
  ASSERT_ERROR(attn_get_api(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR + 1, &api),
               ATTN_ERR_ABI_MISMATCH, expected);
  snprintf(expected, sizeof expected, "asked for libattn %d.%d but the loaded library is %d.%d.%d",
           ATTN_VERSION_MAJOR + 1, 0, ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR, ATTN_VERSION_PATCH);
  ASSERT_ERROR(attn_get_api(ATTN_VERSION_MAJOR + 1, 0, &api), ATTN_ERR_ABI_MISMATCH, expected);
  ASSERT_ERROR(attn_get_api(0, ATTN_VERSION_MINOR, &api), ATTN_ERR_ABI_MISMATCH,
               "asked for libattn 0.");
  ASSERT_ERROR(attn_get_api(UINT32_MAX, UINT32_MAX, &api), ATTN_ERR_ABI_MISMATCH,
               "asked for libattn 4294967295.4294967295");
  assert_ptr_equal(api, UNTOUCHED_PTR);
  ASSERT_ERROR(attn_get_api(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_member_is_the_exported_symbol),
      cmocka_unit_test(test_calls_through_the_table),
      cmocka_unit_test(test_version_refusals),
  };
  return cmocka_run_group_tests_name("api_table", tests, NULL, NULL);
}
