// make_kv_sharing_fast_prefill_common_attn_metadata's query_start_loc: host reference and CUDA
// dispatch.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void fast_prefill_query_start_loc(const Exec& exec, const int32_t* qsl, int64_t num_reqs,
                                  const void* logits_indices, int32_t index_bits,
                                  int64_t num_logits_indices, int32_t* out) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, fast_prefill_query_start_loc, qsl, num_reqs, logits_indices,
                            index_bits, num_logits_indices, out);
  auto index = [&](int64_t k) -> int64_t {
    return index_bits == 64 ? static_cast<const int64_t*>(logits_indices)[k]
                            : static_cast<const int32_t*>(logits_indices)[k];
  };
  // bucketize(i, qsl[1:], right=True) = number of boundaries qsl[r + 1] <= i: the request that
  // holds token i. With sorted indices, out[r + 1] = count of indices below qsl[r + 1].
  int64_t k = 0;
  out[0] = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    while (k < num_logits_indices && index(k) < qsl[r + 1]) ++k;
    out[r + 1] = static_cast<int32_t>(k);
  }
}

}  // namespace attn::ops
