// GDN_ATTN's spec/non-spec split and FLA chunk metadata (vLLM gdn_attn.py): host reference and
// CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"
#include "ops/state_space_ops.h"
#include "state_space_kernels.h"

namespace attn::ops {

namespace {

/// gdn_spec_split's host reference; `skip_empty_non_spec`: KIMI_K3_KDA's variant.
void spec_split_host(const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                     const int32_t* draft_tokens, const int32_t* block_table, int64_t bt_stride,
                     int64_t bt_width, int64_t num_cols, const int32_t* num_accepted_tokens,
                     int64_t token_capacity, bool skip_empty_non_spec, const GdnSplitOut& out) {
  int64_t spec = 0, spec_tok = 0, non = 0, non_tok = 0;
  if (out.spec_qsl != nullptr) out.spec_qsl[0] = 0;
  if (out.non_spec_qsl != nullptr) out.non_spec_qsl[0] = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int64_t q = static_cast<int64_t>(qsl[r + 1]) - qsl[r];
    const bool is_spec = draft_tokens[r] >= 0;
    if (out.masks != nullptr) out.masks[r] = is_spec ? 1 : 0;
    int64_t* token_out = is_spec ? out.spec_token_indx : out.non_spec_token_indx;
    const int64_t token_base = is_spec ? spec_tok : non_tok;
    if (token_out != nullptr)
      for (int64_t t = 0; t < q && token_base + t < token_capacity; ++t)
        token_out[token_base + t] = static_cast<int64_t>(qsl[r]) + t;
    if (is_spec) {
      if (out.spec_state != nullptr)
        for (int64_t j = 0; j < num_cols; ++j)
          out.spec_state[spec * num_cols + j] =
              bt_width > 0 ? block_table[r * bt_stride + std::min(j, bt_width - 1)] : 0;
      if (out.spec_accepted != nullptr) out.spec_accepted[spec] = num_accepted_tokens[r];
      spec_tok += q;
      ++spec;
      if (out.spec_qsl != nullptr) out.spec_qsl[spec] = static_cast<int32_t>(spec_tok);
    } else {
      if (skip_empty_non_spec && q == 0) continue;
      if (out.non_spec_state != nullptr)
        out.non_spec_state[non] = bt_width > 0 ? block_table[r * bt_stride] : 0;
      if (out.non_spec_has_initial != nullptr)
        out.non_spec_has_initial[non] = seq_lens[r] - q > 0 ? 1 : 0;
      non_tok += q;
      ++non;
      if (out.non_spec_qsl != nullptr) out.non_spec_qsl[non] = static_cast<int32_t>(non_tok);
    }
  }
}

}  // namespace

void gdn_spec_split(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                    int64_t num_reqs, const int32_t* draft_tokens, const int32_t* block_table,
                    int64_t bt_stride, int64_t bt_width, int64_t num_cols,
                    const int32_t* num_accepted_tokens, int64_t token_capacity,
                    const GdnSplitOut& out) {
  if (num_reqs < 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, gdn_spec_split, qsl, seq_lens, num_reqs, draft_tokens,
                            block_table, bt_stride, bt_width, num_cols, num_accepted_tokens,
                            token_capacity, out);
  spec_split_host(qsl, seq_lens, num_reqs, draft_tokens, block_table, bt_stride, bt_width,
                  num_cols, num_accepted_tokens, token_capacity, false, out);
}

void kda_spec_split(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                    int64_t num_reqs, const int32_t* spec_marks, const int32_t* block_table,
                    int64_t bt_stride, int64_t bt_width, int64_t num_cols,
                    const int32_t* num_accepted_tokens, int64_t token_capacity,
                    const GdnSplitOut& out) {
  if (num_reqs < 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, kda_spec_split, qsl, seq_lens, num_reqs, spec_marks,
                            block_table, bt_stride, bt_width, num_cols, num_accepted_tokens,
                            token_capacity, out);
  spec_split_host(qsl, seq_lens, num_reqs, spec_marks, block_table, bt_stride, bt_width,
                  num_cols, num_accepted_tokens, token_capacity, true, out);
}

}  // namespace attn::ops

namespace attn::ops {

void gdn_chunk_metadata(const Exec& exec, const int32_t* cu_seqlens, int64_t num_seqs,
                        int32_t chunk_size, int32_t* chunk_indices, int64_t* chunk_offsets) {
  if (num_seqs < 0 || chunk_size <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, gdn_chunk_metadata, cu_seqlens, num_seqs, chunk_size,
                            chunk_indices, chunk_offsets);
  int64_t offset = 0, nonempty = 0;
  for (int64_t r = 0; r < num_seqs; ++r) {
    if (chunk_offsets != nullptr) chunk_offsets[r] = offset;
    const int64_t len =
        std::max<int64_t>(static_cast<int64_t>(cu_seqlens[r + 1]) - cu_seqlens[r], 0);
    const int64_t chunks = (len + chunk_size - 1) / chunk_size;
    if (chunk_indices != nullptr)
      for (int64_t j = 0; j < chunks; ++j) {
        chunk_indices[2 * (offset + j)] = static_cast<int32_t>(nonempty);
        chunk_indices[2 * (offset + j) + 1] = static_cast<int32_t>(j);
      }
    offset += chunks;
    if (chunks > 0) ++nonempty;
  }
  if (chunk_offsets != nullptr) chunk_offsets[num_seqs] = offset;
}

void gdn_masked_state_gather(const Exec& exec, const uint8_t* masks, int64_t num_reqs,
                             const int32_t* block_table, int64_t block_table_stride,
                             int64_t block_table_width, int64_t num_cols, int32_t* spec_state,
                             int32_t* non_spec_state) {
  if (num_reqs <= 0 || block_table_width <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, gdn_masked_state_gather, masks, num_reqs, block_table,
                            block_table_stride, block_table_width, num_cols, spec_state,
                            non_spec_state);
  int64_t spec = 0, non = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int32_t* row = block_table + r * block_table_stride;
    if (masks[r] != 0) {
      if (spec_state != nullptr)
        for (int64_t j = 0; j < num_cols; ++j)
          spec_state[spec * num_cols + j] = row[std::min(j, block_table_width - 1)];
      ++spec;
    } else {
      if (non_spec_state != nullptr) non_spec_state[non] = row[0];
      ++non;
    }
  }
}

}  // namespace attn::ops
