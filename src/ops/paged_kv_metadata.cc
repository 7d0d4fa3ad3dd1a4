// FlashInfer's paged KV indptr / indices / last_page_len: host reference and CUDA dispatch.
#include <algorithm>
#include <cstring>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void paged_kv_metadata(const Exec& exec, const int32_t* seq_lens, int64_t num_reqs,
                       const int32_t* block_table, int64_t bt_stride, int64_t width,
                       int32_t page_size, int32_t* indptr, int32_t* indices, int64_t capacity,
                       int32_t* last_page_len) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, paged_kv_metadata, seq_lens, num_reqs, block_table, bt_stride,
                            width, page_size, indptr, indices, capacity, last_page_len);
  int64_t total = 0;
  indptr[0] = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int32_t len = seq_lens[r];
    const int64_t pages =
        std::clamp<int64_t>((static_cast<int64_t>(len) + page_size - 1) / page_size, 0, width);
    const int64_t copied = std::clamp<int64_t>(capacity - total, 0, pages);
    std::memcpy(indices + total, block_table + r * bt_stride, static_cast<size_t>(copied) * sizeof(int32_t));
    total += pages;
    indptr[r + 1] = static_cast<int32_t>(total);
    const int32_t rem = len % page_size;
    last_page_len[r] = rem == 0 && len != 0 ? page_size : rem;
  }
}

int64_t paged_kv_counts(const int32_t* seq_lens, int64_t num_reqs, int32_t page_size,
                        int32_t* indptr, int32_t* last_page_len) {
  int64_t total = 0;
  indptr[0] = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int32_t len = seq_lens[r];
    total += (len + page_size - 1) / page_size;
    indptr[r + 1] = static_cast<int32_t>(total);
    const int32_t rem = len % page_size;
    last_page_len[r] = rem == 0 && len != 0 ? page_size : rem;
  }
  return total;
}

}  // namespace attn::ops
