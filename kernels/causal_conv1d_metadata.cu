// CUDA implementation of ops::causal_conv1d_metadata: a single block scans the programs per
// request (cdiv(seqlen, 8)) tile by tile and writes batch_ptr / token_chunk_offset_ptr, then
// pads the rest with PAD_SLOT_ID.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 1024;

__global__ void __launch_bounds__(kBlock)
conv1d_kernel(const int32_t* __restrict__ qsl, int64_t n, int64_t num_programs,
              int32_t* __restrict__ batch_ptr, int32_t* __restrict__ offsets) {
  using Scan = cub::BlockScan<int64_t, kBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int64_t carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t r = base + threadIdx.x;
    int64_t nums = r < n ? (static_cast<int64_t>(qsl[r + 1]) - qsl[r] + 7) / 8 : 0;
    if (nums < 0) nums = 0;  // device offsets that disagree with the validated host copy
    int64_t first, tile_total;
    Scan(storage).ExclusiveSum(nums, first, tile_total);
    first += carry;
    for (int64_t k = 0; k < nums && first + k < num_programs; ++k) {  // never past the buffers
      batch_ptr[first + k] = static_cast<int32_t>(r);
      offsets[first + k] = static_cast<int32_t>(k);
    }
    __syncthreads();
    if (threadIdx.x == 0) carry += tile_total;
    __syncthreads();
  }
  for (int64_t p = carry + threadIdx.x; p < num_programs; p += kBlock) batch_ptr[p] = offsets[p] = -1;
}

}  // namespace

int causal_conv1d_metadata(int device_id, void* stream, const int32_t* qsl_p,
                           int64_t num_prefills, int64_t num_programs, int32_t* batch_ptr,
                           int32_t* token_chunk_offset_ptr) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  conv1d_kernel<<<1, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl_p, num_prefills, num_programs, batch_ptr, token_chunk_offset_ptr);
  return cudaGetLastError();
}

}  // namespace attn::kernels
