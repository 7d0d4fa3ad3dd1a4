/* CUDA graphs: builds captured on a stream and replayed.
 *
 * For every backend and level: a CUDA builder (its persistent buffers from a counting allocator)
 * captures a build inside cudaStreamBeginCapture(..., cudaStreamCaptureModeGlobal) /
 * cudaStreamEndCapture. Global mode turns any allocation or synchronization inside the build
 * (cudaMalloc, cudaMemcpy, a stream or device sync, thrust's temporary storage) into an error
 * that invalidates the capture, so a capture that ends cleanly proves the build path enqueues
 * device work only; the graph must hold kernel nodes only (no copy, memset or allocation node),
 * and their count is the build's launches, printed as a CG_NODES line. Then the graph is
 * replayed for kReplays (100) seeded random batches of the captured size written into the same
 * device buffers and host mirrors (the runtime's persistent inputs, as vLLM rewrites them every
 * step); after each replay every field is compared with a fresh host build of the same batch,
 * and, where the backend supports it, attn_update_block_table() on a second builder (another KV
 * cache group) is compared too. Each builder is captured at every padded size of kSizes. The
 * allocator must not be called after create.
 *
 * What a replay can change (docs/cuda_graphs.md): device contents. Host scalars, host tensors
 * and tensor shapes a build computes are those of the captured batch, so a replayed batch must
 * give the same host fields: the same num_reqs, num_actual_tokens, max_query_len and max_seq_len
 * (a bound one request reaches), and per backend whatever else it computes on the host (the
 * split, FLASHINFER's plan inputs, ...). Each replay first tries new query lengths (same total;
 * ALWAYS levels) and new sequence lengths, then new sequence lengths only, then new block tables
 * and slot mappings only, and takes the first whose fresh host build has the captured build's
 * host fields (tg_host_fields_equal); the device fields are then compared in full, so a host
 * value baked into a captured launch shows up as a difference. The counts of each kind of replay
 * and the backends covered are printed (CAPTURE_REPLAY lines).
 *
 * Two graphs per builder: build_for_cudagraph_capture (what vLLM calls while capturing;
 * TRITON_ATTN's writes 1 into seq_lens) and attn_build (the per-step build itself).
 * Levels below ALWAYS: batches the level does not allow are refused by
 * build_for_cudagraph_capture with ATTN_ERR_UNSUPPORTED, inside an open capture that still ends
 * cleanly; NEVER refuses every batch.
 *
 * Skips, saying so, when no CUDA device is visible. */
#include "test_support.h"

#include "gpu_support.h"

enum {
  kMaxReqs = 24,    /* the largest captured size */
  kBlock = 16,
  kMaxQ = 40,       /* ALWAYS batches: every query at most this long, one this long */
  kMaxSeq = 700,    /* every batch: one sequence this long (the max_seq_len bound) */
  kWidth = (kMaxSeq + kBlock - 1) / kBlock,
  kGpuBlocks = 2048,
  kUniformQ = 3,    /* UNIFORM_BATCH captures: spec decode, 2 speculative tokens (the config's) */
  kReplays = 100    /* replays compared per capture */
};

/* The padded sizes (number of requests) every builder is captured at. */
static const int32_t kSizes[] = {1, 7, kMaxReqs};

/* What the run covered (printed at the end). */
static struct {
  int captures;
  int with_uploads; /* captures holding the upload of a host-derived input */
  long replays[3]; /* by kind: new query and sequence lengths, new sequence lengths, new tables */
  int backends;
  char names[4096];
  int finished; /* the two capture tests that reached their end (no difference failed them) */
} g_cover;

static void note_backend(const char* name) {
  char key[80];
  snprintf(key, sizeof key, " %s,", name);
  if (strstr(g_cover.names, key) != NULL) return;
  if (strlen(g_cover.names) + strlen(key) + 1 < sizeof g_cover.names) strcat(g_cover.names, key);
  g_cover.backends++;
}

/* ---- the allocator: counts calls, CUDA memory for CUDA requests ---------------------------- */

typedef struct {
  int allocs, frees;
} counting;

/* Host buffers are pinned (cudaHostAlloc), as a runtime that captures builds gives them: the one
 * copy a build may issue (a builder's host staging to its device buffer) can only be captured
 * from pinned memory. */
static void* counting_alloc(void* user, size_t bytes, size_t alignment, attn_device_t device) {
  counting* c = (counting*)user;
  void* p = NULL;
  c->allocs++;
  assert_true(alignment <= 256 && (alignment & (alignment - 1)) == 0);
  if (device.device_type == ATTN_DEVICE_CUDA) return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
  return cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault) == cudaSuccess ? p : NULL;
}

static void counting_free(void* user, void* ptr, size_t bytes, attn_device_t device) {
  counting* c = (counting*)user;
  (void)bytes;
  c->frees++;
  if (device.device_type == ATTN_DEVICE_CUDA)
    cudaFree(ptr);
  else
    cudaFreeHost(ptr);
}

