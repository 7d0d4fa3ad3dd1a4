// The state-space variants' small ops (KIMI_K3_KDA, BAILING_LINEAR_ATTN, PLE_SHORT_CONV_ATTN): host reference and
// CUDA dispatch. kda_spec_split lives with gdn_spec_split (gdn_metadata.cc).
#include "ops/state_space_ops.h"

#include "ops/cuda_dispatch.h"
#include "state_space_kernels.h"

namespace attn::ops {

void num_computed_tokens_i32(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                             int64_t num_reqs, int32_t* out) {
  if (num_reqs <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, num_computed_tokens_i32, qsl, seq_lens, num_reqs, out);
  for (int64_t i = 0; i < num_reqs; ++i) out[i] = seq_lens[i] - (qsl[i + 1] - qsl[i]);
}

void widen_i32_i64(const Exec& exec, const int32_t* in, int64_t n, int64_t* out) {
  if (n <= 0) return;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, widen_i32_i64, in, n, out);
  for (int64_t i = 0; i < n; ++i) out[i] = in[i];
}

void mask_padded_rows_i32(const Exec& exec, const int32_t* src, int64_t src_stride, int64_t rows,
                          int64_t cols, const int32_t* seq_lens, int32_t pad, int32_t* dst,
                          int64_t dst_stride, int64_t total_rows) {
  if (total_rows <= 0 || cols <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, mask_padded_rows_i32, src, src_stride, rows, cols, seq_lens, pad,
                            dst, dst_stride, total_rows);
  for (int64_t r = 0; r < total_rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      dst[r * dst_stride + j] = r < rows && seq_lens[r] != 0 ? src[r * src_stride + j] : pad;
}

void ple_spec_gather(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                     const int32_t* bt, int64_t bt_stride, const int32_t* accepted,
                     const int32_t* order, int64_t num_spec, int64_t num_non_spec,
                     int64_t num_non_spec_decodes, int32_t* non_spec_qsl_p,
                     const GdnSplitOut& out) {
  if (num_spec + num_non_spec <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, ple_spec_gather, qsl, seq_lens, bt, bt_stride, accepted, order,
                            num_spec, num_non_spec, num_non_spec_decodes, non_spec_qsl_p, out);
  int32_t spec_sum = 0, non_spec_sum = 0;
  int64_t spec_pos = 0, non_spec_pos = 0;
  if (out.spec_qsl) out.spec_qsl[0] = 0;
  if (out.non_spec_qsl) out.non_spec_qsl[0] = 0;
  if (non_spec_qsl_p && num_non_spec_decodes == 0) non_spec_qsl_p[0] = 0;
  for (int64_t j = 0; j < num_spec + num_non_spec; ++j) {
    const int64_t r = order[j];
    const int32_t q = qsl[r + 1] - qsl[r];
    if (j < num_spec) {
      if (out.spec_state) out.spec_state[j] = bt[r * bt_stride];
      if (out.spec_accepted) out.spec_accepted[j] = accepted[r];
      spec_sum += q;
      if (out.spec_qsl) out.spec_qsl[j + 1] = spec_sum;
      if (out.spec_token_indx)
        for (int32_t t = 0; t < q; ++t) out.spec_token_indx[spec_pos + t] = qsl[r] + t;
      spec_pos += q;
    } else {
      const int64_t k = j - num_spec;
      if (out.non_spec_state) out.non_spec_state[k] = bt[r * bt_stride];
      if (out.non_spec_has_initial) out.non_spec_has_initial[k] = seq_lens[r] - q > 0 ? 1 : 0;
      non_spec_sum += q;
      if (out.non_spec_qsl) out.non_spec_qsl[k + 1] = non_spec_sum;
      if (non_spec_qsl_p && k + 1 >= num_non_spec_decodes)
        non_spec_qsl_p[k + 1 - num_non_spec_decodes] =
            non_spec_sum - static_cast<int32_t>(num_non_spec_decodes);
      if (out.non_spec_token_indx)
        for (int32_t t = 0; t < q; ++t) out.non_spec_token_indx[non_spec_pos + t] = qsl[r] + t;
      non_spec_pos += q;
    }
  }
}

void has_initial_states_u8(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                           int64_t rows, int64_t total, uint8_t* out) {
  if (total <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, has_initial_states_u8, qsl, seq_lens, rows, total, out);
  for (int64_t i = 0; i < total; ++i)
    out[i] = i < rows && seq_lens[i] - (qsl[i + 1] - qsl[i]) > 0 ? 1 : 0;
}

}  // namespace attn::ops
