// vLLM's use_cascade_attention heuristic (flash_attn.py), shared by backends that use
// FlashAttention's cascade kernels.
#pragma once

#include "core/builder.h"

namespace attn::backends {

/// True when cascade attention is supported for the query and faster than FlashDecoding by
/// vLLM's cost model. The query must be validated (num_kv_heads > 0, num_sms > 0).
bool flash_attn_use_cascade_attention(const CascadeQuery& q);

}  // namespace attn::backends
