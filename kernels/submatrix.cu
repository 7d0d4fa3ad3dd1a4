// CUDA implementation of ops::copy_submatrix_f32: one grid-stride pass over the output.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void submatrix_kernel(const float* __restrict__ src, int64_t src_stride, int64_t row0,
                                 int64_t col0, int64_t rows, int64_t cols,
                                 float* __restrict__ out) {
  const int64_t n = rows * cols;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = k / cols, j = k % cols;
    out[k] = src[(row0 + i) * src_stride + col0 + j];
  }
}

}  // namespace

int copy_submatrix_f32(int device_id, void* stream, const float* src, int64_t src_stride,
                       int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                       float* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  submatrix_kernel<<<grid_for(rows * cols), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      src, src_stride, row0, col0, rows, cols, out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
