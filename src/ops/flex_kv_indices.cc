// FLEX_ATTENTION's direct block mask (kv_indices, kv_num_blocks): host reference and CUDA
// dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {
namespace {

// The block id token t contributes at column j, or 0 for none (see ops::flex_kv_indices).
int32_t candidate(const FlexBlockMaskIn& in, int64_t t, int64_t j) {
  if (t >= in.num_tokens) return 0;  // vLLM's pad_to_multiple rows
  const int32_t d = in.doc_ids[t];
  if (j >= in.num_blocks_per_seq[d]) return 0;  // past the request's own length
  if (in.causal != 0 || in.sliding_window > 0) {
    const int64_t pos = t - in.query_start_loc[d] + in.decode_offset[d];
    if (in.causal != 0 && j * in.block_size > pos) return 0;
    if (in.sliding_window > 0 &&
        j < std::max<int64_t>(pos - (in.sliding_window - 1), 0) / in.block_size)
      return 0;
  }
  const int32_t v = in.block_table[static_cast<int64_t>(d) * in.block_table_stride + j];
  return v > 0 && v < in.num_gpu_blocks ? v : 0;
}

}  // namespace

void flex_kv_indices(const Exec& exec, const FlexBlockMaskIn& in, int64_t num_groups,
                     int32_t* kv_indices, int64_t out_stride, int32_t* kv_num_blocks,
                     void* scratch, int64_t scratch_per_group) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, flex_kv_indices, in, num_groups, kv_indices, out_stride,
                            kv_num_blocks, scratch, scratch_per_group);
  // seen[v] != 0: v was kept in the current group; reset for the ids kept once a group is done.
  auto* seen = static_cast<int32_t*>(scratch);
  const int64_t per_group = static_cast<int64_t>(in.q_block) * in.pages;
  for (int64_t g = 0; g < num_groups; ++g) {
    int32_t* row = kv_indices + g * out_stride;
    int64_t count = 0;
    for (int64_t t = g * in.q_block; t < (g + 1) * in.q_block && t < in.num_tokens; ++t) {
      for (int64_t j = 0; j < in.pages; ++j) {
        const int32_t v = candidate(in, t, j);
        if (v == 0 || seen[v] != 0) continue;
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
