// What an MLA builder (dense or sparse) derives from its spec and config: the model's MLA
// dimensions (vLLM 0.33's get_mla_dims, 0 standing for DeepSeek's), whether the cache is fp8, and
// the chunked-prefill workspace (determine_chunked_prefill_workspace_size,
// align_mla_chunked_context_workspace_size) with the capacities of the chunked-context buffers.
#pragma once

#include <cstdint>

#include "core/builder_config.h"
#include "core/kv_cache_spec.h"
#include "ops/batch_ops.h"

namespace attn::backends {

constexpr int32_t kMlaHeadSize = 576;  // MLACommonBackend.get_supported_head_sizes()

inline int32_t kv_lora_rank(const BuilderConfig& c) {
  return c.mla_kv_lora_rank ? c.mla_kv_lora_rank : 512;
}
inline int32_t qk_rope_head_dim(const BuilderConfig& c) {
  return c.mla_qk_rope_head_dim ? c.mla_qk_rope_head_dim : 64;
}
inline int32_t qk_nope_head_dim(const BuilderConfig& c) {
  return c.mla_qk_nope_head_dim ? c.mla_qk_nope_head_dim : 128;
}
inline int32_t v_head_dim(const BuilderConfig& c) {
  return c.mla_v_head_dim ? c.mla_v_head_dim : 128;
}

inline bool is_fp8_cache(const BuilderConfig& c) {
  return c.cache_dtype == kKvDtypeFp8E4m3 || c.cache_dtype == kKvDtypeFp8E5m2;
}

/// The alignment of a split context chunk (build_mla_chunked_context_metadata's
/// chunk_alignment, and align_mla_chunked_context_workspace_size's alignment): the block size,
/// lcm'd with decode_context_parallel_size * cp_kv_cache_interleave_size under DCP.
int64_t mla_chunk_alignment(const KvCacheSpec& spec, const BuilderConfig& c);

/// vLLM 0.33's MLACommonMetadataBuilder.determine_chunked_prefill_workspace_size:
/// min(max(8 * max_model_len, 4 * max_num_seqs * block_size), 65536) tokens, rounded up by
/// align_mla_chunked_context_workspace_size to a multiple of mla_chunk_alignment (at least one
/// alignment); or config->mla_chunked_prefill_workspace_size as given when set.
int64_t mla_chunked_prefill_workspace_size(const KvCacheSpec& spec, const BuilderConfig& c);

/// SparseMLACommonMetadataBuilder's override: also at most max_num_seqs * index_topk, at least
/// block_size, and aligned up only under DCP; config->mla_chunked_prefill_workspace_size as given
/// when set.
int64_t sparse_mla_chunked_prefill_workspace_size(const KvCacheSpec& spec, const BuilderConfig& c);

/// The capacities of the chunked-context buffers for a workspace of `workspace` rows. A
/// prefill's context is at most max_model_len tokens and a batch has at most max_num_seqs
/// prefills. A request splits into at most 2 + context / M pieces (M = max_context_chunk): its
/// first piece, the pieces that start a chunk and do not finish it (exactly M each) and its
/// last; every chunk holds at least one piece.
ops::MlaChunkParams mla_chunk_capacities(const KvCacheSpec& spec, const BuilderConfig& c,
                                         int64_t workspace);

}  // namespace attn::backends
