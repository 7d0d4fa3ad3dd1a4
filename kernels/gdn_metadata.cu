// CUDA implementations of GDN_ATTN's ops (and KIMI_K3_KDA's variant of the split,
// ops::kda_spec_split: zero-length non-spec requests left out). ops::gdn_spec_split: one
// block scans the requests tile by tile (spec ranks and spec token offsets; the non-spec ones
// follow from the request index and query_start_loc), and each request's thread writes its
// state-index row, its query_start_loc entry, its accepted-token count and its token positions.
// ops::gdn_chunk_metadata (FLA's chunk offsets and indices): the same single-block scan over the
// sequences' chunk counts and non-empty flags; each sequence's thread writes its rows.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"
#include "state_space_kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 1024;

__global__ void __launch_bounds__(kBlock)
gdn_split_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ seq_lens, int64_t n,
                 const int32_t* __restrict__ draft, const int32_t* __restrict__ bt,
                 int64_t bt_stride, int64_t width, int64_t cols,
                 const int32_t* __restrict__ accepted, int64_t token_capacity,
                 bool skip_empty, GdnSplitOut out) {
  using Scan = cub::BlockScan<int64_t, kBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int64_t carry_reqs, carry_tokens, carry_skipped;
  if (threadIdx.x == 0) {
    carry_reqs = carry_tokens = carry_skipped = 0;
    if (out.spec_qsl != nullptr) out.spec_qsl[0] = 0;
    if (out.non_spec_qsl != nullptr) out.non_spec_qsl[0] = 0;
  }
  __syncthreads();
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t r = base + threadIdx.x;
    const bool valid = r < n;
    const bool is_spec = valid && draft[r] >= 0;
    int64_t q = valid ? static_cast<int64_t>(qsl[r + 1]) - qsl[r] : 0;
    if (q < 0) q = 0;  // device offsets that disagree with the validated host copy
    int64_t spec_before, spec_tile, spec_tok_before, spec_tok_tile;
    Scan(storage).ExclusiveSum(is_spec ? int64_t{1} : int64_t{0}, spec_before, spec_tile);
    __syncthreads();
    Scan(storage).ExclusiveSum(is_spec ? q : int64_t{0}, spec_tok_before, spec_tok_tile);
    // KIMI_K3_KDA: zero-length non-spec requests have no request-indexed non-spec rows.
    const bool skipped = skip_empty && valid && !is_spec && q == 0;
    int64_t skipped_before, skipped_tile;
    __syncthreads();
    Scan(storage).ExclusiveSum(skipped ? int64_t{1} : int64_t{0}, skipped_before, skipped_tile);
    spec_before += carry_reqs;
    spec_tok_before += carry_tokens;
    skipped_before += carry_skipped;
    if (valid) {
      const int64_t start = qsl[r];
      if (out.masks != nullptr) out.masks[r] = is_spec ? 1 : 0;
      if (is_spec) {
        const int64_t s = spec_before;
        if (out.spec_state != nullptr)
          for (int64_t j = 0; j < cols; ++j)
            out.spec_state[s * cols + j] =
                width > 0 ? bt[r * bt_stride + (j < width ? j : width - 1)] : 0;
        if (out.spec_accepted != nullptr) out.spec_accepted[s] = accepted[r];
        if (out.spec_qsl != nullptr) out.spec_qsl[s + 1] = static_cast<int32_t>(spec_tok_before + q);
        if (out.spec_token_indx != nullptr)
          for (int64_t t = 0; t < q && spec_tok_before + t < token_capacity; ++t)
            out.spec_token_indx[spec_tok_before + t] = start + t;
      } else if (!skipped) {
        const int64_t k = r - spec_before - skipped_before;
        const int64_t tok_before = start - spec_tok_before;
        if (out.non_spec_state != nullptr) out.non_spec_state[k] = width > 0 ? bt[r * bt_stride] : 0;
        if (out.non_spec_has_initial != nullptr) out.non_spec_has_initial[k] = seq_lens[r] - q > 0 ? 1 : 0;
        if (out.non_spec_qsl != nullptr) out.non_spec_qsl[k + 1] = static_cast<int32_t>(tok_before + q);
        if (out.non_spec_token_indx != nullptr)
          for (int64_t t = 0; t < q && tok_before + t >= 0 && tok_before + t < token_capacity; ++t)
            out.non_spec_token_indx[tok_before + t] = start + t;
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      carry_reqs += spec_tile;
      carry_tokens += spec_tok_tile;
      carry_skipped += skipped_tile;
    }
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kBlock)
gdn_chunk_kernel(const int32_t* __restrict__ cu, int64_t n, int32_t chunk,
                 int32_t* __restrict__ indices, int64_t* __restrict__ offsets) {
  using Scan = cub::BlockScan<int64_t, kBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int64_t carry_chunks, carry_nonempty;
  if (threadIdx.x == 0) carry_chunks = carry_nonempty = 0;
  __syncthreads();
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t r = base + threadIdx.x;
    int64_t len = r < n ? static_cast<int64_t>(cu[r + 1]) - cu[r] : 0;
    if (len < 0) len = 0;
    const int64_t chunks = (len + chunk - 1) / chunk;
    int64_t before, tile, rank, tile_nonempty;
    Scan(storage).ExclusiveSum(chunks, before, tile);
    __syncthreads();
    Scan(storage).ExclusiveSum(chunks > 0 ? int64_t{1} : int64_t{0}, rank, tile_nonempty);
    before += carry_chunks;
    rank += carry_nonempty;
    if (r < n) {
      if (offsets != nullptr) {
        offsets[r] = before;
        if (r == n - 1) offsets[n] = before + chunks;
      }
      if (indices != nullptr)
        for (int64_t j = 0; j < chunks; ++j) {
          indices[2 * (before + j)] = static_cast<int32_t>(rank);
          indices[2 * (before + j) + 1] = static_cast<int32_t>(j);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      carry_chunks += tile;
      carry_nonempty += tile_nonempty;
    }
    __syncthreads();
  }
  if (n == 0 && threadIdx.x == 0 && offsets != nullptr) offsets[0] = 0;
}

__global__ void __launch_bounds__(kBlock)
gdn_masked_gather_kernel(const uint8_t* __restrict__ masks, int64_t n,
                         const int32_t* __restrict__ bt, int64_t stride, int64_t width,
                         int64_t cols, int32_t* __restrict__ spec_out,
                         int32_t* __restrict__ non_spec_out) {
  using Scan = cub::BlockScan<int64_t, kBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int64_t carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t r = base + threadIdx.x;
    const bool is_spec = r < n && masks[r] != 0;
    int64_t before, tile;
    Scan(storage).ExclusiveSum(is_spec ? int64_t{1} : int64_t{0}, before, tile);
    before += carry;
    if (r < n) {
      const int32_t* row = bt + r * stride;
      if (is_spec) {
        if (spec_out != nullptr)
          for (int64_t j = 0; j < cols; ++j)
            spec_out[before * cols + j] = row[j < width ? j : width - 1];
      } else if (non_spec_out != nullptr) {
        non_spec_out[r - before] = row[0];
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) carry += tile;
    __syncthreads();
  }
}

}  // namespace

