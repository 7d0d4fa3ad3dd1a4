/* A plugin whose table and callbacks are whatever the fuzzer's bytes say (within valid
 * pointers: libattn cannot check that a pointer points somewhere, only what it finds there).
 * The fuzz target sets the bytes with fuzz_plugin_set() before each attn_plugin_load(). */
#include <stdint.h>
#include <string.h>

#include "attn_c.h"
#include "core/abi_fields.h"

#define EXPORT __attribute__((visibility("default")))

static uint8_t g_bytes[4096];
static size_t g_size, g_pos;

static uint8_t next(void) { return g_pos < g_size ? g_bytes[g_pos++] : 0; }

EXPORT void fuzz_plugin_set(const uint8_t* data, size_t size) {
  g_size = size < sizeof g_bytes ? size : sizeof g_bytes;
  memcpy(g_bytes, data, g_size);
  g_pos = 0;
}

static const char* const kNames[] = {"FUZZ_A", "FUZZ_B", "FLASH_ATTN", "", "FUZZ_A"};
static const char* const kFieldPool[] = {"num_reqs", "block_table", "slot_mapping", "x", "num_reqs"};
static const char* g_fields[4][4];

static int32_t status(void) {
  const uint8_t b = next();
  return b < 200 ? ATTN_OK : (int32_t)(b % 12) - 2; /* sometimes an error, sometimes garbage */
}

static int32_t level(const attn_kv_cache_spec_t* s, const attn_builder_config_t* c, int32_t* out,
                     char* err, size_t n) {
  (void)s; (void)c;
  *out = (int32_t)(next() % 6) - 1;
  if (next() % 4 == 0) {
    if (n) strncpy(err, "fuzz level error", n - 1);
    return ATTN_ERR_INVALID_ARGUMENT;
  }
  return ATTN_OK;
}

static int g_state;

static int32_t create(const attn_kv_cache_spec_t* s, const attn_builder_config_t* c, void** out,
                      int32_t* threshold, char* err, size_t n) {
  const int32_t st = status();
  (void)s; (void)c;
  *threshold = (int32_t)(next() % 5) - 1;
  if (st != ATTN_OK) {
    if (n && next() % 2) memset(err, 'x', n); /* an unterminated message */
    return st;
  }
  *out = &g_state;
  return ATTN_OK;
}

static void destroy(void* state) { (void)state; }

/* A view the plugin makes of its own memory, hostile as the fuzzer says (issue 15): NULL data
 * under a non-empty shape, a stride or byte offset past any real extent, a misaligned offset,
 * a negative shape or stride. Every one must be refused by the setter. */
static int32_t g_words[8];
static int64_t g_shape[2], g_strides[2];
static attn_tensor_t g_view;

static const attn_tensor_t* hostile_view(void) {
  memset(&g_view, 0, sizeof g_view);
  g_view.device.device_type = ATTN_DEVICE_CPU;
  g_view.dtype.code = ATTN_DTYPE_INT;
  g_view.dtype.bits = 32;
  g_view.dtype.lanes = 1;
  g_view.ndim = 1 + next() % 2;
  g_shape[0] = 1 + next() % 4;
  g_shape[1] = 2;
  g_view.shape = g_shape;
  g_view.data = g_words;
  switch (next() % 5) {
    case 0: g_view.data = NULL; break;
    case 1:
      g_strides[0] = (int64_t)1 << (61 + next() % 2);
      g_strides[1] = 1;
      g_shape[0] = 2 + next() % 3;
      g_view.strides = g_strides;
      break;
    case 2: g_view.byte_offset = ((uint64_t)1 << 62) + ((uint64_t)next() << 56); break;
    case 3: g_view.byte_offset = 1 + next() % 3; break;
    default:
      g_strides[0] = -(int64_t)(1 + next());
      g_strides[1] = 1;
      g_view.strides = g_strides;
      if (next() % 2) g_shape[0] = -(int64_t)next() - 1;
  }
  return &g_view;
}

