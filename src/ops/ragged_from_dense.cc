// DeepSeek V4 / V4.1 on ROCm: dense index rows to ragged ones (vLLM 0.33's
// build_ragged_indices_from_dense), written once (src/ops/launch.h): a row per index row counts
// the entries it keeps (the lanes' sum) into indptr[r + 1], a scan turns the counts into indptr
// in place, and a row per index row writes its kept entries in order (the lanes' exclusive sum
// of the keep flags, tile by tile). No planner.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::iclamp;
using kernels::Lanes;

template <class P>
void ragged_from_dense_on(P& p, const int32_t* indices, int64_t rows, int64_t width,
                          int64_t row_stride, const int32_t* lengths, int32_t* indptr,
                          int32_t* out) {
  const int64_t w = width > 0 ? width : 0;
  // The entries row r reads: min(max(lengths[r], 0), width).
  auto kept_width = [=] ATTN_HD(int64_t r) -> int64_t {
    return iclamp<int64_t>(lengths[r], 0, w);
  };
  p.for_each_row(rows, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int32_t* row = indices + r * row_stride;
    // Counted in 32 bits: indptr keeps the low 32 bits of the sum either way, and a 32-bit
    // count vectorizes twice as wide on the host (4 entries per compare and subtract; the
    // 64-bit count cost DEEPSEEK_SPARSE_SWA_ROCM_AITER's decode rows 8% of a build).
    uint32_t mine = 0;
    lanes.for_each(kept_width(r), [&](int64_t j) { mine += row[j] >= 0 ? 1u : 0u; });
    int64_t total = 0;
    lanes.exclusive_sum(mine, &total);
    if (lanes.leader()) indptr[r + 1] = static_cast<int32_t>(total);
  });
  // In place: entry i is read (value) before it is written (write), and by no other item.
  p.scan(
      rows + 1, [=] ATTN_HD(int64_t i) -> int64_t { return i == 0 ? 0 : indptr[i]; },
      [=] ATTN_HD(int64_t i, int64_t sum) { indptr[i] = static_cast<int32_t>(sum); });
  p.for_each_row(rows, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int32_t* row = indices + r * row_stride;
    const int64_t n = kept_width(r);
    // indptr is int32 (wrapping past 2^31, as the host's cast): read back as unsigned, it is the
    // exact start for every total below 2^32 entries
    int64_t written = static_cast<uint32_t>(indptr[r]);
    for (int64_t base = 0; base < n; base += lanes.count()) {
      const int64_t j = base + lanes.lane();
      const int32_t v = j < n ? row[j] : -1;
      int64_t tile = 0;
      const int64_t rank = lanes.exclusive_sum(v >= 0 ? 1 : 0, &tile);
      if (v >= 0) out[written + rank] = v;
      written += tile;
    }
  });
}

}  // namespace

void ragged_from_dense(const Exec& exec, const int32_t* indices, int64_t rows, int64_t width,
                       int64_t row_stride, const int32_t* lengths, int32_t* indptr, int32_t* out) {
  if (rows < 0) return;
  ATTN_LAUNCH(exec, ragged_from_dense_on, indices, rows, width, row_stride, lengths, indptr, out);
}

}  // namespace attn::ops
