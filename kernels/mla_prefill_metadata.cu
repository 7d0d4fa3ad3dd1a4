// CUDA implementation of ops::mla_prefill_metadata in one launch: the prefills' rebased
// query_start_loc and their query lengths.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    mla_prefill_kernel(const int32_t* __restrict__ qsl, int64_t P, int32_t* __restrict__ qsl_out,
                       int32_t* __restrict__ qlens) {
  const int32_t base = qsl[0];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; i <= P;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    if (qsl_out) qsl_out[i] = qsl[i] - base;
    if (qlens && i < P) qlens[i] = qsl[i + 1] - qsl[i];
  }
}

}  // namespace

int mla_prefill_metadata(int device_id, void* stream, const int32_t* qsl, int64_t num_prefills,
                         const MlaPrefillOut& out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  const int64_t blocks = (num_prefills + kBlock) / kBlock;  // P + 1 entries
  mla_prefill_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kBlock, 0,
                       static_cast<cudaStream_t>(stream)>>>(qsl, num_prefills, out.query_start_loc,
                                                            out.query_seq_lens);
  return cudaGetLastError();
}

}  // namespace attn::kernels
