// vLLM 0.33's compute_token_to_req_indices (v1/attention/ops/metadata.py), written once
// (src/ops/launch.h): the request of each token by kernels::request_of_token's binary search.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void token_to_req_on(P& p, const int32_t* qsl, int64_t num_reqs, int64_t num_mapped_tokens,
                     int64_t num_tokens, int32_t* out) {
  p.for_each(num_tokens, [=] ATTN_HD(int64_t t) {
    out[t] = t < num_mapped_tokens
                 ? static_cast<int32_t>(kernels::request_of_token(qsl, num_reqs, t))
                 : 0;
  });
}

}  // namespace

void compute_token_to_req_indices(const Exec& exec, const int32_t* qsl, int64_t num_reqs,
                                  int64_t num_mapped_tokens, int64_t num_tokens, int32_t* out) {
  if (num_tokens <= 0) return;
  ATTN_LAUNCH(exec, token_to_req_on, qsl, num_reqs, num_mapped_tokens, num_tokens, out);
}

}  // namespace attn::ops
