// CUDA implementation of ops::ragged_from_dense: one block per row counts the entries it keeps
// (a block reduction) into indptr[r + 1], one block scans indptr[1..rows] in place tile by tile,
// and one block per row writes its kept entries in order (a block scan of the keep flags per
// tile of the row).
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;

__device__ inline int64_t kept_width(const int32_t* lengths, int64_t r, int64_t width) {
  const int64_t len = lengths[r] < 0 ? 0 : lengths[r];
  return len < width ? len : width;
}

__global__ void __launch_bounds__(kBlock)
    count_kernel(const int32_t* __restrict__ indices, int64_t rows, int64_t width,
                 int64_t row_stride, const int32_t* __restrict__ lengths,
                 int32_t* __restrict__ indptr) {
  using Reduce = cub::BlockReduce<int32_t, kBlock>;
  __shared__ typename Reduce::TempStorage storage;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t* row = indices + r * row_stride;
    const int64_t n = kept_width(lengths, r, width);
    int32_t mine = 0;
    for (int64_t j = threadIdx.x; j < n; j += kBlock) mine += row[j] >= 0 ? 1 : 0;
    const int32_t total = Reduce(storage).Sum(mine);
    if (threadIdx.x == 0) indptr[r + 1] = total;
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kBlock) scan_kernel(int64_t rows, int32_t* __restrict__ indptr) {
  using Scan = cub::BlockScan<int32_t, kBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int32_t carry;
  if (threadIdx.x == 0) {
    carry = 0;
    indptr[0] = 0;
  }
  __syncthreads();
  for (int64_t base = 0; base < rows; base += kBlock) {
    const int64_t r = base + threadIdx.x;
    const int32_t mine = r < rows ? indptr[r + 1] : 0;
    int32_t sum, tile_total;
    Scan(storage).InclusiveSum(mine, sum, tile_total);
    if (r < rows) indptr[r + 1] = sum + carry;
    __syncthreads();
    if (threadIdx.x == 0) carry += tile_total;
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kBlock)
    compact_kernel(const int32_t* __restrict__ indices, int64_t rows, int64_t width,
                   int64_t row_stride, const int32_t* __restrict__ lengths,
                   const int32_t* __restrict__ indptr, int32_t* __restrict__ out) {
  using Scan = cub::BlockScan<int32_t, kBlock>;
  __shared__ typename Scan::TempStorage storage;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t* row = indices + r * row_stride;
    const int64_t n = kept_width(lengths, r, width);
    int64_t written = indptr[r];
    for (int64_t base = 0; base < n; base += kBlock) {
      const int64_t j = base + threadIdx.x;
      const int32_t v = j < n ? row[j] : -1;
      const int32_t keep = v >= 0 ? 1 : 0;
      int32_t rank, tile_total;
      Scan(storage).ExclusiveSum(keep, rank, tile_total);
      if (keep) out[written + rank] = v;
      written += tile_total;
      __syncthreads();  // the scan's storage is reused by the next tile
    }
  }
}

unsigned row_grid(int64_t rows) {
  return static_cast<unsigned>(rows < 1 ? 1 : (rows < 65535 ? rows : 65535));
}

}  // namespace

int ragged_from_dense(int device_id, void* stream, const int32_t* indices, int64_t rows,
                      int64_t width, int64_t row_stride, const int32_t* lengths, int32_t* indptr,
                      int32_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (rows > 0) {
    count_kernel<<<row_grid(rows), kBlock, 0, s>>>(indices, rows, width, row_stride, lengths,
                                                   indptr);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  scan_kernel<<<1, kBlock, 0, s>>>(rows, indptr);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || rows == 0) return e;
  compact_kernel<<<row_grid(rows), kBlock, 0, s>>>(indices, rows, width, row_stride, lengths,
                                                   indptr, out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
