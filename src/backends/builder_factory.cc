#include "backends/builder_factory.h"

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
  return w;
}

/// The config of layer `depth` (0 = outermost), its workspace moved past the layers above.
std::vector<BuilderConfig> layer_configs(const std::vector<Wrapper>& w, const KvCacheSpec& spec,
                                         const BuilderConfig& config) {
  std::vector<BuilderConfig> configs{config};
  for (const Wrapper wrapper : w) {
    const BuilderConfig& outer = configs.back();
    check_wrapper(wrapper, spec, outer);
    BuilderConfig inner = wrapper_inner_config(wrapper, spec, outer);
    const size_t own = attn::workspace_bytes(wrapper_buffers(wrapper, spec, outer), outer.device);
    if (outer.workspace != nullptr && outer.workspace_size >= own) {
      inner.workspace = static_cast<char*>(outer.workspace) + own;
      inner.workspace_size = outer.workspace_size - own;
    }
    configs.push_back(std::move(inner));
  }
  return configs;
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
  const std::vector<BuilderConfig> configs = layer_configs(w, spec, config);
  std::unique_ptr<Builder> b = backend->create(spec, configs.back());
  for (size_t i = w.size(); i-- > 0;) b = make_wrapper(w[i], backend, spec, configs[i], std::move(b));
  return b;
}

int32_t cudagraph_support(const Backend& backend, const KvCacheSpec& spec,
                          const BuilderConfig& config) {
  const std::vector<Wrapper> w = wrappers_for(spec, config);
  const std::vector<BuilderConfig> configs = layer_configs(w, spec, config);
  int32_t level = backend.cudagraph_support(spec, configs.back());
  for (size_t i = w.size(); i-- > 0;) level = wrapper_cudagraph_support(w[i], level);
  return level;
}

size_t workspace_bytes(const Backend& backend, const KvCacheSpec& spec, const BuilderConfig& config) {
  const std::vector<Wrapper> w = wrappers_for(spec, config);
  const std::vector<BuilderConfig> configs = layer_configs(w, spec, config);
  size_t total = 0;
  for (size_t i = 0; i < w.size(); ++i)
    total += attn::workspace_bytes(wrapper_buffers(w[i], spec, configs[i]), config.device);
  return total + attn::workspace_bytes(backend.buffer_plan(spec, configs.back()), config.device);
}

}  // namespace attn::backends
