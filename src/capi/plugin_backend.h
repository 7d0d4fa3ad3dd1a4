// A plugin's backend as a core Backend: builds call the plugin's C callbacks with ABI views of
// the validated batch, and its field setters write into the builder's metadata.
#pragma once

#include <memory>

#include "attn_c.h"
#include "capi/plugin_library.h"
#include "core/backend.h"

namespace attn::capi {

std::shared_ptr<const Backend> make_plugin_backend(std::shared_ptr<PluginLibrary> library,
                                                   const attn_plugin_backend_t& descriptor);

/// Whether `backend` came from make_plugin_backend (a plugin's) rather than from src/backends.
bool is_plugin_backend(const Backend& backend);

}  // namespace attn::capi
