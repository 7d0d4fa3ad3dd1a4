//! The structs and opaque handles of attn_c.h, field for field, with the `ATTN_*_STRUCT_SIZE`
//! macros as constants (computed as the header computes them) and the `ATTN_*_INIT` macros as
//! `INIT` constants (also `Default`).
use core::ffi::{c_char, c_void};
use core::marker::{PhantomData, PhantomPinned};
use core::mem::{offset_of, size_of};
use core::ptr::{null, null_mut};

use super::enums::*;

macro_rules! opaque {
    ($(#[$doc:meta])* $name:ident, $alias:ident) => {
        $(#[$doc])*
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
        pub type $alias = $name;
    };
}

opaque!(/** `attn_error_t`: an error object (NULL is success). */ attn_error, attn_error_t);
opaque!(/** `attn_builder_t`: a metadata builder. */ attn_builder, attn_builder_t);
opaque!(/** `attn_metadata_t`: named metadata fields. */ attn_metadata, attn_metadata_t);
opaque!(/** `attn_plugin_t`: a loaded plugin. */ attn_plugin, attn_plugin_t);
opaque!(/** `struct CUstream_st`: what `attn_stream_t` points to. */ CUstream_st, CUstream_st_t);

/// `attn_stream_t`: a CUDA stream (`cudaStream_t`); NULL is the default stream.
pub type attn_stream_t = *mut CUstream_st;

const PTR: usize = size_of::<*mut c_void>();

/// `attn_device_t`: DLPack's `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct attn_device_t {
    pub device_type: i32,
    pub device_id: i32,
}

/// `attn_dtype_t`: DLPack's `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct attn_dtype_t {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

/// `attn_tensor_t`: DLPack's `DLTensor`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_tensor_t {
    pub data: *mut c_void,
    pub device: attn_device_t,
    pub ndim: i32,
    pub dtype: attn_dtype_t,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

/// `attn_kv_cache_spec_t` (`mamba_type` .. `num_speculative_blocks` are ABI 1.2).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_kv_cache_spec_t {
    pub struct_size: usize,
    pub kind: i32,
    pub block_size: i32,
    pub num_kv_heads: i32,
    pub head_size: i32,
    pub dtype: i32,
    pub sliding_window: i32,
    pub attention_chunk_size: i32,
    pub extension: *mut c_void,
    pub mamba_type: i32,
    pub mamba_chunk_size: i32,
    pub mamba_cache_mode: i32,
    pub num_speculative_blocks: i32,
}
/// `ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_0`.
pub const ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_0: usize = offset_of!(attn_kv_cache_spec_t, extension) + PTR;
/// `ATTN_KV_CACHE_SPEC_STRUCT_SIZE`.
pub const ATTN_KV_CACHE_SPEC_STRUCT_SIZE: usize = offset_of!(attn_kv_cache_spec_t, num_speculative_blocks) + 4;
impl attn_kv_cache_spec_t {
    /// `ATTN_KV_CACHE_SPEC_INIT`.
    pub const INIT: Self = Self {
        struct_size: ATTN_KV_CACHE_SPEC_STRUCT_SIZE,
        kind: attn_kv_cache_kind::ATTN_KV_FULL_ATTENTION as i32,
        block_size: 0,
        num_kv_heads: 0,
        head_size: 0,
        dtype: attn_kv_dtype::ATTN_KV_DTYPE_BFLOAT16 as i32,
        sliding_window: 0,
        attention_chunk_size: 0,
        extension: null_mut(),
        mamba_type: attn_mamba_type::ATTN_MAMBA_TYPE_AUTO as i32,
        mamba_chunk_size: 0,
        mamba_cache_mode: attn_mamba_cache_mode::ATTN_MAMBA_CACHE_MODE_NONE as i32,
        num_speculative_blocks: 0,
    };
}

