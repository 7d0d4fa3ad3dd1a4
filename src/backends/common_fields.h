// The fields most backends pass through from the common metadata, with vLLM's names:
// num_actual_tokens, max_query_len, query_start_loc, max_seq_len, seq_lens, block_table,
// slot_mapping (in that order, as vLLM's metadata dataclasses declare them).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/common_metadata.h"
#include "core/metadata.h"

namespace attn::backends {

inline constexpr size_t kPassthroughFields = 7;
/// Offsets of the seven within a passthrough block.
enum PassthroughField : size_t {
  kPtNumActualTokens, kPtMaxQueryLen, kPtQueryStartLoc, kPtMaxSeqLen, kPtSeqLens, kPtBlockTable,
  kPtSlotMapping,
};

/// Appends the seven names to `names`.
void add_passthrough_names(std::vector<std::string>& names);

/// Writes the seven fields at indices [first, first + 7).
void set_passthrough(Metadata& m, size_t first, const CommonMetadata& c);

}  // namespace attn::backends
