// vLLM 0.33's MLA chunked context (mla_attention.py: plan_mla_context_chunks and
// build_mla_chunked_context_metadata): the host planner, the host lists and the host reference
// of the device tensors, with their CUDA dispatch.
#include <algorithm>
#include <numeric>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"
#include "ops/error.h"

namespace attn::ops {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_down(int64_t a, int64_t b) { return a / b * b; }

/// The settings build_mla_chunked_context_metadata derives from its arguments.
struct Geometry {
  bool dcp = false;
  int64_t virtual_block = 1, interleave = 1;
  int64_t budget = 0;     ///< row_budget
  int64_t alignment = 1;  ///< chunk_alignment
  int64_t max_chunk = 0;  ///< max_context_chunk
  int64_t padded(int64_t rows) const { return dcp ? cdiv(rows, virtual_block) * interleave : rows; }
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
  g.max_chunk = round_down(p.workspace_size, g.alignment);
  return g;
}

/// plan_mla_context_chunks' aligned_split_len: the longest aligned piece from `start` whose
/// padded rows fit in `available`, at most max_context_chunk and shorter than `remaining`.
int64_t aligned_split_len(const Geometry& g, int64_t start, int64_t remaining, int64_t available) {
  const int64_t max_split = std::min(g.max_chunk, round_down(remaining - 1, g.alignment));
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

[[noreturn]] void too_small(const char* who, const char* what, int64_t cap) {
  const char* prefix = who ? who : "";
  const char* colon = who ? ": " : "";
  fail(Status::kInvalidArgument, prefix, colon, "the batch's chunked context needs more than the ",
       cap, " ", what, " the builder's buffers hold (sized from max_num_seqs and max_model_len)");
}

/// The plan as entries: chunk c holds entries [chunk_entry_offsets[c], [c + 1]), each a piece
/// (request, start, len) of one request's context. Returns C and E (T and T_local too).
MlaChunkCounts plan_entries(const int32_t* context_lens, int64_t num_prefills, const Geometry& g,
                            const MlaChunkParams& p, int32_t* chunk_entry_offsets,
                            int32_t* entry_request, int32_t* entry_start, int32_t* entry_len,
                            const char* who) {
  MlaChunkCounts n;
  int64_t request = 0, start = 0;
  auto push = [&](int64_t r, int64_t s, int64_t len) {
    if (n.num_entries >= p.max_entries) too_small(who, "entries", p.max_entries);
    entry_request[n.num_entries] = static_cast<int32_t>(r);
    entry_start[n.num_entries] = static_cast<int32_t>(s);
    entry_len[n.num_entries] = static_cast<int32_t>(len);
    ++n.num_entries;
    n.num_tokens += len;
    n.num_local_tokens += g.padded(s + len) - g.padded(s);
  };
  while (request < num_prefills) {
    if (context_lens[request] == 0) {
      ++request;
      continue;
    }
    if (n.num_chunks >= p.max_chunks) too_small(who, "chunks", p.max_chunks);
    chunk_entry_offsets[n.num_chunks] = static_cast<int32_t>(n.num_entries);
    int64_t rows = 0;
    while (request < num_prefills && context_lens[request] > 0) {
      const int64_t remaining = context_lens[request] - start;
      const int64_t request_rows = g.padded(start + remaining) - g.padded(start);
      if (rows + request_rows > g.budget) {
        const int64_t split = aligned_split_len(g, start, remaining, g.budget - rows);
        if (split > 0) {
          push(request, start, split);
          rows += g.padded(start + split) - g.padded(start);
          start += split;
        }
        break;
      }
      rows += request_rows;
      push(request, start, remaining);
      ++request;
      start = 0;
    }
    ++n.num_chunks;
  }
  chunk_entry_offsets[n.num_chunks] = static_cast<int32_t>(n.num_entries);
  if (n.num_tokens > p.max_tokens) too_small(who, "context rows", p.max_tokens);
  if (g.dcp && n.num_local_tokens > p.max_local_tokens)
    too_small(who, "padded local rows", p.max_local_tokens);
  return n;
}

bool any_context(const int32_t* context_lens, int64_t num_prefills) {
  for (int64_t i = 0; i < num_prefills; ++i)
    if (context_lens[i] > 0) return true;
  return false;
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
  const MlaChunkCounts n = plan_entries(context_lens, P, g, params, out.chunk_entry_offsets,
                                        out.entry_request, out.entry_start, out.entry_len, who);
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
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, mla_context_chunk_tensors, qsl, context_lens, num_prefills,
                            params, counts, out);
  const int64_t P = num_prefills;
  if (counts.num_chunks == 0) return;
  const Geometry g = geometry(params);
  const MlaChunkCounts n = plan_entries(context_lens, P, g, params, out.chunk_entry_offsets,
                                        out.entry_request, out.entry_start, out.entry_len, nullptr);
  const int32_t* off = out.chunk_entry_offsets;
  int64_t tokens = 0, local_tokens = 0;
  for (int64_t c = 0; c < n.num_chunks; ++c) {
    const int64_t e0 = off[c], e1 = off[c + 1], b0 = e0 + c;
    const int64_t rs = out.entry_request[e0];
    out.chunk_token_offsets[c] = static_cast<int32_t>(tokens);
    out.chunk_local_token_offsets[c] = static_cast<int32_t>(local_tokens);
    int64_t cu = 0, local_cu = 0;
    if (out.cu_seq_lens) out.cu_seq_lens[b0] = 0;
    if (out.padded_local_cu_seq_lens && g.dcp) out.padded_local_cu_seq_lens[b0] = 0;
    if (out.query_start_loc) out.query_start_loc[b0] = 0;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t s = out.entry_start[e], len = out.entry_len[e];
      const int64_t local_start = g.padded(s), local_len = g.padded(s + len) - local_start;
      const int64_t j = e - e0;  // the entry's index in its chunk
      const int64_t r = out.entry_request[e];
      if (out.starts) out.starts[e] = static_cast<int32_t>(g.dcp ? local_start : s);
      if (out.query_start_loc) out.query_start_loc[b0 + j + 1] = qsl[r + 1] - qsl[rs];
      if (out.token_to_seq)
        for (int64_t t = 0; t < len; ++t)
          out.token_to_seq[tokens + cu + t] = static_cast<int32_t>(j);
      cu += len;
      if (out.cu_seq_lens) out.cu_seq_lens[b0 + j + 1] = static_cast<int32_t>(cu);
      if (g.dcp) {
        if (out.padded_local_token_to_seq)
          for (int64_t t = 0; t < local_len; ++t)
            out.padded_local_token_to_seq[local_tokens + local_cu + t] = static_cast<int32_t>(j);
        local_cu += local_len;
        if (out.padded_local_cu_seq_lens)
          out.padded_local_cu_seq_lens[b0 + j + 1] = static_cast<int32_t>(local_cu);
      }
    }
    tokens += cu;
    local_tokens += g.dcp ? local_cu : cu;
  }
  out.chunk_token_offsets[n.num_chunks] = static_cast<int32_t>(tokens);
  out.chunk_local_token_offsets[n.num_chunks] = static_cast<int32_t>(local_tokens);
}

}  // namespace attn::ops
