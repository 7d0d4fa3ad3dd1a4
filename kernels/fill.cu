// CUDA implementation of ops::fill_i32.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void fill_i32_kernel(int32_t* __restrict__ out, int64_t n, int32_t value) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = value;
}

}  // namespace

int fill_i32(int device_id, void* stream, int32_t* out, int64_t n, int32_t value) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  fill_i32_kernel<<<grid_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(out, n, value);
  return cudaGetLastError();
}

}  // namespace attn::kernels
