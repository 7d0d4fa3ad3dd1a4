//! [`KvCacheSpec`]: a KV cache spec (`attn_kv_cache_spec_t`, vLLM's `AttentionSpec`).
use crate::enums::{KvCacheKind, KvDtype, MambaCacheMode, MambaType};
use crate::sys;

/// A KV cache spec. `Default` is `ATTN_KV_CACHE_SPEC_INIT` (sizes 0, which must be set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvCacheSpec {
    /// The spec's kind; the wrappers (chunked local, cross, encoder-only) follow from it.
    pub kind: KvCacheKind,
    /// Tokens per KV cache block (> 0).
    pub block_size: i32,
    /// KV heads per rank (> 0).
    pub num_kv_heads: i32,
    /// Head dimension (> 0).
    pub head_size: i32,
    /// Element type (not `Auto`).
    pub dtype: KvDtype,
    /// Window for `SlidingWindow`; else 0.
    pub sliding_window: i32,
    /// Chunk for `ChunkedLocalAttention`; else 0.
    pub attention_chunk_size: i32,
    /// `MambaSpec.mamba_type` of a `Mamba` spec (ABI 1.2); `Auto` lets any Mamba backend take it.
    pub mamba_type: MambaType,
    /// vLLM's `model_config.get_mamba_chunk_size()` (ABI 1.2); MAMBA2 needs it; 0 = None.
    pub mamba_chunk_size: i32,
    /// vLLM's `cache_config.mamba_cache_mode` (ABI 1.2).
    pub mamba_cache_mode: MambaCacheMode,
    /// `MambaSpec.num_speculative_blocks` (ABI 1.2).
    pub num_speculative_blocks: i32,
    /// ABI 1.6: `MambaSpec.num_prefill_checkpoint_blocks` (MAMBA2's prefill checkpoints).
    pub num_prefill_checkpoint_blocks: i32,
    /// ABI 1.6: `MambaSpec.prefill_checkpoint_alignment`; 0 = None.
    pub prefill_checkpoint_alignment: i32,
    /// ABI 1.6: `MambaSpec.shapes[4][0]` (Triton ReplaySSM's `bc_pre_scratch` groups).
    pub mamba_replayssm_ngroups: i32,
    /// ABI 1.6: `MambaSpec.shapes[2][0]` (FlashInfer ReplaySSM's scratch heads).
    pub mamba_num_heads: i32,
    /// ABI 1.7: `SinkFullAttentionSpec.sink_len` (> 0: the StaticSink wrapper); 0 = None.
    pub sink_len: i32,
    /// ABI 1.7: `AttentionSpec.head_size_v` (the diff-KV backends); 0 = `head_size`.
    pub head_size_v: i32,
    /// ABI 1.7: `MLAAttentionSpec.tokens_per_state` (DeepSeek V4 sparse MLA's compress ratio);
    /// 0 = 1.
    pub tokens_per_state: i32,
    /// ABI 1.7: the bound KV cache tensor's block stride in bytes (`kv_cache.stride(0)` times
    /// the element size; STEP5_CSA_TAIL_RING's rows per block); 0 = the page size.
    pub block_stride_bytes: i32,
}

impl Default for KvCacheSpec {
    fn default() -> KvCacheSpec {
        KvCacheSpec {
            kind: KvCacheKind::FullAttention,
            block_size: 0,
            num_kv_heads: 0,
            head_size: 0,
            dtype: KvDtype::Bfloat16,
            sliding_window: 0,
            attention_chunk_size: 0,
            mamba_type: MambaType::Auto,
            mamba_chunk_size: 0,
            mamba_cache_mode: MambaCacheMode::None,
            num_speculative_blocks: 0,
            num_prefill_checkpoint_blocks: 0,
            prefill_checkpoint_alignment: 0,
            mamba_replayssm_ngroups: 0,
            mamba_num_heads: 0,
            sink_len: 0,
            head_size_v: 0,
            tokens_per_state: 0,
            block_stride_bytes: 0,
        }
    }
}

impl KvCacheSpec {
    /// Full attention, bfloat16, with these sizes.
    pub fn new(block_size: i32, num_kv_heads: i32, head_size: i32) -> KvCacheSpec {
        KvCacheSpec { block_size, num_kv_heads, head_size, ..KvCacheSpec::default() }
    }

    /// The C struct.
    pub fn to_raw(&self) -> sys::attn_kv_cache_spec_t {
        sys::attn_kv_cache_spec_t {
            kind: self.kind.as_raw(),
            block_size: self.block_size,
            num_kv_heads: self.num_kv_heads,
            head_size: self.head_size,
            dtype: self.dtype.as_raw(),
            sliding_window: self.sliding_window,
            attention_chunk_size: self.attention_chunk_size,
            mamba_type: self.mamba_type.as_raw(),
            mamba_chunk_size: self.mamba_chunk_size,
            mamba_cache_mode: self.mamba_cache_mode.as_raw(),
            num_speculative_blocks: self.num_speculative_blocks,
            num_prefill_checkpoint_blocks: self.num_prefill_checkpoint_blocks,
            prefill_checkpoint_alignment: self.prefill_checkpoint_alignment,
            mamba_replayssm_ngroups: self.mamba_replayssm_ngroups,
            mamba_num_heads: self.mamba_num_heads,
            sink_len: self.sink_len,
            head_size_v: self.head_size_v,
            tokens_per_state: self.tokens_per_state,
            block_stride_bytes: self.block_stride_bytes,
            ..sys::attn_kv_cache_spec_t::INIT
        }
    }
}
