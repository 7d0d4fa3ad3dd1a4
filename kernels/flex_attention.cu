// CUDA implementations of FLEX_ATTENTION's per-request and per-token arrays
// (ops::flex_request_lens, ops::flex_doc_ids, ops::flex_physical_to_logical).
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void request_lens_kernel(const int32_t* __restrict__ qsl,
                                    const int32_t* __restrict__ seq_lens, int64_t n,
                                    int32_t block_size, int32_t* __restrict__ blocks,
                                    int32_t* __restrict__ offset) {
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < n;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    blocks[r] = (seq_lens[r] + block_size - 1) / block_size;
    offset[r] = seq_lens[r] - (qsl[r + 1] - qsl[r]);
  }
}

// One block per request writes its tokens.
__global__ void doc_ids_kernel(const int32_t* __restrict__ qsl, int64_t n, int64_t num_tokens,
                               int32_t* __restrict__ doc) {
  for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
    // Bounded by num_tokens (the host's count): device offsets cannot write out of bounds.
    const int64_t begin = qsl[r] < 0 ? 0 : qsl[r];
    const int64_t end = qsl[r + 1] < num_tokens ? qsl[r + 1] : num_tokens;
    for (int64_t t = begin + threadIdx.x; t < end; t += blockDim.x) doc[t] = static_cast<int32_t>(r);
  }
}

// One block per request: fill its row with -1, then scatter-max its logical block indices.
__global__ void p2l_kernel(const int32_t* __restrict__ bt, int64_t n, int64_t bt_stride,
                           int64_t width, const int32_t* __restrict__ seq_lens,
                           int32_t block_size, int64_t num_gpu_blocks,
                           unsigned long long* __restrict__ out, int64_t out_stride) {
  for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
    unsigned long long* row = out + r * out_stride;
    // -1 as an unsigned 64-bit value is the largest; keep "max of j" as max over signed values by
    // storing j + 1 (0 = none) in a first pass, then converting.
    for (int64_t k = threadIdx.x; k < num_gpu_blocks; k += blockDim.x) row[k] = 0;
    __syncthreads();
    int64_t blocks = (static_cast<int64_t>(seq_lens[r]) + block_size - 1) / block_size;
    if (blocks > width) blocks = width;
    for (int64_t j = threadIdx.x; j < blocks; j += blockDim.x) {
      const int64_t phys = bt[r * bt_stride + j];
      if (phys >= 0 && phys < num_gpu_blocks) atomicMax(&row[phys], static_cast<unsigned long long>(j + 1));
    }
    __syncthreads();
    for (int64_t k = threadIdx.x; k < num_gpu_blocks; k += blockDim.x)
      row[k] = k == 0 ? static_cast<unsigned long long>(-1LL)
                      : static_cast<unsigned long long>(static_cast<long long>(row[k]) - 1);
    __syncthreads();
  }
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>(n < 1 ? 1 : (n > 4096 ? 4096 : n)); }

}  // namespace

int flex_request_lens(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                      int64_t num_reqs, int32_t block_size, int32_t* num_blocks_per_seq,
                      int32_t* decode_offset) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  request_lens_kernel<<<grid_for(num_reqs), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, seq_lens, num_reqs, block_size, num_blocks_per_seq, decode_offset);
  return cudaGetLastError();
}

int flex_doc_ids(int device_id, void* stream, const int32_t* qsl, int64_t num_reqs,
                 int64_t num_tokens, int32_t* doc_ids) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  if (num_reqs == 0) return cudaSuccess;
  doc_ids_kernel<<<blocks_for(num_reqs), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, num_reqs, num_tokens, doc_ids);
  return cudaGetLastError();
}

int flex_physical_to_logical(int device_id, void* stream, const int32_t* bt, int64_t num_reqs,
                             int64_t bt_stride, int64_t width, const int32_t* seq_lens,
                             int32_t block_size, int64_t num_gpu_blocks, int64_t* out,
                             int64_t out_stride) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  if (num_reqs == 0) return cudaSuccess;
  p2l_kernel<<<blocks_for(num_reqs), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      bt, num_reqs, bt_stride, width, seq_lens, block_size, num_gpu_blocks,
      reinterpret_cast<unsigned long long*>(out), out_stride);
  return cudaGetLastError();
}

}  // namespace attn::kernels
