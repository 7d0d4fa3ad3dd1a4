// TOKENSPEED_MLA: vLLM 0.33's TokenspeedMLAMetadataBuilder (mla/tokenspeed_mla.py), the base
// builder with uniform queries, varlen DCP and non-causal multi-token decode; its backend takes
// fp8 caches only ("fp8", "fp8_e4m3") and kernel blocks of 32 or 64.
#include "backends/mla_common.h"

namespace attn::backends {
namespace {

constexpr MlaClass kTokenspeedMla =
    MlaClass("TOKENSPEED_MLA", kCgUniformBatch, QueryLenSupport::kUniform)
        .dcp_varlen(DcpVarlen::kYes).blocks(32, 64).caches({kKvDtypeFp8E4m3}).non_causal_decode();

}  // namespace

extern const BackendDescriptor kTokenspeedMlaBackend;
const BackendDescriptor kTokenspeedMlaBackend = mla_descriptor<kTokenspeedMla, MlaCommonBuilder>();

}  // namespace attn::backends
