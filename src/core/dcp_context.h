// vLLM 0.33's DCP context helpers (v1/worker/cp_utils.py) on validated inputs: what
// attn_should_skip_dcp_context_attention and attn_split_dcp_context_queries return.
#pragma once

#include <cstdint>

#include "core/common_metadata.h"
#include "core/tensor.h"
#include "ops/batch_ops.h"

namespace attn {

/// should_skip_dcp_context_attention(context_kv_lens_cpu): `context_kv_lens` is a host int32
/// vector with at least one entry (torch's max() of an empty tensor raises).
bool should_skip_dcp_context_attention(const Tensor& context_kv_lens);

/// split_dcp_context_queries(query_start_loc_cpu, seq_lens_cpu_upper_bound, max_query_len,
/// num_actual_tokens) on a validated batch (tables optional); the upper bound is the batch's
/// host seq_lens (seq_lens_cpu, or seq_lens in host memory), None when it has none.
ops::DcpContextSplit split_dcp_context_queries(CommonMetadata& common);

}  // namespace attn
