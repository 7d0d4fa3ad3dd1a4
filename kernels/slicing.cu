// CUDA implementations of the micro-batch slicing ops.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

// int32 arithmetic as torch does it (wrapping), without signed overflow on hostile input.
__device__ int32_t wrap_sub(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}

__global__ void slice_kernel(const int32_t* __restrict__ qsl, int64_t start, int64_t n,
                             int32_t skip_first, int32_t skip_last, int32_t* __restrict__ out) {
  const int32_t base = qsl[start];
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int32_t v = wrap_sub(qsl[start + k], base);
    if (k > 0) v = wrap_sub(v, skip_first);
    if (k == n - 1 && n > 1) v = wrap_sub(v, skip_last);
    out[k] = v;
  }
}

__global__ void trim_kernel(const int32_t* __restrict__ in, int64_t n, int32_t skip_last,
                            int32_t* __restrict__ out) {
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[k] = wrap_sub(in[k], k == n - 1 ? skip_last : 0);
}

}  // namespace

int slice_query_start_locs(int device_id, void* stream, const int32_t* qsl, int64_t start,
                           int64_t stop, int32_t skip_first, int32_t skip_last,
                           int32_t* out) noexcept {
  const int64_t n = stop - start + 1;
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  slice_kernel<<<grid_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, start, n, skip_first, skip_last, out);
  return cudaGetLastError();
}

int copy_trim_last(int device_id, void* stream, const int32_t* in, int64_t n, int32_t skip_last,
                   int32_t* out) noexcept {
  if (n <= 0) return cudaSuccess;
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  trim_kernel<<<grid_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(in, n, skip_last,
                                                                               out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
