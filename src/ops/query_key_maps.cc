// ops::query_key_maps: host reference and CUDA dispatch (vLLM 0.33's
// RocmOctaveMetadataBuilder._fill_query_maps).
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void query_key_maps(const Exec& exec, const int32_t* query_start_loc, const int32_t* seq_lens,
                    int64_t num_reqs, int64_t num_tokens, int32_t* q_to_req, int32_t* q_to_klen) {
  if (num_tokens <= 0 || num_reqs <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, query_key_maps, query_start_loc, seq_lens, num_reqs, num_tokens,
                            q_to_req, q_to_klen);
  int64_t r = 0;
  for (int64_t t = 0; t < num_tokens; ++t) {
    // searchsorted(qsl[1:], t, right=True): the count of qsl[1..num_reqs] <= t
    while (r < num_reqs && query_start_loc[r + 1] <= t) ++r;
    q_to_req[t] = static_cast<int32_t>(r);
    if (r < num_reqs) {
      const int64_t q = query_start_loc[r + 1] - query_start_loc[r];
      q_to_klen[t] = static_cast<int32_t>(seq_lens[r] - q + (t - query_start_loc[r]) + 1);
    } else {
      q_to_klen[t] = 0;
    }
  }
}

}  // namespace attn::ops
