// ops::copy_submatrix_f32: host reference and CUDA dispatch.
#include <cstring>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void copy_submatrix_f32(const Exec& exec, const float* src, int64_t src_stride, int64_t row0,
                        int64_t col0, int64_t rows, int64_t cols, float* out) {
  if (rows <= 0 || cols <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, copy_submatrix_f32, src, src_stride, row0, col0, rows, cols, out);
  for (int64_t i = 0; i < rows; ++i)
    std::memcpy(out + i * cols, src + (row0 + i) * src_stride + col0,
                static_cast<size_t>(cols) * sizeof(float));
}

}  // namespace attn::ops
