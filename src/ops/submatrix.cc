// ops::copy_submatrix_f32, written once (src/ops/launch.h): one row per output row.
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void submatrix_on(P& p, const float* src, int64_t src_stride, int64_t row0, int64_t col0,
                  int64_t rows, int64_t cols, float* out) {
  p.for_each_row(rows, [=] ATTN_HD(int64_t i, kernels::Lanes lanes) {
    const float* from = src + (row0 + i) * src_stride + col0;
    float* to = out + i * cols;
    lanes.copy(to, from, cols);  // one memcpy on the host
  });
}

}  // namespace

void copy_submatrix_f32(const Exec& exec, const float* src, int64_t src_stride, int64_t row0,
                        int64_t col0, int64_t rows, int64_t cols, float* out) {
  if (rows <= 0 || cols <= 0) return;
  ATTN_LAUNCH(exec, submatrix_on, src, src_stride, row0, col0, rows, cols, out);
}

}  // namespace attn::ops
