/* vLLM 0.33's smaller attention builders: B12X (the batch's tables as they are, UNIFORM_BATCH,
 * update_block_table), HPC_ATTN (split at 1 or 1 + k, rebased prefill qo_indptr, the decodes'
 * query_start_loc view, hpc's task_map inputs) and CACHE_ONLY_ATTN (slot_mapping only, NEVER,
 * non-causal refused): hand-checked batches, random batches against a naive split, bad input. */
#include <stdlib.h>

#include "test_support.h"

static void test_b12x(void** state) {
  static const int32_t q[3] = {1, 4, 9}, s[3] = {30, 20, 9};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 64, 0, -1);
  int32_t other_bt[3] = {7, 8, 9};
  int64_t other_sm[14];
  int64_t bt_shape[2] = {3, 1}, sm_shape[1] = {14};
  attn_tensor_t other_t = ts_host_tensor(other_bt, 2, bt_shape, ATTN_DTYPE_INT, 32);
  attn_tensor_t other_sm_t = ts_host_tensor(other_sm, 1, sm_shape, ATTN_DTYPE_INT, 64);
  attn_metadata_t* m = NULL;
  attn_field_t f = ATTN_FIELD_INIT;
  int32_t level = -1, threshold = 0, update = 0, k;
  (void)state;
  spec.block_size = 64;
  for (k = 0; k < 14; ++k) other_sm[k] = k;
  b = ts_builder("B12X", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_backend_cudagraph_support("B12X", &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "B12X");
  assert_int_equal(attn_metadata_field_count(m), 8);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 14);
  assert_int_equal(ts_int(m, "max_query_len"), 9);
  assert_int_equal(ts_int(m, "max_seq_len"), 30);
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  ASSERT_OK(attn_metadata_get(m, "causal", &f));
  assert_int_equal(f.kind, ATTN_FIELD_BOOL);
  assert_int_equal(f.int_value, 1);
  {  /* vLLM 0.33 passes a per-request causal tensor through */
    int32_t causal[3] = {1, 0, 1};
    int64_t n3[1] = {3};
    attn_tensor_t causal_t = ts_host_tensor(causal, 1, n3, ATTN_DTYPE_INT, 32);
    batch->common.causal_per_request = &causal_t;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_ptr_equal(ts_tensor(m, "causal")->data, causal);
    batch->common.causal_per_request = NULL;
  }
  ASSERT_OK(attn_update_block_table(b, m, &other_t, &other_sm_t, &m, NULL));
  assert_ptr_equal(ts_tensor(m, "block_table")->data, other_bt);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, other_sm);
  assert_int_equal(ts_int(m, "max_seq_len"), 30);
  attn_builder_destroy(b);
  spec.kind = ATTN_KV_CROSS_ATTENTION;
  c.max_encoder_len = 64;
  ASSERT_ERROR(attn_builder_create("B12X", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "B12X does not build metadata for CROSS_ATTENTION KV cache specs");
  ts_batch_free(batch);
}

static void test_cache_only(void** state) {
  static const int32_t q[2] = {3, 1}, s[2] = {3, 40};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_kv_cache_spec_t mla = ts_mla_spec(16);
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
  attn_metadata_t* m = NULL;
  int32_t level = -1, threshold = 0, update = 1;
  (void)state;
  b = ts_builder("CACHE_ONLY_ATTN", &mla, &c); /* vLLM's HiddenStateCacheSpec is an MLA spec */
  attn_builder_destroy(b);
  b = ts_builder("CACHE_ONLY_ATTN", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 0);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "CACHE_ONLY_ATTN");
  assert_int_equal(attn_metadata_field_count(m), 1);
  assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
  batch->common.causal = 0;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "Non-causal attention not supported by CacheOnlyAttention (common->causal=0)");
  batch->common.causal = 1;
  {
    int32_t causal[2] = {1, 1};
    int64_t n2[1] = {2};
    attn_tensor_t causal_t = ts_host_tensor(causal, 1, n2, ATTN_DTYPE_INT, 32);
    batch->common.causal_per_request = &causal_t;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
                 "torch refuses for a per-request causal tensor of 2 requests");
    batch->common.causal_per_request = NULL;
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* vLLM 0.33's split_decodes_and_prefills(threshold, require_uniform), naively. */
static void naive_split(const int32_t* q, int64_t n, int32_t threshold, int uniform,
                        int64_t* nd, int64_t* ndt) {
  int64_t r, max_q = 0, t = 0;
  for (r = 0; r < n; ++r)
    if (q[r] > max_q) max_q = q[r];
  *nd = 0;
  *ndt = 0;
  if (n == 0 || q[0] > threshold) return;
  if (max_q <= threshold && (!uniform || threshold <= 1)) {
    for (r = 0; r < n; ++r) t += q[r];
    *nd = n;
    *ndt = t;
    return;
  }
  for (r = 0; r < n; ++r) {
    const int prefill = uniform ? (q[r] != q[0] && q[r] != 0) : q[r] > threshold;
    if (prefill) break;
    t += q[r];
  }
  *nd = r;
  *ndt = t;
}

