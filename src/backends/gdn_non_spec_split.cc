#include "backends/gdn_non_spec_split.h"

#include "core/error.h"
#include "ops/batch_ops.h"

namespace attn::backends {

GdnNonSpecSplit gdn_non_spec_split(const CommonMetadata& c, uint8_t* no_prior, const char* backend,
                                   bool bound_always) {
  const int64_t n = c.num_reqs;
  if (n == 0)
    invalid("common->num_reqs=0: vLLM 0.33's ", backend, " build() splits a batch without spec "
            "decodes by its first request's query length (split_decodes_and_prefills with "
            "treat_short_extends_as_decodes=False), which an empty batch does not have");
  const int32_t* bound = c.seq_lens_cpu_upper_bound
                             ? c.seq_lens_cpu_upper_bound->as<const int32_t>()
                             : c.host_seq_lens();
  if ((bound_always || c.is_prefilling) && bound == nullptr)
    invalid("common->seq_lens_cpu_upper_bound is NULL (and no host seq_lens); ", backend,
            " reads it to find the first chunks among the is_prefilling requests",
            bound_always ? " (vLLM 0.33 asserts it)" : "");
  // Capture batches also have seq_len == query_len but are not prefills: without is_prefilling
  // no request is a first chunk.
  const CommonMetadata::PrefillingFlags flags = c.prefilling_flags();
  const int32_t* qsl = c.qsl_host;
  uint8_t any_first_chunk = 0;
  // A first chunk needs its is_prefilling flag: none set, none to look for.
  if (c.any_prefilling()) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = int64_t{qsl[i + 1]} - qsl[i];
      no_prior[i] = q > 0 && bound[i] <= q && flags(i) ? 1 : 0;
      any_first_chunk |= no_prior[i];
    }
  }
  // No mask when no request is a first chunk: the split's O(1) answer for a decode-only step.
  const ops::BatchSplit s = ops::split_decodes_and_prefills(
      c.qsl_host, n, c.num_actual_tokens, c.max_query_len, 1, /*require_uniform=*/false,
      /*treat_short_extends_as_decodes=*/false, any_first_chunk ? no_prior : nullptr);
  GdnNonSpecSplit out{s.num_decodes, s.num_prefills, s.num_decode_tokens, s.num_prefill_tokens};
  if (out.num_prefills > 0) {
    for (int64_t i = out.num_decodes; i < n; ++i) out.num_prefills -= c.query_len(i) == 0 ? 1 : 0;
    out.num_prefill_tokens = c.qsl_host[out.num_decodes + out.num_prefills] - out.num_decode_tokens;
  }
  return out;
}

}  // namespace attn::backends
