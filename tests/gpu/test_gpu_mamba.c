/* Host vs CUDA for the Mamba family (MAMBA2, MAMBA1, SHORT_CONV, LINEAR_ATTN, GDN_ATTN): the
 * same seeded random batches through a CPU builder and a CUDA builder (device tensors + host
 * mirrors, and device copies of num_accepted_tokens / num_decode_draft_tokens), every field
 * compared, in the cache modes vLLM 0.33 keeps ("none", "align"), with is_prefilling (one-token
 * stateful prefills and padded prompt tails become decodes), with and without spec decode, the decode-only batches of
 * the persistent CUDA-graph buffers, build_for_cudagraph_capture and update_block_table. This
 * runs the device path of every op of src/ops/mamba_metadata.cc and src/ops/gdn_metadata.cc
 * against their host paths. Skips, saying so, when no CUDA device is visible. */
#include "gpu_support.h"

static attn_kv_cache_spec_t mspec(int32_t mode, int32_t chunk, int32_t nsb) {
  attn_kv_cache_spec_t s = ts_spec();
  s.kind = ATTN_KV_MAMBA;
  s.mamba_cache_mode = mode;
  s.mamba_chunk_size = chunk;
  s.num_speculative_blocks = nsb;
  return s;
}

typedef struct {
  int32_t accepted[64], draft[64];
  int64_t shape[1];
  attn_tensor_t accepted_h, draft_h, accepted_d, draft_d;
} extras;

/* The ABI 1.2 inputs on both sides: host tensors for the host batch, device copies (and the
 * host draft mirror) for the device batch. */
static void add_extras(extras* x, int64_t n, ts_batch* hb, tg_device_batch* db, int with_draft) {
  x->shape[0] = n;
  x->accepted_h = ts_host_tensor(x->accepted, 1, x->shape, ATTN_DTYPE_INT, 32);
  x->draft_h = ts_host_tensor(x->draft, 1, x->shape, ATTN_DTYPE_INT, 32);
  x->accepted_d = x->accepted_h;
  x->draft_d = x->draft_h;
  x->accepted_d.device.device_type = x->draft_d.device.device_type = ATTN_DEVICE_CUDA;
  x->accepted_d.data = tg_to_device(x->accepted, (size_t)n * 4);
  x->draft_d.data = tg_to_device(x->draft, (size_t)n * 4);
  hb->common.num_accepted_tokens = &x->accepted_h;
  db->common.num_accepted_tokens = &x->accepted_d;
  if (with_draft) {
    hb->common.num_decode_draft_tokens_cpu = &x->draft_h;
    db->common.num_decode_draft_tokens_cpu = &x->draft_h;
    db->common.num_decode_draft_tokens = &x->draft_d;
  }
}

static void free_extras(extras* x) {
  cudaFree(x->accepted_d.data);
  cudaFree(x->draft_d.data);
}

/* mode 0: build, 1: capture, 2: build then update_block_table with a shuffled table. */
static void compare(const char* backend, const attn_kv_cache_spec_t* spec,
                    const attn_builder_config_t* config, ts_batch* b, extras* x, int with_draft,
                    int mode) {
  attn_builder_config_t dc = *config;
  attn_builder_t *hb, *db;
  attn_metadata_t *hm = NULL, *dm = NULL;
  tg_device_batch d;
  char what[96];
  dc.device.device_type = ATTN_DEVICE_CUDA;
  hb = ts_builder(backend, spec, config);
  db = ts_builder(backend, spec, &dc);
  tg_device_batch_make(b, &d);
  d.common.is_prefilling = b->common.is_prefilling; /* host memory on both sides */
  if (x != NULL) add_extras(x, b->num_reqs, b, &d, with_draft);
  snprintf(what, sizeof what, "%s mode %d cache mode %d", backend, mode, spec->mamba_cache_mode);
  if (mode == 1) {
    ASSERT_OK(attn_build_for_cudagraph_capture(hb, &b->common, &hm, NULL));
    ASSERT_OK(attn_build_for_cudagraph_capture(db, &d.common, &dm, NULL));
  } else {
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
  }
  tg_expect_same_metadata(hm, dm, what);
  if (mode == 2) {
    const size_t bytes = (size_t)(b->num_reqs * b->width) * 4;
    int32_t* table = (int32_t*)malloc(bytes + 4);
    attn_tensor_t ht = b->bt_t, dt = d.bt;
    attn_metadata_t *hu = NULL, *du = NULL;
    int64_t i;
    for (i = 0; i < b->num_reqs * b->width; ++i) table[i] = b->bt[i] * 3 + 1;
    ht.data = table;
    dt.data = tg_to_device(table, bytes);
    ASSERT_OK(attn_update_block_table(hb, hm, &ht, &b->sm_t, &hu, NULL));
    ASSERT_OK(attn_update_block_table(db, dm, &dt, &d.sm, &du, NULL));
    tg_expect_same_metadata(hu, du, what);
    cudaFree(dt.data);
    free(table);
  }
  if (x != NULL) free_extras(x);
  tg_device_batch_free(&d);
  attn_builder_destroy(hb);
  attn_builder_destroy(db);
}

