// ops::swa_decode_tables (vLLM 0.33's AiterFlashAttentionMetadataBuilder._build_swa_decode_tables),
// written once (src/ops/launch.h): one row per decode copying its window of the block table; the
// row's leader writes its rebased length. No planner.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::imin;
using kernels::Lanes;

template <class P>
void swa_decode_tables_on(P& p, const int32_t* block_table, int64_t bt_row_stride,
                          int64_t bt_width, const int32_t* seq_lens, int64_t num_decodes,
                          int32_t window, int32_t block_size, int64_t num_window_blocks,
                          int32_t* swa_block_table, int32_t* swa_seq_lens) {
  p.for_each_row(num_decodes, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int64_t len = seq_lens[r];
    const int64_t first = (len - window > 0 ? len - window : 0) / block_size;
    const int32_t* src = block_table + r * bt_row_stride;
    int32_t* dst = swa_block_table + r * num_window_blocks;
    lanes.for_each(num_window_blocks,
                   [&](int64_t j) { dst[j] = src[imin(first + j, bt_width - 1)]; });
    if (lanes.leader()) swa_seq_lens[r] = static_cast<int32_t>(len - first * block_size);
  });
}

}  // namespace

void swa_decode_tables(const Exec& exec, const int32_t* block_table, int64_t bt_row_stride,
                       int64_t bt_width, const int32_t* seq_lens, int64_t num_decodes,
                       int32_t window, int32_t block_size, int64_t num_window_blocks,
                       int32_t* swa_block_table, int32_t* swa_seq_lens) {
  if (num_decodes <= 0) return;
  ATTN_LAUNCH(exec, swa_decode_tables_on, block_table, bt_row_stride, bt_width, seq_lens,
              num_decodes, window, block_size, num_window_blocks, swa_block_table, swa_seq_lens);
}

}  // namespace attn::ops
