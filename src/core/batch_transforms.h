// The utilities that turn a batch into another batch (vLLM's
// make_kv_sharing_fast_prefill_common_attn_metadata, make_local_attention_virtual_batches,
// maybe_create_ubatch_slices and _make_metadata_with_slice). They compute host-side values from
// the *_cpu mirrors, write the new device tensors into the caller's output tensors (no
// allocation), and return the new batch as views of those outputs and of the input.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/common_metadata.h"
#include "core/tensor.h"

namespace attn {

// ---- KV-sharing fast prefill ------------------------------------------------------------------
struct FastPrefillOutputs {
  Tensor query_start_loc;      ///< (>= num_reqs + 1,) int32 where the batch lives.
  Tensor query_start_loc_cpu;  ///< (>= num_reqs + 1,) int32 in host memory.
};
/// vLLM 0.33's test for returning the batch as it is: every request a single-token decode
/// (max_query_len == 1), or fast prefill not armed for this step (no logits indices). Written
/// once: make_kv_sharing_fast_prefill and the ABI's allocation-free pass-through ask it.
inline bool fast_prefill_passes_through(int64_t max_query_len, bool has_logits_indices) {
  return max_query_len == 1 || !has_logits_indices;
}

/// When fast_prefill_passes_through the batch comes back as it is (`*passthrough` = true) and
/// the outputs are untouched. `logits_indices_cpu` is required when logits_indices_padded is not in
/// host memory (vLLM syncs there; libattn does not).
CommonMetadata make_kv_sharing_fast_prefill(CommonMetadata& common,
                                            const std::optional<Tensor>& logits_indices_cpu,
                                            const FastPrefillOutputs& out, void* stream,
                                            bool* passthrough);

// ---- local attention virtual batches ------------------------------------------------------------
struct LocalAttentionOutputs {
  Tensor query_start_loc;      ///< (>= V + 1,) int32 where the batch lives.
  Tensor query_start_loc_cpu;  ///< (>= V + 1,) int32, host.
  Tensor seq_lens;             ///< (>= V,) int32 where the batch lives.
  Tensor seq_lens_cpu;         ///< (>= V,) int32, host.
  std::optional<Tensor> num_computed_tokens_cpu;  ///< (>= V,) int32, host.
  Tensor block_table;          ///< (>= V, >= chunk / block_size) int32 where the batch lives.
  Tensor virtual_req;          ///< (>= V,) int32: the remap, where the batch lives.
  Tensor virtual_block_start;  ///< (>= V,) int32.
};
/// V for a batch (validated; host mirrors of query_start_loc and seq_lens required).
int64_t local_attention_num_virtual_batches(int32_t attn_chunk_size, CommonMetadata& common);
CommonMetadata make_local_attention_virtual_batches(int32_t attn_chunk_size,
                                                    CommonMetadata& common, int32_t block_size,
                                                    const LocalAttentionOutputs& out,
                                                    void* stream);
/// The remap applied to another block table: out rows [0, num_virtual) of out.shape[1] pages.
void remap_local_block_table(const Tensor& block_table, const Tensor& virtual_req,
                             const Tensor& virtual_block_start, int64_t num_virtual,
                             const Tensor& out, void* stream);

// ---- micro-batch slicing ----------------------------------------------------------------------
struct UbatchSlice {
  int64_t request_start = 0, request_stop = 0, token_start = 0, token_stop = 0;
};
/// vLLM's maybe_create_ubatch_slices(True, ...): the slices and the padded slices. The token
/// split points are `split_points` (num_ubatches - 1 of them) when it is not null, else
/// split_point * i (split_point <= 0: num_tokens_padded / num_ubatches, vLLM's None).
void create_ubatch_slices(const int32_t* num_scheduled_tokens, int64_t num_reqs,
                          int64_t num_tokens_padded, int64_t num_reqs_padded,
                          int32_t num_ubatches, int64_t split_point, const int64_t* split_points,
                          int64_t num_split_points, std::vector<UbatchSlice>* slices,
                          std::vector<UbatchSlice>* padded);

/// ubatch_utils' slice_query_start_locs into `out` (validated).
void slice_query_start_locs(const Tensor& query_start_loc, int64_t request_start,
                            int64_t request_stop, const Tensor& out, void* stream);

struct SliceOutputs {
  Tensor query_start_loc;      ///< (>= n + 1,) int32 where the batch lives.
  Tensor query_start_loc_cpu;  ///< (>= n + 1,) int32, host.
  Tensor seq_lens;             ///< (>= n,) int32 where the batch lives.
  std::optional<Tensor> seq_lens_cpu;  ///< (>= n,) int32, host; filled when seq_lens are known there.
};
/// vLLM's _make_metadata_with_slice (n = request_stop - request_start).
CommonMetadata make_metadata_with_slice(const UbatchSlice& slice, CommonMetadata& common,
                                        const SliceOutputs& out, void* stream);

}  // namespace attn
