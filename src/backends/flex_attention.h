// FLEX_ATTENTION: vLLM's FlexAttentionMetadataBuilder (vllm/v1/attention/backends/
// flex_attention.py): the inputs of a torch FlexAttention block mask over the paged KV cache.
#pragma once

#include <memory>

#include "core/backend.h"

namespace attn::backends {

std::shared_ptr<const Backend> make_flex_attention_backend();

}  // namespace attn::backends
