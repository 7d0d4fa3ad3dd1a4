/* The compressed form of vLLM 0.33's DeepseekV32IndexerMetadataBuilder (kv_cache_spec->
 * tokens_per_state = 4, DeepSeek V4 / V4.1's C4 indexer) under DEEPSEEK_V4_INDEXER (kernel block
 * 256), DEEPSEEK_V41_INDEXER (64 on 9.x, else 128), CPU_V4_INDEXER (the CPU platform's paths,
 * one prefill chunk a step), DEEPSEEK_V32_INDEXER itself and DEEPSEEK_V41_SPARSE_INDEXER on the
 * C4 cache: the compressed slot mapping, the compressed prefill K rows (cu_seq_lens, ks/ke, the
 * chunk plan), the decode lengths // 4, the DCP interleave in states,
 * update_draft_decode_metadata and the refusals (the seeded random batches against a naive
 * restatement: test_sparse_indexer.c's test_random_compressed). Hand-checked values are worked
 * out in the comments. */
#include "test_support.h"

#define V4 "DEEPSEEK_V4_INDEXER"
#define V41 "DEEPSEEK_V41_INDEXER"
#define CPU "CPU_V4_INDEXER"
#define RATIO 4

/* 16 sequences, 16384 tokens, max_model_len 32768, 4 SMs, block table width 8. */
static attn_builder_config_t v4_config(int32_t capability, int32_t k) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 16384;
  c.max_model_len = 32768;
  c.device_capability = capability;
  c.num_speculative_tokens = k;
  c.num_sms = 4;
  c.block_table_width = 8;
  return c;
}

/* DeepseekV4IndexerCache's spec: 132 bytes a token, compress ratio 4, `block` tokens a block. */
static attn_kv_cache_spec_t v4_spec(int32_t block) {
  attn_kv_cache_spec_t s = ts_mla_spec(block);
  s.head_size = 132;
  s.dtype = ATTN_KV_DTYPE_FP8_E4M3;
  s.tokens_per_state = RATIO;
  return s;
}

/* A 1-D or 2-D (rows x 1 or rows x cols, contiguous) int32 field against `expected`. */
static void expect_flat(const attn_metadata_t* m, const char* name, const int32_t* expected,
                        int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t i;
  if (t == NULL) fail_msg("field %s is None", name);
  if (t->ndim == 1) {
    ts_expect_i32(m, name, expected, n);
    return;
  }
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0] * t->shape[1], n);
  assert_int_equal(t->strides[0], t->shape[1]);
  for (i = 0; i < n; ++i) {
    const int32_t got = ((const int32_t*)((const char*)t->data + t->byte_offset))[i];
    if (got != expected[i]) fail_msg("%s[%lld] = %d, expected %d", name, (long long)i, got,
                                     expected[i]);
  }
}

static int32_t level_of(const char* name, int32_t block, int32_t capability, int32_t k) {
  attn_kv_cache_spec_t spec = v4_spec(block);
  attn_builder_config_t c = v4_config(capability, k);
  int32_t level = -1;
  ASSERT_OK(attn_backend_cudagraph_support(name, &spec, &c, &level));
  return level;
}

/* The levels: V4 / V4.1 as DEEPSEEK_V32_INDEXER on CUDA (SM90: k = 0, 1, 3 UNIFORM_BATCH, k = 2
 * flattened ALWAYS; SM100 varlen ALWAYS); CPU_V4_INDEXER the CPU platform's (native next_n 1
 * and 2 only, no varlen kernel whatever the capability): k = 0, 1 UNIFORM_BATCH, k >= 2 ALWAYS.
 * Threshold None, no update_block_table, draft decode updates without DCP. */
