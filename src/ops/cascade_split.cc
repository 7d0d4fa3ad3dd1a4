// ops::cascade_split: host reference and CUDA dispatch.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void cascade_split(const Exec& exec, const int32_t* seq_lens, int64_t num_reqs,
                   int64_t num_actual_tokens, int64_t common_prefix_len,
                   int32_t* cu_prefix_query_lens, int32_t* prefix_kv_lens,
                   int32_t* suffix_kv_lens) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, cascade_split, seq_lens, num_reqs, num_actual_tokens,
                            common_prefix_len, cu_prefix_query_lens, prefix_kv_lens,
                            suffix_kv_lens);
  cu_prefix_query_lens[0] = 0;
  cu_prefix_query_lens[1] = static_cast<int32_t>(num_actual_tokens);
  prefix_kv_lens[0] = static_cast<int32_t>(common_prefix_len);
  const auto prefix = static_cast<int32_t>(common_prefix_len);
  for (int64_t r = 0; r < num_reqs; ++r) suffix_kv_lens[r] = seq_lens[r] - prefix;
}

}  // namespace attn::ops
