// A plugin shared library: opened with dlopen, its entry point called once, its table checked.
// Closed when the last backend or handle that refers to it is gone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attn_c.h"

namespace attn::capi {

class PluginLibrary {
 public:
  /// Opens and checks the plugin; throws Error(kNotFound / kAbiMismatch / kInvalidArgument).
  explicit PluginLibrary(const std::string& path);
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  /// The checked backend descriptors (copied up to each one's struct_size).
  const std::vector<attn_plugin_backend_t>& backends() const { return backends_; }

 private:
  std::string path_;
  std::string name_;
  void* handle_ = nullptr;
  std::vector<attn_plugin_backend_t> backends_;
};

}  // namespace attn::capi
