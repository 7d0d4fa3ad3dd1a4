//! The `sys` mirrors against the header: sizes, alignments, offsets and `*_STRUCT_SIZE` values
//! printed by tools/struct_probe.c (gcc 12, x86_64), and the function table against
//! abi/symbols.txt and include/attn_c.h. Needs no library.
use std::collections::BTreeSet;
use std::mem::{align_of, offset_of, size_of};

use libattn::sys::*;

macro_rules! sizes {
    ($($t:ty => $size:expr, $align:expr;)*) => {$(
        assert_eq!((size_of::<$t>(), align_of::<$t>()), ($size, $align), "size/align of {}", stringify!($t));
    )*};
}

#[test]
fn struct_sizes_match_the_header() {
    // tools/struct_probe.c: sizeof, _Alignof
    sizes! {
        attn_device_t => 8, 4;
        attn_dtype_t => 4, 2;
        attn_tensor_t => 48, 8;
        attn_kv_cache_spec_t => 112, 8;
        attn_per_layer_params_t => 48, 8;
        attn_allocator_t => 40, 8;
        attn_builder_config_t => 376, 8;
        attn_common_metadata_t => 272, 8;
        attn_batch_split_t => 56, 8;
        attn_slot_mapping_args_t => 88, 8;
        attn_conv1d_info_t => 24, 8;
        attn_local_attention_out_t => 80, 8;
        attn_ubatch_slice_t => 40, 8;
        attn_ubatch_out_t => 48, 8;
        attn_cascade_query_t => 72, 8;
        attn_field_t => 48, 8;
        attn_backend_info_t => 48, 8;
        attn_plugin_output_t => 64, 8;
        attn_plugin_backend_t => 80, 8;
        attn_plugin_table_t => 48, 8;
        attn_status_code_t => 4, 4;
        attn_cudagraph_support_t => 4, 4;
        attn_device_type_t => 4, 4;
        attn_field_kind_t => 4, 4;
    }
}

#[test]
fn struct_size_constants_match_the_header() {
    // tools/struct_probe.c: the *_STRUCT_SIZE macros
    let expected: &[(&str, usize, usize)] = &[
        ("KV_CACHE_SPEC_1_0", ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_0, 48),
        ("KV_CACHE_SPEC_1_2", ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_2, 64),
        ("KV_CACHE_SPEC_1_6", ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_6, 80),
        ("KV_CACHE_SPEC", ATTN_KV_CACHE_SPEC_STRUCT_SIZE, 112),
        ("PER_LAYER_PARAMS", ATTN_PER_LAYER_PARAMS_STRUCT_SIZE, 48),
        ("ALLOCATOR", ATTN_ALLOCATOR_STRUCT_SIZE, 40),
        ("BUILDER_CONFIG_1_0", ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0, 136),
        ("BUILDER_CONFIG_1_1", ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_1, 208),
        ("BUILDER_CONFIG_1_2", ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_2, 240),
        ("BUILDER_CONFIG_1_4", ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_4, 264),
        ("BUILDER_CONFIG_1_6", ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_6, 304),
        ("BUILDER_CONFIG", ATTN_BUILDER_CONFIG_STRUCT_SIZE, 376),
        ("COMMON_METADATA_1_0", ATTN_COMMON_METADATA_STRUCT_SIZE_1_0, 152),
        ("COMMON_METADATA_1_1", ATTN_COMMON_METADATA_STRUCT_SIZE_1_1, 160),
        ("COMMON_METADATA_1_3", ATTN_COMMON_METADATA_STRUCT_SIZE_1_3, 192),
        ("COMMON_METADATA_1_6", ATTN_COMMON_METADATA_STRUCT_SIZE_1_6, 264),
        ("COMMON_METADATA", ATTN_COMMON_METADATA_STRUCT_SIZE, 272),
        ("BATCH_SPLIT", ATTN_BATCH_SPLIT_STRUCT_SIZE, 56),
        ("SLOT_MAPPING_ARGS", ATTN_SLOT_MAPPING_ARGS_STRUCT_SIZE, 88),
        ("CONV1D_INFO", ATTN_CONV1D_INFO_STRUCT_SIZE, 24),
        ("LOCAL_ATTENTION_OUT", ATTN_LOCAL_ATTENTION_OUT_STRUCT_SIZE, 80),
        ("UBATCH_SLICE", ATTN_UBATCH_SLICE_STRUCT_SIZE, 40),
        ("UBATCH_OUT", ATTN_UBATCH_OUT_STRUCT_SIZE, 48),
        ("CASCADE_QUERY", ATTN_CASCADE_QUERY_STRUCT_SIZE, 72),
        ("FIELD", ATTN_FIELD_STRUCT_SIZE, 48),
        ("BACKEND_INFO_1_3", ATTN_BACKEND_INFO_STRUCT_SIZE_1_3, 40),
        ("BACKEND_INFO", ATTN_BACKEND_INFO_STRUCT_SIZE, 48),
        ("PLUGIN_BACKEND", ATTN_PLUGIN_BACKEND_STRUCT_SIZE, 80),
        ("PLUGIN_TABLE", ATTN_PLUGIN_TABLE_STRUCT_SIZE, 48),
    ];
    for &(name, got, want) in expected {
        assert_eq!(got, want, "ATTN_{name}_STRUCT_SIZE");
    }
    // the INIT constants carry them
    assert_eq!(attn_builder_config_t::INIT.struct_size, 376);
    assert_eq!(attn_builder_config_t::INIT.replayssm_buffer_len, 16); // vLLM's default
    assert_eq!(attn_common_metadata_t::INIT.struct_size, 272);
    assert_eq!(attn_common_metadata_t::INIT.max_logits_per_req, -1); // None
    assert_eq!(attn_kv_cache_spec_t::INIT.struct_size, 112);
    assert_eq!(attn_field_t::INIT.struct_size, 48);
    assert_eq!(attn_backend_info_t::INIT.struct_size, 48);
}

