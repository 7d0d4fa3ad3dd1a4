// block_table.py's compute_slot_mapping: host reference and CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void compute_slot_mapping(const Exec& exec, const int32_t* qsl, int64_t num_reqs,
                          const int64_t* positions, int64_t num_tokens,
                          const int32_t* block_table, int64_t bt_stride, int64_t bt_width,
                          int32_t block_size, int32_t dcp_size, int32_t dcp_rank,
                          int32_t interleave, int64_t* slot_mapping, int64_t max_num_tokens) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, compute_slot_mapping, qsl, num_reqs, positions, num_tokens,
                            block_table, bt_stride, bt_width, block_size, dcp_size, dcp_rank,
                            interleave, slot_mapping, max_num_tokens);
  const int64_t virtual_block = static_cast<int64_t>(block_size) * dcp_size;
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int32_t* row = block_table + r * bt_stride;
    const int64_t begin = std::max<int64_t>(qsl[r], 0), end = std::min<int64_t>(qsl[r + 1], num_tokens);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t pos = positions[t];
      const int64_t block_index = pos / virtual_block;
      if (pos < 0 || block_index >= bt_width) {
        slot_mapping[t] = -1;  // PAD_SLOT_ID: never read outside the table
        continue;
      }
      const int64_t offset = pos - block_index * virtual_block;
      const bool local = (offset / interleave) % dcp_size == dcp_rank;
      const int64_t local_offset =
          offset / (static_cast<int64_t>(dcp_size) * interleave) * interleave + offset % interleave;
      slot_mapping[t] = local ? static_cast<int64_t>(row[block_index]) * block_size + local_offset : -1;
    }
  }
  for (int64_t t = num_tokens; t < max_num_tokens; ++t) slot_mapping[t] = -1;
}

}  // namespace attn::ops
