// attn::Error: the one exception libattn throws for a failure that the C ABI reports, from the
// ops up (src/ops is the lowest C++ layer; kernels/ return cudaError_t as int and never throw).
// src/capi catches it at the boundary and turns it into an attn_error_t. src/core/error.h
// includes this header, so the layers above keep including that one.
#pragma once

#include <cstdint>
#include <exception>
#include <sstream>
#include <string>
#include <utility>

namespace attn {

/// Status codes, numbered as the ABI's ATTN_* codes (src/capi/api_guard.cc static_asserts it).
enum class Status : int32_t {
  kOk = 0,
  kInvalidArgument = 1,
  kUnsupported = 2,
  kOutOfMemory = 3,
  kCuda = 4,
  kNotFound = 5,
  kAbiMismatch = 6,
  kBusy = 7,
  kInternal = 8,
};

class Error : public std::exception {
 public:
  Error(Status status, std::string message) : status_(status), message_(std::move(message)) {}
  Status status() const noexcept { return status_; }
  const std::string& message() const noexcept { return message_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  Status status_;
  std::string message_;
};

/// Concatenates its arguments with operator<< (only on error paths).
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// Throws Error(status, cat(args...)).
template <class... Args>
[[noreturn]] void fail(Status status, const Args&... args) {
  throw Error(status, cat(args...));
}

/// Throws Error(kInvalidArgument, cat(args...)).
template <class... Args>
[[noreturn]] void invalid(const Args&... args) {
  throw Error(Status::kInvalidArgument, cat(args...));
}

}  // namespace attn
