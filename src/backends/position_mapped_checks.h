// The batch checks of the builders that map every token by its position into per-token
// buffers of config->max_num_batched_tokens entries: COMPRESSOR's V4.1 ring slot mapping
// (compressor.cc) and STEP5_CSA_TAIL_RING's base and slot mapping (step5_csa_tail_ring.cc).
#pragma once

#include "core/builder_config.h"
#include "core/common_metadata.h"

namespace attn::backends {

/// Error(kInvalidArgument), naming `who` (the backend), when `c` has no positions (vLLM asserts
/// positions is not None) or more slot_mapping entries than config.max_num_batched_tokens, the
/// entries of `who`'s `buffers` (how the message names them, e.g. "slot_mapping_buffer").
void check_position_mapped_batch(const CommonMetadata& c, const BuilderConfig& config,
                                 const char* who, const char* buffers);

}  // namespace attn::backends
