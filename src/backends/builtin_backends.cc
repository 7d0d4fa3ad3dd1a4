#include "backends/builtin_backends.h"

#include <mutex>

#include "backends/cpu_attn.h"
#include "backends/flash_attn.h"
#include "backends/flashinfer.h"
#include "backends/flex_attention.h"
#include "backends/tree_attn.h"
#include "backends/triton_attn.h"
#include "core/registry.h"

namespace attn::backends {

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    // vLLM's backend enum names, in a fixed order (FLASH_ATTN first).
    Registry::instance().add({make_flash_attn_backend(), make_flashinfer_backend(),
                              make_triton_attn_backend(), make_flex_attention_backend(),
                              make_tree_attn_backend(), make_cpu_attn_backend()},
                             nullptr);
  });
}

}  // namespace attn::backends
