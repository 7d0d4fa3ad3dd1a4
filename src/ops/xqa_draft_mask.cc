// FlashInfer XQA's packed draft mask (vLLM 0.33's _make_xqa_draft_block_mask and
// _make_xqa_ragged_draft_block_mask), written once (src/ops/launch.h): one row per request, its
// lanes over its query rows, each word in closed form.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

// Word w of a row whose first `n` bits are set (the kv < n of that row): the bits of
// [32w, 32w + 32) below n, in closed form (a loop over the 32 bits was 97% of a FLASHINFER
// spec-decode build: docs/performance.md, "Issue 31: the host-path outliers").
ATTN_HD_INLINE uint32_t word_below(int64_t n, int64_t w) {
  const int64_t bits = kernels::iclamp<int64_t>(n - w * 32, 0, 32);
  return bits == 32 ? ~uint32_t{0} : (uint32_t{1} << bits) - 1u;
}

template <class P>
void xqa_draft_mask_on(P& p, const int32_t* qsl, int64_t num_reqs, int32_t num_packed,
                       bool causal, uint32_t* out) {
  // A row per request, its lanes over its query rows, each writing its num_packed words.
  p.for_each_row(num_reqs, [=] ATTN_HD(int64_t r, kernels::Lanes lanes) {
    const int64_t start = int64_t{qsl[r]} - qsl[0];
    const int64_t len = int64_t{qsl[r + 1]} - qsl[r];
    lanes.for_each(len, [&](int64_t q) {
      const int64_t n = causal ? kernels::imin(len, q + 1) : len;  // kv < len && (kv <= q)
      uint32_t* row = out + (start + q) * num_packed;
      for (int64_t w = 0; w < num_packed; ++w) row[w] = word_below(n, w);
    });
  });
}

}  // namespace

void xqa_draft_mask(const Exec& exec, const int32_t* query_start_loc, int64_t num_reqs,
                    int32_t num_packed, bool causal, uint32_t* out) {
  if (num_reqs <= 0 || num_packed <= 0) return;
  ATTN_LAUNCH(exec, xqa_draft_mask_on, query_start_loc, num_reqs, num_packed, causal, out);
}

}  // namespace attn::ops
