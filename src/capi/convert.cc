#include "capi/convert.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "capi/abi_fields_io.h"
#include "core/allocator.h"

namespace attn::capi {
namespace {

// A runtime's allocator callbacks.
class CallbackAllocator final : public Allocator {
 public:
  explicit CallbackAllocator(const attn_allocator_t& a) : a_(a) {}
  void* allocate(size_t bytes, size_t alignment, Device device) override {
    return a_.alloc(a_.user_data, bytes, alignment, attn_device_t{device.type, device.id});
  }
  void deallocate(void* ptr, size_t bytes, Device device) noexcept override {
    a_.free(a_.user_data, ptr, bytes, attn_device_t{device.type, device.id});
  }

 private:
  attn_allocator_t a_;
};

}  // namespace

namespace {

// Largest byte extent of a view libattn accepts: every element offset it computes (row * stride *
// itemsize, base + offset) then fits in int64_t and in the address space without overflow.
constexpr uint64_t kMaxViewBytes = uint64_t{1} << 62;

[[noreturn]] void extent_overflows(const char* name, const Tensor& t, uint64_t byte_offset) {
  std::string shape, strides;
  for (int32_t d = 0; d < t.ndim; ++d) {
    shape += (d ? ", " : "") + std::to_string(t.shape[d]);
    strides += (d ? ", " : "") + std::to_string(t.strides[d]);
  }
  invalid(name, " has shape (", shape, ") and strides (", strides, ") of ", t.dtype.to_string(),
          " at byte_offset=", byte_offset, ": its byte extent overflows (at most 2^62 bytes)");
}

// Converts and checks one view into `out` (in place: a build converts several per call). Refused:
// a bad ndim, a NULL shape, negative sizes or strides, a dtype that is not whole bytes, a view
// whose byte extent (byte_offset + sum over dims of (shape-1)*stride*itemsize + itemsize)
// overflows or wraps the address space, NULL data under a non-empty shape, and data + byte_offset
// misaligned for the element type.
// The views a runtime passes every step: 1-D or 2-D, compact (strides NULL), no byte offset,
// scalar elements of 1, 2, 4 or 8 bytes, fewer than 2^31 entries per dimension, aligned data.
// Such a view passes every check of fill_general_view (the extent bound and the
// address wrap are tested here too), except that an empty view's data is not checked for
// alignment here (nothing is read through it). Returns false (nothing written) for anything else, which
// the general path then checks and names.
bool fill_common_view(const attn_tensor_t* t, Tensor& out) {
  const int32_t nd = t->ndim;
  const uint32_t bits = t->dtype.bits;
  if ((nd != 1 && nd != 2) || t->strides != nullptr || t->byte_offset != 0 ||
      t->dtype.lanes != 1 || (bits != 32 && bits != 64 && bits != 8 && bits != 16) ||
      t->shape == nullptr)
    return false;
  const int64_t rows = t->shape[0], cols = nd == 2 ? t->shape[1] : 1;
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (rows < 0 || cols < 0 || rows >= kLimit || cols >= kLimit) return false;
  const uint64_t item = bits / 8;  // 1, 2, 4 or 8: alignment is a mask, not a division
  const uint64_t bytes = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * item;
  const uintptr_t first = reinterpret_cast<uintptr_t>(t->data);
  if (bytes != 0 && (t->data == nullptr || (first & (item - 1)) != 0 || bytes > kMaxViewBytes ||
                     first + bytes < first))
    return false;
  out.device = Device{t->device.device_type, t->device.device_id};
  out.dtype = DType{t->dtype.code, t->dtype.bits, 1};
  out.ndim = nd;
  // A reused Tensor (fill_optional) keeps no stale dims: dims 1.. cleared with a constant count
  // (plain stores; a count that depended on ndim cost two `rep stos` per view), then dim 1 set.
  for (int32_t d = 1; d < kMaxDims; ++d) {
    out.shape[d] = 0;
    out.strides[d] = 0;
  }
  out.shape[0] = rows;
  out.strides[0] = nd == 2 ? cols : 1;
  if (nd == 2) {
    out.shape[1] = cols;
    out.strides[1] = 1;
  }
  out.data = t->data;
  return true;
}

// Every view fill_common_view does not take: checked and named one by one. Out of line, so that
// the common case (fill_tensor below, inlined into its callers) saves no registers for it.
[[gnu::noinline]] void fill_general_view(const attn_tensor_t* t, const char* name, Tensor& out) {
  if (t->ndim < 0 || t->ndim > kMaxDims)
    invalid(name, " has ndim=", t->ndim, "; libattn accepts 0 to ", kMaxDims, " dimensions");
  if (t->ndim > 0 && t->shape == nullptr) invalid(name, " has ndim=", t->ndim, " but shape=NULL");
  if (t->dtype.bits == 0 || t->dtype.bits % 8 != 0 || t->dtype.lanes == 0)
    invalid(name, " has dtype bits=", int(t->dtype.bits), " lanes=", t->dtype.lanes,
            "; only whole-byte element types are accepted");
  out.device = Device{t->device.device_type, t->device.device_id};
  out.dtype = DType{t->dtype.code, t->dtype.bits, t->dtype.lanes};
  out.ndim = t->ndim;
  for (int32_t d = t->ndim; d < kMaxDims; ++d) {  // a reused Tensor keeps no stale dims
    out.shape[d] = 0;
    out.strides[d] = 0;
  }
  int64_t stride = 1;
  bool empty = false;
  for (int32_t d = 0; d < t->ndim; ++d) empty = empty || t->shape[d] == 0;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    const int64_t size = t->shape[d];
    if (size < 0) invalid(name, " has shape[", d, "]=", size, " (negative)");
    out.shape[d] = size;
    // A view with no elements has no meaningful strides (numpy reports 0 for a (0, W) table's
    // columns): any are accepted and the compact ones stored, so later layout checks pass.
    if (t->strides != nullptr && !empty) {
      if (t->strides[d] < 0)
        invalid(name, " has strides[", d, "]=", t->strides[d], "; negative strides are not supported");
      out.strides[d] = t->strides[d];
    } else {
      out.strides[d] = stride;
    }
    // Overflow check by multiplication (a division here cost ~10% of a small build's ABI time).
    int64_t next = 0;
    if (__builtin_mul_overflow(stride, size, &next) || next > (int64_t{1} << 62))
      invalid(name, " has more elements than libattn can index");
    stride = next;
  }
  // The byte extent: the highest element's offset plus one element, plus byte_offset.
  const uint64_t item = uint64_t{t->dtype.bits} / 8 * t->dtype.lanes;
  uint64_t reach = 0;  // in elements
  if (!empty && t->strides != nullptr) {
    for (int32_t d = 0; d < t->ndim; ++d) {
      uint64_t step = 0;
      if (out.shape[d] > 1 &&
          (__builtin_mul_overflow(static_cast<uint64_t>(out.shape[d] - 1),
                                  static_cast<uint64_t>(out.strides[d]), &step) ||
           __builtin_add_overflow(reach, step, &reach) || reach > kMaxViewBytes))
        extent_overflows(name, out, t->byte_offset);
    }
  } else if (!empty) {
    reach = static_cast<uint64_t>(stride) - 1;
  }
  uint64_t bytes = 0, extent = 0;
  if (!empty && (__builtin_mul_overflow(reach + 1, item, &bytes) ||
                 __builtin_add_overflow(bytes, t->byte_offset, &extent) || extent > kMaxViewBytes))
    extent_overflows(name, out, t->byte_offset);
  if (empty && t->byte_offset > kMaxViewBytes) extent_overflows(name, out, t->byte_offset);
  if (t->data == nullptr) {
    if (!empty) invalid(name, " has data=NULL and ", stride, " elements");
    out.data = nullptr;
    return;
  }
  const uintptr_t first = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  uintptr_t last = 0;
  if (first < reinterpret_cast<uintptr_t>(t->data) || __builtin_add_overflow(first, bytes, &last))
    invalid(name, " has data=", t->data, " and byte_offset=", t->byte_offset,
            ": its bytes wrap around the address space");
  // Element alignment: a scalar type's own size (a power of two up to 16 bytes).
  const uint64_t align = uint64_t{t->dtype.bits} / 8;
  if ((align & (align - 1)) == 0 && align <= 16 && first % align != 0)
    invalid(name, " has data=", t->data, " + byte_offset=", t->byte_offset,
            " misaligned for ", out.dtype.to_string(), " (", align, "-byte elements)");
  out.data = reinterpret_cast<void*>(first);
}

inline void fill_tensor(const attn_tensor_t* t, const char* name, Tensor& out) {
  if (!fill_common_view(t, out)) fill_general_view(t, name, out);
}

}  // namespace

