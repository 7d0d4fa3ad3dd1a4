// The one way a tensor op runs on CUDA. In an op's .cc file:
//
//   void fill_i32(const Exec& exec, int32_t* out, int64_t n, int32_t value) {
//     if (n <= 0) return;
//     if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, fill_i32, out, n, value);
//     ... host reference ...
//   }
//
// ATTN_CUDA_LAUNCH(exec, op, args...) calls kernels::op(exec.device_id, exec.stream, args...)
// and turns a non-zero status into Error(kCuda, "op: <cudaGetErrorName>: <text>"); built without
// CUDA it throws Error(kUnsupported, "op: libattn was built without CUDA support") instead. It is
// an expression of type void: `return ATTN_CUDA_LAUNCH(...)` ends a void op; an op that returns
// a value launches, then returns it.
//
// It also checks, in every build (kernels.h declares the kernels without any CUDA header), that
// kernels::op takes exactly ops::op's parameters with (int device_id, void* stream) in place of
// the Exec, and returns a status: the two declarations (src/ops/batch_ops.h, kernels/kernels.h)
// cannot drift. Without CUDA the kernel is named only in a discarded `if constexpr` branch, which
// needs no definition.
#pragma once

#include <type_traits>

#include "kernels.h"
#include "ops/device_runtime.h"
#include "ops/error.h"
#include "ops/exec.h"

namespace attn::ops::detail {

#if ATTN_WITH_CUDA && !ATTN_DEVICE_SIM
inline constexpr bool kWithCuda = true;
#else
inline constexpr bool kWithCuda = false;
#endif

/// The type kernels::X must have for an op X of type void(const Exec&, P...).
template <class Op>
struct KernelOf;
template <class... P>
struct KernelOf<void(const Exec&, P...)> {
  using type = int(int device_id, void* stream, P...) noexcept;
};

/// Throws Error(kCuda, "<op>: <error text>") when status != 0.
inline void check_launch(int status, const char* op) {
  if (status != 0) device_error(op, status);
}

[[noreturn]] inline void no_cuda(const char* op) {
  fail(Status::kUnsupported, op, ": libattn was built without CUDA support");
}

}  // namespace attn::ops::detail

#define ATTN_CUDA_LAUNCH(exec, op, ...)                                                          \
  ([&]() -> void {                                                                               \
    static_assert(std::is_same_v<decltype(::attn::kernels::op),                                  \
                                 ::attn::ops::detail::KernelOf<decltype(::attn::ops::op)>::type>, \
                  "kernels::" #op " must take the parameters of ops::" #op);                     \
    if constexpr (::attn::ops::detail::kWithCuda)                                                \
      ::attn::ops::detail::check_launch(                                                         \
          ::attn::kernels::op((exec).device_id, (exec).stream, __VA_ARGS__), #op);               \
    else                                                                                         \
      ::attn::ops::detail::no_cuda(#op);                                                         \
  }())
