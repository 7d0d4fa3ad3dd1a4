/* Host vs CUDA: FLASH_ATTN builds of the same random batches on a CPU builder and on a CUDA
 * builder (device tensors + host mirrors) give the same metadata, cascade and DCP fields
 * included. Skips, saying so, when no CUDA device is visible. */
#include <cuda_runtime_api.h>

#include "test_support.h"

static int have_gpu(void) {
  int32_t n = 0;
  attn_error_t* err = attn_device_count(ATTN_DEVICE_CUDA, &n);
  if (err != NULL) {
    printf("SKIP: no CUDA device: %s\n", attn_error_message(err));
    attn_error_destroy(err);
    return 0;
  }
  if (n == 0) printf("SKIP: no CUDA device visible; the host-vs-CUDA comparison did not run\n");
  return n > 0;
}

static void* to_device(const void* host, size_t bytes) {
  void* d = NULL;
  assert_int_equal(cudaMalloc(&d, bytes ? bytes : 4), cudaSuccess);
  if (bytes) assert_int_equal(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

static void expect_same_i32(const attn_metadata_t* host, const attn_metadata_t* dev, const char* name) {
  const attn_tensor_t* h = ts_tensor(host, name);
  const attn_tensor_t* d = ts_tensor(dev, name);
  int32_t buf[1024];
  int64_t i;
  if ((h == NULL) != (d == NULL)) fail_msg("%s: None on one side only", name);
  if (h == NULL) return;
  assert_int_equal(d->device.device_type, ATTN_DEVICE_CUDA);
  assert_int_equal(h->shape[0], d->shape[0]);
  assert_true(d->shape[0] <= 1024);
  assert_int_equal(cudaMemcpy(buf, d->data, (size_t)d->shape[0] * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (i = 0; i < h->shape[0]; ++i)
    if (buf[i] != ((const int32_t*)h->data)[i])
      fail_msg("%s[%lld]: device %d, host %d", name, (long long)i, buf[i], ((const int32_t*)h->data)[i]);
}

static void test_host_vs_cuda(void** state) {
  uint64_t seed = 77;
  int iter;
  (void)state;
  if (!have_gpu()) skip();
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
    size_t i;
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
    dq = b->qsl_t; dq.data = to_device(b->qsl, (size_t)(n + 1) * 4); dq.device.device_type = ATTN_DEVICE_CUDA;
    ds = b->seq_t; ds.data = to_device(b->seq, (size_t)n * 4); ds.device.device_type = ATTN_DEVICE_CUDA;
    dbt = b->bt_t; dbt.data = to_device(b->bt, (size_t)(n * 64) * 4); dbt.device.device_type = ATTN_DEVICE_CUDA;
    dsm = b->sm_t; dsm.data = to_device(b->slots, (size_t)b->num_tokens * 8); dsm.device.device_type = ATTN_DEVICE_CUDA;
    dcommon = b->common;
    dcommon.query_start_loc = &dq;
    dcommon.query_start_loc_cpu = &b->qsl_t;
    dcommon.seq_lens = &ds;
    dcommon.seq_lens_cpu = &b->seq_t;
    dcommon.block_table_tensor = &dbt;
    dcommon.slot_mapping = &dsm;
    ASSERT_OK(attn_build(hb, prefix, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, prefix, &dcommon, 0, &dm, NULL));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(attn_metadata_field_count(hm), attn_metadata_field_count(dm));
    for (i = 0; i < attn_metadata_field_count(hm); ++i) {
      attn_field_t hf = ATTN_FIELD_INIT, df = ATTN_FIELD_INIT;
      ASSERT_OK(attn_metadata_field(hm, i, &hf));
      ASSERT_OK(attn_metadata_field(dm, i, &df));
      assert_int_equal(hf.kind, df.kind);
      if (hf.kind == ATTN_FIELD_INT || hf.kind == ATTN_FIELD_BOOL) assert_int_equal(hf.int_value, df.int_value);
    }
    expect_same_i32(hm, dm, "cu_prefix_query_lens");
    expect_same_i32(hm, dm, "prefix_kv_lens");
    expect_same_i32(hm, dm, "suffix_kv_lens");
    expect_same_i32(hm, dm, "dcp_context_kv_lens");
    expect_same_i32(hm, dm, "query_start_loc");
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
