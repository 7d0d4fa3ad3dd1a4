/* Host vs CUDA for the MLA family (FLASHMLA, FLASH_ATTN_MLA, CUTLASS_MLA, FLASHINFER_MLA,
 * TRITON_MLA): the same seeded random batches through a CPU builder and a CUDA builder (device
 * tensors + host mirrors, and a device copy of dcp_local_seq_lens under DCP), every field
 * compared. This runs the device paths of src/ops/mla_prefill_metadata.cc (prefill
 * query_start_loc and query lengths), src/ops/mla_context_chunks.cc (vLLM 0.33's chunked context
 * planned again on the device: context_lens, the chunks' concatenated query_start_loc,
 * cu_seq_lens, starts, token_to_seq and the DCP padded-local arrays) and
 * src/ops/flashmla_tile_schedule.cc against their host paths, with several context chunks and continuation chunks, with DCP and
 * interleave, with speculative tokens and fp8 caches, on the 10.x prefill paths, in
 * build_for_cudagraph_capture, and vLLM 0.33's decode additions (test_decode_0_33); CPU_MLA and
 * AMX_MLA (test_cpu_platform_mla); DEEPSEEK_SPARSE_SWA (test_sparse_swa); ROCM_AITER_MLA
 * (test_rocm_aiter_mla: src/ops/aiter_mla_decode_tables.cc's one-token pages, qo_indptr and
 * varlen rows); ROCM_AITER_MLA_SPARSE (test_rocm_aiter_mla_sparse:
 * src/ops/aiter_sparse_kv_indptr.cc); DEEPSEEK_V4_COMPRESSOR and DEEPSEEK_V41_COMPRESSOR
 * (test_compressors);
 * DEEPSEEK_V41_SPARSE_INDEXER (test_v41_sparse_indexer); the compressed indexers
 * (test_compressed_indexer); the DeepSeek V4 / V4.1 sparse MLA builders (test_v4_sparse_mla)
 * and their ROCm builders' ragged rows (test_rocm_dsv4); XPU_MLA_SPARSE (test_xpu_mla_sparse).
 * Skips, saying so, when no CUDA device is visible. */
#include "gpu_support.h"

static const char* const kVariants[5] = {"FLASHMLA", "FLASH_ATTN_MLA", "CUTLASS_MLA",
                                         "FLASHINFER_MLA", "TRITON_MLA"};
static const int32_t kBlocks[5] = {64, 16, 128, 64, 16};

static int32_t dcp_local(int64_t len, int32_t dcp, int32_t rank, int32_t interleave) {
  const int64_t base = len / interleave / dcp * interleave;
  int64_t rem = len - base * dcp - (int64_t)rank * interleave;
  if (rem < 0) rem = 0;
  if (rem > interleave) rem = interleave;
  return (int32_t)(base + rem);
}

/* mode 0: build, 1: build_for_cudagraph_capture. `local` (num_reqs) is the rank's DCP lengths,
 * or NULL without DCP. */
static void compare(const char* backend, const attn_kv_cache_spec_t* spec,
                    const attn_builder_config_t* config, ts_batch* b, const int32_t* local,
                    int mode) {
  attn_builder_config_t dc = *config;
  attn_builder_t *hb, *db;
  attn_metadata_t *hm = NULL, *dm = NULL;
  tg_device_batch d;
  tg_mirrors mirrors;
  int64_t shape[1] = {b->num_reqs};
  attn_tensor_t local_h, local_d;
  char what[64];
  dc.device.device_type = ATTN_DEVICE_CUDA;
  hb = ts_builder(backend, spec, config);
  db = ts_builder(backend, spec, &dc);
  tg_device_batch_make(b, &d);
  /* the host batch carries the same host mirrors as the device batch (fields that view them,
   * such as query_start_loc_cpu, are then set on both) */
  tg_mirrors_make(b, &mirrors);
  tg_add_mirrors(b, &mirrors);
  local_d.data = NULL;
  if (local != NULL) {
    local_h = ts_host_tensor((void*)local, 1, shape, ATTN_DTYPE_INT, 32);
    local_d = local_h;
    local_d.device.device_type = ATTN_DEVICE_CUDA;
    local_d.data = tg_to_device(local, (size_t)b->num_reqs * 4);
    b->common.dcp_local_seq_lens = &local_h;
    d.common.dcp_local_seq_lens = &local_d;
    d.common.dcp_local_seq_lens_cpu = &local_h;
  }
  if (mode == 0) {
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
  } else {
    ASSERT_OK(attn_build_for_cudagraph_capture(hb, &b->common, &hm, NULL));
    ASSERT_OK(attn_build_for_cudagraph_capture(db, &d.common, &dm, NULL));
  }
  snprintf(what, sizeof what, "%s (mode %d)", backend, mode);
  tg_expect_same_metadata(hm, dm, what);
  b->common.dcp_local_seq_lens = NULL;
  b->common.query_start_loc_cpu = NULL;
  b->common.seq_lens_cpu = NULL;
  tg_mirrors_free(&mirrors);
  if (local_d.data != NULL) cudaFree(local_d.data);
  tg_device_batch_free(&d);
  attn_builder_destroy(hb);
  attn_builder_destroy(db);
}

