/* attn_build_groups (ABI 1.7): the builds of several builders over one batch in one call. Bad
 * arguments and batches (errors name "builders[i]" and equal that builder's attn_build error;
 * out is never written on failure; the previous handles stay live after a refused batch and go
 * stale for builders rebuilt before a failing one), mixed validation modes, the handles and
 * addresses of the builders' own builds, and equality with single attn_build for every pair of
 * registered backends (each with the spec and config ts_backend_setup gives it) over random
 * batches, field by field. */
#include "test_support.h"

/* A host batch with an is_prefilling (the Mamba family needs it) and positions: decodes first. */
typedef struct {
  ts_batch* b;
  uint8_t prefilling[16];
  int64_t* positions;
  int64_t pf_shape[1], pos_shape[1];
  attn_tensor_t pf_t, pos_t;
} group_batch;

static void group_batch_make(group_batch* g, const int32_t* q, const int32_t* s, int64_t n) {
  int64_t r, t = 0, p;
  g->b = ts_batch_make(q, s, n, 16, 0, -1);
  for (r = 0; r < n; ++r) g->prefilling[r] = q[r] > 1 || s[r] == q[r];
  g->pf_shape[0] = n;
  g->pf_t = ts_host_tensor(g->prefilling, 1, g->pf_shape, ATTN_DTYPE_BOOL, 8);
  g->b->common.is_prefilling = &g->pf_t;
  g->positions = (int64_t*)calloc((size_t)g->b->num_tokens + 1, sizeof(int64_t));
  for (r = 0; r < n; ++r)
    for (p = s[r] - q[r]; p < s[r]; ++p) g->positions[t++] = p;
  g->pos_shape[0] = g->b->num_tokens;
  g->pos_t = ts_host_tensor(g->positions, 1, g->pos_shape, ATTN_DTYPE_INT, 64);
  g->b->common.positions = &g->pos_t;
}

static void group_batch_free(group_batch* g) {
  ts_batch_free(g->b);
  free(g->positions);
}

/* A random batch of 1..8 requests, decodes (query 1) first, then prefills and chunks. */
static void group_batch_random(group_batch* g, uint64_t* rng) {
  int32_t q[8], s[8];
  const int64_t n = ts_rand_range(rng, 1, 8);
  int64_t r;
  for (r = 0; r < n; ++r) {
    s[r] = (int32_t)ts_rand_range(rng, 1, 300);
    q[r] = ts_rand_range(rng, 0, 1) ? 1 : (int32_t)ts_rand_range(rng, 1, s[r] < 64 ? s[r] : 64);
  }
  ts_decodes_first(q, s, n, 1);
  group_batch_make(g, q, s, n);
}

static const int32_t kQ[3] = {1, 1, 5};
static const int32_t kS[3] = {40, 57, 20};

static attn_builder_t* mamba_builder(void) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  spec.kind = ATTN_KV_MAMBA;
  spec.mamba_chunk_size = 16;
  return ts_builder("MAMBA2", &spec, &c);
}

