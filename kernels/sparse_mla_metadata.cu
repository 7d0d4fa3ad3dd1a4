// CUDA implementation of ops::sparse_mla_fp8_prefill_metadata in one launch: a grid over the
// tokens for the prefill request ids (a binary search over the prefills' query_start_loc), and
// block 0's thread 0 redoing split_prefill_chunks' greedy pass for the workspace starts.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    sparse_mla_fp8_prefill_kernel(const int32_t* __restrict__ pq, const int32_t* __restrict__ lens,
                                  int64_t P, int64_t T, int64_t workspace_size,
                                  int32_t* __restrict__ request_ids,
                                  int32_t* __restrict__ workspace_starts) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    int64_t in_chunk = 0;
    for (int64_t p = 0; p < P; ++p) {
      if (in_chunk + lens[p] > workspace_size) in_chunk = 0;
      workspace_starts[p] = static_cast<int32_t>(in_chunk);
      in_chunk += lens[p];
    }
  }
  for (int64_t t = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; t < T;
       t += static_cast<int64_t>(gridDim.x) * kBlock) {
    // the last prefill p with pq[p] <= t, then t must lie before its end
    int64_t lo = 0, hi = P;  // answer in [lo, hi): first p with pq[p] > t, minus one
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (pq[mid] <= t)
        lo = mid + 1;
      else
        hi = mid;
    }
    const int64_t p = lo - 1;
    request_ids[t] = (p >= 0 && t < pq[p + 1]) ? static_cast<int32_t>(p) : -1;
  }
}

}  // namespace

int sparse_mla_fp8_prefill_metadata(int device_id, void* stream, const int32_t* qsl,
                                    const int32_t* seq_lens, int64_t num_decodes,
                                    int64_t num_prefills, int64_t num_tokens,
                                    int64_t workspace_size, int32_t* request_ids,
                                    int32_t* workspace_starts) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  int64_t blocks = (num_tokens + kBlock - 1) / kBlock;
  if (blocks < 1) blocks = 1;
  sparse_mla_fp8_prefill_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kBlock,
                                  0, static_cast<cudaStream_t>(stream)>>>(
      qsl + num_decodes, seq_lens + num_decodes, num_prefills, num_tokens, workspace_size,
      request_ids, workspace_starts);
  return cudaGetLastError();
}

}  // namespace attn::kernels
