/* The batches of vLLM's test vectors (tests/data/vectors, copied from ../shared/vectors) through
 * FLASH_ATTN and attn_common_metadata_unpadded. The vectors' expected values describe batch
 * utilities (splits, local virtual batches, fast prefill, micro-batch slices); here they are
 * checked where FLASH_ATTN's metadata determines them: token counts are prefix sums of the
 * query_start_loc the build returns, and fields the utilities keep are the build's fields. */
#include "json.h"
#include "test_support.h"

#ifndef ATTN_TEST_VECTORS_DIR
#error "ATTN_TEST_VECTORS_DIR must name tests/data/vectors"
#endif

static json_value* load(const char* name) {
  char path[1024];
  json_value* v;
  snprintf(path, sizeof path, "%s/%s", ATTN_TEST_VECTORS_DIR, name);
  v = json_load(path);
  if (v == NULL) fail_msg("cannot read %s", path);
  return v;
}

typedef struct {
  attn_builder_t* builder;
} fixture;

static int setup(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  fixture* f = (fixture*)calloc(1, sizeof *f);
  f->builder = ts_builder("FLASH_ATTN", &spec, &config);
  *state = f;
  return 0;
}

static int teardown(void** state) {
  fixture* f = (fixture*)*state;
  attn_builder_destroy(f->builder);
  free(f);
  return 0;
}

/* Builds a batch and checks FLASH_ATTN's passthrough fields against it. */
static const attn_metadata_t* build_checked(fixture* f, const int32_t* q, const int32_t* s,
                                            int64_t n, int64_t padded, ts_batch** out_batch) {
  ts_batch* b = ts_batch_make(q, s, n, 16, 0, padded);
  attn_metadata_t* m = NULL;
  int64_t r, tokens = 0;
  ASSERT_OK(attn_build(f->builder, 0, &b->common, 0, &m, NULL));
  for (r = 0; r < n; ++r) tokens += q[r];
  assert_int_equal(ts_int(m, "num_actual_tokens"), padded >= 0 ? padded : tokens);
  ts_expect_i32(m, "query_start_loc", b->qsl, n + 1);
  ts_expect_i32(m, "seq_lens", s, n);
  assert_int_equal(((const int32_t*)ts_tensor(m, "query_start_loc")->data)[n], tokens);
  *out_batch = b;
  return m;
}

static int32_t qsl_at(const attn_metadata_t* m, int64_t i) {
  return ((const int32_t*)ts_tensor(m, "query_start_loc")->data)[i];
}

static void test_split_decodes_and_prefills(void** state) {
  fixture* f = (fixture*)*state;
  json_value* v = load("split_decodes_and_prefills.json");
  const json_value* cases = json_get(v, "cases");
  size_t c;
  assert_non_null(cases);
  assert_int_equal(cases->count, 10);
  for (c = 0; c < cases->count; ++c) {
    const json_value* cs = &cases->items[c];
    int64_t q64[64], expected[4], r;
    int32_t q[64], s[64];
    const size_t n = json_ints(json_get(cs, "query_lens"), q64, 64);
    const json_value* padded_v = json_get(cs, "padded_num_tokens");
    const int64_t padded = padded_v ? (int64_t)padded_v->number : -1;
    ts_batch* b = NULL;
    const attn_metadata_t* m;
    assert_int_equal(json_ints(json_get(cs, "expected"), expected, 4), 4);
    for (r = 0; r < (int64_t)n; ++r) {
      q[r] = (int32_t)q64[r];
      s[r] = (int32_t)(10 * (r + 1)); /* the vectors' setup: seq_lens[i] = 10 * (i + 1) */
    }
    m = build_checked(f, q, s, (int64_t)n, padded, &b);
    /* [num_decodes, num_prefills, num_decode_tokens, num_prefill_tokens] partition the batch */
    assert_int_equal(expected[0] + expected[1], (int64_t)n);
    if (padded < 0) {
      assert_int_equal(expected[2], qsl_at(m, expected[0]));
      assert_int_equal(expected[2] + expected[3], qsl_at(m, (int64_t)n));
    } else {
      /* padded uniform batch: every token is a decode token, padding included */
      attn_metadata_t* u = NULL;
      int64_t real = 0;
      assert_int_equal(expected[2], ts_int(m, "num_actual_tokens"));
      for (r = 0; r < (int64_t)n; ++r)
        if (q[r] > 0) ++real;
      ASSERT_OK(attn_common_metadata_unpadded(&b->common, qsl_at(m, real), real, &u));
      assert_int_equal(ts_int(u, "num_reqs"), 3);
      assert_int_equal(ts_int(u, "num_actual_tokens"), 6);
      attn_metadata_destroy(u);
    }
    ts_batch_free(b);
  }
  json_free(v);
}