static void test_levels(void** state) {
  attn_kv_cache_spec_t spec = v4_spec(256);
  attn_builder_config_t c = v4_config(100, 0);
  attn_builder_t* b;
  int32_t t = -1, supported = 0;
  (void)state;
  assert_int_equal(level_of(V4, 256, 90, 0), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_of(V4, 256, 90, 2), ATTN_CG_ALWAYS);
  assert_int_equal(level_of(V4, 256, 90, 3), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_of(V4, 256, 100, 0), ATTN_CG_ALWAYS);
  assert_int_equal(level_of(V41, 64, 90, 1), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_of(V41, 128, 100, 1), ATTN_CG_ALWAYS);
  assert_int_equal(level_of(CPU, 256, 100, 0), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_of(CPU, 256, 90, 1), ATTN_CG_UNIFORM_BATCH);
  assert_int_equal(level_of(CPU, 256, 90, 3), ATTN_CG_ALWAYS);
  b = ts_builder(CPU, &spec, &c);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &t));
  assert_int_equal(t, ATTN_NO_REORDER);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &supported));
  assert_int_equal(supported, 0);
  ASSERT_OK(attn_builder_supports_draft_decode_metadata_update(b, &supported));
  assert_int_equal(supported, 1);
  attn_builder_destroy(b);
}

/* DEEPSEEK_V4_INDEXER, SM90, k = 0: queries [1, 1, 5, 3] onto [10, 20, 30, 40], one 256-token
 * block each (ids 1..4; 64 states a block). Slot mapping: a token writes a state when (pos + 1)
 * % 4 == 0: request 1's position 19 (state 4: 2 * 64 + 4 = 132), request 2's 27 (state 6: 198),
 * request 3's 39 (state 9: 265); the others -1. Decodes (native next_n 1): [10, 20] // 4 = [2,
 * 5] as (2, 1). Prefill: K rows [30 // 4, 40 // 4] = [7, 10]: cu_seq_lens [0, 7, 17], total
 * 17, max_seqlen_k 10 (max_prefill_seq_len stays 40); ks [0 x5, 7 x3]; ke: request 2's
 * contexts 26..30 // 4 = [6, 6, 7, 7, 7], request 3's 38..40 // 4 = 7 + [9, 9, 10]. The same
 * batch under DEEPSEEK_V32_INDEXER on a 64-token compressed block (16 states): slots 2 * 16 + 4
 * = 36, 3 * 16 + 6 = 54, 4 * 16 + 9 = 73, the rest identical. */
