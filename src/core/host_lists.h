// The host-only utilities that return small lists: the reorder swap list and the prefill
// chunk bounds. Inputs are host arrays; results are copied into the caller's arrays.
#pragma once

#include <cstdint>
#include <vector>

namespace attn {

/// vLLM's reorder_batch_to_split_decodes_and_prefills as (src, dst) swap pairs: four regions
/// (0.33) with num_prompt_tokens, the three of ABI 1.0 without (null).
std::vector<int32_t> reorder_batch_swaps(const int32_t* num_scheduled_tokens,
                                         const int32_t* num_computed_tokens,
                                         const int32_t* num_prompt_tokens, int64_t num_reqs,
                                         int32_t decode_threshold);

/// vLLM's split_prefill_chunks as (start, end) pairs.
std::vector<int64_t> split_prefill_chunks(const int32_t* seq_lens, int64_t num_seqs,
                                          int64_t workspace_size, int64_t request_offset);

}  // namespace attn
