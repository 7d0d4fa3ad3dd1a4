/* Host vs CUDA for every backend and wrapper that builds on a GPU: the same seeded random batches
 * through a CPU builder and a CUDA builder (device tensors + host mirrors), every field compared
 * (scalars by value, tensors by shape and content, device tensors copied back), and the
 * capture and drafting builds that run their own kernels (TRITON_ATTN's seq_lens fill,
 * TREE_ATTN's sub-bias). Skips, saying so, when no CUDA device is visible. */
#include "test_support.h"

#include "gpu_support.h"

/* One backend (or wrapper) built from the same batch on both sides. Both sides get host
 * mirrors of query_start_loc and seq_lens in memory of their own, as a runtime passes them (the
 * *_cpu fields some backends return are then tensors on both sides), and the tokens' positions
 * (DEEPSEEK_V41_COMPRESSOR maps every token by its position; 0 for padding tokens). */
static void compare(const char* backend, const attn_kv_cache_spec_t* spec,
                    const attn_builder_config_t* config, ts_batch* b, int mode) {
  attn_builder_config_t dc = *config;
  attn_builder_t* hb = ts_builder(backend, spec, config);
  attn_builder_t* db;
  attn_metadata_t *hm = NULL, *dm = NULL;
  tg_device_batch d;
  tg_mirrors mirrors;
  int64_t* pos = (int64_t*)calloc((size_t)b->num_tokens + 1, sizeof(int64_t));
  int64_t pos_shape[1] = {b->num_tokens};
  attn_tensor_t ph, pd;
  assert_non_null(pos);
  ts_batch_positions(b, pos);
  ph = ts_host_tensor(pos, 1, pos_shape, ATTN_DTYPE_INT, 64);
  pd = ph;
  pd.device.device_type = ATTN_DEVICE_CUDA;
  pd.data = tg_to_device(pos, (size_t)b->num_tokens * 8);
  dc.device.device_type = ATTN_DEVICE_CUDA;
  db = ts_builder(backend, spec, &dc);
  tg_device_batch_make(b, &d);
  tg_mirrors_make(b, &mirrors);
  tg_add_mirrors(b, &mirrors);
  b->common.positions = &ph;
  d.common.positions = &pd;
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
  tg_expect_same_metadata(hm, dm, backend);
  b->common.query_start_loc_cpu = NULL;
  b->common.seq_lens_cpu = NULL;
  b->common.positions = NULL;
  cudaFree(pd.data);
  free(pos);
  tg_mirrors_free(&mirrors);
  tg_device_batch_free(&d);
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
  const char* full[32]; /* the built-in backends that build for a full-attention spec on CUDA */
  size_t k, num_full;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA backend builds")) skip();
  {
    const attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = ts_config();
    c.num_gpu_blocks = 48 * 64 + 1;
    c.max_model_len = 768;
    c.speculative_token_tree = "[(0,), (1,), (0, 0), (0, 1), (1, 0)]";
    c.device.device_type = ATTN_DEVICE_CUDA;
    num_full = ts_backends_building(ATTN_BACKEND_BUILTIN, &spec, &c, full, 32);
    assert_true(num_full >= 1 && num_full <= 32);
  }
  for (iter = 0; iter < 60; ++iter) {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = ts_config();
    const int64_t n = ts_rand_range(&seed, 1, 64);
    ts_batch* b = random_batch(&seed, n, 1, 40);
    c.num_gpu_blocks = 48 * 64 + 1;
    c.max_model_len = 768;
    c.speculative_token_tree = "[(0,), (1,), (0, 0), (0, 1), (1, 0)]";
    for (k = 0; k < num_full; ++k) compare(full[k], &spec, &c, b, 0);
    compare("TREE_ATTN", &spec, &c, b, 1);
    {  /* ROCM_AITER_FA with a sliding-window layer: ops::swa_decode_tables on the device */
      attn_per_layer_params_t layer = ATTN_PER_LAYER_PARAMS_INIT;
      layer.window_left = 63;
      c.layers = &layer;
      c.num_layers = 1;
      compare("ROCM_AITER_FA", &spec, &c, b, 0);
      compare("ROCM_AITER_FA", &spec, &c, b, 1);
      c.layers = NULL;
      c.num_layers = 0;
    }
    c.device_capability = 100; /* FLASHINFER's TRT-LLM fields */
    compare("FLASHINFER", &spec, &c, b, 0);
    c.device_capability = 90;
    spec.kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION;
    spec.attention_chunk_size = 64;
    compare("FLASH_ATTN", &spec, &c, b, 0);
    compare("TRITON_ATTN", &spec, &c, b, 0);
    /* StaticSink (ABI 1.7 sink_len): the sink-prefixed table and the shifted seq_lens */
    spec = ts_spec();
    spec.sink_len = 32;
    compare("FLASH_ATTN", &spec, &c, b, 0);
    compare("TRITON_ATTN", &spec, &c, b, 0);
    /* INKLING_SCONV_SWA on its sliding-window spec: seq_idx and query_start on the device */
    spec = ts_spec();
    spec.kind = ATTN_KV_SLIDING_WINDOW;
    spec.sliding_window = 16;
    compare("INKLING_SCONV_SWA", &spec, &c, b, 0);
    /* DOTS3_NOTE_TRITON_MLA: the sliding-window chunks on the device (mixed batches: from the
     * exact seq_lens), several a batch in a 1024-row workspace */
    spec = ts_mla_spec(16);
    spec.head_size = 1088;
    spec.sliding_window = 200;
    c.mla_kv_lora_rank = 1024;
    c.mla_qk_nope_head_dim = 192;
    c.mla_chunked_prefill_workspace_size = 1024;
    compare("DOTS3_NOTE_TRITON_MLA", &spec, &c, b, 0);
    ts_batch_free(b);
    { /* prefills only: from the bounds, uploaded */
      int32_t q[64], s[64];
      int64_t r;
      for (r = 0; r < n; ++r) {
        q[r] = (int32_t)ts_rand_range(&seed, 2, 40);
        s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 700);
      }
      b = ts_batch_make(q, s, n, 16, 48, -1);
      compare("DOTS3_NOTE_TRITON_MLA", &spec, &c, b, 0);
    }
    ts_batch_free(b);
  }
}

