// CUDA implementation of ops::xqa_draft_mask: one block per request, threads over its rows' words.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__global__ void xqa_draft_mask_kernel(const int32_t* __restrict__ qsl, int32_t num_packed,
                                      bool causal, uint32_t* __restrict__ out) {
  const int64_t r = blockIdx.x;
  const int64_t start = qsl[r] - qsl[0];
  const int64_t len = qsl[r + 1] - qsl[r];
  const int64_t words = len * num_packed;
  for (int64_t k = threadIdx.x; k < words; k += blockDim.x) {
    const int64_t q = k / num_packed;
    const int64_t w = k % num_packed;
    uint32_t word = 0;
    for (int32_t j = 0; j < 32; ++j) {
      const int64_t kv = w * 32 + j;
      if (kv < len && (!causal || kv <= q)) word |= 1u << j;
    }
    out[(start + q) * num_packed + w] = word;
  }
}

}  // namespace

int xqa_draft_mask(int device_id, void* stream, const int32_t* query_start_loc, int64_t num_reqs,
                   int32_t num_packed, bool causal, uint32_t* out) noexcept {
  if (num_reqs <= 0 || num_packed <= 0) return cudaSuccess;
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  xqa_draft_mask_kernel<<<static_cast<unsigned>(num_reqs), 128, 0,
                          static_cast<cudaStream_t>(stream)>>>(query_start_loc, num_packed, causal,
                                                               out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
