// CUDA kernels of the state-space variants of vLLM 0.33 (KIMI_K3_KDA, BAILING_LINEAR_ATTN,
// PLE_SHORT_CONV_ATTN),
// declared as kernels.h declares the others (no CUDA header; see src/ops/state_space_ops.h).
#pragma once

#include <cstdint>

#include "kernels.h"

namespace attn::kernels {

/// See ops::kda_spec_split. One single-block launch (gdn_spec_split's kernel with zero-length
/// non-spec requests left out of the non-spec rows).
int kda_spec_split(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                   int64_t num_reqs, const int32_t* spec_marks, const int32_t* block_table,
                   int64_t bt_stride, int64_t bt_width, int64_t num_cols,
                   const int32_t* num_accepted_tokens, int64_t token_capacity,
                   const GdnSplitOut& out) noexcept;
/// See ops::num_computed_tokens_i32, ops::widen_i32_i64 and ops::mask_padded_rows_i32. One
/// launch each.
int num_computed_tokens_i32(int device_id, void* stream, const int32_t* qsl,
                            const int32_t* seq_lens, int64_t num_reqs, int32_t* out) noexcept;
int widen_i32_i64(int device_id, void* stream, const int32_t* in, int64_t n,
                  int64_t* out) noexcept;
int mask_padded_rows_i32(int device_id, void* stream, const int32_t* src, int64_t src_stride,
                         int64_t rows, int64_t cols, const int32_t* seq_lens, int32_t pad,
                         int32_t* dst, int64_t dst_stride, int64_t total_rows) noexcept;

/// See ops::ple_spec_gather (one single-block launch) and ops::has_initial_states_u8.
int ple_spec_gather(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                    const int32_t* block_table, int64_t bt_stride, const int32_t* accepted,
                    const int32_t* order, int64_t num_spec, int64_t num_non_spec,
                    int64_t num_non_spec_decodes, int32_t* non_spec_qsl_p,
                    const GdnSplitOut& out) noexcept;
int has_initial_states_u8(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                          int64_t rows, int64_t total, uint8_t* out) noexcept;

}  // namespace attn::kernels