/// `attn_per_layer_params_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_per_layer_params_t {
    pub struct_size: usize,
    pub window_left: i32,
    pub has_logits_soft_cap: i32,
    pub logits_soft_cap: f64,
    pub sm_scale: f64,
    pub has_sinks: i32,
    pub extension: *mut c_void,
}
/// `ATTN_PER_LAYER_PARAMS_STRUCT_SIZE`.
pub const ATTN_PER_LAYER_PARAMS_STRUCT_SIZE: usize = offset_of!(attn_per_layer_params_t, extension) + PTR;
impl attn_per_layer_params_t {
    /// `ATTN_PER_LAYER_PARAMS_INIT`.
    pub const INIT: Self = Self {
        struct_size: ATTN_PER_LAYER_PARAMS_STRUCT_SIZE,
        window_left: -1,
        has_logits_soft_cap: 0,
        logits_soft_cap: 0.0,
        sm_scale: 1.0,
        has_sinks: 0,
        extension: null_mut(),
    };
}

/// `attn_alloc_fn`.
pub type attn_alloc_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, bytes: usize, alignment: usize, device: attn_device_t) -> *mut c_void,
>;
/// `attn_free_fn`.
pub type attn_free_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, ptr: *mut c_void, bytes: usize, device: attn_device_t)>;

/// `attn_allocator_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_allocator_t {
    pub struct_size: usize,
    pub alloc: attn_alloc_fn,
    pub free: attn_free_fn,
    pub user_data: *mut c_void,
    pub extension: *mut c_void,
}
/// `ATTN_ALLOCATOR_STRUCT_SIZE`.
pub const ATTN_ALLOCATOR_STRUCT_SIZE: usize = offset_of!(attn_allocator_t, extension) + PTR;
impl attn_allocator_t {
    /// `ATTN_ALLOCATOR_INIT`.
    pub const INIT: Self = Self {
        struct_size: ATTN_ALLOCATOR_STRUCT_SIZE,
        alloc: None,
        free: None,
        user_data: null_mut(),
        extension: null_mut(),
    };
}

/// `attn_builder_config_t` (ABI 1.1 fields after `extension`, ABI 1.2 after `reserved_1_1`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_builder_config_t {
    pub struct_size: usize,
    pub device: attn_device_t,
    pub max_num_seqs: i32,
    pub max_num_batched_tokens: i32,
    pub max_model_len: i32,
    pub num_attention_heads: i32,
    pub num_speculative_tokens: i32,
    pub parallel_drafting: i32,
    pub decode_context_parallel_size: i32,
    pub dcp_rank: i32,
    pub cp_kv_cache_interleave_size: i32,
    pub cudagraph_mode: i32,
    pub max_cudagraph_capture_size: i32,
    pub cache_dtype: i32,
    pub attn_type: i32,
    pub device_capability: i32,
    pub flash_attn_version: i32,
    pub flash_attn_max_num_splits_for_cuda_graph: i32,
    pub batch_invariant: i32,
    pub validate: i32,
    pub layers: *const attn_per_layer_params_t,
    pub num_layers: usize,
    pub allocator: *const attn_allocator_t,
    pub workspace: *mut c_void,
    pub workspace_size: usize,
    pub extension: *mut c_void,
    pub model_dtype: i32,
    pub use_trtllm_attention: i32,
    pub kv_transfer_enabled: i32,
    pub disable_flashinfer_q_quantization: i32,
    pub cudagraph_capture_sizes: *const i32,
    pub num_cudagraph_capture_sizes: usize,
    pub num_gpu_blocks: i64,
    pub flex_attn_q_block_size: i32,
    pub flex_attn_kv_block_size: i32,
    pub speculative_token_tree: *const c_char,
    pub kv_sharing_fast_prefill: i32,
    pub max_encoder_len: i32,
    pub cpu_attn_isa: i32,
    pub reserved_1_1: i32,
    pub mla_kv_lora_rank: i32,
    pub mla_qk_rope_head_dim: i32,
    pub mla_qk_nope_head_dim: i32,
    pub mla_v_head_dim: i32,
    pub mla_chunked_prefill_workspace_size: i32,
    pub disable_flashinfer_prefill: i32,
    pub use_cudnn_prefill: i32,
    pub use_trtllm_ragged_deepseek_prefill: i32,
}
/// `ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0`.
pub const ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0: usize = offset_of!(attn_builder_config_t, extension) + PTR;
/// `ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_1`.
pub const ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_1: usize = offset_of!(attn_builder_config_t, reserved_1_1) + size_of::<i32>();
/// `ATTN_BUILDER_CONFIG_STRUCT_SIZE`.
pub const ATTN_BUILDER_CONFIG_STRUCT_SIZE: usize =
    offset_of!(attn_builder_config_t, use_trtllm_ragged_deepseek_prefill) + size_of::<i32>();
