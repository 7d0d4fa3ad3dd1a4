/* Host vs CUDA for every backend and wrapper that builds on a GPU: the same seeded random batches
 * through a CPU builder and a CUDA builder (device tensors + host mirrors), every field compared
 * (scalars by value, tensors by shape and content, device tensors copied back), and the
 * capture and drafting builds that run their own kernels (TRITON_ATTN's seq_lens fill,
 * TREE_ATTN's sub-bias). Skips, saying so, when no CUDA device is visible. */
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
  if (n == 0) printf("SKIP: no CUDA device visible; the host-vs-CUDA backend builds did not run\n");
  return n > 0;
}

static void* to_device(const void* host, size_t bytes) {
  void* d = NULL;
  assert_int_equal(cudaMalloc(&d, bytes ? bytes : 4), cudaSuccess);
  if (bytes) assert_int_equal(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

/* The elements of a 1-D or 2-D tensor, row by row, as bytes in host memory (caller frees). */
static unsigned char* contents(const attn_tensor_t* t, size_t* out_bytes) {
  const size_t item = t->dtype.bits / 8;
  const int64_t rows = t->ndim == 2 ? t->shape[0] : 1;
  const int64_t cols = t->ndim == 2 ? t->shape[1] : t->shape[0];
  const int64_t stride = t->ndim == 2 ? t->strides[0] : cols;
  const size_t span = rows == 0 || cols == 0 ? 0 : (size_t)((rows - 1) * stride + cols) * item;
  unsigned char* all = (unsigned char*)malloc(span + 1);
  unsigned char* packed = (unsigned char*)malloc((size_t)(rows * cols) * item + 1);
  const char* base = (const char*)t->data + t->byte_offset;
  int64_t r;
  if (span > 0) {
    if (t->device.device_type == ATTN_DEVICE_CUDA)
      assert_int_equal(cudaMemcpy(all, base, span, cudaMemcpyDeviceToHost), cudaSuccess);
    else
      memcpy(all, base, span);
  }
  for (r = 0; r < rows; ++r)
    memcpy(packed + (size_t)(r * cols) * item, all + (size_t)(r * stride) * item, (size_t)cols * item);
  free(all);
  *out_bytes = (size_t)(rows * cols) * item;
  return packed;
}

static void expect_same_metadata(const attn_metadata_t* h, const attn_metadata_t* d, const char* what) {
  size_t i, n = attn_metadata_field_count(h);
  assert_string_equal(attn_metadata_kind(h), attn_metadata_kind(d));
  assert_int_equal(n, attn_metadata_field_count(d));
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  for (i = 0; i < n; ++i) {
    attn_field_t hf = ATTN_FIELD_INIT, df = ATTN_FIELD_INIT;
    ASSERT_OK(attn_metadata_field(h, i, &hf));
    ASSERT_OK(attn_metadata_field(d, i, &df));
    if (hf.kind != df.kind) fail_msg("%s: field %s has kind %d on the host, %d on CUDA", what, hf.name, hf.kind, df.kind);
    if (hf.kind == ATTN_FIELD_INT || hf.kind == ATTN_FIELD_BOOL) {
      if (hf.int_value != df.int_value)
        fail_msg("%s: %s = %lld on the host, %lld on CUDA", what, hf.name, (long long)hf.int_value,
                 (long long)df.int_value);
    } else if (hf.kind == ATTN_FIELD_FLOAT) {
      assert_true(hf.float_value == df.float_value);
    } else if (hf.kind == ATTN_FIELD_TENSOR) {
      int k;
      size_t hb = 0, db = 0;
      unsigned char *hc, *dc;
      assert_int_equal(hf.tensor->ndim, df.tensor->ndim);
      for (k = 0; k < hf.tensor->ndim; ++k) assert_int_equal(hf.tensor->shape[k], df.tensor->shape[k]);
      if (hf.tensor->ndim > 2) continue; /* scratch buffers (TRITON_ATTN's softmax segments) */
      hc = contents(hf.tensor, &hb);
      dc = contents(df.tensor, &db);
      if (hb != db || memcmp(hc, dc, hb) != 0) fail_msg("%s: tensor %s differs between host and CUDA", what, hf.name);
      free(hc);
      free(dc);
    }
  }
}

typedef struct {
  attn_tensor_t qsl, seq, bt, sm, enc, logits;
  attn_common_metadata_t common;
} device_batch;

static void to_device_batch(const ts_batch* b, device_batch* d) {
  d->qsl = b->qsl_t, d->seq = b->seq_t, d->bt = b->bt_t, d->sm = b->sm_t;
  d->qsl.data = to_device(b->qsl, (size_t)(b->num_reqs + 1) * 4);
  d->seq.data = to_device(b->seq, (size_t)b->num_reqs * 4);
  d->bt.data = to_device(b->bt, (size_t)(b->num_reqs * b->width) * 4);
  d->sm.data = to_device(b->slots, (size_t)b->num_tokens * 8);
  d->qsl.device.device_type = d->seq.device.device_type = ATTN_DEVICE_CUDA;
  d->bt.device.device_type = d->sm.device.device_type = ATTN_DEVICE_CUDA;
  d->common = b->common;
  d->common.query_start_loc = &d->qsl;
  d->common.query_start_loc_cpu = &b->qsl_t;
  d->common.seq_lens = &d->seq;
  d->common.seq_lens_cpu = &b->seq_t;
  d->common.block_table_tensor = &d->bt;
  d->common.slot_mapping = &d->sm;
}

static void free_device_batch(device_batch* d) {
  cudaFree(d->qsl.data);
  cudaFree(d->seq.data);
  cudaFree(d->bt.data);
  cudaFree(d->sm.data);
}

/* One backend (or wrapper) built from the same batch on both sides. */
static void compare(const char* backend, const attn_kv_cache_spec_t* spec,
                    const attn_builder_config_t* config, ts_batch* b, int mode) {
  attn_builder_config_t dc = *config;
  attn_builder_t* hb = ts_builder(backend, spec, config);
  attn_builder_t* db;
  attn_metadata_t *hm = NULL, *dm = NULL;
  device_batch d;
  dc.device.device_type = ATTN_DEVICE_CUDA;
  db = ts_builder(backend, spec, &dc);
  to_device_batch(b, &d);
  if (mode == 0) {
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
  } else if (mode == 1) {
    ASSERT_OK(attn_build_for_drafting(hb, &b->common, 1, &hm, NULL));
    ASSERT_OK(attn_build_for_drafting(db, &d.common, 1, &dm, NULL));
  } else {
    ASSERT_OK(attn_build_for_cudagraph_capture(db, &d.common, &dm, NULL));
    ASSERT_OK(attn_build_for_cudagraph_capture(hb, &b->common, &hm, NULL));
  }
  expect_same_metadata(hm, dm, backend);
  free_device_batch(&d);
  attn_builder_destroy(hb);
  attn_builder_destroy(db);
}

static ts_batch* random_batch(uint64_t* seed, int64_t n, int decodes_first, int32_t max_q) {
  int32_t q[64], s[64];
  int64_t r;
  for (r = 0; r < n; ++r) {
    q[r] = decodes_first && r < n / 2 ? 1 : (int32_t)ts_rand_range(seed, 1, max_q);
    s[r] = q[r] + (int32_t)ts_rand_range(seed, 0, 700);
  }
  return ts_batch_make(q, s, n, 16, 48, -1);
}

static void test_backends(void** state) {
  uint64_t seed = 99;
  int iter;
  (void)state;
  if (!have_gpu()) skip();
  for (iter = 0; iter < 60; ++iter) {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = ts_config();
    const int64_t n = ts_rand_range(&seed, 1, 64);
    ts_batch* b = random_batch(&seed, n, 1, 40);
    c.num_gpu_blocks = 48 * 64 + 1;
    c.max_model_len = 768;
    c.speculative_token_tree = "[(0,), (1,), (0, 0), (0, 1), (1, 0)]";
    compare("FLASH_ATTN", &spec, &c, b, 0);
    compare("FLASHINFER", &spec, &c, b, 0);
    compare("TRITON_ATTN", &spec, &c, b, 0);
    compare("FLEX_ATTENTION", &spec, &c, b, 0);
    compare("TREE_ATTN", &spec, &c, b, 0);
    compare("TREE_ATTN", &spec, &c, b, 1);
    c.device_capability = 100; /* FLASHINFER's TRT-LLM fields */
    compare("FLASHINFER", &spec, &c, b, 0);
    c.device_capability = 90;
    spec.kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION;
    spec.attention_chunk_size = 64;
    compare("FLASH_ATTN", &spec, &c, b, 0);
    compare("TRITON_ATTN", &spec, &c, b, 0);
    ts_batch_free(b);
  }
}

static void test_capture(void** state) {
  static const int32_t q[4] = {1, 1, 1, 1}, s[4] = {100, 7, 64, 300};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  ts_batch* b;
  (void)state;
  if (!have_gpu()) skip();
  c.num_gpu_blocks = 64;
  b = ts_batch_make(q, s, 4, 16, 20, -1);
  compare("TRITON_ATTN", &spec, &c, b, 2); /* both sides write 1 into their seq_lens */
  ts_batch_free(b);
  b = ts_batch_make(q, s, 4, 16, 20, -1);
  compare("FLASHINFER", &spec, &c, b, 2);
  compare("FLEX_ATTENTION", &spec, &c, b, 2);
  ts_batch_free(b);
}

static void test_fast_prefill_and_cross(void** state) {
  uint64_t seed = 5;
  int iter;
  (void)state;
  if (!have_gpu()) skip();
  for (iter = 0; iter < 40; ++iter) {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = ts_config();
    const int64_t n = ts_rand_range(&seed, 1, 32);
    ts_batch* b = random_batch(&seed, n, 0, 20);
    int32_t logits[64], enc[64], cross_bt[64 * 8];
    int64_t r, ls[1] = {n}, es[1] = {n}, bs[2] = {n, 8};
    attn_tensor_t lt = ts_host_tensor(logits, 1, ls, ATTN_DTYPE_INT, 32);
    attn_tensor_t et = ts_host_tensor(enc, 1, es, ATTN_DTYPE_INT, 32);
    attn_tensor_t bt = ts_host_tensor(cross_bt, 2, bs, ATTN_DTYPE_INT, 32);
    attn_builder_config_t dc;
    attn_builder_t *hb, *db;
    attn_metadata_t *hm = NULL, *dm = NULL;
    device_batch d;
    for (r = 0; r < n; ++r) logits[r] = b->qsl[r + 1] - 1;
    for (r = 0; r < n; ++r) enc[r] = (int32_t)ts_rand_range(&seed, 0, 128);
    for (r = 0; r < n * 8; ++r) cross_bt[r] = (int32_t)(500 + r);
    /* fast prefill: the logits indices on the device with a host mirror */
    c.kv_sharing_fast_prefill = 1;
    b->common.logits_indices_padded = &lt;
    b->common.num_logits_indices = n;
    dc = c;
    dc.device.device_type = ATTN_DEVICE_CUDA;
    hb = ts_builder("FLASH_ATTN", &spec, &c);
    db = ts_builder("FLASH_ATTN", &spec, &dc);
    to_device_batch(b, &d);
    d.logits = lt;
    d.logits.data = to_device(logits, (size_t)n * 4);
    d.logits.device.device_type = ATTN_DEVICE_CUDA;
    d.common.logits_indices_padded = &d.logits;
    d.common.logits_indices_padded_cpu = &lt;
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
    {
      /* logits_indices_padded is each side's own input: compare the rest */
      assert_int_equal(ts_int(hm, "num_actual_tokens"), ts_int(dm, "num_actual_tokens"));
      assert_int_equal(ts_int(hm, "max_query_len"), ts_int(dm, "max_query_len"));
    }
    cudaFree(d.logits.data);
    free_device_batch(&d);
    attn_builder_destroy(hb);
    attn_builder_destroy(db);
    b->common.logits_indices_padded = NULL;
    b->common.num_logits_indices = 0;
    /* cross attention: encoder lengths and the cross block table */
    c.kv_sharing_fast_prefill = 0;
    c.max_encoder_len = 128;
    spec.kind = ATTN_KV_CROSS_ATTENTION;
    dc = c;
    dc.device.device_type = ATTN_DEVICE_CUDA;
    hb = ts_builder("FLASH_ATTN", &spec, &c);
    db = ts_builder("FLASH_ATTN", &spec, &dc);
    b->common.block_table_tensor = &bt;
    b->common.encoder_seq_lens = &et;
    to_device_batch(b, &d);
    cudaFree(d.bt.data); /* the cross table replaces the copy of the decoder's */
    d.bt = bt;
    d.bt.data = to_device(cross_bt, sizeof cross_bt[0] * (size_t)(n * 8));
    d.bt.device.device_type = ATTN_DEVICE_CUDA;
    d.enc = et;
    d.enc.data = to_device(enc, (size_t)n * 4);
    d.enc.device.device_type = ATTN_DEVICE_CUDA;
    d.common.block_table_tensor = &d.bt;
    d.common.encoder_seq_lens = &d.enc;
    d.common.encoder_seq_lens_cpu = &et;
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
    {
      size_t hbytes = 0, dbytes = 0;
      unsigned char* hs = contents(ts_tensor(hm, "slot_mapping"), &hbytes);
      unsigned char* ds = contents(ts_tensor(dm, "slot_mapping"), &dbytes);
      assert_int_equal(hbytes, dbytes);
      assert_int_equal(memcmp(hs, ds, hbytes), 0);
      free(hs);
      free(ds);
    }
    cudaFree(d.enc.data);
    free_device_batch(&d);
    attn_builder_destroy(hb);
    attn_builder_destroy(db);
    ts_batch_free(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backends),
      cmocka_unit_test(test_capture),
      cmocka_unit_test(test_fast_prefill_and_cross),
  };
  return cmocka_run_group_tests_name("gpu_backends", tests, NULL, NULL);
}
