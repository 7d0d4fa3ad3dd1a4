// MLA's prefill query tensors (vLLM's MLACommonMetadataBuilder.build, the `num_prefills > 0`
// branch): the rebased query_start_loc and the query lengths; host reference and CUDA dispatch.
// The chunked context is src/ops/mla_context_chunks.cc.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void mla_prefill_metadata(const Exec& exec, const int32_t* qsl, int64_t num_prefills,
                          const MlaPrefillOut& out) {
  if (num_prefills <= 0) return;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, mla_prefill_metadata, qsl, num_prefills, out);
  for (int64_t i = 0; i <= num_prefills; ++i) {
    if (out.query_start_loc) out.query_start_loc[i] = qsl[i] - qsl[0];
    if (out.query_seq_lens && i < num_prefills) out.query_seq_lens[i] = qsl[i + 1] - qsl[i];
  }
}

}  // namespace attn::ops
