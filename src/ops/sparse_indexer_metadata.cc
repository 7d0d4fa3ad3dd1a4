// DEEPSEEK_V32_INDEXER's computed arrays (vLLM 0.33's DeepseekV32IndexerMetadataBuilder: the
// prefill chunks of build_prefill_chunk_metadata and the decode tensors of build()) and
// KPOOL_TAIL's slot mappings, written once (src/ops/launch.h).
//
// Planner: _split_indexer_prefill_chunks' greedy request groups (plan_groups below) are one
// function. The host runs it in indexer_prefill_groups (the builder's chunk lists and scalars,
// from its host lengths); indexer_prefill_arrays runs it again where the arrays are written, in
// p.single (one device thread), from the device query_start_loc and the plan lengths the builder
// gives (its seq_lens_cpu_upper_bound rows, which the builder uploads itself, or seq_lens):
// planned on the device, the cu arrays and row starts of a captured graph follow the replay's
// lengths instead of being baked into the capture. The tokens are then a row per prefill.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::floor_div;
using kernels::floor_mod;
using kernels::iclamp;
using kernels::imax;
using kernels::imin;
using kernels::Lanes;

/// _split_indexer_prefill_chunks' greedy groups over the prefills [0, np): prefill k has
/// query_len(k) query tokens and split_len(k) K rows (already clamped by min_split_seq_len); a
/// prefill joins the group while n + s <= workspace_size and (m + q) * (n + s) <=
/// max_logits_elems, and one that fits nowhere is a group of its own. Calls on_group(g, start,
/// end, m, n) for each group in order; returns their number.
template <class Q, class S, class G>
ATTN_HD int64_t plan_groups(int64_t np, int64_t workspace_size, int64_t max_logits_elems,
                            Q query_len, S split_len, G on_group) {
  int64_t count = 0, end = 0;
  while (end < np) {
    const int64_t start = end;
    int64_t m = 0, n = 0;
    while (end < np) {
      const int64_t m2 = m + query_len(end), n2 = n + split_len(end);
      if (n2 > workspace_size || m2 * n2 > max_logits_elems) break;
      m = m2;
      n = n2;
      ++end;
    }
    if (end == start) {  // one request over the budget: a group of its own
      m = query_len(end);
      n = split_len(end);
      ++end;
    }
    on_group(count++, start, end, m, n);
  }
  return count;
}

ATTN_HD_INLINE int32_t local_or_global(int64_t len, int32_t dcp_size, int32_t dcp_rank,
                                       int32_t interleave) {
  return dcp_size > 1 ? kernels::dcp_local_len(len, dcp_size, dcp_rank, interleave)
                      : static_cast<int32_t>(len);
}

/// A decode length as written: DCP-local, then in compressed states.
ATTN_HD_INLINE int32_t decode_len(int64_t len, const IndexerDecodeParams& p) {
  return static_cast<int32_t>(
      floor_div(local_or_global(len, p.dcp_size, p.dcp_rank, p.interleave), p.compress_ratio));
}

