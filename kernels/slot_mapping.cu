// CUDA implementation of ops::compute_slot_mapping: one block per request walks its tokens; one
// extra block pads [num_tokens, max_num_tokens).
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void slot_mapping_kernel(const int32_t* __restrict__ qsl, int64_t num_reqs,
                                    const int64_t* __restrict__ positions, int64_t num_tokens,
                                    const int32_t* __restrict__ block_table, int64_t stride,
                                    int64_t width, int32_t block_size, int32_t dcp_size,
                                    int32_t dcp_rank, int32_t interleave,
                                    int64_t* __restrict__ slots, int64_t max_num_tokens) {
  const int64_t r = blockIdx.x;
  if (r == num_reqs) {  // the padding block
    for (int64_t t = num_tokens + threadIdx.x; t < max_num_tokens; t += blockDim.x) slots[t] = -1;
    return;
  }
  const int64_t virtual_block = static_cast<int64_t>(block_size) * dcp_size;
  const int32_t* row = block_table + r * stride;
  // Bounded by num_tokens (the host's count): device offsets cannot index out of bounds.
  const int64_t begin = qsl[r] < 0 ? 0 : qsl[r];
  const int64_t end = qsl[r + 1] < num_tokens ? qsl[r + 1] : num_tokens;
  for (int64_t t = begin + threadIdx.x; t < end; t += blockDim.x) {
    const int64_t pos = positions[t];
    const int64_t block_index = pos / virtual_block;
    if (pos < 0 || block_index >= width) {
      slots[t] = -1;
      continue;
    }
    const int64_t offset = pos - block_index * virtual_block;
    const bool local = (offset / interleave) % dcp_size == dcp_rank;
    const int64_t local_offset =
        offset / (static_cast<int64_t>(dcp_size) * interleave) * interleave + offset % interleave;
    slots[t] = local ? static_cast<int64_t>(row[block_index]) * block_size + local_offset : -1;
  }
}

}  // namespace

int compute_slot_mapping(int device_id, void* stream, const int32_t* qsl, int64_t num_reqs,
                         const int64_t* positions, int64_t num_tokens, const int32_t* block_table,
                         int64_t bt_stride, int64_t bt_width, int32_t block_size,
                         int32_t dcp_size, int32_t dcp_rank, int32_t interleave,
                         int64_t* slot_mapping, int64_t max_num_tokens) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  slot_mapping_kernel<<<static_cast<unsigned>(num_reqs + 1), kThreads, 0,
                        static_cast<cudaStream_t>(stream)>>>(
      qsl, num_reqs, positions, num_tokens, block_table, bt_stride, bt_width, block_size,
      dcp_size, dcp_rank, interleave, slot_mapping, max_num_tokens);
  return cudaGetLastError();
}

}  // namespace attn::kernels
