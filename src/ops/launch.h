// The one way an op runs: its algorithm, written once against an executor (kernels/par.h), on
// the host or on the Exec's device. In an op's .cc file:
//
//   namespace {
//   template <class P>
//   void fill_on(P& p, int32_t* out, int64_t n, int32_t value) {
//     p.for_each(n, [=] ATTN_HD(int64_t i) { out[i] = value; });
//   }
//   }  // namespace
//
//   void fill_i32(const Exec& exec, int32_t* out, int64_t n, int32_t value) {
//     if (n <= 0) return;
//     ATTN_LAUNCH(exec, fill_on, out, n, value);
//   }
//
// ATTN_LAUNCH runs fill_on with HostPar for a host Exec; for a CUDA Exec it makes the Exec's
// device current and runs it with the device executor: CudaPar (kernels on exec.stream) when the
// file is compiled by nvcc, SimPar on the simulated device (ATTN_DEVICE_SIM), and otherwise
// throws Error(kUnsupported, "<op>: libattn was built without CUDA support"). A launch that fails
// throws Error(kCuda, "<op>: <cudaGetErrorName>: <text>"), the op being the enclosing function.
// In a CUDA build every file that includes this header must be compiled by nvcc
// (ATTN_DEVICE_OP_SOURCES in CMakeLists.txt): the #error below says so otherwise.
#pragma once

#include "ops/device_runtime.h"
#include "ops/error.h"
#include "ops/exec.h"
#include "par.h"  // kernels/

#if defined(__CUDACC__) || ATTN_DEVICE_SIM
#define ATTN_HAS_DEVICE_PATH 1
#include "device_guard.cuh"  // kernels/
#else
#define ATTN_HAS_DEVICE_PATH 0
#if ATTN_WITH_CUDA
#error "a file with ops must be compiled by nvcc in a CUDA build: add it to ATTN_DEVICE_OP_SOURCES"
#endif
#endif

namespace attn::ops::detail {

[[noreturn]] inline void no_device_path(const char* op) {
  fail(Status::kUnsupported, op, ": libattn was built without CUDA support");
}

template <class Algo>
void launch(const Exec& exec, const char* op, Algo&& algo) {
  if (!exec.on_cuda) {
    kernels::HostPar par;
    algo(par);
    return;
  }
#if ATTN_HAS_DEVICE_PATH
  kernels::DeviceGuard guard(exec.device_id);
  if (guard.status() != 0) device_error(op, guard.status());
  kernels::DevicePar par(exec.stream, op);
  algo(par);
  if (par.status() != 0) device_error(op, par.status());
#else
  no_device_path(op);
#endif
}

}  // namespace attn::ops::detail

/// Runs `algo(par, args...)` where `exec` says (see the top of this file).
#define ATTN_LAUNCH(exec, algo, ...) \
  ::attn::ops::detail::launch((exec), __func__, [&](auto& par_) { algo(par_, __VA_ARGS__); })
