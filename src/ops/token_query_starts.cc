// The first query row of each token's request (INKLING_SCONV_SWA's query_start, vLLM 0.33's
// models/inkling/*/ops/sconv.py sconv_seq_metadata), written once (src/ops/launch.h): the host
// path and, compiled by nvcc, the CUDA kernel.
#include "ops/token_query_starts.h"

#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void token_query_starts_on(P& p, const int32_t* qsl, const int32_t* token_to_req,
                           int64_t num_mapped_tokens, int64_t num_tokens, int32_t* out) {
  p.for_each(num_tokens, [=] ATTN_HD(int64_t t) {
    out[t] = t < num_mapped_tokens ? qsl[token_to_req[t]] : 0;
  });
}

}  // namespace

void token_query_starts(const Exec& exec, const int32_t* query_start_loc,
                        const int32_t* token_to_req, int64_t num_mapped_tokens,
                        int64_t num_tokens, int32_t* out) {
  if (num_tokens <= 0) return;
  ATTN_LAUNCH(exec, token_query_starts_on, query_start_loc, token_to_req, num_mapped_tokens,
              num_tokens, out);
}

}  // namespace attn::ops
