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

const int32_t* upper_bound_where_run(const ops::Exec& exec, const CommonMetadata& c,
                                     int64_t first, int64_t n, int32_t* staging, int32_t* dst) {
  if (!c.seq_lens_cpu_upper_bound) return nullptr;
  const int32_t* bound = c.seq_lens_cpu_upper_bound->as<const int32_t>();
  if (!exec.on_cuda) return bound;
  std::copy(bound + first, bound + first + n, staging + first);
  copy_i32_into_buffer(exec, staging + first, true, n, dst + first);
  return dst;
}

}  // namespace attn::backends