#[test]
fn field_offsets_match_the_header() {
    // tools/struct_probe.c: offsetof
    let expected: &[(&str, usize, usize)] = &[
        ("attn_tensor_t.device", offset_of!(attn_tensor_t, device), 8),
        ("attn_backend_info_t.extension", offset_of!(attn_backend_info_t, extension), 32),
        ("attn_backend_info_t.vllm_names", offset_of!(attn_backend_info_t, vllm_names), 40),
        ("attn_tensor_t.ndim", offset_of!(attn_tensor_t, ndim), 16),
        ("attn_tensor_t.dtype", offset_of!(attn_tensor_t, dtype), 20),
        ("attn_tensor_t.shape", offset_of!(attn_tensor_t, shape), 24),
        ("attn_tensor_t.strides", offset_of!(attn_tensor_t, strides), 32),
        ("attn_tensor_t.byte_offset", offset_of!(attn_tensor_t, byte_offset), 40),
        ("attn_kv_cache_spec_t.attention_chunk_size", offset_of!(attn_kv_cache_spec_t, attention_chunk_size), 32),
        ("attn_kv_cache_spec_t.extension", offset_of!(attn_kv_cache_spec_t, extension), 40),
        ("attn_kv_cache_spec_t.mamba_type", offset_of!(attn_kv_cache_spec_t, mamba_type), 48),
        ("attn_kv_cache_spec_t.mamba_chunk_size", offset_of!(attn_kv_cache_spec_t, mamba_chunk_size), 52),
        ("attn_kv_cache_spec_t.mamba_cache_mode", offset_of!(attn_kv_cache_spec_t, mamba_cache_mode), 56),
        ("attn_kv_cache_spec_t.num_speculative_blocks", offset_of!(attn_kv_cache_spec_t, num_speculative_blocks), 60),
        ("attn_kv_cache_spec_t.num_prefill_checkpoint_blocks", offset_of!(attn_kv_cache_spec_t, num_prefill_checkpoint_blocks), 64),
        ("attn_kv_cache_spec_t.prefill_checkpoint_alignment", offset_of!(attn_kv_cache_spec_t, prefill_checkpoint_alignment), 68),
        ("attn_kv_cache_spec_t.mamba_replayssm_ngroups", offset_of!(attn_kv_cache_spec_t, mamba_replayssm_ngroups), 72),
        ("attn_kv_cache_spec_t.mamba_num_heads", offset_of!(attn_kv_cache_spec_t, mamba_num_heads), 76),
        ("attn_kv_cache_spec_t.index_topk", offset_of!(attn_kv_cache_spec_t, index_topk), 80),
        ("attn_kv_cache_spec_t.topk_buffer_width", offset_of!(attn_kv_cache_spec_t, topk_buffer_width), 84),
        ("attn_kv_cache_spec_t.sink_len", offset_of!(attn_kv_cache_spec_t, sink_len), 88),
        ("attn_kv_cache_spec_t.head_size_v", offset_of!(attn_kv_cache_spec_t, head_size_v), 92),
        ("attn_kv_cache_spec_t.tokens_per_state", offset_of!(attn_kv_cache_spec_t, tokens_per_state), 96),
        ("attn_kv_cache_spec_t.reserved_1_7", offset_of!(attn_kv_cache_spec_t, reserved_1_7), 100),
        ("attn_kv_cache_spec_t.block_stride_bytes", offset_of!(attn_kv_cache_spec_t, block_stride_bytes), 104),
        ("attn_kv_cache_spec_t.reserved_1_7_b", offset_of!(attn_kv_cache_spec_t, reserved_1_7_b), 108),
        ("attn_per_layer_params_t.logits_soft_cap", offset_of!(attn_per_layer_params_t, logits_soft_cap), 16),
        ("attn_per_layer_params_t.has_sinks", offset_of!(attn_per_layer_params_t, has_sinks), 32),
        ("attn_per_layer_params_t.extension", offset_of!(attn_per_layer_params_t, extension), 40),
        ("attn_builder_config_t.device", offset_of!(attn_builder_config_t, device), 8),
        ("attn_builder_config_t.validate", offset_of!(attn_builder_config_t, validate), 84),
        ("attn_builder_config_t.layers", offset_of!(attn_builder_config_t, layers), 88),
        ("attn_builder_config_t.num_layers", offset_of!(attn_builder_config_t, num_layers), 96),
        ("attn_builder_config_t.allocator", offset_of!(attn_builder_config_t, allocator), 104),
        ("attn_builder_config_t.workspace_size", offset_of!(attn_builder_config_t, workspace_size), 120),
        ("attn_builder_config_t.extension", offset_of!(attn_builder_config_t, extension), 128),
        ("attn_builder_config_t.model_dtype", offset_of!(attn_builder_config_t, model_dtype), 136),
        (
            "attn_builder_config_t.block_table_width",
            offset_of!(attn_builder_config_t, block_table_width),
            312,
        ),
        (
            "attn_builder_config_t.platform_rocm",
            offset_of!(attn_builder_config_t, platform_rocm),
            320,
        ),
        (
            "attn_builder_config_t.sparse_indexer_topk_backend",
            offset_of!(attn_builder_config_t, sparse_indexer_topk_backend),
            340,
        ),
        (
            "attn_builder_config_t.mla_prefill_backend",
            offset_of!(attn_builder_config_t, mla_prefill_backend),
            304,
        ),
        (
            "attn_builder_config_t.cudagraph_capture_sizes",
            offset_of!(attn_builder_config_t, cudagraph_capture_sizes),
            152,
        ),
        (
            "attn_builder_config_t.num_cudagraph_capture_sizes",
            offset_of!(attn_builder_config_t, num_cudagraph_capture_sizes),
            160,
        ),
        ("attn_builder_config_t.num_gpu_blocks", offset_of!(attn_builder_config_t, num_gpu_blocks), 168),
        (
            "attn_builder_config_t.speculative_token_tree",
            offset_of!(attn_builder_config_t, speculative_token_tree),
            184,
        ),
        (
            "attn_builder_config_t.kv_sharing_fast_prefill",
            offset_of!(attn_builder_config_t, kv_sharing_fast_prefill),
            192,
        ),
        ("attn_builder_config_t.reserved_1_1", offset_of!(attn_builder_config_t, reserved_1_1), 204),
        ("attn_builder_config_t.mla_kv_lora_rank", offset_of!(attn_builder_config_t, mla_kv_lora_rank), 208),
        (
            "attn_builder_config_t.use_trtllm_ragged_deepseek_prefill",
            offset_of!(attn_builder_config_t, use_trtllm_ragged_deepseek_prefill),
            236,
        ),
        ("attn_builder_config_t.use_replayssm", offset_of!(attn_builder_config_t, use_replayssm), 264),
        ("attn_builder_config_t.replayssm_buffer_len", offset_of!(attn_builder_config_t, replayssm_buffer_len), 268),
        ("attn_builder_config_t.mamba_backend_flashinfer", offset_of!(attn_builder_config_t, mamba_backend_flashinfer), 272),
        ("attn_builder_config_t.async_scheduling", offset_of!(attn_builder_config_t, async_scheduling), 276),
        ("attn_builder_config_t.hash_block_size", offset_of!(attn_builder_config_t, hash_block_size), 280),
        ("attn_builder_config_t.cache_hit_alignment_tokens", offset_of!(attn_builder_config_t, cache_hit_alignment_tokens), 284),
        ("attn_builder_config_t.num_hash_lookahead_tokens", offset_of!(attn_builder_config_t, num_hash_lookahead_tokens), 288),
        ("attn_builder_config_t.use_eagle_block_drop", offset_of!(attn_builder_config_t, use_eagle_block_drop), 292),
        ("attn_common_metadata_t.num_reqs", offset_of!(attn_common_metadata_t, num_reqs), 40),
        ("attn_common_metadata_t.block_table_tensor", offset_of!(attn_common_metadata_t, block_table_tensor), 72),
        ("attn_common_metadata_t.causal", offset_of!(attn_common_metadata_t, causal), 88),
        ("attn_common_metadata_t.logits_indices_padded", offset_of!(attn_common_metadata_t, logits_indices_padded), 96),
        ("attn_common_metadata_t.num_logits_indices", offset_of!(attn_common_metadata_t, num_logits_indices), 104),
        ("attn_common_metadata_t.extension", offset_of!(attn_common_metadata_t, extension), 144),
        (
            "attn_common_metadata_t.logits_indices_padded_cpu",
            offset_of!(attn_common_metadata_t, logits_indices_padded_cpu),
            152,
        ),
        ("attn_common_metadata_t.num_accepted_tokens", offset_of!(attn_common_metadata_t, num_accepted_tokens), 160),
        (
            "attn_common_metadata_t.num_decode_draft_tokens_cpu",
            offset_of!(attn_common_metadata_t, num_decode_draft_tokens_cpu),
            168,
        ),
        (
            "attn_common_metadata_t.num_decode_draft_tokens",
            offset_of!(attn_common_metadata_t, num_decode_draft_tokens),
            176,
        ),
        ("attn_common_metadata_t.is_prefilling", offset_of!(attn_common_metadata_t, is_prefilling), 184),
        ("attn_slot_mapping_args_t.num_reqs", offset_of!(attn_slot_mapping_args_t, num_reqs), 24),
        ("attn_slot_mapping_args_t.block_size", offset_of!(attn_slot_mapping_args_t, block_size), 56),
        ("attn_slot_mapping_args_t.slot_mapping", offset_of!(attn_slot_mapping_args_t, slot_mapping), 72),
        ("attn_cascade_query_t.query_lens", offset_of!(attn_cascade_query_t, query_lens), 16),
        ("attn_cascade_query_t.num_query_heads", offset_of!(attn_cascade_query_t, num_query_heads), 32),
        ("attn_cascade_query_t.dcp_world_size", offset_of!(attn_cascade_query_t, dcp_world_size), 56),
        ("attn_cascade_query_t.extension", offset_of!(attn_cascade_query_t, extension), 64),
        ("attn_field_t.kind", offset_of!(attn_field_t, kind), 16),
        ("attn_field_t.tensor", offset_of!(attn_field_t, tensor), 24),
        ("attn_field_t.int_value", offset_of!(attn_field_t, int_value), 32),
        ("attn_field_t.float_value", offset_of!(attn_field_t, float_value), 40),
        ("attn_plugin_output_t.set_error", offset_of!(attn_plugin_output_t, set_error), 56),
        (
            "attn_plugin_backend_t.supports_update_block_table",
            offset_of!(attn_plugin_backend_t, supports_update_block_table),
            32,
        ),
        ("attn_plugin_backend_t.build", offset_of!(attn_plugin_backend_t, build), 64),
        ("attn_plugin_table_t.abi_minor", offset_of!(attn_plugin_table_t, abi_minor), 12),
        ("attn_plugin_table_t.num_backends", offset_of!(attn_plugin_table_t, num_backends), 32),
    ];
    for &(name, got, want) in expected {
        assert_eq!(got, want, "offsetof({name})");
    }
}

