// The backend registry: built-in backends (registered by src/backends) and plugin backends
// (registered by src/capi), looked up by name. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.h"

namespace attn {

class Registry {
 public:
  static Registry& instance();

  /// Adds backends under an owner tag (nullptr for built-ins), all or none: Error(kInvalidArgument)
  /// when a name is already registered or repeated, or when a backend's name or one of its vLLM
  /// names (Backend::vllm_names()) is a name of another backend.
  void add(const std::vector<std::shared_ptr<const Backend>>& backends, const void* owner);
  /// Removes every backend of `owner`; Error(kBusy) (and no change) while any has builders.
  void remove_owner(const void* owner);

  size_t count() const;
  /// nullptr when out of range.
  std::shared_ptr<const Backend> at(size_t index) const;
  /// The backend whose name, or one of whose vLLM names, is `name` (exact, case-sensitive, as
  /// vLLM's enum lookup is); nullptr when none is.
  std::shared_ptr<const Backend> find(std::string_view name) const;

  /// A backend counted as in use, as a live builder is, until the Pin is destroyed: an unload
  /// (remove_owner) answers kBusy meanwhile, so it cannot slip in between the lookup of a
  /// backend and the creation of its builder.
  class Pin {
   public:
    Pin() = default;
    explicit Pin(std::shared_ptr<const Backend> backend);  ///< Counts it (the caller holds a lock).
    Pin(Pin&& o) noexcept : backend_(std::move(o.backend_)) {}
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    Pin& operator=(Pin&&) = delete;
    ~Pin();
    const std::shared_ptr<const Backend>& backend() const { return backend_; }
    explicit operator bool() const { return backend_ != nullptr; }

   private:
    std::shared_ptr<const Backend> backend_;
  };
  /// find(), pinned; an empty Pin when not registered.
  Pin pin(std::string_view name) const;
  /// Comma-separated names, for "unknown backend" messages.
  std::string names() const;

 private:
  struct Entry {
    std::shared_ptr<const Backend> backend;
    const void* owner;
  };
  /// The entry's backend named `name`, or nullptr; the caller holds mutex_.
  const std::shared_ptr<const Backend>* find_locked(std::string_view name) const;

  mutable std::shared_mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace attn