static void test_hpc_attn(void** state) {
  static const int32_t q[4] = {1, 1, 5, 12}, s[4] = {30, 9, 40, 12};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch;
  attn_metadata_t* m = NULL;
  attn_field_t f = ATTN_FIELD_INIT;
  int32_t level = -1, threshold = 0, update = 1, k, it;
  uint64_t rng = 11;
  (void)state;
  spec.block_size = 64;
  batch = ts_batch_make(q, s, 4, 64, 0, -1);
  b = ts_builder("HPC_ATTN", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 1);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 0);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "HPC_ATTN");
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 17);
  assert_int_equal(ts_int(m, "decode_query_len"), 1);
  ts_expect_i32(m, "qo_indptr", (int32_t[]){0, 5, 17}, 3);
  ts_expect_i32(m, "qo_indptr_decode", (int32_t[]){0, 1, 2}, 3);
  assert_ptr_equal(ts_tensor(m, "qo_indptr_decode")->data, batch->qsl);
  assert_ptr_equal(ts_tensor(m, "block_table_tensor")->data, batch->bt);
  assert_null(ts_tensor(m, "task_map"));
  assert_null(ts_tensor(m, "hpc_decode_q_scale"));
  ASSERT_OK(attn_metadata_get(m, "hpc_kv_written", &f));
  assert_int_equal(f.kind, ATTN_FIELD_BOOL);
  assert_int_equal(f.int_value, 0);
  assert_int_equal(ts_int(m, "task_map_max_num_seqs"), 256);
  assert_int_equal(ts_int(m, "task_map_max_model_len"), 4096);
  assert_int_equal(ts_int(m, "task_map_num_kv_heads"), 8);
  assert_int_equal(ts_int(m, "task_map_min_process_len"), 1024);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  /* speculative decoding: UNIFORM_BATCH, threshold 1 + k, uniform decodes (2 per request) */
  c.num_speculative_tokens = 2;
  b = ts_builder("HPC_ATTN", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 3);
  {
    static const int32_t q2[4] = {2, 2, 3, 12}, s2[4] = {30, 9, 40, 12};
    batch = ts_batch_make(q2, s2, 4, 64, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), 2);
    assert_int_equal(ts_int(m, "num_decode_tokens"), 4);
    assert_int_equal(ts_int(m, "decode_query_len"), 2);
    ts_expect_i32(m, "qo_indptr", (int32_t[]){0, 3, 15}, 3);
    ts_expect_i32(m, "qo_indptr_decode", (int32_t[]){0, 2, 4}, 3);
    ts_batch_free(batch);
  }
  /* random batches against the naive split */
  for (it = 0; it < 300; ++it) {
    int32_t qq[16], ss[16], want[17];
    const int64_t n = ts_rand_range(&rng, 1, 16);
    int64_t r, nd, ndt;
    const int uniform = 1;
    for (r = 0; r < n; ++r) {
      qq[r] = (int32_t)ts_rand_range(&rng, 1, 6);
      ss[r] = qq[r] + (int32_t)ts_rand_range(&rng, 0, 200);
    }
    /* decodes first, as the reorder leaves them */
    for (r = 1; r < n; ++r)
      if (qq[r] <= 3 && qq[r - 1] > 3) {
        int32_t tq = qq[r], ts = ss[r];
        qq[r] = qq[r - 1]; ss[r] = ss[r - 1];
        qq[r - 1] = tq; ss[r - 1] = ts;
        r = 0;
      }
    batch = ts_batch_make(qq, ss, n, 64, 0, -1);
    naive_split(qq, n, 3, uniform, &nd, &ndt);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_decode_tokens"), ndt);
    assert_int_equal(ts_int(m, "num_prefills"), n - nd);
    assert_int_equal(ts_int(m, "decode_query_len"), nd > 0 && ndt > nd ? ndt / nd : 1);
    if (n - nd > 0) {
      for (k = 0; k <= n - nd; ++k) want[k] = batch->qsl[nd + k] - batch->qsl[nd];
      ts_expect_i32(m, "qo_indptr", want, n - nd + 1);
    } else {
      assert_null(ts_tensor(m, "qo_indptr"));
    }
    if (nd > 0) ts_expect_i32(m, "qo_indptr_decode", batch->qsl, nd + 1);
    else assert_null(ts_tensor(m, "qo_indptr_decode"));
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
  c.num_speculative_tokens = 4;
  ASSERT_ERROR(attn_builder_create("HPC_ATTN", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "HPC attention only supports up to 3 speculative tokens");
}

/* The composite backends: TRITON_ATTN for batches whose queries see image keys
 * (requires_mm_prefix), the causal child (FLASH_ATTN, FLASHINFER) otherwise; the union of the
 * children's fields, the other child's None; level min(children, routing). */
static void expect_same_as(const attn_metadata_t* m, const attn_metadata_t* child) {
  const size_t n = attn_metadata_field_count(child);
  size_t k;
  for (k = 0; k < n; ++k) {
    attn_field_t a = ATTN_FIELD_INIT, b = ATTN_FIELD_INIT;
    ASSERT_OK(attn_metadata_field(child, k, &b));
    ASSERT_OK(attn_metadata_get(m, b.name, &a));
    if (a.kind != b.kind) fail_msg("%s: kind %d vs %d", b.name, a.kind, b.kind);
    if (a.kind == ATTN_FIELD_INT || a.kind == ATTN_FIELD_BOOL)
      assert_int_equal(a.int_value, b.int_value);
    if (a.kind == ATTN_FIELD_TENSOR) {
      assert_int_equal(a.tensor->ndim, b.tensor->ndim);
      assert_int_equal(a.tensor->shape[0], b.tensor->shape[0]);
    }
  }
}

static void test_composite(void** state) {
  static const int32_t q[3] = {1, 6, 10}, s[3] = {30, 40, 10};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t *b, *tri, *fa;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_metadata_t *m = NULL, *mc = NULL;
  int32_t level = -1, threshold = 0, update = 1;
  /* request 1's image at positions 35..38: its queries (34..39) overlap it */
  int32_t ranges[3] = {1, 35, 38}, far[3] = {1, 0, 4};
  int64_t r_shape[2] = {1, 3};
  attn_tensor_t ranges_t = ts_host_tensor(ranges, 2, r_shape, ATTN_DTYPE_INT, 32);
  attn_tensor_t far_t = ts_host_tensor(far, 2, r_shape, ATTN_DTYPE_INT, 32);
  (void)state;
  c.is_mm_prefix_lm = 1; /* the composites serve multimodal PrefixLM models */
  b = ts_builder("TRITON_FLASH_ATTN", &spec, &c);
  tri = ts_builder("TRITON_ATTN", &spec, &c);
  fa = ts_builder("FLASH_ATTN", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE); /* the routing's */
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 0);
  /* no image ranges: FLASH_ATTN */
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "TRITON_FLASH_ATTN");
  assert_int_equal(ts_int(m, "attention_backend_variant"), 1);
  ASSERT_OK(attn_build(fa, 0, &batch->common, 0, &mc, NULL));
  expect_same_as(m, mc);
  assert_null(ts_tensor(m, "softmax_segm_output")); /* TRITON_ATTN's only */
  /* an image range the queries do not reach (historical): still FLASH_ATTN */
  batch->common.mm_req_doc_ranges = &far_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "attention_backend_variant"), 1);
  /* queries over the image: TRITON_ATTN */
  batch->common.mm_req_doc_ranges = &ranges_t;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "attention_backend_variant"), 0);
  ASSERT_OK(attn_build(tri, 0, &batch->common, 0, &mc, NULL));
  expect_same_as(m, mc);
  assert_non_null(ts_tensor(m, "softmax_segm_output"));
  assert_null(ts_tensor(m, "dcp_context_kv_lens")); /* FLASH_ATTN's only */
  batch->common.mm_req_doc_ranges = NULL;
  {  /* capture (single-token decodes at this level): the causal child */
    static const int32_t dq[2] = {1, 1}, ds[2] = {30, 20};
    ts_batch* dec = ts_batch_make(dq, ds, 2, 16, 0, -1);
    ASSERT_OK(attn_build_for_cudagraph_capture(b, &dec->common, &m, NULL));
    assert_int_equal(ts_int(m, "attention_backend_variant"), 1);
    ts_batch_free(dec);
  }
  /* a common prefix: vLLM 0.33's children ignore it (no cascade fields) */
  ASSERT_OK(attn_build(b, 8, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "attention_backend_variant"), 1);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  {
    attn_field_t f = ATTN_FIELD_INIT;
    ASSERT_ERROR(attn_metadata_get(m, "suffix_kv_lens", &f), ATTN_ERR_NOT_FOUND, "suffix_kv_lens");
  }
  attn_builder_destroy(b);
  attn_builder_destroy(tri);
  attn_builder_destroy(fa);
  /* a sliding-window layer (unclamped): NEVER */
  spec.kind = ATTN_KV_SLIDING_WINDOW;
  spec.sliding_window = 128;
  ASSERT_OK(attn_backend_cudagraph_support("TRITON_FLASH_ATTN", &spec, &c, &level));
  assert_int_equal(level, ATTN_CG_NEVER);
  spec = ts_spec();
  /* TRITON_FLASHINFER: FLASHINFER's reorder threshold (the smallest that is not None) */
  b = ts_builder("TRITON_FLASHINFER", &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 1);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "attention_backend_variant"), 1);
  assert_non_null(ts_tensor(m, "paged_kv_indptr_cpu"));
  attn_builder_destroy(b);
  {  /* a caller workspace holds both children's buffers */
    size_t bytes = 0, tb = 0, fb = 0;
    void* ws;
    ASSERT_OK(attn_builder_workspace_size("TRITON_FLASH_ATTN", &spec, &c, &bytes));
    ASSERT_OK(attn_builder_workspace_size("TRITON_ATTN", &spec, &c, &tb));
    ASSERT_OK(attn_builder_workspace_size("FLASH_ATTN", &spec, &c, &fb));
    assert_int_equal(bytes, tb + fb);
    ws = aligned_alloc(256, bytes);
    c.workspace = ws;
    c.workspace_size = bytes;
    b = ts_builder("TRITON_FLASH_ATTN", &spec, &c);
    batch->common.mm_req_doc_ranges = &ranges_t;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    {
      const attn_tensor_t* t = ts_tensor(m, "softmax_segm_output");
      assert_true((const char*)t->data >= (const char*)ws &&
                  (const char*)t->data < (const char*)ws + tb);
    }
    attn_builder_destroy(b);
    free(ws);
    batch->common.mm_req_doc_ranges = NULL;
  }
  ts_batch_free(batch);
}

