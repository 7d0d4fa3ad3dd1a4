// Caller-owned metadata of kind "common": what batch utilities return.
#pragma once

#include "attn_c.h"
#include "core/common_metadata.h"

namespace attn::capi {

/// Wraps a batch as caller-owned metadata of kind "common" (views, nothing copied). The handle
/// is one that attn_metadata_destroy released on this thread when there is one (its field list
/// and view arrays reused: no allocation), else a new one.
attn_metadata_t* own_common(const CommonMetadata& batch);

/// attn_metadata_destroy of a handle made by own_common: kept in this thread's small cache for
/// the next own_common (true), or left for the caller to delete (false: the cache is full, or
/// recycling is off, as under AddressSanitizer, which should see every use after destroy).
bool recycle_common(attn_metadata_t* metadata) noexcept;

/// The "common" batch that metadata of kind "common" holds, as the ABI struct `out` (views into
/// `metadata`), written up to out->struct_size: attn_metadata_to_common's body.
void write_common(const attn_metadata_t* metadata, attn_common_metadata_t* out, const char* name);

}  // namespace attn::capi
