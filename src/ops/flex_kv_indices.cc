// FLEX_ATTENTION's direct block mask (kv_indices, kv_num_blocks), written once
// (src/ops/launch.h): one row per query group; the group's candidate block ids (the rule below)
// deduplicated in order of first appearance by the executor's ordered-unique primitive
// (kernels/ordered_unique.h: stamps on the host, a hash table per group on a device), the rest
// of the row -1.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"
#include "ordered_unique.h"

namespace attn::ops {
namespace {

// The block id token t contributes at column j, or 0 for none (see ops::flex_kv_indices).
ATTN_HD_INLINE int32_t candidate(const FlexBlockMaskIn& in, int64_t t, int64_t j) {
  if (t >= in.num_tokens) return 0;  // vLLM's pad_to_multiple rows
  const int32_t d = in.doc_ids[t];
  if (j >= in.num_blocks_per_seq[d]) return 0;  // past the request's own length
  if (in.causal != 0 || in.sliding_window > 0) {
    const int64_t pos = t - in.query_start_loc[d] + in.decode_offset[d];
    if (in.causal != 0 && j * in.block_size > pos) return 0;
    if (in.sliding_window > 0 &&
        j < kernels::imax<int64_t>(pos - (in.sliding_window - 1), 0) / in.block_size)
      return 0;
  }
  const int32_t v = in.block_table[int64_t{d} * in.block_table_stride + j];
  return v > 0 && v < in.num_gpu_blocks ? v : 0;
}

// Row i of group g reads no candidate past this column: past the request's own blocks, and
// (causal) past the block of the token's position (candidate() is 0 there: the host's stamps
// stop early; a device's hash reads every column).
ATTN_HD_INLINE int64_t candidate_cols(const FlexBlockMaskIn& in, int64_t t) {
  if (t >= in.num_tokens) return 0;
  const int32_t d = in.doc_ids[t];
  int64_t cols = in.num_blocks_per_seq[d];
  if (in.causal != 0) {
    const int64_t pos = t - in.query_start_loc[d] + in.decode_offset[d];
    cols = kernels::imin<int64_t>(cols, pos < 0 ? 0 : pos / in.block_size + 1);
  }
  return cols;
}

template <class P>
void flex_kv_indices_on(P& p, FlexBlockMaskIn in, int64_t num_groups, int32_t* kv_indices,
                        int64_t out_stride, int32_t* kv_num_blocks, void* scratch,
                        int64_t scratch_per_group) {
  const int64_t per_group = int64_t{in.q_block} * in.pages;
  p.for_each_row(num_groups, [=] ATTN_HD(int64_t g, kernels::Lanes lanes) {
    int32_t* row = kv_indices + g * out_stride;
    auto of = [&](int64_t i, int64_t j) { return candidate(in, g * in.q_block + i, j); };
    // (the captures are named before the constexpr-if: nvcc's extended lambdas need it)
    auto* table = static_cast<uint64_t*>(scratch) + g * scratch_per_group;
    auto* stamps = static_cast<int32_t*>(scratch);
    const int64_t cap = scratch_per_group;
    int64_t count;
    if constexpr (P::kOnDevice)
      count = kernels::ordered_unique_hash(lanes, in.q_block, in.pages, of, row, table, cap);
    else
      count = kernels::ordered_unique_stamps(
          in.q_block, in.pages,
          [&](int64_t i) { return candidate_cols(in, g * in.q_block + i); }, of, row, stamps);
    lanes.for_each(per_group - count, [&](int64_t k) { row[count + k] = -1; });
    if (lanes.leader()) kv_num_blocks[g] = static_cast<int32_t>(count);
  });
}

}  // namespace

void flex_kv_indices(const Exec& exec, const FlexBlockMaskIn& in, int64_t num_groups,
                     int32_t* kv_indices, int64_t out_stride, int32_t* kv_num_blocks,
                     void* scratch, int64_t scratch_per_group) {
  if (num_groups <= 0) return;
  ATTN_LAUNCH(exec, flex_kv_indices_on, in, num_groups, kv_indices, out_stride, kv_num_blocks,
              scratch, scratch_per_group);
}

}  // namespace attn::ops
