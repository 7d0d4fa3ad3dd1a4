// LINEAR_ATTN: vLLM's LinearAttentionMetadataBuilder (vllm/v1/attention/backends/linear_attn.py).
#pragma once

#include <memory>

#include "core/backend.h"

namespace attn::backends {

std::shared_ptr<const Backend> make_linear_attn_backend();

}  // namespace attn::backends
