// Plugin loading and unloading.
#include <memory>
#include <vector>

#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/handles.h"
#include "capi/plugin_backend.h"
#include "capi/plugin_library.h"
#include "capi/registry_access.h"

extern "C" {

ATTN_API attn_error_t* attn_plugin_load(const char* path, attn_plugin_t** out) noexcept {
  ATTN_API_TRY
  attn::capi::require(path, "path");
  attn::capi::require(out, "out");
  auto library = std::make_shared<attn::capi::PluginLibrary>(path);
  std::vector<std::shared_ptr<const attn::Backend>> backends;
  for (const attn_plugin_backend_t& d : library->backends())
    backends.push_back(attn::capi::make_plugin_backend(library, d));
  auto handle = std::make_unique<attn_plugin>();
  handle->library = library;
  handle->name = library->name();
  attn::capi::registry().add(backends, handle.get());
  *out = handle.release();
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_plugin_unload(attn_plugin_t* plugin) noexcept {
  ATTN_API_TRY
  if (plugin == nullptr) return nullptr;
  attn::capi::registry().remove_owner(plugin);
  delete plugin;
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API const char* attn_plugin_name(const attn_plugin_t* plugin) noexcept {
  return plugin == nullptr ? "" : plugin->name.c_str();
}

}  // extern "C"
