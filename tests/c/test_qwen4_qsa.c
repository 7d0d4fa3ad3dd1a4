/* vLLM 0.33's Qwen4-exp QSA owner builders (models/qwen4_exp/{nvidia,amd}/qsa.py:
 * Qwen4ExpQSAMetadataBuilder, FlashAttentionMetadataBuilder subclasses): QWEN4_EXP_QSA_TRITON
 * (CUDA) and QWEN4_EXP_QSA_TRITON_ROCM (config->platform_rocm) are FLASH_ATTN's builder with the
 * class level UNIFORM_BATCH whatever the FlashAttention version; on ROCm vLLM's
 * get_flash_attn_version() is None, so no FA3 AOT schedule. Each is built beside FLASH_ATTN (with
 * the same config) on random batches and every field compared. */
#include "test_support.h"

/* Full CUDA graphs (FA3's schedule buffer exists) and the FlashAttention version `v`. */
static attn_builder_config_t config_for(int32_t v, int32_t rocm) {
  attn_builder_config_t c = ts_config();
  c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
  c.max_cudagraph_capture_size = 64;
  c.flash_attn_version = v;
  c.platform_rocm = rocm;
  return c;
}

static void compare_with_flash_attn(const char* name, int32_t rocm) {
  attn_kv_cache_spec_t spec = ts_spec();
  const int32_t versions[3] = {2, 3, 4};
  uint64_t rng = 11 + (uint64_t)rocm;
  int v, it;
  for (v = 0; v < 3; ++v) {
    const attn_builder_config_t c = config_for(versions[v], rocm);
    attn_builder_t* q = ts_builder(name, &spec, &c);
    attn_builder_t* f = ts_builder("FLASH_ATTN", &spec, &c);
    int32_t lq = -1, lf = -2, tq = -1, tf = -2, uq = -1;
    ASSERT_OK(attn_builder_cudagraph_support(q, &lq));
    assert_int_equal(lq, ATTN_CG_UNIFORM_BATCH); /* the subclass's class attribute */
    ASSERT_OK(attn_backend_cudagraph_support(name, &spec, &c, &lq));
    assert_int_equal(lq, ATTN_CG_UNIFORM_BATCH);
    ASSERT_OK(attn_builder_cudagraph_support(f, &lf));
    /* FLASH_ATTN's own: ALWAYS on FA3/FA4, UNIFORM_BATCH on FA2 and on ROCm (version None) */
    assert_int_equal(lf, !rocm && versions[v] != 2 ? ATTN_CG_ALWAYS : ATTN_CG_UNIFORM_BATCH);
    ASSERT_OK(attn_builder_reorder_batch_threshold(q, &tq));
    ASSERT_OK(attn_builder_reorder_batch_threshold(f, &tf));
    assert_int_equal(tq, tf);
    ASSERT_OK(attn_builder_supports_update_block_table(q, &uq));
    assert_int_equal(uq, 1);
    for (it = 0; it < 30; ++it) {
      int32_t ql[8], sl[8];
      const int64_t n = ts_rand_range(&rng, 1, 8);
      int64_t r;
      ts_batch* batch;
      attn_metadata_t *mq = NULL, *mf = NULL;
      for (r = 0; r < n; ++r) {
        sl[r] = (int32_t)ts_rand_range(&rng, 1, 300);
        ql[r] = (int32_t)ts_rand_range(&rng, 1, sl[r] < 40 ? sl[r] : 40);
      }
      batch = ts_batch_make(ql, sl, n, 16, 0, -1);
      ASSERT_OK(attn_build(q, 0, &batch->common, 0, &mq, NULL));
      ASSERT_OK(attn_build(f, 0, &batch->common, 0, &mf, NULL));
      assert_string_equal(attn_metadata_kind(mq), name);
      /* FA3's AOT schedule on CUDA only */
      assert_int_equal(ts_int(mq, "aot_schedule"), !rocm && versions[v] == 3);
      ts_expect_same_fields(mq, mf, NULL);
      ts_batch_free(batch);
    }
    attn_builder_destroy(q);
    attn_builder_destroy(f);
  }
}

static void test_qsa_triton(void** state) {
  (void)state;
  compare_with_flash_attn("QWEN4_EXP_QSA_TRITON", 0);
}

static void test_qsa_triton_rocm(void** state) {
  (void)state;
  compare_with_flash_attn("QWEN4_EXP_QSA_TRITON_ROCM", 1);
}

static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = config_for(3, 1);
  attn_builder_t* b = NULL;
  (void)state;
  ASSERT_ERROR(attn_builder_create("QWEN4_EXP_QSA_TRITON", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "config->platform_rocm=1; on ROCm use QWEN4_EXP_QSA_TRITON_ROCM");
  c.platform_rocm = 0;
  ASSERT_ERROR(attn_builder_create("QWEN4_EXP_QSA_TRITON_ROCM", &spec, &c, &b),
               ATTN_ERR_UNSUPPORTED, "config->platform_rocm=0; on CUDA use QWEN4_EXP_QSA_TRITON");
  /* the QSA owner's spec is FullAttentionSpec: no sliding window, no wrapper kinds */
  spec = ts_swa_spec(16, 128);
  ASSERT_ERROR(attn_builder_create("QWEN4_EXP_QSA_TRITON", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "QWEN4_EXP_QSA_TRITON does not build metadata for SLIDING_WINDOW KV cache specs");
  /* FLASH_ATTN's limits hold (block sizes MultipleOf(16) as the QSA backend declares) */
  spec = ts_spec();
  spec.block_size = 8;
  ASSERT_ERROR(attn_builder_create("QWEN4_EXP_QSA_TRITON", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "block_size to be a multiple of 16, got 8");
  assert_null(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qsa_triton),
      cmocka_unit_test(test_qsa_triton_rocm),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests_name("qwen4_qsa", tests, NULL, NULL);
}
