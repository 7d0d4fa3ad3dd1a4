// attn_c.h compiles as C++ (-std=c++11 and later, -Wall -Wextra -pedantic -Werror) and declares
// its functions noexcept there.
#include "attn_c.h"

#include <cstdio>
#include <type_traits>

static_assert(noexcept(attn_error_code(nullptr)), "ABI functions are noexcept in C++");
static_assert(noexcept(attn_build(nullptr, 0, nullptr, 0, nullptr, nullptr)), "noexcept");
static_assert(std::is_standard_layout<attn_tensor_t>::value, "attn_tensor_t is plain C");
static_assert(std::is_trivially_copyable<attn_builder_config_t>::value, "plain C struct");
static_assert(ATTN_BUILDER_CONFIG_STRUCT_SIZE == sizeof(attn_builder_config_t), "struct size");
static_assert(ATTN_API_STRUCT_SIZE == sizeof(attn_api_t), "struct size");
static_assert(std::is_standard_layout<attn_api_t>::value, "plain C struct");

// Each PFN_ type is the declaration's signature: a pointer to the (noexcept) function converts to
// it, which C++ allows only when parameters and return type are identical.
#define PFN_MATCHES_DECLARATION(name)                                                   \
  static_assert(std::is_convertible<decltype(&name), PFN_##name>::value, #name);          \
  static_assert(std::is_same<decltype(attn_api_t::name), PFN_##name>::value, #name);
ATTN_API_FUNCTIONS(PFN_MATCHES_DECLARATION)
#undef PFN_MATCHES_DECLARATION

int main() {
  const attn_builder_config_t config = ATTN_BUILDER_CONFIG_INIT;
  const attn_common_metadata_t common = ATTN_COMMON_METADATA_INIT;
  if (config.struct_size != sizeof config || common.struct_size != sizeof common) return 1;
  std::printf("attn_c.h: C++%ld ok\n", static_cast<long>(__cplusplus / 100 % 100));
  return 0;
}
