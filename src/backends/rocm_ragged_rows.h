// What DeepSeek V4 / V4.1's ROCm builders of vLLM 0.33 (models/deepseek_v4/amd/rocm.py,
// models/deepseek_v41/amd/rocm.py) add to the CUDA ones they extend: the platform they run on,
// their get_cudagraph_support override, and the ragged rows (build_ragged_indices_from_dense, then
// _copy_ragged_to_graph_buffers) they make of the dense index rows.
//
// The GPU architecture: vLLM reads _ON_GFX950 (the GCN arch) where libattn has no input, so
// libattn builds as on a ROCm GPU that is not gfx950 (MI300's gfx942, say): the ragged indices
// tensor is rows * max_entries_per_row long (gfx950 trims it to the dense source's size),
// build_for_cudagraph_capture's for_cudagraph_capture is False, and aiter's Triton sparse MLA
// (gfx950 only; VLLM_ROCM_USE_AITER_TRITON_SPARSE_MLA, default off) is off, so the SWA builders'
// prefill_swa_ragged_* are None.
#pragma once

#include <cstdint>

#include "backends/backend_descriptor.h"
#include "core/metadata.h"
#include "ops/exec.h"

namespace attn::backends {

/// The ROCm builders' get_cudagraph_support: ALWAYS with speculative decoding's adaptive
/// verification (speculative_config.enable_adaptive_verification), else the class attribute
/// Level of the builder they extend.
template <int32_t Level>
int32_t rocm_cudagraph_support(const BackendDescriptor&, const KvCacheSpec&,
                               const BuilderConfig& c) {
  return c.num_speculative_tokens > 0 && c.enable_adaptive_verification ? kCgAlways : Level;
}

/// Error(kUnsupported) unless config->platform_rocm: vLLM 0.33 builds with `d` only on ROCm (its
/// module reads the GPU's GCN arch when imported).
void check_rocm_platform(const BackendDescriptor& d, const BuilderConfig& c);

/// The ragged form of `rows` dense rows (`width` entries read a row, `row_stride` apart; lengths
/// `lens`) in the persistent buffers `ragged` (room for rows * entries_per_row) and `indptr`
/// (rows + 1), set as the metadata's fields `indices_field` (int32, max(rows * entries_per_row,
/// 1) long: entries past indptr[rows] are not written, vLLM's are uninitialized memory) and
/// `indptr_field` (int32, rows + 1).
void set_ragged_rows(Metadata& m, size_t indices_field, size_t indptr_field, const int32_t* dense,
                     int64_t rows, int64_t width, int64_t row_stride, const int32_t* lens,
                     int64_t entries_per_row, int32_t* ragged, int32_t* indptr, Device device,
                     const ops::Exec& exec);

}  // namespace attn::backends
