// CUDA implementation of DeepSeek V4 sparse MLA's ops (ops::clamp_block_table,
// ops::v4_compressed_slot_mapping, ops::v4_c128a_topk_metadata): one thread per block table
// entry, one block per request (after a fill of -1), one block per C128A row.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

constexpr int kBlock = kThreads;

unsigned rows_grid(int64_t rows) {
  return static_cast<unsigned>(rows < 65535 ? (rows < 1 ? 1 : rows) : 65535);
}

__device__ int64_t slot_at(const void* slots, bool is64, int64_t t) {
  return is64 ? static_cast<const int64_t*>(slots)[t] : static_cast<const int32_t*>(slots)[t];
}

__global__ void __launch_bounds__(kBlock)
    clamp_kernel(int32_t* __restrict__ bt, int64_t rows, int64_t cols, int64_t stride) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; e < rows * cols;
       e += static_cast<int64_t>(gridDim.x) * kBlock) {
    int32_t* cell = bt + (e / cols) * stride + e % cols;
    if (*cell < 0) *cell = 0;
  }
}

__global__ void __launch_bounds__(kBlock) fill_kernel(int64_t* __restrict__ out, int64_t n) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * kBlock)
    out[t] = -1;
}

__global__ void __launch_bounds__(kBlock)
    compressed_slots_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ seq_lens,
                            const void* __restrict__ slots, const int32_t* __restrict__ bt,
                            V4CompressedSlotsParams p, int64_t* __restrict__ out) {
  for (int64_t r = blockIdx.x; r < p.num_reqs; r += gridDim.x) {
    const int64_t start = qsl[r], q = qsl[r + 1] - qsl[r];
    const int64_t first = static_cast<int64_t>(seq_lens[r]) - q;
    for (int64_t i = threadIdx.x; i < q; i += kBlock) {
      const int64_t pos = first + i;
      if ((pos + 1) % p.compress_ratio != 0 || slot_at(slots, p.slots_int64, start + i) == -1)
        continue;
      const int64_t span = static_cast<int64_t>(p.cp_interleave) * p.dcp_world_size;
      const int64_t local = pos / span * p.cp_interleave + pos % p.cp_interleave;
      const int64_t state = local / p.compress_ratio;
      const int64_t cell = r * p.block_table_stride + state / p.num_states;
      out[start + i] = cell < p.block_table_extent
                           ? static_cast<int64_t>(bt[cell]) * p.num_states + state % p.num_states
                           : -1;
    }
  }
}

__global__ void __launch_bounds__(kBlock)
    c128a_kernel(const int64_t* __restrict__ positions, const int32_t* __restrict__ t2r,
                 const int32_t* __restrict__ bt, const void* __restrict__ slots, C128aTopkParams p,
                 int32_t* __restrict__ dec, int32_t* __restrict__ dec_lens,
                 int32_t* __restrict__ pre) {
  for (int64_t t = blockIdx.x; t < p.num_decode_tokens + p.num_prefill_tokens; t += gridDim.x) {
    int64_t n = (positions[t] + 1) / p.compress_ratio;
    if (n > p.width) n = p.width;
    if (t < p.num_decode_tokens) {
      int32_t* row = dec + t * p.row_stride;
      const int64_t base = static_cast<int64_t>(t2r[t]) * p.block_table_stride;
      for (int64_t j = threadIdx.x; j < p.width; j += kBlock) {
        const int64_t cell = base + j / p.block_size;
        row[j] = j < n && cell >= 0 && cell < p.block_table_extent
                     ? static_cast<int32_t>(static_cast<uint32_t>(bt[cell]) *
                                                static_cast<uint32_t>(p.block_size) +
                                            static_cast<uint32_t>(j % p.block_size))
                     : -1;
      }
      if (threadIdx.x == 0)
        dec_lens[t] =
            slot_at(slots, p.slots_int64, t) >= 0 ? static_cast<int32_t>(n > 0 ? n : 0) : 0;
    } else {
      int32_t* row = pre + (t - p.num_decode_tokens) * p.row_stride;
      for (int64_t j = threadIdx.x; j < p.width; j += kBlock)
        row[j] = j < n ? static_cast<int32_t>(j) : -1;
    }
  }
}

}  // namespace

int clamp_block_table(int device_id, void* stream, int32_t* block_table, int64_t rows, int64_t cols,
                      int64_t stride) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  clamp_kernel<<<grid_for(rows * cols), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      block_table, rows, cols, stride);
  return cudaGetLastError();
}

int v4_compressed_slot_mapping(int device_id, void* stream, const int32_t* query_start_loc,
                               const int32_t* seq_lens, const void* slot_mapping,
                               const int32_t* block_table, const V4CompressedSlotsParams& params,
                               int64_t num_tokens, int64_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (num_tokens > 0) fill_kernel<<<grid_for(num_tokens), kBlock, 0, s>>>(out, num_tokens);
  if (params.num_reqs > 0)
    compressed_slots_kernel<<<rows_grid(params.num_reqs), kBlock, 0, s>>>(
        query_start_loc, seq_lens, slot_mapping, block_table, params, out);
  return cudaGetLastError();
}

int v4_c128a_topk_metadata(int device_id, void* stream, const int64_t* positions,
                           const int32_t* token_to_req, const int32_t* block_table,
                           const void* slot_mapping, const C128aTopkParams& params,
                           int32_t* decode_indices, int32_t* decode_lens,
                           int32_t* prefill_indices) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  c128a_kernel<<<rows_grid(params.num_decode_tokens + params.num_prefill_tokens), kBlock, 0,
                 static_cast<cudaStream_t>(stream)>>>(positions, token_to_req, block_table,
                                                      slot_mapping, params, decode_indices,
                                                      decode_lens, prefill_indices);
  return cudaGetLastError();
}

}  // namespace attn::kernels
