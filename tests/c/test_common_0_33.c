/* ABI 1.4: vLLM 0.33.0's CommonAttentionMetadata fields in attn_common_metadata_t (accepted,
 * refused with a named error, sliced by attn_common_metadata_unpadded and by micro-batch
 * slicing, defaulted for an old struct_size) and attn_get_vllm_release; ABI 1.7's
 * replay_start (the sparse SWA builders' build() keyword) the same way. */
#include "test_support.h"

/* A padded batch: three requests plus one padding request, 8 tokens of which 6 are real. */
static const int32_t kQ[4] = {2, 2, 2, 0};
static const int32_t kS[4] = {10, 20, 30, 40};

/* The 1.4 inputs of one batch, in host memory (a CPU batch: "where the batch lives" is host). */
typedef struct fields {
  int32_t bound[4], dcp[4], dcp_bound[4], causal[4], rswa[4], replay[4], start[4];
  int64_t req_idx[4];
  int64_t positions[8];
  int32_t ranges[3][3];
  int64_t n4[1], n8[1], rshape[2];
  attn_tensor_t bound_t, dcp_t, dcp_bound_t, causal_t, rswa_t, replay_t, start_t, req_idx_t,
      positions_t, ranges_t;
} fields;

static void fields_init(fields* f) {
  static const int32_t bound[4] = {12, 20, 33, 40};     /* >= seq_lens: optimistic rows 0, 2 */
  static const int32_t dcp[4] = {5, 10, 15, 20};
  static const int32_t dcp_bound[4] = {6, 10, 17, 20};
  static const int32_t causal[4] = {1, 0, 1, 1};
  static const int32_t rswa[4] = {4, 8, 0, 2};
  static const int32_t replay[4] = {0, 16, 24, 0};
  static const int32_t start[4] = {0, 3, 0, 7};
  static const int32_t ranges[3][3] = {{0, 1, 4}, {0, 6, 8}, {2, 3, 9}};
  int k;
  memcpy(f->bound, bound, sizeof bound);
  memcpy(f->dcp, dcp, sizeof dcp);
  memcpy(f->dcp_bound, dcp_bound, sizeof dcp_bound);
  memcpy(f->causal, causal, sizeof causal);
  memcpy(f->rswa, rswa, sizeof rswa);
  memcpy(f->replay, replay, sizeof replay);
  memcpy(f->start, start, sizeof start);
  memcpy(f->ranges, ranges, sizeof ranges);
  for (k = 0; k < 4; ++k) f->req_idx[k] = 7 - k;
  for (k = 0; k < 8; ++k) f->positions[k] = 100 + k;
  f->n4[0] = 4;
  f->n8[0] = 8;
  f->rshape[0] = 3;
  f->rshape[1] = 3;
  f->bound_t = ts_host_tensor(f->bound, 1, f->n4, ATTN_DTYPE_INT, 32);
  f->dcp_t = ts_host_tensor(f->dcp, 1, f->n4, ATTN_DTYPE_INT, 32);
  f->dcp_bound_t = ts_host_tensor(f->dcp_bound, 1, f->n4, ATTN_DTYPE_INT, 32);
  f->causal_t = ts_host_tensor(f->causal, 1, f->n4, ATTN_DTYPE_INT, 32);
  f->rswa_t = ts_host_tensor(f->rswa, 1, f->n4, ATTN_DTYPE_INT, 32);
  f->replay_t = ts_host_tensor(f->replay, 1, f->n4, ATTN_DTYPE_INT, 32);
  f->start_t = ts_host_tensor(f->start, 1, f->n4, ATTN_DTYPE_INT, 32);
  f->req_idx_t = ts_host_tensor(f->req_idx, 1, f->n4, ATTN_DTYPE_INT, 64);
  f->positions_t = ts_host_tensor(f->positions, 1, f->n8, ATTN_DTYPE_INT, 64);
  f->ranges_t = ts_host_tensor(f->ranges, 2, f->rshape, ATTN_DTYPE_INT, 32);
}

