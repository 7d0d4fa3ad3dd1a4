/* KV-sharing fast prefill without a handle per pass-through (issue 35):
 * attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex (ABI 1.7) returns the caller's batch
 * itself where vLLM returns its argument (max_query_len == 1, or no logits indices), allocating
 * nothing, and the ABI 1.0 function reuses the handles attn_metadata_destroy released. Checked:
 * the same values as the ABI 1.0 function (batch, build on it), nothing allocated (malloc counted
 * in this process, glibc builds without a sanitizer), the new-batch path, older struct sizes, the
 * batch replaced in place, and every bad argument named with the outputs untouched. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#define I32(data, shape) ts_host_tensor((data), 1, (shape), ATTN_DTYPE_INT, 32)

/* ---- counting malloc (the library's operator new ends in malloc) ------------------------------ */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define COUNT_MALLOC 0
#endif
#endif
#if !defined(COUNT_MALLOC) && defined(__GLIBC__)
#define COUNT_MALLOC 1
#endif
#ifndef COUNT_MALLOC
#define COUNT_MALLOC 0
#endif

#if COUNT_MALLOC
extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t n, size_t size);
extern void* __libc_realloc(void* p, size_t size);
static long g_allocs;
void* malloc(size_t size) {
  __atomic_add_fetch(&g_allocs, 1, __ATOMIC_RELAXED);
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  __atomic_add_fetch(&g_allocs, 1, __ATOMIC_RELAXED);
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  __atomic_add_fetch(&g_allocs, 1, __ATOMIC_RELAXED);
  return __libc_realloc(p, size);
}
static long allocs(void) { return __atomic_load_n(&g_allocs, __ATOMIC_RELAXED); }
#endif

/* Fails when the counter is live and `before` differs from now; says so once when it is not. */
static void expect_no_allocation(long before, const char* what) {
#if COUNT_MALLOC
  const long n = allocs() - before;
  if (n != 0) fail_msg("%s allocated %ld times", what, n);
#else
  static int said;
  (void)before;
  if (!said) print_message("(malloc not counted in this build: %s unchecked)\n", what);
  said = 1;
#endif
}
static long alloc_count(void) {
#if COUNT_MALLOC
  return allocs();
#else
  return 0;
#endif
}

typedef struct {
  ts_batch* b;
  int32_t out[9], out_cpu[9];
  int64_t os[1];
  attn_tensor_t ot, oct;
} fixture;

/* `n` requests of query `q` and sequence 9 + q. */
static void fixture_make(fixture* f, int64_t n, int32_t q) {
  int32_t ql[8], sl[8];
  int64_t i;
  for (i = 0; i < n; ++i) {
    ql[i] = q;
    sl[i] = 9 + q;
  }
  f->b = ts_batch_make(ql, sl, n, 16, 0, -1);
  for (i = 0; i < 9; ++i) f->out[i] = f->out_cpu[i] = -9;
  f->os[0] = n + 1;
  f->ot = I32(f->out, f->os);
  f->oct = I32(f->out_cpu, f->os);
}

static attn_error_t* fp_ex(fixture* f, const attn_common_metadata_t* common,
                           attn_common_metadata_t* out_batch, attn_metadata_t** owned) {
  return attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(common, NULL, &f->ot, &f->oct,
                                                                   out_batch, owned, NULL);
}

/* What a FLASH_ATTN build makes of `c`: (num_actual_tokens, max_query_len, max_seq_len,
 * query_start_loc data, its first entries). */
static void build_summary(const attn_common_metadata_t* c, int64_t out[6]) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  const attn_tensor_t* q;
  config.device_capability = 80;
  b = ts_builder("FLASH_ATTN", &spec, &config);
  ASSERT_OK(attn_build(b, 0, c, 0, &m, NULL));
  out[0] = ts_int(m, "num_actual_tokens");
  out[1] = ts_int(m, "max_query_len");
  out[2] = ts_int(m, "max_seq_len");
  q = ts_tensor(m, "query_start_loc");
  out[3] = (int64_t)(uintptr_t)q->data;
  out[4] = ((const int32_t*)q->data)[1];
  out[5] = q->shape[0];
  attn_builder_destroy(b);
}

/* The pass-through (decodes, and a batch without logits indices): no handle, out_batch a copy
 * of the caller's struct (the same tensor pointers), the outputs untouched, nothing allocated,
 * and the same batch (and build) as the ABI 1.0 function's result. */
