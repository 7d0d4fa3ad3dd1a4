/*
 * The C side of the Go binding: dlopen/dlsym loader and one trampoline per libattn function.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "capi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* const kNames[] = {
#define GATTN_NAME(name) #name,
    ATTN_GO_FUNCTIONS(GATTN_NAME)
#undef GATTN_NAME
};

int gattn_function_count(void) { return (int)(sizeof kNames / sizeof kNames[0]); }

const char* gattn_function_name(int i) {
  return i >= 0 && i < gattn_function_count() ? kNames[i] : "";
}

static void put(char* detail, size_t size, const char* text) {
  if (size == 0) return;
  snprintf(detail, size, "%s", text != NULL ? text : "(no detail)");
}

int gattn_open(const char* path, gattn_api_t** out, char* detail, size_t detail_size) {
  gattn_api_t* api;
  void* handle;
  put(detail, detail_size, "");
  dlerror(); /* clear a stale message */
  handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    put(detail, detail_size, dlerror());
    return GATTN_DLOPEN_FAILED;
  }
  api = (gattn_api_t*)calloc(1, sizeof *api);
  if (api == NULL) {
    dlclose(handle);
    put(detail, detail_size, "out of memory");
    return GATTN_NO_MEMORY;
  }
  api->handle = handle;