int gdn_spec_split(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                   int64_t num_reqs, const int32_t* draft_tokens, const int32_t* block_table,
                   int64_t bt_stride, int64_t bt_width, int64_t num_cols,
                   const int32_t* num_accepted_tokens, int64_t token_capacity,
                   const GdnSplitOut& out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  gdn_split_kernel<<<1, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, seq_lens, num_reqs, draft_tokens, block_table, bt_stride, bt_width, num_cols,
      num_accepted_tokens, token_capacity, /*skip_empty=*/false, out);
  return cudaGetLastError();
}

int kda_spec_split(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                   int64_t num_reqs, const int32_t* spec_marks, const int32_t* block_table,
                   int64_t bt_stride, int64_t bt_width, int64_t num_cols,
                   const int32_t* num_accepted_tokens, int64_t token_capacity,
                   const GdnSplitOut& out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  gdn_split_kernel<<<1, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, seq_lens, num_reqs, spec_marks, block_table, bt_stride, bt_width, num_cols,
      num_accepted_tokens, token_capacity, /*skip_empty=*/true, out);
  return cudaGetLastError();
}

int gdn_chunk_metadata(int device_id, void* stream, const int32_t* cu_seqlens, int64_t num_seqs,
                       int32_t chunk_size, int32_t* chunk_indices,
                       int64_t* chunk_offsets) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  gdn_chunk_kernel<<<1, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      cu_seqlens, num_seqs, chunk_size, chunk_indices, chunk_offsets);
  return cudaGetLastError();
}

int gdn_masked_state_gather(int device_id, void* stream, const uint8_t* masks, int64_t num_reqs,
                            const int32_t* block_table, int64_t block_table_stride,
                            int64_t block_table_width, int64_t num_cols, int32_t* spec_state,
                            int32_t* non_spec_state) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  gdn_masked_gather_kernel<<<1, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      masks, num_reqs, block_table, block_table_stride, block_table_width, num_cols, spec_state,
      non_spec_state);
  return cudaGetLastError();
}

}  // namespace attn::kernels