/* ---- batches --------------------------------------------------------------------------------- */

/* A batch of these lengths with random KV cache blocks (ids in [1, kGpuBlocks), repeats allowed)
 * and the slot mapping they give. */
/* vLLM 0.33's is_prefilling of every batch here: no request is in its prompt (the Mamba family
 * requires the input; the other builders read it as absent). Host memory, shared by all. */
static uint8_t g_not_prefilling[kMaxReqs];
static int64_t g_prefilling_shape[1];
static attn_tensor_t g_prefilling;

static ts_batch* batch_of(uint64_t* seed, int32_t n, const int32_t* q, const int32_t* s) {
  ts_batch* b = ts_batch_make(q, s, n, kBlock, kWidth, -1);
  int64_t r, j, p, t = 0;
  g_prefilling_shape[0] = n;
  g_prefilling = ts_host_tensor(g_not_prefilling, 1, g_prefilling_shape, ATTN_DTYPE_BOOL, 8);
  b->common.is_prefilling = &g_prefilling;
  for (r = 0; r < n; ++r) {
    const int64_t blocks = (s[r] + kBlock - 1) / kBlock;
    for (j = 0; j < blocks; ++j) b->bt[r * kWidth + j] = (int32_t)ts_rand_range(seed, 1, kGpuBlocks - 1);
    for (p = s[r] - q[r]; p < s[r]; ++p, ++t)
      b->slots[t] = (int64_t)b->bt[r * kWidth + p / kBlock] * kBlock + p % kBlock;
  }
  /* vLLM 0.33 passes every builder the tokens' positions (some read them) */
  {
    tg_positions* pos = (tg_positions*)malloc(sizeof *pos);
    assert_non_null(pos);
    tg_positions_make(b, pos);
  }
  return b;
}

static void batch_free(ts_batch* b) {
  tg_positions* pos = (tg_positions*)(void*)((char*)b->common.positions - offsetof(tg_positions, t));
  tg_positions_free(pos);
  free(pos);
  ts_batch_free(b);
}

/* Query lengths: uniform (> 0) or mixed (half decodes, the rest up to kMaxQ, the last kMaxQ). */
static void capture_query_lens(uint64_t* seed, int32_t n, int32_t uniform, int32_t* q) {
  int64_t r;
  for (r = 0; r < n; ++r)
    q[r] = uniform > 0 ? uniform : (r < n / 2 ? 1 : (int32_t)ts_rand_range(seed, 2, kMaxQ));
  if (uniform == 0) q[n - 1] = kMaxQ;
}

/* New mixed query lengths with the same total, each in [1, kMaxQ], one of them kMaxQ. */
static void reshuffle_query_lens(uint64_t* seed, int32_t n, const int32_t* old, int32_t* q) {
  int64_t r, total = 0, left;
  for (r = 0; r < n; ++r) total += old[r];
  for (r = 0; r < n; ++r) q[r] = 1;
  q[ts_rand_range(seed, 0, n - 1)] = kMaxQ;
  left = total - (n - 1) - kMaxQ;
  while (left > 0) {
    const int64_t i = ts_rand_range(seed, 0, n - 1);
    int64_t add;
    if (q[i] >= kMaxQ) continue;
    add = ts_rand_range(seed, 1, kMaxQ - q[i]);
    if (add > left) add = left;
    q[i] += (int32_t)add;
    left -= add;
  }
}

/* Sequence lengths: each at least its query (and some context), one of them kMaxSeq. */
static void random_seq_lens(uint64_t* seed, int32_t n, const int32_t* q, int32_t* s) {
  int64_t r;
  for (r = 0; r < n; ++r) s[r] = q[r] + (int32_t)ts_rand_range(seed, 0, kMaxSeq - q[r]);
  s[ts_rand_range(seed, 0, n - 1)] = kMaxSeq;
}

/* ---- the cases --------------------------------------------------------------------------------- */

typedef struct {
  const char* backend;
  int32_t capability;   /* config->device_capability */
  int32_t kv_kind;      /* spec kind */
  int32_t dcp;          /* decode_context_parallel_size */
  int32_t level;        /* the level the builder must report; -1: whatever it reports */
  int vary_seq_lens;    /* replays get new sequence lengths */
  int vary_query_lens;  /* replays get new query lengths (ALWAYS levels only) */
  const attn_kv_cache_spec_t* spec;      /* NULL: configure()'s; else this spec and config */
  const attn_builder_config_t* config;
} cg_case;

static const char* level_name(int32_t level) {
  switch (level) {
    case ATTN_CG_NEVER: return "NEVER";
    case ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE: return "UNIFORM_SINGLE_TOKEN_DECODE";
    case ATTN_CG_UNIFORM_BATCH: return "UNIFORM_BATCH";
    case ATTN_CG_ALWAYS: return "ALWAYS";
    default: return "?";
  }
}