#define GATTN_RESOLVE(name)                                      \
  {                                                              \
    void* sym = dlsym(handle, #name);                            \
    if (sym == NULL) {                                           \
      put(detail, detail_size, #name);                           \
      free(api);                                                 \
      dlclose(handle);                                           \
      return GATTN_SYMBOL_MISSING;                               \
    }                                                            \
    memcpy(&api->name, &sym, sizeof sym);                        \
  }
  ATTN_GO_REQUIRED_FUNCTIONS(GATTN_RESOLVE)
#undef GATTN_RESOLVE
#define GATTN_RESOLVE_OPTIONAL(name)                             \
  {                                                              \
    void* sym = dlsym(handle, #name); /* NULL when older */      \
    memcpy(&api->name, &sym, sizeof sym);                        \
  }
  ATTN_GO_OPTIONAL_FUNCTIONS(GATTN_RESOLVE_OPTIONAL)
#undef GATTN_RESOLVE_OPTIONAL
  *out = api;
  return GATTN_OPENED;
}

#if ATTN_VERSION_MAJOR != GATTN_REQUIRED_MAJOR || ATTN_VERSION_MINOR < GATTN_REQUIRED_MINOR
#error "attn_c.h is older than the ABI 1.1 this binding is written for"
#endif

/* The size of each struct in ABI 1.1: up to its last 1.1 field, as the header's
 * *_STRUCT_SIZE macros of 1.1 define them. */
#define GATTN_SIZE(type, last_field) (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

#define GATTN_INIT(type, fn, init, last_field) \
  type fn(void) {                              \
    type v = init;                             \
    v.struct_size = GATTN_SIZE(type, last_field); \
    return v;                                  \
  }

/* The spec carries ABI 1.2's MambaSpec fields (KVCacheSpec.Mamba*): a 1.1 library takes the
 * larger size and ignores them (it has no Mamba backends). */
GATTN_INIT(attn_kv_cache_spec_t, gattn_kv_cache_spec_init, ATTN_KV_CACHE_SPEC_INIT,
           num_speculative_blocks)
GATTN_INIT(attn_builder_config_t, gattn_builder_config_init, ATTN_BUILDER_CONFIG_INIT,
           reserved_1_1)
GATTN_INIT(attn_per_layer_params_t, gattn_per_layer_params_init, ATTN_PER_LAYER_PARAMS_INIT,
           extension)
GATTN_INIT(attn_common_metadata_t, gattn_common_metadata_init, ATTN_COMMON_METADATA_INIT,
           logits_indices_padded_cpu)
GATTN_INIT(attn_batch_split_t, gattn_batch_split_init, ATTN_BATCH_SPLIT_INIT, num_prefill_tokens)
GATTN_INIT(attn_slot_mapping_args_t, gattn_slot_mapping_args_init, ATTN_SLOT_MAPPING_ARGS_INIT,
           extension)
GATTN_INIT(attn_conv1d_info_t, gattn_conv1d_info_init, ATTN_CONV1D_INFO_INIT, num_programs)
GATTN_INIT(attn_local_attention_out_t, gattn_local_attention_out_init,
           ATTN_LOCAL_ATTENTION_OUT_INIT, extension)
GATTN_INIT(attn_ubatch_slice_t, gattn_ubatch_slice_init, ATTN_UBATCH_SLICE_INIT, token_stop)
GATTN_INIT(attn_ubatch_out_t, gattn_ubatch_out_init, ATTN_UBATCH_OUT_INIT, extension)
GATTN_INIT(attn_cascade_query_t, gattn_cascade_query_init, ATTN_CASCADE_QUERY_INIT, extension)
GATTN_INIT(attn_field_t, gattn_field_init, ATTN_FIELD_INIT, float_value)
/* ABI 1.3's struct: its first (and so smallest accepted) size. */
GATTN_INIT(attn_backend_info_t, gattn_backend_info_init, ATTN_BACKEND_INFO_INIT, extension)

/* The 1.1 sizes the header names must agree with the ones above. */
_Static_assert(GATTN_SIZE(attn_builder_config_t, reserved_1_1) ==
                   ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_1,
               "builder config size of ABI 1.1");
_Static_assert(GATTN_SIZE(attn_common_metadata_t, logits_indices_padded_cpu) ==
                   ATTN_COMMON_METADATA_STRUCT_SIZE_1_1,
               "common metadata size of ABI 1.1");

#define S(stream) ((attn_stream_t)(stream))

int32_t gattn_error_code(const gattn_api_t* a, const attn_error_t* err) {
  return a->attn_error_code(err);
}
const char* gattn_error_message(const gattn_api_t* a, const attn_error_t* err) {
  return a->attn_error_message(err);
}
void gattn_error_destroy(const gattn_api_t* a, attn_error_t* err) { a->attn_error_destroy(err); }
const char* gattn_status_string(const gattn_api_t* a, int32_t code) {
  return a->attn_status_string(code);
}
void gattn_get_version(const gattn_api_t* a, uint32_t* major, uint32_t* minor, uint32_t* patch) {
  a->attn_get_version(major, minor, patch);
}
attn_error_t* gattn_check_version(const gattn_api_t* a, uint32_t major, uint32_t minor) {
  return a->attn_check_version(major, minor);
}
attn_error_t* gattn_device_count(const gattn_api_t* a, int32_t device_type, int32_t* out) {
  return a->attn_device_count(device_type, out);
}
attn_error_t* gattn_common_metadata_unpadded(const gattn_api_t* a,
                                             const attn_common_metadata_t* common,
                                             int64_t num_actual_tokens, int64_t num_actual_reqs,
                                             attn_metadata_t** out) {
  return a->attn_common_metadata_unpadded(common, num_actual_tokens, num_actual_reqs, out);
}
attn_error_t* gattn_split_decodes_and_prefills(const gattn_api_t* a,
                                               const attn_common_metadata_t* common,
                                               int32_t decode_threshold, int32_t require_uniform,
                                               attn_batch_split_t* out) {
  return a->attn_split_decodes_and_prefills(common, decode_threshold, require_uniform, out);
}
attn_error_t* gattn_split_decodes_prefills_and_extends(const gattn_api_t* a,
                                                       const attn_common_metadata_t* common,
                                                       int32_t decode_threshold,
                                                       attn_batch_split_t* out) {
  return a->attn_split_decodes_prefills_and_extends(common, decode_threshold, out);
}
attn_error_t* gattn_reorder_batch_to_split_decodes_and_prefills(
    const gattn_api_t* a, const int32_t* num_scheduled_tokens, const int32_t* num_computed_tokens,
    int64_t num_reqs, int32_t decode_threshold, int32_t* out_swaps, int64_t swaps_capacity,
    int64_t* out_num_swaps) {
  return a->attn_reorder_batch_to_split_decodes_and_prefills(
      num_scheduled_tokens, num_computed_tokens, num_reqs, decode_threshold, out_swaps,
      swaps_capacity, out_num_swaps);
}
attn_error_t* gattn_split_prefill_chunks(const gattn_api_t* a, const int32_t* seq_lens,
                                         int64_t num_seqs, int64_t workspace_size,
                                         int64_t request_offset, int64_t* out_bounds,
                                         int64_t bounds_capacity, int64_t* out_num_chunks) {
  return a->attn_split_prefill_chunks(seq_lens, num_seqs, workspace_size, request_offset,
                                      out_bounds, bounds_capacity, out_num_chunks);
}
attn_error_t* gattn_get_dcp_local_seq_lens(const gattn_api_t* a, const attn_tensor_t* seq_lens,
                                           int32_t dcp_size, int32_t dcp_rank,
                                           int32_t cp_kv_cache_interleave_size,
                                           const attn_tensor_t* out, uintptr_t stream) {
  return a->attn_get_dcp_local_seq_lens(seq_lens, dcp_size, dcp_rank,
                                        cp_kv_cache_interleave_size, out, S(stream));
}
attn_error_t* gattn_reshape_query_for_spec_decode(const gattn_api_t* a, const attn_tensor_t* query,
                                                  int64_t batch_size, attn_tensor_t* out,
                                                  int64_t* out_shape, int64_t* out_strides) {
  return a->attn_reshape_query_for_spec_decode(query, batch_size, out, out_shape, out_strides);
}
attn_error_t* gattn_compute_slot_mapping(const gattn_api_t* a, const attn_slot_mapping_args_t* args,
                                         uintptr_t stream) {
  return a->attn_compute_slot_mapping(args, S(stream));
}
attn_error_t* gattn_compute_flashinfer_kv_metadata(
    const gattn_api_t* a, const attn_tensor_t* seq_lens, const attn_tensor_t* seq_lens_cpu,
    const attn_tensor_t* block_table, int32_t page_size, const attn_tensor_t* out_indptr,
    const attn_tensor_t* out_indices, const attn_tensor_t* out_last_page_len,
    int64_t* out_num_pages, uintptr_t stream) {
  return a->attn_compute_flashinfer_kv_metadata(seq_lens, seq_lens_cpu, block_table, page_size,
                                                out_indptr, out_indices, out_last_page_len,
                                                out_num_pages, S(stream));
}
attn_error_t* gattn_compute_causal_conv1d_metadata(
    const gattn_api_t* a, const attn_tensor_t* query_start_loc_p_cpu,
    const attn_tensor_t* query_start_loc_p, const attn_tensor_t* out_batch_ptr,
    const attn_tensor_t* out_token_chunk_offset_ptr, const attn_tensor_t* out_nums,
    attn_conv1d_info_t* info, uintptr_t stream) {
  return a->attn_compute_causal_conv1d_metadata(query_start_loc_p_cpu, query_start_loc_p,
                                                out_batch_ptr, out_token_chunk_offset_ptr,
                                                out_nums, info, S(stream));
}
attn_error_t* gattn_make_kv_sharing_fast_prefill_common_attn_metadata(
    const gattn_api_t* a, const attn_common_metadata_t* common,
    const attn_tensor_t* logits_indices_cpu, const attn_tensor_t* out_query_start_loc,
    const attn_tensor_t* out_query_start_loc_cpu, attn_metadata_t** out, uintptr_t stream) {
  return a->attn_make_kv_sharing_fast_prefill_common_attn_metadata(
      common, logits_indices_cpu, out_query_start_loc, out_query_start_loc_cpu, out, S(stream));
}
attn_error_t* gattn_local_attention_num_virtual_batches(const gattn_api_t* a,
                                                        int32_t attn_chunk_size,
                                                        const attn_common_metadata_t* common,
                                                        int64_t* out) {
  return a->attn_local_attention_num_virtual_batches(attn_chunk_size, common, out);
}
attn_error_t* gattn_make_local_attention_virtual_batches(
    const gattn_api_t* a, int32_t attn_chunk_size, const attn_common_metadata_t* common,
    int32_t block_size, const attn_local_attention_out_t* outputs, attn_metadata_t** out,
    uintptr_t stream) {
  return a->attn_make_local_attention_virtual_batches(attn_chunk_size, common, block_size, outputs,
                                                      out, S(stream));
}
attn_error_t* gattn_remap_local_block_table(const gattn_api_t* a, const attn_tensor_t* block_table,
                                            const attn_tensor_t* virtual_req,
                                            const attn_tensor_t* virtual_block_start,
                                            int64_t num_virtual_batches, const attn_tensor_t* out,
                                            uintptr_t stream) {
  return a->attn_remap_local_block_table(block_table, virtual_req, virtual_block_start,
                                         num_virtual_batches, out, S(stream));
}
attn_error_t* gattn_slice_query_start_locs(const gattn_api_t* a,
                                           const attn_tensor_t* query_start_loc,
                                           int64_t request_start, int64_t request_stop,
                                           const attn_tensor_t* out, uintptr_t stream) {
  return a->attn_slice_query_start_locs(query_start_loc, request_start, request_stop, out,
                                        S(stream));
}
attn_error_t* gattn_maybe_create_ubatch_slices(const gattn_api_t* a,
                                               const int32_t* num_scheduled_tokens,
                                               int64_t num_reqs, int64_t num_tokens_padded,
                                               int64_t num_reqs_padded, int32_t num_ubatches,
                                               int64_t split_point, attn_ubatch_slice_t* out_slices,
                                               attn_ubatch_slice_t* out_padded_slices) {
  return a->attn_maybe_create_ubatch_slices(num_scheduled_tokens, num_reqs, num_tokens_padded,
                                            num_reqs_padded, num_ubatches, split_point, out_slices,
                                            out_padded_slices);
}
attn_error_t* gattn_make_metadata_with_slice(const gattn_api_t* a,
                                             const attn_common_metadata_t* common,
                                             const attn_ubatch_slice_t* slice,
                                             const attn_ubatch_out_t* outputs,
                                             attn_metadata_t** out, uintptr_t stream) {
  return a->attn_make_metadata_with_slice(common, slice, outputs, out, S(stream));
}
attn_error_t* gattn_split_attn_metadata(const gattn_api_t* a, const attn_common_metadata_t* common,
                                        const attn_ubatch_slice_t* slices, size_t num_slices,
                                        const attn_ubatch_out_t* outputs, attn_metadata_t** out,
                                        uintptr_t stream) {
  return a->attn_split_attn_metadata(common, slices, num_slices, outputs, out, S(stream));
}
size_t gattn_backend_count(const gattn_api_t* a) { return a->attn_backend_count(); }
attn_error_t* gattn_backend_name(const gattn_api_t* a, size_t index, const char** out) {
  return a->attn_backend_name(index, out);
}
attn_error_t* gattn_backend_info(const gattn_api_t* a, size_t index, attn_backend_info_t* out) {
  return a->attn_backend_info(index, out);
}
attn_error_t* gattn_get_api(const gattn_api_t* a, uint32_t major, uint32_t minor,
                            const attn_api_t** out) {
  return a->attn_get_api(major, minor, out);
}
int gattn_table_mismatch(const gattn_api_t* a, const attn_api_t* table) {
  int i = 0;
#define GATTN_SAME(fn)                                                          \
  if ((size_t)((const char*)&table->fn - (const char*)table) >= table->struct_size || \
      table->fn != a->fn)                                                       \
    return i;                                                                   \
  ++i;
  ATTN_GO_FUNCTIONS(GATTN_SAME)
#undef GATTN_SAME
  return -1;
}
int gattn_has_function(const gattn_api_t* a, const char* name) {
#define GATTN_HAS(fn) \
  if (strcmp(name, #fn) == 0) return a->fn != NULL;
  ATTN_GO_FUNCTIONS(GATTN_HAS)
#undef GATTN_HAS
  return 0;
}
attn_error_t* gattn_backend_cudagraph_support(const gattn_api_t* a, const char* backend,
                                              const attn_kv_cache_spec_t* kv_cache_spec,
                                              const attn_builder_config_t* config,
                                              int32_t* out_level) {
  return a->attn_backend_cudagraph_support(backend, kv_cache_spec, config, out_level);
}
attn_error_t* gattn_builder_workspace_size(const gattn_api_t* a, const char* backend,
                                           const attn_kv_cache_spec_t* kv_cache_spec,
                                           const attn_builder_config_t* config, size_t* out_bytes) {
  return a->attn_builder_workspace_size(backend, kv_cache_spec, config, out_bytes);
}
attn_error_t* gattn_builder_create(const gattn_api_t* a, const char* backend,
                                   const attn_kv_cache_spec_t* kv_cache_spec,
                                   const attn_builder_config_t* config, attn_builder_t** out) {
  return a->attn_builder_create(backend, kv_cache_spec, config, out);
}
void gattn_builder_destroy(const gattn_api_t* a, attn_builder_t* builder) {
  a->attn_builder_destroy(builder);
}
const char* gattn_builder_backend_name(const gattn_api_t* a, const attn_builder_t* builder) {
  return a->attn_builder_backend_name(builder);
}
attn_error_t* gattn_builder_cudagraph_support(const gattn_api_t* a, const attn_builder_t* builder,
                                              int32_t* out_level) {
  return a->attn_builder_cudagraph_support(builder, out_level);
}
attn_error_t* gattn_builder_reorder_batch_threshold(const gattn_api_t* a,
                                                    const attn_builder_t* builder,
                                                    int32_t* out_threshold) {
  return a->attn_builder_reorder_batch_threshold(builder, out_threshold);
}
attn_error_t* gattn_builder_supports_update_block_table(const gattn_api_t* a,
                                                        const attn_builder_t* builder,
                                                        int32_t* out) {
  return a->attn_builder_supports_update_block_table(builder, out);
}
attn_error_t* gattn_min_cudagraph_support(const gattn_api_t* a,
                                          const attn_builder_t* const* builders,
                                          size_t num_builders, int32_t* out_level) {
  return a->attn_min_cudagraph_support(builders, num_builders, out_level);
}
attn_error_t* gattn_build(const gattn_api_t* a, attn_builder_t* builder, int64_t common_prefix_len,
                          const attn_common_metadata_t* common, int32_t fast_build,
                          attn_metadata_t** out, uintptr_t stream) {
  return a->attn_build(builder, common_prefix_len, common, fast_build, out, S(stream));
}
attn_error_t* gattn_update_block_table(const gattn_api_t* a, attn_builder_t* builder,
                                       const attn_metadata_t* metadata,
                                       const attn_tensor_t* block_table,
                                       const attn_tensor_t* slot_mapping, attn_metadata_t** out,
                                       uintptr_t stream) {
  return a->attn_update_block_table(builder, metadata, block_table, slot_mapping, out, S(stream));
}
attn_error_t* gattn_build_for_cudagraph_capture(const gattn_api_t* a, attn_builder_t* builder,
                                                const attn_common_metadata_t* common,
                                                attn_metadata_t** out, uintptr_t stream) {
  return a->attn_build_for_cudagraph_capture(builder, common, out, S(stream));
}
attn_error_t* gattn_build_for_drafting(const gattn_api_t* a, attn_builder_t* builder,
                                       const attn_common_metadata_t* common, int32_t draft_index,
                                       attn_metadata_t** out, uintptr_t stream) {
  return a->attn_build_for_drafting(builder, common, draft_index, out, S(stream));
}
attn_error_t* gattn_use_cascade_attention(const gattn_api_t* a, const attn_builder_t* builder,
                                          const attn_cascade_query_t* query, int32_t* out) {
  return a->attn_use_cascade_attention(builder, query, out);
}
const char* gattn_metadata_kind(const gattn_api_t* a, const attn_metadata_t* metadata) {
  return a->attn_metadata_kind(metadata);
}
size_t gattn_metadata_field_count(const gattn_api_t* a, const attn_metadata_t* metadata) {
  return a->attn_metadata_field_count(metadata);
}
attn_error_t* gattn_metadata_field(const gattn_api_t* a, const attn_metadata_t* metadata,
                                   size_t index, attn_field_t* out) {
  return a->attn_metadata_field(metadata, index, out);
}
attn_error_t* gattn_metadata_get(const gattn_api_t* a, const attn_metadata_t* metadata,
                                 const char* name, attn_field_t* out) {
  return a->attn_metadata_get(metadata, name, out);
}
attn_error_t* gattn_metadata_get_tensor(const gattn_api_t* a, const attn_metadata_t* metadata,
                                        const char* name, const attn_tensor_t** out) {
  return a->attn_metadata_get_tensor(metadata, name, out);
}
attn_error_t* gattn_metadata_get_int(const gattn_api_t* a, const attn_metadata_t* metadata,
                                     const char* name, int64_t* out) {
  return a->attn_metadata_get_int(metadata, name, out);
}
attn_error_t* gattn_metadata_clone(const gattn_api_t* a, const attn_metadata_t* metadata,
                                   attn_metadata_t** out) {
  return a->attn_metadata_clone(metadata, out);
}
void gattn_metadata_destroy(const gattn_api_t* a, attn_metadata_t* metadata) {
  a->attn_metadata_destroy(metadata);
}
attn_error_t* gattn_metadata_to_common(const gattn_api_t* a, const attn_metadata_t* metadata,
                                       attn_common_metadata_t* out) {
  return a->attn_metadata_to_common(metadata, out);
}
attn_error_t* gattn_infer_global_hyperparameters(const gattn_api_t* a,
                                                 const attn_per_layer_params_t* layers,
                                                 size_t num_layers,
                                                 attn_per_layer_params_t* out_global,
                                                 int32_t* out_has_same_window_lefts,
                                                 int32_t* out_has_same_all_params) {
  return a->attn_infer_global_hyperparameters(layers, num_layers, out_global,
                                              out_has_same_window_lefts, out_has_same_all_params);
}
attn_error_t* gattn_plugin_load(const gattn_api_t* a, const char* path, attn_plugin_t** out) {
  return a->attn_plugin_load(path, out);
}
attn_error_t* gattn_plugin_unload(const gattn_api_t* a, attn_plugin_t* plugin) {
  return a->attn_plugin_unload(plugin);
}
const char* gattn_plugin_name(const gattn_api_t* a, const attn_plugin_t* plugin) {
  return a->attn_plugin_name(plugin);
}
