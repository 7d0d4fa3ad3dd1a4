#include "backends/builtin_backends.h"

#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend_descriptor.h"
#include "core/registry.h"

namespace attn::backends {

// Each backend file defines its descriptor (name, vLLM release, spec kinds, functions).
extern const BackendDescriptor kFlashAttnBackend, kFlashInferBackend, kTritonAttnBackend,
    kFlexAttentionBackend, kTreeAttnBackend, kCpuAttnBackend, kFlashMlaBackend,
    kFlashAttnMlaBackend, kCutlassMlaBackend, kFlashInferMlaBackend, kTritonMlaBackend,
    kMamba2Backend, kMamba1Backend, kShortConvBackend, kLinearAttnBackend, kGdnAttnBackend;

namespace {

// The registry table, one row per backend, in the order attn_backend_name() lists them (vLLM's
// backend enum names, FLASH_ATTN first). Append only: an index never changes.
const BackendDescriptor* const kBuiltinBackends[] = {
    &kFlashAttnBackend,      // flash_attn.cc
    &kFlashInferBackend,     // flashinfer.cc
    &kTritonAttnBackend,     // triton_attn.cc
    &kFlexAttentionBackend,  // flex_attention.cc
    &kTreeAttnBackend,       // tree_attn.cc
    &kCpuAttnBackend,        // cpu_attn.cc
    &kFlashMlaBackend,       // mla.cc: the MLA family
    &kFlashAttnMlaBackend,
    &kCutlassMlaBackend,
    &kFlashInferMlaBackend,
    &kTritonMlaBackend,
    &kMamba2Backend,         // mamba.cc: the Mamba family
    &kMamba1Backend,
    &kShortConvBackend,
    &kLinearAttnBackend,     // linear_attn.cc
    &kGdnAttnBackend,        // gdn_attn.cc
};

}  // namespace

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::shared_ptr<const Backend>> backends;
    for (const BackendDescriptor* d : kBuiltinBackends) backends.push_back(make_backend(*d));
    Registry::instance().add(backends, nullptr);
  });
}

}  // namespace attn::backends
