// CUDA implementations of the state-space variants' small ops (KIMI_K3_KDA's computed-token
// counts and int64 query_start_loc, BAILING_LINEAR_ATTN's padded-decode staging): one
// grid-stride launch each.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "launch.cuh"
#include "state_space_kernels.h"

namespace attn::kernels {
namespace {

#define ATTN_GRID_STRIDE(i, n)                                                      \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void computed_tokens_kernel(const int32_t* __restrict__ qsl,
                                       const int32_t* __restrict__ seq_lens, int64_t n,
                                       int32_t* __restrict__ out) {
  ATTN_GRID_STRIDE(i, n) out[i] = seq_lens[i] - (qsl[i + 1] - qsl[i]);
}

__global__ void widen_kernel(const int32_t* __restrict__ in, int64_t n, int64_t* __restrict__ out) {
  ATTN_GRID_STRIDE(i, n) out[i] = in[i];
}

__global__ void mask_padded_kernel(const int32_t* __restrict__ src, int64_t src_stride,
                                   int64_t rows, int64_t cols,
                                   const int32_t* __restrict__ seq_lens, int32_t pad,
                                   int32_t* __restrict__ dst, int64_t dst_stride,
                                   int64_t total_rows) {
  ATTN_GRID_STRIDE(i, total_rows * cols) {
    const int64_t r = i / cols, j = i % cols;
    dst[r * dst_stride + j] = r < rows && seq_lens[r] != 0 ? src[r * src_stride + j] : pad;
  }
}

#undef ATTN_GRID_STRIDE

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

int num_computed_tokens_i32(int device_id, void* stream, const int32_t* qsl,
                            const int32_t* seq_lens, int64_t num_reqs, int32_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  computed_tokens_kernel<<<grid_for(num_reqs), kThreads, 0, as_stream(stream)>>>(qsl, seq_lens,
                                                                                 num_reqs, out);
  return cudaGetLastError();
}

int widen_i32_i64(int device_id, void* stream, const int32_t* in, int64_t n,
                  int64_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  widen_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(in, n, out);
  return cudaGetLastError();
}

int mask_padded_rows_i32(int device_id, void* stream, const int32_t* src, int64_t src_stride,
                         int64_t rows, int64_t cols, const int32_t* seq_lens, int32_t pad,
                         int32_t* dst, int64_t dst_stride, int64_t total_rows) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  mask_padded_kernel<<<grid_for(total_rows * cols), kThreads, 0, as_stream(stream)>>>(
      src, src_stride, rows, cols, seq_lens, pad, dst, dst_stride, total_rows);
  return cudaGetLastError();
}

}  // namespace attn::kernels
