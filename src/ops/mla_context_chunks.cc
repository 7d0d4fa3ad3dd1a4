// vLLM 0.33's MLA chunked context (mla_attention.py: plan_mla_context_chunks and
// build_mla_chunked_context_metadata), written once (src/ops/launch.h): the planner, the host
// lists and the device tensors.
//
// Planner decision: the plan is a sequential greedy pass (vLLM runs it on the CPU), written once
// as plan_chunks (ATTN_HD). The host runs it for the host lists (mla_context_chunk_plan, which
// also refuses what does not fit the capacities); the tensors op runs it again where its tensors
// are, on the host or in one device thread (p.single), from the prefills' query_start_loc and
// the context lengths the builder uploads there (vLLM 0.33's context_lens_cpu). Planning on the
// device rather than uploading the host's plan keeps the op's inputs two small device arrays,
// so a captured build plans again from whatever they hold when it is replayed, and needs no
// upload of the plan's several per-entry arrays. Then one row per chunk (p.for_each_row), whose
// lanes fill the chunk's token_to_seq (and padded_local_token_to_seq) rows entry by entry.
#include <algorithm>
#include <numeric>

#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/error.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::cdiv;
using kernels::imin;
using kernels::Lanes;

/// The settings build_mla_chunked_context_metadata derives from its arguments (on the host:
/// the device gets them by value).
struct Geometry {
  bool dcp = false;
  int64_t virtual_block = 1, interleave = 1;
  int64_t budget = 0;     ///< row_budget
  int64_t alignment = 1;  ///< chunk_alignment
  int64_t max_chunk = 0;  ///< max_context_chunk
  /// padded_rows: the rows a piece of `rows` context tokens takes in this rank's workspace.
  ATTN_HD_INLINE int64_t padded(int64_t rows) const {
    return dcp ? cdiv(rows, virtual_block) * interleave : rows;
  }
};

Geometry geometry(const MlaChunkParams& p) {
  Geometry g;
  g.alignment = std::max<int32_t>(1, p.block_size);
  g.budget = p.workspace_size;
  if (p.dcp_size > 1) {
    g.dcp = true;
    g.interleave = std::max<int32_t>(1, p.interleave);
    g.virtual_block = g.interleave * p.dcp_size;
    g.budget = p.workspace_size / p.dcp_size;
    g.alignment = std::lcm(g.alignment, g.virtual_block);
  }
  g.max_chunk = p.workspace_size / g.alignment * g.alignment;  // round_down
  return g;
}

/// plan_mla_context_chunks' aligned_split_len: the longest aligned piece from `start` whose
/// padded rows fit in `available`, at most max_context_chunk and shorter than `remaining`.
ATTN_HD_INLINE int64_t aligned_split_len(const Geometry& g, int64_t start, int64_t remaining,
                                         int64_t available) {
  const int64_t max_split = imin(g.max_chunk, (remaining - 1) / g.alignment * g.alignment);
  int64_t low = 0, high = max_split / g.alignment;
  while (low < high) {
    const int64_t mid = (low + high + 1) / 2;
    const int64_t rows = g.padded(start + mid * g.alignment) - g.padded(start);
    if (rows <= available)
      low = mid;
    else
      high = mid - 1;
  }
  return low * g.alignment;
}

/// What plan_chunks stopped on.
enum PlanStatus : int {
  kPlanned = 0,
  kTooManyChunks,
  kTooManyEntries,
  kTooManyTokens,       ///< (planned: the token arrays are not the planner's)
  kTooManyLocalTokens,  ///< (planned)
};