static void test_random_batches(void** state) {
  uint64_t seed = 77;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA MLA builds")) skip();
  for (iter = 0; iter < 150; ++iter) {
    static const int32_t dcps[4] = {1, 1, 2, 4};
    const int v = (int)ts_rand_range(&seed, 0, 4);
    const int32_t block = kBlocks[v];
    attn_kv_cache_spec_t spec = ts_mla_spec(block);
    attn_builder_config_t c = ts_config();
    attn_builder_t* probe;
    int32_t q[32], s[32], local[32], threshold = 1, dq;
    int64_t n, nd, r;
    ts_batch* b;
    c.max_num_seqs = 32;
    c.max_num_batched_tokens = 32768;
    c.max_model_len = 4096;
    c.device_capability = ts_rand_range(&seed, 0, 1) ? 100 : 90; /* the 10.x prefill paths */
    /* 0.33's prefill backends (ABI 1.7): any on 10.x, AUTO or FLASH_ATTN on 9.0 */
    c.mla_prefill_backend =
        (int32_t)ts_rand_range(&seed, 0, c.device_capability == 100 ? 4 : 1);
    c.use_prefill_query_quantization = ts_rand_range(&seed, 0, 1);
    c.batch_invariant = ts_rand_range(&seed, 0, 3) == 0;
    c.decode_context_parallel_size = dcps[ts_rand_range(&seed, 0, 3)];
    c.dcp_rank = (int32_t)ts_rand_range(&seed, 0, c.decode_context_parallel_size - 1);
    if (v != 3 && ts_rand_range(&seed, 0, 2) == 0) c.cp_kv_cache_interleave_size = 2;
    c.num_speculative_tokens = (int32_t)ts_rand_range(&seed, 0, 2); /* 0.33: 1 + k decodes */
    if (v != 1 && ts_rand_range(&seed, 0, 2) == 0) { /* fp8 caches (FLASHMLA's tile buffers) */
      c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
      c.num_sms = 132;
    }
    if (ts_rand_range(&seed, 0, 1)) /* small workspaces: several chunks */
      c.mla_chunked_prefill_workspace_size = 32 * block * (int32_t)ts_rand_range(&seed, 1, 3);
    probe = ts_builder(kVariants[v], &spec, &c);
    ASSERT_OK(attn_builder_reorder_batch_threshold(probe, &threshold));
    attn_builder_destroy(probe);
    n = ts_rand_range(&seed, 1, 32);
    nd = ts_rand_range(&seed, 0, n);
    dq = (int32_t)ts_rand_range(&seed, 1, threshold < 8 ? threshold : 8);
    for (r = 0; r < n; ++r) {
      q[r] = r < nd ? dq : threshold + (int32_t)ts_rand_range(&seed, 1, 40);
      s[r] = q[r] + (ts_rand_range(&seed, 0, 3) == 0 ? 0 : (int32_t)ts_rand_range(&seed, 0, 4096 - q[r]));
      local[r] = dcp_local(s[r], c.decode_context_parallel_size, c.dcp_rank,
                           c.cp_kv_cache_interleave_size);
    }
    /* FLASHMLA's batch-invariant schedule needs a block table width that is a multiple of 64 */
    b = ts_batch_make(q, s, n, block, 4096 / block >= 64 ? 4096 / block : 64, -1);
    compare(kVariants[v], &spec, &c, b, c.decode_context_parallel_size > 1 ? local : NULL, 0);
    ts_batch_free(b);
  }
}

/* The chunked context alone: all-prefill TRITON_MLA batches with small workspaces (several and
 * continuation chunks), DCP sizes 1-4 with interleaves that divide the block, upper bounds above
 * the exact lengths on some rows (the contexts the kernel gets are the host's). */
static void test_context_chunks(void** state) {
  uint64_t seed = 2033;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA MLA chunked context")) skip();
  for (iter = 0; iter < 200; ++iter) {
    static const int32_t blocks[3] = {16, 32, 64}, dcps[4] = {1, 2, 3, 4};
    const int32_t block = blocks[ts_rand_range(&seed, 0, 2)];
    const int32_t dcp = dcps[ts_rand_range(&seed, 0, 3)];
    int32_t il = dcp > 1 ? (int32_t)(1 << ts_rand_range(&seed, 0, 3)) : 1;
    attn_kv_cache_spec_t spec = ts_mla_spec(block);
    attn_builder_config_t c = ts_config();
    int32_t q[32], s[32], bound[32], max_bound = 0;
    int64_t n, r, a, w, shape[1];
    attn_tensor_t bound_t;
    ts_batch* b;
    a = block;
    if (dcp > 1) {
      int64_t x = a, y = (int64_t)dcp * il;
      while (y) { const int64_t t = x % y; x = y; y = t; }
      a = a / x * dcp * il;
    }
    w = a * ts_rand_range(&seed, 1, 6);
    c.max_num_seqs = 32;
    c.max_num_batched_tokens = 32768;
    c.max_model_len = (int32_t)(3 * w + 64);
    c.decode_context_parallel_size = dcp;
    c.cp_kv_cache_interleave_size = il;
    c.mla_chunked_prefill_workspace_size = (int32_t)w;
    n = ts_rand_range(&seed, 1, 32);
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 2, 40);
      s[r] = q[r] + (ts_rand_range(&seed, 0, 3) == 0 ? 0 : (int32_t)ts_rand_range(&seed, 1, 3 * w));
      /* vLLM 0.33 plans from seq_lens_cpu_upper_bound: optimistic on some rows, so the kernel
       * must use the host's context lengths, not the device seq_lens */
      bound[r] = s[r] + (ts_rand_range(&seed, 0, 3) == 0 ? (int32_t)ts_rand_range(&seed, 1, 3) : 0);
      if (bound[r] > max_bound) max_bound = bound[r];
    }
    b = ts_batch_make(q, s, n, block, 0, -1);
    shape[0] = n;
    bound_t = ts_host_tensor(bound, 1, shape, ATTN_DTYPE_INT, 32);
    b->common.seq_lens_cpu_upper_bound = &bound_t;
    b->common.max_seq_len = max_bound;
    compare("TRITON_MLA", &spec, &c, b, NULL, 0);
    ts_batch_free(b);
  }
}

/* Decode-only capture batches (the persistent buffers a graph reads). */
static void test_capture(void** state) {
  static const int32_t q1[4] = {1, 1, 1, 1}, s1[4] = {100, 7, 64, 300};
  static const int32_t q2[3] = {2, 2, 2}, s2[3] = {50, 3, 900};
  attn_builder_config_t c = ts_config();
  ts_batch* b;
  attn_kv_cache_spec_t spec;
  int v;
  (void)state;
  if (!tg_have_gpu("the MLA capture builds")) skip();
  c.batch_invariant = 1; /* FLASHMLA's fixed tile schedule on both sides */
  for (v = 0; v < 5; ++v) {
    spec = ts_mla_spec(kBlocks[v]);
    b = ts_batch_make(q1, s1, 4, kBlocks[v], 4096 / kBlocks[v] >= 64 ? 4096 / kBlocks[v] : 64, -1);
    compare(kVariants[v], &spec, &c, b, NULL, 1);
    ts_batch_free(b);
  }
  spec = ts_mla_spec(64);
  b = ts_batch_make(q2, s2, 3, 64, 64, -1);
  compare("FLASHMLA", &spec, &c, b, NULL, 1); /* spec decode: 2-token decodes */
  ts_batch_free(b);
}

/* vLLM 0.33's decode additions on the device: FLASHINFER_MLA's and TRITON_MLA's non-causal
 * uniform block (all decodes), FLASHINFER_MLA's decode query_start_loc view, FLASHMLA's fp8
 * tile-scheduler buffers under full graphs (device memory, zeroed, compared whole; as a build
 * and as a capture build). */
