// Builder lifetime and builder queries.
#include <memory>

#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "capi/handles.h"
#include "capi/registry_access.h"
#include "backends/builder_factory.h"
#include "core/builder.h"
#include "core/persistent_buffers.h"

extern "C" {

ATTN_API attn_error_t* attn_builder_workspace_size(const char* backend,
                                                   const attn_kv_cache_spec_t* kv_cache_spec,
                                                   const attn_builder_config_t* config,
                                                   size_t* out_bytes) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_bytes, "out_bytes");
  auto b = attn::capi::find_backend(backend);
  const attn::KvCacheSpec spec = attn::capi::to_spec(kv_cache_spec);
  attn::BuilderConfig cfg = attn::capi::to_config(config, spec);
  *out_bytes = attn::backends::workspace_bytes(*b, spec, cfg);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_builder_create(const char* backend,
                                           const attn_kv_cache_spec_t* kv_cache_spec,
                                           const attn_builder_config_t* config,
                                           attn_builder_t** out) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  // Pinned from the lookup until the builder counts itself: an unload in between is BUSY.
  const attn::Registry::Pin pin = attn::capi::pin_backend(backend);
  const attn::KvCacheSpec spec = attn::capi::to_spec(kv_cache_spec);
  const attn::BuilderConfig cfg = attn::capi::to_config(config, spec);
  attn::check_device_available(cfg);
  auto handle = std::make_unique<attn_builder>();
  handle->impl = attn::backends::create_builder(pin.backend(), spec, cfg);
  handle->metadata.core = &handle->impl->metadata();
  handle->metadata.builder_owned = true;
  handle->metadata.reset_views();
  *out = handle.release();
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API void attn_builder_destroy(attn_builder_t* builder) noexcept { delete builder; }

ATTN_API const char* attn_builder_backend_name(const attn_builder_t* builder) noexcept {
  return builder == nullptr ? "" : builder->impl->backend().name().c_str();
}

ATTN_API attn_error_t* attn_builder_cudagraph_support(const attn_builder_t* builder,
                                                      int32_t* out_level) noexcept {
  ATTN_API_TRY
  attn::capi::require(builder, "builder");
  attn::capi::require(out_level, "out_level");
  *out_level = builder->impl->cudagraph_support();
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_builder_reorder_batch_threshold(const attn_builder_t* builder,
                                                            int32_t* out_threshold) noexcept {
  ATTN_API_TRY
  attn::capi::require(builder, "builder");
  attn::capi::require(out_threshold, "out_threshold");
  *out_threshold = builder->impl->reorder_batch_threshold().value_or(ATTN_NO_REORDER);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_builder_supports_update_block_table(const attn_builder_t* builder,
                                                                int32_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(builder, "builder");
  attn::capi::require(out, "out");
  *out = builder->impl->supports_update_block_table() ? 1 : 0;
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_builder_supports_draft_decode_metadata_update(
    const attn_builder_t* builder, int32_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(builder, "builder");
  attn::capi::require(out, "out");
  *out = builder->impl->supports_draft_decode_metadata_update() ? 1 : 0;
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_min_cudagraph_support(const attn_builder_t* const* builders,
                                                  size_t num_builders,
                                                  int32_t* out_level) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_level, "out_level");
  if (num_builders > 0) attn::capi::require(builders, "builders");
  int32_t level = ATTN_CG_ALWAYS;
  for (size_t i = 0; i < num_builders; ++i) {
    if (builders[i] == nullptr) attn::invalid("builders[", i, "] is NULL");
    const int32_t l = builders[i]->impl->cudagraph_support();
    if (l < level) level = l;
  }
  *out_level = level;
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_use_cascade_attention(const attn_builder_t* builder,
                                                  const attn_cascade_query_t* query,
                                                  int32_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(builder, "builder");
  attn::capi::require(out, "out");
  const attn::CascadeQuery q = attn::capi::to_cascade_query(query);
  *out = builder->impl->use_cascade_attention(q) ? 1 : 0;
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
