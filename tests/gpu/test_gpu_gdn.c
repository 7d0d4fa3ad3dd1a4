/* Host vs CUDA for what vLLM 0.33 added to GDN_ATTN: the same seeded random batches (decodes,
 * one-token and longer first chunks with is_prefilling, extends, spec decodes marked in
 * num_decode_draft_tokens_cpu, zero-length padding) through a CPU builder and a CUDA builder,
 * every field compared: the prefill part (kernels: mamba_prefill_metadata's rebased
 * query_start_loc) and FLA's chunk_indices / chunk_offsets (gdn_chunk_metadata) on compute
 * capability 8.0, none on 9.0; the int64 token indices of gdn_spec_split. update_block_table
 * (model runner V2 on CUDA; gdn_masked_state_gather for spec batches with prefills) against a
 * host build on the new table. KIMI_K3_KDA_ROCM's (the same batches, adaptive verification, a
 * context-only row before prefills: chunk_indices by row; checkpoints over the prefill rows),
 * KIMI_K3_KDA's and PLE_SHORT_CONV_ATTN's builds host vs CUDA likewise (test_kimi_k3_kda_rocm,
 * test_kda, test_ple_short_conv). Skips,
 * saying so, when no CUDA device is visible. */
#include "gpu_support.h"

typedef struct {
  int32_t accepted[64], draft[64];
  uint8_t prefilling[64];
  int64_t shape[1];
  attn_tensor_t accepted_h, draft_h, accepted_d, draft_d, prefilling_h;
} extras;

static void add_extras(extras* x, int64_t n, ts_batch* hb, tg_device_batch* db, int spec) {
  x->shape[0] = n;
  x->prefilling_h = ts_host_tensor(x->prefilling, 1, x->shape, ATTN_DTYPE_BOOL, 8);
  hb->common.is_prefilling = db->common.is_prefilling = &x->prefilling_h;
  x->accepted_d.data = x->draft_d.data = NULL;
  if (!spec) return;
  x->accepted_h = ts_host_tensor(x->accepted, 1, x->shape, ATTN_DTYPE_INT, 32);
  x->draft_h = ts_host_tensor(x->draft, 1, x->shape, ATTN_DTYPE_INT, 32);
  x->accepted_d = x->accepted_h;
  x->draft_d = x->draft_h;
  x->accepted_d.device.device_type = x->draft_d.device.device_type = ATTN_DEVICE_CUDA;
  x->accepted_d.data = tg_to_device(x->accepted, (size_t)n * 4);
  x->draft_d.data = tg_to_device(x->draft, (size_t)n * 4);
  hb->common.num_accepted_tokens = &x->accepted_h;
  db->common.num_accepted_tokens = &x->accepted_d;
  hb->common.num_decode_draft_tokens_cpu = db->common.num_decode_draft_tokens_cpu = &x->draft_h;
  db->common.num_decode_draft_tokens = &x->draft_d;
}

/* The backend compare() builds: GDN_ATTN, or KIMI_K3_KDA_ROCM (its ROCm subclass). */
static const char* g_backend = "GDN_ATTN";

static void compare(const attn_kv_cache_spec_t* spec, const attn_builder_config_t* config,
                    ts_batch* b, extras* x, int spec_inputs, int update) {
  attn_builder_config_t dc = *config;
  attn_builder_t *hb, *db;
  attn_metadata_t *hm = NULL, *dm = NULL;
  tg_device_batch d;
  char what[96];
  dc.device.device_type = ATTN_DEVICE_CUDA;
  dc.use_v2_model_runner = 1;
  hb = ts_builder(g_backend, spec, config);
  db = ts_builder(g_backend, spec, &dc);
  tg_device_batch_make(b, &d);
  add_extras(x, b->num_reqs, b, &d, spec_inputs);
  snprintf(what, sizeof what, "%s capability %d spec %d", g_backend, config->device_capability,
           spec_inputs);
  ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
  ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
  tg_expect_same_metadata(hm, dm, what);
  if (update) {
    const size_t bytes = (size_t)(b->num_reqs * b->width) * 4;
    int32_t* table = (int32_t*)malloc(bytes + 4);
    attn_tensor_t dt = d.bt;
    attn_metadata_t *hu = NULL, *du = NULL;
    int32_t* original = b->bt;
    int32_t supported = 0;
    int64_t i;
    ASSERT_OK(attn_builder_supports_update_block_table(db, &supported));
    assert_int_equal(supported, 1);
    for (i = 0; i < b->num_reqs * b->width; ++i) table[i] = b->bt[i] * 3 + 1;
    dt.data = tg_to_device(table, bytes);
    ASSERT_OK(attn_update_block_table(db, dm, &dt, &d.sm, &du, NULL));
    /* the host build on the new table: the same metadata, re-gathered state indices */
    b->bt_t.data = table;
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hu, NULL));
    b->bt_t.data = original;
    tg_expect_same_metadata(hu, du, "GDN_ATTN update_block_table");
    cudaFree(dt.data);
    free(table);
  }
  cudaFree(x->accepted_d.data);
  cudaFree(x->draft_d.data);
  tg_device_batch_free(&d);
  attn_builder_destroy(hb);
  attn_builder_destroy(db);
}