static void test_decode_0_33(void** state) {
  static const int32_t q[3] = {3, 3, 0}, s[3] = {40, 9, 0};
  static const int32_t q1[3] = {1, 1, 1}, s1[3] = {700, 5, 64};
  attn_builder_config_t c = ts_config();
  attn_kv_cache_spec_t spec = ts_mla_spec(64);
  ts_batch* b;
  int v, mode;
  (void)state;
  if (!tg_have_gpu("the MLA 0.33 decode builds")) skip();
  for (mode = 0; mode < 2; ++mode) {
    for (v = 3; v < 5 && mode == 0; ++v) { /* capture: decode-only, max_query_len <= 1 */
      b = ts_batch_make(q, s, 3, 64, 0, -1);
      b->common.causal = 0;
      compare(kVariants[v], &spec, &c, b, NULL, mode);
      ts_batch_free(b);
    }
    c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
    c.num_sms = 132;
    b = ts_batch_make(q1, s1, 3, 64, 0, -1);
    compare("FLASHMLA", &spec, &c, b, NULL, mode);
    ts_batch_free(b);
    c.cache_dtype = ATTN_KV_DTYPE_AUTO;
  }
}

/* seq_lens_cpu_upper_bound as vLLM 0.33's async spec decoding gives it, on one batch in two:
 * one row in three exceeds its exact length by 1-3 (at most `cap`), max_seq_len the bound's
 * maximum; the host plans (and, on CUDA, stages and uploads) from it. Drawn from its own seed,
 * so the batches stay those drawn before the bound was added. */
static void optimistic_bound(ts_batch* b, const int32_t* s, int32_t cap, uint64_t* seed,
                             int32_t* bound, int64_t* shape, attn_tensor_t* t) {
  int64_t r;
  if (ts_rand_range(seed, 0, 1) == 0) return;
  for (r = 0; r < b->num_reqs; ++r) {
    bound[r] = s[r];
    if (ts_rand_range(seed, 0, 2) == 0) bound[r] += (int32_t)ts_rand_range(seed, 1, 3);
    if (bound[r] > cap) bound[r] = cap;
    if (bound[r] > b->common.max_seq_len) b->common.max_seq_len = bound[r];
  }
  shape[0] = b->num_reqs;
  *t = ts_host_tensor(bound, 1, shape, ATTN_DTYPE_INT, 32);
  b->common.seq_lens_cpu_upper_bound = t;
}

/* FLASHMLA_SPARSE host vs CUDA: req_id_per_token (compute_token_to_req_indices), the prefill
 * part and its chunked context, and the fp8 paths: the mixed batch (16 heads: max_model_len
 * tensor filled at create) and the separate prefill/decode (64 heads:
 * src/ops/sparse_mla_metadata.cc's prefill request ids and chunk-relative workspace starts,
 * with max_model_len 256 so that the 5 x 256-row workspace splits into several chunks), with
 * spec decode, DCP on 16 heads, capture builds and optimistic upper bounds (the fp8 workspace
 * starts' kernel reads the bound's uploaded rows). */
static void test_sparse(void** state) {
  uint64_t seed = 19, bseed = 1919;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA FLASHMLA_SPARSE builds")) skip();
  for (iter = 0; iter < 120; ++iter) {
    const int32_t heads = ts_rand_range(&seed, 0, 1) ? 64 : 16;
    const int32_t mml = ts_rand_range(&seed, 0, 1) ? 256 : 4096;
    attn_kv_cache_spec_t spec = ts_mla_spec(64);
    attn_builder_config_t c = ts_config();
    int32_t q[32], s[32], local[32], dq, bound[32];
    int64_t n, nd, r, bshape[1];
    attn_tensor_t bound_t;
    ts_batch* b;
    spec.index_topk = ts_rand_range(&seed, 0, 1) ? 0 : 128;
    c.max_num_seqs = 32;
    c.max_num_batched_tokens = 32768;
    c.max_model_len = mml;
    c.num_attention_heads = heads;
    c.model_dtype = ATTN_KV_DTYPE_BFLOAT16;
    c.num_speculative_tokens = (int32_t)ts_rand_range(&seed, 0, 2);
    if (ts_rand_range(&seed, 0, 2) != 0) c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
    if (heads == 16 && ts_rand_range(&seed, 0, 2) == 0) {
      c.decode_context_parallel_size = 2;
      c.dcp_rank = (int32_t)ts_rand_range(&seed, 0, 1);
    }
    n = ts_rand_range(&seed, 1, 32);
    nd = ts_rand_range(&seed, 0, n);
    dq = (int32_t)ts_rand_range(&seed, 1, 3); /* below every threshold (128 or 256) */
    for (r = 0; r < n; ++r) {
      q[r] = r < nd ? dq : 4 + (int32_t)ts_rand_range(&seed, 0, 40);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, mml - q[r]);
      local[r] = dcp_local(s[r], c.decode_context_parallel_size, c.dcp_rank, 1);
    }
    b = ts_batch_make(q, s, n, 64, 0, -1);
    optimistic_bound(b, s, mml, &bseed, bound, bshape, &bound_t);
    compare("FLASHMLA_SPARSE", &spec, &c, b, c.decode_context_parallel_size > 1 ? local : NULL,
            nd == n && ts_rand_range(&seed, 0, 1));
    ts_batch_free(b);
  }
}

/* DEEPSEEK_V32_INDEXER, host vs CUDA (src/ops/sparse_indexer_metadata.cc: the prefill groups
 * planned again by one thread, cu_seq_lens, DCP-local cu_seq_lens, cu_seqlen_ks/ke; the decode
 * tensors on the native, native MTP, flattened and SM100 varlen paths), with speculative tokens,
 * DCP, logits budgets that split a group into query sub-chunks and optimistic upper bounds (the
 * groups planned from the bound's uploaded rows). */
