// vLLM 0.33's runner-side decisions on scalars (ABI 1.7): the DCP ones of
// v1/worker/cp_utils.py (should_split_fa2_dcp_context_attention, get_dcp_dummy_context_len)
// and the micro-batching ones of v1/worker/ubatch_utils.py (is_last_ubatch_empty,
// get_num_ubatches, check_ubatch_thresholds).
#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "core/runner_checks.h"

extern "C" {

ATTN_API attn_error_t* attn_should_split_fa2_dcp_context_attention(
    int32_t fa_version, int64_t max_query_len, int64_t num_reqs, int64_t num_decode_reqs,
    int64_t num_context_prefill_reqs, int32_t* out_split) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_split, "out_split");
  *out_split = attn::should_split_fa2_dcp_context_attention(
                   fa_version, max_query_len, num_reqs, num_decode_reqs, num_context_prefill_reqs)
                   ? 1
                   : 0;
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_get_dcp_dummy_context_len(int32_t dcp_world_size,
                                                      int32_t cp_kv_cache_interleave_size,
                                                      int32_t has_kv_cache_config,
                                                      int32_t create_mixed_batch,
                                                      int32_t is_graph_capturing,
                                                      int32_t uniform_decode,
                                                      int64_t* out_len) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_len, "out_len");
  *out_len = attn::get_dcp_dummy_context_len(dcp_world_size, cp_kv_cache_interleave_size,
                                             has_kv_cache_config, create_mixed_batch,
                                             is_graph_capturing, uniform_decode);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_is_last_ubatch_empty(int64_t orig_num_tokens, int64_t padded_num_tokens,
                                                 int32_t num_ubatches, int32_t* out_empty) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_empty, "out_empty");
  *out_empty = attn::is_last_ubatch_empty(orig_num_tokens, padded_num_tokens, num_ubatches) ? 1 : 0;
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_get_num_ubatches(int32_t enable_dbo, int32_t ubatch_size,
                                             int32_t* out_num_ubatches) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_num_ubatches, "out_num_ubatches");
  *out_num_ubatches = attn::get_num_ubatches(enable_dbo, ubatch_size);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_check_ubatch_thresholds(int32_t enable_dbo, int32_t ubatch_size,
                                                    int64_t dbo_decode_token_threshold,
                                                    int64_t dbo_prefill_token_threshold,
                                                    int64_t num_tokens, int32_t uniform_decode,
                                                    int32_t* out_ubatch) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_ubatch, "out_ubatch");
  *out_ubatch = attn::check_ubatch_thresholds(enable_dbo, ubatch_size, dbo_decode_token_threshold,
                                              dbo_prefill_token_threshold, num_tokens,
                                              uniform_decode)
                    ? 1
                    : 0;
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
