// ABI structs and views -> core types, honouring struct_size: the library reads the fields that
// fit in the caller's struct_size and takes the *_INIT default for the rest. Every failure is an
// Error(kInvalidArgument) naming the argument.
#pragma once

#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "attn_c.h"
#include "core/builder.h"
#include "core/builder_config.h"
#include "core/common_metadata.h"
#include "core/error.h"
#include "core/kv_cache_spec.h"
#include "core/per_layer_params.h"
#include "core/tensor.h"

namespace attn::capi {

/// The sizes of the structs that have not grown since ABI 1.0: the smallest struct_size each
/// accepts. They never change when fields are appended (the ATTN_*_STRUCT_SIZE macros grow).
inline constexpr size_t kPerLayerParamsSizeV1 = ATTN_PER_LAYER_PARAMS_STRUCT_SIZE;
inline constexpr size_t kAllocatorSizeV1 = ATTN_ALLOCATOR_STRUCT_SIZE;
inline constexpr size_t kCascadeQuerySizeV1 = ATTN_CASCADE_QUERY_STRUCT_SIZE;
inline constexpr size_t kFieldSizeV1 = ATTN_FIELD_STRUCT_SIZE;
inline constexpr size_t kPluginBackendSizeV1 = ATTN_PLUGIN_BACKEND_STRUCT_SIZE;
inline constexpr size_t kPluginTableSizeV1 = ATTN_PLUGIN_TABLE_STRUCT_SIZE;

/// Every released size of a struct that grew, oldest first (the first is the smallest accepted).
/// A minor version that appends fields to one of them adds its predecessor's size here.
inline constexpr size_t kBuilderConfigSizes[] = {ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0,
                                                 ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_1,
                                                 ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_2,
                                                 ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_4,
                                                 ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_6};
inline constexpr size_t kCommonMetadataSizes[] = {ATTN_COMMON_METADATA_STRUCT_SIZE_1_0,
                                                  ATTN_COMMON_METADATA_STRUCT_SIZE_1_1,
                                                  ATTN_COMMON_METADATA_STRUCT_SIZE_1_3,
                                                  ATTN_COMMON_METADATA_STRUCT_SIZE_1_6};
inline constexpr size_t kKvCacheSpecSizes[] = {ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_0,
                                               ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_2,
                                               ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_6};

/// A struct_size a caller can have: the size of one released ABI version of the struct
/// (`released`, oldest first), this header's sizeof(T), or larger (a newer header). A size in
/// between would cut a field in half.
template <class T, size_t N>
void check_struct_size(size_t size, const size_t (&released)[N], const char* name) {
  if (size < released[0])
    invalid(name, "->struct_size=", size, " is smaller than ", released[0],
            ", the size of the first ABI version (fill it with its *_INIT macro)");
  if (size >= sizeof(T)) return;
  for (size_t v : released)
    if (size == v) return;
  std::string sizes;
  for (size_t v : released) sizes += std::to_string(v) + ", ";
  invalid(name, "->struct_size=", size, " is not the size of an ABI version of this struct (",
          sizes, "or ", sizeof(T), " for this version; fill it with its *_INIT macro)");
}

/// The same for a struct that has kept its 1.0 size so far.
template <class T>
void check_struct_size(size_t size, size_t min_size, const char* name) {
  const size_t released[] = {min_size};
  check_struct_size<T>(size, released, name);
}

/// Copies a caller-filled struct over `defaults` up to the caller's struct_size (`sizes`: the
/// 1.0 size, or the array of released sizes).
template <class T, class Sizes>
T read_struct(const T* in, const T& defaults, const Sizes& sizes, const char* name) {
  if (in == nullptr) invalid(name, " is NULL");
  check_struct_size<T>(in->struct_size, sizes, name);
  T out = defaults;
  std::memcpy(static_cast<void*>(&out), in, in->struct_size < sizeof(T) ? in->struct_size : sizeof(T));
  out.struct_size = sizeof(T);
  return out;
}

/// Writes a library-filled struct back, no more than the caller's struct_size.
template <class T, class Sizes>
void write_struct(T* out, const T& value, const Sizes& sizes, const char* name) {
  if (out == nullptr) invalid(name, " is NULL");
  const size_t size = out->struct_size;
  check_struct_size<T>(size, sizes, name);
  std::memcpy(static_cast<void*>(out), &value, size < sizeof(T) ? size : sizeof(T));
  out->struct_size = size;
}

/// Element i of an array of versioned structs whose stride is the first element's struct_size
/// (each element must carry the same struct_size). The stride must be a published size of the
/// struct: `min_size` (its first ABI version) or this header's sizeof(T); any other value would
/// step outside the caller's array (an element of a newer header than this library's is refused
/// too: such a caller needs a library at least as new, ATTN_CHECK_VERSION).
template <class T>
const T* array_element(const T* base, size_t i, size_t min_size, const char* name) {
  const size_t stride = base[0].struct_size;
  if (stride != min_size && stride != sizeof(T))
    invalid(name, "[0].struct_size=", stride, " is not a published size of this struct (", min_size,
            min_size != sizeof(T) ? " or " + std::to_string(sizeof(T)) : std::string(),
            "; fill each element with its *_INIT macro)");
  const T* e = reinterpret_cast<const T*>(reinterpret_cast<const char*>(base) + i * stride);
  if (e->struct_size != stride)
    invalid(name, "[", i, "].struct_size=", e->struct_size, " differs from ", name,
            "[0].struct_size=", stride);
  return e;
}
template <class T>
T* array_element(T* base, size_t i, size_t min_size, const char* name) {
  return const_cast<T*>(array_element(static_cast<const T*>(base), i, min_size, name));
}

inline constexpr size_t kBatchSplitSizeV1 = ATTN_BATCH_SPLIT_STRUCT_SIZE;
inline constexpr size_t kSlotMappingArgsSizeV1 = ATTN_SLOT_MAPPING_ARGS_STRUCT_SIZE;
inline constexpr size_t kSplitOptionsSizeV1 = ATTN_SPLIT_OPTIONS_STRUCT_SIZE;  // ABI 1.4
inline constexpr size_t kConv1dInfoSizeV1 = ATTN_CONV1D_INFO_STRUCT_SIZE;
inline constexpr size_t kLocalAttentionOutSizeV1 = ATTN_LOCAL_ATTENTION_OUT_STRUCT_SIZE;
inline constexpr size_t kUbatchSliceSizeV1 = ATTN_UBATCH_SLICE_STRUCT_SIZE;
inline constexpr size_t kUbatchOutSizeV1 = ATTN_UBATCH_OUT_STRUCT_SIZE;

/// A borrowed view; nullopt for NULL. Checks ndim (0..8), shape and strides.
std::optional<Tensor> to_tensor(const attn_tensor_t* t, const char* name);
/// As to_tensor, NULL refused.
Tensor to_required_tensor(const attn_tensor_t* t, const char* name);

KvCacheSpec to_spec(const attn_kv_cache_spec_t* spec);
/// Reads the config (layers, allocator, workspace) and validates it against the spec.
BuilderConfig to_config(const attn_builder_config_t* config, const KvCacheSpec& spec);
std::vector<PerLayerParams> to_layers(const attn_per_layer_params_t* layers, size_t num_layers,
                                      const char* name);
CommonMetadata to_common(const attn_common_metadata_t* common);
/// to_common into an existing object (every field assigned, the derived ones reset).
void fill_common(const attn_common_metadata_t* common, CommonMetadata& out);
CascadeQuery to_cascade_query(const attn_cascade_query_t* query);

/// Core -> ABI, for plugins (they see the config without allocator and workspace).
attn_kv_cache_spec_t from_spec(const KvCacheSpec& spec);
attn_builder_config_t from_config(const BuilderConfig& config,
                                  std::vector<attn_per_layer_params_t>& layer_storage);
attn_tensor_t from_tensor(const Tensor& t);

}  // namespace attn::capi
