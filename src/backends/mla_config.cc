// What an MLA builder derives from its spec and config (mla_config.h).
#include "backends/mla_config.h"

#include <algorithm>
#include <numeric>

namespace attn::backends {
namespace {

int64_t align_up(int64_t size, int64_t a) { return (std::max(size, a) + a - 1) / a * a; }

}  // namespace

int64_t mla_chunk_alignment(const KvCacheSpec& spec, const BuilderConfig& c) {
  int64_t a = spec.block_size;
  if (c.decode_context_parallel_size > 1)
    a = std::lcm(a, static_cast<int64_t>(c.decode_context_parallel_size) *
                        std::max(1, c.cp_kv_cache_interleave_size));
  return a;
}

int64_t mla_chunked_prefill_workspace_size(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (c.mla_chunked_prefill_workspace_size > 0) return c.mla_chunked_prefill_workspace_size;
  const int64_t seqs_blocks = static_cast<int64_t>(c.max_num_seqs) * spec.block_size;
  const int64_t size = std::min<int64_t>(
      std::max<int64_t>(8 * static_cast<int64_t>(c.max_model_len), 4 * seqs_blocks), 64 * 1024);
  return align_up(size, mla_chunk_alignment(spec, c));
}

int64_t sparse_mla_chunked_prefill_workspace_size(const KvCacheSpec& spec,
                                                  const BuilderConfig& c) {
  if (c.mla_chunked_prefill_workspace_size > 0) return c.mla_chunked_prefill_workspace_size;
  const int64_t seqs_blocks = static_cast<int64_t>(c.max_num_seqs) * spec.block_size;
  int64_t size = std::min<int64_t>(
      {std::max<int64_t>(8 * static_cast<int64_t>(c.max_model_len), 4 * seqs_blocks), 64 * 1024,
       static_cast<int64_t>(c.max_num_seqs) * sparse_index_topk(spec)});
  size = std::max<int64_t>(size, spec.block_size);
  if (c.decode_context_parallel_size <= 1) return size;
  return align_up(size, mla_chunk_alignment(spec, c));
}

ops::MlaChunkParams mla_chunk_capacities(const KvCacheSpec& spec, const BuilderConfig& c,
                                         int64_t workspace) {
  ops::MlaChunkParams p;
  p.workspace_size = workspace;
  p.block_size = spec.block_size;
  p.dcp_size = c.decode_context_parallel_size;
  p.interleave = std::max(1, c.cp_kv_cache_interleave_size);
  const int64_t a = mla_chunk_alignment(spec, c);
  const int64_t max_chunk = std::max<int64_t>(a, p.workspace_size / a * a);
  // every request may be a prefill (zero-length rows too, so not bounded by the token budget)
  const int64_t prefills = std::max<int64_t>(1, c.max_num_seqs);
  const int64_t context = std::max<int64_t>(1, c.max_model_len);
  p.max_entries = prefills * (2 + context / max_chunk);
  p.max_chunks = p.max_entries;
  p.max_tokens = prefills * context;
  const int64_t vb = static_cast<int64_t>(p.dcp_size) * p.interleave;
  p.max_local_tokens = p.dcp_size > 1 ? prefills * ((context + vb - 1) / vb * p.interleave) : 0;
  return p;
}

}  // namespace attn::backends