static void pass_through_case(int32_t q) {
  fixture f;
  attn_common_metadata_t batch, from_v1 = ATTN_COMMON_METADATA_INIT;
  attn_metadata_t* owned = (attn_metadata_t*)UNTOUCHED_PTR;
  attn_metadata_t* v1 = NULL;
  int64_t s_ex[6], s_v1[6];
  long before;
  int i;
  fixture_make(&f, 3, q);
  memset(&batch, 0x5a, sizeof batch);
  batch.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE;
  ASSERT_OK(fp_ex(&f, &f.b->common, &batch, &owned)); /* warm (first-call work, if any) */
  before = alloc_count();
  for (i = 0; i < 100; ++i) ASSERT_OK(fp_ex(&f, &f.b->common, &batch, &owned));
  expect_no_allocation(before, "the pass-through");
  assert_null(owned);
  assert_memory_equal(&batch, &f.b->common, sizeof batch);
  assert_int_equal(f.out[0], -9); /* outputs untouched */
  assert_int_equal(f.out_cpu[3], -9);
  /* the ABI 1.0 function's batch: the same values */
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&f.b->common, NULL, &f.ot,
                                                                   &f.oct, &v1, NULL));
  ASSERT_OK(attn_metadata_to_common(v1, &from_v1));
  assert_int_equal(from_v1.num_reqs, batch.num_reqs);
  assert_int_equal(from_v1.num_actual_tokens, batch.num_actual_tokens);
  assert_int_equal(from_v1.max_query_len, batch.max_query_len);
  assert_int_equal(from_v1.max_seq_len, batch.max_seq_len);
  assert_int_equal(from_v1.causal, batch.causal);
  assert_ptr_equal(from_v1.query_start_loc->data, batch.query_start_loc->data);
  assert_ptr_equal(from_v1.seq_lens->data, batch.seq_lens->data);
  assert_ptr_equal(from_v1.block_table_tensor->data, batch.block_table_tensor->data);
  assert_ptr_equal(from_v1.slot_mapping->data, batch.slot_mapping->data);
  build_summary(&batch, s_ex);
  build_summary(&from_v1, s_v1);
  assert_memory_equal(s_ex, s_v1, sizeof s_ex);
  attn_metadata_destroy(v1);
  ts_batch_free(f.b);
}

static void test_pass_through_decodes(void** state) {
  (void)state;
  pass_through_case(1);
}

static void test_pass_through_not_armed(void** state) {
  (void)state;
  pass_through_case(4); /* prefills, but no logits indices: vLLM 0.33 returns the batch */
}

/* Decodes of an armed step (logits indices given, one per request: vLLM's decode steps with
 * KV-sharing layers): passed through as well, the indices left in the batch. */
static void test_pass_through_armed_decodes(void** state) {
  fixture f;
  int32_t idx[3] = {0, 1, 2};
  int64_t is[1] = {3};
  attn_tensor_t it = I32(idx, is);
  attn_common_metadata_t batch = ATTN_COMMON_METADATA_INIT;
  attn_metadata_t* owned = (attn_metadata_t*)UNTOUCHED_PTR;
  attn_metadata_t* v1 = NULL;
  long before;
  (void)state;
  fixture_make(&f, 3, 1);
  f.b->common.logits_indices_padded = &it;
  f.b->common.num_logits_indices = 3;
  f.b->common.max_logits_per_req = 1;
  before = alloc_count();
  ASSERT_OK(fp_ex(&f, &f.b->common, &batch, &owned));
  expect_no_allocation(before, "the pass-through of armed decodes");
  assert_null(owned);
  assert_memory_equal(&batch, &f.b->common, sizeof batch);
  assert_int_equal(f.out[0], -9);
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&f.b->common, NULL, &f.ot,
                                                                   &f.oct, &v1, NULL));
  assert_ptr_equal(ts_tensor(v1, "query_start_loc")->data, f.b->qsl);
  assert_int_equal(ts_int(v1, "num_actual_tokens"), 3);
  assert_int_equal(ts_int(v1, "num_logits_indices"), 3);
  attn_metadata_destroy(v1);
  ts_batch_free(f.b);
}

