// CUDA implementation of ops::cascade_split: one launch writes all three cascade tensors.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void cascade_split_kernel(const int32_t* __restrict__ seq_lens, int64_t num_reqs,
                                     int32_t num_actual_tokens, int32_t common_prefix_len,
                                     int32_t* __restrict__ cu_prefix_query_lens,
                                     int32_t* __restrict__ prefix_kv_lens,
                                     int32_t* __restrict__ suffix_kv_lens) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i == 0) {
    cu_prefix_query_lens[0] = 0;
    cu_prefix_query_lens[1] = num_actual_tokens;
    prefix_kv_lens[0] = common_prefix_len;
  }
  for (int64_t r = i; r < num_reqs; r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    suffix_kv_lens[r] = seq_lens[r] - common_prefix_len;
  }
}

}  // namespace

int cascade_split(int device_id, void* stream, const int32_t* seq_lens, int64_t num_reqs,
                  int64_t num_actual_tokens, int64_t common_prefix_len,
                  int32_t* cu_prefix_query_lens, int32_t* prefix_kv_lens,
                  int32_t* suffix_kv_lens) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  cascade_split_kernel<<<grid_for(num_reqs), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      seq_lens, num_reqs, static_cast<int32_t>(num_actual_tokens),
      static_cast<int32_t>(common_prefix_len), cu_prefix_query_lens, prefix_kv_lens,
      suffix_kv_lens);
  return cudaGetLastError();
}

}  // namespace attn::kernels
