/* Issue 15's input classes, as a hostile caller sends them through the ABI: views whose byte
 * extent overflows (huge strides or byte offsets), data misaligned for its dtype, data + offset
 * wrapping the address space, NULL data under a non-empty shape, counts near their type's limit,
 * and stale metadata handles. Each is refused with INVALID_ARGUMENT naming the argument, before
 * any backend, op or kernel computes an address from it; out-params stay untouched. */
#include "test_support.h"

#define E ATTN_ERR_INVALID_ARGUMENT

static const int32_t kQ[3] = {1, 1, 6}, kS[3] = {17, 33, 6};

/* The default host config, with what FLEX_ATTENTION needs (its inverse block table). */
static attn_builder_config_t host_config(void) {
  attn_builder_config_t config = ts_config();
  config.num_gpu_blocks = 1024;
  return config;
}

/* A builder for `backend` on the default full-attention spec. */
static attn_builder_t* full_attention_builder(const char* backend) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = host_config();
  return ts_builder(backend, &spec, &config);
}

/* Builds `b` on `batch`, expecting a refusal naming `message`; *out stays untouched. */
static void expect_build_refused(attn_builder_t* b, ts_batch* batch, const char* message) {
  attn_metadata_t* md = (attn_metadata_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &md, NULL), E, message);
  assert_ptr_equal(md, UNTOUCHED_PTR);
}

/* Class 1: a block table whose row stride is 2^61 elements (its rows would lie 2^63 bytes
 * apart), on every registered backend that builds on a full-attention spec (enumerated: the
 * built-in ones and any plugin's). */
static void test_huge_block_table_stride(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = host_config();
  const char* names[64];
  size_t k, n = ts_backends_building(-1, &spec, &config, names, 64);
  (void)state;
  assert_true(n >= 5 && n <= 64);
  for (k = 0; k < n; ++k) {
    attn_builder_t* b = full_attention_builder(names[k]);
    ts_batch* batch = ts_batch_make(kQ, kS, 3, 16, 0, -1);
    int64_t strides[2] = {(int64_t)1 << 61, 1};
    batch->bt_t.strides = strides;
    expect_build_refused(b, batch,
                         "common->block_table_tensor has shape (3, 3) and strides "
                         "(2305843009213693952, 1) of int32 at byte_offset=0: its byte extent "
                         "overflows");
    strides[0] = INT64_MAX;
    expect_build_refused(b, batch, "its byte extent overflows");
    /* a column stride as large, and a stride whose product with the item size overflows */
    strides[0] = 3;
    strides[1] = (int64_t)1 << 60;
    expect_build_refused(b, batch, "strides (3, 1152921504606846976)");
    attn_builder_destroy(b);
    ts_batch_free(batch);
  }
}

