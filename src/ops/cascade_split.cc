// ops::cascade_split, written once (src/ops/launch.h): one pass over the requests, item 0 also
// writing the two prefix arrays.
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void cascade_split_on(P& p, const int32_t* seq_lens, int64_t num_reqs, int64_t num_actual_tokens,
                      int64_t common_prefix_len, int32_t* cu_prefix_query_lens,
                      int32_t* prefix_kv_lens, int32_t* suffix_kv_lens) {
  const auto prefix = static_cast<int32_t>(common_prefix_len);
  const auto tokens = static_cast<int32_t>(num_actual_tokens);
  p.for_each(num_reqs + 1, [=] ATTN_HD(int64_t i) {
    if (i == num_reqs) {
      cu_prefix_query_lens[0] = 0;
      cu_prefix_query_lens[1] = tokens;
      prefix_kv_lens[0] = prefix;
      return;
    }
    suffix_kv_lens[i] = seq_lens[i] - prefix;
  });
}

}  // namespace

void cascade_split(const Exec& exec, const int32_t* seq_lens, int64_t num_reqs,
                   int64_t num_actual_tokens, int64_t common_prefix_len,
                   int32_t* cu_prefix_query_lens, int32_t* prefix_kv_lens,
                   int32_t* suffix_kv_lens) {
  ATTN_LAUNCH(exec, cascade_split_on, seq_lens, num_reqs, num_actual_tokens, common_prefix_len,
              cu_prefix_query_lens, prefix_kv_lens, suffix_kv_lens);
}

}  // namespace attn::ops
