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
  /// when a name is already registered or repeated.
  void add(const std::vector<std::shared_ptr<const Backend>>& backends, const void* owner);
  /// Removes every backend of `owner`; Error(kBusy) (and no change) while any has builders.
  void remove_owner(const void* owner);

  size_t count() const;
  /// nullptr when out of range.
  std::shared_ptr<const Backend> at(size_t index) const;
  /// nullptr when not registered.
  std::shared_ptr<const Backend> find(std::string_view name) const;
  /// Comma-separated names, for "unknown backend" messages.
  std::string names() const;

 private:
  struct Entry {
    std::shared_ptr<const Backend> backend;
    const void* owner;
  };
  mutable std::shared_mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace attn