/* Class 1 through the byte offset, the address space and NULL data. */
static void test_byte_offset_and_address(void** state) {
  attn_builder_t* b = full_attention_builder("FLASH_ATTN");
  ts_batch* batch = ts_batch_make(kQ, kS, 3, 16, 0, -1);
  (void)state;
  batch->seq_t.byte_offset = UINT64_MAX - 3;
  expect_build_refused(b, batch, "common->seq_lens has shape (3) and strides (1) of int32 at byte_offset=18446744073709551612: its byte extent overflows");
  batch->seq_t.byte_offset = (uint64_t)1 << 62;
  expect_build_refused(b, batch, "at byte_offset=4611686018427387904: its byte extent overflows");
  batch->seq_t.byte_offset = 0;
  {
    /* data near the top of the address space: data + extent wraps */
    void* saved = batch->seq_t.data;
    batch->seq_t.data = (void*)(uintptr_t)(UINTPTR_MAX - 7);
    batch->seq_t.byte_offset = 0;
    expect_build_refused(b, batch, "its bytes wrap around the address space");
    batch->seq_t.data = NULL;
    expect_build_refused(b, batch, "common->seq_lens has data=NULL and 3 elements");
    batch->seq_t.data = saved;
  }
  /* an empty view may have any data pointer, but its shape must still be sane */
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Class 2: data + byte_offset misaligned for the element type. */
static void test_misaligned(void** state) {
  attn_builder_t* b = full_attention_builder("FLASHINFER");
  ts_batch* batch = ts_batch_make(kQ, kS, 3, 16, 0, -1);
  (void)state;
  batch->qsl_t.byte_offset = 2;
  expect_build_refused(b, batch, "common->query_start_loc has data=");
  expect_build_refused(b, batch, "misaligned for int32 (4-byte elements)");
  batch->qsl_t.byte_offset = 0;
  batch->sm_t.byte_offset = 4; /* int64: 8-byte elements */
  expect_build_refused(b, batch, "common->slot_mapping has data=");
  batch->sm_t.byte_offset = 0;
  {
    /* an aligned byte_offset is a view, accepted: seq_lens from the second int32 of a copy */
    int32_t shifted[4] = {-1, 17, 33, 6};
    attn_metadata_t* md = NULL;
    batch->seq_t.data = shifted;
    batch->seq_t.byte_offset = sizeof(int32_t);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &md, NULL));
    batch->seq_t.data = batch->seq;
    batch->seq_t.byte_offset = 0;
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Class 1 in the utilities that compute addresses from views themselves. */
static void test_utilities(void** state) {
  ts_batch* batch = ts_batch_make(kQ, kS, 3, 16, 0, -1);
  (void)state;
  {
    /* vLLM's reshape_query_for_spec_decode: a (tokens, heads, dim) view with a huge stride */
    float q[8];
    int64_t shape[3] = {4, 1, 2}, strides[3] = {(int64_t)1 << 61, 2, 1};
    int64_t out_shape[4], out_strides[4];
    attn_tensor_t query = ts_host_tensor(q, 3, shape, ATTN_DTYPE_FLOAT, 32);
    attn_tensor_t out;
    query.strides = strides;
    ASSERT_ERROR(attn_reshape_query_for_spec_decode(&query, 2, &out, out_shape, out_strides), E,
                 "query has shape (4, 1, 2) and strides (2305843009213693952, 2, 1)");
    strides[0] = 2;
    query.byte_offset = 1;
    ASSERT_ERROR(attn_reshape_query_for_spec_decode(&query, 2, &out, out_shape, out_strides), E,
                 "misaligned for float32");
  }
  {
    /* micro-batch slicing of a batch whose block table rows lie 2^61 elements apart */
    attn_ubatch_slice_t slice = ATTN_UBATCH_SLICE_INIT;
    attn_metadata_t* md = (attn_metadata_t*)UNTOUCHED_PTR;
    int64_t strides[2] = {(int64_t)1 << 61, 1};
    slice.request_start = 1;
    slice.request_stop = 3;
    slice.token_start = 1;
    slice.token_stop = 8;
    batch->bt_t.strides = strides;
    ASSERT_ERROR(attn_make_metadata_with_slice(&batch->common, &slice, NULL, &md, NULL), E,
                 "common->block_table_tensor has shape (3, 3) and strides (2305843009213693952");
    assert_ptr_equal(md, UNTOUCHED_PTR);
    batch->bt_t.strides = NULL;
  }
  {
    /* Class 5: split_prefill_chunks with a request offset whose bounds overflow int64 */
    static const int32_t lens[3] = {4, 4, 4};
    int64_t bounds[6] = {-7, -7, -7, -7, -7, -7}, n = -7;
    ASSERT_ERROR(attn_split_prefill_chunks(lens, 3, 8, INT64_MAX, bounds, 6, &n), E,
                 "request_offset=9223372036854775807 + num_seqs=3 overflows int64");
    ASSERT_ERROR(attn_split_prefill_chunks(lens, 3, 8, INT64_MAX - 2, bounds, 6, &n), E,
                 "overflows int64");
    assert_int_equal(n, -7);
    ASSERT_OK(attn_split_prefill_chunks(lens, 3, 8, INT64_MAX - 3, bounds, 6, &n));
    assert_int_equal(n, 2);
    assert_true(bounds[3] == INT64_MAX);
  }
  ts_batch_free(batch);
}

/* Class 5: speculative counts near INT32_MAX are refused at create, with the bound, by every
 * registered backend (each on a spec of a kind it accepts). */
static void test_speculative_counts(void** state) {
  size_t i, n = attn_backend_count();
  (void)state;
  for (i = 0; i < n; ++i) {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t config = host_config();
    attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
    int32_t kind;
    ASSERT_OK(attn_backend_info(i, &info));
    for (kind = 0; kind < 32 && !(info.kv_cache_kinds & (1u << kind)); ++kind) {
    }
    assert_true(kind < 32);
    spec.kind = kind;
    if (kind == ATTN_KV_SLIDING_WINDOW) spec.sliding_window = 64; /* DEEPSEEK_SPARSE_SWA's first */
    config.num_speculative_tokens = INT32_MAX;
    ASSERT_ERROR(attn_builder_create(info.name, &spec, &config, &b), E,
                 "config->num_speculative_tokens=2147483647 is not in [0, 65536]");
    config.num_speculative_tokens = INT32_MAX - 1;
    ASSERT_ERROR(attn_builder_create(info.name, &spec, &config, &b), E, "is not in [0, 65536]");
    config.num_speculative_tokens = 0;
    spec.num_speculative_blocks = INT32_MAX;
    ASSERT_ERROR(attn_builder_create(info.name, &spec, &config, &b), E,
                 "kv_cache_spec->num_speculative_blocks=2147483647 is not in [0, 65536]");
    assert_ptr_equal(b, UNTOUCHED_PTR);
  }
}

/* Class 3: arrays of versioned structs whose first struct_size is not a published size. */
static void test_struct_arrays(void** state) {
  static const int32_t tokens[2] = {4, 4};
  attn_ubatch_slice_t slices[2], padded[2];
  static const size_t sizes[] = {(size_t)1 << 30, (size_t)1 << 32, 0, 1,
                                 ATTN_UBATCH_SLICE_STRUCT_SIZE + 8};
  size_t k;
  (void)state;
  for (k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    slices[0] = slices[1] = padded[0] = padded[1] = (attn_ubatch_slice_t)ATTN_UBATCH_SLICE_INIT;
    slices[0].struct_size = slices[1].struct_size = sizes[k];
    slices[0].request_start = -9;
    ASSERT_ERROR(attn_maybe_create_ubatch_slices(tokens, 2, 8, 2, 2, 4, slices, padded), E,
                 "out_slices[0].struct_size=");
    assert_int_equal(slices[0].request_start, -9); /* untouched */
  }
}

/* Class 8: a result read after the builder's next build is refused, not silently newer. */
static void test_stale_metadata(void** state) {
  attn_builder_t* b = full_attention_builder("FLASH_ATTN");
  ts_batch* batch = ts_batch_make(kQ, kS, 3, 16, 0, -1);
  attn_metadata_t *first = NULL, *second = NULL, *kept = NULL;
  const attn_tensor_t* t = (const attn_tensor_t*)UNTOUCHED_PTR;
  attn_field_t f = ATTN_FIELD_INIT;
  int64_t v = -5;
  int i;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &first, NULL));
  ASSERT_OK(attn_metadata_clone(first, &kept));
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &second, NULL));
  assert_ptr_not_equal(first, second);
  ASSERT_ERROR(attn_metadata_get_tensor(first, "seq_lens", &t), E,
               "metadata is stale: it is result #1 of a FLASH_ATTN builder that has since "
               "published result #2");
  assert_ptr_equal(t, UNTOUCHED_PTR);
  ASSERT_ERROR(attn_metadata_get_int(first, "num_actual_tokens", &v), E, "is stale");
  assert_int_equal(v, -5);
  ASSERT_ERROR(attn_metadata_get(first, "seq_lens", &f), E, "is stale");
  ASSERT_ERROR(attn_metadata_field(first, 0, &f), E, "is stale");
  ASSERT_ERROR(attn_metadata_clone(first, &kept), E, "is stale");
  /* the kind and field count of a stale handle stay readable (they never change) */
  assert_string_equal(attn_metadata_kind(first), "FLASH_ATTN");
  assert_int_equal(attn_metadata_field_count(first), attn_metadata_field_count(second));
  /* the live result and the clone read as usual */
  assert_int_equal(ts_int(second, "num_actual_tokens"), 8);
  assert_int_equal(ts_int(kept, "num_actual_tokens"), 8);
  /* a failed build does not invalidate the last result */
  {
    attn_metadata_t* md = (attn_metadata_t*)UNTOUCHED_PTR;
    batch->common.num_reqs = -1;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &md, NULL), E, "num_reqs");
    batch->common.num_reqs = 3;
    assert_int_equal(ts_int(second, "num_actual_tokens"), 8);
  }
  /* detection holds for 63 later results (the handle slots are reused after 64) */
  for (i = 0; i < 62; ++i) ASSERT_OK(attn_build(b, 0, &batch->common, 0, &first, NULL));
  ASSERT_ERROR(attn_metadata_get_tensor(second, "seq_lens", &t), E,
               "result #2 of a FLASH_ATTN builder that has since published result #64");
  attn_metadata_destroy(kept);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_huge_block_table_stride),
      cmocka_unit_test(test_byte_offset_and_address),
      cmocka_unit_test(test_misaligned),
      cmocka_unit_test(test_utilities),
      cmocka_unit_test(test_speculative_counts),
      cmocka_unit_test(test_struct_arrays),
      cmocka_unit_test(test_stale_metadata),
  };
  return cmocka_run_group_tests_name("hostile_views", tests, NULL, NULL);
}
