// CUDA implementation of ops::fast_prefill_query_start_loc: for each request boundary, a binary
// search counts the (sorted) logits indices below it.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

template <class Index>
__global__ void fast_prefill_kernel(const int32_t* __restrict__ qsl, int64_t num_reqs,
                                    const Index* __restrict__ idx, int64_t n,
                                    int32_t* __restrict__ out) {
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r <= num_reqs;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (r == 0) {
      out[0] = 0;
      continue;
    }
    const int64_t bound = qsl[r];
    int64_t lo = 0, hi = n;  // first index >= bound
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (static_cast<int64_t>(idx[mid]) < bound)
        lo = mid + 1;
      else
        hi = mid;
    }
    out[r] = static_cast<int32_t>(lo);
  }
}

}  // namespace

int fast_prefill_query_start_loc(int device_id, void* stream, const int32_t* qsl,
                                 int64_t num_reqs, const void* logits_indices, int32_t index_bits,
                                 int64_t num_logits_indices, int32_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  auto s = static_cast<cudaStream_t>(stream);
  if (index_bits == 64)
    fast_prefill_kernel<<<grid_for(num_reqs + 1), kThreads, 0, s>>>(
        qsl, num_reqs, static_cast<const int64_t*>(logits_indices), num_logits_indices, out);
  else
    fast_prefill_kernel<<<grid_for(num_reqs + 1), kThreads, 0, s>>>(
        qsl, num_reqs, static_cast<const int32_t*>(logits_indices), num_logits_indices, out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
