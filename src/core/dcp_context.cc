#include "core/dcp_context.h"

#include "core/error.h"
#include "core/tensor_args.h"

namespace attn {

bool should_skip_dcp_context_attention(const Tensor& context_kv_lens) {
  expect_host_vector(context_kv_lens, "context_kv_lens", kInt32, 1, /*at_least=*/true);
  return ops::should_skip_dcp_context_attention(context_kv_lens.as<const int32_t>(), nullptr,
                                                context_kv_lens.shape[0]);
}

ops::DcpContextSplit split_dcp_context_queries(CommonMetadata& batch) {
  // reads the scalars, query_start_loc_cpu and the host seq_lens: only they are checked
  CommonMetadata common = utility_view(batch, /*seq_lens=*/true, /*is_prefilling=*/false);
  CommonLimits lim;
  lim.require_tables = false;
  validate(common, lim);
  return ops::split_dcp_context_queries(common.qsl_host, common.num_reqs, common.seq_lens_host,
                                        common.max_query_len, common.num_actual_tokens);
}

}  // namespace attn
