#include "core/batch_split.h"

#include <vector>

#include "core/error.h"

namespace attn {
namespace {
void check_threshold(int32_t t) {
  if (t < 0) invalid("decode_threshold=", t, " is negative");
}
}  // namespace

ops::BatchSplit split_decodes_and_prefills(CommonMetadata& batch, const SplitRequest& request) {
  check_threshold(request.decode_threshold);
  // vLLM's split reads the scalars, query_start_loc_cpu and (short extends as prefills)
  // is_prefilling: only they are checked (a padded batch's short slot mapping is not read).
  if (!batch.seq_lens) invalid("common->seq_lens is NULL");
  CommonMetadata common =
      utility_view(batch, /*seq_lens=*/false, !request.treat_short_extends_as_decodes);
  CommonLimits lim;
  lim.require_tables = false;
  lim.reads_seq_lens = false;
  validate(common, lim);
  ops::SplitOptions o;
  o.decode_threshold = request.decode_threshold;
  o.require_uniform = request.require_uniform;
  o.treat_short_extends_as_decodes = request.treat_short_extends_as_decodes;
  std::vector<uint8_t> prefilling;
  if (!request.treat_short_extends_as_decodes) {
    if (!common.is_prefilling)
      invalid("common->is_prefilling is NULL; treat_short_extends_as_decodes=0 needs it (vLLM "
              "asserts is_prefilling is not None)");
    prefilling.resize(static_cast<size_t>(common.num_reqs));
    const CommonMetadata::PrefillingFlags flags = common.prefilling_flags();
    for (int64_t i = 0; i < common.num_reqs; ++i) prefilling[i] = flags(i) ? 1 : 0;
    o.is_prefilling = prefilling.data();
  }
  return ops::split_decodes_and_prefills(common.qsl_host, common.num_reqs,
                                         common.num_actual_tokens, common.max_query_len, o);
}

ops::BatchSplit split_decodes_prefills_and_extends(CommonMetadata& batch,
                                                   int32_t decode_threshold) {
  check_threshold(decode_threshold);
  // reads the scalars, query_start_loc_cpu and the host seq_lens: only they are checked
  CommonMetadata common = utility_view(batch, /*seq_lens=*/true, /*is_prefilling=*/false);
  CommonLimits lim;
  lim.require_tables = false;
  lim.require_host_seq_lens = true;
  validate(common, lim);
  return ops::split_decodes_prefills_and_extends(common.qsl_host, common.seq_lens_host,
                                                 common.num_reqs, common.num_actual_tokens,
                                                 common.max_query_len, decode_threshold);
}

}  // namespace attn
