// DEEPSEEK_V32_INDEXER's computed arrays (vLLM 0.33's DeepseekV32IndexerMetadataBuilder: the
// prefill chunks of build_prefill_chunk_metadata and the decode tensors of build()); host
// reference and CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {
namespace {

int32_t local_or_global(int64_t len, int32_t dcp_size, int32_t dcp_rank, int32_t interleave) {
  return dcp_size > 1 ? dcp_local_len(len, dcp_size, dcp_rank, interleave)
                      : static_cast<int32_t>(len);
}

/// Python's floor division (torch's `//` on int tensors).
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// A decode length as written: DCP-local, then in compressed states.
int32_t decode_len(int64_t len, const IndexerDecodeParams& p) {
  return static_cast<int32_t>(
      floor_div(local_or_global(len, p.dcp_size, p.dcp_rank, p.interleave), p.compress_ratio));
}

/// The first b < n with qsl[b + 1] > t, at most n - 1 (vLLM's _token_request).
int64_t token_request(const int32_t* qsl, int64_t n, int64_t t) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (qsl[mid + 1] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return std::min(lo, n - 1);
}

}  // namespace

int64_t indexer_prefill_groups(const int32_t* query_lens, const int32_t* seq_lens,
                               int64_t num_prefills, int64_t workspace_size,
                               int64_t max_logits_elems, int64_t min_split_seq_len,
                               IndexerGroup* groups) {
  auto split_len = [&](int64_t k) { return std::max<int64_t>(seq_lens[k], min_split_seq_len); };
  int64_t count = 0, end = 0;
  while (end < num_prefills) {
    IndexerGroup g;
    g.start = end;
    while (end < num_prefills) {
      const int64_t m = g.m + query_lens[end], n = g.n + split_len(end);
      if (n > workspace_size || m * n > max_logits_elems) break;
      g.m = m;
      g.n = n;
      ++end;
    }
    if (end == g.start) {  // one request over the budget: a group of its own
      g.m = query_lens[end];
      g.n = split_len(end);
      ++end;
    }
    g.end = end;
    groups[count++] = g;
  }
  return count;
}

void indexer_prefill_arrays(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                            const IndexerPrefillParams& p, const IndexerPrefillArrays& out) {
  if (p.num_prefills <= 0) return;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, indexer_prefill_arrays, qsl, seq_lens, p, out);
  const int64_t nd = p.num_decodes, np = p.num_prefills;
  const bool dcp = p.dcp_size > 1;
  const int64_t ratio = p.compress_ratio;
  // the K rows of request r: its compressed length (seq_lens // compress_ratio)
  auto rows = [&](int64_t r) { return floor_div(seq_lens[r], ratio); };
  // the greedy groups, as indexer_prefill_groups (inline: the kernel's thread 0 does the same)
  const int32_t* plan = p.plan_seq_lens ? p.plan_seq_lens : seq_lens;
  int64_t end = 0, g = 0;
  while (end < np) {
    const int64_t start = end;
    int64_t m = 0, n = 0;
    while (end < np) {
      const int64_t r = nd + end;
      // the groups plan K rows from plan_seq_lens (vLLM's bound) // compress_ratio
      const int64_t s = std::max<int64_t>(floor_div(plan[r], ratio), p.min_split_seq_len);
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
      cu += rows(nd + k);
      if (dcp) local += dcp_local_len(rows(nd + k), p.dcp_size, p.dcp_rank, p.interleave);
    }
    ++g;
  }
  const int64_t first = qsl[nd];
  for (int64_t k = 0; k < np; ++k) {
    const int64_t r = nd + k;
    const int64_t start_pos = static_cast<int64_t>(seq_lens[r]) - (qsl[r + 1] - qsl[r]);
    for (int64_t t = qsl[r]; t < qsl[r + 1]; ++t) {
      const int64_t ctx = start_pos + 1 + (t - qsl[r]);
      out.cu_seqlen_ks[t - first] = out.row_start[k];
      out.cu_seqlen_ke[t - first] =
          out.row_start[k] +
          local_or_global(floor_div(ctx, ratio), p.dcp_size, p.dcp_rank, p.interleave);
    }
  }
}

