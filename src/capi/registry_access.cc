#include "capi/registry_access.h"

#include "backends/builtin_backends.h"
#include "capi/api_guard.h"
#include "core/error.h"

namespace attn::capi {

Registry& registry() {
  backends::register_builtin_backends();
  return Registry::instance();
}

namespace {

[[noreturn]] void unknown_backend(const char* name) {
  fail(Status::kNotFound, "unknown backend '", name, "'; registered backends: ",
       registry().names());
}

}  // namespace

std::shared_ptr<const Backend> find_backend(const char* name) {
  require(name, "backend");
  auto b = registry().find(name);
  if (!b) unknown_backend(name);
  return b;
}

Registry::Pin pin_backend(const char* name) {
  require(name, "backend");
  Registry::Pin pin = registry().pin(name);
  if (!pin) unknown_backend(name);
  return pin;
}

}  // namespace attn::capi
