// The fields most backends pass through from the common metadata, with vLLM's names:
// num_actual_tokens, max_query_len, query_start_loc, max_seq_len, seq_lens, block_table,
// slot_mapping (in that order, as vLLM's metadata dataclasses declare them).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "backends/field_list.h"
#include "core/common_metadata.h"
#include "core/metadata.h"

/// The seven as lines of a field list (field_list.h): enumerators P##NumActualTokens ...
/// P##SlotMapping, names prefixed with the string literal `prefix`.
#define ATTN_PASSTHROUGH_FIELDS(X, P, prefix)                                               \
  X(P##NumActualTokens, prefix "num_actual_tokens") X(P##MaxQueryLen, prefix "max_query_len") \
  X(P##QueryStartLoc, prefix "query_start_loc") X(P##MaxSeqLen, prefix "max_seq_len")        \
  X(P##SeqLens, prefix "seq_lens") X(P##BlockTable, prefix "block_table")                    \
  X(P##SlotMapping, prefix "slot_mapping")

namespace attn::backends {

/// Offsets of the seven within a passthrough block (kPassthroughFieldCount of them).
#define ATTN_PASSTHROUGH_OFFSETS_(X) ATTN_PASSTHROUGH_FIELDS(X, kPt, "")
ATTN_NAMED_LIST(PassthroughField, ATTN_PASSTHROUGH_OFFSETS_);
#undef ATTN_PASSTHROUGH_OFFSETS_
inline constexpr size_t kPassthroughFields = kPassthroughFieldCount;

/// Writes the seven fields at indices [first, first + 7).
void set_passthrough(Metadata& m, size_t first, const CommonMetadata& c);

}  // namespace attn::backends
