//! [`BuilderConfig`]: the engine-side configuration of a builder (`attn_builder_config_t`).
//! Caller allocators and workspaces are left to the raw table (`sys`): they are pointers the
//! library keeps.
use std::ffi::CString;

use crate::c_strings::to_c;
use crate::device::Device;
use crate::enums::{AttentionType, CpuIsa, CudagraphMode, KvDtype, ValidateMode};
use crate::error::Result;
use crate::per_layer_params::PerLayerParams;
use crate::sys;

/// A builder config with vLLM's defaults (`ATTN_BUILDER_CONFIG_INIT`); the four sizes of
/// [`BuilderConfig::new`] are required. Every field is attn_c.h's of the same name.
#[derive(Clone, Debug, PartialEq)]
pub struct BuilderConfig {
    pub device: Device,
    pub max_num_seqs: i32,
    pub max_num_batched_tokens: i32,
    pub max_model_len: i32,
    pub num_attention_heads: i32,
    pub num_speculative_tokens: i32,
    pub parallel_drafting: bool,
    pub decode_context_parallel_size: i32,
    pub dcp_rank: i32,
    pub cp_kv_cache_interleave_size: i32,
    pub cudagraph_mode: CudagraphMode,
    /// 0 for None.
    pub max_cudagraph_capture_size: i32,
    pub cache_dtype: KvDtype,
    pub attn_type: AttentionType,
    /// major*10+minor (90 for Hopper); 0 = ask the device or unknown.
    pub device_capability: i32,
    /// 2, 3 or 4; 0 = vLLM's choice from the capability.
    pub flash_attn_version: i32,
    pub flash_attn_max_num_splits_for_cuda_graph: i32,
    pub batch_invariant: bool,
    pub validate: ValidateMode,
    /// Per-layer hyperparameters of the model's attention layers (may be empty).
    pub layers: Vec<PerLayerParams>,
    /// The model's dtype; `Auto` = the spec's.
    pub model_dtype: KvDtype,
    /// None = auto.
    pub use_trtllm_attention: Option<bool>,
    pub kv_transfer_enabled: bool,
    pub disable_flashinfer_q_quantization: bool,
    /// None = vLLM's default list.
    pub cudagraph_capture_sizes: Option<Vec<i32>>,
    /// Blocks in the KV cache (FLEX_ATTENTION requires it).
    pub num_gpu_blocks: i64,
    pub flex_attn_q_block_size: i32,
    pub flex_attn_kv_block_size: i32,
    /// vLLM's speculative_token_tree literal; None = [(0,)].
    pub speculative_token_tree: Option<String>,
    pub kv_sharing_fast_prefill: bool,
    pub max_encoder_len: i32,
    pub cpu_attn_isa: CpuIsa,
    /// ABI 1.2, the MLA backends: the model's MLA dimensions; 0 = DeepSeek-V3's (512, 64, 128,
    /// 128).
    pub mla_kv_lora_rank: i32,
    pub mla_qk_rope_head_dim: i32,
    pub mla_qk_nope_head_dim: i32,
    pub mla_v_head_dim: i32,
    /// Tokens of the MLA chunked-prefill workspace; 0 = vLLM's size.
    pub mla_chunked_prefill_workspace_size: i32,
    pub disable_flashinfer_prefill: bool,
    pub use_cudnn_prefill: bool,
    pub use_trtllm_ragged_deepseek_prefill: bool,
    /// ABI 1.4: vLLM's model runner V2 (with parallel drafting the reorder threshold is 1 + k,
    /// not 1 + 2k).
    pub use_v2_model_runner: bool,
    /// ABI 1.4: the GPU's SM count (TRITON_ATTN's 64-segment scratch on SM 12.0); 0 = unknown.
    pub num_sms: i32,
    /// ABI 1.4: vLLM 0.33's `model_config.rswa_window`; 0 = None.
    pub rswa_window: i32,
    /// ABI 1.4: vLLM 0.33's `model_config.is_mm_prefix_lm`.
    pub is_mm_prefix_lm: bool,
    /// ABI 1.4: vLLM's `attention_config.use_non_causal` (FLASHINFER's level).
    pub use_non_causal: bool,
    /// ABI 1.4: vLLM's `speculative_config.enable_adaptive_verification` (FLASHINFER's
    /// trtllm-gen varlen decode).
    pub enable_adaptive_verification: bool,
    /// ABI 1.6: vLLM 0.33's `cache_config.use_replayssm` (the Mamba builders' ReplaySSM fields).
    pub use_replayssm: bool,
    /// ABI 1.6: `cache_config.replayssm_buffer_len` (default 16).
    pub replayssm_buffer_len: i32,
    /// ABI 1.6: `mamba_config.backend` is FLASHINFER (else TRITON).
    pub mamba_backend_flashinfer: bool,
    /// ABI 1.6: `scheduler_config.async_scheduling`.
    pub async_scheduling: bool,
    /// ABI 1.6: `cache_config.hash_block_size`; 0 = None (no prefill checkpoints).
    pub hash_block_size: i32,
    /// ABI 1.6: `cache_config.cache_hit_alignment_tokens`; 0 = None.
    pub cache_hit_alignment_tokens: i32,
    /// ABI 1.6: `VllmConfig.num_hash_lookahead_tokens`.
    pub num_hash_lookahead_tokens: i32,
    /// ABI 1.6: `speculative_config.use_eagle_block_drop()`.
    pub use_eagle_block_drop: bool,
    /// ABI 1.6: GDN_ATTN's prefill kernel, one of the `ATTN_GDN_PREFILL_*` values (0 = AUTO:
    /// from the compute capability; 1 = TRITON: FLA chunk metadata; 2 = FLASHINFER: none).
    pub gdn_prefill_backend: i32,
    /// ABI 1.7: the MLA prefill backend, one of the `ATTN_MLA_PREFILL_*` values (0 = AUTO:
    /// vLLM's automatic choice; 1 FLASH_ATTN, 2 FLASHINFER, 3 TRTLLM_RAGGED, 4 TOKENSPEED_MLA).
    pub mla_prefill_backend: i32,
    /// ABI 1.7: `attention_config.use_prefill_query_quantization` (FP8 MLA prefill queries).
    pub use_prefill_query_quantization: bool,
    /// ABI 1.7: the `block_table_width` construction argument of vLLM's builders that require
    /// it (DEEPSEEK_V32_INDEXER); 0 = the worker's width.
    pub block_table_width: i32,
    /// ABI 1.7: `current_platform.is_rocm()` (DEEPSEEK_V4_COMPRESSOR's `num_decode_tokens`).
    pub platform_rocm: bool,
    /// ABI 1.7: the PCP world size (0 = 1); the V4.1 compressor and sparse indexer refuse PCP.
    pub prefill_context_parallel_size: i32,
    /// ABI 1.7: the model's `candidate_block_size` (0 = absent; DEEPSEEK_V41_SPARSE_INDEXER).
    pub candidate_block_size: i32,
    /// ABI 1.7: the model's `candidate_topk_blocks` (0 = absent; DEEPSEEK_V41_SPARSE_INDEXER).
    pub candidate_topk_blocks: i32,
    /// ABI 1.7: the MXFP4 indexer K cache (`indexer_kv_dtype` "mxfp4").
    pub indexer_kv_mxfp4: bool,
    /// ABI 1.7: `kernel_config.sparse_indexer_topk_backend`, one of the
    /// `ATTN_SPARSE_INDEXER_TOPK_*` values (0 = AUTO).
    pub sparse_indexer_topk_backend: i32,
    /// ABI 1.7: `speculative_config.method == "dspark"` (the sparse SWA builders' non-causal
    /// DSpark decode rows).
    pub speculative_dspark: bool,
    /// ABI 1.7: vLLM's Whisper causal block pooling (`block_pool_size` > 0 wraps FLASH_ATTN's
    /// or TRITON_ATTN's builder; 0 = none).
    pub block_pool_size: i32,
    /// ABI 1.7: vLLM's `rocm_aiter_ops.is_enabled() and is_shuffle_kv_cache_enabled()`
    /// (VLLM_ROCM_USE_AITER and VLLM_ROCM_SHUFFLE_KV_CACHE_LAYOUT): MINIMAX_M3_SPARSE's AITER
    /// sparse PA fields.
    pub rocm_aiter_shuffle_kv_cache: bool,
    /// ABI 1.7: the model's `sparse_attention_config["sparse_num_index_heads"]` (MiniMax-M3's
    /// index-query heads of all ranks; MINIMAX_M3_SPARSE_INDEXER requires it; 0 = absent).
    pub sparse_num_index_heads: i32,
    /// ABI 1.7: vLLM's tensor-parallel world size (0 or 1 = none).
    pub tensor_parallel_size: i32,
}

