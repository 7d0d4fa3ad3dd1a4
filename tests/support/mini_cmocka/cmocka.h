/* A stand-in for the part of cmocka's API that libattn's GPU tests use (tests/gpu/,
 * tests/support/), for GPU machines without libcmocka: scripts/gpu-check.sh builds the GPU tests
 * against it there, and against the real cmocka (through ctest) everywhere else. Same names,
 * same meaning, same exit status (the number of failed tests); no mocking, no setup/teardown
 * functions (the GPU tests use neither). Include after <setjmp.h>, <stdarg.h> and <stddef.h>, as
 * cmocka.h wants. */
#ifndef ATTN_MINI_CMOCKA_H_
#define ATTN_MINI_CMOCKA_H_

#include <stddef.h>
#include <stdint.h>

typedef void (*mini_cmocka_test_fn)(void** state);

struct CMUnitTest {
  const char* name;
  mini_cmocka_test_fn test_func;
  void* setup_func;    /* unused (NULL) */
  void* teardown_func; /* unused (NULL) */
  void* initial_state;
};

#define cmocka_unit_test(f) \
  { #f, f, NULL, NULL, NULL }

/* The group setup and teardown must be NULL. */
#define cmocka_run_group_tests_name(group, tests, group_setup, group_teardown) \
  mini_cmocka_run((group), (tests), sizeof(tests) / sizeof((tests)[0]))
#define cmocka_run_group_tests(tests, group_setup, group_teardown) \
  mini_cmocka_run(#tests, (tests), sizeof(tests) / sizeof((tests)[0]))

int mini_cmocka_run(const char* group, const struct CMUnitTest* tests, size_t count);
/* End the running test as failed (with a message) or skipped; they do not return. */
void mini_cmocka_fail(const char* file, int line, const char* format, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
void mini_cmocka_skip(const char* file, int line) __attribute__((noreturn));

#define fail() mini_cmocka_fail(__FILE__, __LINE__, "fail()")
#define fail_msg(...) mini_cmocka_fail(__FILE__, __LINE__, __VA_ARGS__)
#define skip() mini_cmocka_skip(__FILE__, __LINE__)

#define assert_true(c)                                                       \
  do {                                                                       \
    if (!(c)) mini_cmocka_fail(__FILE__, __LINE__, "%s is not true", #c);    \
  } while (0)
#define assert_false(c)                                                      \
  do {                                                                       \
    if (c) mini_cmocka_fail(__FILE__, __LINE__, "%s is not false", #c);      \
  } while (0)
#define assert_int_equal(a, b)                                                              \
  do {                                                                                      \
    const uintmax_t mini_a_ = (uintmax_t)(a), mini_b_ = (uintmax_t)(b);                     \
    if (mini_a_ != mini_b_)                                                                 \
      mini_cmocka_fail(__FILE__, __LINE__, "%s (%jd) != %s (%jd)", #a, (intmax_t)mini_a_,  \
                       #b, (intmax_t)mini_b_);                                              \
  } while (0)
#define assert_int_not_equal(a, b)                                                          \
  do {                                                                                      \
    if ((uintmax_t)(a) == (uintmax_t)(b))                                                   \
      mini_cmocka_fail(__FILE__, __LINE__, "%s == %s", #a, #b);                             \
  } while (0)
#define assert_null(p)                                                       \
  do {                                                                       \
    if ((p) != NULL) mini_cmocka_fail(__FILE__, __LINE__, "%s is not NULL", #p); \
  } while (0)
#define assert_non_null(p)                                                   \
  do {                                                                       \
    if ((p) == NULL) mini_cmocka_fail(__FILE__, __LINE__, "%s is NULL", #p); \
  } while (0)
#define assert_ptr_equal(a, b)                                                              \
  do {                                                                                      \
    const void* mini_a_ = (const void*)(a);                                                 \
    const void* mini_b_ = (const void*)(b);                                                 \
    if (mini_a_ != mini_b_)                                                                 \
      mini_cmocka_fail(__FILE__, __LINE__, "%s (%p) != %s (%p)", #a, mini_a_, #b, mini_b_); \
  } while (0)
#define assert_string_equal(a, b)                                                           \
  do {                                                                                      \
    const char* mini_a_ = (a);                                                              \
    const char* mini_b_ = (b);                                                              \
    if (strcmp(mini_a_, mini_b_) != 0)                                                      \
      mini_cmocka_fail(__FILE__, __LINE__, "\"%s\" != \"%s\"", mini_a_, mini_b_);           \
  } while (0)
#define assert_memory_equal(a, b, n)                                                        \
  do {                                                                                      \
    if (memcmp((a), (b), (n)) != 0)                                                         \
      mini_cmocka_fail(__FILE__, __LINE__, "%s and %s differ", #a, #b);                    \
  } while (0)

#endif
