// Ops of the state-space variants of vLLM 0.33 (KIMI_K3_KDA, BAILING_LINEAR_ATTN,
// PLE_SHORT_CONV_ATTN), each written once for the host and the device (src/ops/state_space_ops.cc,
// src/ops/gdn_metadata.cc).
#pragma once

#include <cstdint>

#include "ops/batch_ops.h"

namespace attn::ops {

/// KIMI_K3_KDA's spec/non-spec split: gdn_spec_split with spec requests those whose
/// spec_marks[r] >= 0, except that zero-length non-spec requests are left out of the
/// request-indexed non-spec outputs (non_spec_state, non_spec_qsl, non_spec_has_initial), as
/// KDA's active_non_spec_mask leaves them. `out.masks` is not written.
void kda_spec_split(const Exec& exec, const int32_t* query_start_loc, const int32_t* seq_lens,
                    int64_t num_reqs, const int32_t* spec_marks, const int32_t* block_table,
                    int64_t block_table_stride, int64_t block_table_width, int64_t num_cols,
                    const int32_t* num_accepted_tokens, int64_t token_capacity,
                    const GdnSplitOut& out);

/// out[i] = seq_lens[i] - (query_start_loc[i + 1] - query_start_loc[i]) for i < num_reqs
/// (vLLM's CommonAttentionMetadata.compute_num_computed_tokens(), int32).
void num_computed_tokens_i32(const Exec& exec, const int32_t* query_start_loc,
                             const int32_t* seq_lens, int64_t num_reqs, int32_t* out);

/// out[i] = in[i] widened to int64 for i < n (torch's .to(torch.int64)).
void widen_i32_i64(const Exec& exec, const int32_t* in, int64_t n, int64_t* out);

/// BAILING_LINEAR_ATTN's padded-decode staging: dst rows r < total_rows, columns j < cols =
/// src[r][j] for r < rows whose seq_lens[r] != 0, else `pad` (torch.where(seq_lens == 0, pad,
/// src) copied into a persistent buffer, the rows past `rows` filled with `pad`).
void mask_padded_rows_i32(const Exec& exec, const int32_t* src, int64_t src_stride, int64_t rows,
                          int64_t cols, const int32_t* seq_lens, int32_t pad, int32_t* dst,
                          int64_t dst_stride, int64_t total_rows);

/// PLE_SHORT_CONV_ATTN's spec/non-spec gather over a request order: `order` holds num_spec
/// spec-decode requests, then num_non_spec non-spec requests (num_non_spec_decodes one-token
/// decodes, then prefills), each group in batch order. For the j-th spec request r: out.spec_state[j] =
/// block_table[r][0], out.spec_accepted[j] = num_accepted_tokens[r], out.spec_qsl (num_spec + 1)
/// the running sum of their query lengths from 0; for the non-spec ones: out.non_spec_state,
/// out.non_spec_has_initial (seq_len - query_len > 0) and out.non_spec_qsl (num_non_spec + 1);
/// non_spec_qsl_p[k] = non_spec_qsl[num_non_spec_decodes + k] - num_non_spec_decodes (k <=
/// num_non_spec - num_non_spec_decodes). The token permutation (vLLM's stable argsort of the
/// per-token group, int64): each ordered request's token indices in order, the spec requests'
/// into out.spec_token_indx, the others' into out.non_spec_token_indx. `out.masks` is not
/// written; any other output may be null.
void ple_spec_gather(const Exec& exec, const int32_t* query_start_loc, const int32_t* seq_lens,
                     const int32_t* block_table, int64_t block_table_stride,
                     const int32_t* num_accepted_tokens, const int32_t* order, int64_t num_spec,
                     int64_t num_non_spec, int64_t num_non_spec_decodes, int32_t* non_spec_qsl_p,
                     const GdnSplitOut& out);

/// out[i] = 1 when i < rows and seq_lens[i] - (query_start_loc[i + 1] - query_start_loc[i]) > 0,
/// else 0, for i < total (PLE_SHORT_CONV_ATTN's has_initial_states_d: computed tokens > 0,
/// padded with False for the rows of a CUDA-graph batch).
void has_initial_states_u8(const Exec& exec, const int32_t* query_start_loc,
                           const int32_t* seq_lens, int64_t rows, int64_t total, uint8_t* out);

}  // namespace attn::ops