/// The plan: chunk c holds entries [chunk_entry_offsets[c], [c + 1]), each a piece (request,
/// start, len) of one request's context. Writes chunk_entry_offsets[c] for c < C (the caller
/// closes it), the entries, and those per-chunk, per-entry and per-boundary arrays of `out`
/// that are not null (query_start_loc reads `qsl`; mla_context_chunk_tensors documents them).
/// Counts into `n`. Never writes past the chunk and entry capacities of `p`: stops at the first
/// chunk or entry beyond them; the token capacities are checked at the end.
ATTN_HD_INLINE PlanStatus plan_chunks(const int32_t* context_lens, const int32_t* qsl, int64_t P,
                                      const Geometry& g, const MlaChunkParams& p,
                                      const MlaChunkTensors& out, MlaChunkCounts& n) {
  int64_t request = 0, start = 0;
  while (request < P) {
    if (context_lens[request] <= 0) {
      ++request;
      continue;
    }
    if (n.num_chunks >= p.max_chunks) return kTooManyChunks;
    const int64_t e0 = n.num_entries, b0 = e0 + n.num_chunks, rs = request;
    out.chunk_entry_offsets[n.num_chunks] = static_cast<int32_t>(e0);
    if (out.chunk_token_offsets) out.chunk_token_offsets[n.num_chunks] = static_cast<int32_t>(n.num_tokens);
    if (out.chunk_local_token_offsets)
      out.chunk_local_token_offsets[n.num_chunks] = static_cast<int32_t>(n.num_local_tokens);
    if (out.cu_seq_lens) out.cu_seq_lens[b0] = 0;
    if (out.query_start_loc) out.query_start_loc[b0] = 0;
    if (g.dcp && out.padded_local_cu_seq_lens) out.padded_local_cu_seq_lens[b0] = 0;
    int64_t rows = 0, cu = 0, local_cu = 0;
    while (request < P && context_lens[request] > 0) {
      const int64_t remaining = context_lens[request] - start;
      const int64_t request_rows = g.padded(start + remaining) - g.padded(start);
      const bool split = rows + request_rows > g.budget;
      const int64_t len = split ? aligned_split_len(g, start, remaining, g.budget - rows) : remaining;
      if (len == 0) break;  // (split) the rest goes to the next chunk
      if (n.num_entries >= p.max_entries) return kTooManyEntries;
      const int64_t e = n.num_entries, j = e - e0;  // j: the entry's index in its chunk
      const int64_t local_start = g.padded(start), local_len = g.padded(start + len) - local_start;
      out.entry_request[e] = static_cast<int32_t>(request);
      out.entry_start[e] = static_cast<int32_t>(start);
      out.entry_len[e] = static_cast<int32_t>(len);
      if (out.starts) out.starts[e] = static_cast<int32_t>(g.dcp ? local_start : start);
      if (out.query_start_loc) out.query_start_loc[b0 + j + 1] = qsl[request + 1] - qsl[rs];
      cu += len;
      local_cu += local_len;
      if (out.cu_seq_lens) out.cu_seq_lens[b0 + j + 1] = static_cast<int32_t>(cu);
      if (g.dcp && out.padded_local_cu_seq_lens)
        out.padded_local_cu_seq_lens[b0 + j + 1] = static_cast<int32_t>(local_cu);
      ++n.num_entries;
      n.num_tokens += len;
      n.num_local_tokens += local_len;
      if (split) {
        start += len;
        break;
      }
      rows += request_rows;
      ++request;
      start = 0;
    }
    // Nothing fitted an empty chunk: not for a geometry that plans (vLLM would loop forever).
    if (n.num_entries == e0) return kTooManyChunks;
    ++n.num_chunks;
  }
  if (n.num_tokens > p.max_tokens) return kTooManyTokens;
  if (g.dcp && n.num_local_tokens > p.max_local_tokens) return kTooManyLocalTokens;
  return kPlanned;
}

[[noreturn]] void too_small(const char* who, const char* what, int64_t cap) {
  const char* prefix = who ? who : "";
  const char* colon = who ? ": " : "";
  fail(Status::kInvalidArgument, prefix, colon, "the batch's chunked context needs more than the ",
       cap, " ", what, " the builder's buffers hold (sized from max_num_seqs and max_model_len)");
}

bool any_context(const int32_t* context_lens, int64_t num_prefills) {
  for (int64_t i = 0; i < num_prefills; ++i)
    if (context_lens[i] > 0) return true;
  return false;
}