/* The random batches of test_gdn_0_33 through g_backend; `rocm`: KIMI_K3_KDA_ROCM's (no
 * update_block_table; adaptive verification in every other builder with k > 0; a zero-length
 * row before a prefill in one batch of three, where its chunk_indices differ from FLA's). */
static void gdn_random_batches(int rocm) {
  uint64_t seed = 33;
  int iter;
  for (iter = 0; iter < 240; ++iter) {
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 3);
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = ts_config();
    const int64_t n = ts_rand_range(&seed, 1, 48), pad = ts_rand_range(&seed, 0, 3);
    const int spec_inputs = k > 0 && ts_rand_range(&seed, 0, 1);
    int32_t q[64], s[64];
    int64_t r, max_seq = 1;
    ts_batch* b;
    extras x;
    spec.kind = ATTN_KV_MAMBA;
    spec.num_speculative_blocks = k;
    c.num_speculative_tokens = k;
    c.device_capability = iter % 2 ? 80 : 90;
    c.cudagraph_mode =
        iter % 3 == 0 ? ATTN_CUDAGRAPH_MODE_NONE : ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
    for (r = 0; r < n + pad; ++r) {
      /* 0 decode, 1 spec decode, 2 extend, 3 first chunk (1..150 tokens), 4 padding */
      const int64_t kind = r >= n ? 4 : ts_rand_range(&seed, 0, 3);
      q[r] = kind == 4 ? 0
             : kind == 0 ? 1
             : kind == 1 ? 1 + (int32_t)ts_rand_range(&seed, 0, k)
                         : (int32_t)ts_rand_range(&seed, 1, 150);
      s[r] = q[r] + (kind == 3 || kind == 4 ? 0 : (int32_t)ts_rand_range(&seed, 1, 500));
      x.prefilling[r] = (uint8_t)(kind == 2 || kind == 3);
      x.draft[r] = kind == 1 && k > 0 ? q[r] - 1 : -1;
      x.accepted[r] = (int32_t)ts_rand_range(&seed, 1, k + 1);
      if (s[r] > max_seq) max_seq = s[r];
    }
    if (rocm) {
      c.enable_adaptive_verification = iter % 2;
      if (iter % 3 == 0 && n > 1) { /* a context-only row, not a spec decode */
        const int64_t j = ts_rand_range(&seed, 0, n - 2);
        q[j] = 0;
        x.draft[j] = -1;
      }
    }
    b = ts_batch_make(q, s, n + pad, 16, (max_seq + 15) / 16 + k, -1);
    compare(&spec, &c, b, &x, spec_inputs, !rocm && iter % 4 != 0);
    ts_batch_free(b);
  }
}

static void test_gdn_0_33(void** state) {
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA GDN_ATTN 0.33 builds")) skip();
  g_backend = "GDN_ATTN";
  gdn_random_batches(0);
}

static void test_kimi_k3_kda_rocm(void** state) {
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA KIMI_K3_KDA_ROCM builds")) skip();
  g_backend = "KIMI_K3_KDA_ROCM";
  gdn_random_batches(1);
  g_backend = "GDN_ATTN";
}

/* vLLM 0.33's prefill checkpoints ("align" mode, one checkpoint block, hash and cache-hit
 * alignment 16, checkpoint alignment 8 or 64): the offsets, rows and columns uploaded, the state
 * indices gathered on the device (mamba_checkpoint_state_indices), and on capability 9.0 with
 * alignment 64 FlashInfer's checkpoint plan; prefills start on 16-token boundaries so that many
 * rows have a checkpoint. */