template <class P>
void indexer_prefill_on(P& p, const int32_t* qsl, const int32_t* seq_lens,
                        const IndexerPrefillParams& prm, const IndexerPrefillArrays& arrays) {
  const IndexerPrefillParams a = prm;
  const IndexerPrefillArrays out = arrays;
  const int64_t nd = a.num_decodes, np = a.num_prefills;
  // the K rows of request r: its compressed length (seq_lens // compress_ratio)
  auto rows = [=] ATTN_HD(int64_t r) -> int64_t {
    return floor_div(seq_lens[r], a.compress_ratio);
  };
  p.single([=] ATTN_HD() {
    // the groups plan K rows from plan_seq_lens (vLLM's bound) // compress_ratio
    const int32_t* plan = a.plan_seq_lens ? a.plan_seq_lens : seq_lens;
    const bool dcp = a.dcp_size > 1;
    plan_groups(
        np, a.workspace_size, a.max_logits_elems,
        [=](int64_t k) -> int64_t { return qsl[nd + k + 1] - qsl[nd + k]; },
        [=](int64_t k) -> int64_t {
          return imax<int64_t>(floor_div(plan[nd + k], a.compress_ratio), a.min_split_seq_len);
        },
        [=](int64_t g, int64_t start, int64_t end, int64_t, int64_t) {
          int64_t cu = 0, local = 0;
          for (int64_t k = start; k <= end; ++k) {
            out.cu_seq_lens[k + g] = static_cast<int32_t>(cu);
            if (dcp) out.local_cu_seq_lens[k + g] = static_cast<int32_t>(local);
            if (k == end) break;
            out.row_start[k] = static_cast<int32_t>(dcp ? local : cu);
            cu += rows(nd + k);
            if (dcp)
              local += kernels::dcp_local_len(rows(nd + k), a.dcp_size, a.dcp_rank, a.interleave);
          }
        });
  });
  // prefill k's tokens (within the prefills' [qsl[nd], qsl[nd + np]): the device's lengths stay
  // inside the arrays even where they disagree with the validated host mirror)
  p.for_each_row(np, [=] ATTN_HD(int64_t k, Lanes lanes) {
    const int64_t r = nd + k, first = qsl[nd], last = qsl[nd + np];
    const int64_t begin = imax<int64_t>(qsl[r], first), end = imin<int64_t>(qsl[r + 1], last);
    // token t's causal context: seq_len - query_len + 1 + (t - qsl[r])
    const int64_t ctx0 = static_cast<int64_t>(seq_lens[r]) - (qsl[r + 1] - qsl[r]) + 1 - qsl[r];
    const int32_t row = out.row_start[k];
    lanes.for_each(end - begin, [&](int64_t j) {
      const int64_t t = begin + j;
      out.cu_seqlen_ks[t - first] = row;
      out.cu_seqlen_ke[t - first] =
          row + local_or_global(floor_div(ctx0 + t, a.compress_ratio), a.dcp_size, a.dcp_rank,
                                a.interleave);
    });
  });
}

template <class P>
void indexer_decode_on(P& p, const int32_t* qsl, const int32_t* seq_lens,
                       const IndexerDecodeParams& prm, const IndexerDecodeOut& outs) {
  const IndexerDecodeParams a = prm;
  const IndexerDecodeOut out = outs;
  const int64_t nd = a.num_decodes;
  p.for_each(nd, [=] ATTN_HD(int64_t b) {
    const int32_t q = qsl[b + 1] - qsl[b];
    if (out.per_req_decode_lens) out.per_req_decode_lens[b] = q;
    if (a.mode <= kernels::kIndexerNative2D && out.decode_lens) out.decode_lens[b] = q;
    if (a.mode == kernels::kIndexerNative1 && out.seq_lens)
      out.seq_lens[b] = decode_len(seq_lens[b], a);
  });
  if (a.mode == kernels::kIndexerNative2D) {
    const int64_t w = a.max_decode_len;
    p.for_each(nd * w, [=] ATTN_HD(int64_t i) {
      const int64_t v = imax<int64_t>(seq_lens[i / w] - w + 1 + i % w, 0);
      out.seq_lens[i] = decode_len(v, a);
    });
    return;
  }
  if (a.mode < kernels::kIndexerFlatten) return;
  // one row per decode token: its request b, its causal length, b's block-table row
  const bool varlen = a.mode == kernels::kIndexerVarlen;
  p.for_each_row(a.num_decode_tokens, [=] ATTN_HD(int64_t i, Lanes lanes) {
    const int64_t b = kernels::request_of_token(qsl, nd, i);
    const int64_t actual = qsl[nd];
    const bool valid = !varlen || i < actual;
    if (lanes.leader()) {
      int64_t v = 0;
      if (valid) v = static_cast<int64_t>(seq_lens[b]) - (qsl[b + 1] - qsl[b]) + (i - qsl[b]) + 1;
      if (out.global_seq_lens) out.global_seq_lens[i] = static_cast<int32_t>(v);
      if (a.uniform_kernel) v = imax<int64_t>(v, 0);
      out.seq_lens[i] = decode_len(v, a);
      if (out.decode_lens) out.decode_lens[i] = 1;
      if (out.indices) out.indices[i] = static_cast<int32_t>(valid ? b : nd + i - actual);
    }
    if (out.block_table) {
      const int32_t* src = a.block_table + b * a.bt_stride;
      int32_t* dst = out.block_table + i * a.out_width;
      const int64_t width = a.bt_width;
      lanes.for_each(a.out_width, [&](int64_t c) { dst[c] = (valid && c < width) ? src[c] : 0; });
    }
  });
}

