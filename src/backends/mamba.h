// MAMBA2, MAMBA1, SHORT_CONV: vLLM's BaseMambaAttentionMetadataBuilder
// (vllm/v1/attention/backends/mamba_attn.py) and its subclasses in mamba2_attn.py,
// mamba1_attn.py and short_conv_attn.py.
#pragma once

#include <memory>

#include "core/backend.h"

namespace attn::backends {

std::shared_ptr<const Backend> make_mamba2_backend();
std::shared_ptr<const Backend> make_mamba1_backend();
/// SHORT_CONV: the base builder as it is (vLLM's ShortConvAttentionMetadataBuilder adds nothing).
std::shared_ptr<const Backend> make_short_conv_backend();

}  // namespace attn::backends