impl attn_builder_config_t {
    /// `ATTN_BUILDER_CONFIG_INIT` (vLLM's defaults; the four required sizes are 0).
    pub const INIT: Self = Self {
        struct_size: ATTN_BUILDER_CONFIG_STRUCT_SIZE,
        device: attn_device_t { device_type: attn_device_type::ATTN_DEVICE_CPU as i32, device_id: 0 },
        max_num_seqs: 0,
        max_num_batched_tokens: 0,
        max_model_len: 0,
        num_attention_heads: 0,
        num_speculative_tokens: 0,
        parallel_drafting: 0,
        decode_context_parallel_size: 1,
        dcp_rank: 0,
        cp_kv_cache_interleave_size: 1,
        cudagraph_mode: attn_cudagraph_mode::ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE as i32,
        max_cudagraph_capture_size: 0,
        cache_dtype: attn_kv_dtype::ATTN_KV_DTYPE_AUTO as i32,
        attn_type: attn_attention_type::ATTN_TYPE_DECODER as i32,
        device_capability: 0,
        flash_attn_version: 0,
        flash_attn_max_num_splits_for_cuda_graph: 32,
        batch_invariant: 0,
        validate: attn_validate_mode::ATTN_VALIDATE_HOST as i32,
        layers: null(),
        num_layers: 0,
        allocator: null(),
        workspace: null_mut(),
        workspace_size: 0,
        extension: null_mut(),
        model_dtype: attn_kv_dtype::ATTN_KV_DTYPE_AUTO as i32,
        use_trtllm_attention: -1,
        kv_transfer_enabled: 0,
        disable_flashinfer_q_quantization: 0,
        cudagraph_capture_sizes: null(),
        num_cudagraph_capture_sizes: 0,
        num_gpu_blocks: 0,
        flex_attn_q_block_size: 0,
        flex_attn_kv_block_size: 0,
        speculative_token_tree: null(),
        kv_sharing_fast_prefill: 0,
        max_encoder_len: 0,
        cpu_attn_isa: attn_cpu_isa::ATTN_CPU_ISA_DETECT as i32,
        reserved_1_1: 0,
        mla_kv_lora_rank: 0,
        mla_qk_rope_head_dim: 0,
        mla_qk_nope_head_dim: 0,
        mla_v_head_dim: 0,
        mla_chunked_prefill_workspace_size: 0,
        disable_flashinfer_prefill: 0,
        use_cudnn_prefill: 0,
        use_trtllm_ragged_deepseek_prefill: 0,
    };
}

