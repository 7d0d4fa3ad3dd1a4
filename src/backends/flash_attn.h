// FLASH_ATTN's FlashAttention version choice, which the MLA family shares (flash_attn.cc holds
// vLLM's FlashAttentionMetadataBuilder).
#pragma once

#include <cstdint>

#include "core/builder_config.h"

namespace attn::backends {

/// The FlashAttention version vLLM would pick for this config (get_flash_attn_version() as the
/// class attributes call it): the config's choice, else 3 on compute capability 9.x, 4 on 10.x,
/// else 2; 3 becomes 4 on capability >= 10; 4 becomes 2 in batch-invariant mode.
int32_t flash_attn_version(const BuilderConfig& config);

}  // namespace attn::backends