void fill_optional(const attn_tensor_t* t, const char* name, std::optional<Tensor>& out) {
  if (t == nullptr) {
    out.reset();
    return;
  }
  // An engaged optional (attn_build's batch, kept in the builder) is refilled in place: emplace()
  // would zero all 168 bytes first (a `rep stos` per view, issue 18).
  fill_tensor(t, name, out ? *out : out.emplace());
}

std::optional<Tensor> to_tensor(const attn_tensor_t* t, const char* name) {
  std::optional<Tensor> out;
  fill_optional(t, name, out);
  return out;
}

Tensor to_required_tensor(const attn_tensor_t* t, const char* name) {
  if (t == nullptr) invalid(name, " is NULL");
  return *to_tensor(t, name);
}

KvCacheSpec to_spec(const attn_kv_cache_spec_t* spec) {
  const attn_kv_cache_spec_t defaults = ATTN_KV_CACHE_SPEC_INIT;
  const attn_kv_cache_spec_t in = read_struct(spec, defaults, kKvCacheSpecSizes, "kv_cache_spec");
  KvCacheSpec out;
#define ATTN_FIELD_PREFIX "kv_cache_spec"
  ATTN_KV_CACHE_SPEC_FIELDS(ATTN_READ_FIELD)
#undef ATTN_FIELD_PREFIX
  validate(out);
  return out;
}

