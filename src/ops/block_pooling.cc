// ops::block_pool_scale and block_pool_slot_mapping (vLLM 0.33's Whisper causal block-pooling
// builder, WhisperCausalAttentionWithBlockPoolingBuilder.build), written once (src/ops/launch.h).
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void pool_scale_on(P& p, const int32_t* in, int64_t n, int32_t pool, int32_t* out) {
  p.for_each(n, [=] ATTN_HD(int64_t i) { out[i] = in[i] * pool; });
}

template <class P>
void pool_slots_on(P& p, const int64_t* slots, int64_t n, int32_t pool, int64_t* out) {
  p.for_each(n * pool, [=] ATTN_HD(int64_t k) {
    const int64_t v = slots[k / pool] * pool + k % pool;
    out[k] = v < -1 ? -1 : v;
  });
}

}  // namespace

void block_pool_scale(const Exec& exec, const int32_t* in, int64_t n, int32_t pool, int32_t* out) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, pool_scale_on, in, n, pool, out);
}

void block_pool_slot_mapping(const Exec& exec, const int64_t* slot_mapping, int64_t n,
                             int32_t pool, int64_t* out) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, pool_slots_on, slot_mapping, n, pool, out);
}

}  // namespace attn::ops
