/* attn_get_version, attn_check_version, attn_device_count and the error-object functions. */
#include "test_support.h"

static void test_get_version(void** state) {
  uint32_t major = 99, minor = 99, patch = 99;
  (void)state;
  attn_get_version(&major, &minor, &patch);
  assert_int_equal(major, ATTN_VERSION_MAJOR);
  assert_int_equal(minor, ATTN_VERSION_MINOR);
  assert_int_equal(patch, ATTN_VERSION_PATCH);
  attn_get_version(NULL, NULL, NULL); /* every out-param may be NULL */
  attn_get_version(&major, NULL, NULL);
  assert_int_equal(major, ATTN_VERSION_MAJOR);
}

static void test_check_version(void** state) {
  (void)state;
  ASSERT_OK(ATTN_CHECK_VERSION());
  ASSERT_OK(attn_check_version(ATTN_VERSION_MAJOR, 0));
  ASSERT_ERROR(attn_check_version(ATTN_VERSION_MAJOR + 1, 0), ATTN_ERR_ABI_MISMATCH,
               "compiled against libattn 2.0");
  ASSERT_ERROR(attn_check_version(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR + 1),
               ATTN_ERR_ABI_MISMATCH, "a minor of at least");
  ASSERT_ERROR(attn_check_version(0, 0), ATTN_ERR_ABI_MISMATCH, "the same major");
}

static void test_status_strings(void** state) {
  (void)state;
  assert_string_equal(attn_status_string(ATTN_OK), "ok");
  assert_string_equal(attn_status_string(ATTN_ERR_INVALID_ARGUMENT), "invalid argument");
  assert_string_equal(attn_status_string(ATTN_ERR_UNSUPPORTED), "unsupported");
  assert_string_equal(attn_status_string(ATTN_ERR_OUT_OF_MEMORY), "out of memory");
  assert_string_equal(attn_status_string(ATTN_ERR_CUDA), "CUDA error");
  assert_string_equal(attn_status_string(ATTN_ERR_NOT_FOUND), "not found");
  assert_string_equal(attn_status_string(ATTN_ERR_ABI_MISMATCH), "ABI mismatch");
  assert_string_equal(attn_status_string(ATTN_ERR_BUSY), "busy");
  assert_string_equal(attn_status_string(ATTN_ERR_INTERNAL), "internal error");
  assert_string_equal(attn_status_string(9), "unknown status");
  assert_string_equal(attn_status_string(-1), "unknown status");
}

static void test_frozen_codes(void** state) {
  (void)state;
  /* The numbers are part of the ABI. */
  assert_int_equal(ATTN_OK, 0);
  assert_int_equal(ATTN_ERR_INVALID_ARGUMENT, 1);
  assert_int_equal(ATTN_ERR_UNSUPPORTED, 2);
  assert_int_equal(ATTN_ERR_OUT_OF_MEMORY, 3);
  assert_int_equal(ATTN_ERR_CUDA, 4);
  assert_int_equal(ATTN_ERR_NOT_FOUND, 5);
  assert_int_equal(ATTN_ERR_ABI_MISMATCH, 6);
  assert_int_equal(ATTN_ERR_BUSY, 7);
  assert_int_equal(ATTN_ERR_INTERNAL, 8);
  assert_int_equal(ATTN_CG_NEVER, 0);
  assert_int_equal(ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE, 1);
  assert_int_equal(ATTN_CG_UNIFORM_BATCH, 2);
  assert_int_equal(ATTN_CG_ALWAYS, 3);
  assert_int_equal(ATTN_PAD_SLOT_ID, -1);
}

static void test_null_error(void** state) {
  (void)state;
  assert_int_equal(attn_error_code(NULL), ATTN_OK);
  assert_string_equal(attn_error_message(NULL), "");
  attn_error_destroy(NULL);
}

static void test_error_object(void** state) {
  attn_error_t* err = attn_check_version(ATTN_VERSION_MAJOR + 1, 0);
  (void)state;
  assert_non_null(err);
  assert_int_equal(attn_error_code(err), ATTN_ERR_ABI_MISMATCH);
  assert_true(strlen(attn_error_message(err)) > 10);
  /* the message stays valid as long as the error */
  assert_ptr_equal(attn_error_message(err), attn_error_message(err));
  attn_error_destroy(err);
}

static void test_device_count(void** state) {
  int32_t n = -7;
  attn_error_t* err;
  (void)state;
  ASSERT_OK(attn_device_count(ATTN_DEVICE_CPU, &n));
  assert_int_equal(n, 1);
  ASSERT_ERROR(attn_device_count(ATTN_DEVICE_CPU, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  n = -7;
  ASSERT_ERROR(attn_device_count(99, &n), ATTN_ERR_INVALID_ARGUMENT, "device_type=99");
  assert_int_equal(n, -7);
  err = attn_device_count(ATTN_DEVICE_CUDA, &n);
  if (err != NULL) {
    /* built without CUDA: a clear refusal */
    assert_int_equal(attn_error_code(err), ATTN_ERR_UNSUPPORTED);
    assert_non_null(strstr(attn_error_message(err), "without CUDA"));
    assert_int_equal(n, -7);
    attn_error_destroy(err);
  } else {
    assert_true(n >= 0);
    printf("CUDA devices visible: %d\n", n);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_version),   cmocka_unit_test(test_check_version),
      cmocka_unit_test(test_status_strings), cmocka_unit_test(test_frozen_codes),
      cmocka_unit_test(test_null_error),    cmocka_unit_test(test_error_object),
      cmocka_unit_test(test_device_count),
  };
  return cmocka_run_group_tests_name("version_error", tests, NULL, NULL);
}
