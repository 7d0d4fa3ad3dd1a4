/* attn_build (and its variants) with bad input: every error names the field and the value, the
 * out-param is untouched, and the builder's previous metadata is unchanged. */
#include "test_support.h"

static const int32_t kQ[3] = {1, 1, 5};
static const int32_t kS[3] = {40, 50, 60};

typedef struct {
  attn_builder_t* builder;
  ts_batch* batch;
  attn_metadata_t* previous;
} fixture;

static int setup(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  fixture* f = (fixture*)calloc(1, sizeof *f);
  config.max_num_seqs = 8;
  config.max_num_batched_tokens = 64;
  config.max_model_len = 128;
  f->builder = ts_builder("FLASH_ATTN", &spec, &config);
  f->batch = ts_batch_make(kQ, kS, 3, 16, 8, -1);
  ASSERT_OK(attn_build(f->builder, 0, &f->batch->common, 0, &f->previous, NULL));
  *state = f;
  return 0;
}

static int teardown(void** state) {
  fixture* f = (fixture*)*state;
  attn_builder_destroy(f->builder);
  ts_batch_free(f->batch);
  free(f);
  return 0;
}

/* Builds a fresh copy of the good batch, lets `mutate` break it, and checks the error. */
typedef void (*mutator)(ts_batch* b, attn_tensor_t* scratch);

static void expect_rejected(fixture* f, mutator mutate, int64_t prefix, int32_t code,
                            const char* message) {
  ts_batch* b = ts_batch_make(kQ, kS, 3, 16, 8, -1);
  attn_tensor_t scratch;
  attn_metadata_t* md = (attn_metadata_t*)UNTOUCHED_PTR;
  memset(&scratch, 0, sizeof scratch);
  if (mutate) mutate(b, &scratch);
  ASSERT_ERROR(attn_build(f->builder, prefix, &b->common, 0, &md, NULL), code, message);
  assert_ptr_equal(md, UNTOUCHED_PTR);
  ts_batch_free(b);
  /* the previous build is intact */
  assert_int_equal(ts_int(f->previous, "num_actual_tokens"), 7);
  ts_expect_i32(f->previous, "seq_lens", kS, 3);
}

#define CASE(name, ...) \
  static void name(ts_batch* b, attn_tensor_t* t) { (void)b; (void)t; __VA_ARGS__; }

static int64_t shape2[2] = {4, 1};
static int64_t shape_neg[1] = {-4};
static int64_t strides_neg[1] = {-1};
static int64_t strides2[1] = {2};

CASE(c_qsl_null, b->common.query_start_loc = NULL)
CASE(c_seq_null, b->common.seq_lens = NULL)
CASE(c_bt_null, b->common.block_table_tensor = NULL)
CASE(c_sm_null, b->common.slot_mapping = NULL)
CASE(c_qsl_dtype, b->qsl_t.dtype.code = ATTN_DTYPE_FLOAT)
CASE(c_qsl_bits, b->qsl_t.dtype.bits = 64)
CASE(c_qsl_ndim, { b->qsl_t.ndim = 2; b->qsl_t.shape = shape2; })
CASE(c_qsl_len, b->qsl_shape[0] = 3)
CASE(c_qsl_first, { b->qsl[0] = 1; })
CASE(c_qsl_order, { b->qsl[2] = 0; })
CASE(c_qsl_end, { b->common.num_actual_tokens = 6; b->sm_shape[0] = 6; })
CASE(c_qsl_stride, b->qsl_t.strides = strides2)
CASE(c_query_len, b->common.max_query_len = 4)
CASE(c_seq_short, b->seq[1] = 0)
CASE(c_seq_max, b->common.max_seq_len = 59)
CASE(c_seq_model, { b->seq[2] = 129; b->common.max_seq_len = 129; })
CASE(c_bt_narrow, { b->bt_shape[1] = 3; })
CASE(c_bt_rows, b->bt_shape[0] = 2)
CASE(c_bt_colstride, { static int64_t s[2] = {8, 2}; b->bt_t.strides = s; })
CASE(c_bt_rowstride, { static int64_t s[2] = {2, 1}; b->bt_t.strides = s; })
CASE(c_bt_dtype, b->bt_t.dtype.bits = 64)
CASE(c_sm_dtype, b->sm_t.dtype.code = ATTN_DTYPE_FLOAT)
CASE(c_sm_len, b->sm_shape[0] = 6)
CASE(c_reqs_limit, b->common.num_reqs = 9)
CASE(c_reqs_negative, b->common.num_reqs = -1)
CASE(c_tokens_limit, b->common.num_actual_tokens = 65)
CASE(c_tokens_negative, b->common.num_actual_tokens = -3)
CASE(c_max_query_negative, b->common.max_query_len = -1)
CASE(c_device, b->seq_t.device.device_type = ATTN_DEVICE_CUDA)
CASE(c_mirror_on_device, {
  *t = b->qsl_t;
  t->device.device_type = ATTN_DEVICE_CUDA;
  b->common.query_start_loc_cpu = t;
})
CASE(c_mirror_len, {
  static int64_t s[1] = {2};
  *t = b->seq_t;
  t->shape = s;
  b->common.seq_lens_cpu = t;
})
CASE(c_logits_count, b->common.num_logits_indices = 2)
CASE(c_logits_range, {
  static int64_t s[1] = {2};
  static int32_t idx[2] = {0, 1};
  *t = ts_host_tensor(idx, 1, s, ATTN_DTYPE_INT, 32);
  b->common.logits_indices_padded = t;
  b->common.num_logits_indices = 3;
})
CASE(c_encoder_len, {
  static int64_t s[1] = {2};
  static int32_t enc[2] = {1, 1};
  *t = ts_host_tensor(enc, 1, s, ATTN_DTYPE_INT, 32);
  b->common.encoder_seq_lens = t;
})
CASE(c_ndim9, b->seq_t.ndim = 9)
CASE(c_shape_negative, b->seq_t.shape = shape_neg)
CASE(c_stride_negative, b->seq_t.strides = strides_neg)
CASE(c_shape_null, b->seq_t.shape = NULL)
CASE(c_data_null, b->seq_t.data = NULL)
CASE(c_struct_size, b->common.struct_size = 16)
CASE(c_extension, b->common.extension = b)
CASE(c_dtype_bits, b->seq_t.dtype.bits = 12)

