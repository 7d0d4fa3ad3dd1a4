// make_kv_sharing_fast_prefill_common_attn_metadata's query_start_loc, written once
// (src/ops/launch.h): for each request boundary, a binary search counts the (sorted) logits
// indices below it.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

// bucketize(i, qsl[1:], right=True) = the number of boundaries qsl[r + 1] <= i: the request that
// holds token i. With sorted indices, out[r + 1] = the count of indices below qsl[r + 1].
template <class P, class Index>
void fast_prefill_on(P& p, const int32_t* qsl, int64_t num_reqs, const Index* idx, int64_t n,
                     int32_t* out) {
  p.for_each(num_reqs + 1, [=] ATTN_HD(int64_t r) {
    out[r] = r == 0 ? 0 : static_cast<int32_t>(kernels::lower_bound(idx, n, int64_t{qsl[r]}));
  });
}

}  // namespace

void fast_prefill_query_start_loc(const Exec& exec, const int32_t* qsl, int64_t num_reqs,
                                  const void* logits_indices, int32_t index_bits,
                                  int64_t num_logits_indices, int32_t* out) {
  if (index_bits == 64)
    ATTN_LAUNCH(exec, fast_prefill_on, qsl, num_reqs,
                static_cast<const int64_t*>(logits_indices), num_logits_indices, out);
  else
    ATTN_LAUNCH(exec, fast_prefill_on, qsl, num_reqs,
                static_cast<const int32_t*>(logits_indices), num_logits_indices, out);
}

}  // namespace attn::ops
