// What vLLM 0.33's MiniMax-M3 builders share (models/minimax_m3/common/sparse_attention.py's
// MiniMaxM3SparseMetadataBuilder, common/indexer.py's MiniMaxM3IndexerTritonMetadataBuilder):
// the kernel block size, the uniform decode/prefill split with vLLM's assertions on the decode
// part, the fields both metadata classes begin with and the start of build() that writes them,
// and the spec checks. docs/backends/minimax_m3.md.
#pragma once

#include <cstdint>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "core/common_metadata.h"
#include "core/metadata.h"
#include "ops/batch_ops.h"

/// The fields MiniMaxM3SparseMetadata and MiniMaxM3IndexerMetadata both begin with, in their
/// order, as lines of a field list (field_list.h): enumerators P##SeqLens ... P##NumPrefillTokens.
#define ATTN_MINIMAX_M3_TOP_FIELDS(X, P)                                              \
  X(P##SeqLens, "seq_lens") X(P##MaxSeqLen, "max_seq_len")                            \
  X(P##SlotMapping, "slot_mapping") X(P##NumActualTokens, "num_actual_tokens")        \
  X(P##NumDecodes, "num_decodes") X(P##NumDecodeTokens, "num_decode_tokens")          \
  X(P##NumPrefills, "num_prefills") X(P##NumPrefillTokens, "num_prefill_tokens")

namespace attn::backends {

/// SPARSE_BLOCK_SIZE: the backends' one kernel block size (get_supported_kernel_block_sizes()
/// == [128]: one sparse block per page).
inline constexpr int32_t kMiniMaxM3BlockSize = 128;

/// The split of a MiniMax-M3 build and its decode part's query length.
struct MiniMaxM3Split {
  int64_t num_decodes = 0;
  int64_t num_decode_tokens = 0;
  int64_t num_prefills = 0;
  int64_t num_prefill_tokens = 0;
  int32_t decode_query_len = 0;  ///< The first decode's query length; 0 without decodes.
};

/// The builders' split_decodes_and_prefills(threshold, require_uniform=True) and the checks
/// build() makes before writing anything, as Error(kInvalidArgument) naming `who`: num_reqs at
/// most `context_capacity` (the context_len_buffer's max_num_batched_tokens entries), and
/// vLLM's assertions on the decodes: the first decode's query positive, every decode query that
/// long or empty, num_decode_tokens == num_decodes * decode_query_len.
MiniMaxM3Split minimax_m3_split(const CommonMetadata& c, int32_t threshold,
                                int64_t context_capacity, const char* who);

/// Offsets of the top fields (kMiniMaxM3TopFieldCount of them); a builder's field list begins
/// with ATTN_MINIMAX_M3_TOP_FIELDS(X, k).
#define ATTN_MINIMAX_M3_TOP_OFFSETS_(X) ATTN_MINIMAX_M3_TOP_FIELDS(X, kTop)
ATTN_NAMED_LIST(MiniMaxM3TopField, ATTN_MINIMAX_M3_TOP_OFFSETS_);
#undef ATTN_MINIMAX_M3_TOP_OFFSETS_

/// What both builders' build() does first, after every check (a refused batch leaves the
/// metadata as it was): the context lengths (compute_num_computed_tokens: seq_lens - query
/// lengths) of the c.num_reqs requests into `context_lens` (the context_len_buffer), then
/// m.reset() and the top fields from `s`. Returns the query_start_loc the ops read: the device
/// one when exec runs on a device, the host mirror otherwise.
const int32_t* minimax_m3_build_top(const CommonMetadata& c, const MiniMaxM3Split& s,
                                    const ops::Exec& exec, int32_t* context_lens, Metadata& m);

/// The spec checks (after the kind's): the kernel block size 128 and decoder self-attention
/// (Error(kUnsupported) otherwise).
void check_minimax_m3_spec(const BackendDescriptor& d, const KvCacheSpec& spec,
                           const BuilderConfig& c);

}  // namespace attn::backends
