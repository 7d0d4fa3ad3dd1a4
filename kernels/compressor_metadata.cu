// CUDA implementation of the DeepSeek V4 / V4.1 compressor ops (ops::compressor_clamp_block_table,
// ops::compressor_ring_slot_mapping): one thread per table entry / per token.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void clamp_block_table_kernel(int32_t* __restrict__ table, int64_t rows, int64_t cols,
                                         int64_t stride) {
  const int64_t n = rows * cols;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int32_t* e = table + (i / cols) * stride + i % cols;
    if (*e < 0) *e = 0;
  }
}

__global__ void ring_slot_mapping_kernel(const int32_t* __restrict__ token_to_req,
                                         const int32_t* __restrict__ table, int64_t stride,
                                         const int64_t* __restrict__ positions, int64_t actual,
                                         int64_t tokens, int32_t capacity,
                                         int64_t* __restrict__ out) {
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < tokens;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t block = t < actual ? table[token_to_req[t] * stride] : 0;
    out[t] = block != 0 ? block * capacity + positions[t] % capacity : -1;
  }
}

}  // namespace

int compressor_clamp_block_table(int device_id, void* stream, int32_t* block_table, int64_t rows,
                                 int64_t cols, int64_t stride) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  clamp_block_table_kernel<<<grid_for(rows * cols), kThreads, 0,
                             static_cast<cudaStream_t>(stream)>>>(block_table, rows, cols, stride);
  return cudaGetLastError();
}

int compressor_ring_slot_mapping(int device_id, void* stream, const int32_t* token_to_req,
                                 const int32_t* block_table, int64_t stride,
                                 const int64_t* positions, int64_t num_actual_tokens,
                                 int64_t num_tokens, int32_t capacity, int64_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  ring_slot_mapping_kernel<<<grid_for(num_tokens), kThreads, 0,
                             static_cast<cudaStream_t>(stream)>>>(
      token_to_req, block_table, stride, positions, num_actual_tokens, num_tokens, capacity, out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
