// The host-only utilities that return small lists: the reorder swap list and the prefill
// chunk bounds. Inputs are host arrays; results are copied into the caller's arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/tensor.h"

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

/// vLLM 0.33's compute_mm_prefix_range_tensor: returns max_ranges (0 for vLLM's None); when
/// `out` is given and max_ranges > 0, writes the (num_seqs, max_ranges, 2) int32 host tensor.
/// `doc_ranges` is the (num_ranges, 3) int32 host tensor of (request, start, end) rows, or
/// nullopt for None.
int64_t compute_mm_prefix_range_tensor(const std::optional<Tensor>& doc_ranges, int64_t num_seqs,
                                       const std::optional<Tensor>& out);

/// vLLM 0.33's fill_mm_prefix_query_ranges into the (max_tokens, 2) int32 host tensor `out`:
/// the rows written (0: out untouched).
int64_t fill_mm_prefix_query_ranges(const Tensor& out, const std::optional<Tensor>& doc_ranges,
                                    const Tensor& query_start_loc_cpu, const Tensor& seq_lens_cpu);

}  // namespace attn
