// Utilities on the common attention metadata.
#include <memory>

#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "capi/handles.h"
#include "capi/owned_metadata.h"
#include "core/common_metadata.h"

namespace attn::capi {

attn_metadata_t* own_common(const CommonMetadata& c) {
  auto handle = std::make_unique<attn_metadata>();
  handle->owned = std::make_unique<Metadata>(to_metadata(c));
  handle->core = handle->owned.get();
  handle->reset_views();
  return handle.release();
}

}  // namespace attn::capi

extern "C" {

ATTN_API attn_error_t* attn_common_metadata_unpadded(const attn_common_metadata_t* common,
                                                     int64_t num_actual_tokens,
                                                     int64_t num_actual_reqs,
                                                     attn_metadata_t** out) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  attn::CommonMetadata c = attn::capi::to_common(common);
  attn::validate(c, attn::CommonLimits{});
  const attn::CommonMetadata u = attn::unpadded(c, num_actual_tokens, num_actual_reqs);
  *out = attn::capi::own_common(u);
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
