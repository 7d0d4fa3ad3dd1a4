// Metadata accessors, clones and the "common" view.
#include <memory>

#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "capi/handles.h"
#include "capi/owned_metadata.h"
#include "core/abi_fields.h"
#include "core/common_metadata.h"

namespace {

attn_field_t describe(const attn_metadata_t* m, size_t i) {
  const attn::Field& f = m->core->field(i);
  attn_field_t out = ATTN_FIELD_INIT;
  out.name = f.name.c_str();
  out.kind = static_cast<int32_t>(f.kind);
  switch (f.kind) {
    case attn::FieldKind::kTensor:
      out.tensor = m->view(i);
      break;
    case attn::FieldKind::kInt:
    case attn::FieldKind::kBool:
      out.int_value = f.int_value;
      break;
    case attn::FieldKind::kFloat:
      out.float_value = f.float_value;
      break;
    case attn::FieldKind::kNone:
      break;
  }
  return out;
}

size_t index_by_name(const attn_metadata_t* m, const char* name) {
  attn::capi::require(name, "name");
  if (auto i = m->core->find(name)) return *i;
  attn::fail(attn::Status::kNotFound, "metadata of kind '", m->core->kind(), "' has no field '",
             name, "'");
}

}  // namespace

namespace attn::capi {

void write_common(const attn_metadata_t* metadata, attn_common_metadata_t* out, const char* name) {
  require(metadata, "metadata");
  require(out, name);
  metadata = live(metadata, "metadata");
  const Metadata& m = *metadata->core;
  if (m.kind() != "common") invalid("metadata of kind '", m.kind(), "' is not of kind 'common'");
  auto tensor = [&](size_t i) -> const attn_tensor_t* {
    return m.field(i).kind == FieldKind::kTensor ? metadata->view(i) : nullptr;
  };
  auto integer = [&](size_t i) { return m.field(i).int_value; };
  attn_common_metadata_t c = ATTN_COMMON_METADATA_INIT;
  size_t i = 0;  // the order of common_field_names(): the rows of core/abi_fields.h
#define TO_ABI(kind, ...) TO_ABI_##kind(__VA_ARGS__)
#define TO_ABI_SIZE(name)
#define TO_ABI_EXT(name)
#define TO_ABI_I64(name, value) c.name = integer(i++);
#define TO_ABI_BOOL(name, value) c.name = static_cast<int32_t>(integer(i++));
#define TO_ABI_OPT_I64(name)                                               \
  c.name = m.field(i).kind == FieldKind::kInt ? integer(i) : int64_t{-1}; \
  ++i;
#define TO_ABI_TENSOR(name, ...) c.name = tensor(i++);
  ATTN_COMMON_METADATA_FIELDS(TO_ABI)
#undef TO_ABI
  if (i != m.size())  // this list and common_field_names() must name the same fields
    fail(Status::kInternal, "attn_metadata_to_common read ", i, " of the ", m.size(),
         " fields of 'common'");
  write_struct(out, c, kCommonMetadataSizes, name);
}

}  // namespace attn::capi

extern "C" {

ATTN_API const char* attn_metadata_kind(const attn_metadata_t* metadata) noexcept {
  // A stale ticket still names its builder's kind and field count (they never change).
  return metadata == nullptr ? "" : metadata->body->core->kind().c_str();
}

ATTN_API size_t attn_metadata_field_count(const attn_metadata_t* metadata) noexcept {
  return metadata == nullptr ? 0 : metadata->body->core->size();
}

ATTN_API attn_error_t* attn_metadata_field(const attn_metadata_t* metadata, size_t index,
                                           attn_field_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(metadata, "metadata");
  attn::capi::require(out, "out");
  metadata = attn::capi::live(metadata, "metadata");
  if (index >= metadata->core->size())
    attn::fail(attn::Status::kNotFound, "field index ", index, " is out of range (metadata of kind '",
               metadata->core->kind(), "' has ", metadata->core->size(), " fields)");
  attn::capi::write_struct(out, describe(metadata, index), attn::capi::kFieldSizeV1, "out");
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_metadata_get(const attn_metadata_t* metadata, const char* name,
                                         attn_field_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(metadata, "metadata");
  attn::capi::require(out, "out");
  metadata = attn::capi::live(metadata, "metadata");
  const size_t i = index_by_name(metadata, name);
  attn::capi::write_struct(out, describe(metadata, i), attn::capi::kFieldSizeV1, "out");
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_metadata_get_tensor(const attn_metadata_t* metadata,
                                                const char* name,
                                                const attn_tensor_t** out) noexcept {
  ATTN_API_TRY
  attn::capi::require(metadata, "metadata");
  attn::capi::require(out, "out");
  metadata = attn::capi::live(metadata, "metadata");
  const size_t i = index_by_name(metadata, name);
  const attn::Field& f = metadata->core->field(i);
  if (f.kind == attn::FieldKind::kNone) {
    *out = nullptr;
  } else if (f.kind == attn::FieldKind::kTensor) {
    *out = metadata->view(i);
  } else {
    attn::invalid("field '", name, "' of '", metadata->core->kind(), "' is a scalar, not a tensor");
  }
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_metadata_get_int(const attn_metadata_t* metadata, const char* name,
                                             int64_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(metadata, "metadata");
  attn::capi::require(out, "out");
  metadata = attn::capi::live(metadata, "metadata");
  const size_t i = index_by_name(metadata, name);
  const attn::Field& f = metadata->core->field(i);
  if (f.kind != attn::FieldKind::kInt && f.kind != attn::FieldKind::kBool)
    attn::invalid("field '", name, "' of '", metadata->core->kind(), "' is ",
                  f.kind == attn::FieldKind::kNone     ? "None"
                  : f.kind == attn::FieldKind::kTensor ? "a tensor"
                                                       : "a float",
                  ", not an integer");
  *out = f.int_value;
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_metadata_clone(const attn_metadata_t* metadata,
                                           attn_metadata_t** out) noexcept {
  ATTN_API_TRY
  attn::capi::require(metadata, "metadata");
  attn::capi::require(out, "out");
  metadata = attn::capi::live(metadata, "metadata");
  auto handle = std::make_unique<attn_metadata>();
  handle->owned = std::make_unique<attn::Metadata>(metadata->core->clone());
  handle->core = handle->owned.get();
  handle->reset_views();
  *out = handle.release();
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API void attn_metadata_destroy(attn_metadata_t* metadata) noexcept {
  if (metadata == nullptr || metadata->builder_owned) return;
  if (!attn::capi::recycle_common(metadata)) delete metadata;
}

ATTN_API attn_error_t* attn_metadata_to_common(const attn_metadata_t* metadata,
                                               attn_common_metadata_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::write_common(metadata, out, "out");
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
