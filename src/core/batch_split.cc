#include "core/batch_split.h"

#include "core/error.h"

namespace attn {
namespace {
void check_threshold(int32_t t) {
  if (t < 0) invalid("decode_threshold=", t, " is negative");
}
}  // namespace

ops::BatchSplit split_decodes_and_prefills(CommonMetadata& common, int32_t decode_threshold,
                                           bool require_uniform) {
  check_threshold(decode_threshold);
  CommonLimits lim;
  lim.require_tables = false;
  validate(common, lim);
  return ops::split_decodes_and_prefills(common.qsl_host, common.num_reqs,
                                         common.num_actual_tokens, common.max_query_len,
                                         decode_threshold, require_uniform);
}

ops::BatchSplit split_decodes_prefills_and_extends(CommonMetadata& common,
                                                   int32_t decode_threshold) {
  check_threshold(decode_threshold);
  CommonLimits lim;
  lim.require_tables = false;
  lim.require_host_seq_lens = true;
  validate(common, lim);
  return ops::split_decodes_prefills_and_extends(common.qsl_host, common.seq_lens_host,
                                                 common.num_reqs, common.num_actual_tokens,
                                                 common.max_query_len, decode_threshold);
}

}  // namespace attn
