/* FLEX_ATTENTION: the inverse block table, per-request offsets, doc ids, the direct block
 * mask's kv_indices/kv_num_blocks with shared (prefix-cached) blocks, vLLM 0.33.0's own output
 * on two batches with stale block-table columns, seeded random tables against a naive
 * construction written for this test (per-request length, causal and sliding-window pruning,
 * first-occurrence dedupe), capture, encoder-only, and bad input. */
#include <string.h>

#include "test_support.h"

enum { kGpuBlocks = 64 };

static attn_builder_config_t flex_config(void) {
  attn_builder_config_t c = ts_config();
  c.num_gpu_blocks = kGpuBlocks;
  c.max_model_len = 512;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 256;
  return c;
}

static void expect_bool(const attn_metadata_t* m, const char* name, int value) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  assert_int_equal(f.kind, ATTN_FIELD_BOOL);
  assert_int_equal(f.int_value, value);
}

static const void* at(const attn_tensor_t* t) { return (const char*)t->data + t->byte_offset; }

/* Asserts the first n entries of a 1-D int32 field whose shape is `len`. */
static void expect_prefix(const attn_metadata_t* m, const char* name, int64_t len,
                          const int32_t* want, int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t k;
  assert_non_null(t);
  assert_int_equal(t->ndim, 1);
  assert_int_equal(t->shape[0], len);
  for (k = 0; k < n; ++k) assert_int_equal(((const int32_t*)at(t))[k * t->strides[0]], want[k]);
}

