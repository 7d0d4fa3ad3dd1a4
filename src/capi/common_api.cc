// Utilities on the common attention metadata.
#include <memory>

#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "capi/handles.h"
#include "capi/owned_metadata.h"
#include "core/common_metadata.h"

namespace attn::capi {
namespace {

#if defined(__SANITIZE_ADDRESS__)
#define ATTN_RECYCLE_COMMON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_RECYCLE_COMMON 0
#endif
#endif
#ifndef ATTN_RECYCLE_COMMON
#define ATTN_RECYCLE_COMMON 1
#endif

/// Handles of kind "common" that attn_metadata_destroy released on this thread, for the next
/// own_common: a batch utility's result is made and released every step, and a new one costs
/// ~40 field names and the view arrays to allocate (issue 35). Freed when the thread exits; a
/// destroy after that (another thread_local's or a static's destructor) frees as before.
struct CommonCache {
  static constexpr size_t kSlots = ATTN_RECYCLE_COMMON ? 4 : 0;
  attn_metadata* slots[kSlots > 0 ? kSlots : 1] = {};
  size_t count = 0;
  bool closed = false;  ///< The thread is exiting: keep nothing more.
  constexpr CommonCache() = default;
  CommonCache(const CommonCache&) = delete;
  CommonCache& operator=(const CommonCache&) = delete;
  ~CommonCache() {
    closed = true;
    for (size_t i = 0; i < count; ++i) delete slots[i];
    count = 0;
  }
};
thread_local CommonCache common_cache;

}  // namespace

attn_metadata_t* own_common(const CommonMetadata& c) {
  CommonCache& cache = common_cache;
  if (cache.count > 0) {
    attn_metadata* handle = cache.slots[cache.count - 1];
    assign_metadata(c, *handle->owned);  // checks the kind; throws nothing else
    --cache.count;
    handle->reset_views();  // sized already: marks the old views stale
    return handle;
  }
  auto handle = std::make_unique<attn_metadata>();
  handle->owned = std::make_unique<Metadata>(to_metadata(c));
  handle->core = handle->owned.get();
  handle->recyclable = true;
  handle->reset_views();
  return handle.release();
}

bool recycle_common(attn_metadata_t* m) noexcept {
  if (!m->recyclable || m->core != m->owned.get()) return false;
  CommonCache& cache = common_cache;
  if (cache.closed || cache.count >= CommonCache::kSlots) return false;
  cache.slots[cache.count++] = m;
  return true;
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
