/*
 * The C side of the Go binding: a table of every libattn function, filled with dlsym from a
 * library opened with dlopen (no link-time dependency on libattn), and one trampoline per
 * function, because cgo cannot call through a function pointer. The table's field types are
 * taken from the declarations in attn_c.h with __typeof__, so they cannot drift from the header.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ATTN_GO_CAPI_H_
#define ATTN_GO_CAPI_H_

#include <stddef.h>
#include <stdint.h>

#include "attn_c.h"

/* The ABI the binding is written for: libattn 1.1. It requires a library of the same major and
 * a minor at least this one, and passes every struct with its 1.1 size, so that a newer header
 * (whose appended fields the binding does not know) changes nothing for it. */
#define GATTN_REQUIRED_MAJOR 1
#define GATTN_REQUIRED_MINOR 1

/* Every function comes from the header's own list, ATTN_API_FUNCTIONS (attn_c.h): no list of
 * the binding's to keep in step. The functions of ABI 1.0 are required; those of later minors
 * (ATTN_API_FUNCTIONS_1_3: attn_backend_info, attn_get_api) are resolved when the library has
 * them and left NULL otherwise (the Go side asks gattn_has_function before calling one), so
 * that the binding still opens a 1.1 or 1.2 library. */
#define ATTN_GO_REQUIRED_FUNCTIONS(X) ATTN_API_FUNCTIONS_1_0(X)
#define ATTN_GO_OPTIONAL_FUNCTIONS(X) ATTN_API_FUNCTIONS_1_3(X)
#define ATTN_GO_FUNCTIONS(X) ATTN_API_FUNCTIONS(X)

/* The function table of one loaded libattn. */
typedef struct gattn_api {
  void* handle; /* from dlopen; never closed */
#define GATTN_FIELD(name) __typeof__(&name) name;
  ATTN_GO_FUNCTIONS(GATTN_FIELD)
#undef GATTN_FIELD
} gattn_api_t;

/* The number of functions in the table. */
int gattn_function_count(void);
/* The name of function i (0 <= i < gattn_function_count()). */
const char* gattn_function_name(int i);

/* Status of gattn_open. */
enum { GATTN_OPENED = 0, GATTN_DLOPEN_FAILED = 1, GATTN_SYMBOL_MISSING = 2, GATTN_NO_MEMORY = 3 };

/* Opens `path` with dlopen(RTLD_NOW | RTLD_LOCAL) and resolves every function. On success
 * returns GATTN_OPENED and a table allocated with calloc in *out (never freed: the library
 * stays loaded). On failure returns the status, closes what it opened and writes a
 * NUL-terminated detail (dlerror's text, or the missing symbol's name) into detail. */
int gattn_open(const char* path, gattn_api_t** out, char* detail, size_t detail_size);

/* Initializers: the header's ATTN_*_INIT macros, as values, with struct_size set to the
 * struct's size in ABI 1.1. */
attn_kv_cache_spec_t gattn_kv_cache_spec_init(void);
attn_builder_config_t gattn_builder_config_init(void);
attn_per_layer_params_t gattn_per_layer_params_init(void);
attn_common_metadata_t gattn_common_metadata_init(void);
attn_batch_split_t gattn_batch_split_init(void);
attn_slot_mapping_args_t gattn_slot_mapping_args_init(void);
attn_conv1d_info_t gattn_conv1d_info_init(void);
attn_local_attention_out_t gattn_local_attention_out_init(void);
attn_ubatch_slice_t gattn_ubatch_slice_init(void);
attn_ubatch_out_t gattn_ubatch_out_init(void);
attn_cascade_query_t gattn_cascade_query_init(void);
attn_field_t gattn_field_init(void);
attn_backend_info_t gattn_backend_info_init(void);


/* Trampolines: gattn_<function>(api, the function's arguments). A stream is passed as an
 * integer (it is an opaque CUDA handle, not Go memory). */
