// src/ops/device_runtime.h: forwards to kernels/ when CUDA is compiled in, refuses otherwise.
#include "ops/device_runtime.h"

#include <string>

#include "runtime.h"
#include "ops/error.h"

namespace attn::ops {

#if ATTN_WITH_CUDA

namespace {
// cudaErrorNoDevice (100) and cudaErrorInsufficientDriver (35) mean "no usable GPU here", which
// cuda_device_count() reports as 0 devices rather than as a failure.
constexpr int kCudaErrorInsufficientDriver = 35;
constexpr int kCudaErrorNoDevice = 100;

void check(int status, const char* what) {
  if (status == 0) return;
  const Status code =
      status == 2 /* cudaErrorMemoryAllocation */ ? Status::kOutOfMemory : Status::kCuda;
  fail(code, what, " failed: ", kernels::error_text(status));
}
}  // namespace

void detail::device_error(const char* op, int status) {
  fail(Status::kCuda, op, ": ", kernels::error_text(status));
}

bool cuda_compiled() noexcept { return true; }

int32_t cuda_device_count() {
  int n = 0;
  const int st = kernels::device_count(&n);
  if (st == kCudaErrorNoDevice || st == kCudaErrorInsufficientDriver) return 0;
  check(st, "cudaGetDeviceCount");
  return n;
}

std::string cuda_no_device_reason() {
  int n = 0;
  const int st = kernels::device_count(&n);
  if (st != 0) return kernels::error_text(st);
  return n == 0 ? "cudaGetDeviceCount reported 0 devices" : "";
}

int32_t cuda_device_capability(int32_t device_id) {
  int cap = 0;
  check(kernels::device_capability(device_id, &cap), "cudaDeviceGetAttribute");
  return cap;
}

void* cuda_malloc(int32_t device_id, size_t bytes) {
  void* p = nullptr;
  check(kernels::malloc_on(device_id, bytes, &p), "cudaMalloc");
  return p;
}

void cuda_free(int32_t device_id, void* ptr) noexcept {
  if (ptr != nullptr) kernels::free_on(device_id, ptr);
}

void cuda_memset_zero(int32_t device_id, void* ptr, size_t bytes) {
  check(kernels::memset_zero(device_id, ptr, bytes), "cudaMemset");
}

void cuda_copy_to_host(int32_t device_id, void* dst, const void* src, size_t bytes) {
  check(kernels::copy_to_host(device_id, dst, src, bytes), "cudaMemcpy (device to host)");
}

void cuda_copy_to_device(int32_t device_id, void* dst, const void* src, size_t bytes) {
  check(kernels::copy_to_device(device_id, dst, src, bytes), "cudaMemcpy (host to device)");
}

void cuda_copy_to_device_async(int32_t device_id, void* dst, const void* src, size_t bytes,
                               void* stream) {
  check(kernels::copy_to_device_async(device_id, dst, src, bytes, stream),
        "cudaMemcpyAsync (host to device)");
}

void cuda_copy_device_to_device(int32_t device_id, void* dst, const void* src, size_t bytes) {
  check(kernels::copy_device_to_device(device_id, dst, src, bytes),
        "cudaMemcpy (device to device)");
}

#else  // !ATTN_WITH_CUDA

namespace {
[[noreturn]] void no_cuda() {
  fail(Status::kUnsupported, "libattn was built without CUDA support");
}
}  // namespace

bool cuda_compiled() noexcept { return false; }
int32_t cuda_device_count() { no_cuda(); }
std::string cuda_no_device_reason() { return "libattn was built without CUDA support"; }
int32_t cuda_device_capability(int32_t) { no_cuda(); }
void* cuda_malloc(int32_t, size_t) { no_cuda(); }
void cuda_free(int32_t, void*) noexcept {}
void cuda_memset_zero(int32_t, void*, size_t) { no_cuda(); }
void cuda_copy_to_host(int32_t, void*, const void*, size_t) { no_cuda(); }
void cuda_copy_device_to_device(int32_t, void*, const void*, size_t) { no_cuda(); }
void cuda_copy_to_device(int32_t, void*, const void*, size_t) { no_cuda(); }
void cuda_copy_to_device_async(int32_t, void*, const void*, size_t, void*) { no_cuda(); }

#endif

}  // namespace attn::ops