std::vector<PerLayerParams> to_layers(const attn_per_layer_params_t* layers, size_t num_layers,
                                      const char* name) {
  std::vector<PerLayerParams> out;
  if (num_layers == 0) return out;
  if (layers == nullptr) invalid(name, " is NULL but its count is ", num_layers);
  if (num_layers > 65536) invalid(name, " has ", num_layers, " entries; libattn's limit is 65536");
  const attn_per_layer_params_t defaults = ATTN_PER_LAYER_PARAMS_INIT;
  out.reserve(num_layers);
  for (size_t i = 0; i < num_layers; ++i) {
    const auto* entry = array_element(layers, i, kPerLayerParamsSizeV1, name);
    const attn_per_layer_params_t p = read_struct(entry, defaults, kPerLayerParamsSizeV1, name);
    if (p.extension != nullptr) invalid(name, "[", i, "].extension must be NULL");
    PerLayerParams q;
    q.window_left = p.window_left;
    if (p.has_logits_soft_cap) q.logits_soft_cap = p.logits_soft_cap;
    q.sm_scale = p.sm_scale;
    q.has_sinks = p.has_sinks != 0;
    if (q.window_left < -1) invalid(name, "[", i, "].window_left=", q.window_left, " is below -1");
    out.push_back(q);
  }
  return out;
}

