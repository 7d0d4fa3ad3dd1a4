// CUDA implementation of DEEPSEEK_V32_INDEXER's ops (ops::indexer_prefill_arrays,
// ops::indexer_decode_tensors; any compress ratio): the prefill groups planned again by one
// thread of one block, then its threads over the prefill tokens; the decode tensors one thread
// per output row.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;
constexpr int kPrefillBlock = 1024;

/// Python's floor division.
__device__ int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

__device__ int32_t local_len(int64_t len, int32_t dcp_size, int32_t dcp_rank, int32_t interleave) {
  if (dcp_size <= 1) return static_cast<int32_t>(len);
  const int64_t base = floor_div(floor_div(len, interleave), dcp_size) * interleave;
  int64_t rem = len - base * dcp_size - static_cast<int64_t>(dcp_rank) * interleave;
  rem = rem < 0 ? 0 : (rem > interleave ? interleave : rem);
  return static_cast<int32_t>(base + rem);
}

/// A decode length as written: DCP-local, then in compressed states.
__device__ int32_t decode_len(int64_t len, const IndexerDecodeParams& p) {
  return static_cast<int32_t>(
      floor_div(local_len(len, p.dcp_size, p.dcp_rank, p.interleave), p.compress_ratio));
}

/// The first b < n with qsl[b + 1] > t, at most n - 1.
__device__ int64_t token_request(const int32_t* qsl, int64_t n, int64_t t) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (qsl[mid + 1] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n - 1 ? lo : n - 1;
}

__global__ void __launch_bounds__(kPrefillBlock)
    indexer_prefill_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ lens,
                           IndexerPrefillParams p, IndexerPrefillArrays out) {
  const int64_t nd = p.num_decodes, np = p.num_prefills;
  const bool dcp = p.dcp_size > 1;
  const int64_t ratio = p.compress_ratio;
  if (threadIdx.x == 0) {
    const int32_t* plan = p.plan_seq_lens ? p.plan_seq_lens : lens;
    int64_t end = 0, g = 0;
    while (end < np) {
      const int64_t start = end;
      int64_t m = 0, n = 0;
      while (end < np) {
        const int64_t r = nd + end;
        // the groups plan K rows from plan_seq_lens (vLLM's bound) // compress_ratio
        const int64_t k_rows = floor_div(plan[r], ratio);
        const int64_t s = k_rows > p.min_split_seq_len ? k_rows : p.min_split_seq_len;
        const int64_t m2 = m + (qsl[r + 1] - qsl[r]), n2 = n + s;
        if (n2 > p.workspace_size || m2 * n2 > p.max_logits_elems) break;
        m = m2;
        n = n2;
        ++end;
      }
      if (end == start) ++end;
      int64_t cu = 0, local = 0;
      for (int64_t k = start; k <= end; ++k) {
        out.cu_seq_lens[k + g] = static_cast<int32_t>(cu);
        if (dcp) out.local_cu_seq_lens[k + g] = static_cast<int32_t>(local);
        if (k == end) break;
        out.row_start[k] = static_cast<int32_t>(dcp ? local : cu);
        const int64_t k_rows = floor_div(lens[nd + k], ratio);
        cu += k_rows;
        if (dcp) local += local_len(k_rows, p.dcp_size, p.dcp_rank, p.interleave);
      }
      ++g;
    }
  }
  __syncthreads();
  const int64_t first = qsl[nd], last = qsl[nd + np];
  for (int64_t t = first + threadIdx.x; t < last; t += blockDim.x) {
    const int64_t k = token_request(qsl + nd, np, t);
    const int64_t r = nd + k;
    const int64_t ctx = static_cast<int64_t>(lens[r]) - (qsl[r + 1] - qsl[r]) + 1 + (t - qsl[r]);
    const int32_t row = out.row_start[k];
    out.cu_seqlen_ks[t - first] = row;
    out.cu_seqlen_ke[t - first] =
        row + local_len(floor_div(ctx, ratio), p.dcp_size, p.dcp_rank, p.interleave);
  }
}

