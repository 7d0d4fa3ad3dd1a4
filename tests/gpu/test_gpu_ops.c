/* Host vs CUDA for every tensor batch utility: the same seeded random inputs through the host
 * path and through the kernels (device tensors, host mirrors), outputs compared element by
 * element. Skips, saying so, when no CUDA device is visible. */
#include <cuda_runtime_api.h>

#include "test_support.h"

#define I32(data, shape) ts_host_tensor((data), 1, (shape), ATTN_DTYPE_INT, 32)
#define I64(data, shape) ts_host_tensor((data), 1, (shape), ATTN_DTYPE_INT, 64)

static int gpu_present(void) {
  int32_t n = 0;
  attn_error_t* err = attn_device_count(ATTN_DEVICE_CUDA, &n);
  if (err != NULL) {
    printf("SKIP: no CUDA device: %s\n", attn_error_message(err));
    attn_error_destroy(err);
    return 0;
  }
  if (n == 0) printf("SKIP: no CUDA device visible; host-vs-CUDA op comparisons did not run\n");
  return n > 0;
}

/* A device copy of a host tensor (same shape pointer), freed by dev_free. */
static attn_tensor_t dev_of(const attn_tensor_t* h, size_t bytes) {
  attn_tensor_t d = *h;
  void* p = NULL;
  assert_int_equal(cudaMalloc(&p, bytes ? bytes : 4), cudaSuccess);
  if (bytes) assert_int_equal(cudaMemcpy(p, h->data, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  d.data = p;
  d.device.device_type = ATTN_DEVICE_CUDA;
  d.device.device_id = 0;
  return d;
}

static void expect_same(const attn_tensor_t* d, const void* host, size_t bytes, const char* what) {
  void* back = malloc(bytes ? bytes : 1);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  assert_int_equal(cudaMemcpy(back, d->data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  if (memcmp(back, host, bytes) != 0) fail_msg("%s differs between host and CUDA", what);
  free(back);
}

static void dev_free(attn_tensor_t* d) { cudaFree(d->data); }

static void test_dcp_and_slices(void** state) {
  uint64_t seed = 1;
  int iter;
  (void)state;
  if (!gpu_present()) skip();
  for (iter = 0; iter < 100; ++iter) {
    int32_t seq[256], out[256 * 4], qsl[257], sl[257];
    const int64_t n = ts_rand_range(&seed, 1, 256);
    int64_t s[1] = {n}, o2[2] = {n, 4}, qs[1] = {n + 1}, r;
    attn_tensor_t st = I32(seq, s), ot = ts_host_tensor(out, 2, o2, ATTN_DTYPE_INT, 32), dst, dot;
    attn_tensor_t qt = I32(qsl, qs), slt = I32(sl, qs), dqt, dslt;
    qsl[0] = 0;
    for (r = 0; r < n; ++r) {
      seq[r] = (int32_t)ts_rand_range(&seed, 0, 100000);
      qsl[r + 1] = qsl[r] + (int32_t)ts_rand_range(&seed, 0, 50);
    }
    ASSERT_OK(attn_get_dcp_local_seq_lens(&st, 4, ATTN_DCP_ALL_RANKS, 16, &ot, NULL));
    dst = dev_of(&st, (size_t)n * 4);
    dot = dev_of(&ot, (size_t)n * 16);
    ASSERT_OK(attn_get_dcp_local_seq_lens(&dst, 4, ATTN_DCP_ALL_RANKS, 16, &dot, NULL));
    expect_same(&dot, out, (size_t)n * 16, "get_dcp_local_seq_lens");
    ASSERT_OK(attn_slice_query_start_locs(&qt, n / 3, n, &slt, NULL));
    dqt = dev_of(&qt, (size_t)(n + 1) * 4);
    dslt = dev_of(&slt, (size_t)(n + 1) * 4);
    ASSERT_OK(attn_slice_query_start_locs(&dqt, n / 3, n, &dslt, NULL));
    expect_same(&dslt, sl, (size_t)(n - n / 3 + 1) * 4, "slice_query_start_locs");
    dev_free(&dst);
    dev_free(&dot);
    dev_free(&dqt);
    dev_free(&dslt);
  }
}

/* compute_token_to_req_indices (ABI 1.4): host vs CUDA, tokens past the batch and unmapped
 * tokens included; entries from num_tokens on stay as they were. */
static void test_token_to_req_indices(void** state) {
  uint64_t seed = 16;
  int iter;
  (void)state;
  if (!gpu_present()) skip();
  for (iter = 0; iter < 100; ++iter) {
    int32_t qsl[258], out[12000];
    const int64_t n = ts_rand_range(&seed, 0, 256);
    int64_t qs[1] = {n + 1}, os[1] = {12000}, r, tokens, mapped;
    attn_tensor_t qt = I32(qsl, qs), ot = I32(out, os), dqt, dot;
    qsl[0] = 0;
    for (r = 0; r < n; ++r) qsl[r + 1] = qsl[r] + (int32_t)ts_rand_range(&seed, 0, 40);
    tokens = ts_rand_range(&seed, 0, qsl[n] + 100 < 12000 ? qsl[n] + 100 : 12000);
    mapped = ts_rand_range(&seed, 0, qsl[n] + 50);
    for (r = 0; r < 12000; ++r) out[r] = -7;
    dqt = dev_of(&qt, (size_t)(n + 1) * 4);
    dot = dev_of(&ot, sizeof out);
    ASSERT_OK(attn_compute_token_to_req_indices(&qt, &ot, mapped, tokens, NULL));
    ASSERT_OK(attn_compute_token_to_req_indices(&dqt, &dot, mapped, tokens, NULL));
    expect_same(&dot, out, sizeof out, "compute_token_to_req_indices");
    dev_free(&dqt);
    dev_free(&dot);
  }
}

/* naive_query_lens (ABI 1.7): host vs CUDA on random batches; the device batch is the host one
 * with query_start_loc on the device and query_start_loc_cpu as its mirror. */
static void test_naive_query_lens(void** state) {
  uint64_t seed = 17;
  int iter;
  (void)state;
  if (!gpu_present()) skip();
  for (iter = 0; iter < 100; ++iter) {
    int32_t q[300], s[300], out[300], dout_host[300];
    const int64_t n = ts_rand_range(&seed, 1, 300);
    int64_t os[1] = {300}, r;
    attn_tensor_t ot = I32(out, os), dqsl, dot;
    attn_common_metadata_t dc;
    ts_batch* b;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 0, 30);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 200);
    }
    for (r = 0; r < 300; ++r) out[r] = dout_host[r] = -3;
    b = ts_batch_make(q, s, n, 16, 0, -1);
    ASSERT_OK(attn_common_metadata_naive_query_lens(&b->common, &ot, NULL));
    dqsl = dev_of(&b->qsl_t, (size_t)(n + 1) * 4);
    dot = dev_of(&ot, sizeof dout_host);
    assert_int_equal(cudaMemcpy(dot.data, dout_host, sizeof dout_host, cudaMemcpyHostToDevice),
                     cudaSuccess);
    dc = b->common;
    dc.query_start_loc = &dqsl;
    dc.query_start_loc_cpu = &b->qsl_t;
    dc.seq_lens = NULL; /* not read */
    dc.block_table_tensor = NULL;
    dc.slot_mapping = NULL;
    ASSERT_OK(attn_common_metadata_naive_query_lens(&dc, &dot, NULL));
    expect_same(&dot, out, sizeof out, "common_metadata_naive_query_lens");
    dev_free(&dqsl);
    dev_free(&dot);
    ts_batch_free(b);
  }
}

static void test_slot_mapping_and_paged_kv(void** state) {
  uint64_t seed = 2;
  int iter;
  (void)state;
  if (!gpu_present()) skip();
  for (iter = 0; iter < 50; ++iter) {
    enum { kWidth = 64 };
    static int32_t qsl[129], bt[128 * kWidth], seq[128], indptr[129], indices[128 * kWidth], last[128];
    static int64_t pos[128 * 64], slots[128 * 64 + 32];
    const int64_t n = ts_rand_range(&seed, 1, 128);
    int64_t r, t = 0, k, pages = 0, pages_d = 0;
    int64_t qs[1] = {n + 1}, bs[2] = {n, kWidth}, ps[1], ss[1], ns[1] = {n}, xs[1] = {128 * kWidth};
    attn_tensor_t qt, bt_t, pt, smt, st, ipt, ixt, lt, dq, dbt, dp, dsm, ds, dip, dix, dl;
    attn_slot_mapping_args_t a = ATTN_SLOT_MAPPING_ARGS_INIT;
    qsl[0] = 0;
    for (r = 0; r < n; ++r) {
      const int64_t q = ts_rand_range(&seed, 0, 64), ctx = ts_rand_range(&seed, 0, 900);
      for (k = 0; k < q; ++k) pos[t++] = ctx + k;
      qsl[r + 1] = (int32_t)t;
      seq[r] = (int32_t)(ctx + q);
      for (k = 0; k < kWidth; ++k) bt[r * kWidth + k] = (int32_t)ts_rand_range(&seed, 0, 1 << 20);
    }
    ps[0] = t;
    ss[0] = t + 32;
    qt = I32(qsl, qs);
    bt_t = ts_host_tensor(bt, 2, bs, ATTN_DTYPE_INT, 32);
    pt = I64(pos, ps);
    smt = I64(slots, ss);
    a.query_start_loc = &qt;
    a.num_reqs = n;
    a.positions = &pt;
    a.block_table = &bt_t;
    a.block_size = 16;
    a.dcp_world_size = 2;
    a.dcp_rank = 1;
    a.slot_mapping = &smt;
    ASSERT_OK(attn_compute_slot_mapping(&a, NULL));
    dq = dev_of(&qt, (size_t)(n + 1) * 4);
    dbt = dev_of(&bt_t, (size_t)(n * kWidth) * 4);
    dp = dev_of(&pt, (size_t)t * 8);
    dsm = dev_of(&smt, (size_t)(t + 32) * 8);
    a.query_start_loc = &dq;
    a.query_start_loc_cpu = &qt;
    a.positions = &dp;
    a.positions_cpu = &pt;
    a.block_table = &dbt;
    a.slot_mapping = &dsm;
    ASSERT_OK(attn_compute_slot_mapping(&a, NULL));
    expect_same(&dsm, slots, (size_t)(t + 32) * 8, "compute_slot_mapping");
    /* paged KV */
    st = I32(seq, ns);
    ipt = I32(indptr, qs);
    ixt = I32(indices, xs);
    lt = I32(last, ns);
    ASSERT_OK(attn_compute_flashinfer_kv_metadata(&st, NULL, &bt_t, 16, &ipt, &ixt, &lt, &pages, NULL));
    ds = dev_of(&st, (size_t)n * 4);
    dip = dev_of(&ipt, (size_t)(n + 1) * 4);
    dix = dev_of(&ixt, (size_t)(128 * kWidth) * 4);
    dl = dev_of(&lt, (size_t)n * 4);
    ASSERT_OK(attn_compute_flashinfer_kv_metadata(&ds, &st, &dbt, 16, &dip, &dix, &dl, &pages_d, NULL));
    assert_int_equal(pages, pages_d);
    expect_same(&dip, indptr, (size_t)(n + 1) * 4, "paged_kv_indptr");
    expect_same(&dix, indices, (size_t)pages * 4, "paged_kv_indices");
    expect_same(&dl, last, (size_t)n * 4, "paged_kv_last_page_len");
    dev_free(&dq);
    dev_free(&dbt);
    dev_free(&dp);
    dev_free(&dsm);
    dev_free(&ds);
    dev_free(&dip);
    dev_free(&dix);
    dev_free(&dl);
  }
}

static void test_conv1d_and_fast_prefill(void** state) {
  uint64_t seed = 3;
  int iter;
  (void)state;
  if (!gpu_present()) skip();
  for (iter = 0; iter < 50; ++iter) {
    static int32_t qsl[513], batch[8192], off[8192], idx[4096], fq[513], fq_cpu[513];
    const int64_t n = ts_rand_range(&seed, 1, 512);
    int64_t r, k, ni = 0, qs[1] = {n + 1}, bs[1] = {8192}, is[1];
    attn_conv1d_info_t info = ATTN_CONV1D_INFO_INIT, info_d = ATTN_CONV1D_INFO_INIT;
    attn_tensor_t qt = I32(qsl, qs), bt = I32(batch, bs), ot = I32(off, bs), dq, db, dof;
    qsl[0] = 0;
    for (r = 0; r < n; ++r) qsl[r + 1] = qsl[r] + (int32_t)ts_rand_range(&seed, 0, 40);
    ASSERT_OK(attn_compute_causal_conv1d_metadata(&qt, &qt, &bt, &ot, NULL, &info, NULL));
    dq = dev_of(&qt, (size_t)(n + 1) * 4);
    db = dev_of(&bt, sizeof batch);
    dof = dev_of(&ot, sizeof off);
    ASSERT_OK(attn_compute_causal_conv1d_metadata(&qt, &dq, &db, &dof, NULL, &info_d, NULL));
    assert_int_equal(info.tot, info_d.tot);
    expect_same(&db, batch, (size_t)info.num_programs * 4, "conv1d batch_ptr");
    expect_same(&dof, off, (size_t)info.num_programs * 4, "conv1d token_chunk_offset_ptr");
    /* fast prefill's query_start_loc on the same batch */
    for (k = 0; k < qsl[n] && ni < 4096; ++k)
      if (ts_rand_range(&seed, 0, 3) == 0) idx[ni++] = (int32_t)k;
    is[0] = ni;
    {
      int32_t s[512];
      int32_t q[512];
      ts_batch* b;
      attn_tensor_t it = I32(idx, is), fqt = I32(fq, qs), fqc = I32(fq_cpu, qs);
      attn_tensor_t dit, dfq, dqs, dss, dbt2, dsm2;
      attn_metadata_t* rh = NULL;
      attn_metadata_t* rd = NULL;
      for (r = 0; r < n; ++r) {
        q[r] = qsl[r + 1] - qsl[r];
        s[r] = q[r] + 3;
      }
      b = ts_batch_make(q, s, n, 16, 0, -1);
      b->common.max_query_len = b->common.max_query_len < 2 ? 2 : b->common.max_query_len;
      b->common.logits_indices_padded = &it;
      b->common.num_logits_indices = ni;
      ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, NULL, &fqt, &fqc, &rh, NULL));
      dit = dev_of(&it, (size_t)ni * 4);
      dfq = dev_of(&fqt, (size_t)(n + 1) * 4);
      dqs = dev_of(&b->qsl_t, (size_t)(n + 1) * 4);
      dss = dev_of(&b->seq_t, (size_t)n * 4);
      dbt2 = dev_of(&b->bt_t, (size_t)(n * b->width) * 4 + 4);
      dsm2 = dev_of(&b->sm_t, (size_t)b->num_tokens * 8 + 8);
      b->common.query_start_loc = &dqs;
      b->common.query_start_loc_cpu = &b->qsl_t;
      b->common.seq_lens = &dss;
      b->common.seq_lens_cpu = &b->seq_t;
      b->common.block_table_tensor = &dbt2;
      b->common.slot_mapping = &dsm2;
      b->common.logits_indices_padded = &dit;
      ASSERT_OK(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&b->common, &it, &dfq, &fqc, &rd, NULL));
      expect_same(&dfq, fq, (size_t)(n + 1) * 4, "fast prefill query_start_loc");
      assert_int_equal(ts_int(rh, "max_query_len"), ts_int(rd, "max_query_len"));
      attn_metadata_destroy(rh);
      attn_metadata_destroy(rd);
      dev_free(&dit);
      dev_free(&dfq);
      dev_free(&dqs);
      dev_free(&dss);
      dev_free(&dbt2);
      dev_free(&dsm2);
      ts_batch_free(b);
    }
    dev_free(&dq);
    dev_free(&db);
    dev_free(&dof);
  }
}

