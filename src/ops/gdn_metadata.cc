// GDN_ATTN's spec/non-spec split (and KIMI_K3_KDA's variant), FLA's chunk metadata and the
// masked state gather (vLLM gdn_attn.py), written once (src/ops/launch.h). Each is one row whose
// lanes scan the requests with kernels::row_scan (the spec and non-spec ranks and token
// offsets, the chunk offsets and non-empty ranks), each request writing its own rows.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"
#include "ops/state_space_ops.h"
#include "row_scan.h"

namespace attn::ops {
namespace {

using kernels::imax;
using kernels::imin;
using kernels::Lanes;
using Sums1 = kernels::Sums<1>;
using Sums2 = kernels::Sums<2>;
using Sums4 = kernels::Sums<4>;

/// A state-index row: row[min(j, width - 1)] for j < cols (a column past the table's width reads
/// the last one), 0 for a table without columns.
ATTN_HD_INLINE void copy_state_row(const int32_t* row, int64_t width, int64_t cols,
                                   int32_t* dst) {
  for (int64_t j = 0; j < cols; ++j) dst[j] = width > 0 ? row[imin(j, width - 1)] : 0;
}

/// The batch positions [start, start + q) into tokens[base ...], none at or past `capacity`.
ATTN_HD_INLINE void write_token_positions(int64_t* tokens, int64_t base, int64_t start, int64_t q,
                                          int64_t capacity) {
  const int64_t n = imin(q, capacity - base);
  for (int64_t t = 0; t < n; ++t) tokens[base + t] = start + t;
}

/// gdn_spec_split and kda_spec_split; `skip_empty_non_spec`: KIMI_K3_KDA's variant. The sums:
/// spec requests, their tokens, non-spec requests that have rows, their tokens.
template <class P>
void spec_split_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                   const int32_t* draft_tokens, const int32_t* block_table, int64_t bt_stride,
                   int64_t bt_width, int64_t num_cols, const int32_t* num_accepted_tokens,
                   int64_t token_capacity, bool skip_empty_non_spec, GdnSplitOut out) {
  p.for_each_row(1, [=] ATTN_HD(int64_t, Lanes lanes) {
    if (lanes.leader()) {
      if (out.spec_qsl != nullptr) out.spec_qsl[0] = 0;
      if (out.non_spec_qsl != nullptr) out.non_spec_qsl[0] = 0;
    }
    // a negative length (device offsets that disagree with the host's) counts no tokens
    auto query_len = [&](int64_t r) { return imax<int64_t>(int64_t{qsl[r + 1]} - qsl[r], 0); };
    kernels::row_scan<4>(
        lanes, num_reqs,
        [&](int64_t r) {
          const int64_t q = query_len(r);
          if (draft_tokens[r] >= 0) return Sums4{{1, q, 0, 0}};
          const bool has_row = !(skip_empty_non_spec && q == 0);
          return Sums4{{0, 0, has_row ? 1 : 0, q}};
        },
        [&](int64_t r, const Sums4& before, const Sums4& own) {
          const int64_t q = query_len(r);
          const bool is_spec = own[0] != 0;
          if (out.masks != nullptr) out.masks[r] = is_spec ? 1 : 0;
          if (is_spec) {
            const int64_t s = before[0];
            if (out.spec_state != nullptr)
              copy_state_row(block_table + r * bt_stride, bt_width, num_cols,
                             out.spec_state + s * num_cols);
            if (out.spec_accepted != nullptr) out.spec_accepted[s] = num_accepted_tokens[r];
            if (out.spec_qsl != nullptr) out.spec_qsl[s + 1] = static_cast<int32_t>(before[1] + q);
            if (out.spec_token_indx != nullptr)
              write_token_positions(out.spec_token_indx, before[1], qsl[r], q, token_capacity);
          } else if (own[2] != 0) {
            const int64_t k = before[2];
            if (out.non_spec_state != nullptr)
              out.non_spec_state[k] = bt_width > 0 ? block_table[r * bt_stride] : 0;
            if (out.non_spec_has_initial != nullptr)
              out.non_spec_has_initial[k] = seq_lens[r] - q > 0 ? 1 : 0;
            if (out.non_spec_qsl != nullptr)
              out.non_spec_qsl[k + 1] = static_cast<int32_t>(before[3] + q);
            if (out.non_spec_token_indx != nullptr)
              write_token_positions(out.non_spec_token_indx, before[3], qsl[r], q, token_capacity);
          }
        });
  });
}

/// The sums: chunks and non-empty sequences (every sequence with `index_by_row`) before each
/// sequence.
template <class P>
void chunk_metadata_on(P& p, const int32_t* cu_seqlens, int64_t num_seqs, int32_t chunk_size,
                       bool index_by_row, int32_t* chunk_indices, int64_t* chunk_offsets) {
  p.for_each_row(1, [=] ATTN_HD(int64_t, Lanes lanes) {
    const Sums2 total = kernels::row_scan<2>(
        lanes, num_seqs,
        [&](int64_t r) {
          const int64_t len = imax<int64_t>(int64_t{cu_seqlens[r + 1]} - cu_seqlens[r], 0);
          const int64_t chunks = kernels::cdiv(len, chunk_size);
          return Sums2{{chunks, chunks > 0 || index_by_row ? 1 : 0}};
        },
        [&](int64_t r, const Sums2& before, const Sums2& own) {
          if (chunk_offsets != nullptr) chunk_offsets[r] = before[0];
          if (chunk_indices != nullptr)
            for (int64_t j = 0; j < own[0]; ++j) {
              chunk_indices[2 * (before[0] + j)] = static_cast<int32_t>(before[1]);
              chunk_indices[2 * (before[0] + j) + 1] = static_cast<int32_t>(j);
            }
        });
    if (lanes.leader() && chunk_offsets != nullptr) chunk_offsets[num_seqs] = total[0];
  });
}

/// The sum: spec requests before each request (the non-spec ones before it are the rest).
template <class P>
void masked_state_gather_on(P& p, const uint8_t* masks, int64_t num_reqs,
                            const int32_t* block_table, int64_t stride, int64_t width,
                            int64_t num_cols, int32_t* spec_state, int32_t* non_spec_state) {
  p.for_each_row(1, [=] ATTN_HD(int64_t, Lanes lanes) {
    kernels::row_scan<1>(
        lanes, num_reqs, [&](int64_t r) { return Sums1{{masks[r] != 0 ? 1 : 0}}; },
        [&](int64_t r, const Sums1& before, const Sums1& own) {
          const int32_t* row = block_table + r * stride;
          if (own[0] != 0) {
            if (spec_state != nullptr)
              copy_state_row(row, width, num_cols, spec_state + before[0] * num_cols);
          } else if (non_spec_state != nullptr) {
            non_spec_state[r - before[0]] = row[0];
          }
        });
  });
}

}  // namespace

