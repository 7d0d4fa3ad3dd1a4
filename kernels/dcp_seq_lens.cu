// CUDA implementations of the DCP length ops: get_dcp_local_seq_lens of the context lengths
// (FlashAttention's DCP path) and of the sequence lengths (every rank, or one).
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__device__ __forceinline__ int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

__device__ __forceinline__ int32_t local_len(int64_t len, int32_t size, int32_t rank,
                                             int32_t interleave) {
  const int64_t base = floor_div(floor_div(len, interleave), size) * interleave;
  int64_t rem = len - base * size - static_cast<int64_t>(rank) * interleave;
  rem = rem < 0 ? 0 : (rem > interleave ? interleave : rem);
  return static_cast<int32_t>(base + rem);
}

__global__ void context_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ seq,
                               int64_t n, int32_t size, int32_t rank, int32_t interleave,
                               int32_t* __restrict__ out) {
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < n;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ctx = static_cast<int64_t>(seq[r]) - (static_cast<int64_t>(qsl[r + 1]) - qsl[r]);
    out[r] = local_len(ctx, size, rank, interleave);
  }
}

__global__ void seq_kernel(const int32_t* __restrict__ seq, int64_t n, int32_t size, int32_t rank,
                           int32_t interleave, int32_t* __restrict__ out) {
  const int64_t per = rank >= 0 ? 1 : size;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n * per;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / per;
    const int32_t k = rank >= 0 ? rank : static_cast<int32_t>(i % per);
    out[i] = local_len(seq[r], size, k, interleave);
  }
}

}  // namespace

int dcp_context_kv_lens(int device_id, void* stream, const int32_t* qsl, const int32_t* seq,
                        int64_t n, int32_t size, int32_t rank, int32_t interleave,
                        int32_t* out) noexcept {
  if (n <= 0) return cudaSuccess;
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  context_kernel<<<grid_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, seq, n, size, rank, interleave, out);
  return cudaGetLastError();
}

int dcp_local_seq_lens(int device_id, void* stream, const int32_t* seq, int64_t n, int32_t size,
                       int32_t rank, int32_t interleave, int32_t* out) noexcept {
  if (n <= 0) return cudaSuccess;
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  seq_kernel<<<grid_for(n * (rank >= 0 ? 1 : size)), kThreads, 0,
               static_cast<cudaStream_t>(stream)>>>(seq, n, size, rank, interleave, out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
