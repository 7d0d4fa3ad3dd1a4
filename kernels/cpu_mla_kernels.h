// CUDA kernels of AMX_MLA's ops (src/ops/cpu_mla_ops.h), declared as kernels.h declares the
// others (no CUDA header). One grid-stride launch each.
#pragma once

#include <cstdint>

#include "kernels.h"

namespace attn::kernels {

int expand_block_table_i32(int device_id, void* stream, const int32_t* block_table,
                           int64_t block_table_stride, int64_t rows, int64_t cols,
                           int32_t block_size, int32_t* out) noexcept;
int expand_block_table_i64(int device_id, void* stream, const int32_t* block_table,
                           int64_t block_table_stride, int64_t rows, int64_t cols,
                           int32_t block_size, int64_t* out) noexcept;
int iota_i64(int device_id, void* stream, int64_t* out, int64_t n) noexcept;
int extend_lens_i64(int device_id, void* stream, const int32_t* query_start_loc, int64_t n,
                    int64_t* lens, int64_t* starts) noexcept;

}  // namespace attn::kernels
