// Versions and device counts.
#include "attn_c.h"
#include "capi/api_guard.h"
#include "core/error.h"
#include "core/vllm_release.h"
#include "ops/device_runtime.h"

namespace {

// ATTN_VLLM_RELEASE is written once, in attn_c.h; its numbers must spell the same release.
constexpr bool release_matches(const char* s, const unsigned (&parts)[3]) {
  for (int k = 0; k < 3; ++k) {
    unsigned v = 0;
    if (*s < '0' || *s > '9') return false;
    while (*s >= '0' && *s <= '9') v = v * 10 + static_cast<unsigned>(*s++ - '0');
    if (v != parts[k]) return false;
    if (k < 2 && *s++ != '.') return false;
  }
  return *s == '\0';
}
constexpr unsigned kVllmReleaseParts[3] = {ATTN_VLLM_RELEASE_MAJOR, ATTN_VLLM_RELEASE_MINOR,
                                           ATTN_VLLM_RELEASE_PATCH};
static_assert(release_matches(ATTN_VLLM_RELEASE, kVllmReleaseParts),
              "ATTN_VLLM_RELEASE and ATTN_VLLM_RELEASE_MAJOR/MINOR/PATCH disagree");
// ... and src/core's copy, which the backends report, spells the same release.
constexpr unsigned kCoreReleaseParts[3] = {attn::kVllmReleaseMajor, attn::kVllmReleaseMinor,
                                           attn::kVllmReleasePatch};
static_assert(release_matches(attn::kVllmRelease, kCoreReleaseParts) &&
                  kCoreReleaseParts[0] == kVllmReleaseParts[0] &&
                  kCoreReleaseParts[1] == kVllmReleaseParts[1] &&
                  kCoreReleaseParts[2] == kVllmReleaseParts[2],
              "src/core/vllm_release.h and ATTN_VLLM_RELEASE disagree");

}  // namespace

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

ATTN_API attn_error_t* attn_get_vllm_release(const char** release, uint32_t* major,
                                             uint32_t* minor, uint32_t* patch) noexcept {
  ATTN_API_TRY
  attn::capi::require(release, "release");
  *release = attn::kVllmRelease;  // the string the backends report (equal to ATTN_VLLM_RELEASE)
  if (major != nullptr) *major = ATTN_VLLM_RELEASE_MAJOR;
  if (minor != nullptr) *minor = ATTN_VLLM_RELEASE_MINOR;
  if (patch != nullptr) *patch = ATTN_VLLM_RELEASE_PATCH;
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
