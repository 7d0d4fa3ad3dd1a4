// Error objects and status strings.
#include "attn_c.h"
#include "capi/handles.h"

extern "C" {

ATTN_API int32_t attn_error_code(const attn_error_t* err) noexcept {
  return err == nullptr ? ATTN_OK : err->code;
}

ATTN_API const char* attn_error_message(const attn_error_t* err) noexcept {
  return err == nullptr ? "" : err->message.c_str();
}

ATTN_API void attn_error_destroy(attn_error_t* err) noexcept {
  if (err != nullptr && !err->is_static) delete err;
}

ATTN_API const char* attn_status_string(int32_t code) noexcept {
  switch (code) {
    case ATTN_OK:
      return "ok";
    case ATTN_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case ATTN_ERR_UNSUPPORTED:
      return "unsupported";
    case ATTN_ERR_OUT_OF_MEMORY:
      return "out of memory";
    case ATTN_ERR_CUDA:
      return "CUDA error";
    case ATTN_ERR_NOT_FOUND:
      return "not found";
    case ATTN_ERR_ABI_MISMATCH:
      return "ABI mismatch";
    case ATTN_ERR_BUSY:
      return "busy";
    case ATTN_ERR_INTERNAL:
      return "internal error";
    default:
      return "unknown status";
  }
}

}  // extern "C"