int32_t gattn_error_code(const gattn_api_t* a, const attn_error_t* err);
const char* gattn_error_message(const gattn_api_t* a, const attn_error_t* err);
void gattn_error_destroy(const gattn_api_t* a, attn_error_t* err);
const char* gattn_status_string(const gattn_api_t* a, int32_t code);
void gattn_get_version(const gattn_api_t* a, uint32_t* major, uint32_t* minor, uint32_t* patch);
attn_error_t* gattn_check_version(const gattn_api_t* a, uint32_t major, uint32_t minor);
attn_error_t* gattn_device_count(const gattn_api_t* a, int32_t device_type, int32_t* out);
attn_error_t* gattn_common_metadata_unpadded(const gattn_api_t* a,
                                             const attn_common_metadata_t* common,
                                             int64_t num_actual_tokens, int64_t num_actual_reqs,
                                             attn_metadata_t** out);
attn_error_t* gattn_split_decodes_and_prefills(const gattn_api_t* a,
                                               const attn_common_metadata_t* common,
                                               int32_t decode_threshold, int32_t require_uniform,
                                               attn_batch_split_t* out);
attn_error_t* gattn_split_decodes_prefills_and_extends(const gattn_api_t* a,
                                                       const attn_common_metadata_t* common,
                                                       int32_t decode_threshold,
                                                       attn_batch_split_t* out);
attn_error_t* gattn_reorder_batch_to_split_decodes_and_prefills(
    const gattn_api_t* a, const int32_t* num_scheduled_tokens, const int32_t* num_computed_tokens,
    int64_t num_reqs, int32_t decode_threshold, int32_t* out_swaps, int64_t swaps_capacity,
    int64_t* out_num_swaps);
attn_error_t* gattn_split_prefill_chunks(const gattn_api_t* a, const int32_t* seq_lens,
                                         int64_t num_seqs, int64_t workspace_size,
                                         int64_t request_offset, int64_t* out_bounds,
                                         int64_t bounds_capacity, int64_t* out_num_chunks);
attn_error_t* gattn_get_dcp_local_seq_lens(const gattn_api_t* a, const attn_tensor_t* seq_lens,
                                           int32_t dcp_size, int32_t dcp_rank,
                                           int32_t cp_kv_cache_interleave_size,
                                           const attn_tensor_t* out, uintptr_t stream);
attn_error_t* gattn_reshape_query_for_spec_decode(const gattn_api_t* a, const attn_tensor_t* query,
                                                  int64_t batch_size, attn_tensor_t* out,
                                                  int64_t* out_shape, int64_t* out_strides);
attn_error_t* gattn_compute_slot_mapping(const gattn_api_t* a, const attn_slot_mapping_args_t* args,
                                         uintptr_t stream);
attn_error_t* gattn_compute_flashinfer_kv_metadata(
    const gattn_api_t* a, const attn_tensor_t* seq_lens, const attn_tensor_t* seq_lens_cpu,
    const attn_tensor_t* block_table, int32_t page_size, const attn_tensor_t* out_indptr,
    const attn_tensor_t* out_indices, const attn_tensor_t* out_last_page_len,
    int64_t* out_num_pages, uintptr_t stream);
attn_error_t* gattn_compute_causal_conv1d_metadata(
    const gattn_api_t* a, const attn_tensor_t* query_start_loc_p_cpu,
    const attn_tensor_t* query_start_loc_p, const attn_tensor_t* out_batch_ptr,
    const attn_tensor_t* out_token_chunk_offset_ptr, const attn_tensor_t* out_nums,
    attn_conv1d_info_t* info, uintptr_t stream);
attn_error_t* gattn_make_kv_sharing_fast_prefill_common_attn_metadata(
    const gattn_api_t* a, const attn_common_metadata_t* common,
    const attn_tensor_t* logits_indices_cpu, const attn_tensor_t* out_query_start_loc,
    const attn_tensor_t* out_query_start_loc_cpu, attn_metadata_t** out, uintptr_t stream);