template <class P>
void kpool_slots_on(P& p, const int32_t* qsl, int64_t num_reqs, const int32_t* block_table,
                    int64_t stride, const int64_t* positions, const int64_t* slot_mapping,
                    int64_t num_actual_tokens, int64_t num_tokens, int32_t kpool, int64_t* out) {
  // the tokens past the actual ones (every token in a batch of no request): the slot mapping
  const int64_t actual = num_reqs > 0 ? iclamp<int64_t>(num_actual_tokens, 0, num_tokens) : 0;
  p.for_each(num_tokens - actual,
             [=] ATTN_HD(int64_t j) { out[actual + j] = slot_mapping[actual + j]; });
  // Request r's tokens: the last r with qsl[r] <= t, at most num_reqs - 1 (the first request
  // also takes any token before qsl[0], the last every token from qsl[num_reqs] on), written
  // a row per request (no search per token).
  p.for_each_row(num_reqs, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int64_t begin = r == 0 ? 0 : iclamp<int64_t>(qsl[r], 0, actual);
    const int64_t end = r == num_reqs - 1 ? actual : iclamp<int64_t>(qsl[r + 1], 0, actual);
    if (end <= begin) return;  // column 0 is read only for a request with tokens, as vLLM's
    const int64_t block = block_table[r * stride];
    lanes.for_each(end - begin, [&](int64_t j) {
      const int64_t t = begin + j;
      out[t] = block != 0 ? block * kpool + floor_mod(positions[t], kpool) : -1;
    });
  });
}

template <class P>
void kpool_draft_on(P& p, int64_t* slot_mapping, const int64_t* positions, int64_t n,
                    int32_t kpool) {
  p.for_each(n, [=] ATTN_HD(int64_t t) {
    slot_mapping[t] = floor_div(slot_mapping[t], kpool) * kpool + floor_mod(positions[t], kpool);
  });
}

}  // namespace

int64_t indexer_prefill_groups(const int32_t* query_lens, const int32_t* seq_lens,
                               int64_t num_prefills, int64_t workspace_size,
                               int64_t max_logits_elems, int64_t min_split_seq_len,
                               IndexerGroup* groups) {
  return plan_groups(
      num_prefills, workspace_size, max_logits_elems,
      [=] ATTN_HD(int64_t k) -> int64_t { return query_lens[k]; },
      [=] ATTN_HD(int64_t k) -> int64_t { return imax<int64_t>(seq_lens[k], min_split_seq_len); },
      [=] ATTN_HD(int64_t g, int64_t start, int64_t end, int64_t m, int64_t n) {
        groups[g].start = start;
        groups[g].end = end;
        groups[g].m = m;
        groups[g].n = n;
      });
}

void indexer_prefill_arrays(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                            const IndexerPrefillParams& p, const IndexerPrefillArrays& out) {
  if (p.num_prefills <= 0) return;
  ATTN_LAUNCH(exec, indexer_prefill_on, qsl, seq_lens, p, out);
}

void indexer_decode_tensors(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                            const IndexerDecodeParams& p, const IndexerDecodeOut& out) {
  if (p.num_decodes <= 0) return;
  ATTN_LAUNCH(exec, indexer_decode_on, qsl, seq_lens, p, out);
}

void kpool_tail_slot_mapping(const Exec& exec, const int32_t* qsl, int64_t num_reqs,
                             const int32_t* block_table, int64_t stride, const int64_t* positions,
                             const int64_t* slot_mapping, int64_t num_actual_tokens,
                             int64_t num_tokens, int32_t kpool, int64_t* out) {
  if (num_tokens <= 0) return;
  ATTN_LAUNCH(exec, kpool_slots_on, qsl, num_reqs, block_table, stride, positions, slot_mapping,
              num_actual_tokens, num_tokens, kpool, out);
}

void kpool_tail_draft_update(const Exec& exec, int64_t* slot_mapping, const int64_t* positions,
                             int64_t n, int32_t kpool) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, kpool_draft_on, slot_mapping, positions, n, kpool);
}

}  // namespace attn::ops
