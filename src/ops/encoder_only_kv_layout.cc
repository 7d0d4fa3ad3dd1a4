// ops::encoder_only_kv_layout (host only: CPU_ATTN runs on the host).
#include <algorithm>

#include "ops/batch_ops.h"

namespace attn::ops {

int64_t encoder_only_kv_layout(const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                               int32_t block_size, int64_t width, int64_t stride,
                               int64_t num_tokens, int32_t* block_table, int64_t* slot_mapping) {
  int64_t start = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int64_t blocks = (static_cast<int64_t>(seq_lens[r]) + block_size - 1) / block_size;
    for (int64_t j = 0; j < width; ++j) block_table[r * stride + j] = static_cast<int32_t>(start + j);
    // The token's position: its context (0 in an encoder-only batch) plus its query offset.
    const int64_t context = static_cast<int64_t>(seq_lens[r]) - (qsl[r + 1] - qsl[r]);
    for (int64_t t = qsl[r]; t < qsl[r + 1]; ++t)
      slot_mapping[t] = start * block_size + context + (t - qsl[r]);
    start += blocks;
  }
  std::fill(slot_mapping + qsl[num_reqs], slot_mapping + num_tokens, int64_t{-1});
  return start;
}

}  // namespace attn::ops
