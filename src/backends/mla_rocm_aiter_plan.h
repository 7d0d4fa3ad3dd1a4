// ROCM_AITER_MLA's decode plan: the host decisions of vLLM 0.33's
// AiterMLAMetadataBuilder._build_decode (the query length aiter runs at, uniform-MTP padding,
// adaptive varlen rows, the qo_indptr form, whether get_mla_metadata_v1 runs), for the MLA
// builder (mla_rocm_aiter.cc) to turn into ops::aiter_mla_decode_tables and metadata fields.
#pragma once

#include <cstdint>

namespace attn::backends {

struct AiterPlanIn {
  const int32_t* qsl = nullptr;  ///< The decodes' host query_start_loc (num_decodes + 1).
  int64_t num_decodes = 0;
  int64_t num_decode_tokens = 0;
  bool causal = true;
  int32_t varlen_qlen = 0;   ///< _varlen_decode_qlen (0: no adaptive varlen verify).
  int32_t mtp_qlen = 1;      ///< _mtp_decode_qlen (the reorder threshold).
  int64_t decode_heads = 0;  ///< num_heads * dcp_world_size.
  bool fp8 = false;          ///< An fp8 KV cache.
  bool full_graphs = false;  ///< cudagraph_mode.has_full_cudagraphs().
};

struct AiterPlan {
  int64_t max_qo_len = 0;
  bool pad = false;        ///< pad_uniform_mtp (varlen too)
  bool varlen = false;     ///< varlen_decode
  int32_t uniform_qo = 0;  ///< > 0: qo_indptr = r * uniform_qo; 0: query_start_loc
  int64_t uni_seqlen_qo = -1;
  bool persistent = false;  ///< get_mla_metadata_v1 runs (has_persistent_metadata)
};

/// AiterMLAMetadataBuilder._uniform_padded_mtp_qo_len: the uniform query length full-graph
/// padding added dummy rows for, else 0.
int64_t aiter_uniform_padded_mtp_qo_len(const int32_t* qsl, int64_t num_reqs, int64_t max_qo_len,
                                        int64_t num_decode_tokens);

/// The plan; Error(kInvalidArgument) where vLLM raises (a non-causal fp8 2-token block aiter
/// has no kernel for).
AiterPlan plan_aiter_decode(const AiterPlanIn& in);

}  // namespace attn::backends
