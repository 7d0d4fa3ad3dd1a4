// CUDA implementation of ops::aiter_mla_decode_tables. Launches, in stream order: the -1 fill of
// the indices (full CUDA graphs), one block per decode (a block-wide reduction of the kernel
// lengths before it gives its start; it writes its indptr / qo_indptr entry and expands its
// block-table row into per-token indices), a one-block pass for indptr[0], qo_indptr[0] and the
// tails, and with varlen rows a zero fill of o_rows and a thread per row (the dump slot takes
// the largest non-real row with atomicMax, torch's sequential scatter on the host).
#include <cub/block/block_reduce.cuh>
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;

__device__ __forceinline__ int64_t kernel_len(const AiterMlaDecodeArgs& a, int64_t r) {
  const int64_t q = a.query_start_loc[r + 1] - a.query_start_loc[r];
  const int64_t seq = a.seq_lens[r];
  if (a.varlen) return seq + a.pad_qlen - q;
  return a.pad_qlen > 0 && q <= 0 ? a.pad_qlen : seq;
}

__global__ void fill_kernel(int32_t* out, int64_t n, int32_t value) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = value;
}

__global__ void zero_i64_kernel(int64_t* out, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = 0;
}

__global__ void __launch_bounds__(kBlock) tables_kernel(AiterMlaDecodeArgs a) {
  using Reduce = cub::BlockReduce<int64_t, kBlock>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ int64_t start;
  const int64_t K = a.kernel_block_size;
  for (int64_t r = blockIdx.x; r < a.num_reqs; r += gridDim.x) {
    int64_t partial = 0;
    for (int64_t i = threadIdx.x; i < r; i += kBlock) partial += kernel_len(a, i);
    const int64_t sum = Reduce(storage).Sum(partial);
    const int64_t len = kernel_len(a, r);
    if (threadIdx.x == 0) {
      start = sum;
      a.indptr[r + 1] = static_cast<int32_t>(sum + len);
      if (a.kernel_seq_lens) a.kernel_seq_lens[r] = static_cast<int32_t>(len);
      a.qo_indptr[r + 1] = a.uniform_qo > 0 ? static_cast<int32_t>((r + 1) * a.uniform_qo)
                                            : a.query_start_loc[r + 1];
    }
    __syncthreads();
    const int32_t* row = a.block_table + r * a.bt_stride;
    const int64_t seq = a.seq_lens[r];
    for (int64_t t = threadIdx.x; t < len && start + t < a.indices_capacity; t += kBlock) {
      const int64_t s = a.varlen && t >= seq ? 0 : t;
      int64_t col = s / K;
      col = col < 0 ? 0 : (col > a.bt_width - 1 ? a.bt_width - 1 : col);
      a.indices[start + t] = static_cast<int32_t>(row[col] * K + s % K);
    }
    __syncthreads();  // `start` and `storage` are reused by the next request of this block
  }
}

__global__ void heads_and_tails_kernel(AiterMlaDecodeArgs a) {
  const int64_t n = a.num_reqs;
  if (threadIdx.x == 0) {
    a.indptr[0] = 0;
    a.qo_indptr[0] = a.uniform_qo > 0 ? 0 : a.query_start_loc[0];
  }
  __syncthreads();
  for (int64_t r = n + 1 + threadIdx.x; r < a.indptr_capacity; r += blockDim.x) {
    a.indptr[r] = a.indptr[n];
    a.qo_indptr[r] = a.qo_indptr[n];
  }
}

__global__ void varlen_rows_kernel(AiterMlaDecodeArgs a) {
  const int64_t w = a.pad_qlen, rows = a.num_reqs * w;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / w, p = i % w;
    const bool real = p < a.query_start_loc[r + 1] - a.query_start_loc[r];
    const int64_t packed = a.query_start_loc[r] + p;
    a.q_rows[i] = real ? packed : 0;
    if (real) {
      if (packed >= 0 && packed < a.o_rows_size) a.o_rows[packed] = i;
    } else if (a.o_rows_size > 0) {
      atomicMax(reinterpret_cast<unsigned long long*>(a.o_rows + a.o_rows_size - 1),
                static_cast<unsigned long long>(i));
    }
  }
}

}  // namespace

int aiter_mla_decode_tables(int device_id, void* stream, const AiterMlaDecodeArgs& a) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  auto s = static_cast<cudaStream_t>(stream);
  if (a.reset_indices && a.indices_capacity > 0)
    fill_kernel<<<grid_for(a.indices_capacity), kThreads, 0, s>>>(a.indices, a.indices_capacity,
                                                                   -1);
  if (a.num_reqs > 0) {
    const unsigned blocks = static_cast<unsigned>(a.num_reqs < 65535 ? a.num_reqs : 65535);
    tables_kernel<<<blocks, kBlock, 0, s>>>(a);
  }
  heads_and_tails_kernel<<<1, kThreads, 0, s>>>(a);
  if (a.varlen && a.q_rows != nullptr) {
    zero_i64_kernel<<<grid_for(a.o_rows_size), kThreads, 0, s>>>(a.o_rows, a.o_rows_size);
    if (a.num_reqs > 0)
      varlen_rows_kernel<<<grid_for(a.num_reqs * a.pad_qlen), kThreads, 0, s>>>(a);
  }
  return cudaGetLastError();
}

}  // namespace attn::kernels
