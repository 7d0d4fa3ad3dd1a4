// FlashMLA's fixed tile schedule of vLLM's batch-invariant decode, written once
// (src/ops/launch.h): one for_each over max(8, num_decodes + 1) items, the first 8 writing the
// tile, the first num_decodes + 1 zeroing num_splits.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

constexpr int64_t kTileEntries = 8;

template <class P>
void fixed_tile_schedule_on(P& p, int64_t num_decodes, int32_t end_block_idx, int32_t* tile,
                            int32_t* num_splits) {
  p.for_each(kernels::imax(kTileEntries, num_decodes + 1), [=] ATTN_HD(int64_t i) {
    // [begin_idx, begin_block_idx, end_idx, end_block_idx, begin_n_split_idx, 0, 0, 0]
    if (i < kTileEntries)
      tile[i] = i == 2 ? static_cast<int32_t>(num_decodes - 1) : i == 3 ? end_block_idx : 0;
    if (i <= num_decodes) num_splits[i] = 0;
  });
}

}  // namespace

void flashmla_fixed_tile_schedule(const Exec& exec, int64_t num_decodes, int32_t end_block_idx,
                                  int32_t* tile, int32_t* num_splits) {
  ATTN_LAUNCH(exec, fixed_tile_schedule_on, num_decodes, end_block_idx, tile, num_splits);
}

}  // namespace attn::ops
