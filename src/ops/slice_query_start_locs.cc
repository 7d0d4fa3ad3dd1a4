// Micro-batch slicing (vLLM's ubatch_utils), written once (src/ops/launch.h): the sliced
// query_start_loc and the trimmed seq_lens.
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

// int32 arithmetic as torch does it (wrapping), without signed overflow on hostile input.
ATTN_HD_INLINE int32_t wrap_sub(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}

template <class P>
void slice_on(P& p, const int32_t* qsl, int64_t start, int64_t stop, int32_t skip_first,
              int32_t skip_last, int32_t* out) {
  const int64_t n = stop - start + 1;
  p.for_each(n, [=] ATTN_HD(int64_t k) {
    int32_t v = wrap_sub(qsl[start + k], qsl[start]);
    if (k > 0) v = wrap_sub(v, skip_first);
    if (k == n - 1 && n > 1) v = wrap_sub(v, skip_last);
    out[k] = v;
  });
}

template <class P>
void trim_on(P& p, const int32_t* in, int64_t n, int32_t skip_last, int32_t* out) {
  p.for_each(n, [=] ATTN_HD(int64_t k) { out[k] = wrap_sub(in[k], k == n - 1 ? skip_last : 0); });
}

}  // namespace

void slice_query_start_locs(const Exec& exec, const int32_t* qsl, int64_t start, int64_t stop,
                            int32_t skip_first, int32_t skip_last, int32_t* out) {
  ATTN_LAUNCH(exec, slice_on, qsl, start, stop, skip_first, skip_last, out);
}

void copy_trim_last(const Exec& exec, const int32_t* in, int64_t n, int32_t skip_last,
                    int32_t* out) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, trim_on, in, n, skip_last, out);
}

}  // namespace attn::ops
