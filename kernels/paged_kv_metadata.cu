// CUDA implementation of ops::paged_kv_metadata in one launch. Block r handles request r: a
// block-wide reduction gives the pages of requests [0, r) (its start in the indices), then it
// writes indptr[r + 1], last_page_len[r] and copies its block-table row. The prefix work is
// O(num_reqs) per block, read from L2; the copy is the bandwidth-bound part.
#include <cub/block/block_reduce.cuh>
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;

// Clamped to [0, width]: device lengths that disagree with the validated host copy stay in bounds.
__device__ __forceinline__ int64_t pages_of(int32_t len, int32_t page_size, int64_t width) {
  const int64_t p = (static_cast<int64_t>(len) + page_size - 1) / page_size;
  return p < 0 ? 0 : (p > width ? width : p);
}

__global__ void __launch_bounds__(kBlock)
paged_kv_kernel(const int32_t* __restrict__ seq_lens, int64_t num_reqs,
                const int32_t* __restrict__ block_table, int64_t stride, int64_t width,
                int32_t page_size, int32_t* __restrict__ indptr, int32_t* __restrict__ indices,
                int64_t capacity, int32_t* __restrict__ last_page_len) {
  using Reduce = cub::BlockReduce<int64_t, kBlock>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ int64_t start;
  for (int64_t r = blockIdx.x; r < num_reqs; r += gridDim.x) {
    int64_t partial = 0;
    for (int64_t i = threadIdx.x; i < r; i += kBlock) partial += pages_of(seq_lens[i], page_size, width);
    const int64_t sum = Reduce(storage).Sum(partial);
    const int32_t len = seq_lens[r];
    const int64_t pages = pages_of(len, page_size, width);
    if (threadIdx.x == 0) {
      start = sum;
      indptr[r + 1] = static_cast<int32_t>(sum + pages);
      const int32_t rem = len % page_size;
      last_page_len[r] = rem == 0 && len != 0 ? page_size : rem;
      if (r == 0) indptr[0] = 0;
    }
    __syncthreads();
    const int32_t* row = block_table + r * stride;
    int32_t* dst = indices + start;
    for (int64_t j = threadIdx.x; j < pages && start + j < capacity; j += kBlock) dst[j] = row[j];
    __syncthreads();  // `start` and `storage` are reused by the next request of this block
  }
}

__global__ void zero_kernel(int32_t* indptr) { indptr[0] = 0; }

}  // namespace

int paged_kv_metadata(int device_id, void* stream, const int32_t* seq_lens, int64_t num_reqs,
                      const int32_t* block_table, int64_t bt_stride, int64_t width,
                      int32_t page_size, int32_t* indptr, int32_t* indices, int64_t capacity,
                      int32_t* last_page_len) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  auto s = static_cast<cudaStream_t>(stream);
  if (num_reqs == 0) {
    zero_kernel<<<1, 1, 0, s>>>(indptr);
    return cudaGetLastError();
  }
  const unsigned blocks = static_cast<unsigned>(num_reqs < 65535 ? num_reqs : 65535);
  paged_kv_kernel<<<blocks, kBlock, 0, s>>>(seq_lens, num_reqs, block_table, bt_stride, width,
                                            page_size, indptr, indices, capacity, last_page_len);
  return cudaGetLastError();
}

}  // namespace attn::kernels
