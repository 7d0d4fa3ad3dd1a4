/*
 * libattn demo: loads libattn with dlopen (no link-time dependency), lists every backend with
 * its CUDA graph support and reorder threshold, then builds FLASH_ATTN metadata for a sample
 * mixed batch (decodes, a chunked prefill, a fresh prefill) on the host and prints it.
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

/* The functions the demo uses, resolved with dlsym. */
struct api {
  void (*get_version)(uint32_t*, uint32_t*, uint32_t*);
  attn_error_t* (*check_version)(uint32_t, uint32_t);
  int32_t (*error_code)(const attn_error_t*);
  const char* (*error_message)(const attn_error_t*);
  void (*error_destroy)(attn_error_t*);
  const char* (*status_string)(int32_t);
  size_t (*backend_count)(void);
  attn_error_t* (*backend_name)(size_t, const char**);
  attn_error_t* (*backend_cudagraph_support)(const char*, const attn_kv_cache_spec_t*,
                                             const attn_builder_config_t*, int32_t*);
  attn_error_t* (*builder_create)(const char*, const attn_kv_cache_spec_t*,
                                  const attn_builder_config_t*, attn_builder_t**);
  void (*builder_destroy)(attn_builder_t*);
  attn_error_t* (*builder_reorder_batch_threshold)(const attn_builder_t*, int32_t*);
  attn_error_t* (*builder_supports_update_block_table)(const attn_builder_t*, int32_t*);
  attn_error_t* (*build)(attn_builder_t*, int64_t, const attn_common_metadata_t*, int32_t,
                         attn_metadata_t**, attn_stream_t);
  size_t (*metadata_field_count)(const attn_metadata_t*);
  attn_error_t* (*metadata_field)(const attn_metadata_t*, size_t, attn_field_t*);
  attn_error_t* (*metadata_get)(const attn_metadata_t*, const char*, attn_field_t*);
  attn_error_t* (*plugin_load)(const char*, attn_plugin_t**);
  attn_error_t* (*plugin_unload)(attn_plugin_t*);
};

static struct api A;

static void* load_symbol(void* lib, const char* name) {
  void* sym = dlsym(lib, name);
  if (sym == NULL) {
    fprintf(stderr, "attn_demo: %s is missing from the library: %s\n", name, dlerror());
    exit(1);
  }
  return sym;
}

#define LOAD(field, name) *(void**)(&A.field) = load_symbol(lib, name)

static void load_api(void* lib) {
  LOAD(get_version, "attn_get_version");
  LOAD(check_version, "attn_check_version");
  LOAD(error_code, "attn_error_code");
  LOAD(error_message, "attn_error_message");
  LOAD(error_destroy, "attn_error_destroy");
  LOAD(status_string, "attn_status_string");
  LOAD(backend_count, "attn_backend_count");
  LOAD(backend_name, "attn_backend_name");
  LOAD(backend_cudagraph_support, "attn_backend_cudagraph_support");
  LOAD(builder_create, "attn_builder_create");
  LOAD(builder_destroy, "attn_builder_destroy");
  LOAD(builder_reorder_batch_threshold, "attn_builder_reorder_batch_threshold");
  LOAD(builder_supports_update_block_table, "attn_builder_supports_update_block_table");
  LOAD(build, "attn_build");
  LOAD(metadata_field_count, "attn_metadata_field_count");
  LOAD(metadata_field, "attn_metadata_field");
  LOAD(metadata_get, "attn_metadata_get");
  LOAD(plugin_load, "attn_plugin_load");
  LOAD(plugin_unload, "attn_plugin_unload");
}

/* Prints and releases an error; returns 1 when there was one. */
static int report(attn_error_t* err, const char* what) {
  if (err == NULL) return 0;
  fprintf(stderr, "attn_demo: %s failed: [%s] %s\n", what, A.status_string(A.error_code(err)),
          A.error_message(err));
  A.error_destroy(err);
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
  int64_t qsl_shape[1], seq_shape[1], bt_shape[2], sm_shape[1];
  attn_tensor_t qsl, seq, bt, sm;
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

/* Three decodes, a chunked prefill (64 tokens cached, 32 scheduled) and a fresh prefill. */
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
    for (p = context[r]; p < seq; ++p)
      b->slot_mapping[token++] =
          (int64_t)b->block_table[r][p / kBlockSize] * kBlockSize + p % kBlockSize;
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
  b->common = init;
  b->common.query_start_loc = &b->qsl;
  b->common.seq_lens = &b->seq;
  b->common.num_reqs = kReqs;
  b->common.num_actual_tokens = token;
  b->common.max_query_len = 32;
  b->common.max_seq_len = 100;
  b->common.block_table_tensor = &b->bt;
  b->common.slot_mapping = &b->sm;
}

