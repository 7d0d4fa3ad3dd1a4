// ops::query_key_maps (vLLM 0.33's RocmOctaveMetadataBuilder._fill_query_maps), written once
// (src/ops/launch.h): one item per token, its request found by a binary search.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void query_key_maps_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                       int64_t num_tokens, int32_t* q_to_req, int32_t* q_to_klen) {
  p.for_each(num_tokens, [=] ATTN_HD(int64_t t) {
    // searchsorted(qsl[1:], t, right=True): num_reqs for a padding token past the last query
    const int64_t r = kernels::upper_bound(qsl + 1, num_reqs, t);
    q_to_req[t] = static_cast<int32_t>(r);
    q_to_klen[t] =
        r < num_reqs
            ? static_cast<int32_t>(seq_lens[r] - (int64_t{qsl[r + 1]} - qsl[r]) + (t - qsl[r]) + 1)
            : 0;
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
