// CUDA implementation of compute_token_to_req_indices: one thread per token, a binary search
// over query_start_loc (as vLLM 0.33's Triton kernel; reads only query_start_loc, so it is safe
// to capture in a CUDA graph).
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

// As ops' token_request (src/ops/token_to_req_indices.cc).
__device__ __forceinline__ int32_t token_request(const int32_t* __restrict__ qsl,
                                                 int64_t num_reqs, int64_t t) {
  int64_t lo = 0, hi = num_reqs;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (qsl[mid + 1] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return static_cast<int32_t>(lo < num_reqs - 1 ? lo : num_reqs - 1);
}

__global__ void token_to_req_kernel(const int32_t* __restrict__ qsl, int64_t num_reqs,
                                    int64_t num_mapped, int64_t n, int32_t* __restrict__ out) {
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[t] = t < num_mapped ? token_request(qsl, num_reqs, t) : 0;
}

}  // namespace

int compute_token_to_req_indices(int device_id, void* stream, const int32_t* qsl,
                                 int64_t num_reqs, int64_t num_mapped_tokens, int64_t num_tokens,
                                 int32_t* out) noexcept {
  if (num_tokens <= 0) return cudaSuccess;
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  token_to_req_kernel<<<grid_for(num_tokens), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, num_reqs, num_mapped_tokens, num_tokens, out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
