// The exception boundary of every entry point: ATTN_API_TRY ... ATTN_API_CATCH turns whatever
// the layers below throw into an attn_error_t, so no exception ever crosses the ABI.
#pragma once

#include <string>

#include "attn_c.h"

namespace attn::capi {

/// A new error object (or the static out-of-memory error when even that allocation fails).
attn_error_t* make_error(int32_t code, std::string message) noexcept;

/// Maps the exception being handled to an error object: attn::Error (thrown by every layer, ops
/// included) keeps its code, std::bad_alloc is out of memory, anything else is an internal error.
attn_error_t* translate_current_exception() noexcept;

/// Throws Error(kInvalidArgument, "<name> is NULL").
[[noreturn]] void null_argument(const char* name);

/// Throws Error(kInvalidArgument, "<name> is NULL") when p is null (inline: a compare and a
/// branch on the path of every entry point).
inline void require(const void* p, const char* name) {
  if (__builtin_expect(p == nullptr, 0)) null_argument(name);
}

}  // namespace attn::capi

#define ATTN_API_TRY try {
#define ATTN_API_CATCH                                  \
  }                                                     \
  catch (...) {                                         \
    return ::attn::capi::translate_current_exception(); \
  }