static void test_rejected(void** state) {
  fixture* f = (fixture*)*state;
  const int32_t E = ATTN_ERR_INVALID_ARGUMENT;
  expect_rejected(f, c_qsl_null, 0, E, "common->query_start_loc is NULL");
  expect_rejected(f, c_seq_null, 0, E, "common->seq_lens is NULL");
  expect_rejected(f, c_bt_null, 0, E, "common->block_table_tensor is NULL");
  expect_rejected(f, c_sm_null, 0, E, "common->slot_mapping is NULL");
  expect_rejected(f, c_qsl_dtype, 0, E, "common->query_start_loc has dtype float32, expected int32");
  expect_rejected(f, c_qsl_bits, 0, E, "common->query_start_loc has dtype int64, expected int32");
  expect_rejected(f, c_qsl_ndim, 0, E, "common->query_start_loc has ndim=2, expected 1");
  expect_rejected(f, c_qsl_len, 0, E, "common->query_start_loc has shape (3,), expected (4,)");
  expect_rejected(f, c_qsl_first, 0, E, "common->query_start_loc[0]=1, expected 0");
  expect_rejected(f, c_qsl_order, 0, E, "common->query_start_loc[2]=0 is less than common->query_start_loc[1]=1");
  expect_rejected(f, c_qsl_end, 0, E, "common->query_start_loc[3]=7 exceeds common->num_actual_tokens=6");
  expect_rejected(f, c_qsl_stride, 0, E, "common->query_start_loc has stride 2, expected a compact tensor");
  expect_rejected(f, c_query_len, 0, E, "query length of request 2 is 5 (query_start_loc[3] - query_start_loc[2]) but common->max_query_len=4");
  expect_rejected(f, c_seq_short, 0, E, "common->seq_lens[1]=0 is less than its query length 1");
  expect_rejected(f, c_seq_max, 0, E, "common->seq_lens[2]=60 exceeds common->max_seq_len=59");
  expect_rejected(f, c_seq_model, 0, E, "common->seq_lens[2]=129 exceeds config->max_model_len=128");
  expect_rejected(f, c_bt_narrow, 0, E, "common->block_table_tensor has 3 columns but request 1 needs cdiv(seq_lens[1]=50, block_size=16)=4 blocks");
  expect_rejected(f, c_bt_rows, 0, E, "common->block_table_tensor has 2 rows");
  expect_rejected(f, c_bt_colstride, 0, E, "common->block_table_tensor has column stride 2, expected 1");
  expect_rejected(f, c_bt_rowstride, 0, E, "common->block_table_tensor has row stride 2, smaller than its 8 columns");
  expect_rejected(f, c_bt_dtype, 0, E, "common->block_table_tensor has dtype int64, expected int32");
  expect_rejected(f, c_sm_dtype, 0, E, "common->slot_mapping has dtype float64, expected int32 or int64");
  expect_rejected(f, c_sm_len, 0, E, "common->slot_mapping has shape (6,), fewer than common->num_actual_tokens=7");
  expect_rejected(f, c_reqs_limit, 0, E, "common->num_reqs=9 exceeds config->max_num_seqs=8");
  expect_rejected(f, c_reqs_negative, 0, E, "common->num_reqs=-1 is negative");
  expect_rejected(f, c_tokens_limit, 0, E, "common->num_actual_tokens=65 exceeds config->max_num_batched_tokens=64");
  expect_rejected(f, c_tokens_negative, 0, E, "common->num_actual_tokens=-3 is negative");
  expect_rejected(f, c_max_query_negative, 0, E, "common->max_query_len=-1 is negative");
  expect_rejected(f, c_device, 0, E, "common->seq_lens is on cuda:0 but the build runs on cpu");
  expect_rejected(f, c_mirror_on_device, 0, E, "common->query_start_loc_cpu is on cuda:0; a *_cpu mirror must be in host memory");
  expect_rejected(f, c_mirror_len, 0, E, "common->seq_lens_cpu has shape (2,), expected (3,)");
  expect_rejected(f, c_logits_count, 0, E, "common->num_logits_indices=2 but common->logits_indices_padded is NULL");
  expect_rejected(f, c_logits_range, 0, E, "common->num_logits_indices=3 is not in [0, len(logits_indices_padded)=2]");
  expect_rejected(f, c_encoder_len, 0, E, "common->encoder_seq_lens has shape (2,), expected (3,)");
  expect_rejected(f, c_ndim9, 0, E, "common->seq_lens has ndim=9; libattn accepts 0 to 8 dimensions");
  expect_rejected(f, c_shape_negative, 0, E, "common->seq_lens has shape[0]=-4 (negative)");
  expect_rejected(f, c_stride_negative, 0, E, "common->seq_lens has strides[0]=-1; negative strides are not supported");
  expect_rejected(f, c_shape_null, 0, E, "common->seq_lens has ndim=1 but shape=NULL");
  expect_rejected(f, c_data_null, 0, E, "common->seq_lens has data=NULL and 3 elements");
  expect_rejected(f, c_struct_size, 0, E, "common->struct_size=16 is smaller than");
  expect_rejected(f, c_extension, 0, E, "common->extension=");
  expect_rejected(f, c_dtype_bits, 0, E, "common->seq_lens has dtype bits=12");
  expect_rejected(f, NULL, -1, E, "common_prefix_len=-1 is negative");
  expect_rejected(f, NULL, 41, E, "common_prefix_len=41 exceeds common->seq_lens[0]=40");
  expect_rejected(f, NULL, 24, E, "common_prefix_len=24 is not a multiple of block_size=16");
}