#[test]
fn enum_numbers_match_the_header() {
    assert_eq!(attn_status_code::ATTN_ERR_INTERNAL as i32, 8);
    assert_eq!(attn_device_type::ATTN_DEVICE_CUDA_MANAGED as i32, 13);
    assert_eq!(attn_dtype_code::ATTN_DTYPE_BOOL as i32, 6);
    assert_eq!(attn_cudagraph_support::ATTN_CG_ALWAYS as i32, 3);
    assert_eq!(attn_cudagraph_mode::ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE as i32, 4);
    assert_eq!(attn_kv_cache_kind::ATTN_KV_MAMBA as i32, 6);
    assert_eq!(attn_kv_dtype::ATTN_KV_DTYPE_UINT8 as i32, 6);
    assert_eq!(attn_attention_type::ATTN_TYPE_ENCODER_DECODER as i32, 3);
    assert_eq!(attn_validate_mode::ATTN_VALIDATE_FULL as i32, 1);
    assert_eq!(attn_cpu_isa::ATTN_CPU_ISA_RVV as i32, 7);
    assert_eq!(attn_field_kind::ATTN_FIELD_BOOL as i32, 4);
    assert_eq!(libattn::CudagraphSupport::UniformBatch.as_raw(), attn_cudagraph_support::ATTN_CG_UNIFORM_BATCH as i32);
    assert_eq!(libattn::KvCacheKind::ChunkedLocalAttention.as_raw(), 2);
    assert_eq!(libattn::CpuIsa::from_raw(3), Some(libattn::CpuIsa::Vec16));
    assert_eq!(libattn::CpuIsa::from_raw(8), None);
}

