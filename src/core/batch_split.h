// vLLM's split_decodes_and_prefills and split_decodes_prefills_and_extends on a batch
// (computed from host memory: the *_cpu mirrors, as vLLM does).
#pragma once

#include <cstdint>

#include "core/common_metadata.h"
#include "ops/batch_ops.h"

namespace attn {

/// Validates `common` (block table and slot mapping optional) and splits it.
ops::BatchSplit split_decodes_and_prefills(CommonMetadata& common, int32_t decode_threshold,
                                           bool require_uniform);
/// As above; seq_lens must be readable on the host (seq_lens_cpu on a device batch).
ops::BatchSplit split_decodes_prefills_and_extends(CommonMetadata& common,
                                                   int32_t decode_threshold);

}  // namespace attn
