// ops::cross_attention_slot_mapping: host reference and CUDA dispatch.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void cross_attention_slot_mapping(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                                  const int32_t* encoder_seq_lens, int64_t num_reqs,
                                  const int32_t* block_table, int64_t bt_stride, int64_t width,
                                  int32_t block_size, int64_t* out, int64_t total) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, cross_attention_slot_mapping, qsl, seq_lens, encoder_seq_lens,
                            num_reqs, block_table, bt_stride, width, block_size, out, total);
  int64_t k = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    const bool first_step = seq_lens[r] - (qsl[r + 1] - qsl[r]) <= 0;
    if (!first_step) continue;
    const int32_t* row = block_table + r * bt_stride;
    for (int64_t i = 0; i < encoder_seq_lens[r] && k < total; ++i)
      out[k++] = i / block_size < width
                     ? static_cast<int64_t>(row[i / block_size]) * block_size + i % block_size
                     : -1;
  }
}

}  // namespace attn::ops
