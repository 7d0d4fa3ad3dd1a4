// CUDA implementations of the ops in src/ops/batch_ops.h, and the runtime wrappers of
// src/ops/device_runtime.h. Compiled only when a CUDA toolkit is found. This header includes no
// CUDA header so that the host-compiled ops can call it: status values are cudaError_t as int
// (0 = cudaSuccess), streams are cudaStream_t as void*.
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

/// See ops::cascade_split. One launch; asynchronous on `stream`.
int cascade_split(int device_id, void* stream, const int32_t* seq_lens, int64_t num_reqs,
                  int64_t num_actual_tokens, int64_t common_prefix_len,
                  int32_t* cu_prefix_query_lens, int32_t* prefix_kv_lens,
                  int32_t* suffix_kv_lens) noexcept;

/// See ops::dcp_context_kv_lens. One launch; asynchronous on `stream`.
int dcp_context_kv_lens(int device_id, void* stream, const int32_t* query_start_loc,
                        const int32_t* seq_lens, int64_t num_reqs, int32_t dcp_size,
                        int32_t dcp_rank, int32_t interleave, int32_t* out) noexcept;

}  // namespace attn::kernels
