/* Metadata accessors: field count, by index, by name, typed getters, struct_size of outputs,
 * kinds, destroy rules. */
#include "test_support.h"

static const int32_t kQ[2] = {1, 9};
static const int32_t kS[2] = {30, 9};

typedef struct {
  attn_builder_t* b;
  ts_batch* batch;
  attn_metadata_t* m;
} fixture;

static int setup(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  fixture* f = (fixture*)calloc(1, sizeof *f);
  f->b = ts_builder("FLASH_ATTN", &spec, &config);
  f->batch = ts_batch_make(kQ, kS, 2, 16, 4, -1);
  ASSERT_OK(attn_build(f->b, 0, &f->batch->common, 0, &f->m, NULL));
  *state = f;
  return 0;
}

static int teardown(void** state) {
  fixture* f = (fixture*)*state;
  attn_builder_destroy(f->b);
  ts_batch_free(f->batch);
  free(f);
  return 0;
}

static void test_by_index_and_name(void** state) {
  fixture* f = (fixture*)*state;
  size_t i, n = attn_metadata_field_count(f->m);
  assert_int_equal(n, 36);
  for (i = 0; i < n; ++i) {
    attn_field_t a = ATTN_FIELD_INIT, b = ATTN_FIELD_INIT;
    ASSERT_OK(attn_metadata_field(f->m, i, &a));
    assert_non_null(a.name);
    ASSERT_OK(attn_metadata_get(f->m, a.name, &b));
    assert_string_equal(a.name, b.name);
    assert_int_equal(a.kind, b.kind);
    assert_int_equal(a.int_value, b.int_value);
    assert_ptr_equal(a.tensor, b.tensor);
    assert_true(a.kind >= ATTN_FIELD_NONE && a.kind <= ATTN_FIELD_BOOL);
    if (a.kind == ATTN_FIELD_TENSOR) {
      assert_non_null(a.tensor);
      assert_non_null(a.tensor->strides); /* always set */
      assert_int_equal(a.tensor->byte_offset, 0);
    } else {
      assert_null(a.tensor);
    }
  }
}

static void test_typed_getters(void** state) {
  fixture* f = (fixture*)*state;
  const attn_tensor_t* t = (const attn_tensor_t*)UNTOUCHED_PTR;
  int64_t v = -7;
  ASSERT_OK(attn_metadata_get_int(f->m, "max_seq_len", &v));
  assert_int_equal(v, 30);
  ASSERT_OK(attn_metadata_get_int(f->m, "causal", &v)); /* booleans read as 0/1 */
  assert_int_equal(v, 1);
  ASSERT_OK(attn_metadata_get_tensor(f->m, "dcp_context_kv_lens", &t));
  assert_null(t); /* None */
  v = -7;
  t = (const attn_tensor_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_metadata_get_int(f->m, "seq_lens", &v), ATTN_ERR_INVALID_ARGUMENT,
               "field 'seq_lens' of 'FLASH_ATTN' is a tensor, not an integer");
  ASSERT_ERROR(attn_metadata_get_int(f->m, "dcp_context_kv_lens", &v), ATTN_ERR_INVALID_ARGUMENT,
               "is None, not an integer");
  ASSERT_ERROR(attn_metadata_get_tensor(f->m, "max_seq_len", &t), ATTN_ERR_INVALID_ARGUMENT,
               "field 'max_seq_len' of 'FLASH_ATTN' is a scalar, not a tensor");
  ASSERT_ERROR(attn_metadata_get_int(f->m, "no_such_field", &v), ATTN_ERR_NOT_FOUND,
               "metadata of kind 'FLASH_ATTN' has no field 'no_such_field'");
  ASSERT_ERROR(attn_metadata_get_tensor(f->m, "no_such_field", &t), ATTN_ERR_NOT_FOUND, "no_such_field");
  ASSERT_ERROR(attn_metadata_get_int(NULL, "max_seq_len", &v), ATTN_ERR_INVALID_ARGUMENT, "metadata is NULL");
  ASSERT_ERROR(attn_metadata_get_int(f->m, NULL, &v), ATTN_ERR_INVALID_ARGUMENT, "name is NULL");
  ASSERT_ERROR(attn_metadata_get_int(f->m, "max_seq_len", NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  ASSERT_ERROR(attn_metadata_get_tensor(f->m, "seq_lens", NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  assert_int_equal(v, -7);
  assert_ptr_equal(t, UNTOUCHED_PTR);
}

static void test_field_bad_input(void** state) {
  fixture* f = (fixture*)*state;
  attn_field_t out = ATTN_FIELD_INIT;
  ASSERT_ERROR(attn_metadata_field(f->m, 36, &out), ATTN_ERR_NOT_FOUND,
               "field index 36 is out of range (metadata of kind 'FLASH_ATTN' has 36 fields)");
  assert_null(out.name);
  ASSERT_ERROR(attn_metadata_field(NULL, 0, &out), ATTN_ERR_INVALID_ARGUMENT, "metadata is NULL");
  ASSERT_ERROR(attn_metadata_field(f->m, 0, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  ASSERT_ERROR(attn_metadata_get(f->m, "nope", &out), ATTN_ERR_NOT_FOUND, "has no field 'nope'");
  out.struct_size = 4;
  ASSERT_ERROR(attn_metadata_field(f->m, 0, &out), ATTN_ERR_INVALID_ARGUMENT, "out->struct_size=4");
  assert_null(out.name);
}

static void test_larger_out_struct(void** state) {
  /* A caller compiled against a newer header passes a bigger struct: the library fills what it
   * knows and leaves the rest alone. */
  fixture* f = (fixture*)*state;
  struct {
    attn_field_t v1;
    int64_t future;
  } big;
  memset(&big, 0, sizeof big);
  big.v1.struct_size = sizeof big;
  big.future = 1234;
  ASSERT_OK(attn_metadata_get(f->m, "num_actual_tokens", &big.v1));
  assert_int_equal(big.v1.int_value, 10);
  assert_int_equal(big.v1.struct_size, sizeof big);
  assert_int_equal(big.future, 1234);
}

static void test_kind_and_null(void** state) {
  fixture* f = (fixture*)*state;
  assert_string_equal(attn_metadata_kind(f->m), "FLASH_ATTN");
  assert_string_equal(attn_metadata_kind(NULL), "");
  assert_int_equal(attn_metadata_field_count(NULL), 0);
  attn_metadata_destroy(NULL);
  attn_metadata_destroy(f->m); /* builder-owned: nothing happens */
  assert_int_equal(ts_int(f->m, "num_actual_tokens"), 10);
}

static void test_to_common_refuses_backend_metadata(void** state) {
  fixture* f = (fixture*)*state;
  attn_common_metadata_t c = ATTN_COMMON_METADATA_INIT;
  ASSERT_ERROR(attn_metadata_to_common(f->m, &c), ATTN_ERR_INVALID_ARGUMENT,
               "metadata of kind 'FLASH_ATTN' is not of kind 'common'");
  assert_null(c.query_start_loc);
  ASSERT_ERROR(attn_metadata_to_common(NULL, &c), ATTN_ERR_INVALID_ARGUMENT, "metadata is NULL");
  ASSERT_ERROR(attn_metadata_to_common(f->m, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_by_index_and_name), cmocka_unit_test(test_typed_getters),
      cmocka_unit_test(test_field_bad_input),   cmocka_unit_test(test_larger_out_struct),
      cmocka_unit_test(test_kind_and_null),     cmocka_unit_test(test_to_common_refuses_backend_metadata),
  };
  return cmocka_run_group_tests_name("metadata", tests, setup, teardown);
}
