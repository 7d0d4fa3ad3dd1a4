/* A plugin backend is given every field of the batch: a build with every field of
 * attn_common_metadata_t set (ABI 1.7) reaches the plugin's build callback with each one, the
 * same views (data, dtype, shape) and the same scalars. The fields are walked from their list
 * (core/abi_fields.h), so a field added to the header and the list is checked here too: the test
 * fails until the batch below sets it. */
#include <dlfcn.h>
#include <stdbool.h>

#include "core/abi_fields.h"
#include "test_support.h"

static char plugin_path[1024];

/* Every field set, each tensor its own memory, every value one the validation accepts. */
typedef struct {
  int32_t qsl[3], qsl_cpu[3], seq[2], seq_cpu[2], bt[4], logits[2], logits_cpu[2], enc[2],
      enc_cpu[2], dcp[2], dcp_cpu[2], accepted[2], drafts_cpu[2], drafts[2], prefilling[2],
      bound[2], dcp_bound[2], causal[2], ranges[3], rswa[2], replayssm[2], replay[2];
  int64_t slots[3], positions[3], req_idx[2];
  int64_t shape_qsl[1], shape_req[1], shape_tok[1], shape_bt[2], shape_ranges[2];
  attn_tensor_t t[32];
  attn_common_metadata_t c;
} batch;

static const attn_tensor_t* vec(batch* b, size_t* k, void* data, int64_t* shape, int32_t ndim,
                                uint8_t bits) {
  b->t[*k] = ts_host_tensor(data, ndim, shape, ATTN_DTYPE_INT, bits);
  return &b->t[(*k)++];
}

static void make_batch(batch* b) {
  static const int32_t qsl[3] = {0, 1, 3}, seq[2] = {5, 9};
  size_t k = 0, i;
  memset(b, 0, sizeof *b);
  b->shape_qsl[0] = 3;
  b->shape_req[0] = 2;
  b->shape_tok[0] = 3;
  b->shape_bt[0] = 2;
  b->shape_bt[1] = 2;
  b->shape_ranges[0] = 1;
  b->shape_ranges[1] = 3;
  for (i = 0; i < 3; ++i) b->qsl[i] = b->qsl_cpu[i] = qsl[i];
  for (i = 0; i < 2; ++i) {
    b->seq[i] = b->seq_cpu[i] = b->bound[i] = seq[i];
    b->enc[i] = b->enc_cpu[i] = 4;
    b->dcp[i] = b->dcp_cpu[i] = b->dcp_bound[i] = seq[i];
    b->accepted[i] = 1;
    b->drafts[i] = b->drafts_cpu[i] = -1;
    b->prefilling[i] = (int32_t)i;
    b->causal[i] = (int32_t)(1 - i);
    b->req_idx[i] = (int64_t)i;
  }
  b->bt[0] = 1, b->bt[1] = 2, b->bt[2] = 3, b->bt[3] = 4;
  b->logits[0] = b->logits_cpu[0] = 0;
  b->logits[1] = b->logits_cpu[1] = 2;
  b->ranges[0] = 1, b->ranges[1] = 0, b->ranges[2] = 2;  /* request 1, tokens [0, 2) */
  for (i = 0; i < 3; ++i) b->slots[i] = 16 + (int64_t)i, b->positions[i] = 4 + (int64_t)i;
  b->c = (attn_common_metadata_t)ATTN_COMMON_METADATA_INIT;
  b->c.query_start_loc = vec(b, &k, b->qsl, b->shape_qsl, 1, 32);
  b->c.query_start_loc_cpu = vec(b, &k, b->qsl_cpu, b->shape_qsl, 1, 32);
  b->c.seq_lens = vec(b, &k, b->seq, b->shape_req, 1, 32);
  b->c.seq_lens_cpu = vec(b, &k, b->seq_cpu, b->shape_req, 1, 32);
  b->c.num_reqs = 2;
  b->c.num_actual_tokens = 3;
  b->c.max_query_len = 2;
  b->c.max_seq_len = 9;
  b->c.block_table_tensor = vec(b, &k, b->bt, b->shape_bt, 2, 32);
  b->c.slot_mapping = vec(b, &k, b->slots, b->shape_tok, 1, 64);
  b->c.causal = 0;
  b->c.logits_indices_padded = vec(b, &k, b->logits, b->shape_req, 1, 32);
  b->c.num_logits_indices = 2;
  b->c.encoder_seq_lens = vec(b, &k, b->enc, b->shape_req, 1, 32);
  b->c.encoder_seq_lens_cpu = vec(b, &k, b->enc_cpu, b->shape_req, 1, 32);
  b->c.dcp_local_seq_lens = vec(b, &k, b->dcp, b->shape_req, 1, 32);
  b->c.dcp_local_seq_lens_cpu = vec(b, &k, b->dcp_cpu, b->shape_req, 1, 32);
  b->c.logits_indices_padded_cpu = vec(b, &k, b->logits_cpu, b->shape_req, 1, 32);
  b->c.num_accepted_tokens = vec(b, &k, b->accepted, b->shape_req, 1, 32);
  b->c.num_decode_draft_tokens_cpu = vec(b, &k, b->drafts_cpu, b->shape_req, 1, 32);
  b->c.num_decode_draft_tokens = vec(b, &k, b->drafts, b->shape_req, 1, 32);
  b->c.is_prefilling = vec(b, &k, b->prefilling, b->shape_req, 1, 32);
  b->c.seq_lens_cpu_upper_bound = vec(b, &k, b->bound, b->shape_req, 1, 32);
  b->c.dcp_local_seq_lens_cpu_upper_bound = vec(b, &k, b->dcp_bound, b->shape_req, 1, 32);
  b->c.positions = vec(b, &k, b->positions, b->shape_tok, 1, 64);
  b->c.causal_per_request = vec(b, &k, b->causal, b->shape_req, 1, 32);
  b->c.max_logits_per_req = 2;
  b->c.req_idx = vec(b, &k, b->req_idx, b->shape_req, 1, 64);
  b->c.mm_req_doc_ranges = vec(b, &k, b->ranges, b->shape_ranges, 2, 32);
  b->c.rswa_prefix_lens = vec(b, &k, b->rswa, b->shape_req, 1, 32);
  b->c.replayssm_decode_base_cpu = vec(b, &k, b->replayssm, b->shape_req, 1, 32);
  b->c.replay_start = vec(b, &k, b->replay, b->shape_req, 1, 32);
  assert_true(k <= sizeof b->t / sizeof b->t[0]);
}

