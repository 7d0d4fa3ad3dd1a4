// vLLM 0.33's CommonAttentionMetadata.naive_query_lens(), written once (src/ops/launch.h): the
// host path and, compiled by nvcc, the CUDA kernel.
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void naive_query_lens_on(P& p, const int32_t* qsl, int64_t n, int32_t* out) {
  p.for_each(n, [=] ATTN_HD(int64_t r) {
    // int32 subtraction as torch does it (wrapping), without signed overflow
    out[r] = static_cast<int32_t>(static_cast<uint32_t>(qsl[r + 1]) -
                                  static_cast<uint32_t>(qsl[r]));
  });
}

}  // namespace

void naive_query_lens(const Exec& exec, const int32_t* query_start_loc, int64_t num_reqs,
                      int32_t* out) {
  if (num_reqs <= 0) return;
  ATTN_LAUNCH(exec, naive_query_lens_on, query_start_loc, num_reqs, out);
}

}  // namespace attn::ops
