// CUDA implementations of AMX_MLA's ops (src/ops/cpu_mla_ops.h): one grid-stride launch each.
#include <cuda_runtime.h>

#include "cpu_mla_kernels.h"
#include "device_guard.cuh"
#include "launch.cuh"

namespace attn::kernels {
namespace {

#define ATTN_GRID_STRIDE(i, n)                                                      \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <class T>
__global__ void expand_kernel(const int32_t* __restrict__ bt, int64_t stride, int64_t rows,
                              int64_t cols, int32_t bs, T* __restrict__ out) {
  ATTN_GRID_STRIDE(i, rows * cols * bs) {
    const int64_t o = i % bs, rc = i / bs, j = rc % cols, r = rc / cols;
    // int32 arithmetic as torch's (wrapping, through uint32), then widened: the host op's
    out[i] = static_cast<T>(static_cast<int32_t>(static_cast<uint32_t>(bt[r * stride + j]) *
                                                     static_cast<uint32_t>(bs) +
                                                 static_cast<uint32_t>(o)));
  }
}

__global__ void iota_kernel(int64_t* __restrict__ out, int64_t n) {
  ATTN_GRID_STRIDE(i, n) out[i] = i;
}

__global__ void extend_kernel(const int32_t* __restrict__ qsl, int64_t n,
                              int64_t* __restrict__ lens, int64_t* __restrict__ starts) {
  ATTN_GRID_STRIDE(i, n) {
    lens[i] = static_cast<int64_t>(qsl[i + 1]) - qsl[i];
    starts[i] = qsl[i];
  }
}

#undef ATTN_GRID_STRIDE

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

template <class T>
int expand(int device_id, void* stream, const int32_t* bt, int64_t stride, int64_t rows,
           int64_t cols, int32_t bs, T* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  expand_kernel<T><<<grid_for(rows * cols * bs), kThreads, 0, as_stream(stream)>>>(
      bt, stride, rows, cols, bs, out);
  return cudaGetLastError();
}

}  // namespace

int expand_block_table_i32(int device_id, void* stream, const int32_t* bt, int64_t stride,
                           int64_t rows, int64_t cols, int32_t bs, int32_t* out) noexcept {
  return expand(device_id, stream, bt, stride, rows, cols, bs, out);
}

int expand_block_table_i64(int device_id, void* stream, const int32_t* bt, int64_t stride,
                           int64_t rows, int64_t cols, int32_t bs, int64_t* out) noexcept {
  return expand(device_id, stream, bt, stride, rows, cols, bs, out);
}

int iota_i64(int device_id, void* stream, int64_t* out, int64_t n) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  iota_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(out, n);
  return cudaGetLastError();
}

int extend_lens_i64(int device_id, void* stream, const int32_t* qsl, int64_t n, int64_t* lens,
                    int64_t* starts) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  extend_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(qsl, n, lens, starts);
  return cudaGetLastError();
}

}  // namespace attn::kernels