/* ---- printing --------------------------------------------------------------------------------- */
static void print_tensor(const attn_tensor_t* t) {
  int64_t n = 1, i, shown;
  int d;
  printf("tensor ");
  printf("(");
  for (d = 0; d < t->ndim; ++d) printf(d ? ", %" PRId64 : "%" PRId64, t->shape[d]);
  printf(t->ndim == 1 ? ",) " : ") ");
  printf("%s%d ", t->dtype.code == ATTN_DTYPE_INT ? "int" : "dtype", t->dtype.bits);
  if (t->device.device_type != ATTN_DEVICE_CPU) {
    printf("on device type %d", t->device.device_type);
    return;
  }
  if (t->ndim == 2) { /* print the first row's used blocks only */
    n = t->shape[1] < 8 ? t->shape[1] : 8;
    printf("row 0: ");
  } else {
    for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  }
  shown = n < 12 ? n : 12;
  printf("[");
  for (i = 0; i < shown; ++i) {
    const char* base = (const char*)t->data + t->byte_offset;
    const int64_t v = t->dtype.bits == 64 ? ((const int64_t*)base)[i] : ((const int32_t*)base)[i];
    printf(i ? ", %" PRId64 : "%" PRId64, v);
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
  size_t i, n = A.metadata_field_count(m);
  for (i = 0; i < n; ++i) {
    attn_field_t f = ATTN_FIELD_INIT;
    if (report(A.metadata_field(m, i, &f), "attn_metadata_field")) return 1;
    if (skip_none && f.kind == ATTN_FIELD_NONE) continue;
    print_field(&f);
  }
  return 0;
}

static int list_backends(const attn_kv_cache_spec_t* spec) {
  attn_builder_config_t hopper = ATTN_BUILDER_CONFIG_INIT, ampere = ATTN_BUILDER_CONFIG_INIT;
  size_t i, n = A.backend_count();
  hopper.max_num_seqs = ampere.max_num_seqs = 256;
  hopper.max_num_batched_tokens = ampere.max_num_batched_tokens = 8192;
  hopper.max_model_len = ampere.max_model_len = kMaxModelLen;
  hopper.num_attention_heads = ampere.num_attention_heads = 32;
  hopper.device_capability = 90; /* H100/H200 */
  ampere.device_capability = 80; /* A100 */
  printf("%zu backend(s):\n", n);
  printf("  %-20s %-30s %-30s %-9s %s\n", "backend", "cudagraph (sm90)", "cudagraph (sm80)",
         "reorder", "update_block_table");
  for (i = 0; i < n; ++i) {
    const char* name = NULL;
    int32_t level90 = -1, level80 = -1, threshold = 0, update = 0;
    attn_builder_t* builder = NULL;
    char reorder[16];
    if (report(A.backend_name(i, &name), "attn_backend_name")) return 1;
    if (report(A.backend_cudagraph_support(name, spec, &hopper, &level90),
               "attn_backend_cudagraph_support") ||
        report(A.backend_cudagraph_support(name, spec, &ampere, &level80),
               "attn_backend_cudagraph_support"))
      return 1;
    if (report(A.builder_create(name, spec, &hopper, &builder), "attn_builder_create")) return 1;
    if (report(A.builder_reorder_batch_threshold(builder, &threshold), "reorder threshold") ||
        report(A.builder_supports_update_block_table(builder, &update), "update_block_table")) {
      A.builder_destroy(builder);
      return 1;
    }
    A.builder_destroy(builder);
    if (threshold == ATTN_NO_REORDER)
      snprintf(reorder, sizeof reorder, "None");
    else
      snprintf(reorder, sizeof reorder, "%d", threshold);
    printf("  %-20s %-30s %-30s %-9s %s\n", name, level_name(level90), level_name(level80), reorder,
           update ? "yes" : "no");
  }
  return 0;
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
  load_api(lib);
  A.get_version(&major, &minor, &patch);
  printf("libattn %u.%u.%u loaded with dlopen from %s\n", major, minor, patch, path);
  if (report(A.check_version(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR), "attn_check_version"))
    goto done;
  if (plugin_path != NULL) {
    if (report(A.plugin_load(plugin_path, &plugin), "attn_plugin_load")) goto done;
    printf("plugin loaded from %s\n", plugin_path);
  }

  spec.block_size = kBlockSize;
  spec.num_kv_heads = 8;
  spec.head_size = 128;
  printf("\nKV cache spec: full attention, block_size %d, 8 KV heads, head_size 128, bf16\n",
         kBlockSize);
  if (list_backends(&spec)) goto done;

  config.max_num_seqs = 256;
  config.max_num_batched_tokens = 8192;
  config.max_model_len = kMaxModelLen;
  config.num_attention_heads = 32;
  config.device_capability = 90;
  if (report(A.builder_create("FLASH_ATTN", &spec, &config, &builder), "attn_builder_create"))
    goto done;

  make_batch(&b);
  printf("\nSample batch: 3 decodes (seq 41, 100, 17), a chunked prefill (64 cached + 32 new),\n"
         "a fresh prefill (20 tokens); %" PRId64 " tokens, block_size %d, host build.\n\n",
         b.common.num_actual_tokens, kBlockSize);
  if (report(A.build(builder, 0, &b.common, 0, &md, NULL), "attn_build")) goto done;
  printf("FLASH_ATTN metadata (%zu fields; None fields omitted):\n", A.metadata_field_count(md));
  if (print_metadata(md, 1)) goto done;

  printf("\nThe same batch with a 16-token common prefix (cascade attention):\n");
  if (report(A.build(builder, 16, &b.common, 0, &md, NULL), "attn_build")) goto done;
  {
    static const char* const cascade[] = {"use_cascade", "common_prefix_len",
                                          "cu_prefix_query_lens", "prefix_kv_lens",
                                          "suffix_kv_lens", "scheduler_max_seqlen_k"};
    size_t k;
    for (k = 0; k < sizeof cascade / sizeof cascade[0]; ++k) {
      attn_field_t f = ATTN_FIELD_INIT;
      if (report(A.metadata_get(md, cascade[k], &f), "attn_metadata_get")) goto done;
      print_field(&f);
    }
  }

  printf("\nBad input gives an error, not a crash (seq_lens[2] set below its query length):\n");
  b.seq_lens[2] = 0;
  {
    attn_error_t* err = A.build(builder, 0, &b.common, 0, &md, NULL);
    printf("  [%s] %s\n", A.status_string(A.error_code(err)), A.error_message(err));
    A.error_destroy(err);
  }
  status = 0;

done:
  A.builder_destroy(builder);
  if (plugin != NULL) report(A.plugin_unload(plugin), "attn_plugin_unload");
  dlclose(lib);
  return status;
}