static void test_indexer(void** state) {
  uint64_t seed = 32, bseed = 3232;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA DEEPSEEK_V32_INDEXER builds")) skip();
  for (iter = 0; iter < 120; ++iter) {
    attn_kv_cache_spec_t spec = ts_mla_spec(64);
    attn_builder_config_t c = ts_config();
    int32_t q[32], s[32], local[32], bound[32];
    int64_t n, nd, r, bshape[1];
    attn_tensor_t bound_t;
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 3);
    const int uniform = (int)ts_rand_range(&seed, 0, 1);
    ts_batch* b;
    spec.head_size = 132;
    c.max_num_seqs = 32;
    c.max_num_batched_tokens = 32768;
    c.max_model_len = 40000;
    c.num_sms = 132;
    c.num_speculative_tokens = k;
    c.device_capability = ts_rand_range(&seed, 0, 2) == 0 ? 100 : 90;
    if (ts_rand_range(&seed, 0, 2) == 0) {
      c.decode_context_parallel_size = (int32_t)(2 * ts_rand_range(&seed, 1, 2));
      c.dcp_rank = (int32_t)ts_rand_range(&seed, 0, c.decode_context_parallel_size - 1);
      c.cp_kv_cache_interleave_size = ts_rand_range(&seed, 0, 1) ? 16 : 1;
    }
    n = ts_rand_range(&seed, 1, iter % 4 == 0 ? 6 : 32); /* <= 32768 tokens */
    nd = ts_rand_range(&seed, 0, n);
    for (r = 0; r < n; ++r) {
      q[r] = r < nd ? (uniform ? 1 + k : 1 + (int32_t)ts_rand_range(&seed, 0, k))
                    : 2 + k + (int32_t)ts_rand_range(&seed, 0, iter % 4 == 0 ? 4000 : 60);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 36000 - q[r]);
      local[r] = dcp_local(s[r], c.decode_context_parallel_size, c.dcp_rank,
                           c.cp_kv_cache_interleave_size);
    }
    b = ts_batch_make(q, s, n, 64, 0, -1);
    c.block_table_width = (int32_t)b->width;
    optimistic_bound(b, s, c.max_model_len, &bseed, bound, bshape, &bound_t);
    compare("DEEPSEEK_V32_INDEXER", &spec, &c, b,
            c.decode_context_parallel_size > 1 ? local : NULL, 0);
    ts_batch_free(b);
  }
}

/* CPU_MLA and AMX_MLA host vs CUDA: the MLA base on the CPU platform's prefill backend, and
 * AMX_MLA's attributes (src/ops/cpu_mla_ops.cc: the expanded int32/int64 req_to_token, the int64
 * arange indices, extend lengths and starts), random decode/prefill batches with DCP. */
static void test_cpu_platform_mla(void** state) {
  uint64_t seed = 93;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA CPU_MLA/AMX_MLA builds")) skip();
  for (iter = 0; iter < 80; ++iter) {
    const int amx = iter % 2;
    const int32_t block = amx ? 32 : 16;
    attn_kv_cache_spec_t spec = ts_mla_spec(block);
    attn_builder_config_t c = ts_config();
    int32_t q[32], s[32], local[32];
    int64_t n, nd, r;
    ts_batch* b;
    c.max_num_seqs = 32;
    c.max_num_batched_tokens = 32768;
    c.max_model_len = 4096;
    c.num_sms = 8;
    c.decode_context_parallel_size = ts_rand_range(&seed, 0, 3) == 0 ? 2 : 1;
    c.dcp_rank = (int32_t)ts_rand_range(&seed, 0, c.decode_context_parallel_size - 1);
    n = ts_rand_range(&seed, 1, 32);
    nd = ts_rand_range(&seed, 0, n);
    for (r = 0; r < n; ++r) {
      q[r] = r < nd ? 1 : (int32_t)ts_rand_range(&seed, 2, 40);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 4096 - q[r]);
      local[r] = dcp_local(s[r], c.decode_context_parallel_size, c.dcp_rank, 1);
    }
    b = ts_batch_make(q, s, n, block, 4096 / block, -1);
    compare(amx ? "AMX_MLA" : "CPU_MLA", &spec, &c, b,
            c.decode_context_parallel_size > 1 ? local : NULL, 0);
    ts_batch_free(b);
  }
}

/* ROCM_AITER_MLA, host vs CUDA: speculative decodes (uniform, with dummy rows padded to a
 * captured token count, or varlen under adaptive verification), prefills, full graphs or none,
 * block sizes 1 and 16. */
static void test_rocm_aiter_mla(void** state) {
  uint64_t seed = 61;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA ROCM_AITER_MLA builds")) skip();
  for (iter = 0; iter < 120; ++iter) {
    const int32_t block = iter % 3 == 0 ? 1 : 16;
    const int k = iter % 2 ? 2 : 0, adaptive = k && iter % 4 == 1;
    attn_kv_cache_spec_t spec = ts_mla_spec(block);
    attn_builder_config_t c = ts_config();
    int32_t q[32], s[32];
    int64_t n, nd, nz = 0, r, padded = -1;
    ts_batch* b;
    c.max_num_seqs = 32;
    c.max_num_batched_tokens = 32768;
    c.max_model_len = 2048;
    c.num_speculative_tokens = k;
    c.enable_adaptive_verification = adaptive;
    c.cudagraph_mode = iter % 5 < 2 ? ATTN_CUDAGRAPH_MODE_NONE : ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
    n = ts_rand_range(&seed, 1, 32);
    nd = ts_rand_range(&seed, 0, n);
    if (k && !adaptive && nd == n && n > 1 && iter % 8 == 3) nz = ts_rand_range(&seed, 1, n - 1);
    for (r = 0; r < n; ++r) {
      if (r < nd)
        q[r] = r >= nd - nz ? 0 : adaptive ? (int32_t)ts_rand_range(&seed, 1, 1 + k) : 1 + k;
      else
        q[r] = (int32_t)ts_rand_range(&seed, 2 + k, 40);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 2000 - q[r]);
      if (q[r] == 0) s[r] = 0;
    }
    if (nz) padded = (int64_t)n * (1 + k); /* dummy rows: a captured token count */
    b = ts_batch_make(q, s, n, block, 0, padded);
    compare("ROCM_AITER_MLA", &spec, &c, b, NULL, 0);
    ts_batch_free(b);
  }
}

/* ROCM_AITER_MLA_SPARSE, host vs CUDA (src/ops/aiter_sparse_kv_indptr.cc: the per-token sparse
 * lengths' cumsum and its tail): varlen decodes (k = 0 or 2), prefills that fit the top-k (the
 * dense-MHA variant, decodes only) or not, padded token tails, sink layers (no prefill part), an
 * fp8 cache, small workspaces (unaligned context chunks). */
