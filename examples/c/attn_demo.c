/*
 * libattn demo: loads libattn with dlopen (no link-time dependency; one symbol, attn_get_api,
 * gives every function), lists every registered backend with its CUDA graph support, reorder
 * threshold and vLLM names, each on a spec of a kind it accepts (attn_backend_info), builds FLASH_ATTN metadata
 * for a sample mixed batch (decodes, a chunked prefill, a fresh prefill) on the host and prints
 * it, then builds the same batch with every other built-in backend and with two of vLLM's
 * wrappers (chunked local attention, KV-sharing fast prefill), chosen by the spec's kind and a
 * config option.
 *
 *   attn_demo [path/to/libattn.so.1] [--plugin path/to/plugin.so]
 *
 * Without a path it uses $ATTN_LIBRARY, then "libattn.so.1" from the loader's search path.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_c.h"

/* Every libattn function, from the one symbol the demo resolves with dlsym: attn_get_api's
 * table (ABI 1.3). */
static const attn_api_t* A;

/* Prints and releases an error; returns 1 when there was one. */
static int report(attn_error_t* err, const char* what) {
  if (err == NULL) return 0;
  fprintf(stderr, "attn_demo: %s failed: [%s] %s\n", what, A->attn_status_string(A->attn_error_code(err)),
          A->attn_error_message(err));
  A->attn_error_destroy(err);
  return 1;
}

static const char* level_name(int32_t level) {
  switch (level) {
    case ATTN_CG_NEVER: return "NEVER";
    case ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE: return "UNIFORM_SINGLE_TOKEN_DECODE";
    case ATTN_CG_UNIFORM_BATCH: return "UNIFORM_BATCH";
    case ATTN_CG_ALWAYS: return "ALWAYS";
    default: return "?";
  }
}

/* ---- the sample batch ----------------------------------------------------------------------- */
enum { kReqs = 5, kBlockSize = 16, kMaxModelLen = 1024, kWidth = kMaxModelLen / kBlockSize };

struct batch {
  int32_t query_start_loc[kReqs + 1];
  int32_t seq_lens[kReqs];
  int32_t block_table[kReqs][kWidth];
  int64_t slot_mapping[256];
  uint8_t is_prefilling[kReqs];
  int64_t positions[256];
  int64_t qsl_shape[1], seq_shape[1], bt_shape[2], sm_shape[1];
  attn_tensor_t qsl, seq, bt, sm, prefilling, pos;
  attn_common_metadata_t common;
};