/* INKLING_SCONV_SWA with empty queries and the runner's padding rows (slot mapping longer than
 * query_start_loc[-1] and num_actual_tokens): the device rows past the mapped tokens are 0. */
static void test_inkling_padding(void** state) {
  static const int32_t q[5] = {3, 0, 1, 0, 6}, s[5] = {40, 9, 1, 300, 6};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  ts_batch* b;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA backend builds")) skip();
  spec.kind = ATTN_KV_SLIDING_WINDOW;
  spec.sliding_window = 16;
  c.num_gpu_blocks = 64;
  b = ts_batch_make(q, s, 5, 16, 20, 17);
  b->common.num_actual_tokens = 12;
  compare("INKLING_SCONV_SWA", &spec, &c, b, 0);
  compare("INKLING_SCONV_SWA", &spec, &c, b, 1);
  ts_batch_free(b);
}

/* MINIMAX_M3_SPARSE at its kernel block 128, with and without the AITER sparse PA path
 * (config->rocm_aiter_shuffle_kv_cache): the context lengths, the prefill arrays, the prefill
 * tokens' requests and positions and the page-16 slots on the device; seeded mixed batches
 * (uniform decodes first, empty prefill queries) and a batch with padding rows; the capture build
 * of a uniform decode batch. */
static void test_minimax_m3(void** state) {
  uint64_t seed = 33;
  int iter, aiter;
  attn_kv_cache_spec_t spec = ts_spec();
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA backend builds")) skip();
  spec.block_size = 128;
  for (aiter = 0; aiter < 2; ++aiter) {
    attn_builder_config_t c = ts_config();
    c.rocm_aiter_shuffle_kv_cache = aiter;
    for (iter = 0; iter < 20; ++iter) {
      const int64_t n = ts_rand_range(&seed, 1, 32), nd = ts_rand_range(&seed, 0, n);
      int32_t q[32], s[32];
      int64_t r;
      ts_batch* b;
      for (r = 0; r < n; ++r) {
        q[r] = r < nd ? 1 : (int32_t)ts_rand_range(&seed, r == nd ? 2 : 0, 300);
        s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 900);
      }
      b = ts_batch_make(q, s, n, 128, 0, -1);
      compare("MINIMAX_M3_SPARSE", &spec, &c, b, 0);
      ts_batch_free(b);
    }
    {
      static const int32_t q[4] = {1, 1, 40, 7}, s[4] = {200, 5, 40, 700};
      static const int32_t uq[3] = {1, 1, 1}, us[3] = {9, 129, 1000};
      ts_batch* b = ts_batch_make(q, s, 4, 128, 0, 60); /* 11 padding rows */
      b->common.num_actual_tokens = 49;
      compare("MINIMAX_M3_SPARSE", &spec, &c, b, 0);
      ts_batch_free(b);
      b = ts_batch_make(uq, us, 3, 128, 0, -1);
      compare("MINIMAX_M3_SPARSE", &spec, &c, b, 2);
      ts_batch_free(b);
    }
  }
}

