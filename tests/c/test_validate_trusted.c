/* ATTN_VALIDATE_TRUSTED (ABI 1.7, issue 18): what it accepts (any values in the batch's
 * tensors, for the builds whose result is views plus scalars), what it still refuses (struct,
 * scalars, shapes, dtypes, devices, byte extents, alignment), that garbage values never crash
 * any backend (run it under valgrind or the ASan build: scripts/valgrind.sh), vLLM's O(1)
 * shortcuts (the split at max_query_len <= threshold), and the older struct sizes. */
#include "test_support.h"

static const int32_t kQ[3] = {1, 1, 1};
static const int32_t kS[3] = {40, 50, 60};

static attn_builder_config_t trusted_config(void) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 128;
  c.num_gpu_blocks = 64; /* FLEX_ATTENTION's inverse block table */
  c.validate = ATTN_VALIDATE_TRUSTED;
  return c;
}

/* Values a trusting caller may get wrong: decreasing query starts, negative and huge seq_lens,
 * block ids out of any cache, a query longer than max_query_len. */
static void spoil_values(ts_batch* b) {
  b->qsl[1] = 7;
  b->qsl[2] = -3;
  b->qsl[3] = 1 << 30;
  b->seq[0] = -5;
  b->seq[1] = 1 << 30;
  b->bt[0] = -1;
  b->slots[0] = -77;
}

static void test_version_and_value(void** state) {
  uint32_t major = 0, minor = 0, patch = 0;
  (void)state;
  attn_get_version(&major, &minor, &patch);
  assert_true(major == 1 && minor >= 7);
  assert_int_equal(ATTN_VALIDATE_TRUSTED, 2);
  ASSERT_OK(attn_check_version(1, 7));
  /* a value this library does not know is refused, naming it (what a 1.6 library says of 2) */
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = trusted_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  config.validate = 3;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->validate=3");
  assert_ptr_equal(b, UNTOUCHED_PTR);
}

/* FLASH_ATTN and TRITON_ATTN pass the views on: the trusting build accepts garbage values and
 * returns the caller's views and scalars; the default build of the same batch refuses them. */
