// CUDA implementation of ops::gdn_spec_split (GDN_ATTN's spec/non-spec split): one block scans
// the requests tile by tile (spec ranks and spec token offsets; the non-spec ones follow from
// the request index and query_start_loc), and each request's thread writes its state-index
// row, its query_start_loc entry, its accepted-token count and its token positions.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 1024;

__global__ void __launch_bounds__(kBlock)
gdn_split_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ seq_lens, int64_t n,
                 const int32_t* __restrict__ draft, const int32_t* __restrict__ bt,
                 int64_t bt_stride, int64_t width, int64_t cols,
                 const int32_t* __restrict__ accepted, int64_t token_capacity,
                 GdnSplitOut out) {
  using Scan = cub::BlockScan<int64_t, kBlock>;
  __shared__ typename Scan::TempStorage storage;
  __shared__ int64_t carry_reqs, carry_tokens;
  if (threadIdx.x == 0) {
    carry_reqs = carry_tokens = 0;
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
    spec_before += carry_reqs;
    spec_tok_before += carry_tokens;
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
            out.spec_token_indx[spec_tok_before + t] = static_cast<int32_t>(start + t);
      } else {
        const int64_t k = r - spec_before;
        const int64_t tok_before = start - spec_tok_before;
        if (out.non_spec_state != nullptr) out.non_spec_state[k] = width > 0 ? bt[r * bt_stride] : 0;
        if (out.non_spec_has_initial != nullptr) out.non_spec_has_initial[k] = seq_lens[r] - q > 0 ? 1 : 0;
        if (out.non_spec_qsl != nullptr) out.non_spec_qsl[k + 1] = static_cast<int32_t>(tok_before + q);
        if (out.non_spec_token_indx != nullptr)
          for (int64_t t = 0; t < q && tok_before + t >= 0 && tok_before + t < token_capacity; ++t)
            out.non_spec_token_indx[tok_before + t] = static_cast<int32_t>(start + t);
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      carry_reqs += spec_tile;
      carry_tokens += spec_tok_tile;
    }
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
      num_accepted_tokens, token_capacity, out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
