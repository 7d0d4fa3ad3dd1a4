// The rows of core/abi_fields.h as conversions between an ABI struct and its core struct.
//
// ATTN_READ_FIELD (ABI -> core) expands a row to a statement that reads `in.<name>` (an ABI
// struct) into `out.<name>` (its core struct), naming the field ATTN_FIELD_PREFIX "-><name>" in
// errors; ATTN_WRITE_FIELD (core -> ABI, for plugins) writes `in.<name>` into `out.<name>`, a
// tensor through `view(<optional Tensor>)` (a function the caller has in scope). SIZE, EXT,
// RESERVED, REMOVED and SPECIAL rows write nothing (the *_INIT value stays); SPECIAL rows read
// nothing (the caller converts them by hand). Use:
//
//   #define ATTN_FIELD_PREFIX "config"
//   ATTN_BUILDER_CONFIG_FIELDS(ATTN_READ_FIELD)
//   #undef ATTN_FIELD_PREFIX
#pragma once

#include <cstdint>
#include <optional>

#include "attn_c.h"
#include "core/abi_fields.h"
#include "core/error.h"
#include "core/tensor.h"

namespace attn::capi {

/// A view the caller passed, checked and converted into `out` (capi/convert.cc).
void fill_optional(const attn_tensor_t* t, const char* name, std::optional<Tensor>& out);

/// The tensor rows of one struct in order: a view equal to the previous row's (a host batch
/// passes the same view as a tensor and its host mirror, which sit side by side) is converted
/// once.
struct TensorRows {
  const attn_tensor_t* prev_in = nullptr;
  const std::optional<Tensor>* prev_out = nullptr;

  void read(const attn_tensor_t* t, const char* name, std::optional<Tensor>& out) {
    if (t != nullptr && t == prev_in)
      out = *prev_out;
    else
      fill_optional(t, name, out);
    prev_in = t;
    prev_out = &out;
  }
};

inline void check_extension(const void* ext, const char* name) {
  if (ext != nullptr) invalid(name, "=", ext, " must be NULL in this ABI version");
}

inline void check_reserved(int32_t value, const char* name) {
  if (value != 0) invalid(name, "=", value, " must be 0");
}

/// A vLLM 0.13 attention_config flag vLLM 0.33's AttentionConfig refuses (unexpected keyword
/// argument): its MLA prefill backend is mla_prefill_backend (ABI 1.7).
inline void check_removed(int32_t value, const char* prefix, const char* field) {
  if (value != 0)
    invalid(prefix, "->", field, "=", value, ": attention_config.", field,
            " was removed in vLLM 0.33 (choose the MLA prefill backend with "
            "config->mla_prefill_backend)");
}

}  // namespace attn::capi

#define ATTN_READ_FIELD(kind, ...) ATTN_READ_##kind(__VA_ARGS__)
#define ATTN_READ_SIZE(name)
#define ATTN_READ_SPECIAL(name)
#define ATTN_READ_EXT(name) ::attn::capi::check_extension(in.name, ATTN_FIELD_PREFIX "->" #name);
#define ATTN_READ_RESERVED(name) \
  ::attn::capi::check_reserved(in.name, ATTN_FIELD_PREFIX "->" #name);
#define ATTN_READ_REMOVED(name) ::attn::capi::check_removed(in.name, ATTN_FIELD_PREFIX, #name);
#define ATTN_READ_I32(name, value) out.name = in.name;
#define ATTN_READ_I32Z(name, value) out.name = in.name == 0 ? (value) : in.name;
#define ATTN_READ_I64(name, value) out.name = in.name;
#define ATTN_READ_BOOL(name, value) out.name = in.name != 0;
#define ATTN_READ_OPT_I64(name) out.name = in.name;
#define ATTN_READ_TENSOR(name, dtype, rows, unpadded) \
  tensor_rows.read(in.name, ATTN_FIELD_PREFIX "->" #name, out.name);

#define ATTN_WRITE_FIELD(kind, ...) ATTN_WRITE_##kind(__VA_ARGS__)
#define ATTN_WRITE_SIZE(name)
#define ATTN_WRITE_SPECIAL(name)
#define ATTN_WRITE_EXT(name)
#define ATTN_WRITE_RESERVED(name)
#define ATTN_WRITE_REMOVED(name)
#define ATTN_WRITE_I32(name, value) out.name = in.name;
#define ATTN_WRITE_I32Z(name, value) out.name = in.name;
#define ATTN_WRITE_I64(name, value) out.name = in.name;
#define ATTN_WRITE_BOOL(name, value) out.name = in.name ? 1 : 0;
#define ATTN_WRITE_OPT_I64(name) out.name = in.name;
#define ATTN_WRITE_TENSOR(name, dtype, rows, unpadded) out.name = view(in.name);
