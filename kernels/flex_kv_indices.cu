// CUDA implementation of ops::flex_kv_indices: one block per query group. Phase 1 inserts every
// non-zero candidate id into the group's open-addressing table (in global scratch) with the
// smallest candidate position; phase 2 walks the candidates in order and keeps each id at its
// first position, compacting with a block scan.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;

// The id candidate p of group g contributes, or 0 (the host reference's candidate()).
__device__ int32_t candidate(const FlexBlockMaskIn& in, int64_t g, int64_t p) {
  const int64_t t = g * in.q_block + p / in.pages, j = p % in.pages;
  if (t >= in.num_tokens) return 0;
  const int32_t d = in.doc_ids[t];
  if (j >= in.num_blocks_per_seq[d]) return 0;
  if (in.causal != 0 || in.sliding_window > 0) {
    const int64_t pos = t - in.query_start_loc[d] + in.decode_offset[d];
    if (in.causal != 0 && j * in.block_size > pos) return 0;
    if (in.sliding_window > 0) {
      const int64_t lo = pos - (in.sliding_window - 1);
      if (j < (lo > 0 ? lo : 0) / in.block_size) return 0;
    }
  }
  const int32_t v = in.block_table[static_cast<int64_t>(d) * in.block_table_stride + j];
  return v > 0 && v < in.num_gpu_blocks ? v : 0;
}

__device__ uint32_t slot_of(int32_t v, int64_t cap) {
  return (static_cast<uint32_t>(v) * 2654435761u) & static_cast<uint32_t>(cap - 1);
}

__global__ void __launch_bounds__(kBlock)
kv_indices_kernel(const FlexBlockMaskIn in, int32_t* __restrict__ out, int64_t out_stride,
                  int32_t* __restrict__ counts, int64_t* __restrict__ scratch, int64_t cap) {
  using Scan = cub::BlockScan<int32_t, kBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int32_t carry;
  const int64_t g = blockIdx.x;
  const int64_t n = static_cast<int64_t>(in.q_block) * in.pages;
  // Entry: high 32 bits the id (0 = empty), low 32 bits the smallest position.
  unsigned long long* table = reinterpret_cast<unsigned long long*>(scratch + g * cap);
  for (int64_t k = threadIdx.x; k < cap; k += kBlock) table[k] = 0xffffffffull;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int64_t p = threadIdx.x; p < n; p += kBlock) {
    const int32_t v = candidate(in, g, p);
    if (v == 0) continue;
    const unsigned long long key = static_cast<unsigned long long>(static_cast<uint32_t>(v)) << 32;
    for (uint32_t h = slot_of(v, cap);; h = (h + 1) & static_cast<uint32_t>(cap - 1)) {
      unsigned long long cur = table[h];
      if ((cur >> 32) == 0) {
        const unsigned long long prev = atomicCAS(&table[h], cur, key | static_cast<uint32_t>(p));
        if (prev == cur) break;
        cur = prev;
      }
      if ((cur >> 32) == (key >> 32)) {
        atomicMin(&table[h], key | static_cast<uint32_t>(p));
        break;
      }
    }
  }
  __syncthreads();
  int32_t* row = out + g * out_stride;
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t p = base + threadIdx.x;
    int32_t v = p < n ? candidate(in, g, p) : 0;
    int32_t keep = 0;
    if (v != 0) {
      for (uint32_t h = slot_of(v, cap);; h = (h + 1) & static_cast<uint32_t>(cap - 1)) {
        const unsigned long long cur = table[h];
        if ((cur >> 32) == static_cast<uint32_t>(v)) {
          keep = static_cast<int64_t>(cur & 0xffffffffull) == p;
          break;
        }
      }
    }
    int32_t dest, total;
    Scan(storage).ExclusiveSum(keep, dest, total);
    if (keep) row[carry + dest] = v;
    __syncthreads();
    if (threadIdx.x == 0) carry += total;
    __syncthreads();
  }
  for (int64_t k = carry + threadIdx.x; k < n; k += kBlock) row[k] = -1;
  if (threadIdx.x == 0) counts[g] = carry;
}

}  // namespace

int flex_kv_indices(int device_id, void* stream, const FlexBlockMaskIn& in, int64_t num_groups,
                    int32_t* kv_indices, int64_t out_stride, int32_t* kv_num_blocks,
                    void* scratch, int64_t scratch_per_group) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  if (num_groups == 0) return cudaSuccess;
  kv_indices_kernel<<<static_cast<unsigned>(num_groups), kBlock, 0,
                      static_cast<cudaStream_t>(stream)>>>(
      in, kv_indices, out_stride, kv_num_blocks, static_cast<int64_t*>(scratch),
      scratch_per_group);
  return cudaGetLastError();
}

}  // namespace attn::kernels
