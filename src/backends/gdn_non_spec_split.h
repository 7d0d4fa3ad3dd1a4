// vLLM 0.33's GDN split of a batch without spec decodes, shared by GDN_ATTN and its subclass
// KIMI_K3_KDA (models/kimi_k3's KimiK3KDAMetadataBuilder inherits it).
#pragma once

#include <cstdint>

#include "core/common_metadata.h"

namespace attn::backends {

/// The decode / prefill counts of the split.
struct GdnNonSpecSplit {
  int64_t num_decodes = 0, num_prefills = 0, num_decode_tokens = 0, num_prefill_tokens = 0;
};

/// First chunks (query > 0, is_prefilling, no state before: seq_lens_cpu_upper_bound <= query
/// length) are prefills even with one token (split_decodes_and_prefills with threshold 1 and
/// treat_short_extends_as_decodes=False over that mask); then trailing zero-length padding
/// leaves both prefill counts. `no_prior` is host scratch of num_reqs bytes (the mask).
/// `backend` names the builder in errors; `bound_always` when it reads the bound even without
/// is_prefilling (KIMI_K3_KDA asserts it, GDN_ATTN reads it only with is_prefilling).
/// Error(kInvalidArgument) for an empty batch or a missing bound.
GdnNonSpecSplit gdn_non_spec_split(const CommonMetadata& c, uint8_t* no_prior, const char* backend,
                                   bool bound_always);

}  // namespace attn::backends