static void test_gdn_checkpoints(void** state) {
  uint64_t seed = 1733;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA GDN_ATTN prefill checkpoints")) skip();
  for (iter = 0; iter < 120; ++iter) {
    /* every third builder KIMI_K3_KDA_ROCM's (checkpoints over the prefill rows) */
    g_backend = iter % 3 == 2 ? "KIMI_K3_KDA_ROCM" : "GDN_ATTN";
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 2);
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = ts_config();
    const int64_t n = ts_rand_range(&seed, 1, 32);
    const int spec_inputs = k > 0 && ts_rand_range(&seed, 0, 1);
    int32_t q[64], s[64];
    int64_t r, max_seq = 1;
    ts_batch* b;
    extras x;
    spec.kind = ATTN_KV_MAMBA;
    spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_ALIGN;
    spec.num_speculative_blocks = k;
    spec.num_prefill_checkpoint_blocks = 1;
    spec.prefill_checkpoint_alignment = ts_rand_range(&seed, 0, 1) ? 64 : 8;
    c.num_speculative_tokens = k;
    c.hash_block_size = 16;
    c.cache_hit_alignment_tokens = 16;
    c.device_capability = iter % 2 ? 80 : 90;
    for (r = 0; r < n; ++r) {
      /* 0 decode, 1 spec decode, 2 extend from a hash boundary, 3 first chunk */
      const int64_t kind = ts_rand_range(&seed, 0, 3);
      q[r] = kind == 0 ? 1
             : kind == 1 ? 1 + (int32_t)ts_rand_range(&seed, 0, k)
                         : (int32_t)ts_rand_range(&seed, 1, 300);
      s[r] = q[r] + (kind == 3 ? 0
                     : kind == 2 ? 16 * (int32_t)ts_rand_range(&seed, 1, 20)
                                 : (int32_t)ts_rand_range(&seed, 1, 500));
      x.prefilling[r] = (uint8_t)(kind == 2 || kind == 3);
      x.draft[r] = kind == 1 && k > 0 ? q[r] - 1 : -1;
      x.accepted[r] = (int32_t)ts_rand_range(&seed, 1, k + 1);
      if (s[r] > max_seq) max_seq = s[r];
    }
    b = ts_batch_make(q, s, n, 16, (max_seq + 15) / 16 + k + 1, -1);
    compare(&spec, &c, b, &x, spec_inputs, 0);
    ts_batch_free(b);
  }
  g_backend = "GDN_ATTN";
}

/* KIMI_K3_KDA host vs CUDA on the same kind of batches: gdn_spec_split with zero-length
 * non-spec rows left out (the uploaded spec marks), RecoverSSM's ones, request indices and
 * num_computed_tokens ("align"), FlashInfer's int64 query_start_loc and seq order, the all-spec
 * staging under full CUDA graphs. */
static void test_kda(void** state) {
  uint64_t seed = 77;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA KIMI_K3_KDA builds")) skip();
  for (iter = 0; iter < 240; ++iter) {
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 3);
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = ts_config(), dc;
    const int64_t n = ts_rand_range(&seed, 1, 48), pad = ts_rand_range(&seed, 0, 3);
    const int spec_inputs = k > 0 && ts_rand_range(&seed, 0, 3) != 0;
    const int all_spec = spec_inputs && ts_rand_range(&seed, 0, 2) == 0;
    int32_t q[64], s[64];
    int64_t r, max_seq = 1;
    ts_batch* b;
    extras x;
    attn_builder_t *hb, *db;
    attn_metadata_t *hm = NULL, *dm = NULL;
    tg_device_batch d;
    spec.kind = ATTN_KV_MAMBA;
    spec.num_speculative_blocks = k;
    spec.mamba_cache_mode = iter % 3 == 1 ? ATTN_MAMBA_CACHE_MODE_ALIGN : ATTN_MAMBA_CACHE_MODE_NONE;
    c.num_speculative_tokens = k;
    c.use_replayssm = (int32_t)(iter % 2);
    c.gdn_prefill_backend = iter % 4 == 0 ? ATTN_GDN_PREFILL_FLASHINFER : ATTN_GDN_PREFILL_AUTO;
    c.cudagraph_mode =
        iter % 3 == 0 ? ATTN_CUDAGRAPH_MODE_NONE : ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
    for (r = 0; r < n + pad; ++r) {
      /* 0 decode, 1 spec decode, 2 extend, 3 first chunk, 4 padding */
      const int64_t kind = r >= n ? 4 : all_spec ? 1 : ts_rand_range(&seed, 0, 3);
      q[r] = kind == 4 ? 0
             : kind == 0 ? 1
             : kind == 1 ? 1 + (int32_t)ts_rand_range(&seed, 0, k)
                         : (int32_t)ts_rand_range(&seed, 1, 150);
      s[r] = q[r] + (kind == 3 || kind == 4 ? 0 : (int32_t)ts_rand_range(&seed, 1, 500));
      x.prefilling[r] = (uint8_t)(kind == 2 || kind == 3);
      x.draft[r] = kind == 1 && k > 0 ? q[r] - 1 : -1;
      x.accepted[r] = (int32_t)ts_rand_range(&seed, 1, k + 1);
      if (s[r] > max_seq) max_seq = s[r];
    }
    b = ts_batch_make(q, s, n + pad, 16, (max_seq + 15) / 16 + k, -1);
    dc = c;
    dc.device.device_type = ATTN_DEVICE_CUDA;
    hb = ts_builder("KIMI_K3_KDA", &spec, &c);
    db = ts_builder("KIMI_K3_KDA", &spec, &dc);
    tg_device_batch_make(b, &d);
    add_extras(&x, b->num_reqs, b, &d, spec_inputs);
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
    tg_expect_same_metadata(hm, dm, "KIMI_K3_KDA");
    cudaFree(x.accepted_d.data);
    cudaFree(x.draft_d.data);
    tg_device_batch_free(&d);
    attn_builder_destroy(hb);
    attn_builder_destroy(db);
    ts_batch_free(b);
  }
}