static void test_passthrough_accepts_garbage(void** state) {
  const char* names[2] = {"FLASH_ATTN", "TRITON_ATTN"};
  (void)state;
  for (int k = 0; k < 2; ++k) {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t config = trusted_config();
    attn_builder_t* trusted = ts_builder(names[k], &spec, &config);
    config.validate = ATTN_VALIDATE_HOST;
    attn_builder_t* host = ts_builder(names[k], &spec, &config);
    ts_batch* b = ts_batch_make(kQ, kS, 3, 16, 8, -1);
    spoil_values(b);
    attn_metadata_t* md = NULL;
    ASSERT_OK(attn_build(trusted, 0, &b->common, 0, &md, NULL));
    assert_ptr_equal(ts_tensor(md, "query_start_loc")->data, b->qsl);
    assert_ptr_equal(ts_tensor(md, "seq_lens")->data, b->seq);
    assert_ptr_equal(ts_tensor(md, "block_table")->data, b->bt);
    assert_ptr_equal(ts_tensor(md, "slot_mapping")->data, b->slots);
    assert_int_equal(ts_int(md, "max_query_len"), 1);
    assert_int_equal(ts_int(md, "num_actual_tokens"), 3);
    md = (attn_metadata_t*)UNTOUCHED_PTR;
    ASSERT_ERROR(attn_build(host, 0, &b->common, 0, &md, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "query_start_loc[");
    assert_ptr_equal(md, UNTOUCHED_PTR);
    /* a cascade build reads the values (the prefix split): they are checked again */
    ASSERT_ERROR(attn_build(trusted, 16, &b->common, 0, &md, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->");
    attn_builder_destroy(trusted);
    attn_builder_destroy(host);
    ts_batch_free(b);
  }
}

typedef void (*mutator)(ts_batch* b, void* scratch);

static void short_qsl(ts_batch* b, void* s) { (void)s; b->qsl_shape[0] = 3; }
static void int64_seq_lens(ts_batch* b, void* s) { (void)s; b->seq_t.dtype.bits = 64; }
static void misaligned_seq_lens(ts_batch* b, void* s) {
  (void)s;
  b->seq_t.data = (char*)b->seq + 1;
}
static void overflowing_table(ts_batch* b, void* s) {
  static int64_t strides[2] = {(int64_t)1 << 61, 1};
  (void)s;
  b->bt_t.strides = strides;
}
static void null_data(ts_batch* b, void* s) { (void)s; b->sm_t.data = NULL; }
static void negative_reqs(ts_batch* b, void* s) { (void)s; b->common.num_reqs = -1; }
static void too_many_reqs(ts_batch* b, void* s) {
  (void)s;
  b->common.num_reqs = 9; /* > max_num_seqs 8 */
}
static void too_many_tokens(ts_batch* b, void* s) {
  (void)s;
  b->common.num_actual_tokens = 65; /* > max_num_batched_tokens 64 */
}
static void negative_max_seq(ts_batch* b, void* s) { (void)s; b->common.max_seq_len = -1; }
static void no_seq_lens(ts_batch* b, void* s) { (void)s; b->common.seq_lens = NULL; }
static void short_slot_mapping(ts_batch* b, void* s) { (void)s; b->sm_shape[0] = 2; }
static void device_mismatch(ts_batch* b, void* s) {
  (void)s;
  b->seq_t.device.device_type = ATTN_DEVICE_CUDA;
}
static void bad_struct_size(ts_batch* b, void* s) { (void)s; b->common.struct_size = 12; }

/* The trusting build still refuses what is not a value: each mutation names its argument. */
static void test_trusted_refuses_shapes(void** state) {
  static const struct {
    mutator m;
    const char* message;
  } cases[] = {
      {short_qsl, "common->query_start_loc"},   {int64_seq_lens, "common->seq_lens"},
      {misaligned_seq_lens, "misaligned"},      {overflowing_table, "overflows"},
      {null_data, "data=NULL"},                 {negative_reqs, "num_reqs=-1"},
      {too_many_reqs, "max_num_seqs"},          {too_many_tokens, "max_num_batched_tokens"},
      {negative_max_seq, "max_seq_len=-1"},     {no_seq_lens, "common->seq_lens is NULL"},
      {short_slot_mapping, "common->slot_mapping"}, {device_mismatch, "common->seq_lens"},
      {bad_struct_size, "struct_size=12"},
  };
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = trusted_config();
  attn_builder_t* builder = ts_builder("FLASH_ATTN", &spec, &config);
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    ts_batch* b = ts_batch_make(kQ, kS, 3, 16, 8, -1);
    attn_metadata_t* md = (attn_metadata_t*)UNTOUCHED_PTR;
    cases[i].m(b, NULL);
    ASSERT_ERROR(attn_build(builder, 0, &b->common, 0, &md, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 cases[i].message);
    assert_ptr_equal(md, UNTOUCHED_PTR);
    ts_batch_free(b);
  }
  attn_builder_destroy(builder);
}

/* Every backend that builds for the spec, in trusting mode, on batches of random garbage values
 * (shapes right): success or an error, never a crash or an access outside the views (valgrind
 * and the ASan build check the accesses). */
static void garbage_through_every_backend(const attn_kv_cache_spec_t* spec, uint64_t seed) {
  attn_builder_config_t config = trusted_config();
  const char* names[64];
  const size_t n = ts_backends_building(-1, spec, &config, names, 64);
  assert_true(n > 0);
  for (size_t k = 0; k < n && k < 64; ++k) {
    attn_builder_t* builder = ts_builder(names[k], spec, &config);
    for (int round = 0; round < 40; ++round) {
      const int64_t reqs = ts_rand_range(&seed, 0, 8);
      int32_t q[8], s[8];
      for (int64_t i = 0; i < reqs; ++i) {
        q[i] = 1;
        s[i] = 8;
      }
      ts_batch* b = ts_batch_make(q, s, reqs, spec->block_size, 4, reqs);
      for (int64_t i = 0; i <= reqs; ++i)
        b->qsl[i] = (int32_t)ts_rand_range(&seed, -100000, 100000);
      for (int64_t i = 0; i < reqs; ++i) b->seq[i] = (int32_t)ts_rand_range(&seed, -9, 1 << 30);
      for (int64_t i = 0; i < reqs * 4; ++i)
        b->bt[i] = (int32_t)ts_rand_range(&seed, INT32_MIN, INT32_MAX);
      for (int64_t i = 0; i < reqs; ++i) b->slots[i] = ts_rand_range(&seed, -1000000, 1000000);
      b->common.max_query_len = ts_rand_range(&seed, 0, 4);
      b->common.max_seq_len = ts_rand_range(&seed, 0, 1 << 20);
      attn_metadata_t* md = NULL;
      attn_error_t* e = attn_build(builder, 0, &b->common, 0, &md, NULL);
      if (e != NULL) {
        attn_error_destroy(e);
      } else {
        /* read every field back (as the fuzz harness does) */
        const size_t fields = attn_metadata_field_count(md);
        for (size_t i = 0; i < fields; ++i) {
          attn_field_t f = ATTN_FIELD_INIT;
          ASSERT_OK(attn_metadata_field(md, i, &f));
        }
      }
      attn_batch_split_t split = ATTN_BATCH_SPLIT_INIT;
      e = attn_split_decodes_and_prefills(&b->common, (int32_t)ts_rand_range(&seed, 0, 4), 0,
                                          &split);
      if (e != NULL) attn_error_destroy(e);
      ts_batch_free(b);
    }
    attn_builder_destroy(builder);
  }
}

static void test_garbage_never_crashes(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_kv_cache_spec_t mla = ts_mla_spec(64);
  (void)state;
  garbage_through_every_backend(&spec, 18);
  garbage_through_every_backend(&mla, 19);
}

/* vLLM's O(1) shortcut: max_query_len <= threshold returns (num_reqs, 0, num_tokens, 0)
 * without reading a tensor, in every mode; past it the batch is checked as before. */
static void test_split_shortcut(void** state) {
  ts_batch* b = ts_batch_make(kQ, kS, 3, 16, 8, -1);
  attn_batch_split_t s = ATTN_BATCH_SPLIT_INIT;
  (void)state;
  spoil_values(b);
  ASSERT_OK(attn_split_decodes_and_prefills(&b->common, 1, 0, &s));
  assert_int_equal(s.num_decodes, 3);
  assert_int_equal(s.num_decode_tokens, 3);
  assert_int_equal(s.num_prefills + s.num_prefill_tokens + s.num_extends, 0);
  attn_split_options_t o = ATTN_SPLIT_OPTIONS_INIT;
  s.num_decodes = -1;
  ASSERT_OK(attn_split_decodes_and_prefills_ex(&b->common, &o, &s));
  assert_int_equal(s.num_decodes, 3);
  /* not the shortcut: require_uniform above threshold 1, or max_query_len above it */
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, 2, 1, &s), ATTN_ERR_INVALID_ARGUMENT,
               "query_start_loc[");
  b->common.max_query_len = 2;
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, 1, 0, &s), ATTN_ERR_INVALID_ARGUMENT,
               "query_start_loc[");
  /* the scalars it reads are still checked */
  b->common.max_query_len = 1;
  b->common.num_reqs = -2;
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, 1, 0, &s), ATTN_ERR_INVALID_ARGUMENT,
               "num_reqs=-2");
  b->common.num_reqs = 3;
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, -1, 0, &s), ATTN_ERR_INVALID_ARGUMENT,
               "decode_threshold=-1");
  b->common.struct_size = 12;
  ASSERT_ERROR(attn_split_decodes_and_prefills(&b->common, 1, 0, &s), ATTN_ERR_INVALID_ARGUMENT,
               "struct_size=12");
  ts_batch_free(b);
}

