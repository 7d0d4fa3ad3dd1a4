// CUDA implementation of FLEX_ATTENTION's per-request arrays (ops::flex_request_arrays): one
// launch, one block per request, writes the request's num_blocks_per_seq and decode_offset, its
// doc ids and its row of the inverse block table (physical_to_logical).
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;

// One block per request r (grid-stride over requests):
//  1. thread 0 writes num_blocks_per_seq[r], decode_offset[r] and the persistent copies of
//     query_start_loc[r] (and [n] for the last request) and seq_lens[r];
//  2. the block writes doc_ids over the request's tokens, bounded by num_tokens (the host's
//     count), so device offsets that disagree with the mirrors cannot write out of bounds;
//  3. the block fills its physical_to_logical row: "max of j" is kept as j + 1 in unsigned
//     64-bit (0 = none; -1 would be the largest unsigned value) by atomicMax, then converted to
//     j (or -1), column 0 (the null block) -1.
__global__ void request_arrays_kernel(const int32_t* __restrict__ qsl,
                                      const int32_t* __restrict__ seq_lens, int64_t n,
                                      int64_t num_tokens, int32_t block_size,
                                      const int32_t* __restrict__ bt, int64_t bt_stride,
                                      int64_t width, int64_t num_gpu_blocks,
                                      int32_t* __restrict__ blocks_per_seq,
                                      int32_t* __restrict__ offset, int32_t* __restrict__ doc,
                                      unsigned long long* __restrict__ p2l, int64_t p2l_stride,
                                      int32_t* __restrict__ qsl_out,
                                      int32_t* __restrict__ seq_out) {
  for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
    const int32_t len = seq_lens[r];
    const int32_t q0 = qsl[r], q1 = qsl[r + 1];
    if (threadIdx.x == 0) {
      blocks_per_seq[r] = (len + block_size - 1) / block_size;
      offset[r] = len - (q1 - q0);
      qsl_out[r] = q0;
      if (r + 1 == n) qsl_out[n] = q1;
      seq_out[r] = len;
    }
    const int64_t begin = q0 < 0 ? 0 : q0;
    const int64_t end = q1 < num_tokens ? q1 : num_tokens;
    for (int64_t t = begin + threadIdx.x; t < end; t += blockDim.x) doc[t] = static_cast<int32_t>(r);

    unsigned long long* row = p2l + r * p2l_stride;
    for (int64_t k = threadIdx.x; k < num_gpu_blocks; k += blockDim.x) row[k] = 0;
    __syncthreads();
    int64_t blocks = (static_cast<int64_t>(len) + block_size - 1) / block_size;
    if (blocks > width) blocks = width;
    for (int64_t j = threadIdx.x; j < blocks; j += blockDim.x) {
      const int64_t phys = bt[r * bt_stride + j];
      if (phys >= 0 && phys < num_gpu_blocks)
        atomicMax(&row[phys], static_cast<unsigned long long>(j + 1));
    }
    __syncthreads();
    for (int64_t k = threadIdx.x; k < num_gpu_blocks; k += blockDim.x)
      row[k] = k == 0 ? static_cast<unsigned long long>(-1LL)
                      : static_cast<unsigned long long>(static_cast<long long>(row[k]) - 1);
    __syncthreads();  // the next request of this block starts its phases after this row's
  }
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>(n < 1 ? 1 : (n > 4096 ? 4096 : n)); }

}  // namespace

int flex_request_arrays(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                        int64_t num_reqs, int64_t num_tokens, int32_t block_size,
                        const int32_t* bt, int64_t bt_stride, int64_t width,
                        int64_t num_gpu_blocks, int32_t* num_blocks_per_seq,
                        int32_t* decode_offset, int32_t* doc_ids, int64_t* physical_to_logical,
                        int64_t p2l_stride, int32_t* qsl_out, int32_t* seq_lens_out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  if (num_reqs <= 0) return cudaSuccess;  // nothing to write
  request_arrays_kernel<<<blocks_for(num_reqs), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, seq_lens, num_reqs, num_tokens, block_size, bt, bt_stride, width, num_gpu_blocks,
      num_blocks_per_seq, decode_offset, doc_ids,
      reinterpret_cast<unsigned long long*>(physical_to_logical), p2l_stride, qsl_out,
      seq_lens_out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
