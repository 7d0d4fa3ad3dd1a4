#include "backends/mamba_checkpoints.h"

#include <algorithm>

#include "core/error.h"

namespace attn::backends {
namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

}  // namespace

bool mamba_checkpoints_enabled(const KvCacheSpec& spec, const BuilderConfig& c) {
  return spec.mamba_cache_mode == kMambaCacheAlign && spec.num_prefill_checkpoint_blocks > 0 &&
         c.hash_block_size > 0 && c.cache_hit_alignment_tokens > 0;
}

bool mamba_checkpoint_drop_eagle_block(const BuilderConfig& c) {
  return c.num_speculative_tokens > 0 && c.use_eagle_block_drop && c.num_hash_lookahead_tokens == 0;
}

bool plan_mamba_checkpoints(const KvCacheSpec& spec, const BuilderConfig& cfg,
                            const CommonMetadata& c, const int32_t* seq_host, const int32_t* rows,
                            int64_t row0, int64_t n, const CheckpointPlanHost& out) {
  const int64_t hash = cfg.hash_block_size, align_tokens = cfg.cache_hit_alignment_tokens;
  const int64_t bs = spec.block_size, alignment = spec.prefill_checkpoint_alignment;
  const int64_t width = c.block_table_tensor->shape[1];
  const bool drop = mamba_checkpoint_drop_eagle_block(cfg);
  bool any = false;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t r = rows ? rows[k] : row0 + k, q = c.query_len(r), seq = seq_host[r];
    const int64_t start = seq - q;
    const int64_t limit = drop ? seq : seq - std::max<int64_t>(1, cfg.num_hash_lookahead_tokens);
    int64_t position = floor_div(limit, align_tokens) * align_tokens;
    if (drop) position -= align_tokens;
    position = std::max<int64_t>(position, 0);
    bool valid = false;
    if (alignment > 0) {
      const int64_t initial_col = floor_div(start - 1, bs);
      const int64_t ckpt_col = (seq + bs - 1) / bs - 2;
      valid = floor_mod(start, hash) == 0 && ckpt_col > initial_col && start + hash <= position &&
              start < position && position < seq && floor_mod(position - start, alignment) == 0;
    }
    out.offsets[k] = valid ? static_cast<int32_t>(position - start) : 0;
    out.query_lens[k] = static_cast<int32_t>(q);
    out.rows[k] = r;
    out.cols[k] = valid ? (seq + bs - 1) / bs - 2 : -1;
    if (valid && out.cols[k] >= width)  // vLLM's block_table[rows, cols] would raise
      invalid("common->block_table_tensor has ", width, " columns but request ", r,
              "'s prefill checkpoint (seq_len ", seq, ", block_size ", bs, ") is in column ",
              out.cols[k]);
    any = any || valid;
  }
  return any;
}

}  // namespace attn::backends