static void configure(const cg_case* c, attn_kv_cache_spec_t* spec, attn_builder_config_t* config) {
  *spec = ts_spec();
  *config = ts_config();
  spec->kind = c->kv_kind;
  if (c->kv_kind == ATTN_KV_CHUNKED_LOCAL_ATTENTION) spec->attention_chunk_size = 64;
  config->device_capability = c->capability;
  config->num_gpu_blocks = kGpuBlocks;
  config->num_speculative_tokens = kUniformQ - 1; /* UNIFORM_BATCH captures 1 + this */
  config->decode_context_parallel_size = c->dcp;
}

/* Captures `variant` (0: build_for_cudagraph_capture, 1: attn_build) of `common` on `stream`;
 * returns the graph (its nodes checked: kernels only) and the metadata. */
static cudaGraph_t capture(attn_builder_t* db, const attn_common_metadata_t* common, int variant,
                           cudaStream_t stream, attn_metadata_t** out, const char* label,
                           size_t* out_copies) {
  cudaGraph_t graph = NULL;
  attn_error_t* err;
  cudaError_t end;
  size_t n = 0, i, kernels = 0, copies = 0;
  cudaGraphNode_t* nodes;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  err = variant == 0 ? attn_build_for_cudagraph_capture(db, common, out, (attn_stream_t)stream)
                     : attn_build(db, 0, common, 0, out, (attn_stream_t)stream);
  end = cudaStreamEndCapture(stream, &graph);
  if (err != NULL)
    fail_msg("%s: the build failed inside the capture: [%d] %s", label, attn_error_code(err),
             attn_error_message(err));
  if (end != cudaSuccess)
    fail_msg("%s: cudaStreamEndCapture: %s (%s): the build did something a graph cannot hold "
             "(an allocation or a synchronization)", label, cudaGetErrorName(end), cudaGetErrorString(end));
  CUDA_OK(cudaGraphGetNodes(graph, NULL, &n));
  nodes = (cudaGraphNode_t*)calloc(n + 1, sizeof *nodes);
  assert_non_null(nodes);
  CUDA_OK(cudaGraphGetNodes(graph, nodes, &n));
  for (i = 0; i < n; ++i) {
    enum cudaGraphNodeType type;
    CUDA_OK(cudaGraphNodeGetType(nodes[i], &type));
    if (type == cudaGraphNodeTypeMemcpy) { /* the one upload of a host-only input */
      ++copies;
      continue;
    }
    if (type != cudaGraphNodeTypeKernel)
      fail_msg("%s: the captured build holds a graph node of type %d, not a kernel or the "
               "upload of a host-only input (a memset or an allocation on the build path)",
               label, (int)type);
    ++kernels;
  }
  free(nodes);
  printf("CG_NODES %s kernels=%zu copies=%zu\n", label, kernels, copies);
  *out_copies = copies;
  return graph;
}

/* A capture of a batch the level refuses: ATTN_ERR_UNSUPPORTED naming the level, and the capture
 * ends cleanly (nothing was enqueued). */
static void expect_refused(attn_builder_t* db, int32_t n, const int32_t* q, const int32_t* s,
                           int32_t level, cudaStream_t stream, uint64_t* seed) {
  ts_batch* b = batch_of(seed, n, q, s);
  tg_device_batch d;
  attn_metadata_t* md = (attn_metadata_t*)UNTOUCHED_PTR;
  cudaGraph_t graph = NULL;
  size_t nodes = 1;
  tg_device_batch_make(b, &d);
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  {
    attn_error_t* err = attn_build_for_cudagraph_capture(db, &d.common, &md, (attn_stream_t)stream);
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    if (err == NULL) fail_msg("a %s builder captured a batch its level does not allow", level_name(level));
    if (attn_error_code(err) != ATTN_ERR_UNSUPPORTED || strstr(attn_error_message(err), level_name(level)) == NULL)
      fail_msg("refused with [%d] %s; expected ATTN_ERR_UNSUPPORTED naming %s", attn_error_code(err),
               attn_error_message(err), level_name(level));
    attn_error_destroy(err);
  }
  assert_ptr_equal(md, UNTOUCHED_PTR);
  CUDA_OK(cudaGraphGetNodes(graph, NULL, &nodes));
  assert_int_equal(nodes, 0);
  CUDA_OK(cudaGraphDestroy(graph));
  tg_device_batch_free(&d);
  batch_free(b);
}

typedef struct {
  int32_t n;                  /* the captured size */
  attn_builder_t *hb, *db;    /* the host reference and the CUDA builder: the same builds, in
                               * the same order (a backend's buffers may keep what an earlier
                               * build left past a field's valid part, as vLLM's do) */
  attn_builder_t* hp;         /* a host builder that tries the candidate batches */
  attn_builder_t *hb2, *db2;  /* a second KV cache group for update_block_table */
  int32_t supports_update;
  tg_device_batch d;          /* the runtime's persistent inputs */
  attn_tensor_t bt2, sm2;     /* the second group's tables on the device */
  int64_t bt2_shape[2], sm2_shape[1];
} rig;

