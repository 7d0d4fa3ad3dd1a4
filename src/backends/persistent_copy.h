// Copies into a builder's persistent buffer from host or device memory: the `copy_` of a
// common-metadata tensor into a CUDA-graph-stable buffer that vLLM 0.33's builders do
// (FLASH_ATTN's and TRITON_ATTN's rswa_prefix_lens, FLASH_ATTN's mm_prefix staging).
#pragma once

#include <cstdint>

#include "core/common_metadata.h"
#include "core/tensor.h"
#include "ops/exec.h"

namespace attn::backends {

/// dst[i] = src[i] for i < n, `dst` a buffer of the builder (where `exec` runs), `src` either in
/// host memory (`src_on_host`) or where the builder runs. Host to CUDA is an asynchronous copy on
/// the build's stream (vLLM's non_blocking copy; the host memory must stay unchanged until the
/// stream reaches it, see ops::cuda_copy_to_device_async); CUDA to CUDA is a kernel on the
/// build's stream.
void copy_i32_into_buffer(const ops::Exec& exec, const int32_t* src, bool src_on_host, int64_t n,
                          int32_t* dst);
/// The same for bytes (int8/bool flags; Mamba's ReplaySSM is_flush_d).
void copy_u8_into_buffer(const ops::Exec& exec, const uint8_t* src, bool src_on_host, int64_t n,
                         uint8_t* dst);

/// vLLM 0.33's seq_lens_cpu_upper_bound rows [first, first + n) where `exec` runs, for a
/// kernel that plans from them (the sparse MLA fp8 workspace starts, the indexer's prefill
/// groups): on the host the caller's bound itself; on CUDA the rows staged in `staging` (a host
/// buffer of the builder) and copied into the same rows of `dst` (a device buffer of the
/// builder; copy_i32_into_buffer). Indexed by request: only rows [first, first + n) are set.
/// Null without the bound.
const int32_t* upper_bound_where_run(const ops::Exec& exec, const CommonMetadata& c,
                                     int64_t first, int64_t n, int32_t* staging, int32_t* dst);

}  // namespace attn::backends
