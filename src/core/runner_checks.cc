#include "core/runner_checks.h"

#include "core/error.h"
#include "ops/batch_ops.h"

namespace attn {
namespace {

bool flag(int32_t v, const char* name) {
  if (v != 0 && v != 1) invalid(name, "=", v, " must be 0 or 1");
  return v != 0;
}

void non_negative(int64_t v, const char* name) {
  if (v < 0) invalid(name, "=", v, " is negative");
}

}  // namespace

bool should_split_fa2_dcp_context_attention(int32_t fa_version, int64_t max_query_len,
                                            int64_t num_reqs, int64_t num_decode_reqs,
                                            int64_t num_context_prefill_reqs) {
  if (fa_version < 0)
    invalid("fa_version=", fa_version, " is negative (ATTN_FA_VERSION_NONE (0) is vLLM's None)");
  non_negative(max_query_len, "max_query_len");
  non_negative(num_reqs, "num_reqs");
  if (num_decode_reqs < 0 || num_decode_reqs > num_reqs)
    invalid("num_decode_reqs=", num_decode_reqs, " is not in [0, num_reqs=", num_reqs, "]");
  if (num_context_prefill_reqs < 0 || num_context_prefill_reqs > num_reqs - num_decode_reqs)
    invalid("num_context_prefill_reqs=", num_context_prefill_reqs, " is not in [0, num_reqs - ",
            "num_decode_reqs=", num_reqs - num_decode_reqs, "]");
  return ops::should_split_fa2_dcp_context_attention(fa_version, max_query_len, num_reqs,
                                                     num_decode_reqs, num_context_prefill_reqs);
}

int64_t get_dcp_dummy_context_len(int32_t dcp_world_size, int32_t cp_kv_cache_interleave_size,
                                  int32_t has_kv_cache_config, int32_t create_mixed_batch,
                                  int32_t is_graph_capturing, int32_t uniform_decode) {
  if (dcp_world_size < 1) invalid("dcp_world_size=", dcp_world_size, " must be positive");
  if (cp_kv_cache_interleave_size < 1)
    invalid("cp_kv_cache_interleave_size=", cp_kv_cache_interleave_size, " must be positive");
  const bool has_config = flag(has_kv_cache_config, "has_kv_cache_config");
  const bool mixed = flag(create_mixed_batch, "create_mixed_batch");
  const bool capturing = flag(is_graph_capturing, "is_graph_capturing");
  const bool uniform = flag(uniform_decode, "uniform_decode");
  return ops::get_dcp_dummy_context_len(dcp_world_size, cp_kv_cache_interleave_size, has_config,
                                        mixed, capturing, uniform);
}

bool is_last_ubatch_empty(int64_t orig_num_tokens, int64_t padded_num_tokens,
                          int32_t num_ubatches) {
  non_negative(orig_num_tokens, "orig_num_tokens");
  non_negative(padded_num_tokens, "padded_num_tokens");
  if (num_ubatches < 1)
    invalid("num_ubatches=", num_ubatches, " must be positive (vLLM divides by it)");
  return ops::is_last_ubatch_empty(orig_num_tokens, padded_num_tokens, num_ubatches);
}

int32_t get_num_ubatches(int32_t enable_dbo, int32_t ubatch_size) {
  const bool dbo = flag(enable_dbo, "enable_dbo");
  if (ubatch_size < 0) invalid("ubatch_size=", ubatch_size, " is negative");
  return ops::get_num_ubatches(dbo, ubatch_size);
}

bool check_ubatch_thresholds(int32_t enable_dbo, int32_t ubatch_size,
                             int64_t dbo_decode_token_threshold,
                             int64_t dbo_prefill_token_threshold, int64_t num_tokens,
                             int32_t uniform_decode) {
  const bool dbo = flag(enable_dbo, "enable_dbo");
  if (ubatch_size < 0) invalid("ubatch_size=", ubatch_size, " is negative");
  non_negative(dbo_decode_token_threshold, "dbo_decode_token_threshold");
  non_negative(dbo_prefill_token_threshold, "dbo_prefill_token_threshold");
  non_negative(num_tokens, "num_tokens");
  const bool uniform = flag(uniform_decode, "uniform_decode");
  return ops::check_ubatch_thresholds(dbo, ubatch_size, dbo_decode_token_threshold,
                                      dbo_prefill_token_threshold, num_tokens, uniform);
}

}  // namespace attn