/* ROCM_ATTN: the tables, capture writing 1 into seq_lens and 0 into query_start_loc in place;
 * ROCM_OCTAVE: the split at 1 and the per-token request / causal key length maps, against a
 * naive computation on random batches, and the draft update that refills them. */
static void test_rocm(void** state) {
  static const int32_t q[3] = {1, 4, 3}, s[3] = {30, 20, 3};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_metadata_t* m = NULL;
  int32_t level = -1, threshold = 0, update = 1, k, it;
  uint64_t rng = 5;
  (void)state;
  b = ts_builder("ROCM_ATTN", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 0);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "ROCM_ATTN");
  assert_int_equal(attn_metadata_field_count(m), 9);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  assert_null(ts_tensor(m, "scheduler_metadata"));
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  for (k = 0; k < 3; ++k) assert_int_equal(batch->seq[k], 1);
  for (k = 0; k < 4; ++k) assert_int_equal(batch->qsl[k], 0);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  /* ROCM_OCTAVE */
  batch = ts_batch_make(q, s, 3, 16, 0, 10); /* two padding tokens */
  b = ts_builder("ROCM_OCTAVE", &spec, &c);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 1);
  ts_expect_i32(m, "q_to_req", (int32_t[]){0, 1, 1, 1, 1, 2, 2, 2, 3, 3}, 10);
  ts_expect_i32(m, "q_to_klen", (int32_t[]){30, 17, 18, 19, 20, 1, 2, 3, 0, 0}, 10);
  /* the drafter advanced seq_lens in place: the update refills the maps */
  batch->seq[0] = 31;
  ASSERT_OK(attn_update_draft_decode_metadata(b, m, NULL));
  ts_expect_i32(m, "q_to_klen", (int32_t[]){31, 17, 18, 19, 20, 1, 2, 3, 0, 0}, 10);
  ts_batch_free(batch);
  for (it = 0; it < 200; ++it) {
    int32_t qq[16], ss[16], req[128], klen[128];
    const int64_t n = ts_rand_range(&rng, 1, 16);
    int64_t r, t = 0, pad = ts_rand_range(&rng, 0, 3);
    for (r = 0; r < n; ++r) {
      qq[r] = (int32_t)ts_rand_range(&rng, 0, 6);
      ss[r] = qq[r] + (int32_t)ts_rand_range(&rng, 0, 100);
    }
    for (r = 0; r < n; ++r)
      for (k = 0; k < qq[r]; ++k, ++t) {
        req[t] = (int32_t)r;
        klen[t] = ss[r] - qq[r] + k + 1;
      }
    for (k = 0; k < pad; ++k, ++t) {
      req[t] = (int32_t)n;
      klen[t] = 0;
    }
    batch = ts_batch_make(qq, ss, n, 16, 0, t);
    if (t == 0) {
      ts_batch_free(batch);
      continue;
    }
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    ts_expect_i32(m, "q_to_req", req, t);
    ts_expect_i32(m, "q_to_klen", klen, t);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

/* ROCM_AITER_UNIFIED_ATTN and ROCM_SEGMENTED_ATTN: ROCM_ATTN's builder (the tables as they are,
 * ALWAYS, no reorder, no update_block_table); the unified capture writes 1 into seq_lens and
 * keeps query_start_loc (its replay reads it), the segmented one zeroes it as ROCM_ATTN's does;
 * random batches against a naive maximum; block sizes not a multiple of 16 refused (unified). */
static void test_rocm_unified_segmented(void** state) {
  static const char* const names[2] = {"ROCM_AITER_UNIFIED_ATTN", "ROCM_SEGMENTED_ATTN"};
  static const int32_t q[3] = {1, 4, 3}, s[3] = {30, 20, 3};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  attn_field_t f = ATTN_FIELD_INIT;
  int32_t level = -1, threshold = 0, update = 1, k, it, i;
  uint64_t rng = 11;
  (void)state;
  for (i = 0; i < 2; ++i) {
    ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
    b = ts_builder(names[i], &spec, &c);
    ASSERT_OK(attn_builder_cudagraph_support(b, &level));
    assert_int_equal(level, ATTN_CG_ALWAYS);
    ASSERT_OK(attn_backend_cudagraph_support(names[i], &spec, &c, &level));
    assert_int_equal(level, ATTN_CG_ALWAYS);
    ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
    assert_int_equal(threshold, ATTN_NO_REORDER);
    ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
    assert_int_equal(update, 0);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_string_equal(attn_metadata_kind(m), names[i]);
    assert_int_equal(attn_metadata_field_count(m), 9);
    assert_int_equal(ts_int(m, "num_actual_tokens"), 8);
    assert_int_equal(ts_int(m, "max_query_len"), 4);
    assert_int_equal(ts_int(m, "max_seq_len"), 30);
    assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
    assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
    assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
    assert_ptr_equal(ts_tensor(m, "slot_mapping")->data, batch->slots);
    assert_null(ts_tensor(m, "scheduler_metadata"));
    ASSERT_OK(attn_metadata_get(m, "causal", &f));
    assert_int_equal(f.kind, ATTN_FIELD_BOOL);
    assert_int_equal(f.int_value, 1);
    ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
    for (k = 0; k < 3; ++k) assert_int_equal(batch->seq[k], 1);
    {
      static const int32_t kept[4] = {0, 1, 5, 8};
      for (k = 0; k < 4; ++k) assert_int_equal(batch->qsl[k], i == 0 ? kept[k] : 0);
    }
    ts_batch_free(batch);
    for (it = 0; it < 100; ++it) { /* random batches: the tables as they are, naive maxima */
      int32_t qq[16], ss[16], mq = 0, ms = 0;
      const int64_t n = ts_rand_range(&rng, 1, 16);
      int64_t r, t = 0;
      for (r = 0; r < n; ++r) {
        qq[r] = (int32_t)ts_rand_range(&rng, 1, 9);
        ss[r] = qq[r] + (int32_t)ts_rand_range(&rng, 0, 200);
        t += qq[r];
        if (qq[r] > mq) mq = qq[r];
        if (ss[r] > ms) ms = ss[r];
      }
      batch = ts_batch_make(qq, ss, n, 16, 0, -1);
      ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
      assert_int_equal(ts_int(m, "num_actual_tokens"), t);
      assert_int_equal(ts_int(m, "max_query_len"), mq);
      assert_int_equal(ts_int(m, "max_seq_len"), ms);
      assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
      ts_batch_free(batch);
    }
    attn_builder_destroy(b);
  }
  /* bad input: unified refuses block sizes that are not a multiple of 16; segmented takes 8 */
  spec.block_size = 24;
  ASSERT_ERROR(attn_builder_create("ROCM_AITER_UNIFIED_ATTN", &spec, &c, &b),
               ATTN_ERR_UNSUPPORTED, "kv_cache_spec->block_size=24 is not a multiple of 16");
  spec.block_size = 8;
  b = ts_builder("ROCM_SEGMENTED_ATTN", &spec, &c);
  attn_builder_destroy(b);
  /* the backends' supports_attn_type: cross attention only on the unified one, encoder-only
   * not on the segmented one */
  spec.block_size = 16;
  spec.kind = ATTN_KV_CROSS_ATTENTION;
  c.max_encoder_len = 64;
  ASSERT_ERROR(attn_builder_create("ROCM_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "ROCM_ATTN does not build metadata for CROSS_ATTENTION");
  b = ts_builder("ROCM_AITER_UNIFIED_ATTN", &spec, &c);
  attn_builder_destroy(b);
  spec.kind = ATTN_KV_ENCODER_ONLY;
  ASSERT_ERROR(attn_builder_create("ROCM_SEGMENTED_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "ROCM_SEGMENTED_ATTN does not build metadata for ENCODER_ONLY");
  b = ts_builder("ROCM_ATTN", &spec, &c);
  attn_builder_destroy(b);
  spec = ts_mla_spec(16);
  ASSERT_ERROR(attn_builder_create("ROCM_SEGMENTED_ATTN", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "ROCM_SEGMENTED_ATTN does not build metadata for");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_b12x),
      cmocka_unit_test(test_cache_only),
      cmocka_unit_test(test_hpc_attn),
      cmocka_unit_test(test_composite),
      cmocka_unit_test(test_rocm),
      cmocka_unit_test(test_rocm_unified_segmented),
  };
  return cmocka_run_group_tests_name("attn_variants", tests, NULL, NULL);
}
