// CUDA implementations of the ops in src/ops/batch_ops.h, and the runtime wrappers of
// src/ops/device_runtime.h. Defined only when a CUDA toolkit is found. This header includes no
// CUDA header so that the host-compiled ops can call it: status values are cudaError_t as int
// (0 = cudaSuccess), streams are cudaStream_t as void*.
//
// Each op's kernel takes the op's parameters, same types in the same order, with
// (int device_id, void* stream) in place of the Exec, and returns a status; src/ops calls it
// through ATTN_CUDA_LAUNCH (src/ops/cuda_dispatch.h), which static_asserts exactly that in every
// build: a signature changed on one side only does not compile.
#pragma once

#include <cstddef>
#include <cstdint>

#include "op_args.h"

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


/// See ops::causal_conv1d_metadata. One single-block launch (a block scan over requests).
int causal_conv1d_metadata(int device_id, void* stream, const int32_t* qsl_p,
                           int64_t num_prefills, int64_t num_programs, int32_t* batch_ptr,
                           int32_t* token_chunk_offset_ptr) noexcept;

/// See ops::mla_prefill_metadata. One launch.
int mla_prefill_metadata(int device_id, void* stream, const int32_t* qsl, int64_t num_prefills,
                         const MlaPrefillOut& out) noexcept;

/// See ops::mla_context_chunk_tensors. Two launches: one thread plans the chunks again from the
/// device query_start_loc and the context lengths the host uploaded (a sequential greedy pass,
/// as vLLM's on the CPU) and writes the per-entry and per-boundary arrays; then a grid over
/// max(T, T_local) rows maps each row to its entry by two binary searches.
int mla_context_chunk_tensors(int device_id, void* stream, const int32_t* qsl,
                              const int32_t* context_lens, int64_t num_prefills,
                              const MlaChunkParams& params, const MlaChunkCounts& counts,
                              const MlaChunkTensors& out) noexcept;

/// See ops::flashmla_fixed_tile_schedule. One launch.
int flashmla_fixed_tile_schedule(int device_id, void* stream, int64_t num_decodes,
                                 int32_t end_block_idx, int32_t* tile,
                                 int32_t* num_splits) noexcept;

// ---- the Mamba family (kernels/mamba_metadata.cu, kernels/gdn_metadata.cu) -----------------

/// See ops::mamba_gather_state_indices. One launch.
int mamba_gather_state_indices(int device_id, void* stream, const int32_t* block_table,
                               int64_t bt_stride, int64_t bt_width, const int32_t* seq_lens,
                               int64_t num_reqs, int32_t block_size, int64_t num_cols,
                               int32_t* out, int64_t out_stride) noexcept;

/// See ops::mamba_prefill_metadata. One launch.
int mamba_prefill_metadata(int device_id, void* stream, const int32_t* qsl,
                           const int32_t* seq_lens, int64_t first, int64_t count, int32_t* qsl_p,
                           uint8_t* has_initial) noexcept;

/// See ops::mamba_chunk_metadata. One single-block launch (a block scan of the chunk counts).
int mamba_chunk_metadata(int device_id, void* stream, const int32_t* qsl_p,
                         const int32_t* seq_lens_p, int64_t num_prefills, int32_t chunk_size,
                         int64_t capacity, int32_t* cu_chunk_seqlen, int32_t* seq_idx,
                         int32_t* last_chunk_indices, const int32_t* checkpoint_offsets,
                         int64_t* checkpoint_chunk_idx) noexcept;

/// See ops::mamba_checkpoint_state_indices. One launch.
int mamba_checkpoint_state_indices(int device_id, void* stream, const int32_t* block_table,
                                   int64_t bt_stride, const int64_t* rows, const int64_t* cols,
                                   int64_t n, int32_t* out) noexcept;

/// See ops::copy_pad_i32 and ops::copy_pad_u8. One launch each.
int copy_pad_i32(int device_id, void* stream, const int32_t* src, int64_t src_stride,
                 int64_t rows, int64_t cols, int32_t* dst, int64_t dst_stride, int64_t total_rows,
                 int32_t pad, bool pad_with_last) noexcept;
int copy_pad_u8(int device_id, void* stream, const uint8_t* src, int64_t n, uint8_t* dst,
                int64_t total, uint8_t pad) noexcept;

/// See ops::iota_i32 and ops::query_lens_i32. One launch each.
int iota_i32(int device_id, void* stream, int32_t* out, int64_t n) noexcept;
int query_lens_i32(int device_id, void* stream, const int32_t* qsl, int64_t num_reqs,
                   int32_t offset, int32_t* out) noexcept;

/// See ops::gdn_spec_split. One single-block launch (block scans of the spec/non-spec ranks and
/// token offsets; each request's thread writes its rows and tokens).
int gdn_spec_split(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                   int64_t num_reqs, const int32_t* draft_tokens, const int32_t* block_table,
                   int64_t bt_stride, int64_t bt_width, int64_t num_cols,
                   const int32_t* num_accepted_tokens, int64_t token_capacity,
                   const GdnSplitOut& out) noexcept;

/// See ops::gdn_chunk_metadata. One single-block launch (block scans of the chunk counts and of
/// the non-empty sequences; each sequence's thread writes its offset and its chunk rows).
int gdn_chunk_metadata(int device_id, void* stream, const int32_t* cu_seqlens, int64_t num_seqs,
                       int32_t chunk_size, int32_t* chunk_indices, int64_t* chunk_offsets) noexcept;

/// See ops::gdn_masked_state_gather. One single-block launch (a block scan of the spec ranks).
int gdn_masked_state_gather(int device_id, void* stream, const uint8_t* masks, int64_t num_reqs,
                            const int32_t* block_table, int64_t block_table_stride,
                            int64_t block_table_width, int64_t num_cols, int32_t* spec_state,
                            int32_t* non_spec_state) noexcept;

}  // namespace attn::kernels
