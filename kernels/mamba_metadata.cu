// CUDA implementations of the Mamba family's ops (src/ops/mamba_metadata.cc): state-index
// gathering ("align" mode), the prefill part (query_start_loc_p, has_initial_states_p), the
// chunked-scan metadata (with MAMBA2's prefill checkpoints), the checkpoints' state indices,
// the persistent
// CUDA-graph copies, arange and diff.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

__device__ inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
__device__ inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

#define ATTN_GRID_STRIDE(i, n)                                                      \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void gather_kernel(const int32_t* __restrict__ bt, int64_t bt_stride, int64_t width,
                              const int32_t* __restrict__ seq_lens, int64_t num_reqs,
                              int32_t block_size, int64_t cols, int32_t* __restrict__ out,
                              int64_t out_stride) {
  ATTN_GRID_STRIDE(i, num_reqs * cols) {
    const int64_t r = i / cols, j = i % cols;
    const int64_t start = max64((static_cast<int64_t>(seq_lens[r]) - 1) / block_size, 0);
    const int64_t col = min64(start + j, width - 1);  // never past the table
    out[r * out_stride + j] = col < 0 ? 0 : bt[r * bt_stride + col];
  }
}

__global__ void prefill_kernel(const int32_t* __restrict__ qsl,
                               const int32_t* __restrict__ seq_lens, int64_t first, int64_t count,
                               int32_t* __restrict__ qsl_p, uint8_t* __restrict__ has_initial) {
  ATTN_GRID_STRIDE(k, count + 1) {
    const int64_t r = first + k;
    if (qsl_p != nullptr) qsl_p[k] = qsl[r] - qsl[first];
    if (has_initial != nullptr && k < count)
      has_initial[k] = seq_lens[r] - (static_cast<int64_t>(qsl[r + 1]) - qsl[r]) > 0 ? 1 : 0;
  }
}

constexpr int kScanBlock = 1024;

/// One segment's chunks (a request, or one side of its checkpoint): an optional partial first
/// chunk (`first_len` tokens) finishing the chunk `computed` left open, then whole ones.
struct SegmentChunks {
  int64_t count;
  int64_t first_len;  // -1 when there is no partial first chunk
};

__device__ inline SegmentChunks segment_chunks(int64_t computed, int64_t tokens, int64_t chunk) {
  SegmentChunks c{0, -1};
  int64_t rest = tokens;
  if (computed % chunk != 0) {
    c.first_len = min64(chunk - computed % chunk, tokens);
    c.count = 1;
    rest -= c.first_len;
  }
  c.count += (rest + chunk - 1) / chunk;
  return c;
}

/// A request's two segments: [0, ckpt) and [ckpt, q) with a checkpoint (vLLM 0.33 forces a
/// chunk end there), else one segment [0, q) (`a.count` 0).
struct RequestChunks {
  SegmentChunks a, b;
  int64_t ckpt;
};

__device__ inline RequestChunks chunks_of(const int32_t* qsl_p, const int32_t* seq_lens_p,
                                          const int32_t* ckpt, int64_t r, int64_t chunk) {
  int64_t q = static_cast<int64_t>(qsl_p[r + 1]) - qsl_p[r];
  if (q < 0) q = 0;  // device offsets that disagree with the validated host copy
  const int64_t computed = max64(seq_lens_p[r] - q, 0);
  int64_t k = ckpt != nullptr ? ckpt[r] : 0;
  if (k < 0 || k >= q) k = 0;  // the host planned only 0 < k < q
  RequestChunks c{{0, -1}, {0, -1}, k};
  if (k > 0) c.a = segment_chunks(computed, k, chunk);
  c.b = segment_chunks(computed + k, q - k, chunk);
  return c;
}

/// Writes a segment's chunks from chunk index `first`, the segment starting `start` tokens into
/// the prefills.
__device__ inline void emit_segment(const SegmentChunks& c, int64_t first, int64_t start,
                                    int64_t chunk, int64_t r, int64_t capacity, int32_t* cu,
                                    int32_t* seq_idx) {
  for (int64_t j = 0; j < c.count; ++j) {
    const int64_t idx = first + j;
    if (idx >= capacity) break;  // never past the buffers
    const int64_t offset =
        c.first_len >= 0 ? (j == 0 ? 0 : c.first_len + (j - 1) * chunk) : j * chunk;
    seq_idx[idx] = static_cast<int32_t>(r);
    cu[idx] = static_cast<int32_t>(start + offset);
  }
}

__global__ void __launch_bounds__(kScanBlock)
chunk_kernel(const int32_t* __restrict__ qsl_p, const int32_t* __restrict__ seq_lens_p,
             const int32_t* __restrict__ ckpt, int64_t n, int64_t chunk, int64_t capacity,
             int32_t* __restrict__ cu, int32_t* __restrict__ seq_idx,
             int32_t* __restrict__ last, int64_t* __restrict__ ckpt_idx) {
  using Scan = cub::BlockScan<int64_t, kScanBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int64_t carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int64_t base = 0; base < n; base += kScanBlock) {
    const int64_t r = base + threadIdx.x;
    RequestChunks c{{0, -1}, {0, -1}, 0};
    if (r < n) c = chunks_of(qsl_p, seq_lens_p, ckpt, r, chunk);
    const int64_t count = c.a.count + c.b.count;
    int64_t first, tile_total;
    Scan(storage).ExclusiveSum(count, first, tile_total);
    first += carry;
    if (r < n) {
      const int64_t start = qsl_p[r];
      emit_segment(c.a, first, start, chunk, r, capacity, cu, seq_idx);
      emit_segment(c.b, first + c.a.count, start + c.ckpt, chunk, r, capacity, cu, seq_idx);
      last[r] = static_cast<int32_t>(first + count - 1);
      if (ckpt_idx != nullptr) ckpt_idx[r] = c.ckpt > 0 ? first + c.a.count - 1 : 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) carry += tile_total;
    __syncthreads();
  }
  if (threadIdx.x == 0 && carry <= capacity) cu[carry] = qsl_p[n];
}

