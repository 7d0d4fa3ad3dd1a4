// TRITON_ATTN: vLLM's TritonAttentionMetadataBuilder (vllm/v1/attention/backends/triton_attn.py).
#pragma once

#include <cstdint>
#include <memory>

#include "core/backend.h"

namespace attn::backends {

/// vLLM's seq_threshold_3D: 128 // num_kv_heads, moved to the closest CUDA graph capture size
/// (the first of equally close ones) when the mode captures full decode graphs.
int64_t triton_seq_threshold_3d(const KvCacheSpec& spec, const BuilderConfig& config);

std::shared_ptr<const Backend> make_triton_attn_backend();

}  // namespace attn::backends
