/* Host vs CUDA: FLASH_ATTN builds of the same random batches on a CPU builder and on a CUDA
 * builder (device tensors + host mirrors) give the same metadata, every field (the cascade
 * variant's with a common prefix, the DCP ones with DCP). Skips, saying so, when no CUDA device
 * is visible. */
#include "test_support.h"

#include "gpu_support.h"

static void test_host_vs_cuda(void** state) {
  uint64_t seed = 77;
  int iter;
  (void)state;
  if (!tg_have_gpu("the FLASH_ATTN host-vs-CUDA comparison")) skip();
  for (iter = 0; iter < 200; ++iter) {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t hc = ts_config(), dc = ts_config();
    attn_builder_t *hb, *db;
    attn_metadata_t *hm = NULL, *dm = NULL;
    int32_t q[64], s[64];
    int64_t n = ts_rand_range(&seed, 1, 64), r, prefix, min_seq = 1 << 30;
    ts_batch* b;
    attn_tensor_t dq, ds, dbt, dsm;
    attn_common_metadata_t dcommon;
    const int32_t dcp = (int32_t)(iter % 3 == 0 ? 2 : 1);
    char label[96];
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 1, 40);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 900);
      if (s[r] < min_seq) min_seq = s[r];
    }
    b = ts_batch_make(q, s, n, 16, 64, -1);
    prefix = min_seq >= 16 ? 16 * ts_rand_range(&seed, 0, min_seq / 16) : 0;
    hc.decode_context_parallel_size = dc.decode_context_parallel_size = dcp;
    hc.dcp_rank = dc.dcp_rank = dcp - 1;
    dc.device.device_type = ATTN_DEVICE_CUDA;
    hb = ts_builder("FLASH_ATTN", &spec, &hc);
    db = ts_builder("FLASH_ATTN", &spec, &dc);
    dq = b->qsl_t; dq.data = tg_to_device(b->qsl, (size_t)(n + 1) * 4); dq.device.device_type = ATTN_DEVICE_CUDA;
    ds = b->seq_t; ds.data = tg_to_device(b->seq, (size_t)n * 4); ds.device.device_type = ATTN_DEVICE_CUDA;
    dbt = b->bt_t; dbt.data = tg_to_device(b->bt, (size_t)(n * 64) * 4); dbt.device.device_type = ATTN_DEVICE_CUDA;
    dsm = b->sm_t; dsm.data = tg_to_device(b->slots, (size_t)b->num_tokens * 8); dsm.device.device_type = ATTN_DEVICE_CUDA;
    dcommon = b->common;
    dcommon.query_start_loc = &dq;
    dcommon.query_start_loc_cpu = &b->qsl_t;
    dcommon.seq_lens = &ds;
    dcommon.seq_lens_cpu = &b->seq_t;
    dcommon.block_table_tensor = &dbt;
    dcommon.slot_mapping = &dsm;
    ASSERT_OK(attn_build(hb, prefix, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, prefix, &dcommon, 0, &dm, NULL));
    snprintf(label, sizeof label, "FLASH_ATTN batch %d (n=%lld, prefix=%lld, dcp=%d)", iter,
             (long long)n, (long long)prefix, dcp);
    tg_expect_same_metadata(hm, dm, label);
    cudaFree(dq.data); cudaFree(ds.data); cudaFree(dbt.data); cudaFree(dsm.data);
    attn_builder_destroy(hb);
    attn_builder_destroy(db);
    ts_batch_free(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_host_vs_cuda)};
  return cmocka_run_group_tests_name("gpu_flash_attn", tests, NULL, NULL);
}