macro_rules! covers_c_enum {
    ($($t:ty),*) => {$({
        let (_, members) = ENUMS.iter().find(|(name, _)| *name == <$t>::C_TYPE).expect(<$t>::C_TYPE);
        let ours: Vec<i64> = <$t>::ALL.iter().map(|v| v.as_raw() as i64).collect();
        let header: Vec<i64> = members.iter().map(|(_, v)| *v).collect();
        assert_eq!(ours, header, "{} against {} of attn_c.h", stringify!($t), <$t>::C_TYPE);
        for (v, (cname, _)) in <$t>::ALL.iter().zip(members.iter()) {
            assert!(cname.ends_with(v.name()), "{}: {} is not {cname}", stringify!($t), v.name());
        }
    })*};
}

#[test]
fn every_enum_has_every_constant_of_the_header() {
    use libattn::*;
    covers_c_enum!(
        CudagraphSupport,
        CudagraphMode,
        KvCacheKind,
        KvDtype,
        AttentionType,
        ValidateMode,
        CpuIsa,
        MambaType,
        MambaCacheMode,
        DeviceType
    );
}

fn repo_file(path: &str) -> String {
    let full = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("cannot read {full}: {e}"))
}

#[test]
fn the_table_has_every_exported_symbol() {
    let table: BTreeSet<&str> = SYMBOLS.iter().copied().collect();
    assert_eq!(table.len(), SYMBOLS.len(), "a symbol is listed twice");
    let listed = repo_file("abi/symbols.txt");
    let exported: BTreeSet<&str> = listed
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('@').next().unwrap_or(l).trim())
        .collect();
    assert_eq!(table, exported, "sys::Api against abi/symbols.txt");
    let header = repo_file("include/attn_c.h");
    let declared: BTreeSet<String> = header
        .split("ATTN_API ")
        .skip(1)
        .filter_map(|d| {
            let name_end = d.find('(')?;
            d[..name_end].rsplit([' ', '*']).next().map(str::to_owned)
        })
        .filter(|name| name.starts_with("attn_"))
        .collect();
    let table: BTreeSet<String> = SYMBOLS.iter().map(|s| s.to_string()).collect();
    assert_eq!(table, declared, "sys::Api against the ATTN_API declarations of attn_c.h");
}
pub fn header_function_table() -> Vec<String> {
    let header = repo_file("include/attn_c.h");
    let mut names = Vec::new();
    for (i, _) in header.match_indices("#define ATTN_API_FUNCTIONS_1_") {
        let body = &header[i..];
        let end = body.find("\n\n").unwrap_or(body.len());
        for part in body[..end].split("X(").skip(1) {
            if let Some(close) = part.find(')') {
                names.push(part[..close].to_string());
            }
        }
    }
    names
}

#[test]
fn the_table_is_in_the_order_of_attn_api_functions() {
    let header = header_function_table();
    // every exported function is in the lists (the parse found them all)
    let exported = repo_file("abi/symbols.txt").lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).count();
    assert_eq!(header.len(), exported, "ATTN_API_FUNCTIONS_1_* against abi/symbols.txt");
    let ours: Vec<String> = SYMBOLS.iter().map(|s| s.to_string()).collect();
    assert_eq!(ours, header, "sys::Api against ATTN_API_FUNCTIONS of attn_c.h");
}
