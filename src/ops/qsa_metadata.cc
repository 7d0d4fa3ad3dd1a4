// The Qwen4-exp QSA side caches' metadata (vLLM 0.33's _build_qsa_metadata_kernel of
// models/qwen4_exp/common/qsa_cache.py, the Triton path build_qsa_metadata runs on CUDA), written
// once (src/ops/launch.h): one item per token, and for the compressed cache a scan of the
// requests' work counts and one item per work item. No planner.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::imax;
using kernels::imin;

template <class P>
void qsa_tokens_on(P& p, QsaTokenArgs a) {
  p.for_each(a.num_tokens, [=] ATTN_HD(int64_t t) {
    const bool mapped = t < a.num_mapped_tokens;
    int64_t r = 0, query_end = 0, seq_len = 0, pos = -1;
    if (mapped) {
      r = a.token_to_req[t];
      const int64_t query_start = a.query_start_loc[r];
      query_end = a.query_start_loc[r + 1];
      seq_len = a.seq_lens[r];
      pos = seq_len - (query_end - query_start) + t - query_start;
    }
    a.logical_positions[t] = pos;
    const int64_t ratio = a.compress_ratio;
    // Triton's integer // and % (C's truncation); the operands are >= 0 on a valid batch.
    a.visible_blocks[t] =
        static_cast<int32_t>(imax<int64_t>(0, imin((pos + 1) / ratio, seq_len / ratio)));
    if (a.slot_mapping == nullptr) return;  // the plain cache: the batch's slot_mapping
    bool valid = false;
    int64_t slot = -1;
    if (a.circular_buffer_size > 0) {
      const int64_t ring = a.circular_buffer_size;
      valid = mapped && pos >= 0 && t + ring >= query_end && a.block_table_cols > 0;
      const int64_t block = valid ? a.block_table[r * a.block_table_stride] : -1;
      valid = valid && block > 0;  // the null block (0) and padding rows own no ring
      slot = block * ring + pos % ring;
    } else {
      const int64_t compressed = imax<int64_t>(pos, 0) / ratio;
      const int64_t logical_block = compressed / a.storage_block_size;
      valid = mapped && pos >= 0 && (pos + 1) % ratio == 0 && logical_block < a.block_table_cols;
      const int64_t block = valid ? a.block_table[r * a.block_table_stride + logical_block] : -1;
      valid = valid && block >= 0;
      if (valid) {
        const int64_t common = a.common_slots_int64
                                   ? static_cast<const int64_t*>(a.common_slot_mapping)[t]
                                   : static_cast<const int32_t*>(a.common_slot_mapping)[t];
        valid = common >= 0;
      }
      slot = block * a.storage_block_size + compressed % a.storage_block_size;
    }
    a.slot_mapping[t] = valid ? slot : -1;
  });
}

template <class P>
void qsa_work_on(P& p, QsaWorkArgs a) {
  const int64_t n = a.num_reqs;
  p.scan(
      n,
      [=] ATTN_HD(int64_t r) -> int64_t {
        const int64_t query_len =
            static_cast<int64_t>(a.query_start_loc[r + 1]) - a.query_start_loc[r];
        const int64_t seq_len = a.seq_lens[r];
        const int64_t groups =
            seq_len / a.compress_ratio - (seq_len - query_len) / a.compress_ratio;
        // a nonempty request has one item even without a completed group (item 0 also commits
        // the open group's raw keys)
        return query_len > 0 ? imax<int64_t>(groups, 1) : 0;
      },
      [=] ATTN_HD(int64_t r, int64_t end) { a.work_ends[r] = end; });
  p.for_each(a.max_num_work, [=] ATTN_HD(int64_t w) {
    const int64_t total = n > 0 ? a.work_ends[n - 1] : 0;
    int32_t request = -1, item = -1;
    if (w < total) {
      // the owner: the first request whose work ends past w (the ends never decrease)
      const int64_t r = kernels::upper_bound(a.work_ends, n, w);
      request = static_cast<int32_t>(r);
      item = static_cast<int32_t>(w - (r == 0 ? 0 : a.work_ends[r - 1]));
    }
    a.k_work_metadata[2 * w] = request;
    a.k_work_metadata[2 * w + 1] = item;
  });
}

}  // namespace

void qsa_token_metadata(const Exec& exec, const QsaTokenArgs& args) {
  if (args.num_tokens <= 0) return;
  ATTN_LAUNCH(exec, qsa_tokens_on, args);
}

void qsa_work_metadata(const Exec& exec, const QsaWorkArgs& args) {
  if (args.max_num_work <= 0) return;
  ATTN_LAUNCH(exec, qsa_work_on, args);
}

}  // namespace attn::ops
