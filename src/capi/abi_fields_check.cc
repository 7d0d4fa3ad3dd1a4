// Compile-time proof that core/abi_fields.h lists exactly the fields of the header's structs:
// for each list, the struct has as many fields as the list has rows (counted by aggregate
// initialization), and the rows' offsets strictly increase (each name is a field, none twice,
// in the header's order). With both, a field added to attn_c.h without its row, a row without
// its field, or two rows swapped do not compile. The *_INIT value of every field is the list's
// default (what the core's member starts with), so the two cannot drift apart either.
// scripts/gen_bindings.py checks the same lists against the header for the bindings.
#include <cstddef>
#include <utility>

#include "attn_c.h"
#include "core/abi_fields.h"
#include "core/builder_config.h"
#include "core/common_metadata.h"
#include "core/kv_cache_spec.h"

namespace attn::capi {
namespace {

// Converts to any field type: T{AnyField x N} is well-formed while N <= the fields of T.
struct AnyField {
  template <class T>
  constexpr operator T() const noexcept {
    return T{};
  }
};

// (Initializing fewer fields than T has is what the count probes: no warning for it.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
template <class T, class... A>
constexpr auto initializable(int) -> decltype(T{std::declval<A>()...}, true) {
  return true;
}
#pragma GCC diagnostic pop
template <class T, class... A>
constexpr bool initializable(...) {
  return false;
}

/// The number of fields of the C struct T.
template <class T, class... A>
constexpr size_t field_count() {
  if constexpr (initializable<T, A..., AnyField>(0))
    return field_count<T, A..., AnyField>();
  else
    return sizeof...(A);
}

template <size_t N>
constexpr bool strictly_increasing(const size_t (&offsets)[N]) {
  for (size_t i = 1; i < N; ++i)
    if (offsets[i] <= offsets[i - 1]) return false;
  return true;
}

#define ROW_COUNT(...) +1
#define ROW_OFFSET(...) offsetof(S, ATTN_FIELD_NAME(__VA_ARGS__)),

// The *_INIT value of each row (`init`), against the row's default.
#define INIT_IS(kind, ...) INIT_IS_##kind(__VA_ARGS__)
#define INIT_IS_SIZE(name)
#define INIT_IS_EXT(name) static_assert(init.name == nullptr, #name " is NULL");
#define INIT_IS_RESERVED(name) static_assert(init.name == 0, #name " is 0");
#define INIT_IS_REMOVED(name) static_assert(init.name == 0, #name " is 0");
#define INIT_IS_SPECIAL(name)
#define INIT_IS_I32(name, value) static_assert(init.name == (value), #name "'s default");
#define INIT_IS_I32Z(name, value) \
  static_assert(init.name == 0 || init.name == (value), #name "'s default");
#define INIT_IS_I64(name, value) static_assert(init.name == (value), #name "'s default");
#define INIT_IS_BOOL(name, value) static_assert(init.name == ((value) ? 1 : 0), #name "'s default");
#define INIT_IS_OPT_I64(name) static_assert(init.name == -1, #name " is -1 (None)");
#define INIT_IS_TENSOR(name, ...) static_assert(init.name == nullptr, #name " is NULL");

template <class S>
struct Rows;

// The checks of one list against its struct S and S's *_INIT value.
#define CHECK_LIST(S_, INIT_VALUE, LIST)                                       \
  template <>                                                                  \
  struct Rows<S_> {                                                            \
    using S = S_;                                                              \
    static constexpr S init = INIT_VALUE;                                      \
    static constexpr size_t offsets[] = {LIST(ROW_OFFSET)};                    \
    static_assert(field_count<S>() == 0 LIST(ROW_COUNT),                       \
                  #LIST " (core/abi_fields.h) must list every field of " #S_); \
    static_assert(strictly_increasing(offsets), #LIST                          \
                  " must list the fields in attn_c.h's "                       \
                  "order");                                                    \
    LIST(INIT_IS)                                                              \
  };

CHECK_LIST(attn_kv_cache_spec_t, ATTN_KV_CACHE_SPEC_INIT, ATTN_KV_CACHE_SPEC_FIELDS)
CHECK_LIST(attn_builder_config_t, ATTN_BUILDER_CONFIG_INIT, ATTN_BUILDER_CONFIG_FIELDS)
CHECK_LIST(attn_common_metadata_t, ATTN_COMMON_METADATA_INIT, ATTN_COMMON_METADATA_FIELDS)

}  // namespace
}  // namespace attn::capi
