// vLLM 0.33's DCP context helpers (ABI 1.4): attn_should_skip_dcp_context_attention and
// attn_split_dcp_context_queries.
#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "core/dcp_context.h"

extern "C" {

ATTN_API attn_error_t* attn_should_skip_dcp_context_attention(const attn_tensor_t* context_kv_lens,
                                                              int32_t* out_skip) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_skip, "out_skip");
  const attn::Tensor t = attn::capi::to_required_tensor(context_kv_lens, "context_kv_lens");
  *out_skip = attn::should_skip_dcp_context_attention(t) ? 1 : 0;
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_split_dcp_context_queries(const attn_common_metadata_t* common,
                                                      int64_t* out_num_decode_reqs,
                                                      int64_t* out_num_prefill_reqs,
                                                      int64_t* out_num_decode_tokens,
                                                      int64_t* out_num_prefill_tokens) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_num_decode_reqs, "out_num_decode_reqs");
  attn::capi::require(out_num_prefill_reqs, "out_num_prefill_reqs");
  attn::capi::require(out_num_decode_tokens, "out_num_decode_tokens");
  attn::capi::require(out_num_prefill_tokens, "out_num_prefill_tokens");
  attn::CommonMetadata c = attn::capi::to_common(common);
  const attn::ops::DcpContextSplit s = attn::split_dcp_context_queries(c);
  *out_num_decode_reqs = s.num_decode_reqs;
  *out_num_prefill_reqs = s.num_prefill_reqs;
  *out_num_decode_tokens = s.num_decode_tokens;
  *out_num_prefill_tokens = s.num_prefill_tokens;
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
