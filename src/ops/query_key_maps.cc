// ops::query_key_maps (vLLM 0.33's RocmOctaveMetadataBuilder._fill_query_maps), written once
// (src/ops/launch.h): a row per request, its lanes over the request's tokens.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::Lanes;

template <class P>
void query_key_maps_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                       int64_t num_tokens, int32_t* q_to_req, int32_t* q_to_klen) {
  // A row per request, its lanes over its tokens (linear on the host, where a binary search
  // per token cost 11x: bench ROCM_OCTAVE decode_1024x32k); row num_reqs holds the padding
  // tokens past the last query: searchsorted(qsl[1:], t, right=True) = num_reqs, key length 0.
  p.for_each_row(num_reqs + 1, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int64_t last = qsl[num_reqs];
    const int64_t begin = kernels::imin(r < num_reqs ? int64_t{qsl[r]} : last, num_tokens);
    const int64_t end = kernels::imin(r < num_reqs ? int64_t{qsl[r + 1]} : num_tokens, num_tokens);
    // key length of token qsl[r] + j: seq_len - query_len + j + 1
    const int64_t base =
        r < num_reqs ? int64_t{seq_lens[r]} - (int64_t{qsl[r + 1]} - qsl[r]) + 1 : 0;
    lanes.for_each(end - begin, [&](int64_t j) {
      q_to_req[begin + j] = static_cast<int32_t>(r);
      q_to_klen[begin + j] = r < num_reqs ? static_cast<int32_t>(base + j) : 0;
    });
  });
}

}  // namespace

void query_key_maps(const Exec& exec, const int32_t* query_start_loc, const int32_t* seq_lens,
                    int64_t num_reqs, int64_t num_tokens, int32_t* q_to_req, int32_t* q_to_klen) {
  if (num_tokens <= 0 || num_reqs <= 0) return;
  ATTN_LAUNCH(exec, query_key_maps_on, query_start_loc, seq_lens, num_reqs, num_tokens, q_to_req,
              q_to_klen);
}

}  // namespace attn::ops