/* An armed batch: the ABI 1.0 function's batch, viewed in out_batch, owned by the caller. */
static void test_new_batch_equals_v1(void** state) {
  fixture f;
  int32_t idx[3] = {3, 4, 7};
  int64_t is[1] = {3};
  attn_tensor_t it = I32(idx, is);
  attn_common_metadata_t batch = ATTN_COMMON_METADATA_INIT, from_v1 = ATTN_COMMON_METADATA_INIT;
  attn_metadata_t* owned = NULL;
  attn_metadata_t* v1 = NULL;
  int32_t v1_out[3];
  int64_t s_ex[6], s_v1[6];
  (void)state;
  fixture_make(&f, 2, 4);
  f.b->common.logits_indices_padded = &it;
  f.b->common.num_logits_indices = 3;
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&f.b->common, NULL, &f.ot,
                                                                   &f.oct, &v1, NULL));
  ASSERT_OK(attn_metadata_to_common(v1, &from_v1));
  memcpy(v1_out, f.out, sizeof v1_out);
  f.out[1] = f.out[2] = -9;
  ASSERT_OK(fp_ex(&f, &f.b->common, &batch, &owned));
  assert_non_null(owned);
  assert_string_equal(attn_metadata_kind(owned), "common");
  assert_memory_equal(f.out, v1_out, sizeof v1_out); /* {0, 1, 3}: logits 3 | 4, 7 */
  assert_int_equal(f.out[1], 1);
  assert_int_equal(f.out[2], 3);
  assert_int_equal(batch.num_actual_tokens, 3);
  assert_int_equal(batch.num_actual_tokens, from_v1.num_actual_tokens);
  assert_int_equal(batch.max_query_len, from_v1.max_query_len);
  assert_int_equal(batch.max_seq_len, from_v1.max_seq_len);
  assert_ptr_equal(batch.query_start_loc->data, f.out);
  assert_ptr_equal(batch.query_start_loc_cpu->data, f.out_cpu);
  assert_int_equal(batch.query_start_loc->shape[0], 3);
  assert_null(batch.logits_indices_padded);
  build_summary(&batch, s_ex);
  build_summary(&from_v1, s_v1);
  assert_memory_equal(s_ex, s_v1, sizeof s_ex);
  attn_metadata_destroy(owned);
  attn_metadata_destroy(v1);
  ts_batch_free(f.b);
}

/* out_batch may be common itself: the batch replaced in place, as vLLM rebinds it. */
static void test_in_place(void** state) {
  fixture f;
  int32_t idx[2] = {3, 7};
  int64_t is[1] = {2};
  attn_tensor_t it = I32(idx, is);
  attn_common_metadata_t before;
  attn_metadata_t* owned = (attn_metadata_t*)UNTOUCHED_PTR;
  (void)state;
  fixture_make(&f, 2, 1);
  before = f.b->common;
  ASSERT_OK(fp_ex(&f, &f.b->common, &f.b->common, &owned)); /* decodes: unchanged */
  assert_null(owned);
  assert_memory_equal(&before, &f.b->common, sizeof before);
  ts_batch_free(f.b);
  fixture_make(&f, 2, 4);
  f.b->common.logits_indices_padded = &it;
  f.b->common.num_logits_indices = 2;
  ASSERT_OK(fp_ex(&f, &f.b->common, &f.b->common, &owned)); /* armed: replaced */
  assert_non_null(owned);
  assert_int_equal(f.b->common.num_actual_tokens, 2);
  assert_int_equal(f.b->common.max_query_len, 1);
  assert_ptr_equal(f.b->common.query_start_loc->data, f.out);
  assert_null(f.b->common.logits_indices_padded);
  attn_metadata_destroy(owned);
  ts_batch_free(f.b);
}

/* A batch of an older header (ABI 1.0's struct_size) into a 1.7 struct: its bytes, then the
 * *_INIT defaults; out_batch keeps its struct_size. */
