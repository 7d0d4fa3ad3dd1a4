// The argument structs that an op (src/ops/batch_ops.h, which documents them and names them
// ops::MlaChunkPlan, ...) and its CUDA kernel (kernels.h) both take: plain pointers and sizes,
// no CUDA header. They live here, in the lowest layer, so that an op passes its arguments to its
// kernel as they are (src/ops/cuda_dispatch.h checks that the two signatures agree).
#pragma once

#include <cstdint>

namespace attn::kernels {

/// See ops::mla_chunk_plan.
struct MlaChunkPlan {
  int64_t num_prefills_with_context = 0;
  int64_t max_context_len = 0;
  int64_t max_context_chunk = 0;
  int64_t num_chunks = 0;
  int64_t max_chunk_tokens = 0;  ///< Largest chunk total (the token_to_seq row width).
  int64_t local_chunk = 0;
};

/// See ops::mla_prefill_metadata. Any may be null.
struct MlaPrefillOut {
  int32_t* query_start_loc = nullptr;
  int32_t* query_seq_lens = nullptr;
  int32_t* cu_seq_lens = nullptr;
  int32_t* starts = nullptr;
  int32_t* token_to_seq = nullptr;
  int32_t* padded_local_cu_seq_lens = nullptr;
};

/// See ops::gdn_spec_split. Any may be null.
struct GdnSplitOut {
  uint8_t* masks = nullptr;
  int32_t* spec_state = nullptr;
  int32_t* non_spec_state = nullptr;
  int32_t* spec_qsl = nullptr;
  int32_t* non_spec_qsl = nullptr;
  int64_t* spec_token_indx = nullptr;      ///< int64: vLLM's argsort indices.
  int64_t* non_spec_token_indx = nullptr;  ///< int64: vLLM's argsort indices.
  int32_t* spec_accepted = nullptr;
  uint8_t* non_spec_has_initial = nullptr;
};

/// See ops::flex_kv_indices: what FLEX_ATTENTION's direct block mask is built from.
struct FlexBlockMaskIn {
  const int32_t* doc_ids = nullptr;            ///< (num_tokens,) request of each token.
  int64_t num_tokens = 0;
  const int32_t* query_start_loc = nullptr;    ///< (num_reqs + 1,)
  const int32_t* decode_offset = nullptr;      ///< (num_reqs,) computed tokens.
  const int32_t* num_blocks_per_seq = nullptr; ///< (num_reqs,) cdiv(seq_lens, block_size).
  const int32_t* block_table = nullptr;
  int64_t block_table_stride = 0;
  int64_t pages = 0;           ///< Columns read per token (<= the table's width).
  int32_t block_size = 0;      ///< The KV cache block size.
  int32_t q_block = 0;         ///< Tokens per query group.
  int32_t causal = 0;          ///< Non-zero: prune blocks after each token's position.
  int32_t sliding_window = 0;  ///< > 0: prune blocks before each token's window.
  int64_t num_gpu_blocks = 0;  ///< Ids outside [1, num_gpu_blocks) are skipped.
};

}  // namespace attn::kernels
