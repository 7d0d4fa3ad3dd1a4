// CUDA implementations of ops::static_sink_seq_lens, static_sink_prefix and
// static_sink_block_table (vLLM 0.33's StaticSinkAttentionBuilder): one grid-stride launch each.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void sink_seq_lens_kernel(const int32_t* __restrict__ in, int64_t n, int32_t sink,
                                     int32_t* __restrict__ out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = in[i] == 0 ? 0 : in[i] + sink;
}

__global__ void sink_prefix_kernel(int32_t* __restrict__ table, int64_t rows, int64_t stride,
                                   int64_t nsb) {
  const int64_t n = rows * nsb;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    table[(i / nsb) * stride + i % nsb] = static_cast<int32_t>(i % nsb + 1);
}

__global__ void sink_table_kernel(const int32_t* __restrict__ in, int64_t in_stride,
                                  int64_t in_col_stride, int64_t rows, int64_t cols, int64_t nsb,
                                  int32_t* __restrict__ out, int64_t out_stride) {
  const int64_t n = rows * cols;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, j = i % cols;
    out[r * out_stride + nsb + j] = in[r * in_stride + j * in_col_stride];
  }
}

}  // namespace

int static_sink_seq_lens(int device_id, void* stream, const int32_t* seq_lens, int64_t n,
                         int32_t sink_len, int32_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  sink_seq_lens_kernel<<<grid_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      seq_lens, n, sink_len, out);
  return cudaGetLastError();
}

int static_sink_prefix(int device_id, void* stream, int32_t* table, int64_t rows, int64_t stride,
                       int64_t num_sink_blocks) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  sink_prefix_kernel<<<grid_for(rows * num_sink_blocks), kThreads, 0,
                       static_cast<cudaStream_t>(stream)>>>(table, rows, stride, num_sink_blocks);
  return cudaGetLastError();
}

int static_sink_block_table(int device_id, void* stream, const int32_t* block_table,
                            int64_t bt_stride, int64_t bt_col_stride, int64_t rows, int64_t cols,
                            int64_t num_sink_blocks, int32_t* out, int64_t out_stride) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  sink_table_kernel<<<grid_for(rows * cols), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      block_table, bt_stride, bt_col_stride, rows, cols, num_sink_blocks, out, out_stride);
  return cudaGetLastError();
}

}  // namespace attn::kernels
