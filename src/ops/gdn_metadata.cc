// GDN_ATTN's spec/non-spec split (vLLM gdn_attn.py): host reference and CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

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
  int64_t spec = 0, spec_tok = 0, non = 0, non_tok = 0;
  if (out.spec_qsl != nullptr) out.spec_qsl[0] = 0;
  if (out.non_spec_qsl != nullptr) out.non_spec_qsl[0] = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int64_t q = static_cast<int64_t>(qsl[r + 1]) - qsl[r];
    const bool is_spec = draft_tokens[r] >= 0;
    if (out.masks != nullptr) out.masks[r] = is_spec ? 1 : 0;
    int32_t* token_out = is_spec ? out.spec_token_indx : out.non_spec_token_indx;
    const int64_t token_base = is_spec ? spec_tok : non_tok;
    if (token_out != nullptr)
      for (int64_t t = 0; t < q && token_base + t < token_capacity; ++t)
        token_out[token_base + t] = static_cast<int32_t>(qsl[r] + t);
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

}  // namespace attn::ops
