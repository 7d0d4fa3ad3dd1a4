// CPU_MLA: vLLM 0.33's CPU platform reference MLA backend (mla/cpu_mla.py: CPUMLABackend), which
// keeps the base MLACommonMetadataBuilder (NEVER, single-token decodes); kernel block 16, "auto"
// caches only, float32 models too, the CPU platform's prefill backend.
#include "backends/mla_common.h"
#include "core/vllm_release.h"

namespace attn::backends {
namespace {

constexpr MlaClass kCpuMla =
    MlaClass("CPU_MLA", kCgNever, QueryLenSupport::kSingleOnly)
        .release(kVllmRelease)  // new in vLLM 0.33, matched whole
        .blocks(16).caches({kKvDtypeAuto})
        .models({kKvDtypeFloat16, kKvDtypeBfloat16, kKvDtypeFloat32}).on(MlaPlatform::kCpu);

}  // namespace

extern const BackendDescriptor kCpuMlaBackend;
const BackendDescriptor kCpuMlaBackend = mla_descriptor<kCpuMla, MlaCommonBuilder>();

}  // namespace attn::backends