static void test_rocm_aiter_mla_sparse(void** state) {
  uint64_t seed = 67;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA ROCM_AITER_MLA_SPARSE builds")) skip();
  for (iter = 0; iter < 120; ++iter) {
    static const int32_t topks[3] = {32, 256, 2048};
    const int32_t block = iter % 3 == 0 ? 64 : 16;
    const int k = iter % 2 ? 2 : 0;
    attn_kv_cache_spec_t spec = ts_mla_spec(block);
    attn_builder_config_t c = ts_config();
    attn_per_layer_params_t layers[2] = {ATTN_PER_LAYER_PARAMS_INIT, ATTN_PER_LAYER_PARAMS_INIT};
    int32_t q[32], s[32];
    int64_t n, nd, r, tokens = 0;
    ts_batch* b;
    spec.index_topk = topks[ts_rand_range(&seed, 0, 2)];
    c.max_num_seqs = 32;
    c.max_num_batched_tokens = 4096;
    c.max_model_len = 2048;
    c.num_attention_heads = iter % 4 == 0 ? 20 : 16;
    c.model_dtype = ATTN_KV_DTYPE_BFLOAT16;
    c.num_sms = 304;
    c.num_speculative_tokens = k;
    if (iter % 5 == 1) {
      c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
      spec.dtype = ATTN_KV_DTYPE_FP8_E4M3;
    }
    if (iter % 7 == 2) { /* sinks on the first layer (no prefill part) or the second */
      layers[iter % 14 == 2 ? 0 : 1].has_sinks = 1;
      c.layers = layers;
      c.num_layers = 2;
    }
    if (ts_rand_range(&seed, 0, 1)) c.mla_chunked_prefill_workspace_size = 100 + 37 * (iter % 5);
    n = ts_rand_range(&seed, 1, 32);
    nd = ts_rand_range(&seed, 0, n);
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)(r < nd ? ts_rand_range(&seed, 1, 1 + k) : ts_rand_range(&seed, 2 + k, 40));
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, iter % 3 ? 2000 - q[r] : 20);
      tokens += q[r];
    }
    b = ts_batch_make(q, s, n, block, 0, iter % 6 == 5 ? tokens + 3 : -1);
    compare("ROCM_AITER_MLA_SPARSE", &spec, &c, b, NULL, 0);
    ts_batch_free(b);
  }
}

/* KPOOL_TAIL, host vs CUDA (src/ops/sparse_indexer_metadata.cc's kpool tail slot mapping):
 * random batches with positions, some requests on the null block, padded token tails. */
static void test_kpool_tail(void** state) {
  uint64_t seed = 53;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA KPOOL_TAIL builds")) skip();
  for (iter = 0; iter < 60; ++iter) {
    attn_kv_cache_spec_t spec = ts_mla_spec(16 << ts_rand_range(&seed, 0, 3));
    attn_builder_config_t c = ts_config(), dc;
    int32_t q[32], s[32];
    int64_t pos[4096], shape[1], n = ts_rand_range(&seed, 1, 32), r, t = 0, tokens = 0;
    attn_builder_t *hb, *db;
    attn_metadata_t *hm = NULL, *dm = NULL;
    attn_tensor_t ph, pd;
    tg_device_batch d;
    ts_batch* b;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 1, 100);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 2000);
      tokens += q[r];
    }
    b = ts_batch_make(q, s, n, spec.block_size, 0, tokens + ts_rand_range(&seed, 0, 7));
    for (r = 0; r < n; ++r) {
      int32_t k;
      if (ts_rand_range(&seed, 0, 4) == 0) b->bt[r * b->width] = 0;
      for (k = 0; k < q[r]; ++k) pos[t++] = s[r] - q[r] + k;
    }
    while (t < b->num_tokens) pos[t++] = 0;
    shape[0] = b->num_tokens;
    ph = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
    pd = ph;
    pd.device.device_type = ATTN_DEVICE_CUDA;
    pd.data = tg_to_device(pos, (size_t)b->num_tokens * 8);
    dc = c;
    dc.device.device_type = ATTN_DEVICE_CUDA;
    hb = ts_builder("KPOOL_TAIL", &spec, &c);
    db = ts_builder("KPOOL_TAIL", &spec, &dc);
    tg_device_batch_make(b, &d);
    b->common.positions = &ph;
    d.common.positions = &pd;
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
    tg_expect_same_metadata(hm, dm, "KPOOL_TAIL");
    cudaFree(pd.data);
    tg_device_batch_free(&d);
    attn_builder_destroy(hb);
    attn_builder_destroy(db);
    ts_batch_free(b);
  }
}

/* DEEPSEEK_SPARSE_SWA and its family (sparse_swa.cc) host vs CUDA (src/ops/sparse_swa_metadata.cc:
 * is_valid_token, the decode and prefill window rows, the prefill gather lengths): random
 * decode/prefill batches with padded slots and padding tokens, windows 4 to 256, block sizes 32
 * to 256, the family's members in turn. */
static void test_sparse_swa(void** state) {
  static const int32_t windows[4] = {4, 64, 128, 256}, blocks[3] = {32, 64, 256};
  static const char* const names[6] = {
      "DEEPSEEK_SPARSE_SWA",     "DEEPSEEK_SPARSE_SWA_FLASHMLA",     "DEEPSEEK_SPARSE_SWA_FLASHINFER",
      "DEEPSEEK_V41_SPARSE_SWA", "DEEPSEEK_V41_SPARSE_SWA_FLASHMLA", "DEEPSEEK_V41_SPARSE_SWA_FLASHINFER"};
  uint64_t seed = 45;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA DEEPSEEK_SPARSE_SWA builds")) skip();
  for (iter = 0; iter < 120; ++iter) {
    attn_kv_cache_spec_t spec = ts_mla_spec(blocks[iter % 3]);
    attn_builder_config_t c = ts_config();
    int32_t q[32], s[32];
    int64_t n, nd, r, tokens = 0;
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 3);
    const int capture = iter % 5 == 0;
    ts_batch* b;
    spec.kind = ATTN_KV_SLIDING_WINDOW;
    spec.head_size = 512;
    spec.sliding_window = windows[ts_rand_range(&seed, 0, 3)];
    c.num_speculative_tokens = k;
    n = ts_rand_range(&seed, 1, 32);
    /* a capture build takes a uniform batch (UNIFORM_BATCH): all decodes of 1 + k tokens */
    nd = capture ? n : ts_rand_range(&seed, 0, n);
    for (r = 0; r < n; ++r) {
      q[r] = capture ? 1 + k
             : r < nd ? 1 + (int32_t)ts_rand_range(&seed, 0, k)
                      : 2 + k + (int32_t)ts_rand_range(&seed, 0, 200);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 3000);
      tokens += q[r];
    }
    b = ts_batch_make(q, s, n, spec.block_size, 0, tokens + ts_rand_range(&seed, 0, 4));
    for (r = 0; r < tokens; ++r)
      if (ts_rand_range(&seed, 0, 15) == 0) b->slots[r] = ATTN_PAD_SLOT_ID;
    compare(names[iter % 6], &spec, &c, b, NULL, capture);
    ts_batch_free(b);
  }
}

