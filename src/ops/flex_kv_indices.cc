// FLEX_ATTENTION's direct block mask (kv_indices, kv_num_blocks): host reference and CUDA
// dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void flex_kv_indices(const Exec& exec, const int32_t* doc_ids, int64_t num_tokens,
                     const int32_t* bt, int64_t bt_stride, int64_t width, int64_t pages,
                     int32_t q_block, int64_t num_groups, int32_t* kv_indices, int64_t out_stride,
                     int32_t* kv_num_blocks, void* scratch, int64_t scratch_per_group,
                     int64_t num_gpu_blocks) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, flex_kv_indices, doc_ids, num_tokens, bt, bt_stride, width, pages,
                            q_block, num_groups, kv_indices, out_stride, kv_num_blocks, scratch,
                            scratch_per_group, num_gpu_blocks);
  // seen[v] != 0: v was kept in the current group; reset for the ids kept once a group is done.
  auto* seen = static_cast<int32_t*>(scratch);
  const int64_t per_group = static_cast<int64_t>(q_block) * pages;
  for (int64_t g = 0; g < num_groups; ++g) {
    int32_t* row = kv_indices + g * out_stride;
    int64_t count = 0;
    for (int64_t t = g * q_block; t < (g + 1) * q_block && t < num_tokens; ++t) {
      const int32_t* src = bt + static_cast<int64_t>(doc_ids[t]) * bt_stride;
      for (int64_t j = 0; j < pages && j < width; ++j) {
        const int32_t v = src[j];
        if (v <= 0 || v >= num_gpu_blocks || seen[v] != 0) continue;
        seen[v] = 1;
        row[count++] = v;
      }
    }
    for (int64_t k = 0; k < count; ++k) seen[row[k]] = 0;
    std::fill(row + count, row + per_group, -1);
    kv_num_blocks[g] = static_cast<int32_t>(count);
  }
}

}  // namespace attn::ops
