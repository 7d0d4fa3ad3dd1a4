/* See cmocka.h beside this file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmocka.h"

static jmp_buf mini_env;
static int mini_outcome; /* 0 passed, 1 failed, 2 skipped */

void mini_cmocka_fail(const char* file, int line, const char* format, ...) {
  va_list args;
  fflush(stdout);
  fprintf(stderr, "[  ERROR   ] --- ");
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fprintf(stderr, "\n[   LINE   ] --- %s:%d: error: Failure!\n", file, line);
  fflush(stderr);
  mini_outcome = 1;
  longjmp(mini_env, 1);
}

void mini_cmocka_skip(const char* file, int line) {
  (void)file;
  (void)line;
  mini_outcome = 2;
  longjmp(mini_env, 1);
}

/* Runs one test; the outcome lives in a static, which a longjmp leaves intact. */
static int run_one(const struct CMUnitTest* test) {
  void* state = test->initial_state;
  mini_outcome = 0;
  if (setjmp(mini_env) == 0) test->test_func(&state);
  return mini_outcome;
}

int mini_cmocka_run(const char* group, const struct CMUnitTest* tests, size_t count) {
  size_t i, passed = 0, failed = 0, skipped = 0;
  printf("[==========] %s: Running %zu test(s).\n", group, count);
  for (i = 0; i < count; ++i) {
    int outcome;
    printf("[ RUN      ] %s\n", tests[i].name);
    fflush(stdout);
    outcome = run_one(&tests[i]);
    fflush(stdout);
    if (outcome == 0) {
      printf("[       OK ] %s\n", tests[i].name);
      ++passed;
    } else if (outcome == 2) {
      printf("[  SKIPPED ] %s\n", tests[i].name);
      ++skipped;
    } else {
      printf("[  FAILED  ] %s\n", tests[i].name);
      ++failed;
    }
  }
  printf("[==========] %s: %zu test(s) run.\n[  PASSED  ] %zu test(s).\n", group, count, passed);
  if (skipped) printf("[  SKIPPED ] %zu test(s).\n", skipped);
  if (failed) printf("[  FAILED  ] %zu test(s).\n", failed);
  fflush(stdout);
  return (int)failed;
}