static void test_older_struct_sizes(void** state) {
  fixture f;
  attn_common_metadata_t batch;
  attn_metadata_t* owned = (attn_metadata_t*)UNTOUCHED_PTR;
  int64_t s_ex[6], s_in[6];
  (void)state;
  fixture_make(&f, 3, 1);
  f.b->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_0;
  memset(&batch, 0x5a, sizeof batch);
  batch.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE;
  ASSERT_OK(fp_ex(&f, &f.b->common, &batch, &owned));
  assert_null(owned);
  assert_int_equal(batch.struct_size, ATTN_COMMON_METADATA_STRUCT_SIZE);
  assert_memory_equal(((const char*)&batch) + sizeof(size_t),
                      ((const char*)&f.b->common) + sizeof(size_t),
                      ATTN_COMMON_METADATA_STRUCT_SIZE_1_0 - sizeof(size_t));
  assert_null(batch.logits_indices_padded_cpu);
  assert_null(batch.is_prefilling);
  assert_int_equal(batch.max_logits_per_req, -1);
  assert_null(batch.replay_start);
  f.b->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE;
  build_summary(&batch, s_ex);
  build_summary(&f.b->common, s_in);
  assert_memory_equal(s_ex, s_in, sizeof s_ex);
  ts_batch_free(f.b);
}

/* Every bad argument of the new function, named, with out_batch and *out_owned untouched. */
static void test_ex_bad_input(void** state) {
  fixture f;
  attn_common_metadata_t batch, c, keep;
  attn_metadata_t* owned = (attn_metadata_t*)UNTOUCHED_PTR;
  int32_t idx[1] = {1};
  int64_t is[1] = {1};
  attn_tensor_t it = I32(idx, is);
  (void)state;
  fixture_make(&f, 3, 1);
  memset(&batch, 0x5a, sizeof batch);
  batch.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE;
  keep = batch;
#define EXPECT_BAD(expr, substring)                                 \
  do {                                                              \
    ASSERT_ERROR(expr, ATTN_ERR_INVALID_ARGUMENT, substring);       \
    assert_ptr_equal(owned, UNTOUCHED_PTR);                         \
    assert_memory_equal(&batch, &keep, sizeof batch);               \
  } while (0)
  EXPECT_BAD(attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(NULL, NULL, &f.ot, &f.oct,
                                                                       &batch, &owned, NULL),
             "common is NULL");
  EXPECT_BAD(attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(
                 &f.b->common, NULL, &f.ot, &f.oct, NULL, &owned, NULL),
             "out_batch is NULL");
  ASSERT_ERROR(attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(
                   &f.b->common, NULL, &f.ot, &f.oct, &batch, NULL, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_owned is NULL");
  assert_memory_equal(&batch, &keep, sizeof batch);
  EXPECT_BAD(attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(
                 &f.b->common, NULL, NULL, &f.oct, &batch, &owned, NULL),
             "out_query_start_loc is NULL");
  EXPECT_BAD(attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(
                 &f.b->common, NULL, &f.ot, NULL, &batch, &owned, NULL),
             "out_query_start_loc_cpu is NULL");
  c = f.b->common;
  c.struct_size = 12;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "common->struct_size=12");
  c.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_0 + 4; /* between two versions */
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "is not the size of an ABI version");
  batch.struct_size = keep.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_0;
  EXPECT_BAD(fp_ex(&f, &f.b->common, &batch, &owned), "out_batch->struct_size=");
  batch.struct_size = keep.struct_size = 7;
  EXPECT_BAD(fp_ex(&f, &f.b->common, &batch, &owned), "out_batch->struct_size=7");
  batch.struct_size = keep.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE;
  /* the scalars and the required tensors, as a build names them */
  c = f.b->common;
  c.num_reqs = -2;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "common->num_reqs=-2 is negative");
  c = f.b->common;
  c.num_actual_tokens = (int64_t)1 << 40;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "exceeds 2^31-1");
  c = f.b->common;
  c.max_query_len = -1;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "common->max_query_len=-1 is negative");
  c = f.b->common;
  c.max_seq_len = -3;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "common->max_seq_len=-3 is negative");
  c = f.b->common;
  c.query_start_loc = NULL;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "common->query_start_loc is NULL");
  c = f.b->common;
  c.seq_lens = NULL;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "common->seq_lens is NULL");
  c = f.b->common;
  c.block_table_tensor = NULL;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "common->block_table_tensor is NULL");
  c = f.b->common;
  c.slot_mapping = NULL;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "common->slot_mapping is NULL");
  c = f.b->common;
  c.extension = &c;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "common->extension must be NULL");
  c = f.b->common;
  c.num_logits_indices = 3;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned),
             "common->num_logits_indices=3 but common->logits_indices_padded is NULL");
  c = f.b->common;
  c.logits_indices_padded_cpu = &it;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned),
             "common->logits_indices_padded_cpu is given but common->logits_indices_padded is NULL");
  /* an armed batch goes through the ABI 1.0 function's checks */
  c = f.b->common;
  c.max_query_len = 2;
  c.logits_indices_padded = &it;
  c.num_logits_indices = 1;
  idx[0] = 99;
  EXPECT_BAD(fp_ex(&f, &c, &batch, &owned), "logits_indices_padded[0]=99 is outside the batch");