/* is_prefilling for the base family (host bytes, 0.33 requires it): random. */
typedef struct {
  uint8_t v[64];
  int64_t shape[1];
  attn_tensor_t t;
} flags8;
static void add_prefilling(flags8* f, ts_batch* b, uint64_t* seed) {
  int64_t r;
  for (r = 0; r < b->num_reqs; ++r) f->v[r] = (uint8_t)ts_rand_range(seed, 0, 1);
  f->shape[0] = b->num_reqs;
  f->t = ts_host_tensor(f->v, 1, f->shape, ATTN_DTYPE_BOOL, 8);
  b->common.is_prefilling = &f->t;
}

static void test_base_family(void** state) {
  static const char* const names[] = {"MAMBA2", "MAMBA1", "SHORT_CONV", "LINEAR_ATTN"};
  static const int32_t chunks[] = {4, 8, 16, 64};
  uint64_t seed = 31;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA Mamba builds")) skip();
  for (iter = 0; iter < 160; ++iter) {
    const char* name = names[iter % 4];
    const int32_t mode = ts_rand_range(&seed, 0, 1) ? ATTN_MAMBA_CACHE_MODE_ALIGN : ATTN_MAMBA_CACHE_MODE_NONE;
    const int32_t nsb = (int32_t)ts_rand_range(&seed, 0, 2);
    const int32_t spec_tokens = (int32_t)ts_rand_range(&seed, 0, 1) * nsb;
    attn_kv_cache_spec_t spec = mspec(mode, chunks[ts_rand_range(&seed, 0, 3)], nsb);
    attn_builder_config_t c = ts_config();
    const int64_t n = ts_rand_range(&seed, 1, 40), nd = ts_rand_range(&seed, 0, n);
    /* vLLM 0.33's ReplaySSM (Triton or FlashInfer) and MAMBA2's prefill checkpoints ("align") */
    const int replay = (int)ts_rand_range(&seed, 0, 2);
    int32_t decode_base[40];
    int64_t base_shape[1] = {n};
    attn_tensor_t base_t = ts_host_tensor(decode_base, 1, base_shape, ATTN_DTYPE_INT, 32);
    c.use_replayssm = replay > 0;
    c.mamba_backend_flashinfer = replay == 2;
    c.replayssm_buffer_len = 8;
    c.model_dtype = ATTN_KV_DTYPE_BFLOAT16;
    spec.mamba_replayssm_ngroups = 2;
    spec.mamba_num_heads = 8;
    if (ts_rand_range(&seed, 0, 1)) {
      c.hash_block_size = c.cache_hit_alignment_tokens = 16;
      spec.num_prefill_checkpoint_blocks = 1;
      spec.prefill_checkpoint_alignment = 8;
    }
    const int decode_only = ts_rand_range(&seed, 0, 3) == 0;
    int32_t q[40], s[40];
    int64_t r, max_seq = 1;
    ts_batch* b;
    extras x;
    flags8 f;
    c.num_speculative_tokens = spec_tokens;
    c.cudagraph_mode = iter % 3 == 0 ? ATTN_CUDAGRAPH_MODE_NONE : ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
    for (r = 0; r < n; ++r) {
      q[r] = r < nd || decode_only ? (int32_t)ts_rand_range(&seed, 1, 1 + spec_tokens)
                                   : (int32_t)ts_rand_range(&seed, 2 + spec_tokens, 150);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 900);
      if (s[r] > max_seq) max_seq = s[r];
      x.accepted[r] = (int32_t)ts_rand_range(&seed, 1, 1 + spec_tokens);
      x.draft[r] = ts_rand_range(&seed, 0, 1) ? q[r] - 1 : -1; /* padded prompt tails */
      decode_base[r] = (int32_t)ts_rand_range(&seed, 0, s[r] - q[r]);
    }
    b = ts_batch_make(q, s, n, 16, (max_seq + 15) / 16 + nsb, -1);
    add_prefilling(&f, b, &seed);
    b->common.replayssm_decode_base_cpu = &base_t; /* host memory on both sides */
    /* update_block_table where supported (no spec decode; not LINEAR_ATTN) */
    compare(name, &spec, &c, b, ts_rand_range(&seed, 0, 1) ? &x : NULL, (int)ts_rand_range(&seed, 0, 1),
            spec_tokens == 0 && iter % 4 != 3 && ts_rand_range(&seed, 0, 1) ? 2 : 0);
    ts_batch_free(b);
  }
}

