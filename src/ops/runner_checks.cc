// vLLM 0.33's runner-side decisions on scalars (v1/worker/cp_utils.py, ubatch_utils.py):
// should_split_fa2_dcp_context_attention, get_dcp_dummy_context_len, is_last_ubatch_empty,
// get_num_ubatches, check_ubatch_thresholds. Host-only: they return host scalars that steer the
// runner, as vLLM's do (no array is computed, so there is no CUDA implementation).
#include "ops/batch_ops.h"

namespace attn::ops {

bool should_split_fa2_dcp_context_attention(int32_t fa_version, int64_t max_query_len,
                                            int64_t num_reqs, int64_t num_decode_reqs,
                                            int64_t num_context_prefill_reqs) {
  const int64_t num_prefills = num_reqs - num_decode_reqs;
  return fa_version == 2 && max_query_len > 1 && num_prefills > 0 &&
         (num_decode_reqs > 0 || num_context_prefill_reqs < num_prefills);
}

int64_t get_dcp_dummy_context_len(int32_t dcp_world_size, int32_t interleave,
                                  bool has_kv_cache_config, bool create_mixed_batch,
                                  bool is_graph_capturing, bool uniform_decode) {
  if (dcp_world_size <= 1 || !has_kv_cache_config ||
      !(create_mixed_batch || (is_graph_capturing && uniform_decode)))
    return 0;
  return static_cast<int64_t>(dcp_world_size) * interleave;
}

bool is_last_ubatch_empty(int64_t orig_num_tokens, int64_t padded_num_tokens,
                          int32_t num_ubatches) {
  // non-negative operands: C++'s division is Python's floor division; the product of a value
  // below 2^63 / num_ubatches and num_ubatches - 1 does not overflow
  const int64_t per_ubatch = padded_num_tokens / num_ubatches;
  return per_ubatch * (num_ubatches - 1) >= orig_num_tokens;
}

int32_t get_num_ubatches(bool enable_dbo, int32_t ubatch_size) {
  const bool use_ubatching = enable_dbo || ubatch_size > 1;
  if (!use_ubatching) return 1;
  return enable_dbo ? 2 : ubatch_size;
}

bool check_ubatch_thresholds(bool enable_dbo, int32_t ubatch_size,
                             int64_t dbo_decode_token_threshold,
                             int64_t dbo_prefill_token_threshold, int64_t num_tokens,
                             bool uniform_decode) {
  if (!(enable_dbo || ubatch_size > 1)) return false;
  return num_tokens >= (uniform_decode ? dbo_decode_token_threshold : dbo_prefill_token_threshold);
}

}  // namespace attn::ops