BuilderConfig to_config(const attn_builder_config_t* config, const KvCacheSpec& spec) {
  const attn_builder_config_t defaults = ATTN_BUILDER_CONFIG_INIT;
  const attn_builder_config_t in = read_struct(config, defaults, kBuilderConfigSizes, "config");
  BuilderConfig out;
#define ATTN_FIELD_PREFIX "config"
  ATTN_BUILDER_CONFIG_FIELDS(ATTN_READ_FIELD)
#undef ATTN_FIELD_PREFIX
  // The SPECIAL rows.
  out.device = Device{in.device.device_type, in.device.device_id};
  if (in.validate != ATTN_VALIDATE_HOST && in.validate != ATTN_VALIDATE_FULL &&
      in.validate != ATTN_VALIDATE_TRUSTED)
    invalid("config->validate=", in.validate,
            " is not ATTN_VALIDATE_HOST (0), ATTN_VALIDATE_FULL (1) or ATTN_VALIDATE_TRUSTED (2)");
  out.validate_full = in.validate == ATTN_VALIDATE_FULL;
  out.validate_trusted = in.validate == ATTN_VALIDATE_TRUSTED;  // ABI 1.7
  out.layers = to_layers(in.layers, in.num_layers, "config->layers");
  if (in.allocator != nullptr) {
    const attn_allocator_t a_defaults = ATTN_ALLOCATOR_INIT;
    const attn_allocator_t a =
        read_struct(in.allocator, a_defaults, kAllocatorSizeV1, "config->allocator");
    check_extension(a.extension, "config->allocator->extension");
    if (a.alloc == nullptr) invalid("config->allocator->alloc is NULL");
    if (a.free == nullptr) invalid("config->allocator->free is NULL");
    out.allocator = std::make_shared<CallbackAllocator>(a);
  }
  out.workspace = in.workspace;
  out.workspace_size = in.workspace_size;
  if (in.num_cudagraph_capture_sizes > 0) {  // ABI 1.1
    if (in.cudagraph_capture_sizes == nullptr)
      invalid("config->cudagraph_capture_sizes is NULL but config->num_cudagraph_capture_sizes=",
              in.num_cudagraph_capture_sizes);
    if (in.num_cudagraph_capture_sizes > 65536)
      invalid("config->num_cudagraph_capture_sizes=", in.num_cudagraph_capture_sizes,
              " exceeds libattn's limit of 65536");
    out.cudagraph_capture_sizes.assign(in.cudagraph_capture_sizes,
                                       in.cudagraph_capture_sizes + in.num_cudagraph_capture_sizes);
  }
  if (in.speculative_token_tree != nullptr) {
    const size_t n = strnlen(in.speculative_token_tree, 1 << 20);
    if (n == (1 << 20)) invalid("config->speculative_token_tree is longer than 1 MiB");
    out.speculative_token_tree = std::string(in.speculative_token_tree, n);
  }
  static_assert(static_cast<int>(ATTN_SPARSE_INDEXER_TOPK_DEEP_SELECT) ==
                        static_cast<int>(kSparseIndexerTopkDeepSelect) &&
                    static_cast<int>(ATTN_SPARSE_INDEXER_TOPK_AITER) ==
                        static_cast<int>(kSparseIndexerTopkAiter),
                "kSparseIndexerTopk* follow the ABI's numbering");
  validate(out, spec);
  return out;
}

CommonMetadata to_common(const attn_common_metadata_t* common) {
  CommonMetadata m;
  fill_common(common, m);
  return m;
}

void fill_common(const attn_common_metadata_t* common, CommonMetadata& out) {
  // A caller of this header version (or a newer one) is read in place; an older one's struct
  // is copied over the defaults first (issue 18: the two 272-byte copies were ~10% of an O(1)
  // build).
  if (common == nullptr) invalid("common is NULL");
  attn_common_metadata_t copy;
  const attn_common_metadata_t* c = common;
  if (common->struct_size < sizeof(attn_common_metadata_t)) {
    const attn_common_metadata_t defaults = ATTN_COMMON_METADATA_INIT;
    copy = read_struct(common, defaults, kCommonMetadataSizes, "common");
    c = &copy;
  }
  const attn_common_metadata_t& in = *c;
  // what validate() derives
  out.qsl_host = nullptr;
  out.seq_lens_host = nullptr;
  out.seq_lens_host_exact = false;
  out.host_max_seq_len = -1;
  out.batch_max_seq_len = -1;
  out.dcp_local_seq_lens_host = nullptr;
  TensorRows tensor_rows;
#define ATTN_FIELD_PREFIX "common"
  ATTN_COMMON_METADATA_FIELDS(ATTN_READ_FIELD)
#undef ATTN_FIELD_PREFIX
}