static void test_capture(void** state) {
  static const char* const names[] = {"MAMBA2", "MAMBA1", "SHORT_CONV", "GDN_ATTN"};
  int k, spec_tokens;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA Mamba capture builds")) skip();
  for (spec_tokens = 0; spec_tokens <= 2; ++spec_tokens)
    for (k = 0; k < 4; ++k) {
      attn_kv_cache_spec_t spec = mspec(k == 0 ? ATTN_MAMBA_CACHE_MODE_ALIGN : ATTN_MAMBA_CACHE_MODE_NONE,
                                        8, spec_tokens);
      attn_builder_config_t c = ts_config();
      int32_t q[24], s[24];
      int r;
      ts_batch* b;
      flags8 f;
      uint64_t seed = 7;
      c.num_speculative_tokens = spec_tokens;
      for (r = 0; r < 24; ++r) q[r] = 1 + spec_tokens, s[r] = 40 + 17 * r;
      b = ts_batch_make(q, s, 24, 16, (40 + 17 * 23 + 15) / 16 + spec_tokens, -1);
      if (k < 3) add_prefilling(&f, b, &seed);
      compare(names[k], &spec, &c, b, NULL, 0, 1);
      ts_batch_free(b);
    }
}

static void test_gdn(void** state) {
  uint64_t seed = 5;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA GDN_ATTN builds")) skip();
  for (iter = 0; iter < 200; ++iter) {
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 3);
    const int32_t mode = ts_rand_range(&seed, 0, 1) ? ATTN_MAMBA_CACHE_MODE_ALIGN : ATTN_MAMBA_CACHE_MODE_NONE;
    const attn_kv_cache_spec_t spec = mspec(mode, 0, k);
    attn_builder_config_t c = ts_config();
    const int64_t n = ts_rand_range(&seed, 1, 48), pad = ts_rand_range(&seed, 0, 3);
    const int shape = (int)ts_rand_range(&seed, 0, 2); /* 0 mixed, 1 spec only, 2 decodes only */
    int32_t q[64], s[64];
    int64_t r, max_seq = 1;
    ts_batch* b;
    extras x;
    c.num_speculative_tokens = k;
    c.cudagraph_mode = iter % 3 == 0 ? ATTN_CUDAGRAPH_MODE_NONE : ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
    for (r = 0; r < n + pad; ++r) {
      const int is_spec = r < n && k > 0 && (shape == 1 || (shape == 0 && ts_rand_range(&seed, 0, 1)));
      x.draft[r] = is_spec ? (int32_t)ts_rand_range(&seed, 0, k) : -1;
      q[r] = r >= n        ? 0
             : is_spec     ? x.draft[r] + 1
             : shape == 2  ? 1
                           : (int32_t)(ts_rand_range(&seed, 0, 1) ? 1 : ts_rand_range(&seed, 2, 150));
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 500);
      x.accepted[r] = (int32_t)ts_rand_range(&seed, 1, k + 1);
      if (s[r] > max_seq) max_seq = s[r];
    }
    b = ts_batch_make(q, s, n + pad, 16, (max_seq + 15) / 16 + k, -1);
    compare("GDN_ATTN", &spec, &c, b, &x, 1, 0);
    ts_batch_free(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_base_family),
      cmocka_unit_test(test_capture),
      cmocka_unit_test(test_gdn),
  };
  return cmocka_run_group_tests_name("gpu_mamba", tests, NULL, NULL);
}