#undef EXPECT_BAD
  ts_batch_free(f.b);
}

/* The ABI 1.0 function keeps its contract (a new caller-owned handle each call, valid until
 * destroyed) but reuses the handles attn_metadata_destroy released on this thread: a step's make
 * and destroy allocate nothing after the first, and a reused handle shows the new batch. */
static void test_v1_reuses_released_handles(void** state) {
  fixture f, g;
  attn_metadata_t *a = NULL, *b = NULL, *c = NULL;
  long before;
  int i;
  (void)state;
  fixture_make(&f, 3, 1);
  fixture_make(&g, 5, 1);
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&f.b->common, NULL, &f.ot,
                                                                   &f.oct, &a, NULL));
  assert_int_equal(ts_int(a, "num_reqs"), 3);
  (void)ts_tensor(a, "query_start_loc"); /* a view made, to see it refreshed after reuse */
  attn_metadata_destroy(a);
  before = alloc_count();
  for (i = 0; i < 100; ++i) {
    ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&f.b->common, NULL, &f.ot,
                                                                     &f.oct, &a, NULL));
    attn_metadata_destroy(a);
  }
  expect_no_allocation(before, "the ABI 1.0 pass-through with its destroy");
  /* a reused handle holds the new batch, views included */
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&g.b->common, NULL, &g.ot,
                                                                   &g.oct, &b, NULL));
  assert_int_equal(ts_int(b, "num_reqs"), 5);
  assert_ptr_equal(ts_tensor(b, "query_start_loc")->data, g.b->qsl);
  assert_int_equal(ts_tensor(b, "query_start_loc")->shape[0], 6);
  /* two live results are two handles */
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&f.b->common, NULL, &f.ot,
                                                                   &f.oct, &c, NULL));
  assert_ptr_not_equal(b, c);
  assert_int_equal(ts_int(c, "num_reqs"), 3);
  assert_int_equal(ts_int(b, "num_reqs"), 5);
  attn_metadata_destroy(b);
  attn_metadata_destroy(c);
  ts_batch_free(f.b);
  ts_batch_free(g.b);
}

/* Released handles are kept per thread: one made on a thread may be released on another, and a
 * thread that exits frees what it kept (the leak checkers of the valgrind and ASan lanes see
 * the rest). */
typedef struct {
  fixture* f;
  attn_metadata_t* made[3];
  attn_metadata_t* release;
} thread_job;

static void* make_and_release(void* arg) {
  thread_job* job = (thread_job*)arg;
  int i;
  attn_metadata_destroy(job->release); /* into this thread's cache, freed at its exit */
  for (i = 0; i < 3; ++i)
    if (attn_make_kv_sharing_fast_prefill_common_attn_metadata(&job->f->b->common, NULL,
                                                               &job->f->ot, &job->f->oct,
                                                               &job->made[i], NULL) != NULL)
      job->made[i] = NULL;
  return NULL;
}

static void test_handles_across_threads(void** state) {
  fixture f;
  thread_job job;
  pthread_t t;
  int i;
  (void)state;
  fixture_make(&f, 2, 1);
  job.f = &f;
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&f.b->common, NULL, &f.ot,
                                                                   &f.oct, &job.release, NULL));
  assert_int_equal(pthread_create(&t, NULL, make_and_release, &job), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  for (i = 0; i < 3; ++i) {
    assert_non_null(job.made[i]);
    assert_int_equal(ts_int(job.made[i], "num_reqs"), 2);
    attn_metadata_destroy(job.made[i]); /* made there, released here */
  }
  ts_batch_free(f.b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pass_through_decodes),
      cmocka_unit_test(test_pass_through_not_armed),
      cmocka_unit_test(test_pass_through_armed_decodes),
      cmocka_unit_test(test_new_batch_equals_v1),
      cmocka_unit_test(test_in_place),
      cmocka_unit_test(test_older_struct_sizes),
      cmocka_unit_test(test_ex_bad_input),
      cmocka_unit_test(test_v1_reuses_released_handles),
      cmocka_unit_test(test_handles_across_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
