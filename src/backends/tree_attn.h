// TREE_ATTN: vLLM's TreeAttentionMetadataBuilder (vllm/v1/attention/backends/tree_attn.py; the
// backend left vLLM's registry after v0.20.2, libattn keeps it for engines that draft trees).
#pragma once

#include <memory>

#include "core/backend.h"

namespace attn::backends {

std::shared_ptr<const Backend> make_tree_attn_backend();

}  // namespace attn::backends
