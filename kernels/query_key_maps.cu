// CUDA implementation of ops::query_key_maps: a thread per query token, a binary search over
// query_start_loc[1..num_reqs].
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void query_key_maps_kernel(const int32_t* __restrict__ qsl,
                                      const int32_t* __restrict__ seq_lens, int64_t num_reqs,
                                      int64_t n, int32_t* __restrict__ q_to_req,
                                      int32_t* __restrict__ q_to_klen) {
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t lo = 0, hi = num_reqs;  // the count of qsl[1..num_reqs] <= t (non-decreasing)
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (qsl[mid + 1] <= t) lo = mid + 1; else hi = mid;
    }
    q_to_req[t] = static_cast<int32_t>(lo);
    q_to_klen[t] = lo < num_reqs ? static_cast<int32_t>(seq_lens[lo] - (qsl[lo + 1] - qsl[lo]) +
                                                        (t - qsl[lo]) + 1)
                                 : 0;
  }
}

}  // namespace

int query_key_maps(int device_id, void* stream, const int32_t* query_start_loc,
                   const int32_t* seq_lens, int64_t num_reqs, int64_t num_tokens,
                   int32_t* q_to_req, int32_t* q_to_klen) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  query_key_maps_kernel<<<grid_for(num_tokens), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      query_start_loc, seq_lens, num_reqs, num_tokens, q_to_req, q_to_klen);
  return cudaGetLastError();
}

}  // namespace attn::kernels
