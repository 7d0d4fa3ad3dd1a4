// CUDA implementation of ops::cross_attention_slot_mapping: one block scans the written
// encoder lengths (requests on their first step) tile by tile, then the whole block writes each
// request's slots.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock)
cross_slots_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ seq_lens,
                   const int32_t* __restrict__ enc, int64_t n,
                   const int32_t* __restrict__ block_table, int64_t bt_stride, int64_t width,
                   int32_t block_size, int64_t* __restrict__ out, int64_t total) {
  using Scan = cub::BlockScan<int64_t, kBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int64_t first[kBlock];
  __shared__ int64_t len[kBlock];
  __shared__ int64_t carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t r = base + threadIdx.x;
    int64_t mine = 0;
    if (r < n && seq_lens[r] - (qsl[r + 1] - qsl[r]) <= 0) mine = enc[r];
    int64_t start, tile_total;
    Scan(storage).ExclusiveSum(mine, start, tile_total);
    first[threadIdx.x] = start + carry;
    len[threadIdx.x] = mine;
    __syncthreads();
    const int64_t tile = n - base < kBlock ? n - base : kBlock;
    for (int64_t k = 0; k < tile; ++k) {
      const int32_t* row = block_table + (base + k) * bt_stride;
      for (int64_t i = threadIdx.x; i < len[k]; i += kBlock) {
        const int64_t dst = first[k] + i;
        if (dst < total)
          out[dst] = i / block_size < width
                         ? static_cast<int64_t>(row[i / block_size]) * block_size + i % block_size
                         : -1;
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) carry += tile_total;
    __syncthreads();
  }
}

}  // namespace

int cross_attention_slot_mapping(int device_id, void* stream, const int32_t* qsl,
                                 const int32_t* seq_lens, const int32_t* encoder_seq_lens,
                                 int64_t num_reqs, const int32_t* block_table,
                                 int64_t bt_stride, int64_t width, int32_t block_size,
                                 int64_t* out, int64_t total) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  if (num_reqs == 0) return cudaSuccess;
  cross_slots_kernel<<<1, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, seq_lens, encoder_seq_lens, num_reqs, block_table, bt_stride, width, block_size, out,
      total);
  return cudaGetLastError();
}

}  // namespace attn::kernels
