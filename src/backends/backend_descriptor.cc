#include "backends/backend_descriptor.h"

#include <string>
#include <utility>

#include "core/error.h"

namespace attn::backends {
namespace {

class DescribedBackend final : public Backend {
 public:
  DescribedBackend(const BackendDescriptor& d, const char* vllm_names)
      : d_(d), name_(d.name), vllm_names_(vllm_names) {}

  const std::string& name() const override { return name_; }
  const char* vllm_names() const override { return vllm_names_; }
  uint32_t accepted_spec_kinds() const override { return d_.accepted_spec_kinds; }
  const char* vllm_release() const override { return d_.vllm_release; }

  int32_t cudagraph_support(const KvCacheSpec& spec, const BuilderConfig& config) const override {
    return d_.cudagraph_support(d_, spec, config);
  }

  std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec,
                                         const BuilderConfig& config) const override {
    check(spec, config);
    return d_.buffer_plan(d_, spec, config);
  }

  std::unique_ptr<Builder> create(const KvCacheSpec& spec,
                                  const BuilderConfig& config) const override {
    check(spec, config);
    return d_.create(d_, shared_from_this(), spec, config);
  }

 private:
  void check(const KvCacheSpec& spec, const BuilderConfig& config) const {
    d_.check(d_, spec, config);  // the backend's own messages first
    check_spec_kind(d_, spec);   // then what accepted_spec_kinds() promises, whatever it checked
  }

  const BackendDescriptor& d_;
  const std::string name_;
  const char* const vllm_names_;
};

}  // namespace

std::shared_ptr<const Backend> make_backend(const BackendDescriptor& d, const char* vllm_names) {
  return std::make_shared<DescribedBackend>(d, vllm_names != nullptr ? vllm_names : "");
}

void check_spec_kind(const BackendDescriptor& d, const KvCacheSpec& spec) {
  if (!accepts_spec_kind(d.accepted_spec_kinds, spec.kind))
    fail(Status::kUnsupported, d.name, " does not build metadata for ",
         kv_cache_kind_name(spec.kind), " KV cache specs (kv_cache_spec->kind=", spec.kind, ")");
}

}  // namespace attn::backends