/* MINIMAX_M3_SPARSE_INDEXER and MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM on their MLA-kind key cache
 * at block 128 (4 index heads): the context lengths and the prefills' cu_seqlens_q on the
 * device, and the MSA builder's prefill rows (minimax_m3_msa_prefill_rows, from the positions);
 * seeded mixed batches (uniform decodes first, empty prefill queries, spec decoding with k = 2),
 * and the capture build of a uniform decode batch. */
static void test_minimax_m3_indexer(void** state) {
  static const char* const names[2] = {"MINIMAX_M3_SPARSE_INDEXER",
                                       "MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM"};
  uint64_t seed = 34;
  int iter, k;
  attn_kv_cache_spec_t spec = ts_mla_spec(128);
  attn_builder_config_t c = ts_config();
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA backend builds")) skip();
  spec.head_size = 128;
  c.sparse_num_index_heads = 4;
  for (iter = 0; iter < 30; ++iter) {
    const int64_t n = ts_rand_range(&seed, 1, 32), nd = ts_rand_range(&seed, 0, n);
    const int32_t dq = iter % 2 == 0 ? 1 : 3;
    int32_t q[32], s[32];
    int64_t r;
    ts_batch* b;
    c.num_speculative_tokens = dq - 1;
    for (r = 0; r < n; ++r) {
      q[r] = r < nd ? dq : (int32_t)ts_rand_range(&seed, r == nd ? dq + 1 : 0, 300);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 900);
    }
    b = ts_batch_make(q, s, n, 128, 0, -1);
    for (k = 0; k < 2; ++k) compare(names[k], &spec, &c, b, 0);
    ts_batch_free(b);
  }
  {
    static const int32_t uq[3] = {1, 1, 1}, us[3] = {9, 129, 1000};
    ts_batch* b = ts_batch_make(uq, us, 3, 128, 0, -1);
    c.num_speculative_tokens = 0;
    for (k = 0; k < 2; ++k) compare(names[k], &spec, &c, b, 2);
    ts_batch_free(b);
  }
}

/* QWEN4_EXP_EXP_QSA_STATE's three caches (ops::qsa_token_metadata, and for the compressed one
 * ops::qsa_work_metadata's scan and search on the device): the ring (a CIRCULAR_BUFFER spec of
 * capacity 4 or 8 over a one-column table, some blocks null or negative), the compressed cache
 * (MLA, tokens_per_state 2 or 4 at block 16, some blocks and batch slots -1) and the plain one
 * (tokens_per_state 1); seeded mixed batches with empty queries and padding rows counted as
 * actual tokens, spec decoding with k = 0..2, and the capture build of a uniform batch. */
static void test_qsa_state(void** state) {
  uint64_t seed = 47;
  int iter;
  attn_builder_config_t c = ts_config();
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA backend builds")) skip();
  for (iter = 0; iter < 36; ++iter) {
    const int cache = iter % 3; /* 0 ring, 1 compressed, 2 plain */
    const int64_t n = ts_rand_range(&seed, 1, 40), pad = ts_rand_range(&seed, 0, 6);
    attn_kv_cache_spec_t spec = ts_mla_spec(16);
    int32_t q[40], s[40];
    int64_t r, tokens = 0;
    ts_batch* b;
    c.num_speculative_tokens = iter % 3;
    spec.head_size = 128;
    if (cache == 0) {
      spec.kind = ATTN_KV_CIRCULAR_BUFFER;
      spec.block_size = iter % 2 ? 4 : 8;
    } else {
      spec.tokens_per_state = cache == 2 ? 1 : (iter % 2 ? 2 : 4);
    }
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 0, r % 3 ? 3 : 60);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 700);
      tokens += q[r];
    }
    /* the ring's table: one column (a block size past every seq_len), ids from 1 */
    b = ts_batch_make(q, s, n, cache == 0 ? 1024 : 16, 0, tokens + pad);
    for (r = 0; r < n * b->width; ++r)
      if (ts_rand_range(&seed, 0, 7) == 0) b->bt[r] = (int32_t)ts_rand_range(&seed, -1, 0);
    for (r = 0; r < tokens; ++r)
      if (ts_rand_range(&seed, 0, 9) == 0) b->slots[r] = -1;
    compare("QWEN4_EXP_EXP_QSA_STATE", &spec, &c, b, 0);
    ts_batch_free(b);
  }
  {
    static const int32_t uq[3] = {1, 1, 1}, us[3] = {9, 129, 700};
    attn_kv_cache_spec_t spec = ts_mla_spec(16);
    ts_batch* b = ts_batch_make(uq, us, 3, 16, 0, -1);
    spec.head_size = 128;
    spec.tokens_per_state = 4;
    c.num_speculative_tokens = 0;
    compare("QWEN4_EXP_EXP_QSA_STATE", &spec, &c, b, 2);
    ts_batch_free(b);
  }
}

