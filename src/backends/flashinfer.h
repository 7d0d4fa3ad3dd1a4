// FLASHINFER: vLLM's FlashInferMetadataBuilder (vllm/v1/attention/backends/flashinfer.py).
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/builder_config.h"
#include "core/kv_cache_spec.h"

namespace attn::backends {

/// vLLM's can_use_trtllm_attention(num_qo_heads, num_kv_heads) for this config: not forced off
/// (config->use_trtllm_attention != 0), not batch-invariant, a 10.x device (SM100 family; the
/// TRT-LLM kernels are assumed installed), and num_qo_heads % num_kv_heads == 0.
bool flashinfer_can_use_trtllm(const KvCacheSpec& spec, const BuilderConfig& config);

std::shared_ptr<const Backend> make_flashinfer_backend();

}  // namespace attn::backends
