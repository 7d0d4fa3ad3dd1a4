// CUDA implementation of ops::mla_context_chunk_tensors (vLLM 0.33's
// build_mla_chunked_context_metadata) in two launches. The plan is a sequential greedy pass
// (vLLM runs it on the CPU), so one thread of the first launch runs it again here, from the
// device query_start_loc and the prefills' context lengths, writing the entries and every
// per-entry / per-boundary array. The context lengths are the host's (vLLM 0.33 derives them
// from seq_lens_cpu_upper_bound, which the device seq_lens cannot give back): the builder
// uploads them into the context_lens tensor before this launch, on the same stream. The second
// launch gives each context row (and each padded local row under DCP) to a thread, which finds
// its chunk and then its entry by binary searches in the offsets and cu_seq_lens the first
// launch wrote. No host reads: the host passes only the sizes its own plan found (grid sizes).
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "kernels.h"

namespace attn::kernels {
namespace {

constexpr int kBlock = 256;

struct Geo {
  bool dcp;
  int64_t virtual_block, interleave, budget, alignment, max_chunk;
  __device__ int64_t padded(int64_t rows) const {
    return dcp ? (rows + virtual_block - 1) / virtual_block * interleave : rows;
  }
};

__device__ int64_t gcd64(int64_t a, int64_t b) {
  while (b != 0) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

__device__ Geo make_geo(const MlaChunkParams& p) {
  Geo g;
  g.dcp = p.dcp_size > 1;
  g.interleave = p.interleave > 1 ? p.interleave : 1;
  g.virtual_block = g.interleave * (g.dcp ? p.dcp_size : 1);
  g.alignment = p.block_size > 1 ? p.block_size : 1;
  g.budget = p.workspace_size;
  if (g.dcp) {
    g.budget = p.workspace_size / p.dcp_size;
    g.alignment = g.alignment / gcd64(g.alignment, g.virtual_block) * g.virtual_block;
  }
  g.max_chunk = p.workspace_size / g.alignment * g.alignment;
  return g;
}

__device__ int64_t split_len(const Geo& g, int64_t start, int64_t remaining, int64_t available) {
  int64_t max_split = (remaining - 1) / g.alignment * g.alignment;
  if (g.max_chunk < max_split) max_split = g.max_chunk;
  int64_t low = 0, high = max_split / g.alignment;
  while (low < high) {
    const int64_t mid = (low + high + 1) / 2;
    if (g.padded(start + mid * g.alignment) - g.padded(start) <= available)
      low = mid;
    else
      high = mid - 1;
  }
  return low * g.alignment;
}

/// Thread 0: the plan and every array indexed by entry, boundary or chunk.
__global__ void __launch_bounds__(kBlock)
    plan_kernel(const int32_t* __restrict__ qsl, const int32_t* __restrict__ context_lens,
                int64_t P, MlaChunkParams p, int64_t host_chunks, MlaChunkTensors out) {
  if (host_chunks == 0) return;
  const Geo g = make_geo(p);
  int64_t chunks = 0, entries = 0, tokens = 0, local_tokens = 0;
  int64_t request = 0, start = 0;
  bool full = false;
  while (request < P && !full) {
    if (context_lens[request] <= 0) {
      ++request;
      continue;
    }
    if (chunks >= p.max_chunks || g.max_chunk <= 0) break;
    const int64_t e0 = entries, b0 = e0 + chunks, rs = request;
    out.chunk_entry_offsets[chunks] = static_cast<int32_t>(e0);
    out.chunk_token_offsets[chunks] = static_cast<int32_t>(tokens);
    out.chunk_local_token_offsets[chunks] = static_cast<int32_t>(local_tokens);
    if (out.cu_seq_lens) out.cu_seq_lens[b0] = 0;
    if (out.query_start_loc) out.query_start_loc[b0] = 0;
    if (g.dcp && out.padded_local_cu_seq_lens) out.padded_local_cu_seq_lens[b0] = 0;
    int64_t rows = 0, cu = 0, local_cu = 0;
    while (request < P) {
      const int64_t context = context_lens[request];
      if (context <= 0) break;
      const int64_t remaining = context - start;
      const int64_t request_rows = g.padded(start + remaining) - g.padded(start);
      int64_t len = remaining;
      bool split = false;
      if (rows + request_rows > g.budget) {
        len = split_len(g, start, remaining, g.budget - rows);
        split = true;
        if (len == 0) break;
      }
      if (entries >= p.max_entries || tokens + cu + len > p.max_tokens) {
        full = true;
        break;
      }
      const int64_t local_start = g.padded(start);
      const int64_t local_len = g.padded(start + len) - local_start;
      if (g.dcp && local_tokens + local_cu + local_len > p.max_local_tokens) {
        full = true;
        break;
      }
      const int64_t j = entries - e0;
      out.entry_request[entries] = static_cast<int32_t>(request);
      out.entry_start[entries] = static_cast<int32_t>(start);
      out.entry_len[entries] = static_cast<int32_t>(len);
      if (out.starts) out.starts[entries] = static_cast<int32_t>(g.dcp ? local_start : start);
      if (out.query_start_loc) out.query_start_loc[b0 + j + 1] = qsl[request + 1] - qsl[rs];
      cu += len;
      local_cu += local_len;
      if (out.cu_seq_lens) out.cu_seq_lens[b0 + j + 1] = static_cast<int32_t>(cu);
      if (g.dcp && out.padded_local_cu_seq_lens)
        out.padded_local_cu_seq_lens[b0 + j + 1] = static_cast<int32_t>(local_cu);
      ++entries;
      if (split) {
        start += len;
        break;
      }
      rows += request_rows;
      ++request;
      start = 0;
    }
    if (entries == e0) break;  // nothing fitted: only when the inputs disagree with the host's
    tokens += cu;
    local_tokens += g.dcp ? local_cu : cu;
    ++chunks;
  }
  // Past the device's plan (the same as the host's unless the mirrors disagree), offsets repeat
  // the totals so that the row kernel's searches stay inside what was written.
  for (int64_t c = chunks; c <= host_chunks && c <= p.max_chunks; ++c) {
    out.chunk_entry_offsets[c] = static_cast<int32_t>(entries);
    out.chunk_token_offsets[c] = static_cast<int32_t>(tokens);
    out.chunk_local_token_offsets[c] = static_cast<int32_t>(local_tokens);
  }
}

/// The last c in [0, n) with offsets[c] <= t (offsets non-decreasing, offsets[0] <= t).
__device__ int64_t last_at_most(const int32_t* offsets, int64_t n, int64_t t) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// Row t of token_to_seq (or of padded_local_token_to_seq): its entry's index in its chunk.
__device__ void map_row(int64_t t, int64_t chunks, const int32_t* chunk_rows,
                        const int32_t* chunk_entries, const int32_t* cu, int32_t* out) {
  if (t >= chunk_rows[chunks]) return;  // the device's plan has fewer rows than the host's
  const int64_t c = last_at_most(chunk_rows, chunks, t);
  const int64_t n = chunk_entries[c + 1] - chunk_entries[c];
  if (n <= 0) return;
  const int32_t* row = cu + chunk_entries[c] + c;  // the chunk's n + 1 boundaries
  out[t] = static_cast<int32_t>(last_at_most(row, n, t - chunk_rows[c]));
}

__global__ void __launch_bounds__(kBlock)
    rows_kernel(int64_t chunks, int64_t tokens, int64_t local_tokens, bool dcp,
                MlaChunkTensors out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlock;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(kBlock) + threadIdx.x;
       t < tokens || (dcp && t < local_tokens); t += stride) {
    if (t < tokens && out.token_to_seq && out.cu_seq_lens)
      map_row(t, chunks, out.chunk_token_offsets, out.chunk_entry_offsets, out.cu_seq_lens,
              out.token_to_seq);
    if (dcp && t < local_tokens && out.padded_local_token_to_seq && out.padded_local_cu_seq_lens)
      map_row(t, chunks, out.chunk_local_token_offsets, out.chunk_entry_offsets,
              out.padded_local_cu_seq_lens, out.padded_local_token_to_seq);
  }
}

}  // namespace

int mla_context_chunk_tensors(int device_id, void* stream, const int32_t* qsl,
                              const int32_t* context_lens, int64_t num_prefills,
                              const MlaChunkParams& params, const MlaChunkCounts& counts,
                              const MlaChunkTensors& out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t chunks =
      counts.num_chunks < params.max_chunks ? counts.num_chunks : params.max_chunks;
  if (chunks == 0) return cudaSuccess;  // no prefill has context: nothing to write
  plan_kernel<<<1, 1, 0, s>>>(qsl, context_lens, num_prefills, params, chunks, out);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  const bool dcp = params.dcp_size > 1;
  const int64_t tokens =
      counts.num_tokens < params.max_tokens ? counts.num_tokens : params.max_tokens;
  int64_t local_tokens = 0;
  if (dcp)
    local_tokens = counts.num_local_tokens < params.max_local_tokens ? counts.num_local_tokens
                                                                     : params.max_local_tokens;
  const int64_t rows = tokens > local_tokens ? tokens : local_tokens;
  if (rows == 0) return cudaSuccess;
  int64_t blocks = (rows + kBlock - 1) / kBlock;
  if (blocks > 65535) blocks = 65535;
  rows_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, s>>>(chunks, tokens, local_tokens, dcp,
                                                               out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
