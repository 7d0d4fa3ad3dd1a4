// TRITON_MLA: vLLM 0.33's TritonMLAMetadataBuilder (mla/triton_mla.py): the base builder with
// uniform queries and non-causal multi-token decode, and a draft decode update (a no-op) without
// DCP. Its kernel takes any block size (vLLM selects it for multiples of 16; the builder does not
// depend on it).
#include "backends/mla_triton.h"

namespace attn::backends {

std::string TritonMlaBuilder::draft_decode_update_refusal() const {
  return dcp() > 1 ? "decode context parallel (DCP-local lengths are not advanced between "
                     "draft steps)"
                   : "";
}

namespace {

constexpr MlaClass kTritonMla =
    MlaClass("TRITON_MLA", kCgUniformBatch, QueryLenSupport::kUniform).non_causal_decode();

}  // namespace

extern const BackendDescriptor kTritonMlaBackend;
const BackendDescriptor kTritonMlaBackend = mla_descriptor<kTritonMla, TritonMlaBuilder>();

}  // namespace attn::backends
