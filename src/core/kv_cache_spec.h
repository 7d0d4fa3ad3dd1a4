// The KV cache spec of one KV cache group (vLLM's AttentionSpec and its subclasses).
#pragma once

#include <cstdint>

#include "core/abi_fields.h"

namespace attn {

/// The most speculative blocks per request a Mamba-family spec may ask for (vLLM uses one per
/// speculative token).
inline constexpr int32_t kMaxSpeculativeBlocks = 1 << 16;
/// Create-time limits on a spec's sizes (docs/architecture.md, "Limits"): lengths in tokens (block
/// size, windows, chunks, sink, top-k widths) at most 2^24, widths in elements (heads, head
/// sizes, Mamba groups, tokens per state) at most 2^16, so that sums and products of them with
/// the config's sizes stay in range; a spec past one is refused by name.
inline constexpr int32_t kMaxSpecTokens = 1 << 24;
inline constexpr int32_t kMaxSpecWidth = 1 << 16;

/// Numbered as the ABI's ATTN_KV_* kinds.
enum KvCacheKind : int32_t {
  kKvFullAttention = 0,
  kKvSlidingWindow = 1,
  kKvChunkedLocalAttention = 2,
  kKvMla = 3,
  kKvCrossAttention = 4,
  kKvEncoderOnly = 5,
  kKvMamba = 6,
  kKvCircularBuffer = 7,  ///< ABI 1.7
};
/// One past the largest kind.
inline constexpr int32_t kKvKindCount = 8;

/// The bit of `kind` in a mask of kinds (Backend::accepted_spec_kinds()).
constexpr uint32_t kv_kind_bit(int32_t kind) { return 1u << kind; }
/// Every kind.
inline constexpr uint32_t kAllKvKinds = (1u << kKvKindCount) - 1;

/// Numbered as the ABI's ATTN_KV_DTYPE_* values.
enum KvDtype : int32_t {
  kKvDtypeAuto = 0,
  kKvDtypeFloat16 = 1,
  kKvDtypeBfloat16 = 2,
  kKvDtypeFloat32 = 3,
  kKvDtypeFp8E4m3 = 4,
  kKvDtypeFp8E5m2 = 5,
  kKvDtypeUint8 = 6,
};

/// Numbered as the ABI's ATTN_MAMBA_TYPE_* values (vLLM's MambaSpec.mamba_type).
enum MambaType : int32_t {
  kMambaTypeAuto = 0,
  kMambaTypeMamba1 = 1,
  kMambaTypeMamba2 = 2,
  kMambaTypeShortConv = 3,
  kMambaTypeLinearAttention = 4,
  kMambaTypeGdnAttention = 5,
};

/// Numbered as the ABI's ATTN_MAMBA_CACHE_MODE_* values (vLLM's mamba_cache_mode).
enum MambaCacheMode : int32_t {
  kMambaCacheNone = 0,
  kMambaCacheAll = 1,
  kMambaCacheAlign = 2,
};

/// attn_kv_cache_spec_t's fields (core/abi_fields.h lists them, attn_c.h documents them).
struct KvCacheSpec {
  ATTN_KV_CACHE_SPEC_FIELDS(ATTN_CORE_MEMBER)
  /// vLLM's tokens_per_state (the compress ratio; 1 when not given).
  int32_t compress_ratio() const { return tokens_per_state > 0 ? tokens_per_state : 1; }
  /// vLLM's head_size_v after __post_init__ (head_size when not given).
  int32_t value_head_size() const { return head_size_v > 0 ? head_size_v : head_size; }
};

/// The top-k token budget of a sparse MLA spec (index_topk, 0 standing for 2048).
inline int32_t sparse_index_topk(const KvCacheSpec& s) { return s.index_topk ? s.index_topk : 2048; }

const char* kv_cache_kind_name(int32_t kind);
const char* kv_dtype_name(int32_t dtype);
/// vLLM's spelling: "mamba2", "gdn_attention", ...; "auto" for kMambaTypeAuto.
const char* mamba_type_name(int32_t type);
/// "none", "all", "align".
const char* mamba_cache_mode_name(int32_t mode);

/// Throws Error(kInvalidArgument) naming "kv_cache_spec-><field>" and its value.
void validate(const KvCacheSpec& spec);

}  // namespace attn