static void expect_tensor(const char* name, const attn_tensor_t* given, const attn_tensor_t* seen) {
  int32_t d;
  if (given == NULL) fail_msg("common->%s is not set by this test: set it in make_batch", name);
  if (seen == NULL) fail_msg("the plugin was given common->%s = NULL", name);
  if ((const char*)seen->data + seen->byte_offset != (const char*)given->data + given->byte_offset)
    fail_msg("the plugin's common->%s views other memory", name);
  if (seen->ndim != given->ndim || seen->dtype.code != given->dtype.code ||
      seen->dtype.bits != given->dtype.bits || seen->device.device_type != given->device.device_type)
    fail_msg("the plugin's common->%s has another ndim, dtype or device", name);
  for (d = 0; d < given->ndim; ++d)
    if (seen->shape[d] != given->shape[d])
      fail_msg("the plugin's common->%s has shape[%d]=%lld, given %lld", name, (int)d,
               (long long)seen->shape[d], (long long)given->shape[d]);
}

static void expect_scalar(const char* name, int64_t given, int64_t seen, int64_t init) {
  if (given == init)
    fail_msg("common->%s is its ATTN_COMMON_METADATA_INIT value here: set it in make_batch", name);
  if (seen != given)
    fail_msg("the plugin was given common->%s=%lld, the batch has %lld", name, (long long)seen,
             (long long)given);
}

static void test_plugin_sees_every_field(void** state) {
  typedef const attn_common_metadata_t* (*seen_fn)(void);
  static batch b;
  attn_plugin_t* plugin = NULL;
  attn_builder_t* builder = NULL;
  attn_metadata_t* m = NULL;
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  void* lib;
  seen_fn seen_of;
  const attn_common_metadata_t* seen;
  int64_t num_reqs = -1;
  (void)state;
  ASSERT_OK(attn_plugin_load(plugin_path, &plugin));
  lib = dlopen(plugin_path, RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(lib);
  seen_of = (seen_fn)(uintptr_t)dlsym(lib, "test_plugin_seen");
  assert_non_null(seen_of);
  assert_null(seen_of());
  make_batch(&b);
  ASSERT_OK(attn_builder_create("TEST_RECORDING", &spec, &config, &builder));
  ASSERT_OK(attn_build(builder, 0, &b.c, 0, &m, NULL));
  ASSERT_OK(attn_metadata_get_int(m, "num_reqs", &num_reqs));
  assert_int_equal(num_reqs, 2);
  seen = seen_of();
  assert_non_null(seen);
#define EXPECT(kind, ...) EXPECT_##kind(__VA_ARGS__)
#define EXPECT_SIZE(name)
#define EXPECT_EXT(name) assert_null(seen->name);
#define EXPECT_I64(name, value) expect_scalar(#name, b.c.name, seen->name, (int64_t)(value));
#define EXPECT_BOOL(name, value) expect_scalar(#name, b.c.name, seen->name, (int64_t)(value));
#define EXPECT_OPT_I64(name) expect_scalar(#name, b.c.name, seen->name, -1);
#define EXPECT_TENSOR(name, ...) expect_tensor(#name, b.c.name, seen->name);
  ATTN_COMMON_METADATA_FIELDS(EXPECT)
  assert_int_equal(seen->struct_size, sizeof(attn_common_metadata_t));
  attn_builder_destroy(builder);
  ASSERT_OK(attn_plugin_unload(plugin));
  dlclose(lib);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_plugin_sees_every_field)};
  snprintf(plugin_path, sizeof plugin_path, "%s/libtest_plugin_recording.so", ATTN_TEST_PLUGIN_DIR);
  return cmocka_run_group_tests_name("plugin_fields", tests, NULL, NULL);
}