static void test_null_arguments(void** state) {
  fixture* f = (fixture*)*state;
  attn_metadata_t* md = (attn_metadata_t*)UNTOUCHED_PTR;
  const int32_t E = ATTN_ERR_INVALID_ARGUMENT;
  ASSERT_ERROR(attn_build(NULL, 0, &f->batch->common, 0, &md, NULL), E, "builder is NULL");
  ASSERT_ERROR(attn_build(f->builder, 0, NULL, 0, &md, NULL), E, "common is NULL");
  ASSERT_ERROR(attn_build(f->builder, 0, &f->batch->common, 0, NULL, NULL), E, "out is NULL");
  ASSERT_ERROR(attn_build_for_cudagraph_capture(NULL, &f->batch->common, &md, NULL), E, "builder is NULL");
  ASSERT_ERROR(attn_build_for_cudagraph_capture(f->builder, NULL, &md, NULL), E, "common is NULL");
  ASSERT_ERROR(attn_build_for_drafting(f->builder, NULL, 0, &md, NULL), E, "common is NULL");
  ASSERT_ERROR(attn_build_for_drafting(f->builder, &f->batch->common, -1, &md, NULL), E, "draft_index=-1 is negative");
  ASSERT_ERROR(attn_build_for_drafting(f->builder, &f->batch->common, 0, NULL, NULL), E, "out is NULL");
  assert_ptr_equal(md, UNTOUCHED_PTR);
}

static void test_capture_validates_too(void** state) {
  fixture* f = (fixture*)*state;
  ts_batch* b = ts_batch_make(kQ, kS, 3, 16, 8, -1);
  attn_metadata_t* md = (attn_metadata_t*)UNTOUCHED_PTR;
  b->seq[0] = 0;
  ASSERT_ERROR(attn_build_for_cudagraph_capture(f->builder, &b->common, &md, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "common->seq_lens[0]=0 is less than its query length 1");
  ASSERT_ERROR(attn_build_for_drafting(f->builder, &b->common, 0, &md, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "common->seq_lens[0]=0");
  assert_ptr_equal(md, UNTOUCHED_PTR);
  ts_batch_free(b);
}

static void test_empty_batch(void** state) {
  fixture* f = (fixture*)*state;
  ts_batch* b = ts_batch_make(NULL, NULL, 0, 16, 8, -1);
  attn_metadata_t* md = NULL;
  ASSERT_OK(attn_build(f->builder, 0, &b->common, 0, &md, NULL));
  assert_int_equal(ts_int(md, "num_actual_tokens"), 0);
  assert_int_equal(ts_tensor(md, "seq_lens")->shape[0], 0);
  ts_batch_free(b);
  /* rebuild the fixture's metadata for the other tests */
  ASSERT_OK(attn_build(f->builder, 0, &f->batch->common, 0, &f->previous, NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rejected),
      cmocka_unit_test(test_null_arguments),
      cmocka_unit_test(test_capture_validates_too),
      cmocka_unit_test(test_empty_batch),
  };
  return cmocka_run_group_tests_name("build_validation", tests, setup, teardown);
}