static attn_tensor_t host_tensor(void* data, int32_t ndim, int64_t* shape, uint8_t bits) {
  attn_tensor_t t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = ATTN_DEVICE_CPU;
  t.ndim = ndim;
  t.dtype.code = ATTN_DTYPE_INT;
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

/* Three decodes, a chunked prefill (64 tokens cached, 32 scheduled) and a fresh prefill; the last
 * two are still in their prompts (vLLM 0.33's is_prefilling, which the Mamba family requires);
 * the tokens' positions (which DEEPSEEK_V41_COMPRESSOR requires). */
static void make_batch(struct batch* b) {
  static const int32_t context[kReqs] = {40, 99, 16, 64, 0};
  static const int32_t query[kReqs] = {1, 1, 1, 32, 20};
  const attn_common_metadata_t init = ATTN_COMMON_METADATA_INIT;
  int32_t next_block = 1; /* block 0 is vLLM's null block */
  int64_t token = 0;
  int r, j;
  memset(b, 0, sizeof *b);
  b->query_start_loc[0] = 0;
  for (r = 0; r < kReqs; ++r) {
    const int32_t seq = context[r] + query[r];
    const int32_t blocks = (seq + kBlockSize - 1) / kBlockSize;
    int32_t p;
    b->seq_lens[r] = seq;
    b->query_start_loc[r + 1] = b->query_start_loc[r] + query[r];
    for (j = 0; j < blocks; ++j) b->block_table[r][j] = next_block++;
    for (p = context[r]; p < seq; ++p) {
      b->positions[token] = p;
      b->slot_mapping[token++] =
          (int64_t)b->block_table[r][p / kBlockSize] * kBlockSize + p % kBlockSize;
    }
  }
  b->qsl_shape[0] = kReqs + 1;
  b->seq_shape[0] = kReqs;
  b->bt_shape[0] = kReqs;
  b->bt_shape[1] = kWidth;
  b->sm_shape[0] = token;
  b->qsl = host_tensor(b->query_start_loc, 1, b->qsl_shape, 32);
  b->seq = host_tensor(b->seq_lens, 1, b->seq_shape, 32);
  b->bt = host_tensor(b->block_table, 2, b->bt_shape, 32);
  b->sm = host_tensor(b->slot_mapping, 1, b->sm_shape, 64);
  b->pos = host_tensor(b->positions, 1, b->sm_shape, 64);
  for (r = 0; r < kReqs; ++r) b->is_prefilling[r] = r >= 3;
  b->prefilling = host_tensor(b->is_prefilling, 1, b->seq_shape, 8);
  b->prefilling.dtype.code = ATTN_DTYPE_BOOL;
  b->common = init;
  b->common.query_start_loc = &b->qsl;
  b->common.seq_lens = &b->seq;
  b->common.num_reqs = kReqs;
  b->common.num_actual_tokens = token;
  b->common.max_query_len = 32;
  b->common.max_seq_len = 100;
  b->common.block_table_tensor = &b->bt;
  b->common.slot_mapping = &b->sm;
  b->common.is_prefilling = &b->prefilling;
  b->common.positions = &b->pos;
}

/* ---- printing --------------------------------------------------------------------------------- */
static const char* dtype_name(attn_dtype_t d) {
  switch (d.code) {
    case ATTN_DTYPE_INT: return "int";
    case ATTN_DTYPE_UINT: return "uint";
    case ATTN_DTYPE_FLOAT: return "float";
    case ATTN_DTYPE_BFLOAT: return "bfloat";
    case ATTN_DTYPE_BOOL: return "bool";
    default: return "dtype";
  }
}

static void print_tensor(const attn_tensor_t* t) {
  int64_t n = 1, i, shown;
  int d;
  const int is_int = t->dtype.code == ATTN_DTYPE_INT && (t->dtype.bits == 32 || t->dtype.bits == 64);
  const int is_f32 = t->dtype.code == ATTN_DTYPE_FLOAT && t->dtype.bits == 32;
  const int is_bool = t->dtype.code == ATTN_DTYPE_BOOL && t->dtype.bits == 8;
  printf("tensor ");
  printf("(");
  for (d = 0; d < t->ndim; ++d) printf(d ? ", %" PRId64 : "%" PRId64, t->shape[d]);
  printf(t->ndim == 1 ? ",) " : ") ");
  printf("%s%d", dtype_name(t->dtype), t->dtype.bits);
  if (t->device.device_type != ATTN_DEVICE_CPU) {
    printf(" on device type %d", t->device.device_type);
    return;
  }
  if (t->ndim > 2 || (!is_int && !is_f32 && !is_bool)) return; /* scratch: the shape says enough */
  if (t->ndim == 2) { /* the first row only */
    n = t->shape[1] < 8 ? t->shape[1] : 8;
    printf(" row 0:");
  } else {
    for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  }
  shown = n < 12 ? n : 12;
  printf(" [");
  for (i = 0; i < shown; ++i) {
    const char* base = (const char*)t->data + t->byte_offset;
    /* 1-D views may be strided (a block-table column); the libattn fills `strides` always */
    const int64_t at = t->ndim == 1 && t->strides != NULL ? i * t->strides[0] : i;
    if (i) printf(", ");
    if (is_bool)
      printf(((const unsigned char*)base)[at] ? "True" : "False");
    else if (is_f32)
      printf("%g", (double)((const float*)base)[at]);
    else
      printf("%" PRId64, t->dtype.bits == 64 ? ((const int64_t*)base)[at] : ((const int32_t*)base)[at]);
  }
  printf(shown < n ? ", ...]" : "]");
}

static void print_field(const attn_field_t* f) {
  printf("  %-32s ", f->name);
  switch (f->kind) {
    case ATTN_FIELD_NONE: printf("None"); break;
    case ATTN_FIELD_INT: printf("%" PRId64, f->int_value); break;
    case ATTN_FIELD_BOOL: printf(f->int_value ? "True" : "False"); break;
    case ATTN_FIELD_FLOAT: printf("%g", f->float_value); break;
    case ATTN_FIELD_TENSOR: print_tensor(f->tensor); break;
    default: printf("?"); break;
  }
  printf("\n");
}

static int print_metadata(const attn_metadata_t* m, int skip_none) {
  size_t i, n = A->attn_metadata_field_count(m);
  for (i = 0; i < n; ++i) {
    attn_field_t f = ATTN_FIELD_INIT;
    if (report(A->attn_metadata_field(m, i, &f), "attn_metadata_field")) return 1;
    if (skip_none && f.kind == ATTN_FIELD_NONE) continue;
    print_field(&f);
  }
  return 0;
}

/* The engine config of the demo: 256 sequences, 8192 tokens, 32 query heads, a KV cache of
 * 4096 blocks (FLEX_ATTENTION needs the count), compute capability `capability`. */
static attn_builder_config_t demo_config(int32_t capability) {
  attn_builder_config_t c = ATTN_BUILDER_CONFIG_INIT;
  c.max_num_seqs = 256;
  c.max_num_batched_tokens = 8192;
  c.max_model_len = kMaxModelLen;
  c.num_attention_heads = 32;
  c.device_capability = capability;
  c.num_gpu_blocks = 4096;
  return c;
}

/* The demo's KV cache spec of one kind: the full-attention spec it was given, vLLM's
 * MLAAttentionSpec (one latent head of 512 + 64, block 128: a multiple of every MLA kernel's block
 * size) or MambaSpec (a state slot per request, "none" cache mode, Mamba2's 16-token scan
 * chunks). */
static const attn_kv_cache_spec_t* spec_of_kind(int32_t kind, const attn_kv_cache_spec_t* full) {
  static attn_kv_cache_spec_t mamba_spec = ATTN_KV_CACHE_SPEC_INIT;
  static attn_kv_cache_spec_t mla_spec = ATTN_KV_CACHE_SPEC_INIT;
  static attn_kv_cache_spec_t mla256_spec = ATTN_KV_CACHE_SPEC_INIT;
  mamba_spec.kind = ATTN_KV_MAMBA;
  mamba_spec.block_size = kBlockSize;
  mamba_spec.num_kv_heads = mamba_spec.head_size = 1; /* MambaSpec has no heads */
  mamba_spec.mamba_chunk_size = 16;
  mla_spec.kind = ATTN_KV_MLA;
  mla_spec.block_size = 128;
  mla_spec.num_kv_heads = 1;
  mla_spec.head_size = 576;
  mla256_spec = mla_spec;
  mla256_spec.block_size = 256;
  switch (kind) {
    case ATTN_KV_MLA: return &mla_spec;
    case -ATTN_KV_MLA: return &mla256_spec; /* DeepSeek V4's sparse MLA: kernel block 256 */
    case ATTN_KV_MAMBA: return &mamba_spec;
    default: return full;
  }
}

/* A builder of backend `index` on the first of the demo's specs (full attention, MLA, Mamba)
 * whose kind the backend accepts (attn_backend_info) and that it builds for, with the config's
 * cache dtype and then FP8 (for the backends whose caches are FP8 only, as TOKENSPEED_MLA): a
 * spec per kind, no list of backend names. A plugin's backend accepts every kind as far as the
 * library knows, so its builder's ATTN_ERR_UNSUPPORTED moves on to the next kind. *cache_dtype
 * is the cache dtype the builder was made with. Returns 2 when every attempt is unsupported (a
 * backend that needs its model's settings, as DEEPSEEK_V41_SPARSE_INDEXER). */
static int backend_builder(size_t index, const attn_kv_cache_spec_t* full,
                           const attn_builder_config_t* config, attn_backend_info_t* info,
                           const attn_kv_cache_spec_t** out_spec, int32_t* cache_dtype,
                           attn_builder_t** out) {
  /* -ATTN_KV_MLA: the MLA spec again with block 256 (DeepSeek V4's sparse MLA kernels) */
  static const int32_t kinds[4] = {ATTN_KV_FULL_ATTENTION, ATTN_KV_MLA, -ATTN_KV_MLA,
                                   ATTN_KV_MAMBA};
  const int32_t cache_dtypes[2] = {config->cache_dtype, ATTN_KV_DTYPE_FP8_E4M3};
  int k, d;
  if (report(A->attn_backend_info(index, info), "attn_backend_info")) return 1;
  for (k = 0; k < 4; ++k) {
    const attn_kv_cache_spec_t* spec = spec_of_kind(kinds[k], full);
    if ((info->kv_cache_kinds & (1u << spec->kind)) == 0) continue;
    for (d = 0; d < 2; ++d) {
      attn_builder_config_t c = *config;
      attn_error_t* err;
      c.cache_dtype = cache_dtypes[d];
      err = A->attn_builder_create(info->name, spec, &c, out);
      if (err == NULL) {
        *out_spec = spec;
        *cache_dtype = c.cache_dtype;
        return 0;
      }
      if (A->attn_error_code(err) != ATTN_ERR_UNSUPPORTED) return report(err, "attn_builder_create");
      A->attn_error_destroy(err);
    }
  }
  return 2;
}

static int list_backends(const attn_kv_cache_spec_t* spec) {
  static const int32_t capabilities[3] = {90, 80, 100}; /* H100/H200, A100, B200 */
  const attn_builder_config_t hopper = demo_config(90);
  size_t i, n = A->attn_backend_count();
  int k;
  printf("%zu backend(s):\n", n);
  printf("  %-16s %-29s %-29s %-29s %-8s %-18s %s\n", "backend", "cudagraph (sm90)",
         "cudagraph (sm80)", "cudagraph (sm100)", "reorder", "update_block_table",
         "vLLM names (ABI 1.7: each one is accepted as the backend name)");
  for (i = 0; i < n; ++i) {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    const attn_kv_cache_spec_t* backend_spec = NULL;
    const char* name;
    const char* vllm_names;
    int32_t levels[3] = {-1, -1, -1}, threshold = 0, update = 0, cache_dtype = 0;
    attn_builder_t* builder = NULL;
    char reorder[16];
    k = backend_builder(i, spec, &hopper, &info, &backend_spec, &cache_dtype, &builder);
    /* NULL from a library older than 1.7; "" where vLLM has no name of its own for it */
    vllm_names = info.vllm_names != NULL && info.vllm_names[0] != '\0' ? info.vllm_names : "-";
    if (k == 2) {
      printf("  %-16s (refused on the demo's specs and configs: it needs its model's settings; "
             "vLLM names: %s)\n", info.name, vllm_names);
      continue;
    }
    if (k != 0) return 1;
    name = info.name;
    for (k = 0; k < 3; ++k) {
      attn_builder_config_t c = demo_config(capabilities[k]);
      c.cache_dtype = cache_dtype;
      if (report(A->attn_backend_cudagraph_support(name, backend_spec, &c, &levels[k]),
                 "attn_backend_cudagraph_support")) {
        A->attn_builder_destroy(builder);
        return 1;
      }
    }
    if (report(A->attn_builder_reorder_batch_threshold(builder, &threshold), "reorder threshold") ||
        report(A->attn_builder_supports_update_block_table(builder, &update), "update_block_table")) {
      A->attn_builder_destroy(builder);
      return 1;
    }
    A->attn_builder_destroy(builder);
    if (threshold == ATTN_NO_REORDER)
      snprintf(reorder, sizeof reorder, "None");
    else
      snprintf(reorder, sizeof reorder, "%d", threshold);
    printf("  %-16s %-29s %-29s %-29s %-8s %-18s %s\n", name, level_name(levels[0]),
           level_name(levels[1]), level_name(levels[2]), reorder, update ? "yes" : "no",
           vllm_names);
  }
  return 0;
}

/* Builds the batch with `backend` and prints the metadata kind, its field count and `fields`. */
static int build_and_show(const char* backend, const attn_kv_cache_spec_t* spec,
                          const attn_builder_config_t* config, const attn_common_metadata_t* common,
                          const char* const* fields) {
  attn_builder_t* builder = NULL;
  attn_metadata_t* md = NULL;
  size_t k;
  if (report(A->attn_builder_create(backend, spec, config, &builder), "attn_builder_create")) return 1;
  if (report(A->attn_build(builder, 0, common, 0, &md, NULL), "attn_build")) {
    A->attn_builder_destroy(builder);
    return 1;
  }
  printf("\n%s (%zu fields):\n", A->attn_metadata_kind(md), A->attn_metadata_field_count(md));
  for (k = 0; fields[k] != NULL; ++k) {
    attn_field_t f = ATTN_FIELD_INIT;
    if (report(A->attn_metadata_get(md, fields[k], &f), "attn_metadata_get")) {
      A->attn_builder_destroy(builder);
      return 1;
    }
    print_field(&f);
  }
  A->attn_builder_destroy(builder);
  return 0;
}

/* One pass of print_own_fields: tensor fields or the others. */
static int print_own_fields_of_kind(const attn_metadata_t* md, const attn_metadata_t* reference,
                                    int max, int tensors) {
  size_t i, n = A->attn_metadata_field_count(md);
  int shown = 0;
  for (i = 0; i < n && shown < max; ++i) {
    attn_field_t f = ATTN_FIELD_INIT, g = ATTN_FIELD_INIT;
    attn_error_t* err;
    if (report(A->attn_metadata_field(md, i, &f), "attn_metadata_field")) return 1;
    if (f.kind == ATTN_FIELD_NONE || (f.kind == ATTN_FIELD_TENSOR) != tensors) continue;
    err = A->attn_metadata_get(reference, f.name, &g);
    if (err == NULL) continue; /* FLASH_ATTN has it too */
    A->attn_error_destroy(err);
    print_field(&f);
    ++shown;
  }
  return 0;
}

/* Prints the set fields of `md` that `reference` (FLASH_ATTN's metadata) lacks, what makes a
 * backend's metadata its own: its tensors first, then its scalars, at most `max` of each. */
static int print_own_fields(const attn_metadata_t* md, const attn_metadata_t* reference,
                            int max) {
  int pass;
  for (pass = 0; pass < 2; ++pass)
    if (print_own_fields_of_kind(md, reference, max, pass == 0)) return 1;
  return 0;
}

/* The sample batch through every other built-in backend that builds for the full-attention spec
 * (enumerated, each showing its own fields), then the Mamba and MLA families on their specs,
 * then two of vLLM's wrappers. */
static int every_backend(struct batch* b, const attn_kv_cache_spec_t* spec,
                         const attn_metadata_t* reference) {
  static const char* const local[] = {"query_start_loc", "seq_lens", "block_table", "virtual_req",
                                      NULL};
  static const char* const fast[] = {"query_start_loc", "num_actual_tokens", "max_query_len",
                                     "logits_indices_padded", "num_logits_indices", NULL};
  static const char* const mamba2[] = {"num_decodes", "num_prefills", "state_indices_tensor_d",
                                       "state_indices_tensor_p", "query_start_loc_p",
                                       "has_initial_states_p", "cu_chunk_seqlen_p", "seq_idx_p",
                                       "last_chunk_indices_p", NULL};
  static const char* const mla[] = {"num_decodes", "num_prefills", "decode_seq_lens",
                                    "decode_scheduler_num_q_tokens_per_head_k",
                                    "prefill_query_start_loc",
                                    "prefill_chunked_context_chunk_cu_seq_lens",
                                    "prefill_chunked_context_chunk_num_context_tokens",
                                    "chunked_prefill_workspace_size", NULL};
  const attn_builder_config_t hopper = demo_config(90);
  attn_builder_config_t config = hopper;
  attn_kv_cache_spec_t local_spec = *spec;
  int32_t level = -1;
  static int32_t logits[kReqs] = {0, 1, 2, 34, 54}; /* the last token of each request */
  static int64_t logits_shape[1] = {kReqs};
  attn_tensor_t logits_t = host_tensor(logits, 1, logits_shape, 32);
  attn_common_metadata_t common = b->common;
  size_t i, n = A->attn_backend_count();
  printf("\nThe same batch through the other backends (the fields FLASH_ATTN lacks, a few each):\n");
  for (i = 0; i < n; ++i) {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    attn_builder_t* builder = NULL;
    attn_metadata_t* md = NULL;
    attn_error_t* err;
    if (report(A->attn_backend_info(i, &info), "attn_backend_info")) return 1;
    if (info.origin != ATTN_BACKEND_BUILTIN ||
        (info.kv_cache_kinds & (1u << ATTN_KV_FULL_ATTENTION)) == 0 ||
        strcmp(info.name, A->attn_metadata_kind(reference)) == 0)
      continue;
    err = A->attn_builder_create(info.name, spec, &hopper, &builder);
    if (err != NULL && A->attn_error_code(err) == ATTN_ERR_UNSUPPORTED) {
      A->attn_error_destroy(err); /* a family of its own (MLA, Mamba): shown below */
      continue;
    }
    if (report(err, "attn_builder_create")) return 1;
    if (report(A->attn_build(builder, 0, &b->common, 0, &md, NULL), "attn_build") ||
        (printf("\n%s (%zu fields):\n", A->attn_metadata_kind(md),
                A->attn_metadata_field_count(md)),
         print_own_fields(md, reference, 3))) {
      A->attn_builder_destroy(builder);
      return 1;
    }
    A->attn_builder_destroy(builder);
  }
  printf("\nThe Mamba family builds for a MAMBA spec (MambaSpec: state index = block table "
         "column 0, 16-token scan chunks),\nhere created under vLLM's name MAMBA2_ATTN "
         "(Mamba2AttentionBackend.get_name()):\n");
  if (build_and_show("MAMBA2_ATTN", spec_of_kind(ATTN_KV_MAMBA, spec), &hopper, &b->common, mamba2))
    return 1;
  printf("\nThe MLA family builds for an MLA spec (block 128, one 576-wide latent head): "
         "FLASHMLA\ntakes the three decodes, the prefills' context is gathered in chunks:\n");
  if (build_and_show("FLASHMLA", spec_of_kind(ATTN_KV_MLA, spec), &hopper, &b->common, mla))
    return 1;

  printf("\nvLLM's wrappers, asked for by the spec and the config:\n");
  local_spec.kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION; /* Llama-4-style local attention */
  local_spec.attention_chunk_size = 32;
  if (report(A->attn_backend_cudagraph_support("FLASH_ATTN", &local_spec, &hopper, &level),
             "attn_backend_cudagraph_support"))
    return 1;
  printf("  FLASH_ATTN with a CHUNKED_LOCAL_ATTENTION spec (chunk 32): CUDA graph support %s\n",
         level_name(level));
  if (build_and_show("FLASH_ATTN", &local_spec, &hopper, &b->common, local)) return 1;
  config.kv_sharing_fast_prefill = 1; /* KV-sharing layers compute only the logits tokens */
  common.logits_indices_padded = &logits_t;
  common.num_logits_indices = kReqs;
  return build_and_show("FLASH_ATTN", spec, &config, &common, fast);
}

int main(int argc, char** argv) {
  const char* path = getenv("ATTN_LIBRARY");
  const char* plugin_path = NULL;
  attn_kv_cache_spec_t spec = ATTN_KV_CACHE_SPEC_INIT;
  attn_builder_config_t config = ATTN_BUILDER_CONFIG_INIT;
  attn_builder_t* builder = NULL;
  attn_plugin_t* plugin = NULL;
  attn_metadata_t* md = NULL;
  static struct batch b;
  uint32_t major = 0, minor = 0, patch = 0;
  void* lib;
  int i, status = 1;

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc)
      plugin_path = argv[++i];
    else
      path = argv[i];
  }
  if (path == NULL) path = "libattn.so.1";
  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "attn_demo: cannot dlopen %s: %s\n", path, dlerror());
    return 1;
  }
  {
    /* The one symbol: attn_get_api also checks the version (same major, minor >= the header's). */
    PFN_attn_get_api get_api;
    attn_error_t* err;
    *(void**)(&get_api) = dlsym(lib, "attn_get_api");
    if (get_api == NULL) {
      fprintf(stderr, "attn_demo: %s has no attn_get_api (libattn 1.3 or newer needed)\n", path);
      dlclose(lib);
      return 1;
    }
    err = get_api(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR, &A);
    if (err != NULL) {
      PFN_attn_error_message message;
      *(void**)(&message) = dlsym(lib, "attn_error_message");
      fprintf(stderr, "attn_demo: attn_get_api failed: %s\n", message(err));
      dlclose(lib); /* the error object goes with the library */
      return 1;
    }
  }
  A->attn_get_version(&major, &minor, &patch);
  printf("libattn %u.%u.%u loaded with dlopen from %s\n", major, minor, patch, path);
  if (plugin_path != NULL) {
    if (report(A->attn_plugin_load(plugin_path, &plugin), "attn_plugin_load")) goto done;
    printf("plugin loaded from %s\n", plugin_path);
  }

  spec.block_size = kBlockSize;
  spec.num_kv_heads = 8;
  spec.head_size = 128;
  printf("\nKV cache spec: full attention, block_size %d, 8 KV heads, head_size 128, bf16\n"
         "%s\n", kBlockSize, "(the MLA family for an MLA spec: block_size 128, one 576-wide latent head; the Mamba family for a MAMBA spec)");
  if (list_backends(&spec)) goto done;

  config = demo_config(90);
  if (report(A->attn_builder_create("FLASH_ATTN", &spec, &config, &builder), "attn_builder_create"))
    goto done;

  make_batch(&b);
  printf("\nSample batch: 3 decodes (seq 41, 100, 17), a chunked prefill (64 cached + 32 new),\n"
         "a fresh prefill (20 tokens); %" PRId64 " tokens, block_size %d, host build.\n\n",
         b.common.num_actual_tokens, kBlockSize);
  if (report(A->attn_build(builder, 0, &b.common, 0, &md, NULL), "attn_build")) goto done;
  printf("FLASH_ATTN metadata (%zu fields; None fields omitted):\n", A->attn_metadata_field_count(md));
  if (print_metadata(md, 1)) goto done;

  printf("\nThe same batch with a 16-token common prefix (cascade attention):\n");
  if (report(A->attn_build(builder, 16, &b.common, 0, &md, NULL), "attn_build")) goto done;
  {
    static const char* const cascade[] = {"use_cascade", "common_prefix_len",
                                          "cu_prefix_query_lens", "prefix_kv_lens",
                                          "suffix_kv_lens", "scheduler_max_seqlen_k"};
    size_t k;
    for (k = 0; k < sizeof cascade / sizeof cascade[0]; ++k) {
      attn_field_t f = ATTN_FIELD_INIT;
      if (report(A->attn_metadata_get(md, cascade[k], &f), "attn_metadata_get")) goto done;
      print_field(&f);
    }
  }

  if (every_backend(&b, &spec, md)) goto done;

  printf("\nBad input gives an error, not a crash (seq_lens[2] set below its query length):\n");
  b.seq_lens[2] = 0;
  {
    attn_error_t* err = A->attn_build(builder, 0, &b.common, 0, &md, NULL);
    printf("  [%s] %s\n", A->attn_status_string(A->attn_error_code(err)), A->attn_error_message(err));
    A->attn_error_destroy(err);
  }
  status = 0;

done:
  A->attn_builder_destroy(builder);
  if (plugin != NULL) report(A->attn_plugin_unload(plugin), "attn_plugin_unload");
  dlclose(lib);
  return status;
}