/// A config's C struct with the memory its pointers point to.
pub(crate) struct RawConfig {
    pub(crate) raw: sys::attn_builder_config_t,
    _layers: Vec<sys::attn_per_layer_params_t>,
    _capture_sizes: Option<Vec<i32>>,
    _tree: Option<CString>,
}

impl Default for BuilderConfig {
    fn default() -> BuilderConfig {
        BuilderConfig::new(0, 0, 0, 0)
    }
}

impl BuilderConfig {
    /// vLLM's defaults with the four required sizes; host device, capability unknown.
    pub fn new(
        max_num_seqs: i32,
        max_num_batched_tokens: i32,
        max_model_len: i32,
        num_attention_heads: i32,
    ) -> BuilderConfig {
        BuilderConfig {
            device: Device::CPU,
            max_num_seqs,
            max_num_batched_tokens,
            max_model_len,
            num_attention_heads,
            num_speculative_tokens: 0,
            parallel_drafting: false,
            decode_context_parallel_size: 1,
            dcp_rank: 0,
            cp_kv_cache_interleave_size: 1,
            cudagraph_mode: CudagraphMode::FullAndPiecewise,
            max_cudagraph_capture_size: 0,
            cache_dtype: KvDtype::Auto,
            attn_type: AttentionType::Decoder,
            device_capability: 0,
            flash_attn_version: 0,
            flash_attn_max_num_splits_for_cuda_graph: 32,
            batch_invariant: false,
            validate: ValidateMode::Host,
            layers: Vec::new(),
            model_dtype: KvDtype::Auto,
            use_trtllm_attention: None,
            kv_transfer_enabled: false,
            disable_flashinfer_q_quantization: false,
            cudagraph_capture_sizes: None,
            num_gpu_blocks: 0,
            flex_attn_q_block_size: 0,
            flex_attn_kv_block_size: 0,
            speculative_token_tree: None,
            kv_sharing_fast_prefill: false,
            max_encoder_len: 0,
            cpu_attn_isa: CpuIsa::Detect,
            mla_kv_lora_rank: 0,
            mla_qk_rope_head_dim: 0,
            mla_qk_nope_head_dim: 0,
            mla_v_head_dim: 0,
            mla_chunked_prefill_workspace_size: 0,
            disable_flashinfer_prefill: false,
            use_cudnn_prefill: false,
            use_trtllm_ragged_deepseek_prefill: false,
            use_v2_model_runner: false,
            num_sms: 0,
            rswa_window: 0,
            is_mm_prefix_lm: false,
            use_non_causal: false,
            enable_adaptive_verification: false,
            use_replayssm: false,
            replayssm_buffer_len: 16,
            mamba_backend_flashinfer: false,
            async_scheduling: false,
            hash_block_size: 0,
            cache_hit_alignment_tokens: 0,
            num_hash_lookahead_tokens: 0,
            use_eagle_block_drop: false,
            gdn_prefill_backend: 0,
            mla_prefill_backend: 0,
            use_prefill_query_quantization: false,
            block_table_width: 0,
            platform_rocm: false,
            prefill_context_parallel_size: 0,
            candidate_block_size: 0,
            candidate_topk_blocks: 0,
            indexer_kv_mxfp4: false,
            sparse_indexer_topk_backend: 0,
            speculative_dspark: false,
            block_pool_size: 0,
            rocm_aiter_shuffle_kv_cache: false,
            sparse_num_index_heads: 0,
            tensor_parallel_size: 0,
        }
    }

