// STEP5_CSA_TAIL_RING's per-token ring rows (vLLM 0.33's _ring_metadata_kernel of
// models/step5/nvidia/csa_tail_ring.py), written once (src/ops/launch.h): one item per token.
// No planner.
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void tail_ring_on(P& p, const int32_t* token_to_req, const int32_t* block_table, int64_t stride,
                  const int64_t* positions, const int32_t* seq_lens,
                  const int32_t* query_start_loc, int64_t num_reqs, int64_t num_actual_tokens,
                  int64_t num_tokens, int32_t capacity, int64_t rows_per_block, int64_t* base,
                  int64_t* slot_mapping) {
  p.for_each(num_tokens, [=] ATTN_HD(int64_t t) {
    const int64_t scheduled = query_start_loc[num_reqs];
    int64_t b = -1, slot = -1;
    if (t < num_actual_tokens && t < scheduled) {
      const int64_t r = token_to_req[t];
      const int64_t block = block_table[r * stride];
      if (block > 0) {
        const int64_t pos = positions[t];
        b = block * rows_per_block;
        if (pos >= static_cast<int64_t>(seq_lens[r]) - capacity) slot = b + pos % capacity;
      }
    }
    base[t] = b;
    slot_mapping[t] = slot;
  });
}

}  // namespace

void step5_tail_ring_metadata(const Exec& exec, const int32_t* token_to_req,
                              const int32_t* block_table, int64_t block_table_stride,
                              const int64_t* positions, const int32_t* seq_lens,
                              const int32_t* query_start_loc, int64_t num_reqs,
                              int64_t num_actual_tokens, int64_t num_tokens, int32_t capacity,
                              int64_t rows_per_block, int64_t* base, int64_t* slot_mapping) {
  if (num_tokens <= 0) return;
  ATTN_LAUNCH(exec, tail_ring_on, token_to_req, block_table, block_table_stride, positions,
              seq_lens, query_start_loc, num_reqs, num_actual_tokens, num_tokens, capacity,
              rows_per_block, base, slot_mapping);
}

}  // namespace attn::ops
