// AMX_MLA's ops: host reference and CUDA dispatch (kernels/cpu_mla.cu).
#include "ops/cpu_mla_ops.h"

#include "cpu_mla_kernels.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

namespace {

// vLLM 0.33's _expand_block_table: table * block_size + arange in the table's int32, then (the
// prefills') .to(torch.int64). torch's int32 arithmetic wraps; so does this one, through
// uint32 (no signed overflow on any block id, INT32_MAX and INT32_MIN included).
template <class T>
void expand_host(const int32_t* bt, int64_t stride, int64_t rows, int64_t cols, int32_t bs,
                 T* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      for (int32_t o = 0; o < bs; ++o)
        out[(r * cols + j) * bs + o] = static_cast<T>(static_cast<int32_t>(
            static_cast<uint32_t>(bt[r * stride + j]) * static_cast<uint32_t>(bs) +
            static_cast<uint32_t>(o)));
}

}  // namespace

void expand_block_table_i32(const Exec& exec, const int32_t* bt, int64_t stride, int64_t rows,
                            int64_t cols, int32_t block_size, int32_t* out) {
  if (rows <= 0 || cols <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, expand_block_table_i32, bt, stride, rows, cols, block_size, out);
  expand_host(bt, stride, rows, cols, block_size, out);
}

void expand_block_table_i64(const Exec& exec, const int32_t* bt, int64_t stride, int64_t rows,
                            int64_t cols, int32_t block_size, int64_t* out) {
  if (rows <= 0 || cols <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, expand_block_table_i64, bt, stride, rows, cols, block_size, out);
  expand_host(bt, stride, rows, cols, block_size, out);
}

void iota_i64(const Exec& exec, int64_t* out, int64_t n) {
  if (n <= 0) return;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, iota_i64, out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = i;
}

void extend_lens_i64(const Exec& exec, const int32_t* qsl, int64_t n, int64_t* lens,
                     int64_t* starts) {
  if (n <= 0) return;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, extend_lens_i64, qsl, n, lens, starts);
  for (int64_t i = 0; i < n; ++i) {
    lens[i] = static_cast<int64_t>(qsl[i + 1]) - qsl[i];
    starts[i] = qsl[i];
  }
}

}  // namespace attn::ops
