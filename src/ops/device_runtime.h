// The few CUDA runtime services the layers above need (allocation, copies, device queries),
// behind plain C++ so that nothing above src/ops includes a CUDA header. Built without CUDA,
// cuda_compiled() is false and every other function throws Error(kUnsupported).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attn::ops {

/// True when the library was compiled with CUDA support.
bool cuda_compiled() noexcept;

/// Number of visible CUDA devices; 0 when none is visible (no driver, no GPU).
/// Throws Error(kUnsupported) without CUDA support, Error(kCuda) on other runtime errors.
int32_t cuda_device_count();

/// Why cuda_device_count() is 0 ("" when it is not): the runtime's own text.
std::string cuda_no_device_reason();

/// Compute capability of a device as major*10+minor. Throws Error(kCuda) on failure.
int32_t cuda_device_capability(int32_t device_id);

/// Device memory. cuda_malloc throws Error(kOutOfMemory) or Error(kCuda).
void* cuda_malloc(int32_t device_id, size_t bytes);
void cuda_free(int32_t device_id, void* ptr) noexcept;

/// Synchronous helpers (used at create time, in validate-full mode and by clones only).
void cuda_memset_zero(int32_t device_id, void* ptr, size_t bytes);
void cuda_copy_to_host(int32_t device_id, void* dst_host, const void* src_device, size_t bytes);
void cuda_copy_device_to_device(int32_t device_id, void* dst, const void* src, size_t bytes);
void cuda_copy_to_device(int32_t device_id, void* dst_device, const void* src_host, size_t bytes);

/// The one copy a build may issue besides kernels: host to device, queued on the build's stream
/// (cudaMemcpyAsync; vLLM 0.33's non_blocking copy of a host staging buffer). For the inputs that
/// only exist on the host (multimodal ranges, host R-SWA prefix lengths); the host memory must
/// stay unchanged until the stream reaches the copy (a builder's persistent host buffer does
/// until the next build). Under stream capture the source must be pinned (CUDA's rule).
void cuda_copy_to_device_async(int32_t device_id, void* dst_device, const void* src_host,
                               size_t bytes, void* stream);

namespace detail {
/// Throws Error(kCuda, "<op>: <cudaGetErrorName>: <text>") for a failed launch or copy of an op
/// (src/ops/launch.h). Device builds only: without CUDA nothing calls it.
[[noreturn]] void device_error(const char* op, int status);
}  // namespace detail

}  // namespace attn::ops