__global__ void checkpoint_state_kernel(const int32_t* __restrict__ bt, int64_t bt_stride,
                                        const int64_t* __restrict__ rows,
                                        const int64_t* __restrict__ cols, int64_t n,
                                        int32_t* __restrict__ out) {
  ATTN_GRID_STRIDE(i, n) out[i] = cols[i] >= 0 ? bt[rows[i] * bt_stride + cols[i]] : 0;
}

__global__ void copy_pad_i32_kernel(const int32_t* __restrict__ src, int64_t src_stride,
                                    int64_t rows, int64_t cols, int32_t* __restrict__ dst,
                                    int64_t dst_stride, int64_t total_rows, int32_t pad,
                                    bool pad_with_last) {
  const int32_t fill = pad_with_last && rows > 0 ? src[(rows - 1) * src_stride + cols - 1] : pad;
  ATTN_GRID_STRIDE(i, total_rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    dst[r * dst_stride + c] = r < rows ? src[r * src_stride + c] : fill;
  }
}

__global__ void copy_pad_u8_kernel(const uint8_t* __restrict__ src, int64_t n,
                                   uint8_t* __restrict__ dst, int64_t total, uint8_t pad) {
  ATTN_GRID_STRIDE(i, total) dst[i] = i < n ? src[i] : pad;
}

__global__ void iota_kernel(int32_t* __restrict__ out, int64_t n) {
  ATTN_GRID_STRIDE(i, n) out[i] = static_cast<int32_t>(i);
}

__global__ void query_lens_kernel(const int32_t* __restrict__ qsl, int64_t n, int32_t offset,
                                  int32_t* __restrict__ out) {
  ATTN_GRID_STRIDE(i, n) out[i] = qsl[i + 1] - qsl[i] + offset;
}

#undef ATTN_GRID_STRIDE

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

int mamba_gather_state_indices(int device_id, void* stream, const int32_t* block_table,
                               int64_t bt_stride, int64_t bt_width, const int32_t* seq_lens,
                               int64_t num_reqs, int32_t block_size, int64_t num_cols,
                               int32_t* out, int64_t out_stride) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  gather_kernel<<<grid_for(num_reqs * num_cols), kThreads, 0, as_stream(stream)>>>(
      block_table, bt_stride, bt_width, seq_lens, num_reqs, block_size, num_cols, out, out_stride);
  return cudaGetLastError();
}

int mamba_prefill_metadata(int device_id, void* stream, const int32_t* qsl,
                           const int32_t* seq_lens, int64_t first, int64_t count, int32_t* qsl_p,
                           uint8_t* has_initial) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  prefill_kernel<<<grid_for(count + 1), kThreads, 0, as_stream(stream)>>>(
      qsl, seq_lens, first, count, qsl_p, has_initial);
  return cudaGetLastError();
}

int mamba_chunk_metadata(int device_id, void* stream, const int32_t* qsl_p,
                         const int32_t* seq_lens_p, int64_t num_prefills, int32_t chunk_size,
                         int64_t capacity, int32_t* cu_chunk_seqlen, int32_t* seq_idx,
                         int32_t* last_chunk_indices, const int32_t* checkpoint_offsets,
                         int64_t* checkpoint_chunk_idx) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  chunk_kernel<<<1, kScanBlock, 0, as_stream(stream)>>>(
      qsl_p, seq_lens_p, checkpoint_offsets, num_prefills, chunk_size, capacity, cu_chunk_seqlen,
      seq_idx, last_chunk_indices, checkpoint_chunk_idx);
  return cudaGetLastError();
}

int mamba_checkpoint_state_indices(int device_id, void* stream, const int32_t* block_table,
                                   int64_t bt_stride, const int64_t* rows, const int64_t* cols,
                                   int64_t n, int32_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  checkpoint_state_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(block_table, bt_stride,
                                                                           rows, cols, n, out);
  return cudaGetLastError();
}

int copy_pad_i32(int device_id, void* stream, const int32_t* src, int64_t src_stride, int64_t rows,
                 int64_t cols, int32_t* dst, int64_t dst_stride, int64_t total_rows, int32_t pad,
                 bool pad_with_last) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  copy_pad_i32_kernel<<<grid_for(total_rows * cols), kThreads, 0, as_stream(stream)>>>(
      src, src_stride, rows, cols, dst, dst_stride, total_rows, pad, pad_with_last);
  return cudaGetLastError();
}

int copy_pad_u8(int device_id, void* stream, const uint8_t* src, int64_t n, uint8_t* dst,
                int64_t total, uint8_t pad) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  copy_pad_u8_kernel<<<grid_for(total), kThreads, 0, as_stream(stream)>>>(src, n, dst, total, pad);
  return cudaGetLastError();
}

int iota_i32(int device_id, void* stream, int32_t* out, int64_t n) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  iota_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(out, n);
  return cudaGetLastError();
}

int query_lens_i32(int device_id, void* stream, const int32_t* qsl, int64_t num_reqs,
                   int32_t offset, int32_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  query_lens_kernel<<<grid_for(num_reqs), kThreads, 0, as_stream(stream)>>>(qsl, num_reqs, offset,
                                                                                 out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
