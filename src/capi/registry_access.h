// The registry as the ABI uses it: built-in backends registered on first use, lookups that
// fail with named messages.
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/registry.h"

namespace attn::capi {

/// The registry, with the built-in backends registered.
Registry& registry();

/// The backend named `name`; Error(kNotFound) listing the registered names otherwise.
std::shared_ptr<const Backend> find_backend(const char* name);
/// As find_backend, pinned until the Pin is destroyed (for creating a builder: an unload of its
/// plugin answers ATTN_ERR_BUSY meanwhile).
Registry::Pin pin_backend(const char* name);

}  // namespace attn::capi