static void test_bad_arguments(void** state) {
  const attn_kv_cache_spec_t spec = ts_spec();
  const attn_builder_config_t c = ts_config();
  attn_builder_t* fa = ts_builder("FLASH_ATTN", &spec, &c);
  attn_builder_t* mb = mamba_builder();
  attn_builder_t* pair[2];
  attn_builder_t* with_null[2];
  attn_builder_t* twice[3];
  attn_metadata_t* out[3] = {UNTOUCHED_PTR, UNTOUCHED_PTR, UNTOUCHED_PTR};
  group_batch g;
  (void)state;
  group_batch_make(&g, kQ, kS, 3);
  pair[0] = fa;
  pair[1] = mb;
  with_null[0] = fa;
  with_null[1] = NULL;
  twice[0] = fa;
  twice[1] = mb;
  twice[2] = fa;
  ASSERT_ERROR(attn_build_groups(NULL, 2, NULL, &g.b->common, 0, out, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "builders is NULL");
  ASSERT_ERROR(attn_build_groups(pair, 2, NULL, &g.b->common, 0, NULL, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  ASSERT_ERROR(attn_build_groups(pair, 0, NULL, &g.b->common, 0, out, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "num_builders=0");
  ASSERT_ERROR(attn_build_groups(with_null, 2, NULL, &g.b->common, 0, out, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "builders[1] is NULL");
  ASSERT_ERROR(attn_build_groups(twice, 3, NULL, &g.b->common, 0, out, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "builders[2] is builders[0]");
  ASSERT_ERROR(attn_build_groups(pair, 2, NULL, NULL, 0, out, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common is NULL");
  {
    const int64_t prefixes[2] = {0, -1};
    ASSERT_ERROR(attn_build_groups(pair, 2, prefixes, &g.b->common, 0, out, NULL),
                 ATTN_ERR_INVALID_ARGUMENT, "builders[1]: common_prefix_len=-1 is negative");
  }
  assert_ptr_equal(out[0], UNTOUCHED_PTR);
  assert_ptr_equal(out[1], UNTOUCHED_PTR);
  assert_ptr_equal(out[2], UNTOUCHED_PTR);
  /* Both builders are free again after every refusal. */
  ASSERT_OK(attn_build_groups(pair, 2, NULL, &g.b->common, 0, out, NULL));
  assert_string_equal(attn_metadata_kind(out[0]), "FLASH_ATTN");
  assert_string_equal(attn_metadata_kind(out[1]), "MAMBA2");
  attn_builder_destroy(fa);
  attn_builder_destroy(mb);
  group_batch_free(&g);
}

/* The message of builder `b`'s own attn_build on `common`, or "" when it builds. */
static void single_error(attn_builder_t* b, int64_t prefix, const attn_common_metadata_t* common,
                         char* msg, size_t n, int32_t* code) {
  attn_metadata_t* m = NULL;
  attn_error_t* e = attn_build(b, prefix, common, 0, &m, NULL);
  msg[0] = '\0';
  *code = ATTN_OK;
  if (e != NULL) {
    snprintf(msg, n, "%s", attn_error_message(e));
    *code = attn_error_code(e);
    attn_error_destroy(e);
  }
}

/* The group's error is "builders[i]: " + builders[i]'s own attn_build message. */
static void expect_group_error(attn_builder_t** group, size_t n, const int64_t* prefixes,
                               const attn_common_metadata_t* common, size_t i,
                               attn_builder_t* twin) {
  char own[1024], expected[1100];
  int32_t code;
  attn_metadata_t* out[4] = {UNTOUCHED_PTR, UNTOUCHED_PTR, UNTOUCHED_PTR, UNTOUCHED_PTR};
  attn_error_t* e;
  single_error(twin, prefixes ? prefixes[i] : 0, common, own, sizeof own, &code);
  assert_int_not_equal(code, ATTN_OK);
  snprintf(expected, sizeof expected, "builders[%zu]: %s", i, own);
  e = attn_build_groups(group, n, prefixes, common, 0, out, NULL);
  assert_non_null(e);
  assert_int_equal(attn_error_code(e), code);
  assert_string_equal(attn_error_message(e), expected);
  attn_error_destroy(e);
  assert_ptr_equal(out[0], UNTOUCHED_PTR);
  assert_ptr_equal(out[n - 1], UNTOUCHED_PTR);
}

static void test_refused_batches(void** state) {
  const attn_kv_cache_spec_t spec = ts_spec();
  attn_kv_cache_spec_t spec32 = ts_spec();
  attn_builder_config_t c = ts_config(), small = ts_config(), short_len = ts_config();
  attn_builder_t *fa, *fa_small, *fa_small_twin, *fa32, *fa32_twin, *mb, *fa_short, *fa_short_twin;
  attn_builder_t* group[3];
  attn_metadata_t* before[2] = {NULL, NULL};
  attn_metadata_t* out[3];
  attn_field_t f = ATTN_FIELD_INIT;
  group_batch g;
  (void)state;
  small.max_num_seqs = 2;
  short_len.max_model_len = 50;
  spec32.block_size = 32;
  fa = ts_builder("FLASH_ATTN", &spec, &c);
  fa_small = ts_builder("FLASH_ATTN", &spec, &small);
  fa_small_twin = ts_builder("FLASH_ATTN", &spec, &small);
  fa32 = ts_builder("FLASH_ATTN", &spec32, &c);
  fa32_twin = ts_builder("FLASH_ATTN", &spec32, &c);
  fa_short = ts_builder("FLASH_ATTN", &spec, &short_len);
  fa_short_twin = ts_builder("FLASH_ATTN", &spec, &short_len);
  mb = mamba_builder();
  group_batch_make(&g, kQ, kS, 3);

  /* A good build first: its handles must survive the refusals below. */
  group[0] = fa;
  group[1] = mb;
  ASSERT_OK(attn_build_groups(group, 2, NULL, &g.b->common, 0, before, NULL));

  /* Each builder's own limits: max_num_seqs (O(1)), max_model_len (the longest seq_len). */
  group[1] = fa_small;
  expect_group_error(group, 2, NULL, &g.b->common, 1, fa_small_twin);
  group[1] = fa_short;
  expect_group_error(group, 2, NULL, &g.b->common, 1, fa_short_twin);
  /* A table wide enough at block size 32 but not at 16: the block-16 builder refuses it. */
  g.b->bt_shape[1] = 2; /* cdiv(57, 32) = 2 columns; block 16 needs 4 */
  group[0] = fa32;
  group[1] = mb;
  group[2] = fa;
  {
    attn_builder_t* twin = ts_builder("FLASH_ATTN", &spec, &c);
    expect_group_error(group, 3, NULL, &g.b->common, 2, twin);
    attn_builder_destroy(twin);
  }
  /* ... and alone with the block-32 builder it builds, as fa32's own build does. */
  {
    attn_metadata_t* single = NULL;
    ASSERT_OK(attn_build_groups(group, 1, NULL, &g.b->common, 0, out, NULL));
    ASSERT_OK(attn_build(fa32_twin, 0, &g.b->common, 0, &single, NULL));
    ts_expect_same_metadata(out[0], single, "block 32 alone");
  }
  g.b->bt_shape[1] = g.b->width;
  /* A batch every builder refuses: the first names it. */
  g.b->qsl[1] = 7; /* query 7 > max_query_len */
  group[0] = mb;
  group[1] = fa;
  {
    attn_builder_t* twin = mamba_builder();
    expect_group_error(group, 2, NULL, &g.b->common, 0, twin);
    attn_builder_destroy(twin);
  }
  g.b->qsl[1] = 1;
  /* The refusals left fa and mb's earlier results live. */
  ASSERT_OK(attn_metadata_get(before[0], "max_query_len", &f));
  assert_int_equal(f.int_value, 5);
  assert_int_equal(attn_metadata_field_count(before[1]) > 0, 1);
  {
    const attn_tensor_t* t = NULL;
    ASSERT_OK(attn_metadata_get_tensor(before[0], "seq_lens", &t));
    assert_non_null(t);
  }

  attn_builder_destroy(fa);
  attn_builder_destroy(fa_small);
  attn_builder_destroy(fa_small_twin);
  attn_builder_destroy(fa32);
  attn_builder_destroy(fa32_twin);
  attn_builder_destroy(fa_short);
  attn_builder_destroy(fa_short_twin);
  attn_builder_destroy(mb);
  group_batch_free(&g);
}

/* FLASH_ATTN's cascade check runs in its build (common_prefix_len must be whole blocks): the
 * builders before it were rebuilt, so their earlier handles are stale; out is untouched. */
static void test_failure_during_build(void** state) {
  const attn_kv_cache_spec_t spec = ts_spec();
  const attn_builder_config_t c = ts_config();
  attn_builder_t* mb = mamba_builder();
  attn_builder_t* fa = ts_builder("FLASH_ATTN", &spec, &c);
  attn_builder_t* twin = ts_builder("FLASH_ATTN", &spec, &c);
  attn_builder_t* group[2];
  attn_metadata_t* before[2] = {NULL, NULL};
  attn_metadata_t* out[2] = {UNTOUCHED_PTR, UNTOUCHED_PTR};
  const int64_t prefixes[2] = {0, 5};
  attn_field_t f = ATTN_FIELD_INIT;
  group_batch g;
  (void)state;
  group_batch_make(&g, kQ, kS, 3);
  group[0] = mb;
  group[1] = fa;
  ASSERT_OK(attn_build_groups(group, 2, NULL, &g.b->common, 0, before, NULL));
  expect_group_error(group, 2, prefixes, &g.b->common, 1, twin);
  assert_ptr_equal(out[0], UNTOUCHED_PTR);
  ASSERT_ERROR(attn_metadata_get(before[0], "num_prefills", &f), ATTN_ERR_INVALID_ARGUMENT,
               "stale");
  /* FLASH_ATTN refused before writing anything, as its own attn_build does: still live. */
  ASSERT_OK(attn_metadata_get(before[1], "max_query_len", &f));
  attn_builder_destroy(mb);
  attn_builder_destroy(fa);
  attn_builder_destroy(twin);
  group_batch_free(&g);
}

/* A group's results are the builders' own: the same addresses as their attn_build, each
 * earlier handle stale, and one builder trusted (ATTN_VALIDATE_TRUSTED, reads no values) beside
 * one that checks them: the values are checked for the latter only. */
static void test_same_builders(void** state) {
  const attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t trusted = ts_config();
  attn_builder_t* fa;
  attn_builder_t* mb = mamba_builder();
  attn_builder_t* mb_twin = mamba_builder();
  attn_builder_t* group[2];
  attn_metadata_t *single_fa = NULL, *single_mb = NULL, *out[2] = {NULL, NULL};
  attn_field_t f = ATTN_FIELD_INIT;
  size_t k;
  group_batch g;
  (void)state;
  trusted.validate = ATTN_VALIDATE_TRUSTED;
  fa = ts_builder("FLASH_ATTN", &spec, &trusted);
  group_batch_make(&g, kQ, kS, 3);
  ASSERT_OK(attn_build(fa, 0, &g.b->common, 0, &single_fa, NULL));
  ASSERT_OK(attn_build(mb, 0, &g.b->common, 0, &single_mb, NULL));
  {
    /* Keep the single results to compare after the group call made the handles stale. */
    attn_metadata_t *keep_fa = NULL, *keep_mb = NULL;
    ASSERT_OK(attn_metadata_clone(single_fa, &keep_fa));
    ASSERT_OK(attn_metadata_clone(single_mb, &keep_mb));
    group[0] = fa;
    group[1] = mb;
    ASSERT_OK(attn_build_groups(group, 2, NULL, &g.b->common, 0, out, NULL));
    ts_expect_same_metadata(out[0], keep_fa, "FLASH_ATTN (trusted) in a group");
    ts_expect_same_metadata(out[1], keep_mb, "MAMBA2 in a group");
    ASSERT_ERROR(attn_metadata_get(single_fa, "max_query_len", &f), ATTN_ERR_INVALID_ARGUMENT,
                 "stale");
    ASSERT_ERROR(attn_metadata_get(single_mb, "num_prefills", &f), ATTN_ERR_INVALID_ARGUMENT,
                 "stale");
    attn_metadata_destroy(keep_fa);
    attn_metadata_destroy(keep_mb);
  }
  /* The same persistent addresses as a single build of the same builder. */
  {
    const void* addresses[64];
    const size_t fields = attn_metadata_field_count(out[1]);
    assert_true(fields <= 64);
    ASSERT_OK(attn_build(mb, 0, &g.b->common, 0, &single_mb, NULL));
    for (k = 0; k < fields; ++k) {
      attn_field_t a = ATTN_FIELD_INIT;
      ASSERT_OK(attn_metadata_field(single_mb, k, &a));
      addresses[k] = a.kind == ATTN_FIELD_TENSOR ? a.tensor->data : NULL;
    }
    ASSERT_OK(attn_build_groups(group, 2, NULL, &g.b->common, 0, out, NULL));
    for (k = 0; k < fields; ++k) {
      attn_field_t b = ATTN_FIELD_INIT;
      ASSERT_OK(attn_metadata_field(out[1], k, &b));
      assert_ptr_equal(addresses[k], b.kind == ATTN_FIELD_TENSOR ? b.tensor->data : NULL);
    }
  }
  /* Values only the trusted builder would accept: refused for MAMBA2 (builders[1]), with its
   * own message; FLASH_ATTN alone (trusted, reads none) still builds. */
  g.b->seq[1] = 3; /* below nothing for the query (1) but the bound and table are fine */
  g.b->seq[2] = 2; /* below its query length 5 */
  expect_group_error(group, 2, NULL, &g.b->common, 1, mb_twin);
  ASSERT_OK(attn_build_groups(group, 1, NULL, &g.b->common, 0, out, NULL));
  attn_builder_destroy(fa);
  attn_builder_destroy(mb);
  attn_builder_destroy(mb_twin);
  group_batch_free(&g);
}

/* The batch is converted once, into builders[0]'s storage: builders[0] building alone later
 * (another batch) must not change what builders[1]'s grouped result reads. */
static void test_first_rebuilds_alone(void** state) {
  const attn_kv_cache_spec_t spec = ts_spec();
  const attn_builder_config_t config = ts_config();
  attn_builder_t* group[2];
  attn_metadata_t *out[2] = {NULL, NULL}, *kept = NULL, *alone = NULL;
  static const int32_t q2[4] = {1, 1, 1, 7};
  static const int32_t s2[4] = {300, 9, 64, 7};
  group_batch g, g2;
  int round;
  (void)state;
  group[0] = ts_builder("FLASH_ATTN", &spec, &config);
  group[1] = mamba_builder();
  group_batch_make(&g, kQ, kS, 3);
  group_batch_make(&g2, q2, s2, 4);
  ASSERT_OK(attn_build_groups(group, 2, NULL, &g.b->common, 0, out, NULL));
  ASSERT_OK(attn_metadata_clone(out[1], &kept));
  for (round = 0; round < 3; ++round) {
    ASSERT_OK(attn_build(group[0], 0, &g2.b->common, 0, &alone, NULL));
    ts_expect_same_metadata(out[1], kept, "MAMBA2's grouped result after FLASH_ATTN rebuilt alone");
  }
  attn_metadata_destroy(kept);
  attn_builder_destroy(group[0]);
  attn_builder_destroy(group[1]);
  group_batch_free(&g);
  group_batch_free(&g2);
}

/* Every pair of registered backends (each with its own spec and config) over random batches:
 * attn_build_groups on one set of builders equals attn_build on a twin set, field by field; a
 * pair one of whose builders refuses the batch fails with that builder's message. */
enum { kMaxBackends = 128 };

static void test_every_pair(void** state) {
  const attn_builder_config_t base = ts_config();
  attn_builder_t* grouped[kMaxBackends];
  attn_builder_t* single[kMaxBackends];
  attn_metadata_t* expected[kMaxBackends];
  char errors[kMaxBackends][512];
  int32_t codes[kMaxBackends];
  size_t names[kMaxBackends];
  size_t count = 0, i, j, pairs = 0, refused = 0;
  uint64_t rng = 2024;
  int it;
  (void)state;
  for (i = 0; i < attn_backend_count() && count < kMaxBackends; ++i) {
    attn_kv_cache_spec_t spec;
    attn_builder_config_t config;
    const char* name = NULL;
    if (!ts_backend_setup(i, -1, &base, &spec, &config)) continue;
    ASSERT_OK(attn_backend_name(i, &name));
    grouped[count] = ts_builder(name, &spec, &config);
    single[count] = ts_builder(name, &spec, &config);
    names[count] = i;
    ++count;
  }
  assert_true(count >= 10);
  for (it = 0; it < 4; ++it) {
    group_batch g;
    group_batch_random(&g, &rng);
    for (i = 0; i < count; ++i) {
      attn_error_t* e;
      expected[i] = NULL;
      errors[i][0] = '\0';
      codes[i] = ATTN_OK;
      /* Both builders of a backend build the batch once before: a grouped builder builds it
       * once per pair, and a host field may depend on the batch before (ROCM_AITER_MLA_SPARSE's
       * scheduler_launched, vLLM 0.33's metadata_key cache: false for the same lengths again) */
      attn_error_destroy(attn_build(grouped[i], 0, &g.b->common, 0, &expected[i], NULL));
      attn_error_destroy(attn_build(single[i], 0, &g.b->common, 0, &expected[i], NULL));
      e = attn_build(single[i], 0, &g.b->common, 0, &expected[i], NULL);
      if (e != NULL) {
        snprintf(errors[i], sizeof errors[i], "%s", attn_error_message(e));
        codes[i] = attn_error_code(e);
        attn_error_destroy(e);
        expected[i] = NULL;
      }
    }
    for (i = 0; i < count; ++i)
      for (j = 0; j < count; ++j) {
        attn_builder_t* group[2];
        attn_metadata_t* out[2] = {UNTOUCHED_PTR, UNTOUCHED_PTR};
        attn_error_t* e;
        char what[256];
        if (i == j) continue;
        group[0] = grouped[i];
        group[1] = grouped[j];
        e = attn_build_groups(group, 2, NULL, &g.b->common, 0, out, NULL);
        ++pairs;
        if (expected[i] != NULL && expected[j] != NULL) {
          if (e != NULL)
            fail_msg("pair %zu,%zu failed: %s", names[i], names[j], attn_error_message(e));
          snprintf(what, sizeof what, "backend %zu beside %zu (batch %d)", names[i], names[j], it);
          ts_expect_same_metadata(out[0], expected[i], what);
          snprintf(what, sizeof what, "backend %zu after %zu (batch %d)", names[j], names[i], it);
          ts_expect_same_metadata(out[1], expected[j], what);
          continue;
        }
        ++refused;
        if (e == NULL) fail_msg("pair %zu,%zu built a batch one of them refuses", names[i], names[j]);
        assert_ptr_equal(out[0], UNTOUCHED_PTR);
        assert_ptr_equal(out[1], UNTOUCHED_PTR);
        if (expected[i] == NULL && expected[j] != NULL) {
          char want[600];
          snprintf(want, sizeof want, "builders[0]: %s", errors[i]);
          assert_string_equal(attn_error_message(e), want);
          assert_int_equal(attn_error_code(e), codes[i]);
        } else if (expected[j] == NULL && expected[i] != NULL) {
          char want[600];
          snprintf(want, sizeof want, "builders[1]: %s", errors[j]);
          assert_string_equal(attn_error_message(e), want);
          assert_int_equal(attn_error_code(e), codes[j]);
        }
        attn_error_destroy(e);
      }
    /* The single builds are this batch's: their handles are read above, before the next. */
    group_batch_free(&g);
  }
  print_message("%zu backends, %zu pairs built (%zu with a refusing builder)\n", count, pairs,
                refused);
  for (i = 0; i < count; ++i) {
    attn_builder_destroy(grouped[i]);
    attn_builder_destroy(single[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_refused_batches),
      cmocka_unit_test(test_failure_during_build),
      cmocka_unit_test(test_same_builders),
      cmocka_unit_test(test_first_rebuilds_alone),
      cmocka_unit_test(test_every_pair),
  };
  return cmocka_run_group_tests_name("build_groups", tests, NULL, NULL);
}
