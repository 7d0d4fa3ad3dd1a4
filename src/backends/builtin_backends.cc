#include "backends/builtin_backends.h"

#include <mutex>

#include "backends/flash_attn.h"
#include "backends/triton_attn.h"
#include "core/registry.h"

namespace attn::backends {

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] { Registry::instance().add({make_flash_attn_backend(), make_triton_attn_backend()}, nullptr); });
}

}  // namespace attn::backends
