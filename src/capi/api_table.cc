// attn_get_api: every exported function in one const table, generated from the header's
// ATTN_API_FUNCTIONS list, so the table, its struct and the declarations cannot drift apart.
#include <cstddef>

#include "attn_c.h"
#include "capi/api_guard.h"
#include "core/error.h"

namespace {

// ---- the layout is frozen: checked here, at compile time ---------------------------------------
// Member k (0-based, in ATTN_API_FUNCTIONS order) lies at sizeof(size_t) + k pointers.
enum ApiIndex : size_t {
#define ATTN_API_INDEX_(name) kIndex_##name,
  ATTN_API_FUNCTIONS(ATTN_API_INDEX_)
#undef ATTN_API_INDEX_
  kApiFunctionCount
};
#define ATTN_API_OFFSET_(name)                                                              \
  static_assert(offsetof(attn_api_t, name) == sizeof(size_t) + kIndex_##name * sizeof(void*), \
                "attn_api_t member " #name " is not at its place in ATTN_API_FUNCTIONS");  \
  static_assert(sizeof(attn_api_t::name) == sizeof(void*), #name);
ATTN_API_FUNCTIONS(ATTN_API_OFFSET_)
#undef ATTN_API_OFFSET_

// The released lists never change length: a function added to an old list (instead of a new
// ATTN_API_FUNCTIONS_1_<minor>) would move every member after it.
#define ATTN_API_COUNT_(name) +1
static_assert(0 ATTN_API_FUNCTIONS_1_0(ATTN_API_COUNT_) == 54, "ABI 1.0 had 54 functions");
static_assert(0 ATTN_API_FUNCTIONS_1_3(ATTN_API_COUNT_) == 2, "ABI 1.3 added 2 functions");
#undef ATTN_API_COUNT_

static_assert(ATTN_API_STRUCT_SIZE == sizeof(attn_api_t),
              "ATTN_API_STRUCT_SIZE must end at the last member of ATTN_API_FUNCTIONS");
static_assert(ATTN_API_STRUCT_SIZE == sizeof(size_t) + kApiFunctionCount * sizeof(void*));

// Each initializer is the function itself; the assignment to the PFN_ member type fails to
// compile when a typedef and its declaration disagree.
constexpr attn_api_t kApi = {
    ATTN_API_STRUCT_SIZE,
#define ATTN_API_ENTRY_(name) &name,
    ATTN_API_FUNCTIONS(ATTN_API_ENTRY_)
#undef ATTN_API_ENTRY_
};

}  // namespace

extern "C" {

ATTN_API attn_error_t* attn_get_api(uint32_t major, uint32_t minor,
                                    const attn_api_t** out) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  if (major != ATTN_VERSION_MAJOR || minor > ATTN_VERSION_MINOR)
    attn::fail(attn::Status::kAbiMismatch, "attn_get_api: the caller asked for libattn ", major,
               ".", minor, " but the loaded library is ", ATTN_VERSION_MAJOR, ".",
               ATTN_VERSION_MINOR, ".", ATTN_VERSION_PATCH, " (its table serves major ",
               ATTN_VERSION_MAJOR, " and minors up to ", ATTN_VERSION_MINOR, ")");
  *out = &kApi;
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