/* A batch's inputs as they were before a build: some capture builds write into them, as vLLM's
 * do into the runtime's buffers (TRITON_ATTN and TURBOQUANT fill seq_lens with 1; the host batch
 * here is what the device side is then uploaded from). */
typedef struct {
  int32_t qsl[kMaxReqs + 1], seq[kMaxReqs];
} inputs_t;

static void save_inputs(const ts_batch* b, inputs_t* in) {
  memcpy(in->qsl, b->qsl, (size_t)(b->num_reqs + 1) * sizeof *in->qsl);
  memcpy(in->seq, b->seq, (size_t)b->num_reqs * sizeof *in->seq);
}

static void restore_inputs(ts_batch* b, const inputs_t* in) {
  memcpy(b->qsl, in->qsl, (size_t)(b->num_reqs + 1) * sizeof *in->qsl);
  memcpy(b->seq, in->seq, (size_t)b->num_reqs * sizeof *in->seq);
}

/* A host build of batch b (its host mirrors made from it) on `hb`, in *hm; b's inputs as they
 * were before it in *before. */
static void host_build(attn_builder_t* hb, ts_batch* b, int variant, attn_metadata_t** hm,
                       inputs_t* before) {
  save_inputs(b, before);
  if (variant == 0)
    ASSERT_OK(attn_build_for_cudagraph_capture(hb, &b->common, hm, NULL));
  else
    ASSERT_OK(attn_build(hb, 0, &b->common, 0, hm, NULL));
}

/* Replays `exec` (NULL: an empty graph) for batch b written into the persistent inputs (whose
 * fresh host build hm has the captured host fields), compares every field, then
 * update_block_table. */
