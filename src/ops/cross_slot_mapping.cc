// ops::cross_attention_slot_mapping, written once (src/ops/launch.h): a scan over the encoder
// lengths written this step (requests on their first step), the writer of each request filling
// its slots from where the scan puts it.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void cross_slots_on(P& p, const int32_t* qsl, const int32_t* seq_lens, const int32_t* enc,
                    int64_t num_reqs, const int32_t* block_table, int64_t bt_stride, int64_t width,
                    int32_t block_size, int64_t* out, int64_t total) {
  // A request writes its encoder KV only on its first step (seq_len == query_len).
  auto written = [=] ATTN_HD(int64_t r) -> int64_t {
    return seq_lens[r] - (qsl[r + 1] - qsl[r]) <= 0 ? kernels::imax<int64_t>(enc[r], 0) : 0;
  };
  p.scan(num_reqs, written, [=] ATTN_HD(int64_t r, int64_t end) {
    const int64_t len = written(r), first = end - len;
    const int32_t* row = block_table + r * bt_stride;
    for (int64_t i = 0; i < len && first + i < total; ++i)
      out[first + i] = i / block_size < width
                           ? int64_t{row[i / block_size]} * block_size + i % block_size
                           : -1;
  });
}

}  // namespace

void cross_attention_slot_mapping(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                                  const int32_t* encoder_seq_lens, int64_t num_reqs,
                                  const int32_t* block_table, int64_t bt_stride, int64_t width,
                                  int32_t block_size, int64_t* out, int64_t total) {
  ATTN_LAUNCH(exec, cross_slots_on, qsl, seq_lens, encoder_seq_lens, num_reqs, block_table,
              bt_stride, width, block_size, out, total);
}

}  // namespace attn::ops