attn_error_t* gattn_local_attention_num_virtual_batches(const gattn_api_t* a,
                                                        int32_t attn_chunk_size,
                                                        const attn_common_metadata_t* common,
                                                        int64_t* out);
attn_error_t* gattn_make_local_attention_virtual_batches(
    const gattn_api_t* a, int32_t attn_chunk_size, const attn_common_metadata_t* common,
    int32_t block_size, const attn_local_attention_out_t* outputs, attn_metadata_t** out,
    uintptr_t stream);
attn_error_t* gattn_remap_local_block_table(const gattn_api_t* a, const attn_tensor_t* block_table,
                                            const attn_tensor_t* virtual_req,
                                            const attn_tensor_t* virtual_block_start,
                                            int64_t num_virtual_batches, const attn_tensor_t* out,
                                            uintptr_t stream);
attn_error_t* gattn_slice_query_start_locs(const gattn_api_t* a,
                                           const attn_tensor_t* query_start_loc,
                                           int64_t request_start, int64_t request_stop,
                                           const attn_tensor_t* out, uintptr_t stream);
attn_error_t* gattn_maybe_create_ubatch_slices(const gattn_api_t* a,
                                               const int32_t* num_scheduled_tokens,
                                               int64_t num_reqs, int64_t num_tokens_padded,
                                               int64_t num_reqs_padded, int32_t num_ubatches,
                                               int64_t split_point, attn_ubatch_slice_t* out_slices,
                                               attn_ubatch_slice_t* out_padded_slices);
attn_error_t* gattn_make_metadata_with_slice(const gattn_api_t* a,
                                             const attn_common_metadata_t* common,
                                             const attn_ubatch_slice_t* slice,
                                             const attn_ubatch_out_t* outputs,
                                             attn_metadata_t** out, uintptr_t stream);
attn_error_t* gattn_split_attn_metadata(const gattn_api_t* a, const attn_common_metadata_t* common,
                                        const attn_ubatch_slice_t* slices, size_t num_slices,
                                        const attn_ubatch_out_t* outputs, attn_metadata_t** out,
                                        uintptr_t stream);
size_t gattn_backend_count(const gattn_api_t* a);
attn_error_t* gattn_backend_name(const gattn_api_t* a, size_t index, const char** out);
/* ABI 1.3 (optional: call only when gattn_has_function says the library has them). */
attn_error_t* gattn_backend_info(const gattn_api_t* a, size_t index, attn_backend_info_t* out);
attn_error_t* gattn_get_api(const gattn_api_t* a, uint32_t major, uint32_t minor,
                            const attn_api_t** out);
/* The index (in ATTN_GO_FUNCTIONS order) of the first member of attn_get_api's table that is
 * not the function resolved by name, or -1 when all agree. */
int gattn_table_mismatch(const gattn_api_t* a, const attn_api_t* table);
/* Whether the library has function `name` (the optional ones may be absent). */
int gattn_has_function(const gattn_api_t* a, const char* name);
attn_error_t* gattn_backend_cudagraph_support(const gattn_api_t* a, const char* backend,
                                              const attn_kv_cache_spec_t* kv_cache_spec,
                                              const attn_builder_config_t* config,
                                              int32_t* out_level);
attn_error_t* gattn_builder_workspace_size(const gattn_api_t* a, const char* backend,
                                           const attn_kv_cache_spec_t* kv_cache_spec,
                                           const attn_builder_config_t* config, size_t* out_bytes);
attn_error_t* gattn_builder_create(const gattn_api_t* a, const char* backend,
                                   const attn_kv_cache_spec_t* kv_cache_spec,
                                   const attn_builder_config_t* config, attn_builder_t** out);
