// The sparse MLA family's computed arrays (vLLM 0.33's FlashMLASparseMetadataBuilder
// ._build_fp8_separate_prefill_decode): the per-token prefill request ids and the chunk-relative
// prefill workspace starts, written once (src/ops/launch.h).
//
// Planner: split_prefill_chunks' greedy pass (the workspace starts restart at each chunk) is a
// sequential scan, run by p.single on the device from the lengths the builder gives (its
// seq_lens_cpu_upper_bound rows, which the builder uploads itself, or the device seq_lens): the
// chunks are planned where the arrays are written, so a captured graph replays the planning
// with the replay's lengths. The request ids are a row per prefill writing its query's tokens,
// and one more row writing -1 to the tokens outside every prefill (the decodes', the padding).
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::iclamp;
using kernels::imax;
using kernels::imin;
using kernels::Lanes;

template <class P>
void fp8_prefill_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t num_decodes,
                    int64_t num_prefills, int64_t num_tokens, int64_t workspace_size,
                    int32_t* request_ids, int32_t* workspace_starts) {
  const int32_t* pq = qsl + num_decodes;
  const int32_t* lens = seq_lens + num_decodes;
  p.single([=] ATTN_HD() {
    int64_t in_chunk = 0;
    for (int64_t k = 0; k < num_prefills; ++k) {
      if (in_chunk + lens[k] > workspace_size) in_chunk = 0;
      workspace_starts[k] = static_cast<int32_t>(in_chunk);
      in_chunk += lens[k];
    }
  });
  // Rows [0, num_prefills): prefill k's tokens [pq[k], pq[k + 1]) (clamped to [0, num_tokens));
  // row num_prefills: the tokens before pq[0] and from pq[num_prefills] on.
  p.for_each_row(num_prefills + 1, [=] ATTN_HD(int64_t k, Lanes lanes) {
    if (k < num_prefills) {
      const int64_t begin = imax<int64_t>(pq[k], 0), end = imin<int64_t>(pq[k + 1], num_tokens);
      lanes.for_each(end - begin,
                     [&](int64_t j) { request_ids[begin + j] = static_cast<int32_t>(k); });
    } else {
      const int64_t head = iclamp<int64_t>(pq[0], 0, num_tokens);
      const int64_t tail = imax(iclamp<int64_t>(pq[num_prefills], 0, num_tokens), head);
      lanes.for_each(head, [&](int64_t j) { request_ids[j] = -1; });
      lanes.for_each(num_tokens - tail, [&](int64_t j) { request_ids[tail + j] = -1; });
    }
  });
}

}  // namespace

void sparse_mla_fp8_prefill_metadata(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                                     int64_t num_decodes, int64_t num_prefills,
                                     int64_t num_tokens, int64_t workspace_size,
                                     int32_t* request_ids, int32_t* workspace_starts) {
  if (num_prefills <= 0) return;
  ATTN_LAUNCH(exec, fp8_prefill_on, qsl, seq_lens, num_decodes, num_prefills, num_tokens,
              workspace_size, request_ids, workspace_starts);
}

}  // namespace attn::ops
