// The DeepSeek V4 / V4.1 compressor builders' computed arrays (vLLM 0.33's
// models/deepseek_v4/compressor.py and models/deepseek_v41/compressor.py,
// CompressorMetadataBuilder): V4's block table clamped at 0 in place and V4.1's ring slot
// mapping, written once (src/ops/launch.h): the clamp is clamp_block_table's (the same
// block_table.clamp_(min=0) as the V4 sparse MLA builders'), the ring slots one item per token.
// No planner.
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void ring_slot_mapping_on(P& p, const int32_t* token_to_req, const int32_t* block_table,
                          int64_t stride, const int64_t* positions, int64_t num_actual_tokens,
                          int64_t num_tokens, int32_t capacity, int64_t* out) {
  p.for_each(num_tokens, [=] ATTN_HD(int64_t t) {
    const int64_t block = t < num_actual_tokens ? block_table[token_to_req[t] * stride] : 0;
    out[t] = block != 0 ? block * capacity + positions[t] % capacity : -1;
  });
}

}  // namespace

void compressor_clamp_block_table(const Exec& exec, int32_t* block_table, int64_t rows,
                                  int64_t cols, int64_t stride) {
  clamp_block_table(exec, block_table, rows, cols, stride);
}

void compressor_ring_slot_mapping(const Exec& exec, const int32_t* token_to_req,
                                  const int32_t* block_table, int64_t stride,
                                  const int64_t* positions, int64_t num_actual_tokens,
                                  int64_t num_tokens, int32_t capacity, int64_t* out) {
  if (num_tokens <= 0) return;
  ATTN_LAUNCH(exec, ring_slot_mapping_on, token_to_req, block_table, stride, positions,
              num_actual_tokens, num_tokens, capacity, out);
}

}  // namespace attn::ops
