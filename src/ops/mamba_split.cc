// vLLM's split_decodes_and_prefills with treat_short_extends_as_decodes and is_prefilling, as
// the Mamba family's _compute_common_metadata calls it (host-only: it reads
// query_start_loc_cpu, as vLLM does).
#include "ops/batch_ops.h"

namespace attn::ops {

BatchSplit split_decodes_and_prefills(const int32_t* qsl, int64_t num_reqs, int64_t num_tokens,
                                      int64_t max_query_len, int32_t decode_threshold,
                                      bool require_uniform, bool treat_short_extends_as_decodes,
                                      const uint8_t* is_prefilling) {
  if (treat_short_extends_as_decodes)
    return split_decodes_and_prefills(qsl, num_reqs, num_tokens, max_query_len,
                                      decode_threshold, require_uniform);
  BatchSplit all_decodes;
  all_decodes.num_decodes = num_reqs;
  all_decodes.num_decode_tokens = num_tokens;
  if (num_reqs == 0) return all_decodes;  // vLLM would index an empty batch
  auto query_len = [&](int64_t i) { return static_cast<int64_t>(qsl[i + 1]) - qsl[i]; };
  const int64_t first_len = query_len(0);
  if (first_len > decode_threshold) {  // the first request is not a decode: no decodes at all
    BatchSplit s;
    s.num_prefills = num_reqs;
    s.num_prefill_tokens = num_tokens;
    return s;
  }
  // The uniform-batch shortcut needs treat_short_extends_as_decodes: without it, require_uniform
  // marks the lengths that differ from the first, and is_prefilling is added to them.
  int64_t first_prefill = -1;
  for (int64_t i = 0; i < num_reqs && first_prefill < 0; ++i) {
    const int64_t q = query_len(i);
    const bool prefill = require_uniform ? q != first_len : q > decode_threshold;
    if (prefill || (is_prefilling != nullptr && is_prefilling[i] != 0)) first_prefill = i;
  }
  if (first_prefill < 0) return all_decodes;
  BatchSplit s;
  s.num_decodes = first_prefill;
  s.num_prefills = num_reqs - first_prefill;
  s.num_decode_tokens = qsl[first_prefill];
  s.num_prefill_tokens = num_tokens - s.num_decode_tokens;
  return s;
}

}  // namespace attn::ops
