// Decode-context-parallel lengths, written once (src/ops/launch.h): vLLM's
// get_dcp_local_seq_lens (every rank or one) and the per-rank context lengths FlashAttention's
// DCP path uses. The formula is kernels::dcp_local_len (kernels/index_math.h).
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void dcp_context_kv_lens_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                            int32_t dcp_size, int32_t dcp_rank, int32_t interleave, int32_t* out) {
  p.for_each(num_reqs, [=] ATTN_HD(int64_t r) {
    const int64_t ctx = int64_t{seq_lens[r]} - (int64_t{qsl[r + 1]} - qsl[r]);
    out[r] = kernels::dcp_local_len(ctx, dcp_size, dcp_rank, interleave);
  });
}

// One rank (dcp_rank >= 0): out[r]; every rank: out[r * dcp_size + k], one item per entry.
template <class P>
void dcp_local_seq_lens_on(P& p, const int32_t* seq_lens, int64_t num_reqs, int32_t dcp_size,
                           int32_t dcp_rank, int32_t interleave, int32_t* out) {
  const int64_t ranks = dcp_rank >= 0 ? 1 : dcp_size;
  p.for_each(num_reqs * ranks, [=] ATTN_HD(int64_t i) {
    const int64_t r = i / ranks;
    const auto rank = static_cast<int32_t>(dcp_rank >= 0 ? dcp_rank : i % ranks);
    out[i] = kernels::dcp_local_len(seq_lens[r], dcp_size, rank, interleave);
  });
}

}  // namespace

void dcp_context_kv_lens(const Exec& exec, const int32_t* query_start_loc,
                         const int32_t* seq_lens, int64_t num_reqs, int32_t dcp_size,
                         int32_t dcp_rank, int32_t interleave, int32_t* out) {
  ATTN_LAUNCH(exec, dcp_context_kv_lens_on, query_start_loc, seq_lens, num_reqs, dcp_size,
              dcp_rank, interleave, out);
}

void dcp_local_seq_lens(const Exec& exec, const int32_t* seq_lens, int64_t num_reqs,
                        int32_t dcp_size, int32_t dcp_rank, int32_t interleave, int32_t* out) {
  ATTN_LAUNCH(exec, dcp_local_seq_lens_on, seq_lens, num_reqs, dcp_size, dcp_rank, interleave,
              out);
}

}  // namespace attn::ops
