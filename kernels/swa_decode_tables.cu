// CUDA implementation of ops::swa_decode_tables: a thread per (decode, window block) entry of
// the trimmed table; the entry j == 0 of a row also writes its rebased length.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void swa_decode_tables_kernel(const int32_t* __restrict__ block_table,
                                         int64_t bt_row_stride, int64_t bt_width,
                                         const int32_t* __restrict__ seq_lens, int64_t num_decodes,
                                         int32_t window, int32_t block_size,
                                         int64_t num_window_blocks,
                                         int32_t* __restrict__ swa_block_table,
                                         int32_t* __restrict__ swa_seq_lens) {
  const int64_t n = num_decodes * num_window_blocks;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / num_window_blocks, j = i % num_window_blocks;
    const int64_t len = seq_lens[r];
    const int64_t first = (len - window > 0 ? len - window : 0) / block_size;
    const int64_t col = first + j < bt_width - 1 ? first + j : bt_width - 1;
    swa_block_table[i] = block_table[r * bt_row_stride + col];
    if (j == 0) swa_seq_lens[r] = static_cast<int32_t>(len - first * block_size);
  }
}

}  // namespace

int swa_decode_tables(int device_id, void* stream, const int32_t* block_table,
                      int64_t bt_row_stride, int64_t bt_width, const int32_t* seq_lens,
                      int64_t num_decodes, int32_t window, int32_t block_size,
                      int64_t num_window_blocks, int32_t* swa_block_table,
                      int32_t* swa_seq_lens) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  swa_decode_tables_kernel<<<grid_for(num_decodes * num_window_blocks), kThreads, 0,
                             static_cast<cudaStream_t>(stream)>>>(
      block_table, bt_row_stride, bt_width, seq_lens, num_decodes, window, block_size,
      num_window_blocks, swa_block_table, swa_seq_lens);
  return cudaGetLastError();
}

}  // namespace attn::kernels
