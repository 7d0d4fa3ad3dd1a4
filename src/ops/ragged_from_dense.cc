// DeepSeek V4 / V4.1 on ROCm: dense index rows to ragged ones (vLLM 0.33's
// build_ragged_indices_from_dense); host reference and CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void ragged_from_dense(const Exec& exec, const int32_t* indices, int64_t rows, int64_t width,
                       int64_t row_stride, const int32_t* lengths, int32_t* indptr, int32_t* out) {
  if (rows < 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, ragged_from_dense, indices, rows, width, row_stride, lengths,
                            indptr, out);
  int64_t at = 0;
  indptr[0] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* row = indices + r * row_stride;
    const int64_t n = std::min<int64_t>(std::max<int64_t>(lengths[r], 0), std::max<int64_t>(width, 0));
    for (int64_t j = 0; j < n; ++j)
      if (row[j] >= 0) out[at++] = row[j];
    indptr[r + 1] = static_cast<int32_t>(at);
  }
}

}  // namespace attn::ops
