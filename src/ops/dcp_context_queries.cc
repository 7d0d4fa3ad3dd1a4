// vLLM 0.33's DCP context helpers (v1/worker/cp_utils.py): should_skip_dcp_context_attention
// and split_dcp_context_queries. Host-only: both read host mirrors and return scalars, as vLLM's
// do (no array is computed, so there is no CUDA implementation).
#include "ops/batch_ops.h"

namespace attn::ops {

bool should_skip_dcp_context_attention(const int32_t* lens, const int32_t* query_start_loc,
                                       int64_t num_reqs) {
  int64_t longest = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    int64_t ctx = lens[r];
    if (query_start_loc != nullptr)
      ctx -= static_cast<int64_t>(query_start_loc[r + 1]) - query_start_loc[r];
    if (r == 0 || ctx > longest) longest = ctx;
  }
  return longest == 0;
}

DcpContextSplit split_dcp_context_queries(const int32_t* query_start_loc, int64_t num_reqs,
                                          const int32_t* seq_lens, int64_t max_query_len,
                                          int64_t num_actual_tokens) {
  DcpContextSplit s;
  if (max_query_len <= 1) {
    s.num_decode_reqs = num_reqs;
    s.num_decode_tokens = num_actual_tokens;
    return s;
  }
  if (seq_lens == nullptr) {
    s.num_prefill_reqs = num_reqs;
    s.num_prefill_tokens = num_actual_tokens;
    return s;
  }
  const BatchSplit b = split_decodes_prefills_and_extends(query_start_loc, seq_lens, num_reqs,
                                                          num_actual_tokens, max_query_len, 1);
  s.num_decode_reqs = b.num_decodes;
  s.num_prefill_reqs = b.num_extends;
  s.num_decode_tokens = b.num_decode_tokens;
  s.num_prefill_tokens = b.num_extend_tokens;
  return s;
}

}  // namespace attn::ops
