// block_table.py's compute_slot_mapping, written once (src/ops/launch.h): one row per request
// walking its tokens, and one more row padding [num_tokens, max_num_tokens).
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::imax;
using kernels::imin;
using kernels::Lanes;

template <class P>
void slot_mapping_on(P& p, const int32_t* qsl, int64_t num_reqs, const int64_t* positions,
                     int64_t num_tokens, const int32_t* block_table, int64_t bt_stride,
                     int64_t bt_width, int32_t block_size, int32_t dcp_size, int32_t dcp_rank,
                     int32_t interleave, int64_t* slots, int64_t max_num_tokens) {
  const int64_t virtual_block = int64_t{block_size} * dcp_size;
  p.for_each_row(num_reqs + 1, [=] ATTN_HD(int64_t r, Lanes lanes) {
    if (r == num_reqs) {  // the padding row
      lanes.for_each(max_num_tokens - num_tokens, [&](int64_t k) { slots[num_tokens + k] = -1; });
      return;
    }
    const int32_t* row = block_table + r * bt_stride;
    // Bounded by num_tokens (the host's count): device offsets cannot index out of bounds.
    const int64_t begin = imax<int64_t>(qsl[r], 0), end = imin<int64_t>(qsl[r + 1], num_tokens);
    lanes.for_each(end - begin, [&](int64_t k) {
      const int64_t t = begin + k, pos = positions[t];
      const int64_t block_index = pos / virtual_block;
      if (pos < 0 || block_index >= bt_width) {
        slots[t] = -1;  // PAD_SLOT_ID: never read outside the table
        return;
      }
      const int64_t offset = pos - block_index * virtual_block;
      const bool local = (offset / interleave) % dcp_size == dcp_rank;
      const int64_t local_offset =
          offset / (int64_t{dcp_size} * interleave) * interleave + offset % interleave;
      slots[t] = local ? int64_t{row[block_index]} * block_size + local_offset : -1;
    });
  });
}

}  // namespace

void compute_slot_mapping(const Exec& exec, const int32_t* qsl, int64_t num_reqs,
                          const int64_t* positions, int64_t num_tokens,
                          const int32_t* block_table, int64_t bt_stride, int64_t bt_width,
                          int32_t block_size, int32_t dcp_size, int32_t dcp_rank,
                          int32_t interleave, int64_t* slot_mapping, int64_t max_num_tokens) {
  ATTN_LAUNCH(exec, slot_mapping_on, qsl, num_reqs, positions, num_tokens, block_table, bt_stride,
              bt_width, block_size, dcp_size, dcp_rank, interleave, slot_mapping, max_num_tokens);
}

}  // namespace attn::ops
