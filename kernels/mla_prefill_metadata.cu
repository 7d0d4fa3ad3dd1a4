// CUDA implementation of ops::mla_prefill_metadata in one launch. Block k builds context chunk k
// (a grid-stride loop over chunks): a block scan of the prefills' chunk lengths gives the row of
// cu_seq_lens (and of padded_local_cu_seq_lens with DCP), then every thread maps token
// positions of the row to their prefill by a binary search in it. Block 0 also writes the
// rebased query_start_loc and the query lengths.
#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;

__device__ __forceinline__ int64_t chunk_len(int64_t c, int64_t k, int64_t m) {
  const int64_t end = c < (k + 1) * m ? c : (k + 1) * m;
  const int64_t len = end - k * m;
  return len > 0 ? len : 0;
}

__global__ void __launch_bounds__(kBlock)
    mla_prefill_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ seq_lens,
                       int64_t P, int64_t C, int64_t m, int64_t l, int32_t dcp, int32_t interleave,
                       int64_t width, int32_t* __restrict__ qsl_out, int32_t* __restrict__ qlens,
                       int32_t* __restrict__ cu, int32_t* __restrict__ starts,
                       int32_t* __restrict__ tts, int32_t* __restrict__ pcu) {
  using Scan = cub::BlockScan<int64_t, kBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int64_t carry, carry_local;
  if (blockIdx.x == 0) {
    const int32_t base = qsl[0];
    for (int64_t i = threadIdx.x; i <= P; i += kBlock) {
      if (qsl_out) qsl_out[i] = qsl[i] - base;
      if (qlens && i < P) qlens[i] = qsl[i + 1] - qsl[i];
    }
  }
  const int64_t virtual_block = static_cast<int64_t>(dcp) * interleave;
  for (int64_t k = blockIdx.x; k < C; k += gridDim.x) {
    if (threadIdx.x == 0) {
      carry = 0;
      carry_local = 0;
      if (cu) cu[k * (P + 1)] = 0;
      if (pcu && dcp > 1) pcu[k * (P + 1)] = 0;
    }
    __syncthreads();
    for (int64_t base = 0; base < P; base += kBlock) {
      const int64_t i = base + threadIdx.x;
      int64_t len = 0, local = 0;
      if (i < P) {
        const int64_t context = static_cast<int64_t>(seq_lens[i]) - (qsl[i + 1] - qsl[i]);
        len = chunk_len(context, k, m);
        if (dcp > 1) {
          const int64_t padded = (context + virtual_block - 1) / virtual_block * interleave;
          local = chunk_len(padded, k, l);
        }
        if (starts) starts[k * P + i] = static_cast<int32_t>(k * (dcp > 1 ? l : m));
      }
      int64_t incl = 0, total = 0, incl_local = 0, total_local = 0;
      Scan(storage).InclusiveSum(len, incl, total);
      __syncthreads();
      Scan(storage).InclusiveSum(local, incl_local, total_local);
      if (i < P) {
        if (cu) cu[k * (P + 1) + i + 1] = static_cast<int32_t>(carry + incl);
        if (pcu && dcp > 1)
          pcu[k * (P + 1) + i + 1] = static_cast<int32_t>(carry_local + incl_local);
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        carry += total;
        carry_local += total_local;
      }
      __syncthreads();
    }
    if (tts && cu) {
      const int32_t* row = cu + k * (P + 1);
      const int64_t total = carry;
      for (int64_t t = threadIdx.x; t < width; t += kBlock) {
        int32_t owner = 0;
        if (t < total) {
          // the number of q in [1, P] with row[q] <= t: the prefill that holds token t
          int64_t lo = 1, hi = P + 1;
          while (lo < hi) {
            const int64_t mid = (lo + hi) / 2;
            if (row[mid] <= t)
              lo = mid + 1;
            else
              hi = mid;
          }
          owner = static_cast<int32_t>(lo - 1);
        }
        tts[k * width + t] = owner;
      }
    }
    __syncthreads();  // carry and the scan storage are reused by the block's next chunk
  }
}

}  // namespace

int mla_prefill_metadata(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                         int64_t num_prefills, const MlaChunkPlan& plan, int32_t dcp_size,
                         int32_t interleave, int64_t token_width,
                         const MlaPrefillOut& out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  const int64_t num_chunks = plan.num_chunks;
  const int64_t blocks = num_chunks < 1 ? 1 : (num_chunks < 65535 ? num_chunks : 65535);
  mla_prefill_kernel<<<static_cast<unsigned>(blocks), kBlock, 0,
                       static_cast<cudaStream_t>(stream)>>>(
      qsl, seq_lens, num_prefills, num_chunks, plan.max_context_chunk, plan.local_chunk, dcp_size,
      interleave, token_width, out.query_start_loc, out.query_seq_lens, out.cu_seq_lens,
      out.starts, out.token_to_seq, out.padded_local_cu_seq_lens);
  return cudaGetLastError();
}

}  // namespace attn::kernels
