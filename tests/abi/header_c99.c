/* attn_c.h compiles as strict C99 with every warning an error, and its macros are constant
 * initializers. Built with -std=c99 -Wall -Wextra -pedantic -Werror (tests/CMakeLists.txt). */
#include "attn_c.h"

#include <stdio.h>

static const attn_kv_cache_spec_t spec = ATTN_KV_CACHE_SPEC_INIT;
static const attn_builder_config_t config = ATTN_BUILDER_CONFIG_INIT;
static const attn_common_metadata_t common = ATTN_COMMON_METADATA_INIT;
static const attn_per_layer_params_t layer = ATTN_PER_LAYER_PARAMS_INIT;
static const attn_allocator_t allocator = ATTN_ALLOCATOR_INIT;
static const attn_cascade_query_t query = ATTN_CASCADE_QUERY_INIT;
static const attn_field_t field = ATTN_FIELD_INIT;
static const attn_backend_info_t backend_info = ATTN_BACKEND_INFO_INIT;

/* The *_STRUCT_SIZE macros must cover the whole struct (libgit2's structinit check): a field
 * appended without updating the macro fails here. */
typedef char spec_size_ok[ATTN_KV_CACHE_SPEC_STRUCT_SIZE == sizeof(attn_kv_cache_spec_t) ? 1 : -1];
typedef char config_size_ok[ATTN_BUILDER_CONFIG_STRUCT_SIZE == sizeof(attn_builder_config_t) ? 1 : -1];
typedef char common_size_ok[ATTN_COMMON_METADATA_STRUCT_SIZE == sizeof(attn_common_metadata_t) ? 1 : -1];
typedef char layer_size_ok[ATTN_PER_LAYER_PARAMS_STRUCT_SIZE == sizeof(attn_per_layer_params_t) ? 1 : -1];
typedef char alloc_size_ok[ATTN_ALLOCATOR_STRUCT_SIZE == sizeof(attn_allocator_t) ? 1 : -1];
typedef char query_size_ok[ATTN_CASCADE_QUERY_STRUCT_SIZE == sizeof(attn_cascade_query_t) ? 1 : -1];
typedef char field_size_ok[ATTN_FIELD_STRUCT_SIZE == sizeof(attn_field_t) ? 1 : -1];
typedef char backend_size_ok[ATTN_PLUGIN_BACKEND_STRUCT_SIZE == sizeof(attn_plugin_backend_t) ? 1 : -1];
typedef char table_size_ok[ATTN_PLUGIN_TABLE_STRUCT_SIZE == sizeof(attn_plugin_table_t) ? 1 : -1];
typedef char info_size_ok[ATTN_BACKEND_INFO_STRUCT_SIZE == sizeof(attn_backend_info_t) ? 1 : -1];
/* 1.7 appended vllm_names after the 1.3 struct, which ended at `extension` */
typedef char info_1_3_ok[ATTN_BACKEND_INFO_STRUCT_SIZE_1_3 ==
                                 offsetof(attn_backend_info_t, vllm_names) ? 1 : -1];
typedef char api_size_ok[ATTN_API_STRUCT_SIZE == sizeof(attn_api_t) ? 1 : -1];

/* Every function of ATTN_API_FUNCTIONS has a PFN_ pointer type whose signature is the
 * declaration's: assigning the function to it (in sizeof, never evaluated, so nothing is linked)
 * is a constraint violation under -pedantic -Werror when they differ. A function missing from the
 * list, or a PFN_ type missing, is caught by scripts/check_api_list.py (test_api_list). */
#define PFN_MATCHES_DECLARATION(name) \
  typedef char pfn_ok_##name[sizeof(*(PFN_##name*)0 = name) ? 1 : -1];
ATTN_API_FUNCTIONS(PFN_MATCHES_DECLARATION)
#undef PFN_MATCHES_DECLARATION

int main(void) {
  /* every INIT macro sets struct_size first and the documented defaults */
  if (spec.struct_size != sizeof spec || config.struct_size != sizeof config ||
      common.struct_size != sizeof common || layer.struct_size != sizeof layer ||
      allocator.struct_size != sizeof allocator || query.struct_size != sizeof query ||
      field.struct_size != sizeof field || backend_info.struct_size != sizeof backend_info)
    return 1;
  if (config.device.device_type != ATTN_DEVICE_CPU || config.decode_context_parallel_size != 1 ||
      config.cp_kv_cache_interleave_size != 1 ||
      config.cudagraph_mode != ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE ||
      config.flash_attn_max_num_splits_for_cuda_graph != 32 || config.validate != ATTN_VALIDATE_HOST ||
      config.extension != NULL)
    return 2;
  if (common.causal != 1 || layer.window_left != -1 || layer.sm_scale != 1.0 ||
      query.dcp_world_size != 1 || spec.dtype != ATTN_KV_DTYPE_BFLOAT16)
    return 3;
  printf("attn_c.h: C99 ok, struct sizes ok (config %u bytes)\n", (unsigned)sizeof config);
  return 0;
}
