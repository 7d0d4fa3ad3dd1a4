// FlashInfer XQA's packed draft mask (vLLM 0.33's _make_xqa_draft_block_mask and
// _make_xqa_ragged_draft_block_mask). Host reference and CUDA dispatch.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void xqa_draft_mask(const Exec& exec, const int32_t* query_start_loc, int64_t num_reqs,
                    int32_t num_packed, bool causal, uint32_t* out) {
  if (num_reqs <= 0 || num_packed <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, xqa_draft_mask, query_start_loc, num_reqs, num_packed, causal,
                            out);
  const int32_t base = query_start_loc[0];
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int64_t len = query_start_loc[r + 1] - query_start_loc[r];
    for (int64_t q = 0; q < len; ++q) {
      uint32_t* row = out + (query_start_loc[r] - base + q) * num_packed;
      for (int32_t w = 0; w < num_packed; ++w) {
        uint32_t word = 0;
        for (int32_t j = 0; j < 32; ++j) {
          const int64_t kv = static_cast<int64_t>(w) * 32 + j;
          if (kv < len && (!causal || kv <= q)) word |= uint32_t{1} << j;
        }
        row[w] = word;
      }
    }
  }
}

}  // namespace attn::ops
