// CUDA implementation of DEEPSEEK_SPARSE_SWA's ops (ops::sparse_swa_valid_tokens,
// ops::sparse_swa_indices, ops::sparse_swa_prefill_gather_lens,
// ops::sparse_swa_flashinfer_decode_lens): one thread per token, one block per index row, one
// thread per prefill, one thread per decode token.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

constexpr int kBlock = kThreads;

__global__ void __launch_bounds__(kBlock)
    valid_kernel(const void* __restrict__ slots, bool is64, int64_t n, uint8_t* __restrict__ out) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * kBlock) {
    const int64_t s = is64 ? static_cast<const int64_t*>(slots)[t]
                           : static_cast<const int32_t*>(slots)[t];
    out[t] = s >= 0 ? 1 : 0;
  }
}

__global__ void __launch_bounds__(kBlock)
    indices_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ seq_lens,
                   const int32_t* __restrict__ t2r, const uint8_t* __restrict__ valid,
                   const int32_t* __restrict__ bt, const int32_t* __restrict__ replay,
                   SwaIndicesParams p, int32_t* __restrict__ indices,
                   int32_t* __restrict__ lens) {
  for (int64_t i = blockIdx.x; i < p.num_tokens; i += gridDim.x) {
    const int64_t t = p.token_offset + i;
    int32_t* row = indices + i * p.index_width;
    int64_t len = 0, start = 0, r = 0;
    if (valid[t] && t2r[t] >= 0) {
      r = t2r[t];
      const int64_t prefix = static_cast<int64_t>(seq_lens[r]) - (qsl[r + 1] - qsl[r]);
      const int64_t pos = prefix + t - qsl[r];
      if (p.noncausal) {  // DSpark: the window before the block and the whole block
        start = prefix - p.window_size;
        if (start < 0) start = 0;
        len = seq_lens[r] - start;
      } else {
        start = pos - (p.window_size - 1);
        if (start < 0) start = 0;
        if (start < replay[r]) start = replay[r];
        len = pos + 1 - start;
      }
    }
    if (threadIdx.x == 0) lens[i] = static_cast<int32_t>(len);
    for (int64_t j = threadIdx.x; j < p.index_width; j += kBlock) {
      const int64_t at = start + j, cell = r * p.block_table_stride + at / p.block_size;
      row[j] = j < len && cell < p.block_table_extent
                   ? static_cast<int32_t>(static_cast<uint32_t>(bt[cell]) *
                                              static_cast<uint32_t>(p.block_size) +
                                          static_cast<uint32_t>(at % p.block_size))
                   : -1;
    }
  }
}

__global__ void __launch_bounds__(kBlock)
    gather_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ seq_lens,
                  const int32_t* __restrict__ replay, int64_t nd, int64_t np, int32_t window,
                  int32_t* __restrict__ out) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; k < np;
       k += static_cast<int64_t>(gridDim.x) * kBlock) {
    const int64_t r = nd + k;
    const int64_t q = qsl[r + 1] - qsl[r];
    int64_t visible = seq_lens[r] - q - replay[r];
    if (visible < 0) visible = 0;
    out[k] = static_cast<int32_t>(q + (visible < window - 1 ? visible : window - 1));
  }
}

__global__ void __launch_bounds__(kBlock)
    flashinfer_lens_kernel(const int32_t* __restrict__ swa_lens,
                           const int32_t* __restrict__ seq_lens, const int32_t* __restrict__ t2r,
                           int64_t n, int32_t window, int32_t* __restrict__ topk,
                           int32_t* __restrict__ seq) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * kBlock) {
    topk[t] = swa_lens[t] > window ? swa_lens[t] : window;
    seq[t] = seq_lens[t2r[t]];
  }
}

}  // namespace

int sparse_swa_valid_tokens(int device_id, void* stream, const void* slot_mapping,
                            bool slots_int64, int64_t n, uint8_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  valid_kernel<<<grid_for(n), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      slot_mapping, slots_int64, n, out);
  return cudaGetLastError();
}

int sparse_swa_indices(int device_id, void* stream, const int32_t* query_start_loc,
                       const int32_t* seq_lens, const int32_t* token_to_req,
                       const uint8_t* is_valid, const int32_t* block_table,
                       const int32_t* replay_start, const SwaIndicesParams& params,
                       int32_t* indices, int32_t* lens) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  const int64_t rows = params.num_tokens;
  const unsigned grid = static_cast<unsigned>(rows < 65535 ? (rows < 1 ? 1 : rows) : 65535);
  indices_kernel<<<grid, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      query_start_loc, seq_lens, token_to_req, is_valid, block_table, replay_start, params,
      indices, lens);
  return cudaGetLastError();
}

int sparse_swa_prefill_gather_lens(int device_id, void* stream, const int32_t* query_start_loc,
                                   const int32_t* seq_lens, const int32_t* replay_start,
                                   int64_t num_decodes, int64_t num_prefills,
                                   int32_t window_size, int32_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  gather_kernel<<<grid_for(num_prefills), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      query_start_loc, seq_lens, replay_start, num_decodes, num_prefills, window_size, out);
  return cudaGetLastError();
}

int sparse_swa_flashinfer_decode_lens(int device_id, void* stream, const int32_t* decode_swa_lens,
                                      const int32_t* seq_lens, const int32_t* token_to_req,
                                      int64_t n, int32_t window_size, int32_t* topk_lens,
                                      int32_t* decode_seq_lens) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  flashinfer_lens_kernel<<<grid_for(n), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      decode_swa_lens, seq_lens, token_to_req, n, window_size, topk_lens, decode_seq_lens);
  return cudaGetLastError();
}

}  // namespace attn::kernels
