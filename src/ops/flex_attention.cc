// FLEX_ATTENTION's per-request and per-token arrays: host reference and CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void flex_request_lens(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                       int64_t num_reqs, int32_t block_size, int32_t* num_blocks_per_seq,
                       int32_t* decode_offset) {
  if (exec.on_cuda) {
#if ATTN_WITH_CUDA
    detail::check_launch(kernels::flex_request_lens(exec.device_id, exec.stream, qsl, seq_lens,
                                                    num_reqs, block_size, num_blocks_per_seq,
                                                    decode_offset),
                         "flex_request_lens");
    return;
#else
    detail::no_cuda("flex_request_lens");
#endif
  }
  for (int64_t r = 0; r < num_reqs; ++r) {
    num_blocks_per_seq[r] = (seq_lens[r] + block_size - 1) / block_size;
    decode_offset[r] = seq_lens[r] - (qsl[r + 1] - qsl[r]);
  }
}

void flex_doc_ids(const Exec& exec, const int32_t* qsl, int64_t num_reqs, int64_t num_tokens,
                  int32_t* doc_ids) {
  if (exec.on_cuda) {
#if ATTN_WITH_CUDA
    detail::check_launch(
        kernels::flex_doc_ids(exec.device_id, exec.stream, qsl, num_reqs, num_tokens, doc_ids),
        "flex_doc_ids");
    return;
#else
    detail::no_cuda("flex_doc_ids");
#endif
  }
  for (int64_t r = 0; r < num_reqs; ++r)
    std::fill(doc_ids + qsl[r], doc_ids + qsl[r + 1], static_cast<int32_t>(r));
}

void flex_physical_to_logical(const Exec& exec, const int32_t* bt, int64_t num_reqs,
                              int64_t bt_stride, int64_t width, const int32_t* seq_lens,
                              int32_t block_size, int64_t num_gpu_blocks, int64_t* out,
                              int64_t out_stride) {
  if (exec.on_cuda) {
#if ATTN_WITH_CUDA
    detail::check_launch(kernels::flex_physical_to_logical(exec.device_id, exec.stream, bt,
                                                           num_reqs, bt_stride, width, seq_lens,
                                                           block_size, num_gpu_blocks, out,
                                                           out_stride),
                         "flex_physical_to_logical");
    return;
#else
    detail::no_cuda("flex_physical_to_logical");
#endif
  }
  for (int64_t r = 0; r < num_reqs; ++r) {
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
