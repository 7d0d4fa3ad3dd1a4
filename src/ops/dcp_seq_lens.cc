// Decode-context-parallel lengths: vLLM's get_dcp_local_seq_lens (every rank or one) and the
// per-rank context lengths FlashAttention's DCP path uses. Host reference and CUDA dispatch.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void dcp_context_kv_lens(const Exec& exec, const int32_t* query_start_loc,
                         const int32_t* seq_lens, int64_t num_reqs, int32_t dcp_size,
                         int32_t dcp_rank, int32_t interleave, int32_t* out) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, dcp_context_kv_lens, query_start_loc, seq_lens, num_reqs,
                            dcp_size, dcp_rank, interleave, out);
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int64_t ctx = static_cast<int64_t>(seq_lens[r]) -
                        (static_cast<int64_t>(query_start_loc[r + 1]) - query_start_loc[r]);
    out[r] = dcp_local_len(ctx, dcp_size, dcp_rank, interleave);
  }
}

void dcp_local_seq_lens(const Exec& exec, const int32_t* seq_lens, int64_t num_reqs,
                        int32_t dcp_size, int32_t dcp_rank, int32_t interleave, int32_t* out) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, dcp_local_seq_lens, seq_lens, num_reqs, dcp_size, dcp_rank,
                            interleave, out);
  for (int64_t r = 0; r < num_reqs; ++r) {
    if (dcp_rank >= 0) {
      out[r] = dcp_local_len(seq_lens[r], dcp_size, dcp_rank, interleave);
    } else {
      for (int32_t k = 0; k < dcp_size; ++k)
        out[r * dcp_size + k] = dcp_local_len(seq_lens[r], dcp_size, k, interleave);
    }
  }
}

}  // namespace attn::ops
