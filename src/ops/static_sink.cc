// ops::static_sink_seq_lens, static_sink_prefix and static_sink_block_table (vLLM 0.33's
// StaticSinkAttentionBuilder), written once (src/ops/launch.h).
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::Lanes;

template <class P>
void sink_seq_lens_on(P& p, const int32_t* seq_lens, int64_t n, int32_t sink_len, int32_t* out) {
  p.for_each(n, [=] ATTN_HD(int64_t i) { out[i] = seq_lens[i] == 0 ? 0 : seq_lens[i] + sink_len; });
}

template <class P>
void sink_prefix_on(P& p, int32_t* table, int64_t rows, int64_t stride, int64_t num_sink_blocks) {
  p.for_each_row(rows, [=] ATTN_HD(int64_t r, Lanes lanes) {
    int32_t* row = table + r * stride;
    lanes.for_each(num_sink_blocks, [&](int64_t j) { row[j] = static_cast<int32_t>(j + 1); });
  });
}

template <class P>
void sink_block_table_on(P& p, const int32_t* bt, int64_t bt_stride, int64_t bt_col_stride,
                         int64_t rows, int64_t cols, int64_t num_sink_blocks, int32_t* out,
                         int64_t out_stride) {
  p.for_each_row(rows, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int32_t* from = bt + r * bt_stride;
    int32_t* to = out + r * out_stride + num_sink_blocks;
    lanes.for_each(cols, [&](int64_t j) { to[j] = from[j * bt_col_stride]; });
  });
}

}  // namespace

void static_sink_seq_lens(const Exec& exec, const int32_t* seq_lens, int64_t n, int32_t sink_len,
                          int32_t* out) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, sink_seq_lens_on, seq_lens, n, sink_len, out);
}

void static_sink_prefix(const Exec& exec, int32_t* table, int64_t rows, int64_t stride,
                        int64_t num_sink_blocks) {
  if (rows <= 0 || num_sink_blocks <= 0) return;
  ATTN_LAUNCH(exec, sink_prefix_on, table, rows, stride, num_sink_blocks);
}

void static_sink_block_table(const Exec& exec, const int32_t* block_table, int64_t bt_stride,
                             int64_t bt_col_stride, int64_t rows, int64_t cols,
                             int64_t num_sink_blocks, int32_t* out, int64_t out_stride) {
  if (rows <= 0 || cols <= 0) return;
  ATTN_LAUNCH(exec, sink_block_table_on, block_table, bt_stride, bt_col_stride, rows, cols,
              num_sink_blocks, out, out_stride);
}

}  // namespace attn::ops