static void test_hand_checked(void** state) {
  static const int32_t q[4] = {1, 1, 5, 3}, s[4] = {10, 20, 30, 40};
  static const int64_t slots[10] = {-1, 132, -1, -1, 198, -1, -1, -1, -1, 265};
  static const int64_t slots64[10] = {-1, 36, -1, -1, 54, -1, -1, -1, -1, 73};
  attn_kv_cache_spec_t spec = v4_spec(256);
  attn_builder_config_t c = v4_config(90, 0);
  attn_builder_t* b = ts_builder(V4, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 256, 8, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i64(m, "slot_mapping", slots, 10);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  t = ts_tensor(m, "decode_seq_lens");
  assert_int_equal(t->shape[0], 2);
  assert_int_equal(t->shape[1], 1);
  expect_flat(m, "decode_seq_lens", (int32_t[]){2, 5}, 2);
  ts_expect_i32(m, "decode_decode_lens", (int32_t[]){1, 1}, 2);
  ts_expect_none(m, "decode_global_seq_lens");
  assert_int_equal(ts_int(m, "prefill_max_prefill_seq_len"), 40);
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 1);
  ts_expect_i32(m, "prefill_chunk_token_start", (int32_t[]){2}, 1);
  ts_expect_i32(m, "prefill_chunk_token_end", (int32_t[]){10}, 1);
  ts_expect_i32(m, "prefill_chunk_total_seq_lens", (int32_t[]){17}, 1);
  ts_expect_i32(m, "prefill_chunk_max_seqlen_k", (int32_t[]){10}, 1);
  ts_expect_i32(m, "prefill_chunk_local_total_seq_lens", (int32_t[]){17}, 1);
  ts_expect_i32(m, "prefill_chunk_max_local_total_seq_lens", (int32_t[]){17}, 1);
  ts_expect_i32(m, "prefill_cu_seq_lens", (int32_t[]){0, 7, 17}, 3);
  ts_expect_i32(m, "prefill_local_cu_seq_lens", (int32_t[]){0, 7, 17}, 3);
  ts_expect_i32(m, "prefill_cu_seqlen_ks", (int32_t[]){0, 0, 0, 0, 0, 7, 7, 7}, 8);
  ts_expect_i32(m, "prefill_cu_seqlen_ke", (int32_t[]){6, 6, 7, 7, 7, 16, 16, 17}, 8);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  /* DEEPSEEK_V32_INDEXER's own compressed form on its 64-token kernel block */
  spec = v4_spec(64);
  b = ts_builder("DEEPSEEK_V32_INDEXER", &spec, &c);
  batch = ts_batch_make(q, s, 4, 64, 8, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i64(m, "slot_mapping", slots64, 10);
  expect_flat(m, "decode_seq_lens", (int32_t[]){2, 5}, 2);
  ts_expect_i32(m, "prefill_cu_seqlen_ke", (int32_t[]){6, 6, 7, 7, 7, 16, 16, 17}, 8);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* DCP 2, rank 0, interleave 8 (2 states): a decode [1] onto 21 and a prefill of 4 onto 40.
 * Slots: the decode's position 20 writes nothing; the prefill's position 39 is rank-local 39 //
 * 16 * 8 + 39 % 8 = 23, state 5 of block 2: 133. Decode: 21 is local 13 (interleave 8 in
 * tokens), // 4 = 3; global_seq_lens [21]. Prefill: K rows 10, rank 0's share with interleave
 * 2: 4 + min(max(10 - 8, 0), 2) = 6 (rank 1's 4): cu [0, 10], local [0, 6], local total 6, the
 * larger 6; ke: contexts 37..40 // 4 = [9, 9, 9, 10], rank 0's [5, 5, 5, 6]. Flattened (SM90 k
 * = 2) decodes [3] onto 21: global lengths 19, 20, 21, local 11, 12, 13, // 4: [2, 3, 3]. */
static void test_dcp(void** state) {
  static const int32_t q[2] = {1, 4}, s[2] = {21, 40}, q3[1] = {3}, s3[1] = {21};
  static const int64_t slots[5] = {-1, -1, -1, -1, 133};
  attn_kv_cache_spec_t spec = v4_spec(256);
  attn_builder_config_t c = v4_config(90, 0);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 2, 256, 8, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.decode_context_parallel_size = 2;
  c.cp_kv_cache_interleave_size = 8;
  b = ts_builder(V4, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i64(m, "slot_mapping", slots, 5);
  expect_flat(m, "decode_seq_lens", (int32_t[]){3}, 1);
  ts_expect_i32(m, "decode_global_seq_lens", (int32_t[]){21}, 1);
  ts_expect_i32(m, "prefill_cu_seq_lens", (int32_t[]){0, 10}, 2);
  ts_expect_i32(m, "prefill_local_cu_seq_lens", (int32_t[]){0, 6}, 2);
  ts_expect_i32(m, "prefill_cu_seqlen_ks", (int32_t[]){0, 0, 0, 0}, 4);
  ts_expect_i32(m, "prefill_cu_seqlen_ke", (int32_t[]){5, 5, 5, 6}, 4);
  ts_expect_i32(m, "prefill_chunk_local_total_seq_lens", (int32_t[]){6}, 1);
  ts_expect_i32(m, "prefill_chunk_max_local_total_seq_lens", (int32_t[]){6}, 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
  c.num_speculative_tokens = 2;
  b = ts_builder(V4, &spec, &c);
  batch = ts_batch_make(q3, s3, 1, 256, 8, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_flat(m, "decode_seq_lens", (int32_t[]){2, 3, 3}, 3);
  ts_expect_i32(m, "decode_global_seq_lens", (int32_t[]){19, 20, 21}, 3);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* The chunk plan in compressed rows, max_model_len 131072 (workspace 131072 * 8 * 5 // 4 =
 * 1310720 rows): one prefill of 8192 onto 131072 has 32768 K rows, 8192 x 32768 logits > 2^27:
 * DEEPSEEK_V4_INDEXER cuts it into query sub-chunks of 2^27 / 32768 = 4096 ([0, 4096),
 * [4096, 8192), the second skip_kv_gather); CPU_V4_INDEXER plans one chunk of the whole step.
 * A prefill of 2 onto 3 tokens has no K row (3 // 4 = 0): no chunk at all (vLLM's None). */
static void test_chunks(void** state) {
  static const int32_t q[1] = {8192}, s[1] = {131072}, q0[1] = {2}, s0[1] = {3};
  attn_kv_cache_spec_t spec = v4_spec(256);
  attn_builder_config_t c = v4_config(90, 0);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 1, 256, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  c.max_model_len = 131072;
  c.block_table_width = 0;
  b = ts_builder(V4, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 2);
  ts_expect_i32(m, "prefill_chunk_token_start", (int32_t[]){0, 4096}, 2);
  ts_expect_i32(m, "prefill_chunk_token_end", (int32_t[]){4096, 8192}, 2);
  ts_expect_i32(m, "prefill_chunk_skip_kv_gather", (int32_t[]){0, 1}, 2);
  ts_expect_i32(m, "prefill_chunk_total_seq_lens", (int32_t[]){32768, 32768}, 2);
  attn_builder_destroy(b);
  b = ts_builder(CPU, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 1);
  ts_expect_i32(m, "prefill_chunk_token_start", (int32_t[]){0}, 1);
  ts_expect_i32(m, "prefill_chunk_token_end", (int32_t[]){8192}, 1);
  ts_expect_i32(m, "prefill_chunk_skip_kv_gather", (int32_t[]){0}, 1);
  ts_batch_free(batch);
  batch = ts_batch_make(q0, s0, 1, 256, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_int_equal(ts_int(m, "prefill_num_chunks"), 0);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* CPU_V4_INDEXER's decode: the CPU platform has no DeepGEMM, so the schedule is the whole
 * (num_sms + 1, 2) buffer; capability 10.0 still takes the native path (no varlen kernel). */
static void test_cpu_decode(void** state) {
  static const int32_t q[2] = {1, 1}, s[2] = {9, 17};
  attn_kv_cache_spec_t spec = v4_spec(256);
  attn_builder_config_t c = v4_config(100, 0);
  attn_builder_t* b = ts_builder(CPU, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 2, 256, 8, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_flat(m, "decode_seq_lens", (int32_t[]){2, 4}, 2);
  ts_expect_none(m, "decode_indices");
  t = ts_tensor(m, "decode_schedule_metadata");
  assert_int_equal(t->shape[0], 5);
  assert_int_equal(t->shape[1], 2);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* update_draft_decode_metadata (SM90 k = 0, native): decodes [1, 1, 1] onto [11, 7, 8]: at
 * build the slots are -1, -1 and position 7's state 1 of block 3 (193), the lengths [2, 1, 2].
 * The speculator advances seq_lens to [12, 8, 9]: decode_seq_lens [3, 2, 2]; slots again with
 * the request index as query_start_loc: position 11 is state 2 of block 1 (66), position 7
 * state 1 of block 2 (129), position 8 none. */
static void test_draft_update(void** state) {
  static const int32_t q[3] = {1, 1, 1}, s[3] = {11, 7, 8};
  static const int64_t built[3] = {-1, -1, 193}, updated[3] = {66, 129, -1};
  attn_kv_cache_spec_t spec = v4_spec(256);
  attn_builder_config_t c = v4_config(90, 0);
  attn_builder_t* b = ts_builder(V4, &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 3, 256, 8, -1);
  attn_metadata_t* m = NULL;
  int i;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i64(m, "slot_mapping", built, 3);
  expect_flat(m, "decode_seq_lens", (int32_t[]){2, 1, 2}, 3);
  for (i = 0; i < 3; ++i) batch->seq[i] += 1;
  ASSERT_OK(attn_update_draft_decode_metadata(b, m, NULL));
  expect_flat(m, "decode_seq_lens", (int32_t[]){3, 2, 2}, 3);
  ts_expect_i64(m, "slot_mapping", updated, 3);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* Refusals: the DCP interleave not a multiple of the ratio (vLLM's NotImplementedError); a
 * compressed cache on a block other than the kernel block (V4's 256; V4.1's 64 on SM90, 128
 * on SM100; V3.2's 64); a ratio above the block size; a block size no multiple of the kernel
 * block. */
static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = v4_spec(256);
  attn_builder_config_t c = v4_config(90, 0);
  attn_builder_t* b = NULL;
  (void)state;
  c.decode_context_parallel_size = 2;
  c.cp_kv_cache_interleave_size = 2;
  ASSERT_ERROR(attn_builder_create(V4, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "config->cp_kv_cache_interleave_size to be a multiple of it, got 2");
  c = v4_config(90, 0);
  spec = v4_spec(512);
  ASSERT_ERROR(attn_builder_create(V4, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->block_size=512");
  spec = v4_spec(128);
  ASSERT_ERROR(attn_builder_create(V4, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->block_size=128");
  ASSERT_ERROR(attn_builder_create(V41, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->block_size=128");
  c.device_capability = 100;
  b = ts_builder(V41, &spec, &c);
  attn_builder_destroy(b);
  spec = v4_spec(128);
  ASSERT_ERROR(attn_builder_create("DEEPSEEK_V32_INDEXER", &spec, &c, &b),
               ATTN_ERR_UNSUPPORTED, "kv_cache_spec->block_size=128");
  spec = v4_spec(64);
  spec.tokens_per_state = 128;
  ASSERT_ERROR(attn_builder_create("DEEPSEEK_V32_INDEXER", &spec, &c, &b),
               ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->tokens_per_state=128");
  spec = v4_spec(256);
  spec.tokens_per_state = 0;
  spec.block_size = 384;
  ASSERT_ERROR(attn_builder_create(V4, &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->block_size=384");
  spec.block_size = 512; /* ratio 1: a multiple of the kernel block is the cache block */
  b = ts_builder(V4, &spec, &c);
  attn_builder_destroy(b);
}

/* DEEPSEEK_V41_SPARSE_INDEXER on V4.1's C4 indexer cache (SM100, block 128: 32 states a block;
 * candidates 8 x 64, MXFP4): decodes [1, 1] onto [9, 17] and a prefill of 4 onto 40 (blocks 1,
 * 2, 3). The varlen decode lengths [9 // 4, 17 // 4] = [2, 4], also the sparse decode rows'
 * row_ke (two rows of the zeroed scratch); the prefill's K rows 10: cu_seq_lens [0, 10], ke
 * contexts 37..40 // 4 = [9, 9, 9, 10], four sparse prefill rows; slots: the prefill's position
 * 39, state 9 of block 3 (3 * 32 + 9 = 105), the rest -1. The cache block must be 128. */
static void test_v41_sparse(void** state) {
  static const int32_t q[3] = {1, 1, 4}, s[3] = {9, 17, 40};
  static const int64_t slots[6] = {-1, -1, -1, -1, -1, 105};
  attn_kv_cache_spec_t spec = v4_spec(128);
  attn_builder_config_t c = v4_config(100, 0);
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 3, 128, 8, -1);
  attn_metadata_t* m = NULL;
  const attn_tensor_t* t;
  (void)state;
  spec.index_topk = 512;
  c.candidate_block_size = 64;
  c.candidate_topk_blocks = 8;
  c.indexer_kv_mxfp4 = 1;
  b = ts_builder("DEEPSEEK_V41_SPARSE_INDEXER", &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  ts_expect_i64(m, "slot_mapping", slots, 6);
  expect_flat(m, "decode_seq_lens", (int32_t[]){2, 4}, 2);
  ts_expect_i32(m, "decode_indices", (int32_t[]){0, 1}, 2);
  ts_expect_i32(m, "sparse_decode_end", (int32_t[]){0, 0}, 2);
  ts_expect_i32(m, "prefill_cu_seq_lens", (int32_t[]){0, 10}, 2);
  ts_expect_i32(m, "prefill_cu_seqlen_ke", (int32_t[]){9, 9, 9, 10}, 4);
  t = ts_tensor(m, "sparse_prefill_end");
  assert_int_equal(t->shape[0], 4);
  attn_builder_destroy(b);
  spec.block_size = 256;
  ASSERT_ERROR(attn_builder_create("DEEPSEEK_V41_SPARSE_INDEXER", &spec, &c, &b),
               ATTN_ERR_UNSUPPORTED, "kv_cache_spec->block_size=256");
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),     cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_dcp),        cmocka_unit_test(test_chunks),
      cmocka_unit_test(test_cpu_decode), cmocka_unit_test(test_draft_update),
      cmocka_unit_test(test_refusals),   cmocka_unit_test(test_v41_sparse),
  };
  return cmocka_run_group_tests_name("sparse_indexer_v4", tests, NULL, NULL);
}
