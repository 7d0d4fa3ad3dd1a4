// vLLM 0.33's runner-side decisions on scalars (v1/worker/cp_utils.py, ubatch_utils.py), on
// validated arguments: what attn_should_split_fa2_dcp_context_attention,
// attn_get_dcp_dummy_context_len, attn_is_last_ubatch_empty, attn_get_num_ubatches and
// attn_check_ubatch_thresholds return. Each checks its arguments (names in messages are the
// ABI's argument names) and calls the op (src/ops/runner_checks.cc).
#pragma once

#include <cstdint>

namespace attn {

bool should_split_fa2_dcp_context_attention(int32_t fa_version, int64_t max_query_len,
                                            int64_t num_reqs, int64_t num_decode_reqs,
                                            int64_t num_context_prefill_reqs);

int64_t get_dcp_dummy_context_len(int32_t dcp_world_size, int32_t cp_kv_cache_interleave_size,
                                  int32_t has_kv_cache_config, int32_t create_mixed_batch,
                                  int32_t is_graph_capturing, int32_t uniform_decode);

bool is_last_ubatch_empty(int64_t orig_num_tokens, int64_t padded_num_tokens,
                          int32_t num_ubatches);

int32_t get_num_ubatches(int32_t enable_dbo, int32_t ubatch_size);

bool check_ubatch_thresholds(int32_t enable_dbo, int32_t ubatch_size,
                             int64_t dbo_decode_token_threshold,
                             int64_t dbo_prefill_token_threshold, int64_t num_tokens,
                             int32_t uniform_decode);

}  // namespace attn