void gattn_builder_destroy(const gattn_api_t* a, attn_builder_t* builder);
const char* gattn_builder_backend_name(const gattn_api_t* a, const attn_builder_t* builder);
attn_error_t* gattn_builder_cudagraph_support(const gattn_api_t* a, const attn_builder_t* builder,
                                              int32_t* out_level);
attn_error_t* gattn_builder_reorder_batch_threshold(const gattn_api_t* a,
                                                    const attn_builder_t* builder,
                                                    int32_t* out_threshold);
attn_error_t* gattn_builder_supports_update_block_table(const gattn_api_t* a,
                                                        const attn_builder_t* builder,
                                                        int32_t* out);
attn_error_t* gattn_min_cudagraph_support(const gattn_api_t* a,
                                          const attn_builder_t* const* builders,
                                          size_t num_builders, int32_t* out_level);
attn_error_t* gattn_build(const gattn_api_t* a, attn_builder_t* builder, int64_t common_prefix_len,
                          const attn_common_metadata_t* common, int32_t fast_build,
                          attn_metadata_t** out, uintptr_t stream);
attn_error_t* gattn_update_block_table(const gattn_api_t* a, attn_builder_t* builder,
                                       const attn_metadata_t* metadata,
                                       const attn_tensor_t* block_table,
                                       const attn_tensor_t* slot_mapping, attn_metadata_t** out,
                                       uintptr_t stream);
attn_error_t* gattn_build_for_cudagraph_capture(const gattn_api_t* a, attn_builder_t* builder,
                                                const attn_common_metadata_t* common,
                                                attn_metadata_t** out, uintptr_t stream);
attn_error_t* gattn_build_for_drafting(const gattn_api_t* a, attn_builder_t* builder,
                                       const attn_common_metadata_t* common, int32_t draft_index,
                                       attn_metadata_t** out, uintptr_t stream);
attn_error_t* gattn_use_cascade_attention(const gattn_api_t* a, const attn_builder_t* builder,
                                          const attn_cascade_query_t* query, int32_t* out);
const char* gattn_metadata_kind(const gattn_api_t* a, const attn_metadata_t* metadata);
size_t gattn_metadata_field_count(const gattn_api_t* a, const attn_metadata_t* metadata);
attn_error_t* gattn_metadata_field(const gattn_api_t* a, const attn_metadata_t* metadata,
                                   size_t index, attn_field_t* out);
attn_error_t* gattn_metadata_get(const gattn_api_t* a, const attn_metadata_t* metadata,
                                 const char* name, attn_field_t* out);
attn_error_t* gattn_metadata_get_tensor(const gattn_api_t* a, const attn_metadata_t* metadata,
                                        const char* name, const attn_tensor_t** out);
attn_error_t* gattn_metadata_get_int(const gattn_api_t* a, const attn_metadata_t* metadata,
                                     const char* name, int64_t* out);
attn_error_t* gattn_metadata_clone(const gattn_api_t* a, const attn_metadata_t* metadata,
                                   attn_metadata_t** out);
void gattn_metadata_destroy(const gattn_api_t* a, attn_metadata_t* metadata);
attn_error_t* gattn_metadata_to_common(const gattn_api_t* a, const attn_metadata_t* metadata,
                                       attn_common_metadata_t* out);
attn_error_t* gattn_infer_global_hyperparameters(const gattn_api_t* a,
                                                 const attn_per_layer_params_t* layers,
                                                 size_t num_layers,
                                                 attn_per_layer_params_t* out_global,
                                                 int32_t* out_has_same_window_lefts,
                                                 int32_t* out_has_same_all_params);
attn_error_t* gattn_plugin_load(const gattn_api_t* a, const char* path, attn_plugin_t** out);
attn_error_t* gattn_plugin_unload(const gattn_api_t* a, attn_plugin_t* plugin);
const char* gattn_plugin_name(const gattn_api_t* a, const attn_plugin_t* plugin);

#endif /* ATTN_GO_CAPI_H_ */