void indexer_decode_tensors(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                            const IndexerDecodeParams& p, const IndexerDecodeOut& out) {
  const int64_t nd = p.num_decodes, ndt = p.num_decode_tokens;
  if (nd <= 0) return;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, indexer_decode_tensors, qsl, seq_lens, p, out);
  for (int64_t b = 0; b < nd; ++b) {
    if (out.per_req_decode_lens) out.per_req_decode_lens[b] = qsl[b + 1] - qsl[b];
    if (p.mode <= kernels::kIndexerNative2D && out.decode_lens)
      out.decode_lens[b] = qsl[b + 1] - qsl[b];
  }
  if (p.mode == kernels::kIndexerNative1) {
    if (out.seq_lens)
      for (int64_t b = 0; b < nd; ++b)
        out.seq_lens[b] = decode_len(seq_lens[b], p);
    return;
  }
  if (p.mode == kernels::kIndexerNative2D) {
    const int64_t w = p.max_decode_len;
    for (int64_t i = 0; i < nd * w; ++i) {
      const int64_t v = std::max<int64_t>(seq_lens[i / w] - w + 1 + i % w, 0);
      out.seq_lens[i] = decode_len(v, p);
    }
    return;
  }
  const bool varlen = p.mode == kernels::kIndexerVarlen;
  const int64_t actual = qsl[nd];
  for (int64_t i = 0; i < ndt; ++i) {
    const int64_t b = token_request(qsl, nd, i);
    const bool valid = !varlen || i < actual;
    int64_t v = 0;
    if (valid) v = static_cast<int64_t>(seq_lens[b]) - (qsl[b + 1] - qsl[b]) + (i - qsl[b]) + 1;
    if (out.global_seq_lens) out.global_seq_lens[i] = static_cast<int32_t>(v);
    if (p.uniform_kernel) v = std::max<int64_t>(v, 0);
    out.seq_lens[i] = decode_len(v, p);
    if (out.decode_lens) out.decode_lens[i] = 1;
    if (out.indices) out.indices[i] = static_cast<int32_t>(valid ? b : nd + i - actual);
    if (out.block_table) {
      const int32_t* src = p.block_table + b * p.bt_stride;
      int32_t* dst = out.block_table + i * p.out_width;
      for (int64_t c = 0; c < p.out_width; ++c) dst[c] = (valid && c < p.bt_width) ? src[c] : 0;
    }
  }
}

void kpool_tail_slot_mapping(const Exec& exec, const int32_t* qsl, int64_t num_reqs,
                             const int32_t* block_table, int64_t stride, const int64_t* positions,
                             const int64_t* slot_mapping, int64_t num_actual_tokens,
                             int64_t num_tokens, int32_t kpool, int64_t* out) {
  if (num_tokens <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, kpool_tail_slot_mapping, qsl, num_reqs, block_table, stride,
                            positions, slot_mapping, num_actual_tokens, num_tokens, kpool, out);
  for (int64_t t = 0; t < num_tokens; ++t) {
    if (t >= num_actual_tokens || num_reqs <= 0) {
      out[t] = slot_mapping[t];
      continue;
    }
    int64_t lo = 0, hi = num_reqs;  // the last r with qsl[r] <= t
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (qsl[mid] <= t)
        lo = mid + 1;
      else
        hi = mid;
    }
    const int64_t r = std::min(std::max<int64_t>(lo - 1, 0), num_reqs - 1);
    const int64_t block = block_table[r * stride];
    const int64_t rem = ((positions[t] % kpool) + kpool) % kpool;
    out[t] = block != 0 ? block * kpool + rem : -1;
  }
}

void kpool_tail_draft_update(const Exec& exec, int64_t* slot_mapping, const int64_t* positions,
                             int64_t n, int32_t kpool) {
  if (n <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, kpool_tail_draft_update, slot_mapping, positions, n, kpool);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t s = slot_mapping[t];
    const int64_t q = s >= 0 ? s / kpool : -((-s + kpool - 1) / kpool);
    slot_mapping[t] = q * kpool + ((positions[t] % kpool) + kpool) % kpool;
  }
}

}  // namespace attn::ops