static int32_t build(void* state, int64_t prefix, const attn_common_metadata_t* common,
                     int32_t fast, const attn_plugin_output_t* out, attn_stream_t stream) {
  int k, count = next() % 6;
  (void)state; (void)prefix; (void)fast; (void)stream;
  for (k = 0; k < count; ++k) {
    const char* name = next() % 8 == 0 ? NULL : kFieldPool[next() % 5];
    switch (next() % 5) {
      case 0: out->set_int(out->ctx, name, (int64_t)next() << (next() % 40)); break;
      case 1: out->set_bool(out->ctx, name, next()); break;
      case 2: out->set_float(out->ctx, name, next() / 7.0); break;
      case 3: out->set_none(out->ctx, name); break;
      default: { /* any view of the batch (core/abi_fields.h), or a hostile one of its own */
#define BATCH_VIEW(kind, ...) BATCH_VIEW_##kind(__VA_ARGS__)
#define BATCH_VIEW_SIZE(name)
#define BATCH_VIEW_EXT(name)
#define BATCH_VIEW_I64(name, value)
#define BATCH_VIEW_BOOL(name, value)
#define BATCH_VIEW_OPT_I64(name)
#define BATCH_VIEW_TENSOR(name, ...) common->name,
        const attn_tensor_t* views[] = {ATTN_COMMON_METADATA_FIELDS(BATCH_VIEW) NULL};
        const size_t last = sizeof views / sizeof views[0] - 1, which = next() % (last + 1);
        out->set_tensor(out->ctx, name, which == last ? hostile_view() : views[which]);
      }
    }
  }
  if (next() % 3 == 0) out->set_error(out->ctx, next() % 2 ? "fuzz build error" : NULL);
  return status();
}

static attn_plugin_backend_t g_backends[4];
static const attn_plugin_backend_t* g_backend_ptrs[4];
static attn_plugin_table_t g_table;

EXPORT const attn_plugin_table_t* attn_plugin_entry(void) {
  size_t i, j;
  const size_t nb = next() % 5;
  if (next() % 16 == 0) return NULL;
  memset(&g_table, 0, sizeof g_table);
  g_table.struct_size = next() % 8 == 0 ? next() : ATTN_PLUGIN_TABLE_STRUCT_SIZE;
  g_table.abi_major = next() % 8 == 0 ? next() % 4 : ATTN_VERSION_MAJOR;
  g_table.abi_minor = next() % 8 == 0 ? next() % 3 : ATTN_VERSION_MINOR;
  g_table.plugin_name = next() % 8 == 0 ? NULL : "fuzz_plugin";
  for (i = 0; i < nb && i < 4; ++i) {
    attn_plugin_backend_t* b = &g_backends[i];
    const size_t nf = next() % 5;
    memset(b, 0, sizeof *b);
    b->struct_size = next() % 8 == 0 ? next() : ATTN_PLUGIN_BACKEND_STRUCT_SIZE;
    b->name = next() % 10 == 0 ? NULL : kNames[next() % 5];
    for (j = 0; j < nf && j < 4; ++j) g_fields[i][j] = next() % 12 == 0 ? NULL : kFieldPool[next() % 5];
    b->field_names = next() % 10 == 0 && nf ? NULL : g_fields[i];
    b->num_fields = nf;
    b->supports_update_block_table = next() % 2;
    b->cudagraph_support = next() % 12 == 0 ? NULL : level;
    b->create = next() % 12 == 0 ? NULL : create;
    b->destroy = destroy;
    b->build = next() % 12 == 0 ? NULL : build;
    g_backend_ptrs[i] = next() % 16 == 0 ? NULL : b;
  }
  g_table.backends = next() % 16 == 0 ? NULL : g_backend_ptrs;
  g_table.num_backends = nb;
  return &g_table;
}
