// The class attributes of vLLM 0.33's FlashInferMLASparseMetadataBuilder, which its subclasses
// (mla_flashinfer_sparse.cc, mla_flashinfer_sparse_sm90.cc) start from.
#pragma once

#include "backends/sparse_mla_common.h"

namespace attn::backends {

inline constexpr MlaClass kFlashInferMlaSparseBase =
    MlaClass("", kCgUniformBatch, QueryLenSupport::kVarlen)
        .release("0.33 (partial)").threshold_table(SparseThresholds::kSm100)
        .dcp_varlen(DcpVarlen::kYes).blocks(64);

}  // namespace attn::backends
