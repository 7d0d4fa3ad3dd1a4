// Errors raised by the ops layer. The ops layer sits below src/core, so it has its own small
// error type; src/capi maps it onto the ABI's status codes (same numbers).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace attn::ops {

/// Why an op failed. The numbers equal the ABI's ATTN_ERR_* codes.
enum class OpStatus : int32_t {
  kInvalidArgument = 1,
  kUnsupported = 2,
  kOutOfMemory = 3,
  kCuda = 4,
};

/// Thrown by ops and by the device runtime wrappers.
class OpError : public std::runtime_error {
 public:
  OpError(OpStatus status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  OpStatus status() const noexcept { return status_; }

 private:
  OpStatus status_;
};

}  // namespace attn::ops
