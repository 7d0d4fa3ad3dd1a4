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
  if (exec.on_cuda) {
#if ATTN_WITH_CUDA
    detail::check_launch(kernels::slice_query_start_locs(exec.device_id, exec.stream, qsl, start,
                                                         stop, skip_first, skip_last, out),
                         "slice_query_start_locs");
    return;
#else
    detail::no_cuda("slice_query_start_locs");
#endif
  }
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
  if (exec.on_cuda) {
#if ATTN_WITH_CUDA
    detail::check_launch(kernels::copy_trim_last(exec.device_id, exec.stream, in, n, skip_last, out),
                         "copy_trim_last");
    return;
#else
    detail::no_cuda("copy_trim_last");
#endif
  }
  for (int64_t k = 0; k < n; ++k) out[k] = wrap_sub(in[k], k == n - 1 ? skip_last : 0);
}

}  // namespace attn::ops
