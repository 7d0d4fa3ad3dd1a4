// CUDA implementation of ops::dcp_context_kv_lens (get_dcp_local_seq_lens of the context
// lengths, for one DCP rank).
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

__device__ __forceinline__ int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

__global__ void dcp_context_kv_lens_kernel(const int32_t* __restrict__ query_start_loc,
                                           const int32_t* __restrict__ seq_lens,
                                           int64_t num_reqs, int32_t dcp_size,
                                           int32_t dcp_rank, int32_t interleave,
                                           int32_t* __restrict__ out) {
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < num_reqs;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ctx = static_cast<int64_t>(seq_lens[r]) -
                        (static_cast<int64_t>(query_start_loc[r + 1]) - query_start_loc[r]);
    const int64_t base = floor_div(floor_div(ctx, interleave), dcp_size) * interleave;
    int64_t rem = ctx - base * dcp_size - static_cast<int64_t>(dcp_rank) * interleave;
    rem = rem < 0 ? 0 : (rem > interleave ? interleave : rem);
    out[r] = static_cast<int32_t>(base + rem);
  }
}

}  // namespace

int dcp_context_kv_lens(int device_id, void* stream, const int32_t* query_start_loc,
                        const int32_t* seq_lens, int64_t num_reqs, int32_t dcp_size,
                        int32_t dcp_rank, int32_t interleave, int32_t* out) noexcept {
  if (num_reqs <= 0) return cudaSuccess;
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  constexpr int kThreads = 256;
  int64_t blocks = (num_reqs + kThreads - 1) / kThreads;
  if (blocks > 1024) blocks = 1024;
  dcp_context_kv_lens_kernel<<<static_cast<unsigned>(blocks), kThreads, 0,
                               static_cast<cudaStream_t>(stream)>>>(
      query_start_loc, seq_lens, num_reqs, dcp_size, dcp_rank, interleave, out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
