// Backend registry queries, answered without a builder.
#include "attn_c.h"
#include "backends/builder_factory.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "capi/plugin_backend.h"
#include "capi/registry_access.h"

namespace {

/// The released sizes of attn_backend_info_t before this header's (ATTN_BACKEND_INFO_STRUCT_SIZE,
/// 1.7, which appended `vllm_names`): ABI 1.3's, which added it, the smallest accepted.
constexpr size_t kBackendInfoSizes[] = {ATTN_BACKEND_INFO_STRUCT_SIZE_1_3};
static_assert(ATTN_BACKEND_INFO_STRUCT_SIZE == sizeof(attn_backend_info_t),
              "ATTN_BACKEND_INFO_STRUCT_SIZE must end at the last field");
static_assert(offsetof(attn_backend_info_t, name) == sizeof(size_t));
static_assert(offsetof(attn_backend_info_t, kv_cache_kinds) == 2 * sizeof(void*));
static_assert(offsetof(attn_backend_info_t, origin) == 2 * sizeof(void*) + 4);
static_assert(offsetof(attn_backend_info_t, vllm_release) == 3 * sizeof(void*));
static_assert(offsetof(attn_backend_info_t, extension) == 4 * sizeof(void*));
static_assert(ATTN_BACKEND_INFO_STRUCT_SIZE_1_3 == 5 * sizeof(void*), "the ABI 1.3 size");
static_assert(offsetof(attn_backend_info_t, vllm_names) == 5 * sizeof(void*));

}  // namespace

extern "C" {

ATTN_API size_t attn_backend_count(void) noexcept {
  try {
    return attn::capi::registry().count();
  } catch (...) {
    return 0;
  }
}

ATTN_API attn_error_t* attn_backend_name(size_t index, const char** out) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  auto b = attn::capi::registry().at(index);
  if (!b)
    attn::fail(attn::Status::kNotFound, "backend index ", index, " is out of range (",
               attn::capi::registry().count(), " backends)");
  *out = b->name().c_str();
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_backend_cudagraph_support(const char* backend,
                                                      const attn_kv_cache_spec_t* kv_cache_spec,
                                                      const attn_builder_config_t* config,
                                                      int32_t* out_level) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_level, "out_level");
  auto b = attn::capi::find_backend(backend);
  const attn::KvCacheSpec spec = attn::capi::to_spec(kv_cache_spec);
  const attn::BuilderConfig cfg = attn::capi::to_config(config, spec);
  *out_level = attn::backends::cudagraph_support(*b, spec, cfg);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_backend_info(size_t index, attn_backend_info_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  // Checked before the lookup, so that a bad struct_size is reported whatever the index.
  attn::capi::check_struct_size<attn_backend_info_t>(out->struct_size, kBackendInfoSizes, "out");
  auto b = attn::capi::registry().at(index);
  if (!b)
    attn::fail(attn::Status::kNotFound, "backend index ", index, " is out of range (",
               attn::capi::registry().count(), " backends)");
  attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
  info.name = b->name().c_str();
  info.kv_cache_kinds = b->accepted_spec_kinds();
  info.origin = attn::capi::is_plugin_backend(*b) ? ATTN_BACKEND_PLUGIN : ATTN_BACKEND_BUILTIN;
  const char* release = b->vllm_release();
  info.vllm_release = release != nullptr ? release : "";
  info.extension = nullptr;
  const char* vllm_names = b->vllm_names();
  info.vllm_names = vllm_names != nullptr ? vllm_names : "";
  attn::capi::write_struct(out, info, kBackendInfoSizes, "out");  // no further than struct_size
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
