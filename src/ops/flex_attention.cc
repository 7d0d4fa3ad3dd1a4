// FLEX_ATTENTION's per-request and per-token arrays: host reference and CUDA dispatch (one fused
// kernel).
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void flex_request_arrays(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                         int64_t num_reqs, int64_t num_tokens, int32_t block_size,
                         const int32_t* bt, int64_t bt_stride, int64_t width,
                         int64_t num_gpu_blocks, int32_t* num_blocks_per_seq,
                         int32_t* decode_offset, int32_t* doc_ids, int64_t* out,
                         int64_t out_stride, int32_t* qsl_out, int32_t* seq_lens_out) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, flex_request_arrays, qsl, seq_lens, num_reqs, num_tokens,
                            block_size, bt, bt_stride, width, num_gpu_blocks, num_blocks_per_seq,
                            decode_offset, doc_ids, out, out_stride, qsl_out, seq_lens_out);
  for (int64_t r = 0; r < num_reqs; ++r) {
    qsl_out[r] = qsl[r];
    if (r + 1 == num_reqs) qsl_out[num_reqs] = qsl[num_reqs];
    seq_lens_out[r] = seq_lens[r];
    num_blocks_per_seq[r] = (seq_lens[r] + block_size - 1) / block_size;
    decode_offset[r] = seq_lens[r] - (qsl[r + 1] - qsl[r]);
    const int64_t begin = std::max<int64_t>(qsl[r], 0);
    const int64_t end = std::min<int64_t>(qsl[r + 1], num_tokens);
    if (begin < end) std::fill(doc_ids + begin, doc_ids + end, static_cast<int32_t>(r));
    int64_t* row = out + r * out_stride;
    std::fill(row, row + num_gpu_blocks, int64_t{-1});
    const int64_t blocks = std::min<int64_t>((seq_lens[r] + block_size - 1) / block_size, width);
    for (int64_t j = 0; j < blocks; ++j) {
      const int64_t phys = bt[r * bt_stride + j];
      if (phys >= 0 && phys < num_gpu_blocks) row[phys] = std::max(row[phys], j);
    }
    if (num_gpu_blocks > 0) row[0] = -1;
  }
}

}  // namespace attn::ops