    /// The C struct and its storage (fails for a token tree with a NUL byte).
    pub(crate) fn to_raw(&self) -> Result<RawConfig> {
        let layers: Vec<sys::attn_per_layer_params_t> = self.layers.iter().map(PerLayerParams::to_raw).collect();
        let capture_sizes = self.cudagraph_capture_sizes.clone();
        let tree = match &self.speculative_token_tree {
            Some(t) => Some(to_c("config.speculative_token_tree", t)?),
            None => None,
        };
        let raw = sys::attn_builder_config_t {
            device: self.device.to_raw(),
            max_num_seqs: self.max_num_seqs,
            max_num_batched_tokens: self.max_num_batched_tokens,
            max_model_len: self.max_model_len,
            num_attention_heads: self.num_attention_heads,
            num_speculative_tokens: self.num_speculative_tokens,
            parallel_drafting: i32::from(self.parallel_drafting),
            decode_context_parallel_size: self.decode_context_parallel_size,
            dcp_rank: self.dcp_rank,
            cp_kv_cache_interleave_size: self.cp_kv_cache_interleave_size,
            cudagraph_mode: self.cudagraph_mode.as_raw(),
            max_cudagraph_capture_size: self.max_cudagraph_capture_size,
            cache_dtype: self.cache_dtype.as_raw(),
            attn_type: self.attn_type.as_raw(),
            device_capability: self.device_capability,
            flash_attn_version: self.flash_attn_version,
            flash_attn_max_num_splits_for_cuda_graph: self.flash_attn_max_num_splits_for_cuda_graph,
            batch_invariant: i32::from(self.batch_invariant),
            validate: self.validate.as_raw(),
            layers: if layers.is_empty() { std::ptr::null() } else { layers.as_ptr() },
            num_layers: layers.len(),
            model_dtype: self.model_dtype.as_raw(),
            use_trtllm_attention: self.use_trtllm_attention.map_or(-1, i32::from),
            kv_transfer_enabled: i32::from(self.kv_transfer_enabled),
            disable_flashinfer_q_quantization: i32::from(self.disable_flashinfer_q_quantization),
            cudagraph_capture_sizes: capture_sizes.as_ref().map_or(std::ptr::null(), |v| v.as_ptr()),
            num_cudagraph_capture_sizes: capture_sizes.as_ref().map_or(0, Vec::len),
            num_gpu_blocks: self.num_gpu_blocks,
            flex_attn_q_block_size: self.flex_attn_q_block_size,
            flex_attn_kv_block_size: self.flex_attn_kv_block_size,
            speculative_token_tree: tree.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()),
            kv_sharing_fast_prefill: i32::from(self.kv_sharing_fast_prefill),
            max_encoder_len: self.max_encoder_len,
            cpu_attn_isa: self.cpu_attn_isa.as_raw(),
            mla_kv_lora_rank: self.mla_kv_lora_rank,
            mla_qk_rope_head_dim: self.mla_qk_rope_head_dim,
            mla_qk_nope_head_dim: self.mla_qk_nope_head_dim,
            mla_v_head_dim: self.mla_v_head_dim,
            mla_chunked_prefill_workspace_size: self.mla_chunked_prefill_workspace_size,
            disable_flashinfer_prefill: i32::from(self.disable_flashinfer_prefill),
            use_cudnn_prefill: i32::from(self.use_cudnn_prefill),
            use_trtllm_ragged_deepseek_prefill: i32::from(self.use_trtllm_ragged_deepseek_prefill),
            use_v2_model_runner: i32::from(self.use_v2_model_runner),
            num_sms: self.num_sms,
            rswa_window: self.rswa_window,
            is_mm_prefix_lm: i32::from(self.is_mm_prefix_lm),
            use_non_causal: i32::from(self.use_non_causal),
            enable_adaptive_verification: i32::from(self.enable_adaptive_verification),
            use_replayssm: i32::from(self.use_replayssm),
            replayssm_buffer_len: self.replayssm_buffer_len,
            mamba_backend_flashinfer: i32::from(self.mamba_backend_flashinfer),
            async_scheduling: i32::from(self.async_scheduling),
            hash_block_size: self.hash_block_size,
            cache_hit_alignment_tokens: self.cache_hit_alignment_tokens,
            num_hash_lookahead_tokens: self.num_hash_lookahead_tokens,
            use_eagle_block_drop: i32::from(self.use_eagle_block_drop),
            gdn_prefill_backend: self.gdn_prefill_backend,
            mla_prefill_backend: self.mla_prefill_backend,
            use_prefill_query_quantization: i32::from(self.use_prefill_query_quantization),
            block_table_width: self.block_table_width,
            platform_rocm: i32::from(self.platform_rocm),
            prefill_context_parallel_size: self.prefill_context_parallel_size,
            candidate_block_size: self.candidate_block_size,
            candidate_topk_blocks: self.candidate_topk_blocks,
            indexer_kv_mxfp4: i32::from(self.indexer_kv_mxfp4),
            sparse_indexer_topk_backend: self.sparse_indexer_topk_backend,
            speculative_dspark: i32::from(self.speculative_dspark),
            block_pool_size: self.block_pool_size,
            rocm_aiter_shuffle_kv_cache: i32::from(self.rocm_aiter_shuffle_kv_cache),
            sparse_num_index_heads: self.sparse_num_index_heads,
            tensor_parallel_size: self.tensor_parallel_size,
            ..sys::attn_builder_config_t::INIT
        };
        Ok(RawConfig { raw, _layers: layers, _capture_sizes: capture_sizes, _tree: tree })
    }
}