static void test_hand_checked(void** state) {
  /* two requests share their first block (prefix caching): request 1's row starts with 3 */
  static const int32_t q[2] = {1, 17}, s[2] = {20, 33};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = flex_config();
  attn_builder_t* b = ts_builder("FLEX_ATTENTION", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 16, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  const int64_t* p2l;
  const int32_t* idx;
  int32_t level = -1, threshold = -1;
  int64_t k;
  (void)state;
  /* request 0: blocks 3, 5; request 1: blocks 3, 7, 9 */
  batch->bt[0] = 3, batch->bt[1] = 5, batch->bt[2] = 0;
  batch->bt[16] = 3, batch->bt[17] = 7, batch->bt[18] = 9;
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, ATTN_NO_REORDER);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "FLEX_ATTENTION");
  expect_bool(m, "causal", 1);
  {  /* vLLM 0.33's FlexAttentionMetadata has no cascade fields */
    attn_field_t f = ATTN_FIELD_INIT;
    attn_error_t* e = attn_metadata_get(m, "use_cascade", &f);
    assert_non_null(e);
    attn_error_destroy(e);
  }
  expect_bool(m, "uses_paged_kv", 1);
  expect_bool(m, "direct_build", 1);
  assert_int_equal(ts_int(m, "total_cache_tokens"), kGpuBlocks * 16);
  assert_int_equal(ts_int(m, "num_blocks"), kGpuBlocks);
  assert_int_equal(ts_int(m, "block_size"), 16);
  assert_int_equal(ts_int(m, "max_possible_sequence_length"), 512);
  assert_int_equal(ts_int(m, "num_reqs"), 2);
  assert_int_equal(ts_int(m, "q_block_size"), 16);
  assert_int_equal(ts_int(m, "kv_block_size"), 16);
  /* full-capacity persistent buffers (max_num_seqs = 16), as vLLM 0.33 hands them out */
  expect_prefix(m, "decode_offset", 16, (int32_t[]){19, 16}, 2);
  expect_prefix(m, "query_start_loc", 17, (int32_t[]){0, 1, 18}, 3);
  expect_prefix(m, "seq_lens", 16, (int32_t[]){20, 33}, 2);
  ts_expect_i32(m, "num_blocks_per_seq", (int32_t[]){2, 3}, 2);
  {
    int32_t doc[18];
    doc[0] = 0;
    for (k = 1; k < 18; ++k) doc[k] = 1;
    ts_expect_i32(m, "doc_ids", doc, 18);
    /* vLLM's doc_ids is the live prefix of its persistent_doc_ids (copy_to_persistent); the
     * tail past the 18 scheduled tokens is stale in vLLM and not part of the contract */
    expect_prefix(m, "persistent_doc_ids", 256, doc, 18);
  }
  t = ts_tensor(m, "physical_to_logical");
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], 16);
  assert_int_equal(t->shape[1], kGpuBlocks);
  p2l = (const int64_t*)at(t);
  for (k = 0; k < kGpuBlocks; ++k) {
    const int64_t want0 = k == 3 ? 0 : (k == 5 ? 1 : -1);
    const int64_t want1 = k == 3 ? 0 : (k == 7 ? 1 : (k == 9 ? 2 : -1));
    assert_int_equal(p2l[k], want0);
    assert_int_equal(p2l[t->strides[0] + k], want1);
  }
  /* 18 tokens: two query groups of 16; pages = cdiv(max_seq_len 33, 16) = 3 per token, each
   * token keeping its own request's blocks (request 0: 2) up to its position (causal). Group 0:
   * request 0's token (position 19): 3, 5 (the 0 past its length skipped); request 1's tokens
   * 1..15 (positions 16..30): 3 (seen), 7; block 2 starts at 32, after all of them. Group 1:
   * positions 31 and 32: 3, 7, then 9 for position 32. */
  ts_expect_i32(m, "kv_num_blocks", (int32_t[]){3, 3}, 2);
  t = ts_tensor(m, "kv_indices");
  assert_int_equal(t->shape[0], 2);
  assert_int_equal(t->shape[1], 16 * 3);
  idx = (const int32_t*)at(t);
  assert_int_equal(idx[0], 3);
  assert_int_equal(idx[1], 5);
  assert_int_equal(idx[2], 7);
  for (k = 3; k < 48; ++k) assert_int_equal(idx[k], -1);
  idx += t->strides[0];
  assert_int_equal(idx[0], 3);
  assert_int_equal(idx[1], 7);
  assert_int_equal(idx[2], 9);
  assert_int_equal(idx[3], -1);
  /* the persistent buffers themselves are fields too */
  t = ts_tensor(m, "persistent_kv_indices");
  assert_int_equal(t->shape[0], 16);  /* cdiv(256, 16) */
  assert_int_equal(t->shape[1], 16 * 32);
  assert_int_equal(ts_tensor(m, "persistent_doc_ids")->shape[0], 256);
  /* the block mask's kv_num_blocks is the live prefix (one entry per query group) of
   * persistent_kv_num_blocks, and kv_indices the live corner of persistent_kv_indices, as in
   * vLLM 0.33 (the conformance lane compares only these live parts: conformance/live_parts.py) */
  expect_prefix(m, "persistent_kv_num_blocks", 16, (int32_t[]){3, 3}, 2);
  t = ts_tensor(m, "persistent_kv_indices");
  idx = (const int32_t*)at(t);
  assert_int_equal(idx[0], 3);
  assert_int_equal(idx[1], 5);
  assert_int_equal(idx[2], 7);
  assert_int_equal(idx[3], -1);
  idx += t->strides[0];
  assert_int_equal(idx[0], 3);
  assert_int_equal(idx[1], 7);
  assert_int_equal(idx[2], 9);
  /* capture builds with the host maximum of seq_lens as max_seq_len (vLLM: its upper bound) */
  batch->common.max_seq_len = 200;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_tensor(m, "kv_indices")->shape[1], 16 * 13);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  assert_int_equal(ts_tensor(m, "kv_indices")->shape[1], 16 * 3);
  {  /* with vLLM 0.33's seq_lens_cpu_upper_bound the capture takes the bound's maximum, as
      * vLLM does (an async spec-decode row's bound exceeds its exact length; the conformance
      * lane's FLEX_ATTENTION (layer variants) found libattn taking the exact 33): 49, so
      * cdiv(49, 16) = 4 pages */
    int32_t bound[2] = {20, 49};
    int64_t n2[1] = {2};
    attn_tensor_t bound_t = ts_host_tensor(bound, 1, n2, ATTN_DTYPE_INT, 32);
    batch->common.seq_lens_cpu_upper_bound = &bound_t;
    ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
    assert_int_equal(ts_int(m, "max_seq_len"), 49);
    assert_int_equal(ts_tensor(m, "kv_indices")->shape[1], 16 * 4);
    batch->common.seq_lens_cpu_upper_bound = NULL;
  }
  /* vLLM slices block_table[:, :pages]: never more pages than the table is wide */
  {
    ts_batch* narrow = ts_batch_make(q, s, 2, 16, 3, -1);
    narrow->common.max_seq_len = 200;
    ASSERT_OK(attn_build(b, 0, &narrow->common, 0, &m, NULL));
    assert_int_equal(ts_tensor(m, "kv_indices")->shape[1], 16 * 3);
    ts_batch_free(narrow);
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* vLLM 0.33.0's FlexAttentionMetadataBuilder.build() on CPU (max_num_seqs 8, 64 tokens,
 * max_model_len 128, 16 blocks of 16), printed in the venv: the block mask keeps only each
 * request's own blocks, not the stale columns past its length, and prunes future blocks. */