/* A caller compiled against an older header: the 1.0 config (validate is a 1.0 field) and the
 * 1.0 common metadata work in trusting mode. */
static void test_old_struct_sizes(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = trusted_config();
  (void)state;
  spec.struct_size = ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_0;
  config.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0;
  attn_builder_t* builder = ts_builder("TRITON_ATTN", &spec, &config);
  ts_batch* b = ts_batch_make(kQ, kS, 3, 16, 8, -1);
  spoil_values(b);
  b->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_0;
  attn_metadata_t* md = NULL;
  ASSERT_OK(attn_build(builder, 0, &b->common, 0, &md, NULL));
  assert_ptr_equal(ts_tensor(md, "query_start_loc")->data, b->qsl);
  b->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_1;
  ASSERT_OK(attn_build(builder, 0, &b->common, 0, &md, NULL));
  b->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_3;
  ASSERT_OK(attn_build(builder, 0, &b->common, 0, &md, NULL));
  attn_builder_destroy(builder);
  /* the 1.4 config size too */
  config = trusted_config();
  config.struct_size = ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_4;
  builder = ts_builder("FLASH_ATTN", &spec, &config);
  ASSERT_OK(attn_build(builder, 0, &b->common, 0, &md, NULL));
  attn_builder_destroy(builder);
  ts_batch_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_and_value),
      cmocka_unit_test(test_passthrough_accepts_garbage),
      cmocka_unit_test(test_trusted_refuses_shapes),
      cmocka_unit_test(test_garbage_never_crashes),
      cmocka_unit_test(test_split_shortcut),
      cmocka_unit_test(test_old_struct_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
