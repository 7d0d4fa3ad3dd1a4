#include "backends/flash_attn_cascade.h"

namespace attn::backends {
namespace {
// vLLM computes the cost model with Python's unbounded integers. With every input below 2^31
// (capi checks that) no product here exceeds 2^110, so 128-bit integers give the same answer.
__extension__ typedef __int128 Wide;  // GCC and Clang
Wide cdiv(Wide a, Wide b) { return (a + b - 1) / b; }
}  // namespace

bool flash_attn_use_cascade_attention(const CascadeQuery& q) {
  // Too short a common prefix is not worth it (vLLM's arbitrary 256-token threshold); this is
  // the common case, so it is decided first.
  if (q.common_prefix_len < 256) return false;
  // Variants cascade attention does not support.
  if (q.use_alibi || q.use_sliding_window || q.use_local_attention) return false;
  // Too few queries (vLLM's arbitrary threshold of 8).
  const int64_t num_reqs = q.num_reqs;
  if (num_reqs < 8) return false;
  // Disabled with decode context parallelism.
  if (q.dcp_world_size > 1) return false;

  // 1. Without FlashDecoding, cascade attention saves memory bandwidth: use it.
  const int64_t num_queries_per_kv = q.num_query_heads / q.num_kv_heads;
  bool all_single = true;
  for (int64_t i = 0; i < num_reqs; ++i)
    if (q.query_lens[i] != 1) {
      all_single = false;
      break;
    }
  const bool use_flash_decoding =
      num_queries_per_kv > 1 && !q.use_sliding_window && !q.use_alibi && all_single;
  if (!use_flash_decoding) return true;

  // 2. With FlashDecoding, compare vLLM's rough cost model of the two.
  const Wide num_tokens = num_reqs;
  constexpr Wide kQTile = 128;
  constexpr Wide kKvTile = 128;
  const Wide num_prefix_tiles = cdiv(q.common_prefix_len, kKvTile);
  const Wide cascade_ctas = q.num_query_heads * cdiv(num_tokens, kQTile);
  const Wide cascade_waves = cdiv(cascade_ctas, q.num_sms);
  const Wide cascade_time = cascade_waves * num_prefix_tiles;
  Wide flash_decoding_ctas = Wide{num_reqs} * q.num_kv_heads * cdiv(num_queries_per_kv, kQTile);
  flash_decoding_ctas *= num_prefix_tiles;
  const Wide flash_decoding_time = cdiv(flash_decoding_ctas, q.num_sms);
  return cascade_time < flash_decoding_time;
}

}  // namespace attn::backends
