// Versions and device counts.
#include "attn_c.h"
#include "capi/api_guard.h"
#include "core/error.h"
#include "ops/device_runtime.h"

extern "C" {

ATTN_API void attn_get_version(uint32_t* major, uint32_t* minor, uint32_t* patch) noexcept {
  if (major != nullptr) *major = ATTN_VERSION_MAJOR;
  if (minor != nullptr) *minor = ATTN_VERSION_MINOR;
  if (patch != nullptr) *patch = ATTN_VERSION_PATCH;
}

ATTN_API attn_error_t* attn_check_version(uint32_t major, uint32_t minor) noexcept {
  ATTN_API_TRY
  if (major != ATTN_VERSION_MAJOR || minor > ATTN_VERSION_MINOR)
    attn::fail(attn::Status::kAbiMismatch, "the caller was compiled against libattn ", major, ".",
               minor, " but the loaded library is ", ATTN_VERSION_MAJOR, ".", ATTN_VERSION_MINOR,
               ".", ATTN_VERSION_PATCH, " (needs the same major and a minor of at least ", minor,
               ")");
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_device_count(int32_t device_type, int32_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  if (device_type == ATTN_DEVICE_CPU) {
    *out = 1;
    return nullptr;
  }
  if (device_type != ATTN_DEVICE_CUDA)
    attn::invalid("device_type=", device_type, " is not ATTN_DEVICE_CPU (1) or ATTN_DEVICE_CUDA (2)");
  const int32_t n = attn::ops::cuda_device_count();  // throws without CUDA support
  *out = n;
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
