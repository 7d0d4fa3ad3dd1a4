// CUDA implementation of ops::flashmla_fixed_tile_schedule: one small launch.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void fixed_schedule_kernel(int64_t num_decodes, int32_t end_block_idx,
                                      int32_t* __restrict__ tile,
                                      int32_t* __restrict__ num_splits) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (first < 8) {
    // [begin_idx, begin_block_idx, end_idx, end_block_idx, begin_n_split_idx, 0, 0, 0]
    int32_t v = 0;
    if (first == 2) v = static_cast<int32_t>(num_decodes - 1);
    if (first == 3) v = end_block_idx;
    tile[first] = v;
  }
  for (int64_t i = first; i <= num_decodes; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    num_splits[i] = 0;
}

}  // namespace

int flashmla_fixed_tile_schedule(int device_id, void* stream, int64_t num_decodes,
                                 int32_t end_block_idx, int32_t* tile,
                                 int32_t* num_splits) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  fixed_schedule_kernel<<<grid_for(num_decodes + 1 > 8 ? num_decodes + 1 : 8), kThreads, 0,
                          static_cast<cudaStream_t>(stream)>>>(num_decodes, end_block_idx, tile,
                                                               num_splits);
  return cudaGetLastError();
}

}  // namespace attn::kernels
