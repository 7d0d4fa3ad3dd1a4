// vLLM 0.33's compute_token_to_req_indices (v1/attention/ops/metadata.py): the request of each
// token, by a binary search over query_start_loc. Host reference and CUDA dispatch.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {
namespace {
// The first r in [0, num_reqs) with qsl[r + 1] > t (num_reqs when none), at most num_reqs - 1:
// the Triton kernel's lo/hi search (kernels/token_to_req_indices.cu repeats it).
int32_t token_request(const int32_t* qsl, int64_t num_reqs, int64_t t) {
  int64_t lo = 0, hi = num_reqs;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (qsl[mid + 1] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return static_cast<int32_t>(lo < num_reqs - 1 ? lo : num_reqs - 1);
}
}  // namespace

void compute_token_to_req_indices(const Exec& exec, const int32_t* qsl, int64_t num_reqs,
                                  int64_t num_mapped_tokens, int64_t num_tokens, int32_t* out) {
  if (num_tokens <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, compute_token_to_req_indices, qsl, num_reqs, num_mapped_tokens,
                            num_tokens, out);
  for (int64_t t = 0; t < num_tokens; ++t)
    out[t] = t < num_mapped_tokens ? token_request(qsl, num_reqs, t) : 0;
}

}  // namespace attn::ops
