// Encoder-only attention (vLLM's create_encoder_only_attention_backend): the wrapped builder
// builds the same batch with causal = false (a per-request causal tensor dropped: vLLM 0.33's
// `causal = False` replaces it). Nothing else changes.
#include <utility>

#include "backends/wrapped_builder.h"
#include "backends/wrapper_kinds.h"

namespace attn::backends {
namespace {

class EncoderOnlyBuilder final : public WrappedBuilder {
 public:
  EncoderOnlyBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                     const BuilderConfig& config, std::unique_ptr<Builder> inner)
      : WrappedBuilder(std::move(backend), spec, config, std::move(inner),
                       "EncoderOnlyAttention_", {}, {}) {}

 protected:
  CommonMetadata transform(const CommonMetadata& common, const ops::Exec&) override {
    CommonMetadata c = common;
    c.causal = false;
    c.causal_per_request.reset();  // vLLM 0.33's `causal = False` replaces a tensor too
    return c;
  }
};

}  // namespace

std::unique_ptr<Builder> make_encoder_only(std::shared_ptr<const Backend> backend,
                                           const KvCacheSpec& spec, const BuilderConfig& config,
                                           std::unique_ptr<Builder> inner) {
  return std::make_unique<EncoderOnlyBuilder>(std::move(backend), spec, config, std::move(inner));
}

}  // namespace attn::backends
