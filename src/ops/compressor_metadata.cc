// The DeepSeek V4 / V4.1 compressor builders' computed arrays (vLLM 0.33's
// models/deepseek_v4/compressor.py and models/deepseek_v41/compressor.py,
// CompressorMetadataBuilder): V4's block table clamped at 0 in place and V4.1's ring slot
// mapping; host reference and CUDA dispatch.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void compressor_clamp_block_table(const Exec& exec, int32_t* block_table, int64_t rows,
                                  int64_t cols, int64_t stride) {
  if (rows <= 0 || cols <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, compressor_clamp_block_table, block_table, rows, cols, stride);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (block_table[r * stride + c] < 0) block_table[r * stride + c] = 0;
}

void compressor_ring_slot_mapping(const Exec& exec, const int32_t* token_to_req,
                                  const int32_t* block_table, int64_t stride,
                                  const int64_t* positions, int64_t num_actual_tokens,
                                  int64_t num_tokens, int32_t capacity, int64_t* out) {
  if (num_tokens <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, compressor_ring_slot_mapping, token_to_req, block_table, stride,
                            positions, num_actual_tokens, num_tokens, capacity, out);
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t block = t < num_actual_tokens ? block_table[token_to_req[t] * stride] : 0;
    out[t] = block != 0 ? block * capacity + positions[t] % capacity : -1;
  }
}

}  // namespace attn::ops
