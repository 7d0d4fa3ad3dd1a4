// The CUDA runtime calls behind src/ops/device_runtime.h (allocation, synchronous copies,
// device queries; kernels/device_runtime.cc), defined when a device path is built (the CUDA
// toolkit's runtime or the simulated device's). This header includes no CUDA header, so that
// host-compiled code can call them: status values are cudaError_t as int (0 = cudaSuccess).
// The ops' kernels are declared nowhere: each op is written once (src/ops/launch.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace attn::kernels {

/// cudaGetErrorName + cudaGetErrorString of a status, e.g. "cudaErrorNoDevice: no CUDA-capable
/// device is detected".
const char* error_text(int status) noexcept;

int device_count(int* out) noexcept;
int device_capability(int device_id, int* out) noexcept;
int malloc_on(int device_id, size_t bytes, void** out) noexcept;
int free_on(int device_id, void* ptr) noexcept;
int memset_zero(int device_id, void* ptr, size_t bytes) noexcept;
int copy_to_host(int device_id, void* dst, const void* src, size_t bytes) noexcept;
int copy_device_to_device(int device_id, void* dst, const void* src, size_t bytes) noexcept;
int copy_to_device(int device_id, void* dst, const void* src, size_t bytes) noexcept;
int copy_to_device_async(int device_id, void* dst, const void* src, size_t bytes,
                         void* stream) noexcept;

}  // namespace attn::kernels
