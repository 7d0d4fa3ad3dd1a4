// Ops of vLLM 0.33's AMX_MLA builder (vllm/v1/attention/backends/mla/amx_mla.py): the flat
// per-(request, position) KV rows its decode and extend kernels read, and the int64 copies and
// ranges it adds to the MLA base's decode and prefill parts, each written once for the host and
// the device (src/ops/cpu_mla_ops.cc).
#pragma once

#include <cstdint>

#include "ops/batch_ops.h"

namespace attn::ops {

/// vLLM's _expand_block_table: out[r][j * block_size + o] = block_table[r][j] * block_size + o
/// for r < rows, j < cols, o < block_size; `out` is (rows, cols * block_size), contiguous.
void expand_block_table_i32(const Exec& exec, const int32_t* block_table,
                            int64_t block_table_stride, int64_t rows, int64_t cols,
                            int32_t block_size, int32_t* out);
/// The same widened to int64 (AMX_MLA's prefill req_to_token, `.to(torch.int64)`).
void expand_block_table_i64(const Exec& exec, const int32_t* block_table,
                            int64_t block_table_stride, int64_t rows, int64_t cols,
                            int32_t block_size, int64_t* out);

/// out[i] = i for i < n, int64 (torch.arange(n, dtype=torch.int64)).
void iota_i64(const Exec& exec, int64_t* out, int64_t n);

/// From a query_start_loc of n + 1 entries: lens[i] = qsl[i + 1] - qsl[i] and starts[i] =
/// qsl[i] for i < n, int64 (AMX_MLA's extend_seq_lens and extend_start_loc).
void extend_lens_i64(const Exec& exec, const int32_t* query_start_loc, int64_t n, int64_t* lens,
                     int64_t* starts);

}  // namespace attn::ops
