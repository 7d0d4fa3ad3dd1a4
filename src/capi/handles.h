// The definitions behind the ABI's opaque handles.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attn_c.h"
#include "core/builder.h"
#include "core/metadata.h"

/// An error object. The out-of-memory fallback is a static instance (is_static) that
/// attn_error_destroy never frees.
struct attn_error {
  int32_t code = ATTN_OK;
  std::string message;
  bool is_static = false;
};

/// Metadata as the ABI sees it: a core Metadata (the builder's, or owned) plus attn_tensor_t
/// views of its tensor fields, rebuilt after every write.
struct attn_metadata {
  attn::Metadata* core = nullptr;
  std::unique_ptr<attn::Metadata> owned;  ///< Set for caller-owned metadata.
  bool builder_owned = false;
  std::vector<attn_tensor_t> views;       ///< One per field; valid for tensor fields.

  /// Rebuilds `views` from `core` (no allocation once sized).
  void refresh();
};

struct attn_builder {
  std::unique_ptr<attn::Builder> impl;
  attn_metadata metadata;  ///< builder_owned; core points at impl->metadata().
};

namespace attn::capi {
class PluginLibrary;
}

struct attn_plugin {
  std::shared_ptr<attn::capi::PluginLibrary> library;
  std::string name;
};