__global__ void __launch_bounds__(kBlock)
    indexer_decode_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ lens,
                          IndexerDecodeParams p, IndexerDecodeOut out, int64_t rows) {
  const int64_t nd = p.num_decodes;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; i < rows;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    if (i < nd) {
      if (out.per_req_decode_lens) out.per_req_decode_lens[i] = qsl[i + 1] - qsl[i];
      if (p.mode <= kIndexerNative2D && out.decode_lens) out.decode_lens[i] = qsl[i + 1] - qsl[i];
      if (p.mode == kIndexerNative1 && out.seq_lens)
        out.seq_lens[i] = decode_len(lens[i], p);
    }
    if (p.mode == kIndexerNative2D && i < nd * p.max_decode_len) {
      const int64_t w = p.max_decode_len;
      int64_t v = static_cast<int64_t>(lens[i / w]) - w + 1 + i % w;
      out.seq_lens[i] = decode_len(v < 0 ? 0 : v, p);
    }
    if (p.mode >= kIndexerFlatten && i < p.num_decode_tokens) {
      const bool varlen = p.mode == kIndexerVarlen;
      const int64_t actual = qsl[nd];
      const int64_t b = token_request(qsl, nd, i);
      const bool valid = !varlen || i < actual;
      int64_t v = 0;
      if (valid) v = static_cast<int64_t>(lens[b]) - (qsl[b + 1] - qsl[b]) + (i - qsl[b]) + 1;
      if (out.global_seq_lens) out.global_seq_lens[i] = static_cast<int32_t>(v);
      if (p.uniform_kernel && v < 0) v = 0;
      out.seq_lens[i] = decode_len(v, p);
      if (out.decode_lens) out.decode_lens[i] = 1;
      if (out.indices) out.indices[i] = static_cast<int32_t>(valid ? b : nd + i - actual);
      if (out.block_table) {
        const int32_t* src = p.block_table + b * p.bt_stride;
        int32_t* dst = out.block_table + i * p.out_width;
        for (int64_t c = 0; c < p.out_width; ++c)
          dst[c] = (valid && c < p.bt_width) ? src[c] : 0;
      }
    }
  }
}

}  // namespace

int indexer_prefill_arrays(int device_id, void* stream, const int32_t* qsl,
                           const int32_t* seq_lens, const IndexerPrefillParams& params,
                           const IndexerPrefillArrays& out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  indexer_prefill_kernel<<<1, kPrefillBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, seq_lens, params, out);
  return cudaGetLastError();
}

int indexer_decode_tensors(int device_id, void* stream, const int32_t* qsl,
                           const int32_t* seq_lens, const IndexerDecodeParams& params,
                           const IndexerDecodeOut& out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  int64_t rows = params.num_decodes;
  if (params.mode == kIndexerNative2D) rows = params.num_decodes * params.max_decode_len;
  if (params.mode >= kIndexerFlatten && params.num_decode_tokens > rows)
    rows = params.num_decode_tokens;
  int64_t blocks = (rows + kBlock - 1) / kBlock;
  if (blocks < 1) blocks = 1;
  indexer_decode_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kBlock, 0,
                          static_cast<cudaStream_t>(stream)>>>(qsl, seq_lens, params, out, rows);
  return cudaGetLastError();
}

namespace {

__global__ void __launch_bounds__(kBlock)
    kpool_tail_kernel(const int32_t* __restrict__ qsl, int64_t n, const int32_t* __restrict__ bt,
                      int64_t stride, const int64_t* __restrict__ positions,
                      const int64_t* __restrict__ slot_mapping, int64_t actual, int64_t tokens,
                      int32_t kpool, int64_t* __restrict__ out) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; t < tokens;
       t += static_cast<int64_t>(gridDim.x) * kBlock) {
    if (t >= actual || n <= 0) {
      out[t] = slot_mapping[t];
      continue;
    }
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (qsl[mid] <= t)
        lo = mid + 1;
      else
        hi = mid;
    }
    int64_t r = lo - 1;
    r = r < 0 ? 0 : (r > n - 1 ? n - 1 : r);
    const int64_t block = bt[r * stride];
    const int64_t rem = ((positions[t] % kpool) + kpool) % kpool;
    out[t] = block != 0 ? block * kpool + rem : -1;
  }
}

__global__ void __launch_bounds__(kBlock)
    kpool_tail_draft_kernel(int64_t* __restrict__ slots, const int64_t* __restrict__ positions,
                            int64_t n, int32_t kpool) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * kBlock) {
    const int64_t s = slots[t];
    const int64_t q = s >= 0 ? s / kpool : -((-s + kpool - 1) / kpool);
    slots[t] = q * kpool + ((positions[t] % kpool) + kpool) % kpool;
  }
}

unsigned grid_for(int64_t rows) {
  int64_t blocks = (rows + kBlock - 1) / kBlock;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}

}  // namespace

int kpool_tail_slot_mapping(int device_id, void* stream, const int32_t* qsl, int64_t num_reqs,
                            const int32_t* block_table, int64_t stride, const int64_t* positions,
                            const int64_t* slot_mapping, int64_t num_actual_tokens,
                            int64_t num_tokens, int32_t kpool, int64_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  kpool_tail_kernel<<<grid_for(num_tokens), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      qsl, num_reqs, block_table, stride, positions, slot_mapping, num_actual_tokens, num_tokens,
      kpool, out);
  return cudaGetLastError();
}

int kpool_tail_draft_update(int device_id, void* stream, int64_t* slot_mapping,
                            const int64_t* positions, int64_t n, int32_t kpool) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  kpool_tail_draft_kernel<<<grid_for(n), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      slot_mapping, positions, n, kpool);
  return cudaGetLastError();
}

}  // namespace attn::kernels