CascadeQuery to_cascade_query(const attn_cascade_query_t* query) {
  const attn_cascade_query_t defaults = ATTN_CASCADE_QUERY_INIT;
  const attn_cascade_query_t q = read_struct(query, defaults, kCascadeQuerySizeV1, "query");
  check_extension(q.extension, "query->extension");
  if (q.common_prefix_len < 0)
    invalid("query->common_prefix_len=", q.common_prefix_len, " is negative");
  if (q.num_reqs < 0) invalid("query->num_reqs=", q.num_reqs, " is negative");
  if (q.common_prefix_len > (int64_t{1} << 31) - 1)
    invalid("query->common_prefix_len=", q.common_prefix_len, " exceeds 2^31-1");
  if (q.num_reqs > (int64_t{1} << 31) - 1) invalid("query->num_reqs=", q.num_reqs, " exceeds 2^31-1");
  if (q.num_reqs > 0 && q.query_lens == nullptr)
    invalid("query->query_lens is NULL but query->num_reqs=", q.num_reqs);
  if (q.num_query_heads <= 0)
    invalid("query->num_query_heads=", q.num_query_heads, " must be positive");
  if (q.num_kv_heads <= 0) invalid("query->num_kv_heads=", q.num_kv_heads, " must be positive");
  if (q.num_sms <= 0) invalid("query->num_sms=", q.num_sms, " must be positive");
  if (q.dcp_world_size <= 0)
    invalid("query->dcp_world_size=", q.dcp_world_size, " must be positive");
  CascadeQuery c;
  c.common_prefix_len = q.common_prefix_len;
  c.query_lens = q.query_lens;
  c.num_reqs = q.num_reqs;
  c.num_query_heads = q.num_query_heads;
  c.num_kv_heads = q.num_kv_heads;
  c.use_alibi = q.use_alibi != 0;
  c.use_sliding_window = q.use_sliding_window != 0;
  c.use_local_attention = q.use_local_attention != 0;
  c.num_sms = q.num_sms;
  c.dcp_world_size = q.dcp_world_size;
  return c;
}

attn_kv_cache_spec_t from_spec(const KvCacheSpec& in) {
  attn_kv_cache_spec_t out = ATTN_KV_CACHE_SPEC_INIT;
  ATTN_KV_CACHE_SPEC_FIELDS(ATTN_WRITE_FIELD)
  return out;
}

attn_builder_config_t from_config(const BuilderConfig& in,
                                  std::vector<attn_per_layer_params_t>& layer_storage) {
  attn_builder_config_t out = ATTN_BUILDER_CONFIG_INIT;
  ATTN_BUILDER_CONFIG_FIELDS(ATTN_WRITE_FIELD)
  // The SPECIAL rows (no allocator, no workspace: they are the library's).
  out.device = attn_device_t{in.device.type, in.device.id};
  out.validate = in.validate_full      ? ATTN_VALIDATE_FULL
                 : in.validate_trusted ? ATTN_VALIDATE_TRUSTED
                                       : ATTN_VALIDATE_HOST;
  out.cudagraph_capture_sizes =
      in.cudagraph_capture_sizes.empty() ? nullptr : in.cudagraph_capture_sizes.data();
  out.num_cudagraph_capture_sizes = in.cudagraph_capture_sizes.size();
  out.speculative_token_tree =
      in.speculative_token_tree ? in.speculative_token_tree->c_str() : nullptr;
  layer_storage.clear();
  for (const PerLayerParams& p : in.layers) {
    attn_per_layer_params_t q = ATTN_PER_LAYER_PARAMS_INIT;
    q.window_left = p.window_left;
    q.has_logits_soft_cap = p.logits_soft_cap.has_value();
    q.logits_soft_cap = p.logits_soft_cap.value_or(0.0);
    q.sm_scale = p.sm_scale;
    q.has_sinks = p.has_sinks;
    layer_storage.push_back(q);
  }
  out.layers = layer_storage.empty() ? nullptr : layer_storage.data();
  out.num_layers = layer_storage.size();
  return out;
}

attn_tensor_t from_tensor(const Tensor& t) {
  attn_tensor_t v{};
  v.data = t.data;
  v.device = attn_device_t{t.device.type, t.device.id};
  v.ndim = t.ndim;
  v.dtype = attn_dtype_t{t.dtype.code, t.dtype.bits, t.dtype.lanes};
  v.shape = const_cast<int64_t*>(t.shape);
  v.strides = const_cast<int64_t*>(t.strides);
  v.byte_offset = 0;
  return v;
}

}  // namespace attn::capi
