#include "capi/plugin_library.h"

#include <dlfcn.h>

#include <mutex>
#include <set>
#include <string>

#include "capi/convert.h"
#include "core/error.h"

namespace attn::capi {
namespace {

// dlopen and dlclose of plugins are serialised by libattn itself. glibc locks its own
// link map, but with locks ThreadSanitizer cannot see, so concurrent attn_plugin_load and
// attn_plugin_unload calls were reported as races inside ld.so; one lock here makes the
// ordering visible and also runs every plugin's entry point one at a time.
std::mutex& dl_mutex() {
  static std::mutex m;
  return m;
}

void check_backend(const attn_plugin_backend_t& b, const std::string& where) {
  if (b.name == nullptr || b.name[0] == '\0') invalid(where, " has no name");
  const std::string id = where + " ('" + b.name + "')";
  if (b.num_fields > 0 && b.field_names == nullptr)
    invalid(id, " declares ", b.num_fields, " fields but field_names is NULL");
  std::set<std::string> names;
  for (size_t i = 0; i < b.num_fields; ++i) {
    if (b.field_names[i] == nullptr || b.field_names[i][0] == '\0')
      invalid(id, " has an empty field name at index ", i);
    if (!names.insert(b.field_names[i]).second)
      invalid(id, " declares field '", b.field_names[i], "' twice");
  }
  if (b.supports_update_block_table && (!names.count("block_table") || !names.count("slot_mapping")))
    invalid(id, " supports update_block_table but has no 'block_table' and 'slot_mapping' fields");
  if (b.cudagraph_support == nullptr) invalid(id, " has no cudagraph_support callback");
  if (b.create == nullptr) invalid(id, " has no create callback");
  if (b.destroy == nullptr) invalid(id, " has no destroy callback");
  if (b.build == nullptr) invalid(id, " has no build callback");
}

}  // namespace

PluginLibrary::PluginLibrary(const std::string& path) : path_(path) {
  std::lock_guard<std::mutex> lock(dl_mutex());
  dlerror();
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = dlerror();
    fail(Status::kNotFound, "cannot load plugin '", path, "': ", why ? why : "dlopen failed");
  }
  try {
    void* sym = dlsym(handle_, ATTN_PLUGIN_ENTRY_NAME);
    if (sym == nullptr)
      fail(Status::kNotFound, "plugin '", path, "' does not export ", ATTN_PLUGIN_ENTRY_NAME);
    auto entry = reinterpret_cast<attn_plugin_entry_fn>(sym);
    const attn_plugin_table_t* table = entry();
    if (table == nullptr) invalid("plugin '", path, "': ", ATTN_PLUGIN_ENTRY_NAME, "() returned NULL");
    attn_plugin_table_t defaults{};
    const attn_plugin_table_t t = read_struct(table, defaults, kPluginTableSizeV1, "plugin table");
    name_ = t.plugin_name != nullptr ? t.plugin_name : path;
    if (t.abi_major != ATTN_VERSION_MAJOR)
      fail(Status::kAbiMismatch, "plugin '", name_, "' (", path, ") was built for libattn ABI ",
           t.abi_major, ".", t.abi_minor, "; this library is ", ATTN_VERSION_MAJOR, ".",
           ATTN_VERSION_MINOR, " and loads plugins of ABI major ", ATTN_VERSION_MAJOR, " only");
    if (t.abi_minor > ATTN_VERSION_MINOR)
      fail(Status::kAbiMismatch, "plugin '", name_, "' (", path, ") needs libattn >= ",
           t.abi_major, ".", t.abi_minor, "; this library is ", ATTN_VERSION_MAJOR, ".",
           ATTN_VERSION_MINOR);
    if (t.extension != nullptr) invalid("plugin '", name_, "': table extension must be NULL");
    if (t.num_backends == 0 || t.backends == nullptr)
      invalid("plugin '", name_, "' lists no backends");
    for (size_t i = 0; i < t.num_backends; ++i) {
      const std::string where = "plugin '" + name_ + "' backend " + std::to_string(i);
      if (t.backends[i] == nullptr) invalid(where, " is NULL");
      attn_plugin_backend_t bdefaults{};
      const attn_plugin_backend_t b =
          read_struct(t.backends[i], bdefaults, kPluginBackendSizeV1, where.c_str());
      check_backend(b, where);
      backends_.push_back(b);
    }
  } catch (...) {
    dlclose(handle_);
    handle_ = nullptr;
    throw;
  }
}

PluginLibrary::~PluginLibrary() {
  if (handle_ == nullptr) return;
  std::lock_guard<std::mutex> lock(dl_mutex());
  dlclose(handle_);
}

}  // namespace attn::capi
