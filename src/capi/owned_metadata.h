// Caller-owned metadata of kind "common": what batch utilities return.
#pragma once

#include "attn_c.h"
#include "core/common_metadata.h"

namespace attn::capi {

/// Wraps a batch as caller-owned metadata of kind "common" (views, nothing copied).
attn_metadata_t* own_common(const CommonMetadata& batch);

}  // namespace attn::capi