static void test_split_decodes_prefills_and_extends(void** state) {
  fixture* f = (fixture*)*state;
  json_value* v = load("split_decodes_prefills_and_extends.json");
  const json_value* cs = &json_get(v, "cases")->items[0];
  int64_t q64[8], s64[8], e[6];
  int32_t q[8], s[8];
  size_t n = json_ints(json_get(cs, "query_lens"), q64, 8), i;
  ts_batch* b = NULL;
  const attn_metadata_t* m;
  assert_int_equal(json_ints(json_get(cs, "seq_lens"), s64, 8), n);
  assert_int_equal(json_ints(json_get(cs, "expected"), e, 6), 6);
  for (i = 0; i < n; ++i) {
    q[i] = (int32_t)q64[i];
    s[i] = (int32_t)s64[i];
  }
  m = build_checked(f, q, s, (int64_t)n, -1, &b);
  /* decode -> extend -> prefill regions, as prefix sums of the build's query_start_loc */
  assert_int_equal(e[0] + e[1] + e[2], (int64_t)n);
  assert_int_equal(e[3], qsl_at(m, e[0]));
  assert_int_equal(e[4], qsl_at(m, e[0] + e[1]) - qsl_at(m, e[0]));
  assert_int_equal(e[5], qsl_at(m, (int64_t)n) - qsl_at(m, e[0] + e[1]));
  /* extends have context, prefills none: seq_len == query_len exactly for the prefills */
  for (i = (size_t)(e[0] + e[1]); i < n; ++i) assert_int_equal(s[i], q[i]);
  ts_batch_free(b);
  json_free(v);
}

static void test_kv_sharing_fast_prefill(void** state) {
  fixture* f = (fixture*)*state;
  json_value* v = load("kv_sharing_fast_prefill.json");
  const json_value* cs = &json_get(v, "cases")->items[0];
  const json_value* expected = json_get(cs, "expected");
  int64_t q64[8], s64[8], li[8], es[8];
  int32_t q[8], s[8];
  size_t n = json_ints(json_get(cs, "query_lens"), q64, 8), i;
  const size_t nli = json_ints(json_get(cs, "logits_indices_padded"), li, 8);
  int64_t li_shape[1];
  attn_tensor_t lit;
  ts_batch* b = NULL;
  attn_metadata_t* m = NULL;
  attn_metadata_t* u = NULL;
  json_ints(json_get(cs, "seq_lens"), s64, 8);
  for (i = 0; i < n; ++i) {
    q[i] = (int32_t)q64[i];
    s[i] = (int32_t)s64[i];
  }
  b = ts_batch_make(q, s, (int64_t)n, (int32_t)json_get(cs, "block_size")->number, 0, -1);
  li_shape[0] = (int64_t)nli;
  lit = ts_host_tensor(li, 1, li_shape, ATTN_DTYPE_INT, 64);
  b->common.logits_indices_padded = &lit;
  b->common.num_logits_indices = (int64_t)json_get(cs, "num_logits_indices")->number;
  ASSERT_OK(attn_build(f->builder, 0, &b->common, 0, &m, NULL));
  /* fast prefill keeps seq_lens: FLASH_ATTN's seq_lens are the expected ones */
  assert_int_equal(json_ints(json_get(expected, "seq_lens"), es, 8), n);
  for (i = 0; i < n; ++i) assert_int_equal(((const int32_t*)ts_tensor(m, "seq_lens")->data)[i], es[i]);
  /* the logits fields ride along through unpadded */
  ASSERT_OK(attn_common_metadata_unpadded(&b->common, b->num_tokens, (int64_t)n, &u));
  assert_int_equal(ts_int(u, "num_logits_indices"), 4);
  assert_int_equal(ts_tensor(u, "logits_indices_padded")->shape[0], 5);
  attn_metadata_destroy(u);
  ts_batch_free(b);
  json_free(v);
}

