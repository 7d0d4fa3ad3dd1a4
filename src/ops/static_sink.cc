// ops::static_sink_seq_lens, static_sink_prefix and static_sink_block_table: host reference and
// CUDA dispatch (vLLM 0.33's StaticSinkAttentionBuilder).
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void static_sink_seq_lens(const Exec& exec, const int32_t* seq_lens, int64_t n, int32_t sink_len,
                          int32_t* out) {
  if (n <= 0) return;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, static_sink_seq_lens, seq_lens, n, sink_len, out);
  for (int64_t i = 0; i < n; ++i) out[i] = seq_lens[i] == 0 ? 0 : seq_lens[i] + sink_len;
}

void static_sink_prefix(const Exec& exec, int32_t* table, int64_t rows, int64_t stride,
                        int64_t num_sink_blocks) {
  if (rows <= 0 || num_sink_blocks <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, static_sink_prefix, table, rows, stride, num_sink_blocks);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < num_sink_blocks; ++j)
      table[r * stride + j] = static_cast<int32_t>(j + 1);
}

void static_sink_block_table(const Exec& exec, const int32_t* block_table, int64_t bt_stride,
                             int64_t bt_col_stride, int64_t rows, int64_t cols,
                             int64_t num_sink_blocks, int32_t* out, int64_t out_stride) {
  if (rows <= 0 || cols <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, static_sink_block_table, block_table, bt_stride, bt_col_stride,
                            rows, cols, num_sink_blocks, out, out_stride);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      out[r * out_stride + num_sink_blocks + j] = block_table[r * bt_stride + j * bt_col_stride];
}

}  // namespace attn::ops
