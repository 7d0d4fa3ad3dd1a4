// ops::swa_decode_tables: host reference and CUDA dispatch (vLLM 0.33's
// AiterFlashAttentionMetadataBuilder._build_swa_decode_tables).
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void swa_decode_tables(const Exec& exec, const int32_t* block_table, int64_t bt_row_stride,
                       int64_t bt_width, const int32_t* seq_lens, int64_t num_decodes,
                       int32_t window, int32_t block_size, int64_t num_window_blocks,
                       int32_t* swa_block_table, int32_t* swa_seq_lens) {
  if (num_decodes <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, swa_decode_tables, block_table, bt_row_stride, bt_width,
                            seq_lens, num_decodes, window, block_size, num_window_blocks,
                            swa_block_table, swa_seq_lens);
  for (int64_t r = 0; r < num_decodes; ++r) {
    const int64_t len = seq_lens[r];
    const int64_t first = (len - window > 0 ? len - window : 0) / block_size;
    for (int64_t j = 0; j < num_window_blocks; ++j) {
      const int64_t col = first + j < bt_width - 1 ? first + j : bt_width - 1;
      swa_block_table[r * num_window_blocks + j] = block_table[r * bt_row_stride + col];
    }
    swa_seq_lens[r] = static_cast<int32_t>(len - first * block_size);
  }
}

}  // namespace attn::ops
