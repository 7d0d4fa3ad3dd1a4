// The sparse MLA family's computed arrays (vLLM 0.33's FlashMLASparseMetadataBuilder
// ._build_fp8_separate_prefill_decode): the per-token prefill request ids and the chunk-relative
// prefill workspace starts; host reference and CUDA dispatch.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void sparse_mla_fp8_prefill_metadata(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                                     int64_t num_decodes, int64_t num_prefills,
                                     int64_t num_tokens, int64_t workspace_size,
                                     int32_t* request_ids, int32_t* workspace_starts) {
  if (num_prefills <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, sparse_mla_fp8_prefill_metadata, qsl, seq_lens, num_decodes,
                            num_prefills, num_tokens, workspace_size, request_ids,
                            workspace_starts);
  const int32_t* pq = qsl + num_decodes;
  for (int64_t t = 0; t < num_tokens; ++t) request_ids[t] = -1;
  for (int64_t p = 0; p < num_prefills; ++p)
    for (int64_t t = pq[p]; t < pq[p + 1] && t < num_tokens; ++t)
      request_ids[t] = static_cast<int32_t>(p);
  // split_prefill_chunks' greedy ranges over the prefills' seq_lens, the starts an exclusive
  // prefix sum that restarts at each chunk.
  const int32_t* lens = seq_lens + num_decodes;
  int64_t in_chunk = 0;
  for (int64_t p = 0; p < num_prefills; ++p) {
    if (in_chunk + lens[p] > workspace_size) in_chunk = 0;
    workspace_starts[p] = static_cast<int32_t>(in_chunk);
    in_chunk += lens[p];
  }
}

}  // namespace attn::ops
