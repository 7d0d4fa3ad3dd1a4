/* metadata_dump: what every built-in backend returns, read through the ABI only (the library is
 * dlopen'ed and called through attn_get_api()), as text that two builds can be diffed by.
 *
 *   metadata_dump LIB names [--check FILE]
 *       Each backend's metadata field names in index order (the order is ABI: the by-index
 *       accessors), from the first of a few candidate specs and configs it builds for; the
 *       cascade variant's too where a build with a common prefix returns other fields. With
 *       --check, compares with FILE (the golden list) and exits 1 at the first difference.
 *   metadata_dump LIB values [--seed S] [--configs N] [--batches K] [--only SUBSTRING]
 *       For every backend (or those whose name contains SUBSTRING): N seeded random configs
 *       (the knobs the MLA family reads: DCP, spec decode, fp8 caches, CUDA graph modes,
 *       capabilities, prefill backends, workspaces, ...) and K seeded random host batches each;
 *       prints the builder's answers, every refusal's code and message, and every field of every
 *       build (kind and value; tensors by dtype, shape and contents), also of capture and
 *       drafting builds and of draft decode updates. A summary line ends the output.
 *
 * Two libraries agree when their outputs are equal (diff, or compare the sha256sum). The batches'
 * host arrays are followed by sentinels (-777777), so a library reading past an input reads the
 * same values in every run and shows them. `names --check tests/data/metadata_field_names.txt`
 * is the test test_metadata_field_names. METADATA_DUMP_VERBOSE=1 says on stderr why a candidate
 * does not build. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_c.h"

static const attn_api_t* A;
static long long g_builders, g_refused, g_builds, g_failed, g_fields, g_values;

/* ---- random numbers (splitmix64) --------------------------------------------------------- */
static uint64_t rnd(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int64_t range(uint64_t* s, int64_t lo, int64_t hi) {
  return hi <= lo ? lo : lo + (int64_t)(rnd(s) % (uint64_t)(hi - lo + 1));
}
#define PICK(s, arr) (arr)[range((s), 0, (int64_t)(sizeof(arr) / sizeof((arr)[0])) - 1)]
static uint64_t hash_str(uint64_t h, const char* p) {
  while (*p) h = (h ^ (uint8_t)*p++) * 0x100000001B3ull;
  return h;
}

/* ---- candidate specs and configs --------------------------------------------------------- */
static attn_builder_config_t base_config(void) {
  attn_builder_config_t c = ATTN_BUILDER_CONFIG_INIT;
  c.max_num_seqs = 64;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 4096;
  c.num_attention_heads = 16;
  c.device_capability = 90;
  c.max_encoder_len = 1024;
  c.num_gpu_blocks = 100000;
  return c;
}

/* Candidate k for names and as the base of values: 0 when k is past the list. */
static int candidate(int k, attn_kv_cache_spec_t* s, attn_builder_config_t* c, const char** label) {
  const attn_kv_cache_spec_t init = ATTN_KV_CACHE_SPEC_INIT;
  *s = init;
  *c = base_config();
  s->block_size = 16;
  s->num_kv_heads = 8;
  s->head_size = 128;
  if (k >= 1 && k <= 9) { /* MLA specs: one latent head of 576 */
    static const int32_t blocks[10] = {0, 64, 64, 64, 64, 128, 64, 256, 256, 128};
    static const int32_t caps[10] = {0, 90, 100, 120, 94, 100, 100, 90, 94, 100};
    static const char* const labels[10] = {
        "",        "mla-sm90", "mla-sm100", "mla-sm120",    "mla-rocm",
        "mla-128", "mla-fp8",  "mla-256",   "mla-256-rocm", "mla-v41"};
    s->kind = ATTN_KV_MLA;
    s->block_size = blocks[k];
    s->num_kv_heads = 1;
    s->head_size = 576;
    c->device_capability = caps[k];
    c->platform_rocm = k == 4 || k == 8;
    if (k == 6) c->cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
    if (k == 9)
      c->candidate_block_size = 64, c->candidate_topk_blocks = 16, c->indexer_kv_mxfp4 = 1;
    *label = labels[k];
    return 1;
  }
  switch (k) {
    case 0:
      *label = "full";
      return 1;
    case 10:
      s->kind = ATTN_KV_SLIDING_WINDOW;
      s->sliding_window = 128;
      *label = "sliding";
      return 1;
    case 11:
      s->kind = ATTN_KV_SLIDING_WINDOW;
      s->block_size = 64;
      s->num_kv_heads = 1;
      s->head_size = 512;
      s->sliding_window = 128;
      *label = "swa-latent";
      return 1;
    case 12:
      s->kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION;
      s->attention_chunk_size = 64;
      *label = "chunked";
      return 1;
    case 13:
      s->kind = ATTN_KV_CROSS_ATTENTION;
      *label = "cross";
      return 1;
    case 14:
      s->kind = ATTN_KV_ENCODER_ONLY;
      *label = "encoder";
      return 1;
    case 15:
    case 16:
    case 17:
    case 18:
    case 19:
    case 20:
      s->kind = ATTN_KV_MAMBA;
      s->mamba_type = k - 15;
      s->mamba_chunk_size = 64;
      s->mamba_num_heads = 8;
      *label = "mamba";
      return 1;
    case 21:
    case 22:
      *s = init;
      s->kind = ATTN_KV_FULL_ATTENTION;
      s->block_size = 64;
      s->num_kv_heads = 1;
      s->head_size = 128;
      s->dtype = ATTN_KV_DTYPE_FP8_E4M3;
      c->platform_rocm = k == 22;
      c->device_capability = k == 22 ? 94 : 100;
      *label = k == 21 ? "indexer" : "indexer-rocm";
      return 1;
    case 23: /* dots3 NOTE's sliding-window latent cache: 1024 + 64 */
      s->kind = ATTN_KV_MLA;
      s->num_kv_heads = 1;
      s->head_size = 1088;
      s->sliding_window = 128;
      c->mla_kv_lora_rank = 1024;
      c->mla_qk_nope_head_dim = 192;
      *label = "mla-note";
      return 1;
    case 24: /* MiniMax-M3's sparse GQA cache: the kernel block 128 */
      s->block_size = 128;
      *label = "full-128";
      return 1;
    case 25: /* MiniMax-M3's indexer cache: one 128-wide key a token, 4 index heads */
      s->kind = ATTN_KV_MLA;
      s->block_size = 128;
      s->num_kv_heads = 1;
      c->sparse_num_index_heads = 4;
      *label = "mla-indexer-128";
      return 1;
    default:
      return 0;
  }
}

/* ---- host batches ------------------------------------------------------------------------ */
typedef struct {
  int64_t n, tokens, width;
  int32_t *qsl, *seq, *bound, *local, *bt, *causal_rows, *prefilling;
  int64_t *slots, *positions;
  int64_t qsl_shape[1], seq_shape[1], bt_shape[2], sm_shape[1];
  attn_tensor_t qsl_t, seq_t, bound_t, local_t, bt_t, sm_t, causal_t, prefilling_t, pos_t;
  attn_common_metadata_t common;
} batch_t;

static attn_tensor_t host_tensor(void* data, int32_t ndim, int64_t* shape, uint8_t bits) {
  attn_tensor_t t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = ATTN_DEVICE_CPU;
  t.ndim = ndim;
  t.dtype.code = 0; /* kDLInt */
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

/* Host arrays of n entries (zeroed) followed by kGuard sentinels, so that a library reading past
 * the end of an input reads the same values in every run (and shows them). */
enum { kGuard = 64 };
static const int32_t kSentinel = -777777;
static void* guarded(size_t n, size_t size) {
  char* p = (char*)calloc(n + kGuard, size);
  size_t i;
  for (i = n * size; i + 4 <= (n + kGuard) * size; i += 4) memcpy(p + i, &kSentinel, 4);
  return p;
}

static void batch_free(batch_t* b) {
  if (b == NULL) return;
  free(b->qsl);
  free(b->seq);
  free(b->bound);
  free(b->local);
  free(b->bt);
  free(b->slots);
  free(b->causal_rows);
  free(b->prefilling);
  free(b->positions);
  free(b);
}

/* What a batch looks like: query and sequence lengths, and which optional inputs it carries. */
typedef struct {
  int64_t n;
  int32_t q[16], s[16], extra[16]; /* extra: how far the upper bound is above s */
  int64_t pad_tokens, extra_width;
  int with_seq_cpu, with_bound, causal, causal_rows, dcp, dcp_rank, interleave;
  int64_t max_logits;
} shape_t;

static batch_t* batch_make(const shape_t* p, int32_t block_size, uint64_t* rs) {
  batch_t* b = (batch_t*)calloc(1, sizeof *b);
  const attn_common_metadata_t init = ATTN_COMMON_METADATA_INIT;
  int64_t r, t = 0, max_q = 0, max_s = 0, sum = 0;
  for (r = 0; r < p->n; ++r) {
    sum += p->q[r];
    if (p->q[r] > max_q) max_q = p->q[r];
    if (p->s[r] + p->extra[r] > max_s) max_s = p->s[r] + p->extra[r];
  }
  b->n = p->n;
  b->tokens = sum + p->pad_tokens;
  b->width = (max_s + block_size - 1) / block_size + p->extra_width;
  if (b->width < 1) b->width = 1;
  b->qsl = (int32_t*)guarded((size_t)p->n + 1, 4);
  b->seq = (int32_t*)guarded((size_t)p->n, 4);
  b->bound = (int32_t*)guarded((size_t)p->n, 4);
  b->local = (int32_t*)guarded((size_t)p->n, 4);
  b->causal_rows = (int32_t*)guarded((size_t)p->n, 4);
  b->prefilling = (int32_t*)guarded((size_t)p->n, 4);
  b->bt = (int32_t*)guarded((size_t)(p->n * b->width), 4);
  b->slots = (int64_t*)guarded((size_t)b->tokens, 8);
  b->positions = (int64_t*)guarded((size_t)b->tokens, 8);
  for (r = 0; r < p->n; ++r) {
    int64_t j, pos;
    b->qsl[r + 1] = b->qsl[r] + p->q[r];
    b->seq[r] = p->s[r];
    b->bound[r] = p->s[r] + p->extra[r];
    b->causal_rows[r] = 1;
    b->prefilling[r] = p->q[r] > 1 && p->s[r] == p->q[r];
    for (j = 0; j < b->width; ++j) b->bt[r * b->width + j] = (int32_t)range(rs, 1, 100000);
    for (pos = p->s[r] - p->q[r]; pos < p->s[r]; ++pos, ++t) {
      b->slots[t] = (int64_t)b->bt[r * b->width + pos / block_size] * block_size + pos % block_size;
      b->positions[t] = pos;
    }
    if (p->dcp > 1) { /* vLLM's get_dcp_local_seq_lens */
      const int64_t span = (int64_t)p->dcp * p->interleave, full = p->s[r] / span;
      int64_t rest = p->s[r] - full * span - (int64_t)p->dcp_rank * p->interleave;
      rest = rest < 0 ? 0 : rest > p->interleave ? p->interleave : rest;
      b->local[r] = (int32_t)(full * p->interleave + rest);
    }
  }
  for (; t < b->tokens; ++t) b->slots[t] = -1;
  b->qsl_shape[0] = p->n + 1;
  b->seq_shape[0] = p->n;
  b->bt_shape[0] = p->n;
  b->bt_shape[1] = b->width;
  b->sm_shape[0] = b->tokens;
  b->qsl_t = host_tensor(b->qsl, 1, b->qsl_shape, 32);
  b->seq_t = host_tensor(b->seq, 1, b->seq_shape, 32);
  b->bound_t = host_tensor(b->bound, 1, b->seq_shape, 32);
  b->local_t = host_tensor(b->local, 1, b->seq_shape, 32);
  b->causal_t = host_tensor(b->causal_rows, 1, b->seq_shape, 32);
  b->prefilling_t = host_tensor(b->prefilling, 1, b->seq_shape, 32);
  b->pos_t = host_tensor(b->positions, 1, b->sm_shape, 64);
  b->bt_t = host_tensor(b->bt, 2, b->bt_shape, 32);
  b->sm_t = host_tensor(b->slots, 1, b->sm_shape, 64);
  b->common = init;
  b->common.query_start_loc = &b->qsl_t;
  b->common.query_start_loc_cpu = &b->qsl_t;
  b->common.seq_lens = &b->seq_t;
  if (p->with_seq_cpu) b->common.seq_lens_cpu = &b->seq_t;
  if (p->with_bound) b->common.seq_lens_cpu_upper_bound = &b->bound_t;
  b->common.num_reqs = p->n;
  b->common.num_actual_tokens = b->tokens;
  b->common.max_query_len = max_q;
  b->common.max_seq_len = max_s;
  b->common.block_table_tensor = &b->bt_t;
  b->common.slot_mapping = &b->sm_t;
  b->common.causal = p->causal;
  if (p->causal_rows) b->common.causal_per_request = &b->causal_t;
  b->common.max_logits_per_req = p->max_logits;
  b->common.is_prefilling = &b->prefilling_t;
  b->common.positions = &b->pos_t;
  if (p->dcp > 1) {
    b->common.dcp_local_seq_lens = &b->local_t;
    b->common.dcp_local_seq_lens_cpu = &b->local_t;
  }
  return b;
}

/* A random batch for a builder of threshold `th` (decodes first, as a reorder leaves them). */
static void random_shape(uint64_t* rs, const attn_builder_config_t* c, int32_t th, shape_t* p) {
  const int mode = (int)range(rs, 0, 9);
  int64_t r, budget = c->max_num_batched_tokens, room;
  const int64_t max_n = c->max_num_seqs < 12 ? c->max_num_seqs : 12;
  const int32_t uq = (int32_t)range(rs, 1, th > 1 ? th : 1);
  memset(p, 0, sizeof *p);
  p->n = range(rs, mode == 9 ? 0 : 1, max_n);
  p->causal = mode != 8;
  p->with_seq_cpu = range(rs, 0, 3) != 0;
  p->with_bound = range(rs, 0, 2) != 0 || !p->with_seq_cpu;
  p->dcp = c->decode_context_parallel_size;
  p->dcp_rank = c->dcp_rank;
  p->interleave = c->cp_kv_cache_interleave_size < 1 ? 1 : c->cp_kv_cache_interleave_size;
  p->max_logits = range(rs, 0, 5) == 0 ? uq : -1;
  p->causal_rows = range(rs, 0, 15) == 0;
  p->extra_width = range(rs, 0, 3) == 0 ? range(rs, 1, 3) : 0;
  for (r = 0; r < p->n; ++r) {
    /* modes: 0-2 decodes only, 3-5 mixed, 6 prefills only, 7 uniform spec decodes, 8 a
     * non-causal uniform block, 9 mixed with zero-length padding rows at the end */
    const int decode = mode <= 2 || mode == 7 || mode == 8 ||
                       ((mode >= 3 && mode <= 5) || mode == 9 ? r < p->n / 2 : 0);
    int32_t q, ctx;
    if (mode == 9 && r >= p->n - 2 && p->n > 2) {
      p->q[r] = 0;
      p->s[r] = (int32_t)range(rs, 0, 1);
      continue;
    }
    if (decode)
      q = (mode == 7 || mode == 8) ? uq : (int32_t)range(rs, 1, th > 1 ? th : 1);
    else
      q = (int32_t)range(rs, th + 1, th + 1 + (range(rs, 0, 3) ? 40 : 600));
    room = c->max_model_len - q;
    ctx = room <= 0
              ? 0
              : (int32_t)(decode || range(rs, 0, 2) ? range(rs, decode, room < 5000 ? room : 5000)
                                                    : 0);
    if (q > budget) q = (int32_t)(budget > 0 ? budget : 0);
    if (q == 0 && !decode) ctx = ctx > 0 ? ctx : 1;
    budget -= q;
    p->q[r] = q;
    p->s[r] = q + ctx;
    /* an async spec-decode row's optimistic bound */
    p->extra[r] = decode && p->with_bound && range(rs, 0, 4) == 0 ? (int32_t)range(rs, 1, 3) : 0;
    if (p->s[r] + p->extra[r] > c->max_model_len) p->extra[r] = 0;
  }
  p->pad_tokens = range(rs, 0, 3) == 0 && budget > 4 ? range(rs, 1, 4) : 0;
}

/* ---- printing ---------------------------------------------------------------------------- */
static void print_error(const char* what, attn_error_t* e) {
  printf("  %s: error %d: %s\n", what, A->attn_error_code(e), A->attn_error_message(e));
  A->attn_error_destroy(e);
}

static int64_t element(const attn_tensor_t* t, int64_t flat) {
  int64_t off = 0, rest = flat, d;
  const char* base = (const char*)t->data + t->byte_offset;
  for (d = t->ndim - 1; d >= 0; --d) {
    const int64_t i = t->shape[d] ? rest % t->shape[d] : 0;
    rest = t->shape[d] ? rest / t->shape[d] : 0;
    off += i * (t->strides ? t->strides[d] : 1);
  }
  off *= t->dtype.bits / 8;
  switch (t->dtype.bits) {
    case 8:
      return t->dtype.code == 1 || t->dtype.code == 6 ? *(const uint8_t*)(base + off)
                                                      : *(const int8_t*)(base + off);
    case 16:
      return *(const int16_t*)(base + off);
    case 32:
      return *(const int32_t*)(base + off);
    default:
      return *(const int64_t*)(base + off);
  }
}

static void print_tensor(const attn_tensor_t* t) {
  int64_t n = 1, i, d;
  uint64_t h = 0xcbf29ce484222325ull;
  printf("T dt=%u/%u/%u dev=%d shape=[", t->dtype.code, t->dtype.bits, t->dtype.lanes,
         t->device.device_type);
  for (d = 0; d < t->ndim; ++d) {
    printf(d ? ",%" PRId64 : "%" PRId64, t->shape[d]);
    n *= t->shape[d];
  }
  printf("]");
  if (t->device.device_type != ATTN_DEVICE_CPU || (t->data == NULL && n > 0)) {
    printf(" (not on the host)\n");
    return;
  }
  g_values += n;
  if (n <= 48) {
    printf(" =");
    for (i = 0; i < n; ++i) printf(" %" PRId64, element(t, i));
    printf("\n");
    return;
  }
  for (i = 0; i < n; ++i) h = (h ^ (uint64_t)element(t, i)) * 0x100000001B3ull;
  printf(" n=%" PRId64 " fnv=%016" PRIx64 " head=", n, h);
  for (i = 0; i < 8; ++i) printf(" %" PRId64, element(t, i));
  printf("\n");
}

static void print_metadata(const attn_metadata_t* md) {
  const size_t n = A->attn_metadata_field_count(md);
  size_t i;
  printf("  kind=%s fields=%zu\n", A->attn_metadata_kind(md), n);
  for (i = 0; i < n; ++i) {
    attn_field_t f = ATTN_FIELD_INIT;
    attn_error_t* e = A->attn_metadata_field(md, i, &f);
    if (e != NULL) {
      print_error("field", e);
      continue;
    }
    ++g_fields;
    printf("  %zu %s ", i, f.name);
    switch (f.kind) {
      case ATTN_FIELD_NONE:
        printf("None\n");
        break;
      case ATTN_FIELD_INT:
        printf("I %" PRId64 "\n", f.int_value);
        ++g_values;
        break;
      case ATTN_FIELD_BOOL:
        printf("B %" PRId64 "\n", f.int_value);
        ++g_values;
        break;
      case ATTN_FIELD_FLOAT:
        printf("F %.17g\n", f.float_value);
        ++g_values;
        break;
      case ATTN_FIELD_TENSOR:
        print_tensor(f.tensor);
        break;
      default:
        printf("? kind %d\n", f.kind);
    }
  }
}

static void print_builder(attn_builder_t* b) {
  int32_t level = -1, th = -1, upd = -1, draft = -1, vmax = -1, has = -1;
  attn_error_t* e;
  if ((e = A->attn_builder_cudagraph_support(b, &level)) != NULL) print_error("level", e);
  if ((e = A->attn_builder_reorder_batch_threshold(b, &th)) != NULL) print_error("threshold", e);
  if ((e = A->attn_builder_supports_update_block_table(b, &upd)) != NULL) print_error("update", e);
  if ((e = A->attn_builder_supports_draft_decode_metadata_update(b, &draft)) != NULL)
    print_error("draft", e);
  if ((e = A->attn_builder_varlen_cudagraph_max_query_len(b, &vmax, &has)) != NULL)
    print_error("varlen", e);
  printf("  builder level=%d threshold=%d update_block_table=%d draft_update=%d varlen_max=%d/%d\n",
         level, th, upd, draft, vmax, has);
}

/* ---- names ------------------------------------------------------------------------------- */
/* The first batch of a few simple ones that builds; NULL when none does. */
static attn_metadata_t* build_any(attn_builder_t* b, const attn_builder_config_t* c,
                                  int32_t block_size, int64_t prefix, batch_t** kept) {
  static const int32_t qs[3][3] = {{1, 1, 0}, {1, 40, 0}, {0, 0, 0}};
  static const int32_t ss[3][3] = {{40, 80, 0}, {40, 120, 0}, {0, 0, 0}};
  static const int64_t ns[3] = {2, 2, 0};
  int k;
  for (k = 0; k < 3; ++k) {
    shape_t p;
    uint64_t rs = 1;
    batch_t* bt;
    attn_metadata_t* md = NULL;
    attn_error_t* e;
    memset(&p, 0, sizeof p);
    p.n = ns[k];
    memcpy(p.q, qs[k], sizeof qs[k]);
    memcpy(p.s, ss[k], sizeof ss[k]);
    p.with_seq_cpu = p.with_bound = p.causal = 1;
    p.max_logits = -1;
    p.dcp = c->decode_context_parallel_size;
    p.interleave = 1;
    bt = batch_make(&p, block_size, &rs);
    e = A->attn_build(b, prefix, &bt->common, 0, &md, NULL);
    if (e == NULL) {
      *kept = bt;
      return md;
    }
    if (getenv("METADATA_DUMP_VERBOSE")) fprintf(stderr, "  build: %s\n", A->attn_error_message(e));
    A->attn_error_destroy(e);
    batch_free(bt);
  }
  return NULL;
}

static int names_of(const attn_metadata_t* md, char* out, size_t cap) {
  size_t i, used = 0, n = A->attn_metadata_field_count(md);
  out[0] = 0;
  for (i = 0; i < n; ++i) {
    attn_field_t f = ATTN_FIELD_INIT;
    attn_error_t* e = A->attn_metadata_field(md, i, &f);
    int w;
    if (e != NULL) {
      A->attn_error_destroy(e);
      return -1;
    }
    w = snprintf(out + used, cap - used, "  %zu %s\n", i, f.name);
    if (w < 0 || (size_t)w >= cap - used) return -1;
    used += (size_t)w;
  }
  return (int)n;
}

/* The first candidate backend `i` builds for; -1 when none. */
static int find_candidate(size_t i, const char* name, uint32_t kinds) {
  int k;
  for (k = 0;; ++k) {
    attn_kv_cache_spec_t s;
    attn_builder_config_t c;
    const char* label;
    attn_builder_t* b = NULL;
    attn_error_t* e;
    if (!candidate(k, &s, &c, &label)) return -1;
    if ((kinds & (1u << s.kind)) == 0) continue;
    if ((e = A->attn_builder_create(name, &s, &c, &b)) != NULL) {
      if (getenv("METADATA_DUMP_VERBOSE"))
        fprintf(stderr, "%s [%s]: %s\n", name, label, A->attn_error_message(e));
      A->attn_error_destroy(e);
      continue;
    }
    {
      batch_t* bt = NULL;
      attn_metadata_t* md = build_any(b, &c, s.block_size, 0, &bt);
      batch_free(bt);
      A->attn_builder_destroy(b);
      if (md != NULL) return k;
    }
    (void)i;
  }
}

static int dump_names(FILE* out) {
  const size_t count = A->attn_backend_count();
  size_t i;
  static char plain[1 << 16], cascade[1 << 16];
  fprintf(out,
          "# Every built-in backend's metadata fields in index order (the by-index accessors:\n"
          "# the order is ABI, append fields, never reorder), read through the ABI by\n"
          "# tests/tools/metadata_dump.c; its cascade variant's where it has one. After an\n"
          "# intended change: build/tests/metadata_dump build/libattn.so.1 names > <this file>\n");
  for (i = 0; i < count; ++i) {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    attn_kv_cache_spec_t s;
    attn_builder_config_t c;
    const char* label;
    attn_builder_t* b = NULL;
    attn_metadata_t* md;
    batch_t* bt = NULL;
    int k, n;
    attn_error_t* e = A->attn_backend_info(i, &info);
    if (e != NULL) {
      print_error("info", e);
      return 1;
    }
    k = find_candidate(i, info.name, info.kv_cache_kinds);
    if (k < 0) {
      fprintf(out, "%s: no candidate spec builds\n", info.name);
      continue;
    }
    candidate(k, &s, &c, &label);
    if ((e = A->attn_builder_create(info.name, &s, &c, &b)) != NULL) {
      print_error("create", e);
      return 1;
    }
    md = build_any(b, &c, s.block_size, 0, &bt);
    n = names_of(md, plain, sizeof plain);
    fprintf(out, "%s [%s] %d fields\n%s", info.name, label, n, plain);
    batch_free(bt);
    bt = NULL;
    md = build_any(b, &c, s.block_size, 16, &bt);
    if (md != NULL && names_of(md, cascade, sizeof cascade) >= 0 && strcmp(plain, cascade) != 0)
      fprintf(out, "%s cascade %zu fields\n%s", info.name, A->attn_metadata_field_count(md),
              cascade);
    batch_free(bt);
    A->attn_builder_destroy(b);
  }
  return 0;
}

/* Compares `names` output with the golden file, line by line. */
static int check_names(const char* golden) {
  FILE* got = tmpfile();
  FILE* want = fopen(golden, "r");
  char a[512], b[512];
  int line = 0;
  if (got == NULL || want == NULL) {
    fprintf(stderr, "cannot open %s\n", golden);
    return 1;
  }
  if (dump_names(got) != 0) return 1;
  rewind(got);
  for (;;) {
    char* x = fgets(a, sizeof a, got);
    char* y = fgets(b, sizeof b, want);
    ++line;
    if (x == NULL && y == NULL) break;
    if (x == NULL || y == NULL || strcmp(a, b) != 0) {
      fprintf(stderr, "%s:%d differs:\n  golden: %s  library: %s", golden, line, y ? b : "(end)\n",
              x ? a : "(end)\n");
      fprintf(stderr,
              "The field order is ABI (docs/abi-policy.md): append fields, never reorder. "
              "After an intended change regenerate the file (its first lines say how).\n");
      return 1;
    }
  }
  printf("%d lines equal to %s\n", line - 1, golden);
  return 0;
}

/* ---- values ------------------------------------------------------------------------------ */
static void random_config(uint64_t* rs, attn_kv_cache_spec_t* s, attn_builder_config_t* c) {
  static const int32_t seqs[] = {8, 64, 256}, tokens[] = {512, 2048, 8192},
                       lens[] = {1024, 4096, 16384}, heads[] = {8, 16, 32, 64, 128},
                       spec_k[] = {0, 0, 1, 2, 3}, dcp[] = {1, 1, 1, 2, 4},
                       interleave[] = {1, 1, 8, 16}, caps[] = {90, 100, 100, 120, 80},
                       cache[] = {ATTN_KV_DTYPE_AUTO, ATTN_KV_DTYPE_BFLOAT16, ATTN_KV_DTYPE_FLOAT16,
                                  ATTN_KV_DTYPE_FP8_E4M3, ATTN_KV_DTYPE_FP8_E5M2},
                       model[] = {ATTN_KV_DTYPE_AUTO, ATTN_KV_DTYPE_BFLOAT16,
                                  ATTN_KV_DTYPE_FLOAT16},
                       capture[] = {0, 0, 64, 512}, workspace[] = {0, 0, 0, 128, 1024},
                       blocks[] = {16, 32, 64, 64, 128}, topk[] = {0, 0, 512, 128};
  static attn_per_layer_params_t layers[2];
  c->max_num_seqs = PICK(rs, seqs);
  c->max_num_batched_tokens = PICK(rs, tokens);
  c->max_model_len = PICK(rs, lens);
  c->num_attention_heads = PICK(rs, heads);
  c->num_speculative_tokens = PICK(rs, spec_k);
  c->parallel_drafting = c->num_speculative_tokens > 0 && range(rs, 0, 3) == 0;
  c->use_v2_model_runner = range(rs, 0, 2) == 0;
  c->decode_context_parallel_size = PICK(rs, dcp);
  c->dcp_rank = (int32_t)range(rs, 0, c->decode_context_parallel_size - 1);
  c->cp_kv_cache_interleave_size = PICK(rs, interleave);
  c->cudagraph_mode = (int32_t)range(rs, 0, 4);
  c->max_cudagraph_capture_size = PICK(rs, capture);
  /* half the time the candidate's cache, capability and block size, which its backend takes */
  if (range(rs, 0, 1)) c->cache_dtype = PICK(rs, cache);
  if (!c->platform_rocm && range(rs, 0, 1)) c->device_capability = PICK(rs, caps);
  c->flash_attn_version = (int32_t)(range(rs, 0, 2) == 0 ? 0 : range(rs, 2, 3));
  c->batch_invariant = range(rs, 0, 7) == 0;
  c->model_dtype = PICK(rs, model);
  c->mla_chunked_prefill_workspace_size = PICK(rs, workspace);
  c->num_sms = range(rs, 0, 1) ? 132 : 0;
  c->enable_adaptive_verification = range(rs, 0, 2) == 0;
  c->mla_prefill_backend = (int32_t)(range(rs, 0, 1) ? 0 : range(rs, 1, 4));
  c->use_prefill_query_quantization = range(rs, 0, 2) == 0;
  if (range(rs, 0, 3) == 0) { /* DeepSeek-V3.2's dimensions */
    c->mla_qk_nope_head_dim = 192;
    c->mla_v_head_dim = 256;
  }
  if (range(rs, 0, 3) == 0) {
    const attn_per_layer_params_t init = ATTN_PER_LAYER_PARAMS_INIT;
    layers[0] = init;
    layers[0].sm_scale = 0.0625 * (double)range(rs, 1, 4);
    layers[1] = layers[0];
    c->layers = layers;
    c->num_layers = 2;
  }
  if (s->kind == ATTN_KV_MLA) {
    if (range(rs, 0, 1)) s->block_size = PICK(rs, blocks);
    s->index_topk = PICK(rs, topk);
    if (range(rs, 0, 3) == 0) s->dtype = ATTN_KV_DTYPE_FP8_E4M3;
  }
}

static void print_knobs(const attn_kv_cache_spec_t* s, const attn_builder_config_t* c) {
  printf("  spec kind=%d block=%d heads=%d head=%d dtype=%d topk=%d\n", s->kind, s->block_size,
         s->num_kv_heads, s->head_size, s->dtype, s->index_topk);
  printf(
      "  config seqs=%d tokens=%d len=%d heads=%d k=%d pd=%d v2=%d dcp=%d/%d/%d cg=%d/%d "
      "cache=%d cap=%d fa=%d bi=%d model=%d ws=%d sms=%d av=%d pb=%d pq=%d dims=%d/%d layers=%zu "
      "rocm=%d\n",
      c->max_num_seqs, c->max_num_batched_tokens, c->max_model_len, c->num_attention_heads,
      c->num_speculative_tokens, c->parallel_drafting, c->use_v2_model_runner,
      c->decode_context_parallel_size, c->dcp_rank, c->cp_kv_cache_interleave_size,
      c->cudagraph_mode, c->max_cudagraph_capture_size, c->cache_dtype, c->device_capability,
      c->flash_attn_version, c->batch_invariant, c->model_dtype,
      c->mla_chunked_prefill_workspace_size, c->num_sms, c->enable_adaptive_verification,
      c->mla_prefill_backend, c->use_prefill_query_quantization, c->mla_qk_nope_head_dim,
      c->mla_v_head_dim, c->num_layers, c->platform_rocm);
}

static void run_batches(attn_builder_t* b, const attn_kv_cache_spec_t* s,
                        const attn_builder_config_t* c, uint64_t* rs, int batches) {
  int32_t th = 1, draft = 0;
  int k;
  attn_error_t* e = A->attn_builder_reorder_batch_threshold(b, &th);
  if (e != NULL) A->attn_error_destroy(e), th = 1;
  if (th < 1) th = 1;
  if ((e = A->attn_builder_supports_draft_decode_metadata_update(b, &draft)) != NULL)
    A->attn_error_destroy(e), draft = 0;
  for (k = 0; k < batches; ++k) {
    shape_t p;
    batch_t* bt;
    attn_metadata_t* md = NULL;
    const int how = (int)range(rs, 0, 9); /* 0: capture, 1: drafting, else a build */
    const int fast = (int)range(rs, 0, 1);
    random_shape(rs, c, th, &p);
    bt = batch_make(&p, s->block_size, rs);
    printf(" batch %d how=%d n=%" PRId64 " tokens=%" PRId64 " width=%" PRId64 " q=", k, how, p.n,
           bt->tokens, bt->width);
    {
      int64_t r;
      for (r = 0; r < p.n; ++r) printf(r ? ",%d/%d+%d" : "%d/%d+%d", p.q[r], p.s[r], p.extra[r]);
    }
    printf(" cpu=%d bound=%d causal=%d/%d logits=%" PRId64 "\n", p.with_seq_cpu, p.with_bound,
           p.causal, p.causal_rows, p.max_logits);
    ++g_builds;
    if (how == 0)
      e = A->attn_build_for_cudagraph_capture(b, &bt->common, &md, NULL);
    else if (how == 1)
      e = A->attn_build_for_drafting(b, &bt->common, 0, &md, NULL);
    else
      e = A->attn_build(b, 0, &bt->common, fast, &md, NULL);
    if (e != NULL) {
      ++g_failed;
      print_error("build", e);
    } else {
      print_metadata(md);
      if (draft && how != 0) {
        e = A->attn_update_draft_decode_metadata(b, md, NULL);
        if (e != NULL)
          print_error("draft update", e);
        else {
          printf("  after draft update\n");
          print_metadata(md);
        }
      }
    }
    batch_free(bt);
  }
}

static int dump_values(uint64_t seed, int configs, int batches, const char* only) {
  const size_t count = A->attn_backend_count();
  size_t i;
  for (i = 0; i < count; ++i) {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    int k, j;
    attn_error_t* e = A->attn_backend_info(i, &info);
    if (e != NULL) {
      print_error("info", e);
      return 1;
    }
    if (only != NULL && strstr(info.name, only) == NULL) continue;
    k = find_candidate(i, info.name, info.kv_cache_kinds);
    printf("== %s candidate %d\n", info.name, k);
    if (k < 0) continue;
    for (j = 0; j < configs; ++j) {
      attn_kv_cache_spec_t s;
      attn_builder_config_t c;
      const char* label;
      attn_builder_t* b = NULL;
      uint64_t rs = hash_str(seed * 0x100000001B3ull + (uint64_t)j, info.name);
      int tries;
      /* config 0: the candidate as it is; else random ones until one is accepted (6 tries) */
      for (tries = 0; tries < (j == 0 ? 1 : 6) && b == NULL; ++tries) {
        size_t ws = 0;
        candidate(k, &s, &c, &label);
        if (j > 0) random_config(&rs, &s, &c);
        printf("= %s config %d try %d\n", info.name, j, tries);
        print_knobs(&s, &c);
        ++g_builders;
        if ((e = A->attn_builder_workspace_size(info.name, &s, &c, &ws)) != NULL)
          print_error("workspace", e);
        else
          printf("  workspace=%zu\n", ws);
        if ((e = A->attn_builder_create(info.name, &s, &c, &b)) != NULL) {
          ++g_refused;
          print_error("create", e);
          b = NULL;
        }
      }
      if (b == NULL) continue;
      print_builder(b);
      run_batches(b, &s, &c, &rs, batches);
      A->attn_builder_destroy(b);
    }
  }
  printf(
      "summary: %lld builders (%lld refused), %lld builds (%lld refused), %lld fields, %lld "
      "values\n",
      g_builders, g_refused, g_builds, g_failed, g_fields, g_values);
  return 0;
}

int main(int argc, char** argv) {
  void* lib;
  PFN_attn_get_api get_api;
  attn_error_t* e;
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s LIB names [--check FILE] | LIB values [--seed S] [--configs N] "
            "[--batches K] [--only SUBSTRING]\n",
            argv[0]);
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
  *(void**)(&get_api) = dlsym(lib, "attn_get_api");
  if (get_api == NULL || (e = get_api(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR, &A)) != NULL) {
    fprintf(stderr, "attn_get_api failed\n");
    return 1;
  }
  if (strcmp(argv[2], "names") == 0) {
    if (argc == 5 && strcmp(argv[3], "--check") == 0) return check_names(argv[4]);
    return dump_names(stdout);
  }
  if (strcmp(argv[2], "values") == 0) {
    uint64_t seed = 1;
    int configs = 24, batches = 12, a;
    const char* only = NULL;
    for (a = 3; a + 1 < argc; a += 2) {
      if (strcmp(argv[a], "--seed") == 0)
        seed = strtoull(argv[a + 1], NULL, 10);
      else if (strcmp(argv[a], "--configs") == 0)
        configs = atoi(argv[a + 1]);
      else if (strcmp(argv[a], "--batches") == 0)
        batches = atoi(argv[a + 1]);
      else if (strcmp(argv[a], "--only") == 0)
        only = argv[a + 1];
    }
    return dump_values(seed, configs, batches, only);
  }
  fprintf(stderr, "unknown mode %s\n", argv[2]);
  return 2;
}