/// rows [row, row + len) of `dst` (none at or past `capacity`) = j, over the lanes.
ATTN_HD_INLINE void fill_rows(const Lanes& lanes, int32_t* dst, int64_t row, int64_t len,
                              int64_t capacity, int32_t j) {
  lanes.for_each(imin(len, capacity - row), [&](int64_t t) { dst[row + t] = j; });
}

/// The device tensors: the plan where the tensors are (one thread), then a row per chunk.
/// `chunks`: the host plan's C (at most max_chunks), the rows launched; past the plan made here
/// (the same as the host's: both plan from the host's context lengths) the offsets repeat the
/// totals, so every row reads what was written.
template <class P>
void chunk_tensors_on(P& p, const int32_t* qsl, const int32_t* context_lens, int64_t num_prefills,
                      Geometry g, MlaChunkParams params, int64_t chunks, MlaChunkTensors out) {
  p.single([=] ATTN_HD() {
    MlaChunkCounts n;
    plan_chunks(context_lens, qsl, num_prefills, g, params, out, n);
    for (int64_t c = n.num_chunks; c <= chunks; ++c) {
      out.chunk_entry_offsets[c] = static_cast<int32_t>(n.num_entries);
      out.chunk_token_offsets[c] = static_cast<int32_t>(n.num_tokens);
      out.chunk_local_token_offsets[c] = static_cast<int32_t>(n.num_local_tokens);
    }
  });
  p.for_each_row(chunks, [=] ATTN_HD(int64_t c, Lanes lanes) {
    const int64_t e0 = out.chunk_entry_offsets[c], e1 = out.chunk_entry_offsets[c + 1];
    int64_t row = out.chunk_token_offsets[c], local_row = out.chunk_local_token_offsets[c];
    for (int64_t e = e0; e < e1; ++e) {
      const auto j = static_cast<int32_t>(e - e0);
      const int64_t s = out.entry_start[e], len = out.entry_len[e];
      if (out.token_to_seq) fill_rows(lanes, out.token_to_seq, row, len, params.max_tokens, j);
      row += len;
      if (g.dcp) {
        const int64_t local_len = g.padded(s + len) - g.padded(s);
        if (out.padded_local_token_to_seq)
          fill_rows(lanes, out.padded_local_token_to_seq, local_row, local_len,
                    params.max_local_tokens, j);
        local_row += local_len;
      }
    }
  });
}

}  // namespace

