// FlashMLA's fixed tile schedule of vLLM's batch-invariant decode: host reference and CUDA
// dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void flashmla_fixed_tile_schedule(const Exec& exec, int64_t num_decodes, int32_t end_block_idx,
                                  int32_t* tile, int32_t* num_splits) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, flashmla_fixed_tile_schedule, num_decodes, end_block_idx, tile,
                            num_splits);
  const int32_t values[8] = {0, 0, static_cast<int32_t>(num_decodes - 1), end_block_idx, 0, 0,
                             0, 0};
  std::copy(values, values + 8, tile);
  std::fill(num_splits, num_splits + num_decodes + 1, 0);
}

}  // namespace attn::ops
