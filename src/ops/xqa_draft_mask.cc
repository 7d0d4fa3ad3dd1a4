// FlashInfer XQA's packed draft mask (vLLM 0.33's _make_xqa_draft_block_mask and
// _make_xqa_ragged_draft_block_mask), written once (src/ops/launch.h): one row per request, its
// lanes over the words of its query rows.
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void xqa_draft_mask_on(P& p, const int32_t* qsl, int64_t num_reqs, int32_t num_packed,
                       bool causal, uint32_t* out) {
  p.for_each_row(num_reqs, [=] ATTN_HD(int64_t r, kernels::Lanes lanes) {
    const int64_t start = int64_t{qsl[r]} - qsl[0];
    const int64_t len = int64_t{qsl[r + 1]} - qsl[r];
    uint32_t* rows = out + start * num_packed;
    lanes.for_each(len * num_packed, [&](int64_t k) {
      const int64_t q = k / num_packed, w = k % num_packed;
      uint32_t word = 0;
      for (int32_t j = 0; j < 32; ++j) {
        const int64_t kv = w * 32 + j;
        if (kv < len && (!causal || kv <= q)) word |= uint32_t{1} << j;
      }
      rows[k] = word;
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