void gdn_spec_split(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                    int64_t num_reqs, const int32_t* draft_tokens, const int32_t* block_table,
                    int64_t bt_stride, int64_t bt_width, int64_t num_cols,
                    const int32_t* num_accepted_tokens, int64_t token_capacity,
                    const GdnSplitOut& out) {
  if (num_reqs < 0) return;
  ATTN_LAUNCH(exec, spec_split_on, qsl, seq_lens, num_reqs, draft_tokens, block_table, bt_stride,
              bt_width, num_cols, num_accepted_tokens, token_capacity, false, out);
}

void kda_spec_split(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                    int64_t num_reqs, const int32_t* spec_marks, const int32_t* block_table,
                    int64_t bt_stride, int64_t bt_width, int64_t num_cols,
                    const int32_t* num_accepted_tokens, int64_t token_capacity,
                    const GdnSplitOut& out) {
  if (num_reqs < 0) return;
  ATTN_LAUNCH(exec, spec_split_on, qsl, seq_lens, num_reqs, spec_marks, block_table, bt_stride,
              bt_width, num_cols, num_accepted_tokens, token_capacity, true, out);
}

void gdn_chunk_metadata(const Exec& exec, const int32_t* cu_seqlens, int64_t num_seqs,
                        int32_t chunk_size, bool index_by_row, int32_t* chunk_indices,
                        int64_t* chunk_offsets) {
  if (num_seqs < 0 || chunk_size <= 0) return;
  ATTN_LAUNCH(exec, chunk_metadata_on, cu_seqlens, num_seqs, chunk_size, index_by_row,
              chunk_indices, chunk_offsets);
}

void gdn_masked_state_gather(const Exec& exec, const uint8_t* masks, int64_t num_reqs,
                             const int32_t* block_table, int64_t block_table_stride,
                             int64_t block_table_width, int64_t num_cols, int32_t* spec_state,
                             int32_t* non_spec_state) {
  if (num_reqs <= 0 || block_table_width <= 0) return;
  ATTN_LAUNCH(exec, masked_state_gather_on, masks, num_reqs, block_table, block_table_stride,
              block_table_width, num_cols, spec_state, non_spec_state);
}

}  // namespace attn::ops
