// A built-in backend as data: its name, the vLLM release it reproduces, the KV cache spec kinds
// it accepts and the functions of its class-level side (vLLM's get_cudagraph_support, the
// buffer plan, the builder factory). One generic Backend serves every descriptor; each backend
// file defines its descriptor and builtin_backends.cc lists them, one row per backend.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/builder.h"
#include "core/builder_config.h"
#include "core/kv_cache_spec.h"
#include "core/persistent_buffers.h"

namespace attn::backends {

struct BackendDescriptor {
  const char* name;          ///< As vLLM's backend enum spells it.
  const char* vllm_release;  ///< Backend::vllm_release(): kVllmRelease (core/vllm_release.h) when it matches it.
  uint32_t accepted_spec_kinds;  ///< Backend::accepted_spec_kinds(): the kinds create() accepts.
  int32_t variant;           ///< Which builder of a family (MLA, Mamba); 0 for a family of one.

  /// vLLM's classmethod get_cudagraph_support, for a validated spec and config.
  int32_t (*cudagraph_support)(const BackendDescriptor& d, const KvCacheSpec& spec,
                               const BuilderConfig& config);
  /// Error(kUnsupported) (or kInvalidArgument) for a spec or config this backend cannot build,
  /// the spec kind against accepted_spec_kinds first. Runs before buffer_plan and create.
  void (*check)(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& config);
  /// The persistent buffers a builder for a checked spec and config allocates.
  std::vector<BufferRequest> (*buffer_plan)(const BackendDescriptor& d, const KvCacheSpec& spec,
                                            const BuilderConfig& config);
  /// A builder for a checked spec and config.
  std::unique_ptr<Builder> (*create)(const BackendDescriptor& d,
                                     std::shared_ptr<const Backend> backend,
                                     const KvCacheSpec& spec, const BuilderConfig& config);
};

/// A cudagraph_support for a backend whose level is a class attribute (vLLM's
/// _cudagraph_support, no get_cudagraph_support override).
template <int32_t Level>
int32_t fixed_cudagraph_support(const BackendDescriptor&, const KvCacheSpec&, const BuilderConfig&) {
  return Level;
}

/// A create for a backend whose builder takes (backend, spec, config).
template <class BuilderT>
std::unique_ptr<Builder> create_builder_of(const BackendDescriptor&,
                                           std::shared_ptr<const Backend> backend,
                                           const KvCacheSpec& spec, const BuilderConfig& config) {
  return std::make_unique<BuilderT>(std::move(backend), spec, config);
}

/// A buffer_plan from a backend's plan(spec, config).
template <std::vector<BufferRequest> (*Plan)(const KvCacheSpec&, const BuilderConfig&)>
std::vector<BufferRequest> buffer_plan_of(const BackendDescriptor&, const KvCacheSpec& spec,
                                          const BuilderConfig& config) {
  return Plan(spec, config);
}

/// A buffer_plan for a backend whose builders allocate no persistent buffers.
inline std::vector<BufferRequest> no_buffers(const BackendDescriptor&, const KvCacheSpec&,
                                             const BuilderConfig&) {
  return {};
}

/// The Backend of a descriptor (which must outlive it: descriptors are static), known in vLLM as
/// `vllm_names` (Backend::vllm_names(): static, comma-separated; builtin_backends.cc's table;
/// nullptr, as "", for a backend that is not registered, such as a composite's children).
std::shared_ptr<const Backend> make_backend(const BackendDescriptor& d,
                                            const char* vllm_names = nullptr);

/// Error(kUnsupported) "<name> does not build metadata for <KIND> KV cache specs
/// (kv_cache_spec->kind=<k>)" unless `d` accepts the spec's kind.
void check_spec_kind(const BackendDescriptor& d, const KvCacheSpec& spec);

/// A check for a backend that refuses nothing but a spec kind outside accepted_spec_kinds.
inline void check_spec_kind_only(const BackendDescriptor& d, const KvCacheSpec& spec,
                                 const BuilderConfig&) {
  check_spec_kind(d, spec);
}

/// The spec kinds of attention that runs on a paged KV cache wherever the wrappers put it:
/// decoder self-attention (full, sliding window), chunked local, cross and encoder-only.
inline constexpr uint32_t kPagedAttentionKinds =
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow) |
    kv_kind_bit(kKvChunkedLocalAttention) | kv_kind_bit(kKvCrossAttention) |
    kv_kind_bit(kKvEncoderOnly);

}  // namespace attn::backends
