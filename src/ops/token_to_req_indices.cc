// vLLM 0.33's compute_token_to_req_indices (v1/attention/ops/metadata.py), written once
// (src/ops/launch.h): a row per request, its lanes over the request's tokens, and a row for the
// tokens past num_mapped_tokens. Linear on the host, where a binary search per token made the
// DeepSeek V4.1 compressor build 1.15x slower (docs/performance.md, "Issue 31: the host-path
// outliers").
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::iclamp;
using kernels::Lanes;

template <class P>
void token_to_req_on(P& p, const int32_t* qsl, int64_t num_reqs, int64_t num_mapped_tokens,
                     int64_t num_tokens, int32_t* out) {
  const int64_t mapped = iclamp<int64_t>(num_mapped_tokens, 0, num_tokens);
  // Row r < num_reqs: tokens [qsl[r], qsl[r + 1]), from 0 for the first request (tokens before
  // qsl[1] are request 0's) and to `mapped` for the last (tokens past the batch are the last
  // request's), an end below its start read as the start. Each row starts at or before where
  // the rows before it reach, so the rows cover [0, mapped) whatever the offsets. Row num_reqs:
  // [mapped, num_tokens) is 0, and with no request [0, mapped) is -1.
  p.for_each_row(num_reqs + 1, [=] ATTN_HD(int64_t r, Lanes lanes) {
    int64_t begin = 0, end = mapped;
    int32_t value = 0;
    if (r < num_reqs) {
      begin = r == 0 ? 0 : iclamp<int64_t>(qsl[r], 0, mapped);
      end = r == num_reqs - 1 ? mapped : iclamp<int64_t>(qsl[r + 1], begin, mapped);
      value = static_cast<int32_t>(r);
    } else {
      if (num_reqs == 0)
        lanes.for_each(mapped, [&](int64_t t) { out[t] = -1; });
      begin = mapped;
      end = num_tokens;
    }
    lanes.for_each(end - begin, [&](int64_t j) { out[begin + j] = value; });
  });
}

}  // namespace

void compute_token_to_req_indices(const Exec& exec, const int32_t* qsl, int64_t num_reqs,
                                  int64_t num_mapped_tokens, int64_t num_tokens, int32_t* out) {
  if (num_tokens <= 0) return;
  ATTN_LAUNCH(exec, token_to_req_on, qsl, num_reqs, num_mapped_tokens, num_tokens, out);
}

}  // namespace attn::ops
