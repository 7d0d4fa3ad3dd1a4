// FLEX_ATTENTION's per-request and per-token arrays, written once (src/ops/launch.h): one row per
// request writes its scalars and persistent copies (leader), its doc ids and its row of the
// inverse block table (physical_to_logical: -1, then the latest logical block of each physical
// one by an atomic max, then the null block's column -1).
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::imax;
using kernels::imin;

template <class P>
void flex_request_arrays_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                            int64_t num_tokens, int32_t block_size, const int32_t* bt,
                            int64_t bt_stride, int64_t width, int64_t num_gpu_blocks,
                            int32_t* num_blocks_per_seq, int32_t* decode_offset, int32_t* doc_ids,
                            int64_t* p2l, int64_t p2l_stride, int32_t* qsl_out,
                            int32_t* seq_lens_out) {
  p.for_each_row(num_reqs, [=] ATTN_HD(int64_t r, kernels::Lanes lanes) {
    const int32_t len = seq_lens[r], q0 = qsl[r], q1 = qsl[r + 1];
    if (lanes.leader()) {
      qsl_out[r] = q0;
      if (r + 1 == num_reqs) qsl_out[num_reqs] = q1;
      seq_lens_out[r] = len;
      num_blocks_per_seq[r] = (len + block_size - 1) / block_size;
      decode_offset[r] = len - (q1 - q0);
    }
    // Bounded by num_tokens (the host's count): device offsets cannot write out of bounds.
    const int64_t begin = imax<int64_t>(q0, 0), end = imin<int64_t>(q1, num_tokens);
    lanes.for_each(end - begin, [&](int64_t k) { doc_ids[begin + k] = static_cast<int32_t>(r); });
    int64_t* row = p2l + r * p2l_stride;
    lanes.for_each(num_gpu_blocks, [&](int64_t k) { row[k] = -1; });
    lanes.sync();
    const int64_t blocks = imin<int64_t>((int64_t{len} + block_size - 1) / block_size, width);
    const int32_t* bt_row = bt + r * bt_stride;
    lanes.for_each(blocks, [&](int64_t j) {
      const int64_t phys = bt_row[j];
      if (phys >= 0 && phys < num_gpu_blocks) kernels::atomic_max_i64(row + phys, j);
    });
    lanes.sync();
    if (num_gpu_blocks > 0 && lanes.leader()) row[0] = -1;
  });
}

}  // namespace

void flex_request_arrays(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                         int64_t num_reqs, int64_t num_tokens, int32_t block_size,
                         const int32_t* bt, int64_t bt_stride, int64_t width,
                         int64_t num_gpu_blocks, int32_t* num_blocks_per_seq,
                         int32_t* decode_offset, int32_t* doc_ids, int64_t* out,
                         int64_t out_stride, int32_t* qsl_out, int32_t* seq_lens_out) {
  if (num_reqs <= 0) return;
  ATTN_LAUNCH(exec, flex_request_arrays_on, qsl, seq_lens, num_reqs, num_tokens, block_size, bt,
              bt_stride, width, num_gpu_blocks, num_blocks_per_seq, decode_offset, doc_ids, out,
              out_stride, qsl_out, seq_lens_out);
}

}  // namespace attn::ops
