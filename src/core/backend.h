// A backend: the class-level side of a vLLM attention backend (its name, its classmethod
// get_cudagraph_support, its buffer plan) and the factory of its builders.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/builder_config.h"
#include "core/kv_cache_spec.h"
#include "core/persistent_buffers.h"

namespace attn {

class Builder;

class Backend : public std::enable_shared_from_this<Backend> {
 public:
  virtual ~Backend() = default;

  /// As vLLM's backend enum spells it: "FLASH_ATTN".
  virtual const std::string& name() const = 0;

  /// vLLM's classmethod get_cudagraph_support(vllm_config, kv_cache_spec), for a validated
  /// spec and config.
  virtual int32_t cudagraph_support(const KvCacheSpec& spec, const BuilderConfig& config) const = 0;

  /// The persistent buffers a builder for this spec and config allocates.
  virtual std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec,
                                                 const BuilderConfig& config) const = 0;

  /// Creates a builder for a validated spec and config.
  virtual std::unique_ptr<Builder> create(const KvCacheSpec& spec,
                                          const BuilderConfig& config) const = 0;

  // ---- Registry description (ABI 1.3, attn_backend_info) ---------------------------------
  // Answered without a builder. The defaults suit a backend that says nothing about itself;
  // the built-in backends override both.

  /// The KV cache spec kinds it builds for: bit k set when it accepts the KvCacheKind whose
  /// value is k (wrapper kinds included when it builds under the wrapper). Default: every kind.
  virtual uint32_t accepted_spec_kinds() const { return (1u << (kKvMamba + 1)) - 1u; }

  /// The vLLM release whose builder it matches ("0.33.0"), valid while the backend is
  /// registered; "" when unknown (the default).
  virtual const char* vllm_release() const { return ""; }

  // ---- end of the registry description ---------------------------------------------------

  /// Builders of this backend alive now (a plugin cannot be unloaded while any exist).
  int64_t live_builders() const { return live_builders_.load(); }

 private:
  friend class Builder;
  mutable std::atomic<int64_t> live_builders_{0};
};

}  // namespace attn