/// `attn_common_metadata_t` (`logits_indices_padded_cpu` is ABI 1.1, the fields after it 1.2).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_common_metadata_t {
    pub struct_size: usize,
    pub query_start_loc: *const attn_tensor_t,
    pub query_start_loc_cpu: *const attn_tensor_t,
    pub seq_lens: *const attn_tensor_t,
    pub seq_lens_cpu: *const attn_tensor_t,
    pub num_reqs: i64,
    pub num_actual_tokens: i64,
    pub max_query_len: i64,
    pub max_seq_len: i64,
    pub block_table_tensor: *const attn_tensor_t,
    pub slot_mapping: *const attn_tensor_t,
    pub causal: i32,
    pub logits_indices_padded: *const attn_tensor_t,
    pub num_logits_indices: i64,
    pub encoder_seq_lens: *const attn_tensor_t,
    pub encoder_seq_lens_cpu: *const attn_tensor_t,
    pub dcp_local_seq_lens: *const attn_tensor_t,
    pub dcp_local_seq_lens_cpu: *const attn_tensor_t,
    pub extension: *mut c_void,
    pub logits_indices_padded_cpu: *const attn_tensor_t,
    pub num_accepted_tokens: *const attn_tensor_t,
    pub num_decode_draft_tokens_cpu: *const attn_tensor_t,
    pub num_decode_draft_tokens: *const attn_tensor_t,
    pub is_prefilling: *const attn_tensor_t,
}
/// `ATTN_COMMON_METADATA_STRUCT_SIZE_1_0`.
pub const ATTN_COMMON_METADATA_STRUCT_SIZE_1_0: usize = offset_of!(attn_common_metadata_t, extension) + PTR;
/// `ATTN_COMMON_METADATA_STRUCT_SIZE_1_1`.
pub const ATTN_COMMON_METADATA_STRUCT_SIZE_1_1: usize =
    offset_of!(attn_common_metadata_t, logits_indices_padded_cpu) + PTR;
/// `ATTN_COMMON_METADATA_STRUCT_SIZE`.
pub const ATTN_COMMON_METADATA_STRUCT_SIZE: usize = offset_of!(attn_common_metadata_t, is_prefilling) + PTR;
impl attn_common_metadata_t {
    /// `ATTN_COMMON_METADATA_INIT`: everything NULL or 0, causal.
    pub const INIT: Self = Self {
        struct_size: ATTN_COMMON_METADATA_STRUCT_SIZE,
        query_start_loc: null(),
        query_start_loc_cpu: null(),
        seq_lens: null(),
        seq_lens_cpu: null(),
        num_reqs: 0,
        num_actual_tokens: 0,
        max_query_len: 0,
        max_seq_len: 0,
        block_table_tensor: null(),
        slot_mapping: null(),
        causal: 1,
        logits_indices_padded: null(),
        num_logits_indices: 0,
        encoder_seq_lens: null(),
        encoder_seq_lens_cpu: null(),
        dcp_local_seq_lens: null(),
        dcp_local_seq_lens_cpu: null(),
        extension: null_mut(),
        logits_indices_padded_cpu: null(),
        num_accepted_tokens: null(),
        num_decode_draft_tokens_cpu: null(),
        num_decode_draft_tokens: null(),
        is_prefilling: null(),
    };
}

/// `attn_batch_split_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct attn_batch_split_t {
    pub struct_size: usize,
    pub num_decodes: i64,
    pub num_extends: i64,
    pub num_prefills: i64,
    pub num_decode_tokens: i64,
    pub num_extend_tokens: i64,
    pub num_prefill_tokens: i64,
}
/// `ATTN_BATCH_SPLIT_STRUCT_SIZE`.
pub const ATTN_BATCH_SPLIT_STRUCT_SIZE: usize = offset_of!(attn_batch_split_t, num_prefill_tokens) + size_of::<i64>();
impl attn_batch_split_t {
    /// `ATTN_BATCH_SPLIT_INIT`.
    pub const INIT: Self = Self {
        struct_size: ATTN_BATCH_SPLIT_STRUCT_SIZE,
        num_decodes: 0,
        num_extends: 0,
        num_prefills: 0,
        num_decode_tokens: 0,
        num_extend_tokens: 0,
        num_prefill_tokens: 0,
    };
}

