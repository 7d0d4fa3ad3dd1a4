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
#define ROW_OFFSET(...) offsetof(STRUCT, ATTN_FIELD_NAME(__VA_ARGS__)),

// The *_INIT value of each row, against the row's default.
#define INIT_IS(kind, ...) INIT_IS_##kind(__VA_ARGS__)
#define INIT_IS_SIZE(name)
#define INIT_IS_EXT(name) static_assert(INIT.name == nullptr, #name " is NULL");
#define INIT_IS_RESERVED(name) static_assert(INIT.name == 0, #name " is 0");
#define INIT_IS_REMOVED(name) static_assert(INIT.name == 0, #name " is 0");
#define INIT_IS_SPECIAL(name)
#define INIT_IS_I32(name, value) static_assert(INIT.name == (value), #name "'s default");
#define INIT_IS_I32Z(name, value) \
  static_assert(INIT.name == 0 || INIT.name == (value), #name "'s default");
#define INIT_IS_I64(name, value) static_assert(INIT.name == (value), #name "'s default");
#define INIT_IS_BOOL(name, value) static_assert(INIT.name == ((value) ? 1 : 0), #name "'s default");
#define INIT_IS_OPT_I64(name) static_assert(INIT.name == -1, #name " is -1 (None)");
#define INIT_IS_TENSOR(name, ...) static_assert(INIT.name == nullptr, #name " is NULL");

#define STRUCT attn_kv_cache_spec_t
#define INIT kSpecInit
constexpr STRUCT INIT = ATTN_KV_CACHE_SPEC_INIT;
constexpr size_t kSpecOffsets[] = {ATTN_KV_CACHE_SPEC_FIELDS(ROW_OFFSET)};
static_assert(field_count<STRUCT>() == 0 ATTN_KV_CACHE_SPEC_FIELDS(ROW_COUNT),
              "ATTN_KV_CACHE_SPEC_FIELDS (core/abi_fields.h) must list every field of "
              "attn_kv_cache_spec_t");
static_assert(strictly_increasing(kSpecOffsets),
              "ATTN_KV_CACHE_SPEC_FIELDS must list the fields in attn_c.h's order");
ATTN_KV_CACHE_SPEC_FIELDS(INIT_IS)
#undef INIT
#undef STRUCT

#define STRUCT attn_builder_config_t
#define INIT kConfigInit
constexpr STRUCT INIT = ATTN_BUILDER_CONFIG_INIT;
constexpr size_t kConfigOffsets[] = {ATTN_BUILDER_CONFIG_FIELDS(ROW_OFFSET)};
static_assert(field_count<STRUCT>() == 0 ATTN_BUILDER_CONFIG_FIELDS(ROW_COUNT),
              "ATTN_BUILDER_CONFIG_FIELDS (core/abi_fields.h) must list every field of "
              "attn_builder_config_t");
static_assert(strictly_increasing(kConfigOffsets),
              "ATTN_BUILDER_CONFIG_FIELDS must list the fields in attn_c.h's order");
ATTN_BUILDER_CONFIG_FIELDS(INIT_IS)
#undef INIT
#undef STRUCT

#define STRUCT attn_common_metadata_t
#define INIT kCommonInit
constexpr STRUCT INIT = ATTN_COMMON_METADATA_INIT;
constexpr size_t kCommonOffsets[] = {ATTN_COMMON_METADATA_FIELDS(ROW_OFFSET)};
static_assert(field_count<STRUCT>() == 0 ATTN_COMMON_METADATA_FIELDS(ROW_COUNT),
              "ATTN_COMMON_METADATA_FIELDS (core/abi_fields.h) must list every field of "
              "attn_common_metadata_t");
static_assert(strictly_increasing(kCommonOffsets),
              "ATTN_COMMON_METADATA_FIELDS must list the fields in attn_c.h's order");
ATTN_COMMON_METADATA_FIELDS(INIT_IS)
#undef INIT
#undef STRUCT

}  // namespace
}  // namespace attn::capi
