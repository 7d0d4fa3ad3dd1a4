// CUDA implementation of ops::local_attention_virtual_batches and ops::remap_block_table.
// Launch 1 (one block): each thread takes a request, computes its local blocks, a block scan
// gives its first virtual batch, and it writes the local query_start_loc, seq_lens and remap of
// its virtual batches. Launch 2: the block-table gather, one block per virtual batch row.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kPlanBlock = 1024;
constexpr int kGatherBlock = 128;

// Python's floor division, for divisors of either sign.
__device__ __forceinline__ int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

struct Blocks {
  int64_t q, seq, first, last, count;
};

__device__ Blocks blocks_of(const int32_t* qsl, const int32_t* seq_lens, int64_t r, int64_t chunk) {
  Blocks b;
  b.q = static_cast<int64_t>(qsl[r + 1]) - qsl[r];
  b.seq = seq_lens[r];
  const int64_t ctx_mod = (b.seq - b.q) - floor_div(b.seq - b.q, chunk) * chunk;
  b.first = min(chunk - ctx_mod, b.q);
  b.last = chunk + (b.seq - floor_div(b.seq, -chunk) * -chunk);
  b.count = 1 + -floor_div(-(b.q - b.first), chunk);
  return b;
}

__global__ void __launch_bounds__(kPlanBlock)
plan_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ seq_lens, int64_t n,
            int32_t chunk, int32_t block_size, int32_t* __restrict__ qsl_local,
            int32_t* __restrict__ seq_local, int32_t* __restrict__ vreq,
            int32_t* __restrict__ vstart, int64_t num_virtual) {
  using Scan = cub::BlockScan<int64_t, kPlanBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int64_t carry;
  if (threadIdx.x == 0) {
    carry = 0;
    qsl_local[0] = 0;
  }
  __syncthreads();
  for (int64_t base = 0; base < n; base += kPlanBlock) {
    const int64_t r = base + threadIdx.x;
    Blocks b{};
    if (r < n) b = blocks_of(qsl, seq_lens, r, chunk);
    int64_t first_v, tile_total;
    Scan(storage).ExclusiveSum(r < n ? b.count : 0, first_v, tile_total);
    first_v += carry;
    if (r < n) {
      int64_t cu = qsl[r];  // the local batches of request r start where its queries start
      for (int64_t k = 0; k < b.count; ++k) {
        const int64_t v = first_v + k;
        if (v >= num_virtual) break;  // device lengths that disagree with the host mirrors
        const int64_t q = k == 0 ? b.first : min(b.q - b.first - chunk * (k - 1), (int64_t)chunk);
        const int64_t kv = k == b.count - 1 ? b.last : chunk;
        const int64_t k_start = b.seq - ((b.count - k - 1) * chunk + b.last);
        cu += q;
        qsl_local[v + 1] = static_cast<int32_t>(cu);
        seq_local[v] = static_cast<int32_t>(kv);
        vreq[v] = static_cast<int32_t>(r);
        vstart[v] = static_cast<int32_t>(floor_div(k_start, block_size));
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) carry += tile_total;
    __syncthreads();
  }
}

__global__ void gather_kernel(const int32_t* __restrict__ bt, int64_t rows, int64_t stride, int64_t width,
                              const int32_t* __restrict__ vreq, const int32_t* __restrict__ vstart,
                              int64_t num_virtual, int64_t pages, int32_t* __restrict__ out,
                              int64_t out_stride) {
  for (int64_t v = blockIdx.x; v < num_virtual; v += gridDim.x) {
    const int64_t req = vreq[v];
    // A bad remap (or a table without columns) never reads outside the table.
    const bool valid = req >= 0 && req < rows && width > 0;
    const int32_t* row = bt + (valid ? req : 0) * stride;
    const int64_t start = vstart[v];
    for (int64_t j = threadIdx.x; j < pages; j += blockDim.x) {
      int64_t col = start + j < width - 1 ? start + j : width - 1;
      if (col < 0) col += width;  // numpy's negative index (see ops::remap_block_table)
      col = col < 0 ? 0 : col;
      out[v * out_stride + j] = valid ? row[col] : 0;
    }
  }
}

unsigned rows_grid(int64_t rows) {
  return static_cast<unsigned>(rows < 1 ? 1 : (rows < 65535 ? rows : 65535));
}

}  // namespace

int local_attention_virtual_batches(int device_id, void* stream, const int32_t* qsl,
                                    const int32_t* seq_lens, int64_t num_reqs, int32_t chunk,
                                    int32_t block_size, const int32_t* block_table,
                                    int64_t bt_rows, int64_t bt_stride, int64_t bt_width,
                                    int32_t* qsl_local,
                                    int32_t* seq_lens_local, int32_t* bt_local,
                                    int64_t out_stride, int32_t* virtual_req,
                                    int32_t* virtual_block_start, int64_t num_virtual) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  plan_kernel<<<1, kPlanBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, seq_lens, num_reqs, chunk, block_size, qsl_local, seq_lens_local, virtual_req,
      virtual_block_start, num_virtual);
  const int st = cudaGetLastError();
  if (st != cudaSuccess) return st;
  return remap_block_table(device_id, stream, block_table, bt_rows, bt_stride, bt_width, virtual_req,
                           virtual_block_start, num_virtual, chunk / block_size, bt_local,
                           out_stride);
}

int remap_block_table(int device_id, void* stream, const int32_t* block_table, int64_t bt_rows,
                      int64_t bt_stride, int64_t bt_width, const int32_t* virtual_req,
                      const int32_t* virtual_block_start, int64_t num_virtual, int64_t pages,
                      int32_t* out, int64_t out_stride) noexcept {
  if (num_virtual <= 0) return cudaSuccess;
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  gather_kernel<<<rows_grid(num_virtual), kGatherBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      block_table, bt_rows, bt_stride, bt_width, virtual_req, virtual_block_start, num_virtual, pages, out,
      out_stride);
  return cudaGetLastError();
}

}  // namespace attn::kernels