static void test_capture(void** state) {
  static const int32_t q[4] = {1, 1, 1, 1}, s[4] = {100, 7, 64, 300};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  ts_batch* b;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA backend builds")) skip();
  c.num_gpu_blocks = 64;
  b = ts_batch_make(q, s, 4, 16, 20, -1);
  compare("TRITON_ATTN", &spec, &c, b, 2); /* both sides write 1 into their seq_lens */
  compare("ROCM_AITER_UNIFIED_ATTN", &spec, &c, b, 2); /* seq_lens 1, query_start_loc kept */
  ts_batch_free(b);
  b = ts_batch_make(q, s, 4, 16, 22, -1);    /* StaticSink copies cdiv(300 + 32, 16) columns */
  spec.sink_len = 32;                        /* and under StaticSink, into the sink seq_lens */
  compare("TRITON_ATTN", &spec, &c, b, 2);
  ts_batch_free(b);
  {  /* StaticSink broadcasts a one-column table (torch's expand): a column stride of 0 */
    static const int32_t q1[3] = {1, 3, 2}, s1[3] = {12, 16, 2};
    b = ts_batch_make(q1, s1, 3, 16, 1, -1);
    compare("FLASH_ATTN", &spec, &c, b, 0);
  }
  spec.sink_len = 0;
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
  if (!tg_have_gpu("the host-vs-CUDA backend builds")) skip();
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
    tg_device_batch d;
    attn_tensor_t d_logits, d_enc;
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
    tg_device_batch_make(b, &d);
    d_logits = lt;
    d_logits.data = tg_to_device(logits, (size_t)n * 4);
    d_logits.device.device_type = ATTN_DEVICE_CUDA;
    d.common.logits_indices_padded = &d_logits;
    d.common.logits_indices_padded_cpu = &lt;
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
    {
      /* logits_indices_padded is each side's own input: compare the rest */
      assert_int_equal(ts_int(hm, "num_actual_tokens"), ts_int(dm, "num_actual_tokens"));
      assert_int_equal(ts_int(hm, "max_query_len"), ts_int(dm, "max_query_len"));
    }
    cudaFree(d_logits.data);
    tg_device_batch_free(&d);
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
    tg_device_batch_make(b, &d);
    cudaFree(d.bt.data); /* the cross table replaces the copy of the decoder's */
    d.bt = bt;
    d.bt.data = tg_to_device(cross_bt, sizeof cross_bt[0] * (size_t)(n * 8));
    d.bt.device.device_type = ATTN_DEVICE_CUDA;
    d_enc = et;
    d_enc.data = tg_to_device(enc, (size_t)n * 4);
    d_enc.device.device_type = ATTN_DEVICE_CUDA;
    d.common.block_table_tensor = &d.bt;
    d.common.encoder_seq_lens = &d_enc;
    d.common.encoder_seq_lens_cpu = &et;
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
    {
      size_t hbytes = 0, dbytes = 0;
      unsigned char* hs = tg_contents(ts_tensor(hm, "slot_mapping"), &hbytes);
      unsigned char* ds = tg_contents(ts_tensor(dm, "slot_mapping"), &dbytes);
      assert_int_equal(hbytes, dbytes);
      assert_int_equal(memcmp(hs, ds, hbytes), 0);
      free(hs);
      free(ds);
    }
    cudaFree(d_enc.data);
    tg_device_batch_free(&d);
    attn_builder_destroy(hb);
    attn_builder_destroy(db);
    ts_batch_free(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backends),
      cmocka_unit_test(test_capture),
      cmocka_unit_test(test_inkling_padding),
      cmocka_unit_test(test_minimax_m3),
      cmocka_unit_test(test_minimax_m3_indexer),
      cmocka_unit_test(test_qsa_state),
      cmocka_unit_test(test_fast_prefill_and_cross),
  };
  return cmocka_run_group_tests_name("gpu_backends", tests, NULL, NULL);
}