/* DEEPSEEK_V4_COMPRESSOR / DEEPSEEK_V41_COMPRESSOR, host vs CUDA (src/ops/compressor_metadata.cc:
 * V4's in-place clamp of the block table, V4.1's ring slot mapping; token_to_req_indices):
 * random batches with -1 table entries (V4), requests on the null block and padded token tails
 * (V4.1), the host seq_lens as the upper bound (c128_boundary). */
static void test_compressors(void** state) {
  uint64_t seed = 61;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA DEEPSEEK_V4/V41_COMPRESSOR builds")) skip();
  for (iter = 0; iter < 80; ++iter) {
    const int v41 = iter % 2;
    const char* name = v41 ? "DEEPSEEK_V41_COMPRESSOR" : "DEEPSEEK_V4_COMPRESSOR";
    attn_kv_cache_spec_t spec = v41 ? ts_spec() : ts_mla_spec(4 << ts_rand_range(&seed, 0, 1));
    attn_builder_config_t c = ts_config(), dc;
    int32_t q[32], s[32];
    int64_t pos[4096], shape[1], nshape[1], n = ts_rand_range(&seed, 1, 32), r, t = 0, tokens = 0;
    attn_builder_t *hb, *db;
    attn_metadata_t *hm = NULL, *dm = NULL;
    attn_tensor_t ph, pd, ub;
    tg_device_batch d;
    ts_batch* b;
    if (v41) spec.block_size = 8 << ts_rand_range(&seed, 0, 1);
    c.platform_rocm = (int32_t)ts_rand_range(&seed, 0, 1);
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 1, 100);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 2000);
      tokens += q[r];
    }
    b = ts_batch_make(q, s, n, spec.block_size, 0, tokens + (v41 ? ts_rand_range(&seed, 0, 7) : 0));
    b->common.num_actual_tokens = tokens;
    for (r = 0; r < n; ++r) {
      int32_t k;
      if (v41 && ts_rand_range(&seed, 0, 4) == 0) b->bt[r * b->width] = 0;
      for (k = 0; !v41 && k < b->width; ++k)
        if (b->bt[r * b->width + k] == 0) b->bt[r * b->width + k] = -1;
      for (k = 0; k < q[r]; ++k) pos[t++] = s[r] - q[r] + k;
    }
    while (t < b->num_tokens) pos[t++] = 0;
    shape[0] = b->num_tokens;
    nshape[0] = n;
    ph = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
    ub = ts_host_tensor(b->seq, 1, nshape, ATTN_DTYPE_INT, 32);
    pd = ph;
    pd.device.device_type = ATTN_DEVICE_CUDA;
    pd.data = tg_to_device(pos, (size_t)b->num_tokens * 8);
    dc = c;
    dc.device.device_type = ATTN_DEVICE_CUDA;
    hb = ts_builder(name, &spec, &c);
    db = ts_builder(name, &spec, &dc);
    tg_device_batch_make(b, &d);
    d.common.num_actual_tokens = tokens;
    b->common.positions = &ph;
    d.common.positions = &pd;
    b->common.seq_lens_cpu_upper_bound = &ub;
    d.common.seq_lens_cpu_upper_bound = &ub;
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
    tg_expect_same_metadata(hm, dm, name);
    cudaFree(pd.data);
    tg_device_batch_free(&d);
    attn_builder_destroy(hb);
    attn_builder_destroy(db);
    ts_batch_free(b);
  }
}

/* DEEPSEEK_V41_SPARSE_INDEXER host vs CUDA (src/ops/sparse_indexer_metadata.cc's prefill arrays
 * with the chunker's min_split_seq_len clamp, the SM100 varlen decode tensors, the zeroed sparse
 * row scratch): random decode/prefill batches, candidates 8 x 64 to 32 x 256, short
 * max_model_len so that the clamp splits the prefills into several groups. */
static void test_v41_sparse_indexer(void** state) {
  static const int32_t cands[4][2] = {{64, 8}, {8, 64}, {128, 16}, {256, 32}};
  uint64_t seed = 67;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA DEEPSEEK_V41_SPARSE_INDEXER builds")) skip();
  for (iter = 0; iter < 60; ++iter) {
    const int32_t* cd = cands[ts_rand_range(&seed, 0, 3)];
    attn_kv_cache_spec_t spec = ts_mla_spec(128);
    attn_builder_config_t c = ts_config();
    int32_t q[16], s[16];
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 3);
    int64_t n = ts_rand_range(&seed, 1, 16), nd = ts_rand_range(&seed, 0, n), r;
    ts_batch* b;
    spec.head_size = 132;
    spec.dtype = ATTN_KV_DTYPE_FP8_E4M3;
    spec.index_topk = 512;
    c.max_num_seqs = 16;
    c.max_num_batched_tokens = 4096;
    c.max_model_len = 1024 << ts_rand_range(&seed, 0, 2);
    c.device_capability = 100;
    c.num_sms = 8;
    c.num_speculative_tokens = k;
    c.candidate_block_size = cd[0];
    c.candidate_topk_blocks = cd[1];
    c.indexer_kv_mxfp4 = 1;
    for (r = 0; r < n; ++r) {
      q[r] = r < nd ? 1 + (int32_t)ts_rand_range(&seed, 0, k)
                    : 2 + k + (int32_t)ts_rand_range(&seed, 0, 100);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, c.max_model_len - 128 - q[r]);
    }
    b = ts_batch_make(q, s, n, 128, 0, -1);
    compare("DEEPSEEK_V41_SPARSE_INDEXER", &spec, &c, b, NULL, 0);
    ts_batch_free(b);
  }
}

/* Host vs CUDA of `name` on `b` with the tokens' positions `pos` (`tokens` of them, host memory;
 * a device copy for the CUDA builder), through build or (`capture`) build_for_cudagraph_capture. */
