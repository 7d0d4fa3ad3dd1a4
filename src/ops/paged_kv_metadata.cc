// FlashInfer's paged KV indptr / indices / last_page_len, written once (src/ops/launch.h): a scan
// of the page counts (indptr, last_page_len), then one row per request copying its block-table
// row into the indices.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::iclamp;
using kernels::imin;
using kernels::Lanes;

// Pages of a length, rounded up: (len + page - 1) / page in 64 bits (kernels::cdiv's floor
// division costs more per request here; a negative device length gives 0 or less, and both
// callers clamp or were validated non-negative).
ATTN_HD_INLINE int64_t pages_of(int32_t len, int32_t page) {
  return (int64_t{len} + page - 1) / page;
}

// last_page_len of a length: len % page, or page when that is 0 and len > 0.
ATTN_HD_INLINE int32_t last_page_len_of(int32_t len, int32_t page) {
  const int32_t rem = len % page;
  return rem == 0 && len != 0 ? page : rem;
}

template <class P>
void paged_kv_on(P& p, const int32_t* seq_lens, int64_t num_reqs, const int32_t* block_table,
                 int64_t bt_stride, int64_t width, int32_t page, int32_t* indptr,
                 int32_t* indices, int64_t capacity, int32_t* last_page_len) {
  // A request's pages, clamped to [0, width]: device lengths that disagree with the validated
  // host mirror stay inside the table.
  auto pages = [=] ATTN_HD(int64_t r) -> int64_t {
    return iclamp<int64_t>(pages_of(seq_lens[r], page), 0, width);
  };
  // indptr[i] = pages of requests [0, i); the row of request i - 1 writes its last_page_len.
  p.scan(
      num_reqs + 1, [=] ATTN_HD(int64_t i) -> int64_t { return i == 0 ? 0 : pages(i - 1); },
      [=] ATTN_HD(int64_t i, int64_t sum) {
        indptr[i] = static_cast<int32_t>(sum);
        if (i > 0) last_page_len[i - 1] = last_page_len_of(seq_lens[i - 1], page);
      });
  p.for_each_row(num_reqs, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int64_t start = indptr[r];
    if (start < 0 || start >= capacity) return;
    // the request's pages as the scan counted them (no second division)
    const int64_t n = imin(int64_t{indptr[r + 1]} - start, capacity - start);
    const int32_t* row = block_table + r * bt_stride;
    int32_t* dst = indices + start;
    lanes.copy(dst, row, n);  // one memcpy on the host
  });
}

}  // namespace

void paged_kv_metadata(const Exec& exec, const int32_t* seq_lens, int64_t num_reqs,
                       const int32_t* block_table, int64_t bt_stride, int64_t width,
                       int32_t page_size, int32_t* indptr, int32_t* indices, int64_t capacity,
                       int32_t* last_page_len) {
  ATTN_LAUNCH(exec, paged_kv_on, seq_lens, num_reqs, block_table, bt_stride, width, page_size,
              indptr, indices, capacity, last_page_len);
}

int64_t paged_kv_counts(const int32_t* seq_lens, int64_t num_reqs, int32_t page_size,
                        int32_t* indptr, int32_t* last_page_len) {
  int64_t total = 0;
  indptr[0] = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    total += pages_of(seq_lens[r], page_size);
    indptr[r + 1] = static_cast<int32_t>(total);
    last_page_len[r] = last_page_len_of(seq_lens[r], page_size);
  }
  return total;
}

}  // namespace attn::ops
