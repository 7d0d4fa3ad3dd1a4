#include "backends/builtin_backends.h"

#include <mutex>

#include "backends/cpu_attn.h"
#include "backends/flash_attn.h"
#include "backends/flashinfer.h"
#include "backends/flex_attention.h"
#include "backends/gdn_attn.h"
#include "backends/linear_attn.h"
#include "backends/mamba.h"
#include "backends/mla.h"
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
                              make_tree_attn_backend(), make_cpu_attn_backend(),
                              // the MLA family (mla.h)
                              make_flashmla_backend(), make_flash_attn_mla_backend(),
                              make_cutlass_mla_backend(), make_flashinfer_mla_backend(),
                              make_triton_mla_backend(),
                              // the Mamba family (mamba.h, linear_attn.h, gdn_attn.h)
                              make_mamba2_backend(), make_mamba1_backend(),
                              make_short_conv_backend(), make_linear_attn_backend(),
                              make_gdn_attn_backend()},
                             nullptr);
  });
}

}  // namespace attn::backends