static void compare_with_positions(const char* name, const attn_kv_cache_spec_t* spec,
                                   const attn_builder_config_t* config, ts_batch* b,
                                   int64_t* pos, int64_t tokens, int capture) {
  attn_builder_config_t dc = *config;
  attn_builder_t *hb, *db;
  attn_metadata_t *hm = NULL, *dm = NULL;
  attn_tensor_t ph, pd;
  tg_device_batch d;
  tg_mirrors mirrors;
  int64_t shape[1];
  shape[0] = tokens;
  ph = ts_host_tensor(pos, 1, shape, ATTN_DTYPE_INT, 64);
  pd = ph;
  pd.device.device_type = ATTN_DEVICE_CUDA;
  pd.data = tg_to_device(pos, (size_t)tokens * 8);
  dc.device.device_type = ATTN_DEVICE_CUDA;
  hb = ts_builder(name, spec, config);
  db = ts_builder(name, spec, &dc);
  tg_device_batch_make(b, &d);
  tg_mirrors_make(b, &mirrors); /* as in compare() */
  tg_add_mirrors(b, &mirrors);
  b->common.positions = &ph;
  d.common.positions = &pd;
  if (capture) {
    ASSERT_OK(attn_build_for_cudagraph_capture(hb, &b->common, &hm, NULL));
    ASSERT_OK(attn_build_for_cudagraph_capture(db, &d.common, &dm, NULL));
  } else {
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, &hm, NULL));
    ASSERT_OK(attn_build(db, 0, &d.common, 0, &dm, NULL));
  }
  tg_expect_same_metadata(hm, dm, name);
  b->common.positions = NULL;
  b->common.query_start_loc_cpu = NULL;
  b->common.seq_lens_cpu = NULL;
  tg_mirrors_free(&mirrors);
  cudaFree(pd.data);
  tg_device_batch_free(&d);
  attn_builder_destroy(hb);
  attn_builder_destroy(db);
}

/* The compressed indexer (tokens_per_state 4) host vs CUDA: DEEPSEEK_V4_INDEXER (block 256),
 * DEEPSEEK_V41_INDEXER (64 on SM90, 128 on SM100) and DEEPSEEK_V41_SPARSE_INDEXER (128): the
 * compressed slot mapping with DCP positions (src/ops/v4_sparse_mla_metadata.cc), the prefill
 * arrays in compressed rows with the interleave in states and the decode lengths // 4
 * (src/ops/sparse_indexer_metadata.cc); random decode/prefill batches, DCP 2/4 with interleave
 * 4/16 on the dense ones. */
static void test_compressed_indexer(void** state) {
  uint64_t seed = 404;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA compressed indexer builds")) skip();
  for (iter = 0; iter < 90; ++iter) {
    const int which = iter % 3; /* V4, V4.1, V4.1 sparse */
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 3);
    const int32_t cap = which == 2 || ts_rand_range(&seed, 0, 1) ? 100 : 90;
    const int32_t block = which == 0 ? 256 : cap == 90 ? 64 : 128;
    attn_kv_cache_spec_t spec = ts_mla_spec(block);
    attn_builder_config_t c = ts_config();
    int32_t q[16], s[16], local[16];
    int64_t n = ts_rand_range(&seed, 1, 16), nd = ts_rand_range(&seed, 0, n), r;
    ts_batch* b;
    spec.head_size = 132;
    spec.dtype = ATTN_KV_DTYPE_FP8_E4M3;
    spec.tokens_per_state = 4;
    spec.index_topk = 512;
    c.max_num_seqs = 16;
    c.max_num_batched_tokens = 8192;
    c.max_model_len = 16384;
    c.device_capability = cap;
    c.num_sms = 8;
    c.num_speculative_tokens = k;
    if (which == 2) {
      c.candidate_block_size = 64;
      c.candidate_topk_blocks = 8;
      c.indexer_kv_mxfp4 = 1;
    } else if (ts_rand_range(&seed, 0, 2) == 0) {
      c.decode_context_parallel_size = (int32_t)(2 * ts_rand_range(&seed, 1, 2));
      c.dcp_rank = (int32_t)ts_rand_range(&seed, 0, c.decode_context_parallel_size - 1);
      c.cp_kv_cache_interleave_size = ts_rand_range(&seed, 0, 1) ? 16 : 4;
    }
    for (r = 0; r < n; ++r) {
      q[r] = r < nd ? 1 + (int32_t)ts_rand_range(&seed, 0, k)
                    : 2 + k + (int32_t)ts_rand_range(&seed, 0, 300);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 16000 - q[r]);
      local[r] = dcp_local(s[r], c.decode_context_parallel_size, c.dcp_rank,
                           c.cp_kv_cache_interleave_size);
    }
    b = ts_batch_make(q, s, n, block, 0, -1);
    c.block_table_width = (int32_t)b->width;
    compare(which == 0 ? "DEEPSEEK_V4_INDEXER" : which == 1 ? "DEEPSEEK_V41_INDEXER"
                                                             : "DEEPSEEK_V41_SPARSE_INDEXER",
            &spec, &c, b, c.decode_context_parallel_size > 1 ? local : NULL, 0);
    ts_batch_free(b);
  }
}

/* DeepSeek V4 / V4.1 sparse MLA host vs CUDA (src/ops/v4_sparse_mla_metadata.cc: the block
 * table clamp, the compressed slot mapping, the C128A decode and prefill rows): random batches
 * with positions, negative block table entries and padded slots, compress ratios 1, 2, 4, 128,
 * on FLASHMLA_SPARSE_DSV4 (and FLASHMLA_SPARSE_DSV41 at ratios 1 and 2). */
