// Shared by the ops' .cc files: turn a kernels/ status into Error, or refuse a CUDA Exec when
// CUDA is not compiled in.
#pragma once

#include <string>

#include "ops/error.h"

#if ATTN_WITH_CUDA
#include "kernels.h"
#endif

namespace attn::ops::detail {

#if ATTN_WITH_CUDA
inline void check_launch(int status, const char* op) {
  if (status != 0)
    fail(Status::kCuda, op, ": ", kernels::error_text(status));
}
#else
[[noreturn]] inline void no_cuda(const char* op) {
  fail(Status::kUnsupported, op, ": libattn was built without CUDA support");
}
#endif

}  // namespace attn::ops::detail