/// `attn_slot_mapping_args_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_slot_mapping_args_t {
    pub struct_size: usize,
    pub query_start_loc: *const attn_tensor_t,
    pub query_start_loc_cpu: *const attn_tensor_t,
    pub num_reqs: i64,
    pub positions: *const attn_tensor_t,
    pub positions_cpu: *const attn_tensor_t,
    pub block_table: *const attn_tensor_t,
    pub block_size: i32,
    pub dcp_world_size: i32,
    pub dcp_rank: i32,
    pub cp_kv_cache_interleave_size: i32,
    pub slot_mapping: *const attn_tensor_t,
    pub extension: *mut c_void,
}
/// `ATTN_SLOT_MAPPING_ARGS_STRUCT_SIZE`.
pub const ATTN_SLOT_MAPPING_ARGS_STRUCT_SIZE: usize = offset_of!(attn_slot_mapping_args_t, extension) + PTR;
impl attn_slot_mapping_args_t {
    /// `ATTN_SLOT_MAPPING_ARGS_INIT`: no tensors, DCP size 1, interleave 1.
    pub const INIT: Self = Self {
        struct_size: ATTN_SLOT_MAPPING_ARGS_STRUCT_SIZE,
        query_start_loc: null(),
        query_start_loc_cpu: null(),
        num_reqs: 0,
        positions: null(),
        positions_cpu: null(),
        block_table: null(),
        block_size: 0,
        dcp_world_size: 1,
        dcp_rank: 0,
        cp_kv_cache_interleave_size: 1,
        slot_mapping: null(),
        extension: null_mut(),
    };
}

/// `attn_conv1d_info_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct attn_conv1d_info_t {
    pub struct_size: usize,
    pub tot: i64,
    pub num_programs: i64,
}
/// `ATTN_CONV1D_INFO_STRUCT_SIZE`.
pub const ATTN_CONV1D_INFO_STRUCT_SIZE: usize = offset_of!(attn_conv1d_info_t, num_programs) + size_of::<i64>();
impl attn_conv1d_info_t {
    /// `ATTN_CONV1D_INFO_INIT`.
    pub const INIT: Self = Self { struct_size: ATTN_CONV1D_INFO_STRUCT_SIZE, tot: 0, num_programs: 0 };
}

/// `attn_local_attention_out_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_local_attention_out_t {
    pub struct_size: usize,
    pub query_start_loc: *const attn_tensor_t,
    pub query_start_loc_cpu: *const attn_tensor_t,
    pub seq_lens: *const attn_tensor_t,
    pub seq_lens_cpu: *const attn_tensor_t,
    pub num_computed_tokens_cpu: *const attn_tensor_t,
    pub block_table: *const attn_tensor_t,
    pub virtual_req: *const attn_tensor_t,
    pub virtual_block_start: *const attn_tensor_t,
    pub extension: *mut c_void,
}
/// `ATTN_LOCAL_ATTENTION_OUT_STRUCT_SIZE`.
pub const ATTN_LOCAL_ATTENTION_OUT_STRUCT_SIZE: usize = offset_of!(attn_local_attention_out_t, extension) + PTR;
impl attn_local_attention_out_t {
    /// `ATTN_LOCAL_ATTENTION_OUT_INIT`: no outputs.
    pub const INIT: Self = Self {
        struct_size: ATTN_LOCAL_ATTENTION_OUT_STRUCT_SIZE,
        query_start_loc: null(),
        query_start_loc_cpu: null(),
        seq_lens: null(),
        seq_lens_cpu: null(),
        num_computed_tokens_cpu: null(),
        block_table: null(),
        virtual_req: null(),
        virtual_block_start: null(),
        extension: null_mut(),
    };
}

/// `attn_ubatch_slice_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct attn_ubatch_slice_t {
    pub struct_size: usize,
    pub request_start: i64,
    pub request_stop: i64,
    pub token_start: i64,
    pub token_stop: i64,
}
/// `ATTN_UBATCH_SLICE_STRUCT_SIZE`.
pub const ATTN_UBATCH_SLICE_STRUCT_SIZE: usize = offset_of!(attn_ubatch_slice_t, token_stop) + size_of::<i64>();
impl attn_ubatch_slice_t {
    /// `ATTN_UBATCH_SLICE_INIT`: an empty slice.
    pub const INIT: Self = Self {
        struct_size: ATTN_UBATCH_SLICE_STRUCT_SIZE,
        request_start: 0,
        request_stop: 0,
        token_start: 0,
        token_stop: 0,
    };
}

