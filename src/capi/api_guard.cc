#include "capi/api_guard.h"

#include <exception>
#include <new>

#include "capi/handles.h"
#include "core/error.h"

namespace attn::capi {

static_assert(ATTN_OK == static_cast<int32_t>(Status::kOk));
static_assert(ATTN_ERR_INVALID_ARGUMENT == static_cast<int32_t>(Status::kInvalidArgument));
static_assert(ATTN_ERR_UNSUPPORTED == static_cast<int32_t>(Status::kUnsupported));
static_assert(ATTN_ERR_OUT_OF_MEMORY == static_cast<int32_t>(Status::kOutOfMemory));
static_assert(ATTN_ERR_CUDA == static_cast<int32_t>(Status::kCuda));
static_assert(ATTN_ERR_NOT_FOUND == static_cast<int32_t>(Status::kNotFound));
static_assert(ATTN_ERR_ABI_MISMATCH == static_cast<int32_t>(Status::kAbiMismatch));
static_assert(ATTN_ERR_BUSY == static_cast<int32_t>(Status::kBusy));
static_assert(ATTN_ERR_INTERNAL == static_cast<int32_t>(Status::kInternal));

namespace {
attn_error kOutOfMemoryError{ATTN_ERR_OUT_OF_MEMORY, "out of memory", true};
}  // namespace

attn_error_t* make_error(int32_t code, std::string message) noexcept {
  try {
    auto* e = new attn_error;
    e->code = code;
    e->message = std::move(message);
    return e;
  } catch (...) {
    return &kOutOfMemoryError;
  }
}

attn_error_t* translate_current_exception() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    return make_error(static_cast<int32_t>(e.status()), e.message());
  } catch (const std::bad_alloc&) {
    return &kOutOfMemoryError;
  } catch (const std::exception& e) {
    return make_error(ATTN_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return make_error(ATTN_ERR_INTERNAL, "internal error: unknown exception");
  }
}

void null_argument(const char* name) { invalid(name, " is NULL"); }

}  // namespace attn::capi
