// token_query_starts: the first query row of each token's request (INKLING_SCONV_SWA).
#pragma once

#include <cstdint>

#include "ops/exec.h"

namespace attn::ops {

/// INKLING_SCONV_SWA's query_start (vLLM 0.33's sconv_seq_metadata): for t < num_tokens, out[t] =
/// query_start_loc[token_to_req[t]] (the first query row of token t's request) for t <
/// num_mapped_tokens, 0 from there on. token_to_req is compute_token_to_req_indices' output over
/// the same tokens; its first num_mapped_tokens entries index query_start_loc.
void token_query_starts(const Exec& exec, const int32_t* query_start_loc,
                        const int32_t* token_to_req, int64_t num_mapped_tokens,
                        int64_t num_tokens, int32_t* out);

}  // namespace attn::ops