/// `attn_ubatch_out_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_ubatch_out_t {
    pub struct_size: usize,
    pub query_start_loc: *const attn_tensor_t,
    pub query_start_loc_cpu: *const attn_tensor_t,
    pub seq_lens: *const attn_tensor_t,
    pub seq_lens_cpu: *const attn_tensor_t,
    pub extension: *mut c_void,
}
/// `ATTN_UBATCH_OUT_STRUCT_SIZE`.
pub const ATTN_UBATCH_OUT_STRUCT_SIZE: usize = offset_of!(attn_ubatch_out_t, extension) + PTR;
impl attn_ubatch_out_t {
    /// `ATTN_UBATCH_OUT_INIT`: no outputs.
    pub const INIT: Self = Self {
        struct_size: ATTN_UBATCH_OUT_STRUCT_SIZE,
        query_start_loc: null(),
        query_start_loc_cpu: null(),
        seq_lens: null(),
        seq_lens_cpu: null(),
        extension: null_mut(),
    };
}

/// `attn_cascade_query_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_cascade_query_t {
    pub struct_size: usize,
    pub common_prefix_len: i64,
    pub query_lens: *const i32,
    pub num_reqs: i64,
    pub num_query_heads: i32,
    pub num_kv_heads: i32,
    pub use_alibi: i32,
    pub use_sliding_window: i32,
    pub use_local_attention: i32,
    pub num_sms: i32,
    pub dcp_world_size: i32,
    pub extension: *mut c_void,
}
/// `ATTN_CASCADE_QUERY_STRUCT_SIZE`.
pub const ATTN_CASCADE_QUERY_STRUCT_SIZE: usize = offset_of!(attn_cascade_query_t, extension) + PTR;
impl attn_cascade_query_t {
    /// `ATTN_CASCADE_QUERY_INIT`: no prefix, no requests, DCP size 1.
    pub const INIT: Self = Self {
        struct_size: ATTN_CASCADE_QUERY_STRUCT_SIZE,
        common_prefix_len: 0,
        query_lens: null(),
        num_reqs: 0,
        num_query_heads: 0,
        num_kv_heads: 0,
        use_alibi: 0,
        use_sliding_window: 0,
        use_local_attention: 0,
        num_sms: 0,
        dcp_world_size: 1,
        extension: null_mut(),
    };
}

/// `attn_field_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_field_t {
    pub struct_size: usize,
    pub name: *const c_char,
    pub kind: i32,
    pub tensor: *const attn_tensor_t,
    pub int_value: i64,
    pub float_value: f64,
}
/// `ATTN_FIELD_STRUCT_SIZE`.
pub const ATTN_FIELD_STRUCT_SIZE: usize = offset_of!(attn_field_t, float_value) + size_of::<f64>();
impl attn_field_t {
    /// `ATTN_FIELD_INIT`.
    pub const INIT: Self = Self {
        struct_size: ATTN_FIELD_STRUCT_SIZE,
        name: null(),
        kind: attn_field_kind::ATTN_FIELD_NONE as i32,
        tensor: null(),
        int_value: 0,
        float_value: 0.0,
    };
}

/// `attn_backend_info_t` (ABI 1.3): what `attn_backend_info` writes; the caller sets
/// `struct_size`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_backend_info_t {
    pub struct_size: usize,
    pub name: *const c_char,
    pub kv_cache_kinds: u32,
    pub origin: i32,
    pub vllm_release: *const c_char,
    pub extension: *mut c_void,
}
/// `ATTN_BACKEND_INFO_STRUCT_SIZE`.
pub const ATTN_BACKEND_INFO_STRUCT_SIZE: usize = offset_of!(attn_backend_info_t, extension) + size_of::<*mut c_void>();
impl attn_backend_info_t {
    /// `ATTN_BACKEND_INFO_INIT`.
    pub const INIT: Self = Self {
        struct_size: ATTN_BACKEND_INFO_STRUCT_SIZE,
        name: null(),
        kv_cache_kinds: 0,
        origin: 0,
        vllm_release: null(),
        extension: null_mut(),
    };
}

