// ops::fill_i32: host reference and CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void fill_i32(const Exec& exec, int32_t* out, int64_t n, int32_t value) {
  if (n <= 0) return;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, fill_i32, out, n, value);
  std::fill(out, out + n, value);
}

}  // namespace attn::ops
