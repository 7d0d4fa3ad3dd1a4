// CPU_ATTN: vLLM's CPUAttentionMetadataBuilder (vllm/v1/attention/backends/cpu_attn.py): a host
// backend (its builders run on ATTN_DEVICE_CPU only).
#pragma once

#include <memory>

#include "core/backend.h"

namespace attn::backends {

std::shared_ptr<const Backend> make_cpu_attn_backend();

}  // namespace attn::backends
