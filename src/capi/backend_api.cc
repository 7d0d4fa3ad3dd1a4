// Backend registry queries, answered without a builder.
#include "attn_c.h"
#include "backends/builder_factory.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "capi/registry_access.h"

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

}  // extern "C"