static void test_local_attention_batch(void** state) {
  fixture* f = (fixture*)*state;
  json_value* v = load("local_attention_virtual_batches.json");
  const json_value* cs = &json_get(v, "cases")->items[0];
  int64_t q64[8], s64[8], expected_qsl[16];
  int32_t q[8], s[8];
  size_t n = json_ints(json_get(cs, "query_lens"), q64, 8), i;
  const size_t nv = json_ints(json_get(json_get(cs, "expected"), "query_start_loc"), expected_qsl, 16);
  ts_batch* b = NULL;
  const attn_metadata_t* m;
  json_ints(json_get(cs, "seq_lens"), s64, 8);
  for (i = 0; i < n; ++i) {
    q[i] = (int32_t)q64[i];
    s[i] = (int32_t)s64[i];
  }
  m = build_checked(f, q, s, (int64_t)n, -1, &b);
  /* the virtual batches cover exactly the batch's query tokens */
  assert_int_equal(expected_qsl[nv - 1], qsl_at(m, (int64_t)n));
  ts_batch_free(b);
  json_free(v);
}

static void test_ubatch_slicing(void** state) {
  fixture* f = (fixture*)*state;
  json_value* v = load("ubatch_slicing.json");
  const json_value* cases = json_get(v, "cases");
  const json_value* slices = json_get(v, "metadata_slices");
  size_t c;
  for (c = 0; c < cases->count; ++c) {
    const json_value* cs = &cases->items[c];
    int64_t qsl[16], slice[2], expected[16], r;
    int32_t q[16], s[16];
    const size_t nq = json_ints(json_get(cs, "query_start_loc"), qsl, 16);
    const size_t ne = json_ints(json_get(cs, "expected"), expected, 16);
    ts_batch* b = NULL;
    const attn_metadata_t* m;
    size_t k;
    json_ints(json_get(cs, "slice"), slice, 2);
    for (r = 0; r + 1 < (int64_t)nq; ++r) {
      q[r] = (int32_t)(qsl[r + 1] - qsl[r]);
      s[r] = q[r] + 10;
    }
    m = build_checked(f, q, s, (int64_t)nq - 1, -1, &b);
    /* slice_query_start_locs(qsl, [start, stop]) = qsl[start:stop+1] - qsl[start] */
    assert_int_equal(ne, (size_t)(slice[1] - slice[0] + 1));
    for (k = 0; k < ne; ++k)
      assert_int_equal(expected[k], qsl_at(m, slice[0] + (int64_t)k) - qsl_at(m, slice[0]));
    ts_batch_free(b);
  }
  {
    /* metadata for requests [1, 3) and tokens [1, 7) of a 4-request batch */
    const json_value* cs = &slices->items[0];
    const json_value* e = json_get(cs, "expected");
    int64_t q64[8], s64[8], rs[2], tsl[2], eq[8];
    int32_t q[8], s[8];
    size_t n = json_ints(json_get(cs, "query_lens"), q64, 8), i;
    ts_batch* b = NULL;
    const attn_metadata_t* m;
    json_ints(json_get(cs, "seq_lens"), s64, 8);
    json_ints(json_get(cs, "request_slice"), rs, 2);
    json_ints(json_get(cs, "token_slice"), tsl, 2);
    for (i = 0; i < n; ++i) {
      q[i] = (int32_t)q64[i];
      s[i] = (int32_t)s64[i];
    }
    m = build_checked(f, q, s, (int64_t)n, -1, &b);
    assert_int_equal((int64_t)json_get(e, "num_reqs")->number, rs[1] - rs[0]);
    assert_int_equal((int64_t)json_get(e, "num_actual_tokens")->number, tsl[1] - tsl[0]);
    assert_int_equal(qsl_at(m, rs[0]), tsl[0]);
    assert_int_equal(qsl_at(m, rs[1]), tsl[1]);
    assert_int_equal(json_ints(json_get(e, "query_start_loc"), eq, 8), 3);
    for (i = 0; i < 3; ++i) assert_int_equal(eq[i], qsl_at(m, rs[0] + (int64_t)i) - tsl[0]);
    ts_batch_free(b);
  }
  json_free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_decodes_and_prefills),
      cmocka_unit_test(test_split_decodes_prefills_and_extends),
      cmocka_unit_test(test_kv_sharing_fast_prefill),
      cmocka_unit_test(test_local_attention_batch),
      cmocka_unit_test(test_ubatch_slicing),
  };
  return cmocka_run_group_tests_name("vectors", tests, setup, teardown);
}
