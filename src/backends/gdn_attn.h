// GDN_ATTN: vLLM's GDNAttentionMetadataBuilder (vllm/v1/attention/backends/gdn_attn.py), the
// GatedDeltaNet layers of Qwen3-Next and its successors, with speculative decoding.
#pragma once

#include <memory>

#include "core/backend.h"

namespace attn::backends {

std::shared_ptr<const Backend> make_gdn_attn_backend();

}  // namespace attn::backends
