// make_kv_sharing_fast_prefill_common_attn_metadata's query_start_loc, written once
// (src/ops/launch.h): a merge of the request boundaries with the (sorted) logits indices, split
// into runs by merge path (kernels::merge_path_split); one run on the host, so one linear sweep
// there (a binary search per request had made the armed ABI 1.0 function 1.8x slower:
// docs/performance.md, "Issue 31: the host-path outliers"), a run of kDeviceRun items per item
// on a device.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

constexpr int64_t kDeviceRun = 32;  ///< merged items per device item

// bucketize(i, qsl[1:], right=True) = the number of boundaries qsl[r + 1] <= i: the request that
// holds token i. With sorted indices, out[r + 1] = the count of indices below qsl[r + 1]: merge
// the boundaries qsl[1..num_reqs] with the indices, a boundary before the indices equal to it;
// when boundary r is merged after j indices, out[r + 1] = j.
template <class P, class Index>
void fast_prefill_on(P& p, const int32_t* qsl, int64_t num_reqs, const Index* idx, int64_t n,
                     int32_t* out) {
  const int32_t* bounds = qsl + 1;
  const int64_t total = num_reqs + n;
  const int64_t run = P::kOnDevice ? kDeviceRun : kernels::imax<int64_t>(total, 1);
  p.for_each(kernels::cdiv(total, run) + 1, [=] ATTN_HD(int64_t part) {
    if (part == 0) {
      out[0] = 0;
      return;
    }
    const int64_t d = (part - 1) * run;
    int64_t i = kernels::merge_path_split(bounds, num_reqs, idx, n, d);
    int64_t j = d - i;
    for (int64_t k = 0; k < run && i < num_reqs; ++k) {
      if (j >= n || int64_t{bounds[i]} <= int64_t{idx[j]}) {
        out[i + 1] = static_cast<int32_t>(j);
        ++i;
      } else {
        ++j;
      }
    }
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
