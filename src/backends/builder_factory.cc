#include "backends/builder_factory.h"

#include <string>
#include <utility>
#include <vector>

#include "backends/wrappers.h"
#include "core/error.h"
#include "core/persistent_buffers.h"

namespace attn::backends {
namespace {

std::vector<Wrapper> wrappers_for(const KvCacheSpec& spec, const BuilderConfig& config) {
  std::vector<Wrapper> w;
  if (config.kv_sharing_fast_prefill) w.push_back(Wrapper::kFastPrefill);
  if (spec.kind == kKvChunkedLocalAttention) w.push_back(Wrapper::kChunkedLocal);
  if (spec.kind == kKvCrossAttention) w.push_back(Wrapper::kCrossAttention);
  if (spec.kind == kKvEncoderOnly) w.push_back(Wrapper::kEncoderOnly);
  if (spec.sink_len > 0) w.push_back(Wrapper::kStaticSink);
  if (config.block_pool_size > 0) w.push_back(Wrapper::kBlockPooling);
  return w;
}

/// The spec and config of each layer (0 = outermost), the config's workspace moved past the
/// layers above.
struct Layer {
  KvCacheSpec spec;
  BuilderConfig config;
};
std::vector<Layer> layers(const std::vector<Wrapper>& w, const std::string& backend,
                          const KvCacheSpec& spec, const BuilderConfig& config) {
  std::vector<Layer> out{{spec, config}};
  for (const Wrapper wrapper : w) {
    const Layer& outer = out.back();
    check_wrapper(wrapper, backend, outer.spec, outer.config);
    BuilderConfig inner = wrapper_inner_config(wrapper, backend, outer.spec, outer.config);
    const size_t own = attn::workspace_bytes(wrapper_buffers(wrapper, outer.spec, outer.config),
                                             outer.config.device);
    if (outer.config.workspace != nullptr && outer.config.workspace_size >= own) {
      inner.workspace = static_cast<char*>(outer.config.workspace) + own;
      inner.workspace_size = outer.config.workspace_size - own;
    }
    KvCacheSpec inner_spec = wrapper_inner_spec(wrapper, outer.spec, outer.config);
    out.push_back({std::move(inner_spec), std::move(inner)});
  }
  return out;
}

}  // namespace

std::unique_ptr<Builder> create_builder(const std::shared_ptr<const Backend>& backend,
                                        const KvCacheSpec& spec, const BuilderConfig& config) {
  const std::vector<Wrapper> w = wrappers_for(spec, config);
  if (w.empty()) return backend->create(spec, config);
  // Too small a workspace: the outermost wrapper reports it with the full size needed.
  if (config.workspace != nullptr && config.workspace_size < workspace_bytes(*backend, spec, config))
    invalid("config->workspace_size=", config.workspace_size, " is smaller than the ",
            workspace_bytes(*backend, spec, config), " bytes ", backend->name(),
            " needs (attn_builder_workspace_size)");
  const std::vector<Layer> l = layers(w, backend->name(), spec, config);
  std::unique_ptr<Builder> b = backend->create(l.back().spec, l.back().config);
  for (size_t i = w.size(); i-- > 0;)
    b = make_wrapper(w[i], backend, l[i].spec, l[i].config, std::move(b));
  return b;
}

int32_t cudagraph_support(const Backend& backend, const KvCacheSpec& spec,
                          const BuilderConfig& config) {
  const std::vector<Wrapper> w = wrappers_for(spec, config);
  const std::vector<Layer> l = layers(w, backend.name(), spec, config);
  int32_t level = backend.cudagraph_support(l.back().spec, l.back().config);
  for (size_t i = w.size(); i-- > 0;) level = wrapper_cudagraph_support(w[i], level);
  return level;
}

size_t workspace_bytes(const Backend& backend, const KvCacheSpec& spec, const BuilderConfig& config) {
  const std::vector<Wrapper> w = wrappers_for(spec, config);
  const std::vector<Layer> l = layers(w, backend.name(), spec, config);
  size_t total = 0;
  for (size_t i = 0; i < w.size(); ++i)
    total += attn::workspace_bytes(wrapper_buffers(w[i], l[i].spec, l[i].config), config.device);
  return total + attn::workspace_bytes(backend.buffer_plan(l.back().spec, l.back().config),
                                       config.device);
}

}  // namespace attn::backends
