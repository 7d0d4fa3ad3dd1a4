// FLASH_ATTN: vLLM's FlashAttentionMetadataBuilder (vllm/v1/attention/backends/flash_attn.py).
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/builder_config.h"

namespace attn::backends {

/// The FlashAttention version vLLM would pick for this config (get_flash_attn_version() as the
/// class attributes call it): the config's choice, else 3 on compute capability 9.x, 4 on 10.x,
/// else 2; 3 becomes 4 on capability >= 10; 4 becomes 2 in batch-invariant mode.
int32_t flash_attn_version(const BuilderConfig& config);

std::shared_ptr<const Backend> make_flash_attn_backend();

}  // namespace attn::backends
