// Batch utilities on tensors that are not a whole batch: DCP local lengths, the spec-decode
// query view, slot mapping, FlashInfer's paged KV layout, causal conv1d metadata. Each
// validates its tensors (names in messages are the ABI's argument names), picks host or CUDA
// from where the data lives, and runs the op without allocating.
#pragma once

#include <cstdint>
#include <optional>

#include "core/tensor.h"

namespace attn {

struct CommonMetadata;

/// vLLM's get_dcp_local_seq_lens into `out`: (n,) for one rank (dcp_rank >= 0), else
/// (n, dcp_size) for every rank (dcp_rank < 0; (n,) also accepted when dcp_size == 1).
void get_dcp_local_seq_lens(const Tensor& seq_lens, int32_t dcp_size, int32_t dcp_rank,
                            int32_t interleave, const Tensor& out, void* stream);

/// vLLM 0.33's compute_token_to_req_indices into `out` (num_reqs = query_start_loc's length
/// - 1): the request of each of the first num_tokens tokens, 0 from num_mapped_tokens on.
void compute_token_to_req_indices(const Tensor& query_start_loc, const Tensor& out,
                                  int64_t num_mapped_tokens, int64_t num_tokens, void* stream);

/// vLLM's reshape_query_for_spec_decode: a (batch, tokens / batch, heads, dim) view of a
/// (tokens, heads, dim) query.
Tensor reshape_query_for_spec_decode(const Tensor& query, int64_t batch_size);

/// vLLM's reshape_attn_output_for_spec_decode: a (batch * seq_len, heads, dim) view of a
/// (batch, seq_len, heads, dim) attention output; a 3-D one is returned as it is. torch's view
/// rule: the leading two dimensions must be mergeable.
Tensor reshape_attn_output_for_spec_decode(const Tensor& attn_output);

/// vLLM 0.33's CommonAttentionMetadata.naive_query_lens() into `out` ((num_reqs,) int32 on
/// query_start_loc's device); the batch is validated as a split validates it.
void naive_query_lens(CommonMetadata& common, const Tensor& out, void* stream);

struct SlotMappingArgs {
  Tensor query_start_loc;
  std::optional<Tensor> query_start_loc_cpu;
  int64_t num_reqs = 0;
  Tensor positions;
  std::optional<Tensor> positions_cpu;
  Tensor block_table;
  int32_t block_size = 0;
  int32_t dcp_world_size = 1;
  int32_t dcp_rank = 0;
  int32_t interleave = 1;
  Tensor slot_mapping;
};
/// block_table.py's compute_slot_mapping; values are checked when they can be read on the host.
void compute_slot_mapping(const SlotMappingArgs& args, void* stream);

struct PagedKv {
  Tensor seq_lens;
  std::optional<Tensor> seq_lens_cpu;
  Tensor block_table;
  int32_t page_size = 0;
  Tensor indptr, indices, last_page_len;
};
/// FlashInfer's paged KV indptr / indices / last_page_len. Returns the number of pages.
int64_t compute_flashinfer_kv_metadata(const PagedKv& args, void* stream);

struct Conv1dInfo {
  int64_t tot = 0;           ///< Programs of all requests: sum cdiv(seqlen, 8).
  int64_t num_programs = 0;  ///< max(1024, tot) * 2 entries written to each buffer.
};
/// compute_causal_conv1d_metadata: `nums` (host, optional) gets cdiv(seqlen, 8) per request.
Conv1dInfo compute_causal_conv1d_metadata(const Tensor& query_start_loc_p_cpu,
                                          const Tensor& query_start_loc_p,
                                          const Tensor& batch_ptr,
                                          const Tensor& token_chunk_offset_ptr,
                                          const std::optional<Tensor>& nums, void* stream);

}  // namespace attn
