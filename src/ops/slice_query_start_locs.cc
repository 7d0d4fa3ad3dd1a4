// Micro-batch slicing (vLLM's ubatch_utils): sliced query_start_loc and trimmed seq_lens.
// Host reference and CUDA dispatch.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {
namespace {
// int32 arithmetic as torch does it (wrapping), without signed overflow on hostile input.
int32_t wrap_sub(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}
}  // namespace

void slice_query_start_locs(const Exec& exec, const int32_t* qsl, int64_t start, int64_t stop,
                            int32_t skip_first, int32_t skip_last, int32_t* out) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, slice_query_start_locs, qsl, start, stop, skip_first, skip_last,
                            out);
  const int64_t n = stop - start + 1;
  for (int64_t k = 0; k < n; ++k) {
    int32_t v = wrap_sub(qsl[start + k], qsl[start]);
    if (k > 0) v = wrap_sub(v, skip_first);
    if (k == n - 1 && n > 1) v = wrap_sub(v, skip_last);
    out[k] = v;
  }
}

void copy_trim_last(const Exec& exec, const int32_t* in, int64_t n, int32_t skip_last,
                    int32_t* out) {
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, copy_trim_last, in, n, skip_last, out);
  for (int64_t k = 0; k < n; ++k) out[k] = wrap_sub(in[k], k == n - 1 ? skip_last : 0);
}

}  // namespace attn::ops