static void test_v4_sparse_mla(void** state) {
  static const int32_t ratios[4] = {1, 2, 4, 128};
  uint64_t seed = 71;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA DeepSeek V4 sparse MLA builds")) skip();
  for (iter = 0; iter < 80; ++iter) {
    const int32_t ratio = ratios[iter % 4], k = (int32_t)ts_rand_range(&seed, 0, 3);
    const char* name =
        ratio <= 2 && iter % 8 < 4 ? "FLASHMLA_SPARSE_DSV41" : "FLASHMLA_SPARSE_DSV4";
    attn_kv_cache_spec_t spec = ts_mla_spec(256);
    attn_builder_config_t c = ts_config();
    int32_t q[32], s[32];
    int64_t pos[8192], n = ts_rand_range(&seed, 1, 32), nd, r, t = 0, tokens = 0;
    ts_batch* b;
    spec.head_size = 512;
    spec.tokens_per_state = ratio;
    c.num_speculative_tokens = k;
    c.max_model_len = 16384;
    nd = ts_rand_range(&seed, 0, n);
    for (r = 0; r < n; ++r) {
      q[r] = r < nd ? 1 + (int32_t)ts_rand_range(&seed, 0, k)
                    : 2 + k + (int32_t)ts_rand_range(&seed, 0, 200);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 12000);
      tokens += q[r];
    }
    b = ts_batch_make(q, s, n, 256, 0, -1);
    for (r = 0; r < n; ++r) {
      int32_t j;
      for (j = 0; j < q[r]; ++j) pos[t++] = s[r] - q[r] + j;
      if (ts_rand_range(&seed, 0, 4) == 0) b->bt[r * b->width + b->width - 1] = -1;
    }
    for (r = 0; r < tokens; ++r)
      if (ts_rand_range(&seed, 0, 15) == 0) b->slots[r] = ATTN_PAD_SLOT_ID;
    compare_with_positions(name, &spec, &c, b, pos, tokens, 0);
    ts_batch_free(b);
  }
}

/* XPU_MLA_SPARSE host vs CUDA: req_id_per_token (compute_token_to_req_indices over the whole
 * buffer: ids, then zeros), with empty queries and padded batches (tokens past
 * query_start_loc[-1]). */
static void test_xpu_mla_sparse(void** state) {
  uint64_t seed = 57;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA XPU_MLA_SPARSE builds")) skip();
  for (iter = 0; iter < 60; ++iter) {
    attn_kv_cache_spec_t spec = ts_mla_spec(16);
    attn_builder_config_t c = ts_config();
    int32_t q[32], s[32];
    int64_t n = ts_rand_range(&seed, 1, 32), r, tokens = 0;
    ts_batch* b;
    c.max_num_batched_tokens = 4096;
    for (r = 0; r < n; ++r) {
      q[r] = (int32_t)ts_rand_range(&seed, 0, 50);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 1, 900);
      tokens += q[r];
    }
    b = ts_batch_make(q, s, n, 16, 0, tokens + (iter % 3 == 0 ? 1 + iter % 7 : 0));
    compare("XPU_MLA_SPARSE", &spec, &c, b, NULL, 0);
    ts_batch_free(b);
  }
}

/* DeepSeek V4 / V4.1's ROCm builders (ROCM_FLASHMLA_SPARSE_DSV4 / _DSV41,
 * DEEPSEEK_SPARSE_SWA_ROCM_AITER, DEEPSEEK_V41_SPARSE_SWA_ROCM_AITER; config->platform_rocm) host
 * vs CUDA (src/ops/ragged_from_dense.cc: the ragged C128A decode rows and SWA decode rows and
 * their indptr, on top of the base builders' kernels): random batches with positions and padded
 * slots; one in four all decodes of one query length through build_for_cudagraph_capture. */
static void test_rocm_dsv4(void** state) {
  static const char* const names[4] = {"ROCM_FLASHMLA_SPARSE_DSV4", "ROCM_FLASHMLA_SPARSE_DSV41",
                                       "DEEPSEEK_SPARSE_SWA_ROCM_AITER",
                                       "DEEPSEEK_V41_SPARSE_SWA_ROCM_AITER"};
  static const int32_t windows[4] = {4, 64, 128, 256};
  uint64_t seed = 83;
  int iter;
  (void)state;
  if (!tg_have_gpu("the host-vs-CUDA DeepSeek V4 ROCm builds")) skip();
  for (iter = 0; iter < 96; ++iter) {
    const int which = iter % 4, capture = iter % 16 >= 12;
    const int32_t k = (int32_t)ts_rand_range(&seed, 0, 3);
    attn_kv_cache_spec_t spec = ts_mla_spec(which == 1 ? 64 : 256);
    attn_builder_config_t c = ts_config();
    int32_t q[32], s[32];
    int64_t pos[8192], n = ts_rand_range(&seed, 1, 32), nd, r, t = 0, tokens = 0;
    ts_batch* b;
    spec.head_size = 512;
    if (which == 0) spec.tokens_per_state = iter % 8 < 4 ? 128 : 4;
    if (which == 1) spec.tokens_per_state = 2;
    if (which >= 2) {
      spec.kind = ATTN_KV_SLIDING_WINDOW;
      spec.block_size = 32 << ts_rand_range(&seed, 0, 3);
      spec.sliding_window = windows[ts_rand_range(&seed, 0, 3)];
    }
    c.platform_rocm = 1;
    c.num_speculative_tokens = k;
    c.max_model_len = 16384;
    nd = capture ? n : ts_rand_range(&seed, 0, n);
    for (r = 0; r < n; ++r) {
      q[r] = capture ? 1 + k
             : r < nd ? 1 + (int32_t)ts_rand_range(&seed, 0, k)
                      : 2 + k + (int32_t)ts_rand_range(&seed, 0, 200);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, 0, 12000);
      tokens += q[r];
    }
    b = ts_batch_make(q, s, n, spec.block_size, 0, -1);
    for (r = 0; r < n; ++r) {
      int32_t j;
      for (j = 0; j < q[r]; ++j) pos[t++] = s[r] - q[r] + j;
    }
    for (r = 0; r < tokens; ++r)
      if (ts_rand_range(&seed, 0, 15) == 0) b->slots[r] = ATTN_PAD_SLOT_ID;
    compare_with_positions(names[which], &spec, &c, b, pos, tokens, capture);
    ts_batch_free(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_batches),
      cmocka_unit_test(test_context_chunks),
      cmocka_unit_test(test_capture),
      cmocka_unit_test(test_decode_0_33),
      cmocka_unit_test(test_sparse),
      cmocka_unit_test(test_indexer),
      cmocka_unit_test(test_kpool_tail),
      cmocka_unit_test(test_sparse_swa),
      cmocka_unit_test(test_compressors),
      cmocka_unit_test(test_v41_sparse_indexer),
      cmocka_unit_test(test_compressed_indexer),
      cmocka_unit_test(test_v4_sparse_mla),
      cmocka_unit_test(test_rocm_dsv4),
      cmocka_unit_test(test_xpu_mla_sparse),
      cmocka_unit_test(test_cpu_platform_mla),
      cmocka_unit_test(test_rocm_aiter_mla),
      cmocka_unit_test(test_rocm_aiter_mla_sparse),
  };
  return cmocka_run_group_tests_name("gpu_mla", tests, NULL, NULL);
}