static void test_local_attention(void** state) {
  uint64_t seed = 4;
  int iter;
  (void)state;
  if (!gpu_present()) skip();
  for (iter = 0; iter < 50; ++iter) {
    enum { kMaxV = 4096 };
    static int32_t hq[kMaxV + 1], hqc[kMaxV + 1], hs[kMaxV], hsc[kMaxV], hbt[kMaxV * 8], hvr[kMaxV], hvs[kMaxV];
    int32_t q[200], s[200];
    const int64_t n = ts_rand_range(&seed, 1, 200);
    int64_t r, nv = 0, s1[1], sv[1], sbt[2];
    ts_batch* b;
    attn_tensor_t tq, tqc, ts_, tsc, tbt, tvr, tvs, dq, ds, dbt, dvr, dvs, iq, is_, ibt, ism;
    attn_local_attention_out_t out = ATTN_LOCAL_ATTENTION_OUT_INIT;
    attn_metadata_t* rh = NULL;
    attn_metadata_t* rd = NULL;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 0, 100);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 300);
    }
    b = ts_batch_make(q, s, n, 16, 0, -1);
    ASSERT_OK(attn_local_attention_num_virtual_batches(128, &b->common, &nv));
    if (nv > kMaxV) {
      ts_batch_free(b);
      continue;
    }
    s1[0] = nv + 1;
    sv[0] = nv;
    sbt[0] = nv;
    sbt[1] = 8;
    tq = I32(hq, s1); tqc = I32(hqc, s1); ts_ = I32(hs, sv); tsc = I32(hsc, sv);
    tbt = ts_host_tensor(hbt, 2, sbt, ATTN_DTYPE_INT, 32); tvr = I32(hvr, sv); tvs = I32(hvs, sv);
    out.query_start_loc = &tq; out.query_start_loc_cpu = &tqc; out.seq_lens = &ts_;
    out.seq_lens_cpu = &tsc; out.block_table = &tbt; out.virtual_req = &tvr; out.virtual_block_start = &tvs;
    ASSERT_OK(attn_make_local_attention_virtual_batches(128, &b->common, 16, &out, &rh, NULL));
    /* the device run: inputs and "device" outputs on the GPU, host outputs as before */
    iq = dev_of(&b->qsl_t, (size_t)(n + 1) * 4);
    is_ = dev_of(&b->seq_t, (size_t)n * 4);
    ibt = dev_of(&b->bt_t, (size_t)(n * b->width) * 4);
    ism = dev_of(&b->sm_t, (size_t)b->num_tokens * 8 + 8);
    b->common.query_start_loc = &iq;
    b->common.query_start_loc_cpu = &b->qsl_t;
    b->common.seq_lens = &is_;
    b->common.seq_lens_cpu = &b->seq_t;
    b->common.block_table_tensor = &ibt;
    b->common.slot_mapping = &ism;
    dq = dev_of(&tq, (size_t)(nv + 1) * 4);
    ds = dev_of(&ts_, (size_t)nv * 4);
    dbt = dev_of(&tbt, (size_t)(nv * 8) * 4);
    dvr = dev_of(&tvr, (size_t)nv * 4);
    dvs = dev_of(&tvs, (size_t)nv * 4);
    out.query_start_loc = &dq; out.seq_lens = &ds; out.block_table = &dbt;
    out.virtual_req = &dvr; out.virtual_block_start = &dvs;
    ASSERT_OK(attn_make_local_attention_virtual_batches(128, &b->common, 16, &out, &rd, NULL));
    expect_same(&dq, hq, (size_t)(nv + 1) * 4, "local query_start_loc");
    expect_same(&ds, hs, (size_t)nv * 4, "local seq_lens");
    expect_same(&dbt, hbt, (size_t)(nv * 8) * 4, "local block_table");
    expect_same(&dvr, hvr, (size_t)nv * 4, "virtual_req");
    expect_same(&dvs, hvs, (size_t)nv * 4, "virtual_block_start");
    attn_metadata_destroy(rh);
    attn_metadata_destroy(rd);
    dev_free(&iq); dev_free(&is_); dev_free(&ibt); dev_free(&ism);
    dev_free(&dq); dev_free(&ds); dev_free(&dbt); dev_free(&dvr); dev_free(&dvs);
    ts_batch_free(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dcp_and_slices),
      cmocka_unit_test(test_token_to_req_indices),
      cmocka_unit_test(test_naive_query_lens),
      cmocka_unit_test(test_slot_mapping_and_paged_kv),
      cmocka_unit_test(test_conv1d_and_fast_prefill),
      cmocka_unit_test(test_local_attention),
  };
  return cmocka_run_group_tests_name("gpu_ops", tests, NULL, NULL);
}
