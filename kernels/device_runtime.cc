// CUDA runtime wrappers behind src/ops/device_runtime.h.
#include <cuda_runtime.h>

#include <cstdio>
#include <mutex>
#include <string>

#include "device_guard.cuh"
#include "runtime.h"

namespace attn::kernels {

const char* error_text(int status) noexcept {
  // One buffer per status value seen; names and strings are static in the runtime.
  thread_local std::string text;
  const auto err = static_cast<cudaError_t>(status);
  text = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
  return text.c_str();
}

int device_count(int* out) noexcept { return cudaGetDeviceCount(out); }

int device_capability(int device_id, int* out) noexcept {
  int major = 0, minor = 0;
  cudaError_t st = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_id);
  if (st == cudaSuccess)
    st = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device_id);
  if (st == cudaSuccess) *out = major * 10 + minor;
  return st;
}

int malloc_on(int device_id, size_t bytes, void** out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  return cudaMalloc(out, bytes);
}

int free_on(int device_id, void* ptr) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  return cudaFree(ptr);
}

int memset_zero(int device_id, void* ptr, size_t bytes) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  return cudaMemset(ptr, 0, bytes);
}

int copy_to_host(int device_id, void* dst, const void* src, size_t bytes) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
}

int copy_to_device(int device_id, void* dst, const void* src, size_t bytes) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}

int copy_to_device_async(int device_id, void* dst, const void* src, size_t bytes,
                          void* stream) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                         static_cast<cudaStream_t>(stream));
}

int copy_device_to_device(int device_id, void* dst, const void* src, size_t bytes) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice);
}

}  // namespace attn::kernels