static void fields_attach(fields* f, attn_common_metadata_t* c) {
  c->seq_lens_cpu_upper_bound = &f->bound_t;
  c->dcp_local_seq_lens = &f->dcp_t;
  c->dcp_local_seq_lens_cpu = &f->dcp_t;
  c->dcp_local_seq_lens_cpu_upper_bound = &f->dcp_bound_t;
  c->positions = &f->positions_t;
  c->causal_per_request = &f->causal_t;
  c->max_logits_per_req = 3;
  c->req_idx = &f->req_idx_t;
  c->mm_req_doc_ranges = &f->ranges_t;
  c->rswa_prefix_lens = &f->rswa_t;
  c->replayssm_decode_base_cpu = &f->replay_t;
  c->replay_start = &f->start_t;  /* ABI 1.7 */
}

static ts_batch* padded_batch(void) {
  ts_batch* b = ts_batch_make(kQ, kS, 4, 16, 4, 8);
  b->common.max_seq_len = 40;
  return b;
}

static void test_vllm_release(void** state) {
  const char* release = (const char*)UNTOUCHED_PTR;
  uint32_t major = 99, minor = 99, patch = 99;
  size_t i, n = attn_backend_count();
  (void)state;
  ASSERT_OK(attn_get_vllm_release(&release, &major, &minor, &patch));
  assert_string_equal(release, ATTN_VLLM_RELEASE);
  assert_string_equal(release, "0.33.0");
  assert_int_equal(major, ATTN_VLLM_RELEASE_MAJOR);
  assert_int_equal(minor, ATTN_VLLM_RELEASE_MINOR);
  assert_int_equal(patch, ATTN_VLLM_RELEASE_PATCH);
  assert_int_equal(major * 10000 + minor * 100 + patch, 3300);
  ASSERT_OK(attn_get_vllm_release(&release, NULL, NULL, NULL)); /* numbers optional */
  /* release is required; nothing written on failure */
  major = 99;
  ASSERT_ERROR(attn_get_vllm_release(NULL, &major, NULL, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "release");
  assert_int_equal(major, 99);
  /* one source of truth: a built-in backend that names one plain release names this one */
  for (i = 0; i < n; ++i) {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    ASSERT_OK(attn_backend_info(i, &info));
    if (info.origin == ATTN_BACKEND_BUILTIN && strchr(info.vllm_release, ' ') == NULL &&
        strchr(info.vllm_release, '-') == NULL && info.vllm_release[0] != '\0')
      assert_string_equal(info.vllm_release, ATTN_VLLM_RELEASE);
  }
  /* through the function table too */
  {
    const attn_api_t* api = NULL;
    ASSERT_OK(attn_get_api(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR, &api));
    assert_ptr_equal(api->attn_get_vllm_release, attn_get_vllm_release);
  }
}

static void test_fields_accepted_and_unpadded(void** state) {
  ts_batch* b = padded_batch();
  fields f;
  attn_metadata_t* u = NULL;
  attn_common_metadata_t c = ATTN_COMMON_METADATA_INIT;
  static const int32_t bound3[3] = {12, 20, 33}, dcp_bound3[3] = {6, 10, 17};
  static const int32_t causal3[3] = {1, 0, 1}, rswa3[3] = {4, 8, 0}, replay3[3] = {0, 16, 24};
  static const int32_t start3[3] = {0, 3, 0};
  (void)state;
  fields_init(&f);
  fields_attach(&f, &b->common);
  ASSERT_OK(attn_common_metadata_unpadded(&b->common, 6, 3, &u));
  ts_expect_i32(u, "seq_lens_cpu_upper_bound", bound3, 3);
  ts_expect_i32(u, "dcp_local_seq_lens_cpu_upper_bound", dcp_bound3, 3);
  ts_expect_i32(u, "causal_per_request", causal3, 3);
  ts_expect_i32(u, "rswa_prefix_lens", rswa3, 3);
  ts_expect_i32(u, "replayssm_decode_base_cpu", replay3, 3);
  ts_expect_i32(u, "replay_start", start3, 3);
  assert_int_equal(ts_tensor(u, "req_idx")->shape[0], 3);
  assert_ptr_equal(ts_tensor(u, "req_idx")->data, f.req_idx); /* a view */
  assert_int_equal(ts_int(u, "max_logits_per_req"), 3);       /* kept */
  /* vLLM 0.33's unpadded() does not carry positions or mm_req_doc_ranges */
  assert_null(ts_tensor(u, "positions"));
  assert_null(ts_tensor(u, "mm_req_doc_ranges"));
  assert_int_equal(ts_int(u, "causal"), 1);
  /* back to an input batch, which builds */
  ASSERT_OK(attn_metadata_to_common(u, &c));
  assert_non_null(c.seq_lens_cpu_upper_bound);
  assert_int_equal(c.seq_lens_cpu_upper_bound->shape[0], 3);
  assert_non_null(c.causal_per_request);
  assert_int_equal(c.max_logits_per_req, 3);
  assert_null(c.positions);
  assert_null(c.mm_req_doc_ranges);
  {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t config = ts_config();
    attn_builder_t* builder = ts_builder("FLASH_ATTN", &spec, &config);
    attn_metadata_t* m = NULL;
    ASSERT_OK(attn_build(builder, 0, &c, 0, &m, NULL));
    ASSERT_OK(attn_build(builder, 0, &b->common, 0, &m, NULL)); /* the padded one too */
    attn_builder_destroy(builder);
  }
  attn_metadata_destroy(u);
  /* max_logits_per_req = -1 is None, and stays None */
  b->common.max_logits_per_req = -1;
  ASSERT_OK(attn_common_metadata_unpadded(&b->common, 6, 3, &u));
  assert_int_equal(ts_kind(u, "max_logits_per_req"), ATTN_FIELD_NONE);
  ASSERT_OK(attn_metadata_to_common(u, &c));
  assert_int_equal(c.max_logits_per_req, -1);
  attn_metadata_destroy(u);
  /* the full batch keeps everything: unpadded to its own size */
  b->common.max_logits_per_req = 3;
  ASSERT_OK(attn_common_metadata_unpadded(&b->common, 8, 4, &u));
  assert_null(ts_tensor(u, "positions")); /* dropped even when nothing is cut, as 0.33 */
  ts_expect_i32(u, "seq_lens_cpu_upper_bound", f.bound, 4);
  attn_metadata_destroy(u);
  /* an empty dict of ranges (0 rows) and int32 req_idx are accepted */
  f.rshape[0] = 0;
  f.ranges_t = ts_host_tensor(f.ranges, 2, f.rshape, ATTN_DTYPE_INT, 32);
  {
    int32_t idx32[4] = {0, 1, 2, 3};
    attn_tensor_t t = ts_host_tensor(idx32, 1, f.n4, ATTN_DTYPE_INT, 32);
    b->common.req_idx = &t;
    ASSERT_OK(attn_common_metadata_unpadded(&b->common, 6, 3, &u));
    attn_metadata_destroy(u);
    b->common.req_idx = &f.req_idx_t;
  }
  ts_batch_free(b);
}

/* Each field: wrong dtype, short shape, misaligned view, wrong device, bad values; each gives
 * ATTN_ERR_INVALID_ARGUMENT naming the field, and leaves `out` untouched. */
static void expect_refused(ts_batch* b, const char* substring) {
  attn_metadata_t* u = (attn_metadata_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_common_metadata_unpadded(&b->common, 6, 3, &u), ATTN_ERR_INVALID_ARGUMENT,
               substring);
  assert_ptr_equal(u, UNTOUCHED_PTR);
}

typedef struct field_case {
  const char* name;
  size_t offset; /* of the field in attn_common_metadata_t */
} field_case;

static void test_fields_refused(void** state) {
  static const field_case cases[] = {
      {"common->seq_lens_cpu_upper_bound",
       offsetof(attn_common_metadata_t, seq_lens_cpu_upper_bound)},
      {"common->dcp_local_seq_lens_cpu_upper_bound",
       offsetof(attn_common_metadata_t, dcp_local_seq_lens_cpu_upper_bound)},
      {"common->positions", offsetof(attn_common_metadata_t, positions)},
      {"common->causal_per_request", offsetof(attn_common_metadata_t, causal_per_request)},
      {"common->req_idx", offsetof(attn_common_metadata_t, req_idx)},
      {"common->mm_req_doc_ranges", offsetof(attn_common_metadata_t, mm_req_doc_ranges)},
      {"common->rswa_prefix_lens", offsetof(attn_common_metadata_t, rswa_prefix_lens)},
      {"common->replayssm_decode_base_cpu",
       offsetof(attn_common_metadata_t, replayssm_decode_base_cpu)},
      {"common->replay_start", offsetof(attn_common_metadata_t, replay_start)},
  };
  size_t k;
  (void)state;
  for (k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    const field_case* fc = &cases[k];
    ts_batch* b = padded_batch();
    fields f;
    const attn_tensor_t** slot;
    attn_tensor_t bad;
    int64_t short_shape[2] = {2, 3};
    char* raw;
    fields_init(&f);
    fields_attach(&f, &b->common);
    slot = (const attn_tensor_t**)((char*)&b->common + fc->offset);
    /* the good value passes */
    {
      attn_metadata_t* u = NULL;
      ASSERT_OK(attn_common_metadata_unpadded(&b->common, 6, 3, &u));
      attn_metadata_destroy(u);
    }
    /* wrong dtype: float of the same width */
    bad = **slot;
    bad.dtype.code = ATTN_DTYPE_FLOAT;
    *slot = &bad;
    expect_refused(b, fc->name);
    /* short shape */
    {
      const attn_tensor_t* good = NULL;
      switch (k) {
        case 0: good = &f.bound_t; break;
        case 1: good = &f.dcp_bound_t; break;
        case 2: good = &f.positions_t; break;
        case 3: good = &f.causal_t; break;
        case 4: good = &f.req_idx_t; break;
        case 5: good = &f.ranges_t; break;
        case 6: good = &f.rswa_t; break;
        case 7: good = &f.replay_t; break;
        default: good = &f.start_t; break;
      }
      bad = *good;
      if (bad.ndim == 2) {
        short_shape[0] = bad.shape[0];
        short_shape[1] = 2; /* (n, 2) instead of (n, 3) */
      } else {
        short_shape[0] = bad.shape[0] - 3;
      }
      bad.shape = short_shape;
      *slot = &bad;
      expect_refused(b, fc->name);
      /* misaligned view: data one byte off */
      bad = *good;
      raw = (char*)bad.data;
      bad.data = raw + 1;
      *slot = &bad;
      expect_refused(b, fc->name);
      /* NULL data under a non-empty shape */
      bad = *good;
      bad.data = NULL;
      *slot = &bad;
      expect_refused(b, fc->name);
      /* a byte extent past 2^62 (a huge byte_offset), and rows 2^61 elements apart */
      bad = *good;
      bad.byte_offset = (uint64_t)1 << 63;
      *slot = &bad;
      expect_refused(b, fc->name);
      {
        int64_t strides[2] = {(int64_t)1 << 61, 1};
        bad = *good;
        bad.strides = strides;
        *slot = &bad;
        expect_refused(b, fc->name);
        /* ... and through a build, before any backend reads it */
        {
          attn_kv_cache_spec_t spec = ts_spec();
          attn_builder_config_t config = ts_config();
          attn_builder_t* builder = ts_builder("FLASH_ATTN", &spec, &config);
          attn_metadata_t* m = (attn_metadata_t*)UNTOUCHED_PTR;
          ASSERT_ERROR(attn_build(builder, 0, &b->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                       fc->name);
          assert_ptr_equal(m, UNTOUCHED_PTR);
          attn_builder_destroy(builder);
        }
      }
      /* another device: cuda:0 beside a host batch (host-only fields: "must be in host memory") */
      bad = *good;
      bad.device.device_type = ATTN_DEVICE_CUDA;
      *slot = &bad;
      expect_refused(b, fc->name);
      *slot = good;
    }
    ts_batch_free(b);
  }
}

static void test_field_values_refused(void** state) {
  ts_batch* b = padded_batch();
  fields f;
  (void)state;
  fields_init(&f);
  fields_attach(&f, &b->common);
  /* a bound below the exact seq_lens */
  f.bound[1] = 19;
  expect_refused(b, "common->seq_lens_cpu_upper_bound[1]=19 is less than the exact");
  f.bound[1] = 20;
  /* a bound above max_seq_len */
  f.bound[3] = 41;
  expect_refused(b, "common->seq_lens_cpu_upper_bound[3]=41 exceeds common->max_seq_len=40");
  f.bound[3] = 40;
  f.bound[2] = -1;
  expect_refused(b, "common->seq_lens_cpu_upper_bound[2]=-1");
  f.bound[2] = 33;
  /* the DCP bound below its exact mirror, or negative */
  f.dcp_bound[0] = 4;
  expect_refused(b, "common->dcp_local_seq_lens_cpu_upper_bound[0]=4 is less than the exact");
  f.dcp_bound[0] = 6;
  b->common.dcp_local_seq_lens_cpu = NULL;
  b->common.dcp_local_seq_lens = NULL;
  f.dcp_bound[0] = -2;
  expect_refused(b, "common->dcp_local_seq_lens_cpu_upper_bound[0]=-2 is negative");
  f.dcp_bound[0] = 6;
  /* max_logits_per_req below -1 */
  b->common.max_logits_per_req = -2;
  expect_refused(b, "common->max_logits_per_req=-2");
  b->common.max_logits_per_req = 3;
  /* positions shorter than num_actual_tokens */
  f.n8[0] = 7;
  expect_refused(b, "common->positions has shape (7,), fewer than common->num_actual_tokens=8");
  f.n8[0] = 8;
  /* ranges: a request out of range, out of order, a negative position */
  f.ranges[2][0] = 4;
  expect_refused(b, "common->mm_req_doc_ranges[2] names request 4");
  f.ranges[2][0] = 2;
  f.ranges[1][0] = 3;
  expect_refused(b, "non-decreasing request order");
  f.ranges[1][0] = 0;
  f.ranges[0][1] = -1;
  expect_refused(b, "common->mm_req_doc_ranges[0]=(0, -1, 4) has a negative position");
  f.ranges[0][1] = 1;
  /* negative host lengths */
  f.rswa[3] = -1;
  expect_refused(b, "common->rswa_prefix_lens[3]=-1 is negative");
  f.rswa[3] = 2;
  f.replay[1] = -5;
  expect_refused(b, "common->replayssm_decode_base_cpu[1]=-5 is negative");
  f.replay[1] = 16;
  f.start[3] = -2;
  expect_refused(b, "common->replay_start[3]=-2 is negative");
  f.start[3] = 7;
  {
    attn_metadata_t* u = NULL;
    ASSERT_OK(attn_common_metadata_unpadded(&b->common, 6, 3, &u)); /* all restored */
    attn_metadata_destroy(u);
  }
  ts_batch_free(b);
}

/* A device batch whose only host lengths are 0.33's bound: the bound is what the validation
 * reads (and names), as builders read it (CommonMetadata::host_seq_lens()). */
static void test_bound_alone_is_the_host_lengths(void** state) {
  ts_batch* b = padded_batch();
  fields f;
  attn_tensor_t qsl_dev, seq_dev, bt_dev, sm_dev;
  attn_metadata_t* u = NULL;
  (void)state;
  fields_init(&f);
  qsl_dev = b->qsl_t;
  seq_dev = b->seq_t;
  bt_dev = b->bt_t;
  sm_dev = b->sm_t;
  qsl_dev.device.device_type = ATTN_DEVICE_CUDA;
  seq_dev.device.device_type = ATTN_DEVICE_CUDA;
  bt_dev.device.device_type = ATTN_DEVICE_CUDA;
  sm_dev.device.device_type = ATTN_DEVICE_CUDA;
  b->common.query_start_loc = &qsl_dev;
  b->common.query_start_loc_cpu = &b->qsl_t;
  b->common.seq_lens = &seq_dev;
  b->common.block_table_tensor = &bt_dev;
  b->common.slot_mapping = &sm_dev;
  b->common.seq_lens_cpu_upper_bound = &f.bound_t;
  ASSERT_OK(attn_common_metadata_unpadded(&b->common, 6, 3, &u));
  ts_expect_i32(u, "seq_lens_cpu_upper_bound", f.bound, 3);
  assert_null(ts_tensor(u, "seq_lens_cpu"));
  attn_metadata_destroy(u);
  /* the bound is checked against the query lengths as seq_lens would be */
  f.bound[1] = 1;
  expect_refused(b, "common->seq_lens_cpu_upper_bound[1]=1 is less than its query length 2");
  ts_batch_free(b);
}

/* A caller compiled against ABI 1.3: struct_size stops at is_prefilling, whatever lies beyond
 * is not read, and the 1.4 fields take their defaults. */
static void test_old_struct_size(void** state) {
  ts_batch* b = padded_batch();
  attn_metadata_t* u = NULL;
  attn_common_metadata_t c;
  (void)state;
  assert_true(ATTN_COMMON_METADATA_STRUCT_SIZE_1_3 < ATTN_COMMON_METADATA_STRUCT_SIZE);
  assert_int_equal(ATTN_COMMON_METADATA_STRUCT_SIZE, sizeof(attn_common_metadata_t));
  b->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_3;
  /* garbage past the caller's struct: must not be read */
  b->common.seq_lens_cpu_upper_bound = (const attn_tensor_t*)UNTOUCHED_PTR;
  b->common.positions = (const attn_tensor_t*)UNTOUCHED_PTR;
  b->common.max_logits_per_req = -77;
  b->common.replayssm_decode_base_cpu = (const attn_tensor_t*)UNTOUCHED_PTR;
  ASSERT_OK(attn_common_metadata_unpadded(&b->common, 6, 3, &u));
  assert_null(ts_tensor(u, "seq_lens_cpu_upper_bound"));
  assert_null(ts_tensor(u, "causal_per_request"));
  assert_int_equal(ts_kind(u, "max_logits_per_req"), ATTN_FIELD_NONE);
  /* an old caller's output struct: nothing written past its struct_size */
  memset(&c, 0xab, sizeof c);
  c.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_3;
  ASSERT_OK(attn_metadata_to_common(u, &c));
  assert_int_equal(c.struct_size, ATTN_COMMON_METADATA_STRUCT_SIZE_1_3);
  assert_int_equal(c.num_reqs, 3);
  assert_int_equal(c.max_logits_per_req, (int64_t)0xababababababababULL);
  attn_metadata_destroy(u);
  /* a size between 1.3's and 1.4's cuts a field: refused */
  b->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_3 + 4;
  u = (attn_metadata_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_common_metadata_unpadded(&b->common, 6, 3, &u), ATTN_ERR_INVALID_ARGUMENT,
               "struct_size");
  assert_ptr_equal(u, UNTOUCHED_PTR);
  ts_batch_free(b);
}

/* A caller compiled against ABI 1.4-1.6: struct_size stops at replayssm_decode_base_cpu, the
 * 1.7 replay_start beyond it is neither read nor written. */
static void test_struct_size_1_6(void** state) {
  ts_batch* b = padded_batch();
  fields f;
  attn_metadata_t* u = NULL;
  attn_common_metadata_t c;
  static const int32_t replay3[3] = {0, 16, 24};
  (void)state;
  assert_int_equal(ATTN_COMMON_METADATA_STRUCT_SIZE_1_6 + sizeof(void*),
                   ATTN_COMMON_METADATA_STRUCT_SIZE);
  fields_init(&f);
  fields_attach(&f, &b->common);
  b->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_6;
  b->common.replay_start = (const attn_tensor_t*)UNTOUCHED_PTR; /* past the struct */
  ASSERT_OK(attn_common_metadata_unpadded(&b->common, 6, 3, &u));
  ts_expect_i32(u, "replayssm_decode_base_cpu", replay3, 3); /* 1.4's fields read */
  assert_null(ts_tensor(u, "replay_start"));
  memset(&c, 0xab, sizeof c);
  c.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_6;
  ASSERT_OK(attn_metadata_to_common(u, &c));
  assert_non_null(c.replayssm_decode_base_cpu);
  assert_ptr_equal(c.replay_start, (const attn_tensor_t*)(uintptr_t)0xababababababababULL);
  attn_metadata_destroy(u);
  ts_batch_free(b);
}

/* ubatch_utils' _make_metadata_with_slice in 0.33: positions[token_slice], and the bound cut
 * like seq_lens (the last request loses the tokens past the split). */
static void test_ubatch_slice(void** state) {
  static const int32_t q[3] = {3, 4, 1};
  static const int32_t s[3] = {10, 20, 30};
  ts_batch* b = ts_batch_make(q, s, 3, 16, 4, 8);
  int64_t pos[8] = {7, 8, 9, 16, 17, 18, 19, 29};
  int32_t bound[3] = {10, 22, 30};
  int64_t n3[1] = {3}, n8[1] = {8}, n4[1] = {4}, n3b[1] = {3};
  attn_tensor_t pos_t = ts_host_tensor(pos, 1, n8, ATTN_DTYPE_INT, 64);
  attn_tensor_t bound_t = ts_host_tensor(bound, 1, n3, ATTN_DTYPE_INT, 32);
  int32_t oq[4], oqc[4], os[3], osc[3];
  attn_tensor_t oq_t = ts_host_tensor(oq, 1, n4, ATTN_DTYPE_INT, 32);
  attn_tensor_t oqc_t = ts_host_tensor(oqc, 1, n4, ATTN_DTYPE_INT, 32);
  attn_tensor_t os_t = ts_host_tensor(os, 1, n3b, ATTN_DTYPE_INT, 32);
  attn_tensor_t osc_t = ts_host_tensor(osc, 1, n3b, ATTN_DTYPE_INT, 32);
  attn_ubatch_slice_t slice = ATTN_UBATCH_SLICE_INIT;
  attn_ubatch_out_t outs = ATTN_UBATCH_OUT_INIT;
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  (void)state;
  b->common.max_seq_len = 30;
  b->common.positions = &pos_t;
  b->common.seq_lens_cpu_upper_bound = &bound_t;
  outs.query_start_loc = &oq_t;
  outs.query_start_loc_cpu = &oqc_t;
  outs.seq_lens = &os_t;
  outs.seq_lens_cpu = &osc_t;
  slice.request_start = 0;
  slice.request_stop = 2;
  slice.token_start = 0;
  slice.token_stop = 5;
  ASSERT_OK(attn_make_metadata_with_slice(&b->common, &slice, &outs, &m, NULL));
  t = ts_tensor(m, "positions");
  assert_non_null(t);
  assert_int_equal(t->shape[0], 5);
  assert_ptr_equal(t->data, pos);
  /* as 0.33: the host output holds the bound cut like seq_lens (22 - 2 tokens past the split),
   * the device seq_lens the exact ones (20 - 2) */
  {
    static const int32_t bound_cut[2] = {10, 20}, exact_cut[2] = {10, 18};
    ts_expect_i32(m, "seq_lens_cpu_upper_bound", bound_cut, 2);
    ts_expect_i32(m, "seq_lens", exact_cut, 2);
    assert_null(ts_tensor(m, "seq_lens_cpu"));
    assert_ptr_equal(ts_tensor(m, "seq_lens_cpu_upper_bound")->data, osc);
  }
  attn_metadata_destroy(m);
  /* without a bound, the host output holds the exact lengths, as before 1.4 */
  b->common.seq_lens_cpu_upper_bound = NULL;
  ASSERT_OK(attn_make_metadata_with_slice(&b->common, &slice, &outs, &m, NULL));
  {
    static const int32_t exact_cut[2] = {10, 18};
    ts_expect_i32(m, "seq_lens_cpu", exact_cut, 2);
    assert_null(ts_tensor(m, "seq_lens_cpu_upper_bound"));
  }
  attn_metadata_destroy(m);
  ts_batch_free(b);
}

/* The other utilities that make a new batch pass 0.33's bound on as 0.33 does: fast prefill
 * keeps the input's, local attention's virtual batches have their (exact) local lengths as it. */
static void test_transforms_carry_the_bound(void** state) {
  ts_batch* b = padded_batch();
  fields f;
  int64_t logits[3] = {1, 3, 5}, li_shape[1] = {3}, o_shape[1] = {5};
  int32_t qsl_out[5], qsl_cpu[5];
  attn_tensor_t lit = ts_host_tensor(logits, 1, li_shape, ATTN_DTYPE_INT, 64);
  attn_tensor_t ot = ts_host_tensor(qsl_out, 1, o_shape, ATTN_DTYPE_INT, 32);
  attn_tensor_t oct = ts_host_tensor(qsl_cpu, 1, o_shape, ATTN_DTYPE_INT, 32);
  attn_metadata_t* r = NULL;
  (void)state;
  fields_init(&f);
  b->common.seq_lens_cpu_upper_bound = &f.bound_t;
  b->common.logits_indices_padded = &lit;
  b->common.num_logits_indices = 3;
  ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &ot, &oct,
                                                                   &r, NULL));
  assert_ptr_equal(ts_tensor(r, "seq_lens_cpu_upper_bound")->data, f.bound);
  attn_metadata_destroy(r);
  {
    /* local attention, chunk 16 over blocks of 16: one virtual batch per request here */
    static int32_t oq[9], oqc[9], os[8], osc[8], comp[8], obt[8], vreq[8], vstart[8];
    int64_t nv = -1, s_v1[1], s_v[1], s_bt[2];
    attn_tensor_t qt, qct, st, sct, ct, btt, vt, vst;
    attn_local_attention_out_t out = ATTN_LOCAL_ATTENTION_OUT_INIT;
    b->common.logits_indices_padded = NULL;
    b->common.num_logits_indices = 0;
    ASSERT_OK(attn_local_attention_num_virtual_batches(16, &b->common, &nv));
    assert_true(nv > 0 && nv <= 8);
    s_v1[0] = nv + 1;
    s_v[0] = nv;
    s_bt[0] = nv;
    s_bt[1] = 1;
    qt = ts_host_tensor(oq, 1, s_v1, ATTN_DTYPE_INT, 32);
    qct = ts_host_tensor(oqc, 1, s_v1, ATTN_DTYPE_INT, 32);
    st = ts_host_tensor(os, 1, s_v, ATTN_DTYPE_INT, 32);
    sct = ts_host_tensor(osc, 1, s_v, ATTN_DTYPE_INT, 32);
    ct = ts_host_tensor(comp, 1, s_v, ATTN_DTYPE_INT, 32);
    btt = ts_host_tensor(obt, 2, s_bt, ATTN_DTYPE_INT, 32);
    vt = ts_host_tensor(vreq, 1, s_v, ATTN_DTYPE_INT, 32);
    vst = ts_host_tensor(vstart, 1, s_v, ATTN_DTYPE_INT, 32);
    out.query_start_loc = &qt;
    out.query_start_loc_cpu = &qct;
    out.seq_lens = &st;
    out.seq_lens_cpu = &sct;
    out.num_computed_tokens_cpu = &ct;
    out.block_table = &btt;
    out.virtual_req = &vt;
    out.virtual_block_start = &vst;
    ASSERT_OK(attn_make_local_attention_virtual_batches(16, &b->common, 16, &out, &r, NULL));
    assert_ptr_equal(ts_tensor(r, "seq_lens_cpu_upper_bound")->data, osc);
    assert_ptr_equal(ts_tensor(r, "seq_lens_cpu")->data, osc);
    attn_metadata_destroy(r);
  }
  ts_batch_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vllm_release),
      cmocka_unit_test(test_fields_accepted_and_unpadded),
      cmocka_unit_test(test_fields_refused),
      cmocka_unit_test(test_field_values_refused),
      cmocka_unit_test(test_bound_alone_is_the_host_lengths),
      cmocka_unit_test(test_old_struct_size),
      cmocka_unit_test(test_struct_size_1_6),
      cmocka_unit_test(test_ubatch_slice),
      cmocka_unit_test(test_transforms_carry_the_bound),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