/// The start of `attn_api_t` (ABI 1.3), the table `attn_get_api` returns: `struct_size`, then
/// one function pointer per name of the header's `ATTN_API_FUNCTIONS`, in that order. The crate
/// resolves each function by name ([`Api`](super::Api)), so it reads only the size.
#[repr(C)]
#[derive(Debug)]
pub struct attn_api_t {
    pub struct_size: usize,
}

/// `attn_plugin_output_t`: the setters libattn hands a plugin's build.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_plugin_output_t {
    pub struct_size: usize,
    pub ctx: *mut c_void,
    pub set_tensor:
        Option<unsafe extern "C" fn(ctx: *mut c_void, name: *const c_char, value: *const attn_tensor_t) -> i32>,
    pub set_int: Option<unsafe extern "C" fn(ctx: *mut c_void, name: *const c_char, value: i64) -> i32>,
    pub set_float: Option<unsafe extern "C" fn(ctx: *mut c_void, name: *const c_char, value: f64) -> i32>,
    pub set_bool: Option<unsafe extern "C" fn(ctx: *mut c_void, name: *const c_char, value: i32) -> i32>,
    pub set_none: Option<unsafe extern "C" fn(ctx: *mut c_void, name: *const c_char) -> i32>,
    pub set_error: Option<unsafe extern "C" fn(ctx: *mut c_void, message: *const c_char)>,
}

/// `attn_plugin_backend_t`: one backend of a plugin.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_plugin_backend_t {
    pub struct_size: usize,
    pub name: *const c_char,
    pub field_names: *const *const c_char,
    pub num_fields: usize,
    pub supports_update_block_table: i32,
    pub cudagraph_support: Option<
        unsafe extern "C" fn(
            spec: *const attn_kv_cache_spec_t,
            config: *const attn_builder_config_t,
            out_level: *mut i32,
            err: *mut c_char,
            err_size: usize,
        ) -> i32,
    >,
    pub create: Option<
        unsafe extern "C" fn(
            spec: *const attn_kv_cache_spec_t,
            config: *const attn_builder_config_t,
            out_state: *mut *mut c_void,
            out_reorder_batch_threshold: *mut i32,
            err: *mut c_char,
            err_size: usize,
        ) -> i32,
    >,
    pub destroy: Option<unsafe extern "C" fn(state: *mut c_void)>,
    pub build: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            common_prefix_len: i64,
            common: *const attn_common_metadata_t,
            fast_build: i32,
            out: *const attn_plugin_output_t,
            stream: attn_stream_t,
        ) -> i32,
    >,
    pub extension: *mut c_void,
}
/// `ATTN_PLUGIN_BACKEND_STRUCT_SIZE`.
pub const ATTN_PLUGIN_BACKEND_STRUCT_SIZE: usize = offset_of!(attn_plugin_backend_t, extension) + PTR;

/// `attn_plugin_table_t`: what a plugin's entry point returns.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct attn_plugin_table_t {
    pub struct_size: usize,
    pub abi_major: u32,
    pub abi_minor: u32,
    pub plugin_name: *const c_char,
    pub backends: *const *const attn_plugin_backend_t,
    pub num_backends: usize,
    pub extension: *mut c_void,
}
/// `ATTN_PLUGIN_TABLE_STRUCT_SIZE`.
pub const ATTN_PLUGIN_TABLE_STRUCT_SIZE: usize = offset_of!(attn_plugin_table_t, extension) + PTR;

/// `attn_plugin_entry_fn`: the type of a plugin's entry point.
pub type attn_plugin_entry_fn = Option<unsafe extern "C" fn() -> *const attn_plugin_table_t>;

macro_rules! default_is_init {
    ($($t:ty),*) => { $(impl Default for $t { fn default() -> Self { Self::INIT } })* };
}
default_is_init!(
    attn_kv_cache_spec_t,
    attn_per_layer_params_t,
    attn_allocator_t,
    attn_builder_config_t,
    attn_common_metadata_t,
    attn_batch_split_t,
    attn_slot_mapping_args_t,
    attn_conv1d_info_t,
    attn_local_attention_out_t,
    attn_ubatch_slice_t,
    attn_ubatch_out_t,
    attn_cascade_query_t,
    attn_field_t
);
