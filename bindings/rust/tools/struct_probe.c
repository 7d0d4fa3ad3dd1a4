/* Prints, for every struct of attn_c.h, its size, alignment, *_STRUCT_SIZE and field offsets as
 * Rust lines; tests/layout.rs hard-codes this output (the crate needs no C compiler).
 *   cc -std=c99 -I include bindings/rust/tools/struct_probe.c -o probe && ./probe */
#include <stddef.h>
#include <stdio.h>

#include "attn_c.h"

#define SIZE(T) printf("    (\"%s\", %zu, %zu),\n", #T, sizeof(T), _Alignof(T))
#define SSIZE(M) printf("    (\"%s\", %zu),\n", #M, (size_t)(M))
#define OFF(T, F) printf("    (\"%s.%s\", %zu),\n", #T, #F, offsetof(T, F))

int main(void) {
  printf("// sizeof, alignof\n");
  SIZE(attn_device_t); SIZE(attn_dtype_t); SIZE(attn_tensor_t); SIZE(attn_kv_cache_spec_t);
  SIZE(attn_per_layer_params_t); SIZE(attn_allocator_t); SIZE(attn_builder_config_t);
  SIZE(attn_common_metadata_t); SIZE(attn_batch_split_t); SIZE(attn_slot_mapping_args_t);
  SIZE(attn_conv1d_info_t); SIZE(attn_local_attention_out_t); SIZE(attn_ubatch_slice_t);
  SIZE(attn_ubatch_out_t); SIZE(attn_cascade_query_t); SIZE(attn_field_t);
  SIZE(attn_plugin_output_t); SIZE(attn_plugin_backend_t); SIZE(attn_plugin_table_t);
  SIZE(attn_status_code_t); SIZE(attn_cudagraph_support_t);
  printf("// *_STRUCT_SIZE\n");
  SSIZE(ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_0); SSIZE(ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_2);
  SSIZE(ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_6); SSIZE(ATTN_KV_CACHE_SPEC_STRUCT_SIZE);
  SSIZE(ATTN_PER_LAYER_PARAMS_STRUCT_SIZE);
  SSIZE(ATTN_ALLOCATOR_STRUCT_SIZE); SSIZE(ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0);
  SSIZE(ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_1); SSIZE(ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_4);
  SSIZE(ATTN_BUILDER_CONFIG_STRUCT_SIZE);
  SSIZE(ATTN_COMMON_METADATA_STRUCT_SIZE_1_0);
  SSIZE(ATTN_COMMON_METADATA_STRUCT_SIZE_1_1); SSIZE(ATTN_COMMON_METADATA_STRUCT_SIZE);
  SSIZE(ATTN_BATCH_SPLIT_STRUCT_SIZE);
  SSIZE(ATTN_SLOT_MAPPING_ARGS_STRUCT_SIZE); SSIZE(ATTN_CONV1D_INFO_STRUCT_SIZE);
  SSIZE(ATTN_LOCAL_ATTENTION_OUT_STRUCT_SIZE); SSIZE(ATTN_UBATCH_SLICE_STRUCT_SIZE);
  SSIZE(ATTN_UBATCH_OUT_STRUCT_SIZE); SSIZE(ATTN_CASCADE_QUERY_STRUCT_SIZE);
  SSIZE(ATTN_FIELD_STRUCT_SIZE); SSIZE(ATTN_PLUGIN_BACKEND_STRUCT_SIZE);
  SSIZE(ATTN_PLUGIN_TABLE_STRUCT_SIZE);
  printf("// offsetof\n");
  OFF(attn_tensor_t, device); OFF(attn_tensor_t, ndim); OFF(attn_tensor_t, dtype);
  OFF(attn_tensor_t, shape); OFF(attn_tensor_t, strides); OFF(attn_tensor_t, byte_offset);
  OFF(attn_kv_cache_spec_t, attention_chunk_size); OFF(attn_kv_cache_spec_t, extension);
  OFF(attn_kv_cache_spec_t, mamba_type); OFF(attn_kv_cache_spec_t, mamba_chunk_size);
  OFF(attn_kv_cache_spec_t, mamba_cache_mode); OFF(attn_kv_cache_spec_t, num_speculative_blocks);
  OFF(attn_kv_cache_spec_t, num_prefill_checkpoint_blocks);
  OFF(attn_kv_cache_spec_t, prefill_checkpoint_alignment);
  OFF(attn_kv_cache_spec_t, mamba_replayssm_ngroups); OFF(attn_kv_cache_spec_t, mamba_num_heads);
  OFF(attn_kv_cache_spec_t, sink_len); OFF(attn_kv_cache_spec_t, head_size_v);
  OFF(attn_per_layer_params_t, logits_soft_cap); OFF(attn_per_layer_params_t, has_sinks);
  OFF(attn_per_layer_params_t, extension);
  OFF(attn_builder_config_t, device); OFF(attn_builder_config_t, validate);
  OFF(attn_builder_config_t, layers); OFF(attn_builder_config_t, num_layers);
  OFF(attn_builder_config_t, allocator); OFF(attn_builder_config_t, workspace_size);
  OFF(attn_builder_config_t, extension); OFF(attn_builder_config_t, model_dtype);
  OFF(attn_builder_config_t, cudagraph_capture_sizes);
  OFF(attn_builder_config_t, num_cudagraph_capture_sizes);
  OFF(attn_builder_config_t, num_gpu_blocks); OFF(attn_builder_config_t, speculative_token_tree);
  OFF(attn_builder_config_t, kv_sharing_fast_prefill); OFF(attn_builder_config_t, reserved_1_1);
  OFF(attn_builder_config_t, mla_kv_lora_rank);
  OFF(attn_builder_config_t, use_trtllm_ragged_deepseek_prefill);
  OFF(attn_builder_config_t, use_replayssm); OFF(attn_builder_config_t, replayssm_buffer_len);
  OFF(attn_builder_config_t, mamba_backend_flashinfer); OFF(attn_builder_config_t, async_scheduling);
  OFF(attn_builder_config_t, hash_block_size); OFF(attn_builder_config_t, cache_hit_alignment_tokens);
  OFF(attn_builder_config_t, num_hash_lookahead_tokens); OFF(attn_builder_config_t, use_eagle_block_drop);
  OFF(attn_common_metadata_t, num_reqs); OFF(attn_common_metadata_t, block_table_tensor);
  OFF(attn_common_metadata_t, causal); OFF(attn_common_metadata_t, logits_indices_padded);
  OFF(attn_common_metadata_t, num_logits_indices); OFF(attn_common_metadata_t, extension);
  OFF(attn_common_metadata_t, logits_indices_padded_cpu);
  OFF(attn_common_metadata_t, num_accepted_tokens);
  OFF(attn_common_metadata_t, num_decode_draft_tokens_cpu);
  OFF(attn_common_metadata_t, num_decode_draft_tokens); OFF(attn_common_metadata_t, is_prefilling);
  OFF(attn_slot_mapping_args_t, num_reqs); OFF(attn_slot_mapping_args_t, block_size);
  OFF(attn_slot_mapping_args_t, slot_mapping);
  OFF(attn_cascade_query_t, query_lens); OFF(attn_cascade_query_t, num_query_heads);
  OFF(attn_cascade_query_t, dcp_world_size); OFF(attn_cascade_query_t, extension);
  OFF(attn_field_t, kind); OFF(attn_field_t, tensor); OFF(attn_field_t, int_value);
  OFF(attn_field_t, float_value);
  OFF(attn_plugin_output_t, set_error); OFF(attn_plugin_backend_t, supports_update_block_table);
  OFF(attn_plugin_backend_t, build); OFF(attn_plugin_table_t, abi_minor);
  OFF(attn_plugin_table_t, num_backends);
  return 0;
}