static void test_vllm_block_masks(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  const int32_t* idx;
  int64_t k;
  (void)state;
  c.num_gpu_blocks = 16;
  c.max_model_len = 128;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 64;
  b = ts_builder("FLEX_ATTENTION", &spec, &c);
  {  /* q = [1, 1], contexts [15, 40]: 4 blocks (libattn before the fix: 6) */
    static const int32_t q[2] = {1, 1}, s[2] = {16, 41};
    static const int32_t rows[2][8] = {{3, 9, 9, 9, 9, 9, 9, 9}, {5, 6, 7, 11, 12, 13, 14, 15}};
    ts_batch* batch = ts_batch_make(q, s, 2, 16, 8, -1);
    memcpy(batch->bt, rows, sizeof rows);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    ts_expect_i32(m, "kv_num_blocks", (int32_t[]){4}, 1);
    t = ts_tensor(m, "kv_indices");
    assert_int_equal(t->shape[0], 1);
    assert_int_equal(t->shape[1], 48);
    idx = (const int32_t*)at(t);
    assert_int_equal(idx[0], 3);
    assert_int_equal(idx[1], 5);
    assert_int_equal(idx[2], 6);
    assert_int_equal(idx[3], 7);
    for (k = 4; k < 48; ++k) assert_int_equal(idx[k], -1);
    expect_prefix(m, "query_start_loc", 9, (int32_t[]){0, 1, 2}, 3);
    expect_prefix(m, "seq_lens", 8, (int32_t[]){16, 41}, 2);
    expect_prefix(m, "decode_offset", 8, (int32_t[]){15, 40}, 2);
    ts_expect_i32(m, "num_blocks_per_seq", (int32_t[]){1, 3}, 2);
    t = ts_tensor(m, "physical_to_logical");
    assert_int_equal(t->shape[0], 8);
    assert_int_equal(t->shape[1], 16);
    for (k = 0; k < 16; ++k) {
      const int64_t* p2l = (const int64_t*)at(t);
      assert_int_equal(p2l[k], k == 3 ? 0 : -1);
      assert_int_equal(p2l[t->strides[0] + k], k == 5 ? 0 : (k == 6 ? 1 : (k == 7 ? 2 : -1)));
    }
    t = ts_tensor(m, "persistent_kv_indices");
    assert_int_equal(t->shape[0], 4);
    assert_int_equal(t->shape[1], 128);
    assert_int_equal(ts_tensor(m, "persistent_kv_num_blocks")->shape[0], 4);
    assert_int_equal(ts_tensor(m, "persistent_doc_ids")->shape[0], 64);
    ts_batch_free(batch);
  }
  {  /* q = [5, 20], contexts [30, 0]: group 0 = request 0's blocks and request 1's first */
    static const int32_t q[2] = {5, 20}, s[2] = {35, 20};
    static const int32_t rows[2][8] = {{2, 4, 8, 12, 13, 14, 15, 1}, {6, 10, 3, 9, 9, 9, 9, 9}};
    ts_batch* batch = ts_batch_make(q, s, 2, 16, 8, -1);
    memcpy(batch->bt, rows, sizeof rows);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    ts_expect_i32(m, "kv_num_blocks", (int32_t[]){4, 2}, 2);
    t = ts_tensor(m, "kv_indices");
    assert_int_equal(t->shape[1], 48);
    idx = (const int32_t*)at(t);
    assert_int_equal(idx[0], 2);
    assert_int_equal(idx[1], 4);
    assert_int_equal(idx[2], 8);
    assert_int_equal(idx[3], 6);
    for (k = 4; k < 48; ++k) assert_int_equal(idx[k], -1);
    idx += t->strides[0];
    assert_int_equal(idx[0], 6);
    assert_int_equal(idx[1], 10);
    for (k = 2; k < 48; ++k) assert_int_equal(idx[k], -1);
    ts_expect_i32(m, "doc_ids",
                  (int32_t[]){0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                  25);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

/* Random tables with many shared ids against a naive construction: each token keeps its own
 * request's blocks below its length, not after its position (causal) and, with a sliding
 * window under full CUDA graphs, not before its window; first occurrence per group. */
static void test_random_block_masks(void** state) {
  int variant;
  (void)state;
  for (variant = 0; variant < 3; ++variant) {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t c = flex_config();
    attn_builder_t* b;
    uint64_t seed = 77 + (uint64_t)variant;
    const int causal = variant != 1;
    const int32_t window = variant == 2 ? 20 : 0;
    int round;
    c.flex_attn_q_block_size = 4;
    c.cudagraph_mode = ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
    if (window > 0) spec.kind = ATTN_KV_SLIDING_WINDOW, spec.sliding_window = window;
    b = ts_builder("FLEX_ATTENTION", &spec, &c);
    for (round = 0; round < 100; ++round) {
      int32_t q[8], s[8];
      const int64_t n = ts_rand_range(&seed, 1, 8);
      int64_t r, j, tokens = 0, max_s = 0;
      ts_batch* batch;
      attn_metadata_t* m = NULL;
      const attn_tensor_t* t;
      const int32_t* nb;
      for (r = 0; r < n; ++r) {
        q[r] = (int32_t)ts_rand_range(&seed, 1, 20);
        s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 100);
        tokens += q[r];
        if (s[r] > max_s) max_s = s[r];
      }
      batch = ts_batch_make(q, s, n, 16, 0, -1);
      batch->common.causal = causal;
      for (r = 0; r < n * batch->width; ++r) batch->bt[r] = (int32_t)ts_rand_range(&seed, 0, 12);
      ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
      if (window > 0) assert_int_equal(ts_int(m, "sliding_window"), window);
      else assert_int_equal(ts_kind(m, "sliding_window"), ATTN_FIELD_NONE);
      t = ts_tensor(m, "kv_indices");
      nb = (const int32_t*)at(ts_tensor(m, "kv_num_blocks"));
      {
        const int64_t pages = (max_s + 15) / 16, groups = (tokens + 3) / 4;
        int32_t doc[160], pos[160];
        int64_t g, tok = 0;
        assert_int_equal(t->shape[0], groups);
        assert_int_equal(t->shape[1], 4 * pages);
        for (r = 0; r < n; ++r)
          for (j = 0; j < q[r]; ++j) doc[tok] = (int32_t)r, pos[tok++] = s[r] - q[r] + (int32_t)j;
        for (g = 0; g < groups; ++g) {
          int32_t expect[4 * 32];
          int64_t count = 0, p, e;
          const int32_t* row = (const int32_t*)at(t) + g * t->strides[0];
          for (p = 0; p < 4 * pages; ++p) {
            const int64_t tt = g * 4 + p / pages, col = p % pages;
            int32_t v;
            int dup = 0;
            if (tt >= tokens || col * 16 >= s[doc[tt]]) continue;
            if (causal && col * 16 > pos[tt]) continue;
            if (window > 0 && (col + 1) * 16 <= pos[tt] - (window - 1)) continue;
            v = batch->bt[doc[tt] * batch->width + col];
            if (v == 0) continue;
            for (e = 0; e < count; ++e) dup |= expect[e] == v;
            if (!dup) expect[count++] = v;
          }
          assert_int_equal(nb[g], count);
          for (e = 0; e < count; ++e) assert_int_equal(row[e], expect[e]);
          for (e = count; e < 4 * pages; ++e) assert_int_equal(row[e], -1);
        }
      }
      ts_batch_free(batch);
    }
    attn_builder_destroy(b);
  }
}

static void test_encoder_only_and_options(void** state) {
  static const int32_t q[2] = {4, 6}, s[2] = {4, 6};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = flex_config();
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 1, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  spec.kind = ATTN_KV_ENCODER_ONLY;
  b = ts_builder("FLEX_ATTENTION", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "EncoderOnlyAttention_FLEX_ATTENTION");
  expect_bool(m, "causal", 0);
  expect_bool(m, "uses_paged_kv", 0);
  expect_bool(m, "direct_build", 0);
  assert_null(ts_tensor(m, "kv_indices"));
  attn_builder_destroy(b);
  /* a KV block size other than the cache's: no direct build */
  spec.kind = ATTN_KV_FULL_ATTENTION;
  c.flex_attn_kv_block_size = 128;
  b = ts_builder("FLEX_ATTENTION", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_bool(m, "direct_build", 0);
  assert_int_equal(ts_int(m, "kv_block_size"), 128);
  assert_null(ts_tensor(m, "kv_num_blocks"));
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

static void test_bad_input(void** state) {
  static const int32_t q[1] = {1}, s[1] = {20};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = flex_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  ts_batch* batch = ts_batch_make(q, s, 1, 16, 2, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.num_gpu_blocks = 0;
  ASSERT_ERROR(attn_builder_create("FLEX_ATTENTION", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->num_gpu_blocks=0; FLEX_ATTENTION needs the number of KV cache blocks");
  c.num_gpu_blocks = (int64_t)1 << 31;
  ASSERT_ERROR(attn_builder_create("FLEX_ATTENTION", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->num_gpu_blocks=2147483648 is not in [0, 2^31-1]");
  /* sizes whose product overflows are refused before anything is allocated */
  c.num_gpu_blocks = ((int64_t)1 << 31) - 1;
  c.max_num_seqs = 2147483647;
  ASSERT_ERROR(attn_builder_workspace_size("FLEX_ATTENTION", &spec, &c, &(size_t){0}),
               ATTN_ERR_INVALID_ARGUMENT,
               "config->max_num_seqs=2147483647 exceeds libattn's create-time limit of 1048576");
  c.max_num_seqs = 16;
  ASSERT_ERROR(attn_builder_create("FLEX_ATTENTION", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->num_gpu_blocks=2147483647 exceeds libattn's create-time limit of 67108864");
  /* within the field limits, 2^20 x 2^26 x 8 bytes of physical_to_logical: past the 2^40-byte
   * plan limit, refused by name at the size query and at create */
  c.max_num_seqs = 1 << 20;
  c.num_gpu_blocks = (int64_t)1 << 26;
  ASSERT_ERROR(attn_builder_workspace_size("FLEX_ATTENTION", &spec, &c, &(size_t){0}),
               ATTN_ERR_INVALID_ARGUMENT, "(the largest, persistent_physical_to_logical, ");
  ASSERT_ERROR(attn_builder_create("FLEX_ATTENTION", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "more than libattn's create-time limit of 2^40 bytes");
  c.max_num_seqs = 16;
  c.num_gpu_blocks = kGpuBlocks;
  c.flex_attn_q_block_size = 12;
  ASSERT_ERROR(attn_builder_create("FLEX_ATTENTION", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->flex_attn_q_block_size=12 is not a power of two");
  c.flex_attn_q_block_size = 0;
  c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
  ASSERT_ERROR(attn_builder_create("FLEX_ATTENTION", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "does not support quantized KV caches");
  c.cache_dtype = ATTN_KV_DTYPE_AUTO;
  spec.kind = ATTN_KV_CROSS_ATTENTION;
  c.max_encoder_len = 64;
  ASSERT_ERROR(attn_builder_create("FLEX_ATTENTION", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "decoder and encoder-only attention, not CROSS_ATTENTION");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  spec.kind = ATTN_KV_FULL_ATTENTION;
  b = ts_builder("FLEX_ATTENTION", &spec, &c);
  ASSERT_ERROR(attn_build(b, 16, &batch->common, 0, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "FLEX_ATTENTION does not support cascade attention");
  {  /* vLLM 0.33's multimodal and R-SWA fields; a per-request causal tensor is refused */
    int32_t ranges[1][3] = {{0, 2, 6}}, causal[1] = {0};
    int64_t rshape[2] = {1, 3}, n1[1] = {1};
    attn_tensor_t ranges_t = ts_host_tensor(ranges, 2, rshape, ATTN_DTYPE_INT, 32);
    attn_tensor_t causal_t = ts_host_tensor(causal, 1, n1, ATTN_DTYPE_INT, 32);
    batch->common.mm_req_doc_ranges = &ranges_t;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_ptr_equal(ts_tensor(m, "mm_prefix_range")->data, ranges); /* the dict, as rows */
    assert_int_equal(ts_kind(m, "block_sparsity_hint"), ATTN_FIELD_NONE); /* set per layer */
    assert_int_equal(ts_kind(m, "rswa_prefix_lens"), ATTN_FIELD_NONE);
    assert_int_equal(ts_kind(m, "rswa_window"), ATTN_FIELD_NONE);
    batch->common.mm_req_doc_ranges = NULL;
    batch->common.causal_per_request = &causal_t;
    m = (attn_metadata_t*)UNTOUCHED_PTR;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->causal_per_request is given; FLEX_ATTENTION takes a scalar causal");
    assert_ptr_equal(m, UNTOUCHED_PTR);
    batch->common.causal_per_request = NULL;
  }
  batch->bt[1] = kGpuBlocks;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->block_table_tensor[0][1]=64 is not a block of the KV cache");
  attn_builder_destroy(b);
  /* vLLM 0.33's R-SWA block mask is not implemented: refused at create, named */
  c.rswa_window = 32;
  b = (attn_builder_t*)UNTOUCHED_PTR;
  ASSERT_ERROR(attn_builder_create("FLEX_ATTENTION", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "FLEX_ATTENTION with config->rswa_window=32 is not supported");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_vllm_block_masks),
      cmocka_unit_test(test_random_block_masks),
      cmocka_unit_test(test_encoder_only_and_options),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests_name("flex_attention", tests, NULL, NULL);
}
