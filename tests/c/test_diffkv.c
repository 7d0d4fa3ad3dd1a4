/* vLLM 0.33's diff-KV backends (K and V of different head sizes; kv_cache_spec->head_size_v,
 * ABI 1.7): FLASH_ATTN_DIFFKV is FLASH_ATTN's builder under another name (same level, threshold,
 * update_block_table and fields); TRITON_ATTN_DIFFKV is TRITON_ATTN's with softmax_segm_output's
 * last dimension next_power_of_2(head_size_v) and decoder self-attention only. Each is built
 * beside its base on random batches and every field compared. */
#include <string.h>

#include "test_support.h"

static void test_flash_attn_diffkv(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t *d, *f;
  int32_t ld = -1, lf = -2, td = -1, tf = -2, ud = -1, uf = -2;
  const int32_t versions[3] = {2, 3, 4};
  int v, it;
  uint64_t rng = 7;
  (void)state;
  spec.head_size = 192;
  spec.head_size_v = 128;
  for (v = 0; v < 3; ++v) {
    c.flash_attn_version = versions[v];
    d = ts_builder("FLASH_ATTN_DIFFKV", &spec, &c);
    f = ts_builder("FLASH_ATTN", &spec, &c);
    ASSERT_OK(attn_builder_cudagraph_support(d, &ld));
    ASSERT_OK(attn_builder_cudagraph_support(f, &lf));
    assert_int_equal(ld, lf);
    assert_int_equal(ld, versions[v] == 2 ? ATTN_CG_UNIFORM_BATCH : ATTN_CG_ALWAYS);
    ASSERT_OK(attn_backend_cudagraph_support("FLASH_ATTN_DIFFKV", &spec, &c, &ld));
    assert_int_equal(ld, lf);
    ASSERT_OK(attn_builder_reorder_batch_threshold(d, &td));
    ASSERT_OK(attn_builder_reorder_batch_threshold(f, &tf));
    assert_int_equal(td, tf);
    ASSERT_OK(attn_builder_supports_update_block_table(d, &ud));
    ASSERT_OK(attn_builder_supports_update_block_table(f, &uf));
    assert_int_equal(ud, 1);
    assert_int_equal(uf, 1);
    for (it = 0; it < 40; ++it) {
      int32_t q[8], s[8];
      const int64_t n = ts_rand_range(&rng, 1, 8);
      int64_t r;
      ts_batch* batch;
      attn_metadata_t *md = NULL, *mf = NULL;
      for (r = 0; r < n; ++r) {
        s[r] = (int32_t)ts_rand_range(&rng, 1, 300);
        q[r] = (int32_t)ts_rand_range(&rng, 1, s[r] < 40 ? s[r] : 40);
      }
      batch = ts_batch_make(q, s, n, 16, 0, -1);
      ASSERT_OK(attn_build(d, 0, &batch->common, 0, &md, NULL));
      ASSERT_OK(attn_build(f, 0, &batch->common, 0, &mf, NULL));
      assert_string_equal(attn_metadata_kind(md), "FLASH_ATTN_DIFFKV");
      ts_expect_same_fields(md, mf, NULL);
      ts_batch_free(batch);
    }
    attn_builder_destroy(d);
    attn_builder_destroy(f);
  }
  /* FLASH_ATTN's limits hold (vLLM builds it with FLASH_ATTN's builder) */
  spec.head_size = 260;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN_DIFFKV", &spec, &c, &d), ATTN_ERR_UNSUPPORTED,
               "head sizes that are multiples of 8 up to 256");
  spec.head_size = 192;
  spec.head_size_v = -1;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN_DIFFKV", &spec, &c, &d),
               ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->head_size_v=-1 is negative");
}

