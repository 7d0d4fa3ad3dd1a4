// CUTLASS_MLA: vLLM 0.33's CutlassMLAMetadataBuilder (mla/cutlass_mla.py), the base builder with
// single-token decodes; its backend runs kernel blocks of 128.
#include "backends/mla_common.h"

namespace attn::backends {
namespace {

constexpr MlaClass kCutlassMla =
    MlaClass("CUTLASS_MLA", kCgUniformSingleTokenDecode, QueryLenSupport::kSingleOnly).blocks(128);

}  // namespace

extern const BackendDescriptor kCutlassMlaBackend;
const BackendDescriptor kCutlassMlaBackend = mla_descriptor<kCutlassMla, MlaCommonBuilder>();

}  // namespace attn::backends
