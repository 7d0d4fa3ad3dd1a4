// vLLM's split_decodes_and_prefills and split_decodes_prefills_and_extends on a batch
// (computed from host memory: the *_cpu mirrors, as vLLM does).
#pragma once

#include <cstdint>

#include "core/common_metadata.h"
#include "ops/batch_ops.h"

namespace attn {

/// The options of split_decodes_and_prefills (vLLM 0.33's keyword arguments).
struct SplitRequest {
  int32_t decode_threshold = 1;
  bool require_uniform = false;
  bool treat_short_extends_as_decodes = true;
};

/// Validates `common` (block table and slot mapping optional) and splits it. Without
/// treat_short_extends_as_decodes, common.is_prefilling is required (vLLM asserts it).
ops::BatchSplit split_decodes_and_prefills(CommonMetadata& common, const SplitRequest& request);
/// As above; seq_lens must be readable on the host (seq_lens_cpu on a device batch).
ops::BatchSplit split_decodes_prefills_and_extends(CommonMetadata& common,
                                                   int32_t decode_threshold);

}  // namespace attn
