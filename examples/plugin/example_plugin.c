/*
 * An example libattn plugin with one backend of its own, EXAMPLE_PAGED: host-only paged
 * attention metadata (query_start_loc, seq_lens, block_table and slot_mapping passed through;
 * context_lens = seq_len - query_len computed into a buffer the builder owns; num_decodes for
 * a batch reordered with threshold 1). It includes attn_c.h for the types only and does not
 * link to libattn: it is loaded with attn_plugin_load("libattn_example_plugin.so").
 *
 * Compile with -DEXAMPLE_PLUGIN_ABI_MAJOR=<n> to pretend to be built for another ABI (the tests
 * use that to see the plugin refused).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_c.h"

#ifndef EXAMPLE_PLUGIN_ABI_MAJOR
#define EXAMPLE_PLUGIN_ABI_MAJOR ATTN_VERSION_MAJOR
#endif

#if defined(__GNUC__)
#define EXAMPLE_EXPORT __attribute__((visibility("default")))
#else
#define EXAMPLE_EXPORT
#endif

struct example_state {
  int32_t max_num_seqs;
  int32_t* context_lens; /* persistent: max_num_seqs entries */
  int64_t context_shape[1];
  attn_tensor_t context_view;
};

static const char* const kFields[] = {"query_start_loc", "seq_lens",     "context_lens",
                                      "block_table",     "slot_mapping", "max_query_len",
                                      "max_seq_len",     "num_decodes"};

static int32_t fail(char* err, size_t size, int32_t code, const char* message) {
  snprintf(err, size, "%s", message);
  return code;
}

static int32_t example_cudagraph_support(const attn_kv_cache_spec_t* spec,
                                         const attn_builder_config_t* config, int32_t* out_level,
                                         char* err, size_t err_size) {
  (void)spec;
  (void)config;
  (void)err;
  (void)err_size;
  *out_level = ATTN_CG_NEVER; /* host-only: nothing to capture */
  return ATTN_OK;
}

static int32_t example_create(const attn_kv_cache_spec_t* spec, const attn_builder_config_t* config,
                              void** out_state, int32_t* out_reorder_batch_threshold, char* err,
                              size_t err_size) {
  struct example_state* s;
  (void)spec;
  if (config->device.device_type != ATTN_DEVICE_CPU)
    return fail(err, err_size, ATTN_ERR_UNSUPPORTED, "EXAMPLE_PAGED builds on the host only");
  s = (struct example_state*)calloc(1, sizeof *s);
  if (s == NULL) return fail(err, err_size, ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  s->max_num_seqs = config->max_num_seqs;
  s->context_lens = (int32_t*)calloc((size_t)config->max_num_seqs, sizeof(int32_t));
  if (s->context_lens == NULL) {
    free(s);
    return fail(err, err_size, ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  s->context_view.data = s->context_lens;
  s->context_view.device.device_type = ATTN_DEVICE_CPU;
  s->context_view.ndim = 1;
  s->context_view.dtype.code = ATTN_DTYPE_INT;
  s->context_view.dtype.bits = 32;
  s->context_view.dtype.lanes = 1;
  s->context_view.shape = s->context_shape;
  *out_state = s;
  *out_reorder_batch_threshold = 1; /* decodes first, as FlashInfer does */
  return ATTN_OK;
}

static void example_destroy(void* state) {
  struct example_state* s = (struct example_state*)state;
  if (s == NULL) return;
  free(s->context_lens);
  free(s);
}

static int32_t example_build(void* state, int64_t common_prefix_len,
                             const attn_common_metadata_t* common, int32_t fast_build,
                             const attn_plugin_output_t* out, attn_stream_t stream) {
  struct example_state* s = (struct example_state*)state;
  const int32_t* qsl;
  const int32_t* seq;
  int64_t r, decodes = 0;
  (void)fast_build;
  (void)stream;
  if (common_prefix_len != 0) {
    out->set_error(out->ctx, "EXAMPLE_PAGED has no cascade attention (common_prefix_len must be 0)");
    return ATTN_ERR_UNSUPPORTED;
  }
  /* libattn has validated the batch; on a host builder every tensor is host memory. */
  qsl = (const int32_t*)((const char*)common->query_start_loc->data +
                         common->query_start_loc->byte_offset);
  seq = (const int32_t*)((const char*)common->seq_lens->data + common->seq_lens->byte_offset);
  for (r = 0; r < common->num_reqs; ++r) {
    const int32_t q = qsl[r + 1] - qsl[r];
    s->context_lens[r] = seq[r] - q;
    if (q == 1 && decodes == r) ++decodes; /* leading decodes of a reordered batch */
  }
  s->context_shape[0] = common->num_reqs;
  if (out->set_tensor(out->ctx, "query_start_loc", common->query_start_loc) != ATTN_OK ||
      out->set_tensor(out->ctx, "seq_lens", common->seq_lens) != ATTN_OK ||
      out->set_tensor(out->ctx, "context_lens", &s->context_view) != ATTN_OK ||
      out->set_tensor(out->ctx, "block_table", common->block_table_tensor) != ATTN_OK ||
      out->set_tensor(out->ctx, "slot_mapping", common->slot_mapping) != ATTN_OK ||
      out->set_int(out->ctx, "max_query_len", common->max_query_len) != ATTN_OK ||
      out->set_int(out->ctx, "max_seq_len", common->max_seq_len) != ATTN_OK ||
      out->set_int(out->ctx, "num_decodes", decodes) != ATTN_OK) {
    out->set_error(out->ctx, "a field setter failed");
    return ATTN_ERR_INTERNAL;
  }
  return ATTN_OK;
}

static const attn_plugin_backend_t kBackend = {
    ATTN_PLUGIN_BACKEND_STRUCT_SIZE,
    "EXAMPLE_PAGED",
    kFields,
    sizeof kFields / sizeof kFields[0],
    1, /* supports_update_block_table */
    example_cudagraph_support,
    example_create,
    example_destroy,
    example_build,
    NULL};

static const attn_plugin_backend_t* const kBackends[] = {&kBackend};

static const attn_plugin_table_t kTable = {ATTN_PLUGIN_TABLE_STRUCT_SIZE,
                                           EXAMPLE_PLUGIN_ABI_MAJOR,
                                           ATTN_VERSION_MINOR,
                                           "example_plugin",
                                           kBackends,
                                           1,
                                           NULL};

EXAMPLE_EXPORT const attn_plugin_table_t* attn_plugin_entry(void) { return &kTable; }
