#include "capi/registry_access.h"

#include "backends/builtin_backends.h"
#include "capi/api_guard.h"
#include "core/error.h"

namespace attn::capi {

Registry& registry() {
  backends::register_builtin_backends();
  return Registry::instance();
}

std::shared_ptr<const Backend> find_backend(const char* name) {
  require(name, "backend");
  auto b = registry().find(name);
  if (!b)
    fail(Status::kNotFound, "unknown backend '", name, "'; registered backends: ",
         registry().names());
  return b;
}

Registry::Pin pin_backend(const char* name) {
  require(name, "backend");
  Registry::Pin pin = registry().pin(name);
  if (!pin)
    fail(Status::kNotFound, "unknown backend '", name, "'; registered backends: ",
         registry().names());
  return pin;
}

}  // namespace attn::capi
