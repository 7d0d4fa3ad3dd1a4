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

/// Whether `mask` (a Backend::accepted_spec_kinds() value) has the bit of spec kind `kind`.
constexpr bool accepts_spec_kind(uint32_t mask, int32_t kind) {
  return kind >= 0 && kind < 32 && ((mask >> kind) & 1u) != 0;
}

class Backend : public std::enable_shared_from_this<Backend> {
 public:
  virtual ~Backend() = default;

  /// As vLLM's backend enum spells it: "FLASH_ATTN".
  virtual const std::string& name() const = 0;

  /// The KV cache spec kinds create() accepts: bit k set for KvCacheKind k (ATTN_KV_* value k).
  virtual uint32_t accepted_spec_kinds() const = 0;

  /// The vLLM release whose builder this backend reproduces: "0.33.0" where it matches the
  /// pinned reference, a range such as "0.13-0.33 (partial)" where it does not, "plugin" for a
  /// plugin's backend.
  virtual const char* vllm_release() const = 0;

  /// vLLM 0.33.0's names of this backend, comma-separated (its backend enum member, the
  /// get_name() of its class and of the classes that build with its builder): "MAMBA2,MAMBA2_ATTN".
  /// Static, or as long-lived as the backend. The registry resolves each of them to this backend
  /// (Registry::find). "" when vLLM 0.33.0 has no name of its own for it, and for a plugin's.
  virtual const char* vllm_names() const { return ""; }

  /// vLLM's classmethod get_cudagraph_support(vllm_config, kv_cache_spec), for a validated
  /// spec and config.
  virtual int32_t cudagraph_support(const KvCacheSpec& spec, const BuilderConfig& config) const = 0;

  /// The persistent buffers a builder for this spec and config allocates.
  virtual std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec,
                                                 const BuilderConfig& config) const = 0;

  /// Creates a builder for a validated spec and config.
  virtual std::unique_ptr<Builder> create(const KvCacheSpec& spec,
                                          const BuilderConfig& config) const = 0;

  /// Builders of this backend alive now, plus lookups about to create one (Registry::Pin): a
  /// plugin cannot be unloaded while this is above zero.
  int64_t live_builders() const { return live_builders_.load(); }

 private:
  friend class Builder;
  friend class Registry;
  mutable std::atomic<int64_t> live_builders_{0};
};

}  // namespace attn
