// Copies into a builder's persistent buffer (see persistent_copy.h).
#include "backends/persistent_copy.h"

#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/device_runtime.h"

namespace attn::backends {

void copy_i32_into_buffer(const ops::Exec& exec, const int32_t* src, bool src_on_host, int64_t n,
                          int32_t* dst) {
  if (n <= 0) return;
  if (!exec.on_cuda) {
    std::copy(src, src + n, dst);
  } else if (src_on_host) {
    ops::cuda_copy_to_device_async(exec.device_id, dst, src,
                                   static_cast<size_t>(n) * sizeof(int32_t), exec.stream);
  } else {
    ops::copy_pad_i32(exec, src, 1, n, 1, dst, 1, n, 0, false);
  }
}

void copy_u8_into_buffer(const ops::Exec& exec, const uint8_t* src, bool src_on_host, int64_t n,
                         uint8_t* dst) {
  if (n <= 0) return;
  if (!exec.on_cuda) {
    std::copy(src, src + n, dst);
  } else if (src_on_host) {
    ops::cuda_copy_to_device_async(exec.device_id, dst, src, static_cast<size_t>(n), exec.stream);
  } else {
    ops::copy_pad_u8(exec, src, n, dst, n, 0);
  }
}

}  // namespace attn::backends