static void replay_and_compare(rig* g, cudaGraphExec_t exec, attn_metadata_t* dm, ts_batch* b,
                               const int32_t* q, const int32_t* s, const inputs_t* before,
                               attn_metadata_t* hm, cudaStream_t stream, uint64_t* seed,
                               const char* label) {
  inputs_t after;
  /* the runtime's inputs are the batch as it was before the host build */
  save_inputs(b, &after);
  restore_inputs(b, before);
  tg_device_batch_upload(b, &g->d, stream);
  restore_inputs(b, &after);
  if (exec != NULL) CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  tg_expect_same_metadata(hm, dm, label);

  if (g->supports_update) {
    /* Another group's tables for the same requests, on both sides. */
    ts_batch* other = batch_of(seed, g->n, q, s);
    attn_metadata_t *hu = NULL, *du = NULL;
    char what[420];
    CUDA_OK(cudaMemcpy(g->bt2.data, other->bt, (size_t)g->n * kWidth * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(g->sm2.data, other->slots, (size_t)other->num_tokens * 8, cudaMemcpyHostToDevice));
    assert_int_equal(g->sm2_shape[0], other->num_tokens);
    ASSERT_OK(attn_update_block_table(g->db2, dm, &g->bt2, &g->sm2, &du, (attn_stream_t)stream));
    ASSERT_OK(attn_update_block_table(g->hb2, hm, &other->bt_t, &other->sm_t, &hu, NULL));
    snprintf(what, sizeof what, "%s, update_block_table", label);
    tg_expect_same_metadata(hu, du, what);
    {
      const attn_tensor_t* t = NULL;
      attn_error_t* e = attn_metadata_get_tensor(du, "block_table", &t);
      if (e == NULL && t != NULL) assert_ptr_equal(t->data, g->bt2.data); /* the new table */
      attn_error_destroy(e);
    }
    batch_free(other);
  } else {
    attn_metadata_t* du = (attn_metadata_t*)UNTOUCHED_PTR;
    ASSERT_ERROR(attn_update_block_table(g->db, dm, &g->d.bt, &g->d.sm, &du, (attn_stream_t)stream),
                 ATTN_ERR_UNSUPPORTED, "update_block_table");
  }
}

/* kReplays replays of one captured graph: each the first candidate batch (see the top of this
 * file) whose fresh host build has the captured host fields. */
static void replays(rig* g, cudaGraphExec_t exec, attn_metadata_t* dm, int variant,
                    const cg_case* c, int32_t level, const int32_t* q0, const int32_t* s0,
                    int uploads, cudaStream_t stream, uint64_t* seed, const char* label) {
  int k, kind, r, mixed = 0;
  for (r = 1; r < g->n; ++r) mixed |= q0[r] != q0[0]; /* new query lengths only for a mixed capture */
  for (k = 0; k < kReplays; ++k) {
    for (kind = 0; kind < 3; ++kind) {
      int32_t q[kMaxReqs], s[kMaxReqs];
      inputs_t before;
      ts_batch* b;
      tg_mirrors mirrors;
      attn_metadata_t* hm = NULL;
      char why[256], what[360];
      memcpy(q, q0, sizeof q);
      memcpy(s, s0, sizeof s);
      /* A capture that uploads host-derived inputs (its copy nodes: what vLLM 0.33 computes on
       * the host from seq_lens_cpu and copies, e.g. MAMBA2's prefill chunk inputs, MLA's context
       * lengths) keeps them: its replays change the tables only (docs/cuda_graphs.md). */
      const int new_queries = level == ATTN_CG_ALWAYS && c->vary_query_lens && mixed && !uploads;
      const int new_seqs = c->vary_seq_lens && !uploads;
      if (kind == 0 && !(new_seqs || new_queries)) continue;
      if (kind == 1 && !new_seqs) continue;
      if (kind == 0 && new_queries) reshuffle_query_lens(seed, g->n, q0, q);
      if (kind <= 1 && new_seqs) random_seq_lens(seed, g->n, q, s);
      b = batch_of(seed, g->n, q, s);
      tg_mirrors_make(b, &mirrors);
      tg_add_mirrors(b, &mirrors);
      /* new tables alone: the probe sees the captured lengths first, as the capture did after
       * its warm-up (a host field may depend on the batch before: ROCM_AITER_MLA_SPARSE's
       * scheduler_launched, vLLM 0.33's metadata_key cache) */
      if (kind == 2) {
        host_build(g->hp, b, variant, &hm, &before);
        restore_inputs(b, &before);
      }
      host_build(g->hp, b, variant, &hm, &before); /* the candidate, on the probe builder */
      restore_inputs(b, &before);
      if (!tg_host_fields_equal(hm, dm, why, sizeof why)) {
        if (kind == 2)
          fail_msg("%s, replay %d: new block tables alone change a host field (%s): no replay "
                   "of this capture is valid", label, k, why);
      } else {
        snprintf(what, sizeof what, "%s, replay %d (%s)", label, k,
                 kind == 0 ? "new query and sequence lengths" : kind == 1 ? "new sequence lengths" : "new tables");
        host_build(g->hb, b, variant, &hm, &before); /* the reference: the device's history */
        replay_and_compare(g, exec, dm, b, q, s, &before, hm, stream, seed, what);
        g_cover.replays[kind]++;
        kind = 3; /* done with this replay */
      }
      tg_mirrors_free(&mirrors);
      batch_free(b);
    }
  }
}

/* The query length of the batches a capture of `variant` takes at `level`: 0 (mixed) for ALWAYS,
 * 1 + num_speculative_tokens (or the builder's decode threshold below it) for UNIFORM_BATCH, 1
 * for single-token decodes; a builder that refuses mixed batches in build_for_cudagraph_capture
 * although its level is ALWAYS (vLLM 0.33's MLA builders capture decode-only batches) gets its
 * decode batches. */
static int32_t capture_query_len(rig* g, int32_t level, int variant, uint64_t seed) {
  int32_t threshold = ATTN_NO_REORDER, uniform;
  ASSERT_OK(attn_builder_reorder_batch_threshold(g->db, &threshold));
  const int32_t decode = threshold != ATTN_NO_REORDER && threshold >= 1 ? threshold : 1;
  if (level == ATTN_CG_UNIFORM_BATCH) {
    /* vLLM captures uniform batches of 1 + num_speculative_tokens where the builder treats them
     * as decodes; a builder that reorders below that captures what it calls a decode. */
    uniform = kUniformQ;
    if (threshold != ATTN_NO_REORDER && threshold >= 1 && threshold < uniform) uniform = threshold;
    return uniform;
  }
  if (level != ATTN_CG_ALWAYS) return 1;
  if (variant == 0) {
    int32_t q[kMaxReqs], s[kMaxReqs];
    ts_batch* b;
    tg_mirrors mirrors;
    attn_metadata_t* m = NULL;
    attn_error_t* err;
    capture_query_lens(&seed, g->n, 0, q);
    random_seq_lens(&seed, g->n, q, s);
    b = batch_of(&seed, g->n, q, s);
    tg_mirrors_make(b, &mirrors);
    tg_add_mirrors(b, &mirrors);
    err = attn_build_for_cudagraph_capture(g->hp, &b->common, &m, NULL);
    tg_mirrors_free(&mirrors);
    batch_free(b);
    if (err != NULL) {
      const int refused = attn_error_code(err) == ATTN_ERR_UNSUPPORTED &&
                          strstr(attn_error_message(err), "decode-only") != NULL;
      if (!refused)
        fail_msg("build_for_cudagraph_capture of a mixed batch: [%d] %s", attn_error_code(err),
                 attn_error_message(err));
      attn_error_destroy(err);
      return decode;
    }
  }
  return 0;
}

static void run_size(const cg_case* c, rig* g, int32_t level, counting* count,
                     const attn_kv_cache_spec_t* spec, const attn_builder_config_t* hc,
                     const attn_builder_config_t* dc, cudaStream_t stream, uint64_t seed) {
  int variant;
  char label[240];
  if (g->supports_update) {
    g->hb2 = ts_builder(c->backend, spec, hc);
    g->db2 = ts_builder(c->backend, spec, dc);
  }
  for (variant = 0; variant < 2; ++variant) {
    int32_t q0[kMaxReqs], s0[kMaxReqs];
    const int32_t uniform = capture_query_len(g, level, variant, seed);
    attn_metadata_t* dm = NULL;
    cudaGraph_t graph;
    cudaGraphExec_t exec = NULL;
    size_t nodes = 0, copies = 0;
    uint64_t replay_seed = seed + 1000u * (uint64_t)variant;
    int created_allocs;
    ts_batch* b0;
    /* The captured batch and the persistent inputs. */
    memset(q0, 0, sizeof q0);
    memset(s0, 0, sizeof s0);
    capture_query_lens(&seed, g->n, uniform, q0);
    random_seq_lens(&seed, g->n, q0, s0);
    b0 = batch_of(&seed, g->n, q0, s0);
    tg_device_batch_make(b0, &g->d);
    if (g->supports_update) {
      g->bt2 = g->d.bt;
      g->bt2_shape[0] = g->n;
      g->bt2_shape[1] = kWidth;
      g->bt2.shape = g->bt2_shape;
      g->bt2.data = tg_to_device(b0->bt, (size_t)g->n * kWidth * 4);
      g->sm2 = g->d.sm;
      g->sm2_shape[0] = b0->num_tokens;
      g->sm2.shape = g->sm2_shape;
      g->sm2.data = tg_to_device(b0->slots, (size_t)b0->num_tokens * 8);
    }
    created_allocs = count->allocs;
    snprintf(label, sizeof label,
             "backend=%s sm=%d kind=%d dcp=%d level=%s size=%d query=%s variant=%s", c->backend,
             c->capability, spec->kind, c->dcp, level_name(level), g->n,
             uniform == 0 ? "mixed" : (uniform == 1 ? "1" : "uniform"),
             variant == 0 ? "build_for_cudagraph_capture" : "attn_build");
    /* Warm up as vLLM does before capturing: one eager build of the same kind loads the
     * kernels' modules (CUDA's lazy loading) outside the capture. */
    tg_device_batch_upload(b0, &g->d, stream);
    if (variant == 0)
      ASSERT_OK(attn_build_for_cudagraph_capture(g->db, &g->d.common, &dm, (attn_stream_t)stream));
    else
      ASSERT_OK(attn_build(g->db, 0, &g->d.common, 0, &dm, (attn_stream_t)stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    tg_device_batch_upload(b0, &g->d, stream); /* TRITON_ATTN's capture wrote seq_lens */
    {
      /* the host reference builds what the device built before the capture (the warm-up) */
      tg_mirrors mirrors;
      attn_metadata_t* hm = NULL;
      inputs_t before;
      tg_mirrors_make(b0, &mirrors);
      tg_add_mirrors(b0, &mirrors);
      host_build(g->hb, b0, variant, &hm, &before);
      restore_inputs(b0, &before);
      tg_mirrors_free(&mirrors);
    }
    graph = capture(g->db, &g->d.common, variant, stream, &dm, label, &copies);
    g_cover.captures++;
    g_cover.with_uploads += copies > 0;
    CUDA_OK(cudaGraphGetNodes(graph, NULL, &nodes));
    if (nodes > 0) CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    replays(g, exec, dm, variant, c, level, q0, s0, copies > 0, stream, &replay_seed, label);
    if (exec != NULL) CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    if (count->allocs != created_allocs)
      fail_msg("%s: the allocator was called %d times after create (builds, captures, replays, "
               "update_block_table must allocate nothing)", label, count->allocs - created_allocs);
    batch_free(b0);
    tg_device_batch_free(&g->d);
    if (g->supports_update) {
      cudaFree(g->bt2.data);
      cudaFree(g->sm2.data);
    }
  }
  if (g->supports_update) {
    attn_builder_destroy(g->hb2);
    attn_builder_destroy(g->db2);
    g->hb2 = g->db2 = NULL;
  }
}

static void run_case(const cg_case* c, uint64_t seed) {
  attn_kv_cache_spec_t spec;
  attn_builder_config_t hc, dc;
  attn_allocator_t alloc = ATTN_ALLOCATOR_INIT;
  counting count = {0, 0};
  int32_t level = -1, q[kMaxReqs], s[kMaxReqs];
  size_t z;
  cudaStream_t stream;
  rig g;
  memset(&g, 0, sizeof g);
  if (c->spec != NULL) {
    spec = *c->spec;
    hc = *c->config;
  } else {
    configure(c, &spec, &hc);
  }
  dc = hc;
  dc.device.device_type = ATTN_DEVICE_CUDA;
  alloc.alloc = counting_alloc;
  alloc.free = counting_free;
  alloc.user_data = &count;
  dc.allocator = &alloc;
  g.hb = ts_builder(c->backend, &spec, &hc);
  g.hp = ts_builder(c->backend, &spec, &hc);
  g.db = ts_builder(c->backend, &spec, &dc);
  ASSERT_OK(attn_builder_cudagraph_support(g.db, &level));
  if (c->level >= 0 && level != c->level)
    fail_msg("%s (sm%d): level %s, expected %s", c->backend, c->capability, level_name(level),
             level_name(c->level));
  ASSERT_OK(attn_builder_supports_update_block_table(g.db, &g.supports_update));
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  printf("%s sm%d kind %d dcp %d: level %s, update_block_table %s\n", c->backend, c->capability,
         spec.kind, c->dcp, level_name(level), g.supports_update ? "yes" : "no");

  /* The batches each level refuses, inside an open capture. */
  capture_query_lens(&seed, kMaxReqs, 0, q);
  random_seq_lens(&seed, kMaxReqs, q, s);
  if (level == ATTN_CG_NEVER) {
    expect_refused(g.db, kMaxReqs, q, s, level, stream, &seed);
  } else {
    if (level < ATTN_CG_ALWAYS) expect_refused(g.db, kMaxReqs, q, s, level, stream, &seed); /* mixed */
    if (level == ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE) {
      capture_query_lens(&seed, kMaxReqs, 2, q); /* uniform, but not single-token */
      random_seq_lens(&seed, kMaxReqs, q, s);
      expect_refused(g.db, kMaxReqs, q, s, level, stream, &seed);
    }
    for (z = 0; z < sizeof kSizes / sizeof kSizes[0]; ++z) {
      g.n = kSizes[z];
      run_size(c, &g, level, &count, &spec, &hc, &dc, stream, seed + 17u * z);
    }
    note_backend(c->backend);
  }
  CUDA_OK(cudaStreamDestroy(stream));
  attn_builder_destroy(g.hb);
  attn_builder_destroy(g.hp);
  attn_builder_destroy(g.db);
  assert_int_equal(count.frees, count.allocs);
}

/* QWEN4_EXP_EXP_QSA_STATE's ring (a CIRCULAR_BUFFER spec of capacity round_up(4 + 2, 4) = 8,
 * QSAKeyStateCache's at k = 2; the batches' tables are read at column 0) and compressed cache
 * (MLA, tokens_per_state 4: k_work_metadata's scan on the device), set by qsa_setup(). */
static attn_kv_cache_spec_t g_qsa_ring, g_qsa_compressed;
static attn_builder_config_t g_qsa_config;

static const cg_case kCases[] = {
    {"FLASH_ATTN", 90, ATTN_KV_FULL_ATTENTION, 1, ATTN_CG_ALWAYS, 1, 1, NULL, NULL},   /* FA3 */
    {"FLASH_ATTN", 90, ATTN_KV_FULL_ATTENTION, 2, ATTN_CG_ALWAYS, 1, 1, NULL, NULL},   /* FA3 + DCP: a kernel */
    {"FLASH_ATTN", 80, ATTN_KV_FULL_ATTENTION, 1, ATTN_CG_UNIFORM_BATCH, 1, 0, NULL, NULL}, /* FA2 */
    {"TRITON_ATTN", 90, ATTN_KV_FULL_ATTENTION, 1, ATTN_CG_ALWAYS, 1, 1, NULL, NULL},
    {"FLEX_ATTENTION", 90, ATTN_KV_FULL_ATTENTION, 1, ATTN_CG_ALWAYS, 1, 1, NULL, NULL},
    {"FLASHINFER", 90, ATTN_KV_FULL_ATTENTION, 1, ATTN_CG_UNIFORM_BATCH, 0, 0, NULL, NULL}, /* XQA (0.33) */
    {"FLASHINFER", 80, ATTN_KV_FULL_ATTENTION, 1, ATTN_CG_UNIFORM_BATCH, 0, 0, NULL, NULL}, /* fa2 native */
    {"FLASHINFER", 100, ATTN_KV_FULL_ATTENTION, 1, ATTN_CG_UNIFORM_BATCH, 0, 0, NULL, NULL}, /* TRT-LLM */
    {"TREE_ATTN", 90, ATTN_KV_FULL_ATTENTION, 1, ATTN_CG_NEVER, 0, 0, NULL, NULL},
    {"FLASH_ATTN", 90, ATTN_KV_CHUNKED_LOCAL_ATTENTION, 1, ATTN_CG_NEVER, 0, 0, NULL, NULL}, /* the wrapper */
    {"QWEN4_EXP_EXP_QSA_STATE", 90, ATTN_KV_CIRCULAR_BUFFER, 1, ATTN_CG_UNIFORM_BATCH, 1, 0,
     &g_qsa_ring, &g_qsa_config},
    {"QWEN4_EXP_EXP_QSA_STATE", 90, ATTN_KV_MLA, 1, ATTN_CG_UNIFORM_BATCH, 1, 0, &g_qsa_compressed,
     &g_qsa_config},
};

static void qsa_setup(void) {
  const cg_case c0 = {"", 90, ATTN_KV_FULL_ATTENTION, 1, -1, 0, 0, NULL, NULL};
  attn_kv_cache_spec_t unused;
  configure(&c0, &unused, &g_qsa_config);
  g_qsa_ring = ts_spec();
  g_qsa_ring.kind = ATTN_KV_CIRCULAR_BUFFER;
  g_qsa_ring.block_size = 8;
  g_qsa_ring.num_kv_heads = 1;
  g_qsa_compressed = ts_mla_spec(kBlock);
  g_qsa_compressed.head_size = 128;
  g_qsa_compressed.tokens_per_state = 4;
}

static void test_capture_and_replay(void** state) {
  size_t i;
  (void)state;
  if (!tg_have_gpu("the CUDA graph capture and replay of builds")) skip();
  qsa_setup();
  for (i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) run_case(&kCases[i], 1234 + i);
  g_cover.finished++;
}

/* The totals: what a reader of the CI log checks (docs/reliability.md). */
static void test_report(void** state) {
  (void)state;
  if (!tg_have_gpu("the CUDA graph capture report")) skip();
  printf("CAPTURE_REPLAY backends with a capture build: %d (%s)\n", g_cover.backends, g_cover.names);
  printf("CAPTURE_REPLAY captures: %d (%d holding the upload of a host-derived input: their "
         "replays change the tables only); replays compared: %ld (new query and sequence lengths "
         "%ld, new sequence lengths %ld, new tables only %ld); differences: 0\n",
         g_cover.captures, g_cover.with_uploads,
         g_cover.replays[0] + g_cover.replays[1] + g_cover.replays[2], g_cover.replays[0],
         g_cover.replays[1], g_cover.replays[2]);
  if (g_cover.finished != 2) fail_msg("a capture test above failed: no totals to report");
  assert_true(g_cover.backends > 0);
  assert_true(g_cover.replays[0] + g_cover.replays[1] + g_cover.replays[2] >= (long)kReplays * g_cover.captures);
}

/* Every other registered backend (the MLA, Mamba and DeepSeek families, ROCm's, a plugin's): on
 * each kind of KV cache spec it accepts, the first candidate spec and config a CUDA builder
 * accepts (tests/support's ts_candidate_specs / ts_candidate_configs, on this test's config) is
 * captured and replayed at the level the builder reports. A backend with no CUDA setup
 * (host-only ones) is named. */
static void test_other_backends(void** state) {
  size_t i, j, n = attn_backend_count();
  attn_builder_config_t base;
  attn_kv_cache_spec_t unused;
  (void)state;
  if (!tg_have_gpu("the CUDA graph capture of the other backends")) skip();
  {
    const cg_case c0 = {"", 90, ATTN_KV_FULL_ATTENTION, 1, -1, 0, 0, NULL, NULL};
    configure(&c0, &unused, &base);
  }
  base.device.device_type = ATTN_DEVICE_CUDA;
  base.num_gpu_blocks = kGpuBlocks;
  base.block_table_width = kWidth; /* the batches' (DeepSeek V4.1's sparse indexer sizes by it) */
  /* a page-16 rebase buffer as wide as the batches' tables (MINIMAX_M3_SPARSE_AITER_PA's:
   * cdiv(max_model_len, 128) columns) */
  if (base.max_model_len < kWidth * 128) base.max_model_len = kWidth * 128;
  for (i = 0; i < n; ++i) {
    const char* name = NULL;
    int covered = 0, any = 0;
    int32_t kind;
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    ASSERT_OK(attn_backend_info(i, &info));
    name = info.name;
    for (j = 0; j < sizeof kCases / sizeof kCases[0]; ++j) covered |= strcmp(name, kCases[j].backend) == 0;
    if (covered) continue;
    if (getenv("ATTN_CAPTURE_ONLY") != NULL && strcmp(getenv("ATTN_CAPTURE_ONLY"), name) != 0)
      continue; /* one backend at a time, for debugging */
    for (kind = 0; kind < 32; ++kind) {
      attn_kv_cache_spec_t spec;
      attn_builder_config_t config;
      if ((info.kv_cache_kinds & (1u << kind)) == 0) continue;
      if (!ts_backend_setup(i, kind, &base, &spec, &config)) continue;
      config.device.device_type = ATTN_DEVICE_CPU;
      {
        const cg_case c = {name, config.device_capability, kind, config.decode_context_parallel_size,
                           -1, 1, 1, &spec, &config};
        run_case(&c, 77 + i + 131u * (uint64_t)kind);
      }
      any = 1;
    }
    if (!any) printf("note: %s has no CUDA setup among the candidates (a host-only backend)\n", name);
  }
  g_cover.finished++;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_capture_and_replay),
      cmocka_unit_test(test_other_backends),
      cmocka_unit_test(test_report),
  };
  return cmocka_run_group_tests_name("gpu_capture", tests, NULL, NULL);
}
