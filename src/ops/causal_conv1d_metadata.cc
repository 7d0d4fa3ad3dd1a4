// compute_causal_conv1d_metadata's device buffers (BLOCK_M = 8), written once
// (src/ops/launch.h): one row whose lanes scan the prefills' program counts (cdiv(seqlen, 8))
// with kernels::row_scan, each prefill writing its programs, then pad the rest with PAD_SLOT_ID.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"
#include "row_scan.h"

namespace attn::ops {
namespace {

using kernels::Lanes;
using Sums1 = kernels::Sums<1>;

constexpr int64_t kBlockM = 8;
constexpr int32_t kPadSlotId = -1;

template <class P>
void conv1d_on(P& p, const int32_t* qsl_p, int64_t num_prefills, int64_t num_programs,
               int32_t* batch_ptr, int32_t* offsets) {
  p.for_each_row(1, [=] ATTN_HD(int64_t, Lanes lanes) {
    const Sums1 total = kernels::row_scan<1>(
        lanes, num_prefills,
        [&](int64_t r) {
          // none for a negative length (device offsets that disagree with the host's); a
          // positive one rounds up with a shift, not cdiv's floor division
          const int64_t len = int64_t{qsl_p[r + 1]} - qsl_p[r];
          return Sums1{{len > 0 ? (len + kBlockM - 1) / kBlockM : 0}};
        },
        [&](int64_t r, const Sums1& before, const Sums1& own) {
          const int64_t first = before[0];
          const int64_t n = kernels::imin(own[0], num_programs - first);  // never past the buffers
          for (int64_t k = 0; k < n; ++k) {
            batch_ptr[first + k] = static_cast<int32_t>(r);
            offsets[first + k] = static_cast<int32_t>(k);
          }
        });
    const int64_t used = total[0];
    lanes.for_each(num_programs - used,
                   [&](int64_t j) { batch_ptr[used + j] = offsets[used + j] = kPadSlotId; });
  });
}

}  // namespace

void causal_conv1d_metadata(const Exec& exec, const int32_t* qsl_p, int64_t num_prefills,
                            int64_t num_programs, int32_t* batch_ptr,
                            int32_t* token_chunk_offset_ptr) {
  ATTN_LAUNCH(exec, conv1d_on, qsl_p, num_prefills, num_programs, batch_ptr,
              token_chunk_offset_ptr);
}

}  // namespace attn::ops
