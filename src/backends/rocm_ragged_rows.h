// What DeepSeek V4 / V4.1's ROCm builders of vLLM 0.33 (models/deepseek_v4/amd/rocm.py,
// models/deepseek_v41/amd/rocm.py) add to the CUDA ones they extend: the platform they run on,
// their get_cudagraph_support override, and the ragged rows (build_ragged_indices_from_dense, then
// _copy_ragged_to_graph_buffers) they make of the dense index rows.
//
// The GPU architecture: vLLM reads _ON_GFX950 (the GCN arch). libattn takes it from
// config->device_capability, which on ROCm is vLLM's current_platform.get_device_capability()
// (_capability_from_gcn_arch: gfx942 -> 94, gfx950 -> 95): gfx950 is platform_rocm with
// device_capability 95 (rocm_gfx950). There the ragged indices tensor is trimmed to the dense
// source's size and build_for_cudagraph_capture sets for_cudagraph_capture. aiter's Triton sparse
// MLA (VLLM_ROCM_USE_AITER_TRITON_SPARSE_MLA with VLLM_ROCM_USE_AITER, gfx950 only, no KV
// connector) is an environment switch libattn has no input for, default off: the SWA builders'
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

/// vLLM's _ON_GFX950 from the config: ROCm with device capability 9.5.
inline bool rocm_gfx950(const BuilderConfig& c) {
  return c.platform_rocm && c.device_capability == 95;
}

/// Error(kUnsupported) unless config->platform_rocm: vLLM 0.33 builds with `d` only on ROCm (its
/// module reads the GPU's GCN arch when imported).
void check_rocm_platform(const BackendDescriptor& d, const BuilderConfig& c);

/// The ragged form of `rows` dense rows (`width` entries read a row, `row_stride` apart; lengths
/// `lens`) in the persistent buffers `ragged` (room for rows * entries_per_row) and `indptr`
/// (rows + 1), set as the metadata's fields `indices_field` (int32, max(rows * entries_per_row,
/// 1) long, on gfx950 max(rows * width, 1): entries past indptr[rows] are not written, vLLM's are
/// uninitialized memory) and `indptr_field` (int32, rows + 1).
void set_ragged_rows(Metadata& m, size_t indices_field, size_t indptr_field, const int32_t* dense,
                     int64_t rows, int64_t width, int64_t row_stride, const int32_t* lens,
                     int64_t entries_per_row, bool gfx950, int32_t* ragged, int32_t* indptr,
                     Device device, const ops::Exec& exec);

}  // namespace attn::backends