MlaChunkCounts mla_context_chunk_plan(const int32_t* context_lens, const int32_t* qsl,
                                      int64_t num_prefills, const MlaChunkParams& params,
                                      const MlaChunkHostOut& out, const char* who) {
  const int64_t P = num_prefills;
  if (!any_context(context_lens, P)) return MlaChunkCounts{};
  const Geometry g = geometry(params);
  if (g.max_chunk <= 0) {
    const char* prefix = who ? who : "";
    const char* colon = who ? ": " : "";
    invalid(prefix, colon, "the chunked prefill workspace (", params.workspace_size,
            " rows) is smaller than the context chunk alignment (", g.alignment,
            " rows; vLLM asserts max_context_chunk > 0)");
  }
  if (!out.chunk_entry_offsets || !out.entry_request || !out.entry_start || !out.entry_len)
    fail(Status::kInternal, "mla_context_chunk_plan: the plan scratch is NULL");
  MlaChunkTensors plan;
  plan.chunk_entry_offsets = out.chunk_entry_offsets;
  plan.entry_request = out.entry_request;
  plan.entry_start = out.entry_start;
  plan.entry_len = out.entry_len;
  MlaChunkCounts n;
  switch (plan_chunks(context_lens, qsl, P, g, params, plan, n)) {
    case kTooManyChunks: too_small(who, "chunks", params.max_chunks);
    case kTooManyEntries: too_small(who, "entries", params.max_entries);
    case kTooManyTokens: too_small(who, "context rows", params.max_tokens);
    case kTooManyLocalTokens: too_small(who, "padded local rows", params.max_local_tokens);
    case kPlanned: break;
  }
  out.chunk_entry_offsets[n.num_chunks] = static_cast<int32_t>(n.num_entries);
  const int32_t* off = out.chunk_entry_offsets;
  auto set = [](int32_t* a, int64_t i, int64_t v) {
    if (a) a[i] = static_cast<int32_t>(v);
  };
  int64_t tokens = 0, local_tokens = 0;
  for (int64_t c = 0; c < n.num_chunks; ++c) {
    const int64_t e0 = off[c], e1 = off[c + 1];
    const int64_t rs = out.entry_request[e0], re = out.entry_request[e1 - 1] + 1;
    int64_t chunk_tokens = 0, chunk_local = 0, max_len = 0, max_q = 0;
    bool active = true;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t s = out.entry_start[e], len = out.entry_len[e];
      const int64_t local_start = g.padded(s), local_len = g.padded(s + len) - local_start;
      chunk_tokens += len;
      chunk_local += local_len;
      max_len = std::max(max_len, len);
      active = active && len > 0;
      set(out.seq_lens, e, len);
      if (g.dcp) {
        set(out.padded_local_seq_lens, e, local_len);
        set(out.local_starts, e, local_start);
        if (out.local_context_lens_allranks)
          for (int32_t r = 0; r < params.dcp_size; ++r)
            out.local_context_lens_allranks[e * params.dcp_size + r] = dcp_local_len(
                context_lens[out.entry_request[e]], params.dcp_size, r, params.interleave);
      }
    }
    for (int64_t r = rs; r < re; ++r) {
      const int64_t q = qsl[r + 1] - qsl[r];
      max_q = std::max(max_q, q);
      active = active && q > 0;
    }
    set(out.request_start, c, rs);
    set(out.request_end, c, re);
    set(out.token_start, c, qsl[rs] - qsl[0]);
    set(out.token_end, c, qsl[re] - qsl[0]);
    set(out.continuation_token_end, c, qsl[rs + 1] - qsl[0]);
    set(out.is_continuation, c, out.entry_start[e0] > 0);
    set(out.num_context_tokens, c, chunk_tokens);
    set(out.max_query_len, c, max_q);
    set(out.max_seq_len, c, max_len);
    set(out.all_rows_active, c, active);
    set(out.num_local_context_tokens, c, g.dcp ? chunk_local : chunk_tokens);
    set(out.request_offsets, c, e0);
    set(out.boundary_offsets, c, e0 + c);
    set(out.token_offsets, c, tokens);
    set(out.local_token_offsets, c, local_tokens);
    tokens += chunk_tokens;
    local_tokens += g.dcp ? chunk_local : chunk_tokens;
  }
  set(out.request_offsets, n.num_chunks, n.num_entries);
  set(out.token_offsets, n.num_chunks, tokens);
  set(out.local_token_offsets, n.num_chunks, local_tokens);
  int64_t empty = 0;
  for (int64_t i = 0; i < P; ++i) {
    set(out.context_lens_list, i, context_lens[i]);
    if (context_lens[i] == 0) {
      set(out.empty_token_slices, 2 * empty, qsl[i] - qsl[0]);
      set(out.empty_token_slices, 2 * empty + 1, qsl[i + 1] - qsl[0]);
      ++empty;
    }
  }
  if (out.num_empty) *out.num_empty = empty;
  return n;
}

void mla_context_chunk_tensors(const Exec& exec, const int32_t* qsl, const int32_t* context_lens,
                               int64_t num_prefills, const MlaChunkParams& params,
                               const MlaChunkCounts& counts, const MlaChunkTensors& out) {
  if (!out.chunk_entry_offsets || !out.chunk_token_offsets || !out.chunk_local_token_offsets ||
      !out.entry_request || !out.entry_start || !out.entry_len)
    invalid("mla_context_chunk_tensors: the plan scratch arrays must not be NULL");
  if (!context_lens) invalid("mla_context_chunk_tensors: context_lens must not be NULL");
  if (num_prefills <= 0) return;
  const int64_t chunks = std::min(counts.num_chunks, params.max_chunks);
  if (chunks <= 0) return;  // no prefill has context: nothing to write
  ATTN_LAUNCH(exec, chunk_tensors_on, qsl, context_lens, num_prefills, geometry(params), params,
              chunks, out);
}

}  // namespace attn::ops