static void test_triton_attn_diffkv(void** state) {
  static const int32_t q[4] = {1, 1, 7, 20}, s[4] = {30, 18, 40, 20};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t *d, *t;
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 4, -1);
  attn_metadata_t *md = NULL, *mt = NULL;
  const attn_tensor_t* o;
  int32_t level = -1, threshold = -1, update = -1;
  size_t bd = 0, bt = 0;
  (void)state;
  spec.head_size = 192;  /* next_power_of_2: 256 for TRITON_ATTN */
  spec.head_size_v = 96; /* 128 for TRITON_ATTN_DIFFKV */
  d = ts_builder("TRITON_ATTN_DIFFKV", &spec, &c);
  t = ts_builder("TRITON_ATTN", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(d, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  ASSERT_OK(attn_builder_reorder_batch_threshold(d, &threshold));
  assert_int_equal(threshold, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_update_block_table(d, &update));
  assert_int_equal(update, 0);
  ASSERT_OK(attn_build(d, 0, &batch->common, 0, &md, NULL));
  ASSERT_OK(attn_build(t, 0, &batch->common, 0, &mt, NULL));
  assert_string_equal(attn_metadata_kind(md), "TRITON_ATTN_DIFFKV");
  o = ts_tensor(md, "softmax_segm_output");
  assert_int_equal(o->ndim, 4);
  assert_int_equal(o->shape[0], 16);
  assert_int_equal(o->shape[1], 32);
  assert_int_equal(o->shape[2], 16);
  assert_int_equal(o->shape[3], 128);
  assert_int_equal(ts_tensor(mt, "softmax_segm_output")->shape[3], 256);
  {  /* everything else as TRITON_ATTN's */
    const attn_tensor_t* a = ts_tensor(md, "softmax_segm_max");
    const attn_tensor_t* b = ts_tensor(mt, "softmax_segm_max");
    assert_int_equal(a->shape[0], b->shape[0]);
    assert_int_equal(a->shape[2], b->shape[2]);
  }
  {
    attn_field_t fa = ATTN_FIELD_INIT;
    size_t k, n = attn_metadata_field_count(md);
    assert_int_equal(n, attn_metadata_field_count(mt));
    for (k = 0; k < n; ++k) {
      attn_field_t fb = ATTN_FIELD_INIT;
      ASSERT_OK(attn_metadata_field(md, k, &fa));
      ASSERT_OK(attn_metadata_field(mt, k, &fb));
      assert_string_equal(fa.name, fb.name);
      if (fa.kind != ATTN_FIELD_TENSOR) assert_int_equal(fa.int_value, fb.int_value);
      else if (strncmp(fa.name, "softmax_segm_", 13) != 0)
        assert_ptr_equal(fa.tensor->data, fb.tensor->data); /* views of the batch */
    }
  }
  ASSERT_OK(attn_builder_workspace_size("TRITON_ATTN_DIFFKV", &spec, &c, &bd));
  ASSERT_OK(attn_builder_workspace_size("TRITON_ATTN", &spec, &c, &bt));
  assert_true(bd < bt); /* half the output scratch */
  /* head_size_v 0 = head_size: TRITON_ATTN's scratch */
  attn_builder_destroy(d);
  spec.head_size_v = 0;
  d = ts_builder("TRITON_ATTN_DIFFKV", &spec, &c);
  ASSERT_OK(attn_build(d, 0, &batch->common, 0, &md, NULL));
  assert_int_equal(ts_tensor(md, "softmax_segm_output")->shape[3], 256);
  attn_builder_destroy(d);
  attn_builder_destroy(t);
  /* decoder self-attention only (vLLM's supports_attn_type) */
  spec.kind = ATTN_KV_CROSS_ATTENTION;
  c.max_encoder_len = 64;
  ASSERT_ERROR(attn_builder_create("TRITON_ATTN_DIFFKV", &spec, &c, &d), ATTN_ERR_UNSUPPORTED,
               "TRITON_ATTN_DIFFKV does not build metadata for CROSS_ATTENTION KV cache specs");
  spec.kind = ATTN_KV_FULL_ATTENTION;
  spec.head_size = 16;
  ASSERT_ERROR(attn_builder_create("TRITON_ATTN_DIFFKV", &spec, &c, &d), ATTN_ERR_UNSUPPORTED,
               "head sizes of at least 32");
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flash_attn_diffkv),
      cmocka_unit_test(test_triton_attn_diffkv),
  };
  return cmocka_run_group_tests_name("diffkv", tests, NULL, NULL);
}
