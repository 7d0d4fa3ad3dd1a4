// CudaPar: the executor of kernels/par.h on a CUDA stream (nvcc only). Each primitive is one
// launch on the stream and nothing else: no allocation, no synchronization, so a build is
// capturable into a CUDA graph. The kernels are written here (a grid-stride loop; a block per
// row with CUB's BlockScan for the lanes' sums; one block with BlockScan for a scan; one thread),
// not taken from Thrust or device-wide CUB: those need temporary storage or synchronize unless
// carefully configured, cost ~7 s of nvcc time per file that includes them (for_each_n,
// measured), and the simulated device could not check them (docs/architecture.md).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "par.h"

namespace attn::kernels {

namespace par_detail {

constexpr int kScanThreads = 1024;
constexpr int kForEachThreads = 256;
constexpr int64_t kMaxGrid = 65535;

inline unsigned grid_of(int64_t items, int64_t per_block) {
  const int64_t blocks = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks < kMaxGrid ? blocks : kMaxGrid));
}

template <class F>
__global__ void __launch_bounds__(kForEachThreads) for_each_kernel(int64_t n, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    f(i);
}

template <class F>
__global__ void __launch_bounds__(kRowLanes) rows_kernel(int64_t rows, F f) {
  __shared__ typename RowScan::TempStorage storage;
  const Lanes lanes(&storage);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    f(r, lanes);
    __syncthreads();  // a row's shared state is done before the block takes the next row
  }
}

template <class V, class W>
__global__ void __launch_bounds__(kScanThreads) scan_kernel(int64_t n, V value, W write) {
  using Scan = cub::BlockScan<int64_t, kScanThreads>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int64_t carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int64_t base = 0; base < n; base += kScanThreads) {
    const int64_t i = base + threadIdx.x;
    int64_t sum = 0, tile = 0;
    Scan(storage).InclusiveSum(i < n ? value(i) : int64_t{0}, sum, tile);
    if (i < n) write(i, carry + sum);
    __syncthreads();
    if (threadIdx.x == 0) carry += tile;
    __syncthreads();
  }
}

template <class F>
__global__ void single_kernel(F f) {
  f();
}

}  // namespace par_detail

/// Runs the primitives on `stream` of the current device (src/ops/launch.h makes the op's
/// device current). Every launch's status is kept: status() is the first error (0 = none).
class CudaPar {
 public:
  static constexpr bool kOnDevice = true;

  CudaPar(void* stream, const char* op) : stream_(static_cast<cudaStream_t>(stream)) { (void)op; }

  template <class F>
  void for_each(int64_t n, F f) {
    if (n <= 0 || status_ != cudaSuccess) return;
    par_detail::for_each_kernel<<<par_detail::grid_of(n, par_detail::kForEachThreads),
                                  par_detail::kForEachThreads, 0, stream_>>>(n, f);
    note(cudaGetLastError());
  }
  template <class F>
  void for_each_row(int64_t rows, F f) {
    if (rows <= 0 || status_ != cudaSuccess) return;
    par_detail::rows_kernel<<<par_detail::grid_of(rows, 1), kRowLanes, 0, stream_>>>(rows, f);
    note(cudaGetLastError());
  }
  template <class V, class W>
  void scan(int64_t n, V value, W write) {
    if (n <= 0 || status_ != cudaSuccess) return;
    par_detail::scan_kernel<<<1, par_detail::kScanThreads, 0, stream_>>>(n, value, write);
    note(cudaGetLastError());
  }
  template <class F>
  void single(F f) {
    if (status_ != cudaSuccess) return;
    par_detail::single_kernel<<<1, 1, 0, stream_>>>(f);
    note(cudaGetLastError());
  }
  void upload(void* dst, const void* src, size_t bytes) {
    if (bytes == 0 || status_ != cudaSuccess) return;
    note(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  }

  int status() const { return status_; }

 private:
  void note(cudaError_t st) {
    if (status_ == cudaSuccess) status_ = st;
  }
  cudaStream_t stream_;
  cudaError_t status_ = cudaSuccess;
};

using DevicePar = CudaPar;

}  // namespace attn::kernels
