// MLA's prefill query tensors (vLLM's MLACommonMetadataBuilder.build, the `num_prefills > 0`
// branch), written once (src/ops/launch.h): the rebased query_start_loc and the query lengths,
// one item per entry. The chunked context is src/ops/mla_context_chunks.cc.
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void mla_prefill_on(P& p, const int32_t* qsl, int64_t num_prefills, int32_t* qsl_out,
                    int32_t* query_lens) {
  p.for_each(num_prefills + 1, [=] ATTN_HD(int64_t i) {
    if (qsl_out != nullptr) qsl_out[i] = qsl[i] - qsl[0];
    if (query_lens != nullptr && i < num_prefills) query_lens[i] = qsl[i + 1] - qsl[i];
  });
}

}  // namespace

void mla_prefill_metadata(const Exec& exec, const int32_t* qsl, int64_t num_prefills,
                          const MlaPrefillOut& out) {
  if (num_prefills <= 0) return;
  ATTN_LAUNCH(exec, mla_prefill_on, qsl, num_prefills, out.query_start_loc, out.query_seq_lens);
}

}  // namespace attn::ops
