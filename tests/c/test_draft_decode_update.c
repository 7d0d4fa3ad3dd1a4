/* vLLM 0.33's draft decode metadata refresh (ABI 1.5): attn_builder_supports_draft_decode_metadata_update
 * per builder as vLLM 0.33 sets supports_draft_decode_metadata_update (FLASH_ATTN without DCP,
 * TRITON_ATTN without R-SWA, FLASHINFER with trtllm-gen decode and no DCP, TRITON_MLA without DCP,
 * wrappers as their inner builder, every other builder no), and attn_update_draft_decode_metadata:
 * in place (the metadata's views see the inputs the speculator advanced), refused with vLLM's
 * reason where unsupported, bad input named. */
#include <string.h>

#include "test_support.h"

static int32_t supports(const char* backend, const attn_kv_cache_spec_t* spec,
                        const attn_builder_config_t* c) {
  attn_builder_t* b = ts_builder(backend, spec, c);
  int32_t v = -7;
  ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &v));
  attn_builder_destroy(b);
  return v;
}

static void test_which_builders_support_it(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_kv_cache_spec_t local = ts_spec();
  attn_kv_cache_spec_t mla = ts_spec();
  attn_builder_config_t c = ts_config(); /* 9.0, on the host */
  attn_builder_config_t dcp = ts_config();
  attn_builder_config_t rswa = ts_config();
  attn_builder_config_t sm100 = ts_config();
  attn_builder_config_t sm100_dcp = ts_config();
  (void)state;
  c.num_gpu_blocks = 1024; /* FLEX_ATTENTION needs it */
  dcp.decode_context_parallel_size = 2;
  rswa.rswa_window = 128;
  sm100.device_capability = 100;
  sm100_dcp.device_capability = 100;
  sm100_dcp.decode_context_parallel_size = 2;
  local.kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION;
  local.attention_chunk_size = 64;
  mla.kind = ATTN_KV_MLA;
  mla.num_kv_heads = 1;
  mla.head_size = 576;
  mla.block_size = 64;
  {
    const struct {
      const char* backend;
      const attn_kv_cache_spec_t* spec;
      const attn_builder_config_t* config;
      int32_t want;
    } cases[] = {
        {"FLASH_ATTN", &spec, &c, 1},          {"FLASH_ATTN", &spec, &dcp, 0},
        {"TRITON_ATTN", &spec, &c, 1},         {"TRITON_ATTN", &spec, &rswa, 0},
        {"FLASHINFER", &spec, &c, 0},          /* 9.0: XQA decode */
        {"FLASHINFER", &spec, &sm100, 1},      /* 10.x: trtllm-gen */
        {"FLASHINFER", &spec, &sm100_dcp, 0},  {"FLEX_ATTENTION", &spec, &c, 0},
        {"CPU_ATTN", &spec, &c, 0},
        /* a wrapper answers as its inner builder (vLLM's wrappers subclass it) */
        {"FLASH_ATTN", &local, &c, 1},         {"FLASH_ATTN", &local, &dcp, 0},
        /* MLA: TRITON_MLA without DCP; FLASHMLA keeps vLLM's base class's "no" */
        {"TRITON_MLA", &mla, &c, 1},           {"TRITON_MLA", &mla, &dcp, 0},
        {"FLASHMLA", &mla, &c, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
      if (supports(cases[i].backend, cases[i].spec, cases[i].config) != cases[i].want)
        fail_msg("case %zu (%s): expected %d", i, cases[i].backend, cases[i].want);
  }
}

static void test_update_in_place(void** state) {
  static const int32_t q[3] = {1, 1, 1}, s[3] = {10, 20, 30};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder("TRITON_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_metadata_t* md = NULL;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &md, NULL));
  for (int i = 0; i < 3; ++i) batch->seq[i] += 1; /* the speculator advances seq_lens */
  ASSERT_OK(attn_update_draft_decode_metadata(b, md, NULL));
  ts_expect_i32(md, "seq_lens", (int32_t[]){11, 21, 31}, 3);
  ASSERT_OK(attn_update_draft_decode_metadata(b, md, NULL)); /* again: still nothing to redo */
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

static void test_bad_input(void** state) {
  static const int32_t q[2] = {1, 1}, s[2] = {10, 20};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_config_t dcp = ts_config();
  attn_builder_t* fa;
  attn_builder_t* tr;
  attn_builder_t* fa_dcp;
  attn_builder_t* flex;
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
  attn_metadata_t* md = NULL;
  attn_metadata_t* stale = NULL;
  attn_metadata_t* other = NULL;
  int32_t v = -7;
  (void)state;
  c.num_gpu_blocks = 1024; /* FLEX_ATTENTION needs it */
  fa = ts_builder("FLASH_ATTN", &spec, &c);
  tr = ts_builder("TRITON_ATTN", &spec, &c);
  flex = ts_builder("FLEX_ATTENTION", &spec, &c);
  dcp.decode_context_parallel_size = 2;
  fa_dcp = ts_builder("FLASH_ATTN", &spec, &dcp);
  ASSERT_ERROR(attn_builder_supports_draft_decode_metadata_update(NULL, &v),
               ATTN_ERR_INVALID_ARGUMENT, "builder is NULL");
  ASSERT_ERROR(attn_builder_supports_draft_decode_metadata_update(fa, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  assert_int_equal(v, -7);

  ASSERT_OK(attn_build(fa, 0, &batch->common, 0, &stale, NULL));
  ASSERT_OK(attn_build(fa, 0, &batch->common, 0, &md, NULL));
  ASSERT_ERROR(attn_update_draft_decode_metadata(NULL, md, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "builder is NULL");
  ASSERT_ERROR(attn_update_draft_decode_metadata(fa, NULL, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "metadata is NULL");
  ASSERT_ERROR(attn_update_draft_decode_metadata(fa, stale, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "metadata");
  ASSERT_ERROR(attn_update_draft_decode_metadata(tr, md, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "metadata was built by 'FLASH_ATTN', this builder is 'TRITON_ATTN'");
  ASSERT_OK(attn_build(fa_dcp, 0, &batch->common, 0, &other, NULL));
  ASSERT_ERROR(attn_update_draft_decode_metadata(fa_dcp, other, NULL), ATTN_ERR_UNSUPPORTED,
               "FLASH_ATTN does not support update_draft_decode_metadata: decode context "
               "parallel");
  ASSERT_OK(attn_build(flex, 0, &batch->common, 0, &other, NULL));
  ASSERT_ERROR(attn_update_draft_decode_metadata(flex, other, NULL), ATTN_ERR_UNSUPPORTED,
               "FLEX_ATTENTION does not support update_draft_decode_metadata: vLLM 0.33's base "
               "builder class does not support it");
  ASSERT_OK(attn_update_draft_decode_metadata(fa, md, NULL));
  ts_batch_free(batch);
  attn_builder_destroy(flex);
  attn_builder_destroy(fa_dcp);
  attn_builder_destroy(tr);
  attn_builder_destroy(fa);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_which_builders_support_it),
      cmocka_unit_test(test_update_in_place),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