/* PLE_SHORT_CONV_ATTN host vs CUDA: the non-spec build (SHORT_CONV's, the concatenated state
 * slots, has_initial_states_d with its graph padding) and the spec build (the uploaded request
 * order, ple_spec_gather's slots, query_start_locs, accepted counts and int64 token
 * permutation, the all-spec staging under full CUDA graphs), prefill checkpoints in "align". */
static void test_ple_short_conv(void** state) {
  uint64_t seed = 91;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA PLE_SHORT_CONV_ATTN builds")) skip();
  for (iter = 0; iter < 240; ++iter) {
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 3);
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = ts_config(), dc;
    const int64_t n = ts_rand_range(&seed, 1, 48), pad = ts_rand_range(&seed, 0, 3);
    const int spec_inputs = k > 0 && ts_rand_range(&seed, 0, 3) != 0;
    const int all_spec = spec_inputs && ts_rand_range(&seed, 0, 2) == 0;
    int32_t q[64], s[64];
    int64_t r, max_seq = 1;
    ts_batch* b;
    extras x;
    attn_builder_t *hb, *db;
    attn_metadata_t *hm = NULL, *dm = NULL;
    tg_device_batch d;
    spec.kind = ATTN_KV_MAMBA;
    spec.mamba_type = ATTN_MAMBA_TYPE_SHORT_CONV;
    spec.num_speculative_blocks = k;
    spec.mamba_cache_mode = iter % 3 == 1 ? ATTN_MAMBA_CACHE_MODE_ALIGN : ATTN_MAMBA_CACHE_MODE_NONE;
    if (iter % 3 == 1) { /* prefill checkpoints: the uploaded plan and the state gather */
      spec.num_prefill_checkpoint_blocks = 1;
      spec.prefill_checkpoint_alignment = 16;
      c.hash_block_size = 16;
      c.cache_hit_alignment_tokens = 16;
    }
    c.num_speculative_tokens = k;
    c.cudagraph_mode =
        iter % 3 == 0 ? ATTN_CUDAGRAPH_MODE_NONE : ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
    for (r = 0; r < n + pad; ++r) {
      /* 0 decode, 1 spec decode, 2 extend, 3 first chunk, 4 padding */
      const int64_t kind = r >= n ? 4 : all_spec ? 1 : ts_rand_range(&seed, 0, 3);
      q[r] = kind == 4 ? 0
             : kind == 0 ? 1
             : kind == 1 ? 1 + (int32_t)ts_rand_range(&seed, 0, k)
                         : (int32_t)ts_rand_range(&seed, 1, 150);
      s[r] = q[r] + (kind == 3 || kind == 4 ? 0 : (int32_t)ts_rand_range(&seed, 1, 500));
      x.prefilling[r] = (uint8_t)(kind == 2 || kind == 3);
      x.draft[r] = kind == 1 && k > 0 ? q[r] - 1 : -1;
      x.accepted[r] = (int32_t)ts_rand_range(&seed, 1, k + 1);
      if (s[r] > max_seq) max_seq = s[r];
    }
    b = ts_batch_make(q, s, n + pad, 16, (max_seq + 15) / 16 + k, -1);
    dc = c;
    dc.device.device_type = ATTN_DEVICE_CUDA;
    hb = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &c);
    db = ts_builder("PLE_SHORT_CONV_ATTN", &spec, &dc);
    tg_device_batch_make(b, &d);
    add_extras(&x, b->num_reqs, b, &d, spec_inputs);
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
    tg_expect_same_metadata(hm, dm, "PLE_SHORT_CONV_ATTN");
    cudaFree(x.accepted_d.data);
    cudaFree(x.draft_d.data);
    tg_device_batch_free(&d);
    attn_builder_destroy(hb);
    attn_builder_destroy(db);
    ts_batch_free(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gdn_0_33),
      cmocka_unit_test(test_gdn_checkpoints),
      cmocka_unit_test(test_kimi_k3_kda_rocm),
      cmocka_unit_test(test_kda),
      cmocka_unit_test(test_ple_short_conv),
  };
  return cmocka_run_group_tests_name("gpu_gdn", tests, NULL, NULL);
}
