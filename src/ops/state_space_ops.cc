// The state-space variants' small ops (KIMI_K3_KDA, BAILING_LINEAR_ATTN): host reference and
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

}  // namespace attn::ops
