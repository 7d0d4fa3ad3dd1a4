#include "core/kv_cache_spec.h"

#include "core/error.h"

namespace attn {

const char* kv_cache_kind_name(int32_t kind) {
  switch (kind) {
    case kKvFullAttention:
      return "FULL_ATTENTION";
    case kKvSlidingWindow:
      return "SLIDING_WINDOW";
    case kKvChunkedLocalAttention:
      return "CHUNKED_LOCAL_ATTENTION";
    case kKvMla:
      return "MLA";
    case kKvCrossAttention:
      return "CROSS_ATTENTION";
    case kKvEncoderOnly:
      return "ENCODER_ONLY";
    case kKvMamba:
      return "MAMBA";
    case kKvCircularBuffer:
      return "CIRCULAR_BUFFER";
    default:
      return "unknown";
  }
}

const char* kv_dtype_name(int32_t dtype) {
  switch (dtype) {
    case kKvDtypeAuto:
      return "AUTO";
    case kKvDtypeFloat16:
      return "FLOAT16";
    case kKvDtypeBfloat16:
      return "BFLOAT16";
    case kKvDtypeFloat32:
      return "FLOAT32";
    case kKvDtypeFp8E4m3:
      return "FP8_E4M3";
    case kKvDtypeFp8E5m2:
      return "FP8_E5M2";
    case kKvDtypeUint8:
      return "UINT8";
    default:
      return "unknown";
  }
}

const char* mamba_type_name(int32_t type) {
  switch (type) {
    case kMambaTypeAuto:
      return "auto";
    case kMambaTypeMamba1:
      return "mamba1";
    case kMambaTypeMamba2:
      return "mamba2";
    case kMambaTypeShortConv:
      return "short_conv";
    case kMambaTypeLinearAttention:
      return "linear_attention";
    case kMambaTypeGdnAttention:
      return "gdn_attention";
    default:
      return "unknown";
  }
}

const char* mamba_cache_mode_name(int32_t mode) {
  switch (mode) {
    case kMambaCacheNone:
      return "none";
    case kMambaCacheAll:
      return "all";
    case kMambaCacheAlign:
      return "align";
    default:
      return "unknown";
  }
}

void validate(const KvCacheSpec& s) {
  if (s.kind < kKvFullAttention || s.kind > kKvCircularBuffer)
    invalid("kv_cache_spec->kind=", s.kind, " is not an ATTN_KV_* kind (0..7)");
  if (s.block_size <= 0) invalid("kv_cache_spec->block_size=", s.block_size, " must be positive");
  if (s.num_kv_heads <= 0)
    invalid("kv_cache_spec->num_kv_heads=", s.num_kv_heads, " must be positive");
  if (s.head_size <= 0) invalid("kv_cache_spec->head_size=", s.head_size, " must be positive");
  if (s.dtype <= kKvDtypeAuto || s.dtype > kKvDtypeUint8)
    invalid("kv_cache_spec->dtype=", s.dtype, " is not an ATTN_KV_DTYPE_* value (1..6)");
  if (s.sliding_window < 0)
    invalid("kv_cache_spec->sliding_window=", s.sliding_window, " is negative");
  if (s.kind == kKvSlidingWindow && s.sliding_window <= 0)
    invalid("kv_cache_spec->sliding_window=", s.sliding_window,
            " must be positive for an ATTN_KV_SLIDING_WINDOW spec");
  if (s.attention_chunk_size < 0)
    invalid("kv_cache_spec->attention_chunk_size=", s.attention_chunk_size, " is negative");
  // libattn's create-time limits (docs/architecture.md, Limits)
  const struct {
    int64_t value, limit;
    const char* name;
  } limits[] = {
      {s.block_size, kMaxSpecTokens, "block_size"},
      {s.sliding_window, kMaxSpecTokens, "sliding_window"},
      {s.attention_chunk_size, kMaxSpecTokens, "attention_chunk_size"},
      {s.mamba_chunk_size, kMaxSpecTokens, "mamba_chunk_size"},
      {s.prefill_checkpoint_alignment, kMaxSpecTokens, "prefill_checkpoint_alignment"},
      {s.index_topk, kMaxSpecTokens, "index_topk"},
      {s.topk_buffer_width, kMaxSpecTokens, "topk_buffer_width"},
      {s.sink_len, kMaxSpecTokens, "sink_len"},
      {s.num_kv_heads, kMaxSpecWidth, "num_kv_heads"},
      {s.head_size, kMaxSpecWidth, "head_size"},
      {s.head_size_v, kMaxSpecWidth, "head_size_v"},
      {s.mamba_replayssm_ngroups, kMaxSpecWidth, "mamba_replayssm_ngroups"},
      {s.mamba_num_heads, kMaxSpecWidth, "mamba_num_heads"},
      {s.tokens_per_state, kMaxSpecWidth, "tokens_per_state"},
  };
  for (const auto& l : limits)
    if (l.value > l.limit)
      invalid("kv_cache_spec->", l.name, "=", l.value, " exceeds libattn's create-time limit of ",
              l.limit, " (docs/architecture.md, Limits)");
  // ABI 1.2 (MambaSpec): range-checked for every kind, read only for ATTN_KV_MAMBA specs.
  if (s.mamba_type < kMambaTypeAuto || s.mamba_type > kMambaTypeGdnAttention)
    invalid("kv_cache_spec->mamba_type=", s.mamba_type, " is not an ATTN_MAMBA_TYPE_* value (0..5)");
  if (s.mamba_cache_mode < kMambaCacheNone || s.mamba_cache_mode > kMambaCacheAlign)
    invalid("kv_cache_spec->mamba_cache_mode=", s.mamba_cache_mode,
            " is not an ATTN_MAMBA_CACHE_MODE_* value (0..2)");
  if (s.mamba_chunk_size < 0)
    invalid("kv_cache_spec->mamba_chunk_size=", s.mamba_chunk_size, " is negative");
  if (s.num_speculative_blocks < 0 || s.num_speculative_blocks > kMaxSpeculativeBlocks)
    invalid("kv_cache_spec->num_speculative_blocks=", s.num_speculative_blocks, " is not in [0, ",
            kMaxSpeculativeBlocks, "]");
  // ABI 1.6 (MambaSpec): range-checked for every kind.
  if (s.num_prefill_checkpoint_blocks < 0 || s.num_prefill_checkpoint_blocks > kMaxSpeculativeBlocks)
    invalid("kv_cache_spec->num_prefill_checkpoint_blocks=", s.num_prefill_checkpoint_blocks,
            " is not in [0, ", kMaxSpeculativeBlocks, "]");
  if (s.prefill_checkpoint_alignment < 0)
    invalid("kv_cache_spec->prefill_checkpoint_alignment=", s.prefill_checkpoint_alignment,
            " is negative (0 means None)");
  if (s.mamba_replayssm_ngroups < 0)
    invalid("kv_cache_spec->mamba_replayssm_ngroups=", s.mamba_replayssm_ngroups, " is negative");
  if (s.mamba_num_heads < 0)
    invalid("kv_cache_spec->mamba_num_heads=", s.mamba_num_heads, " is negative");
  // ABI 1.7 (sparse MLA): range-checked for every kind.
  if (s.index_topk < 0)
    invalid("kv_cache_spec->index_topk=", s.index_topk, " is negative (0 means 2048)");
  if (s.topk_buffer_width < 0)
    invalid("kv_cache_spec->topk_buffer_width=", s.topk_buffer_width,
            " is negative (0 means None)");
  // ABI 1.7 (attention variants).
  if (s.sink_len < 0) invalid("kv_cache_spec->sink_len=", s.sink_len, " is negative (0 means None)");
  if (s.sink_len > 0 && s.kind != kKvFullAttention)
    invalid("kv_cache_spec->sink_len=", s.sink_len, " needs kind ATTN_KV_FULL_ATTENTION "
            "(vLLM's SinkFullAttentionSpec), not ", kv_cache_kind_name(s.kind));
  if (s.sink_len > 0 && s.sink_len % s.block_size != 0)
    invalid("kv_cache_spec->sink_len=", s.sink_len, " is not a multiple of kv_cache_spec->block_size=",
            s.block_size, " (vLLM's StaticSink keeps sink_len / block_size whole sink blocks)");
  if (s.head_size_v < 0)
    invalid("kv_cache_spec->head_size_v=", s.head_size_v, " is negative (0 means head_size)");
  // ABI 1.7 (DeepSeek V4 sparse MLA).
  if (s.tokens_per_state < 0)
    invalid("kv_cache_spec->tokens_per_state=", s.tokens_per_state, " is negative (0 means 1)");
  if (s.tokens_per_state > 1 && s.block_size % s.tokens_per_state != 0)
    invalid("kv_cache_spec->tokens_per_state=", s.tokens_per_state,
            " does not divide kv_cache_spec->block_size=", s.block_size,
            " (vLLM's num_states = block_size / tokens_per_state)");
  // ABI 1.7 (Step5's CSA tail ring).
  if (s.block_stride_bytes < 0)
    invalid("kv_cache_spec->block_stride_bytes=", s.block_stride_bytes,
            " is negative (0 means the page size)");
  if (s.kind == kKvChunkedLocalAttention) {
    if (s.attention_chunk_size <= 0)
      invalid("kv_cache_spec->attention_chunk_size=", s.attention_chunk_size,
              " must be positive for an ATTN_KV_CHUNKED_LOCAL_ATTENTION spec");
    if (s.attention_chunk_size % s.block_size != 0)
      invalid("kv_cache_spec->attention_chunk_size=", s.attention_chunk_size,
              " is not a multiple of kv_cache_spec->block_size=", s.block_size);
  }
}

}  // namespace attn
