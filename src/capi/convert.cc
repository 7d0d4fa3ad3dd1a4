#include "capi/convert.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

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

void no_extension(const void* ext, const char* name) {
  if (ext != nullptr) invalid(name, "->extension=", ext, " must be NULL in this ABI version");
}

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
// Such a view passes every check of fill_tensor's general path (the extent bound and the
// address wrap are tested here too). Returns false (nothing written) for anything else, which
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
  const uint64_t bytes = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * (bits / 8);
  const uintptr_t first = reinterpret_cast<uintptr_t>(t->data);
  if (bytes != 0 && (t->data == nullptr || first % (bits / 8) != 0 || bytes > kMaxViewBytes ||
                     first + bytes < first))
    return false;
  out.device = Device{t->device.device_type, t->device.device_id};
  out.dtype = DType{t->dtype.code, t->dtype.bits, 1};
  out.ndim = nd;
  out.shape[0] = rows;
  out.strides[0] = cols;
  if (nd == 2) {
    out.shape[1] = cols;
    out.strides[1] = 1;
  } else {
    out.strides[0] = 1;
  }
  for (int32_t d = nd; d < kMaxDims; ++d) {  // a reused Tensor (fill_optional) keeps no stale dims
    out.shape[d] = 0;
    out.strides[d] = 0;
  }
  out.data = t->data;
  return true;
}

void fill_tensor(const attn_tensor_t* t, const char* name, Tensor& out) {
  if (fill_common_view(t, out)) return;
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

void fill_optional(const attn_tensor_t* t, const char* name, std::optional<Tensor>& out) {
  if (t == nullptr) {
    out.reset();
    return;
  }
  // An engaged optional (attn_build's batch, kept in the builder) is refilled in place: emplace()
  // would zero all 168 bytes first (a `rep stos` per view, issue 18).
  fill_tensor(t, name, out ? *out : out.emplace());
}

}  // namespace

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
  const attn_kv_cache_spec_t s = read_struct(spec, defaults, kKvCacheSpecSizes, "kv_cache_spec");
  no_extension(s.extension, "kv_cache_spec");
  KvCacheSpec k;
  k.kind = s.kind;
  k.block_size = s.block_size;
  k.num_kv_heads = s.num_kv_heads;
  k.head_size = s.head_size;
  k.dtype = s.dtype;
  k.sliding_window = s.sliding_window;
  k.attention_chunk_size = s.attention_chunk_size;
  // ABI 1.2 (the INIT defaults when the caller's struct_size stops at 1.0/1.1)
  k.mamba_type = s.mamba_type;
  k.mamba_chunk_size = s.mamba_chunk_size;
  k.mamba_cache_mode = s.mamba_cache_mode;
  k.num_speculative_blocks = s.num_speculative_blocks;
  // ABI 1.6
  k.num_prefill_checkpoint_blocks = s.num_prefill_checkpoint_blocks;
  k.prefill_checkpoint_alignment = s.prefill_checkpoint_alignment;
  k.mamba_replayssm_ngroups = s.mamba_replayssm_ngroups;
  k.mamba_num_heads = s.mamba_num_heads;
  // ABI 1.7
  k.index_topk = s.index_topk;
  k.topk_buffer_width = s.topk_buffer_width;
  // ABI 1.7 (attention variants)
  k.sink_len = s.sink_len;
  k.head_size_v = s.head_size_v;
  // ABI 1.7 (DeepSeek V4 sparse MLA)
  k.tokens_per_state = s.tokens_per_state;
  k.reserved_1_7 = s.reserved_1_7;
  validate(k);
  return k;
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
  const attn_builder_config_t c = read_struct(config, defaults, kBuilderConfigSizes, "config");
  no_extension(c.extension, "config");
  BuilderConfig b;
  b.device = Device{c.device.device_type, c.device.device_id};
  b.max_num_seqs = c.max_num_seqs;
  b.max_num_batched_tokens = c.max_num_batched_tokens;
  b.max_model_len = c.max_model_len;
  b.num_attention_heads = c.num_attention_heads;
  b.num_speculative_tokens = c.num_speculative_tokens;
  b.parallel_drafting = c.parallel_drafting != 0;
  b.decode_context_parallel_size = c.decode_context_parallel_size;
  b.dcp_rank = c.dcp_rank;
  b.cp_kv_cache_interleave_size = c.cp_kv_cache_interleave_size;
  b.cudagraph_mode = c.cudagraph_mode;
  b.max_cudagraph_capture_size = c.max_cudagraph_capture_size;
  b.cache_dtype = c.cache_dtype;
  b.attn_type = c.attn_type;
  b.device_capability = c.device_capability;
  b.flash_attn_version = c.flash_attn_version;
  b.flash_attn_max_num_splits_for_cuda_graph = c.flash_attn_max_num_splits_for_cuda_graph;
  b.batch_invariant = c.batch_invariant != 0;
  if (c.validate != ATTN_VALIDATE_HOST && c.validate != ATTN_VALIDATE_FULL &&
      c.validate != ATTN_VALIDATE_TRUSTED)
    invalid("config->validate=", c.validate,
            " is not ATTN_VALIDATE_HOST (0), ATTN_VALIDATE_FULL (1) or ATTN_VALIDATE_TRUSTED (2)");
  b.validate_full = c.validate == ATTN_VALIDATE_FULL;
  b.validate_trusted = c.validate == ATTN_VALIDATE_TRUSTED;  // ABI 1.7
  b.layers = to_layers(c.layers, c.num_layers, "config->layers");
  if (c.allocator != nullptr) {
    const attn_allocator_t a_defaults = ATTN_ALLOCATOR_INIT;
    const attn_allocator_t a =
        read_struct(c.allocator, a_defaults, kAllocatorSizeV1, "config->allocator");
    no_extension(a.extension, "config->allocator");
    if (a.alloc == nullptr) invalid("config->allocator->alloc is NULL");
    if (a.free == nullptr) invalid("config->allocator->free is NULL");
    b.allocator = std::make_shared<CallbackAllocator>(a);
  }
  b.workspace = c.workspace;
  b.workspace_size = c.workspace_size;
  // ABI 1.1 (defaults when the caller's struct_size stops at 1.0)
  b.model_dtype = c.model_dtype;
  b.use_trtllm_attention = c.use_trtllm_attention;
  b.kv_transfer_enabled = c.kv_transfer_enabled != 0;
  b.disable_flashinfer_q_quantization = c.disable_flashinfer_q_quantization != 0;
  if (c.num_cudagraph_capture_sizes > 0) {
    if (c.cudagraph_capture_sizes == nullptr)
      invalid("config->cudagraph_capture_sizes is NULL but config->num_cudagraph_capture_sizes=",
              c.num_cudagraph_capture_sizes);
    if (c.num_cudagraph_capture_sizes > 65536)
      invalid("config->num_cudagraph_capture_sizes=", c.num_cudagraph_capture_sizes,
              " exceeds libattn's limit of 65536");
    b.cudagraph_capture_sizes.assign(c.cudagraph_capture_sizes,
                                     c.cudagraph_capture_sizes + c.num_cudagraph_capture_sizes);
  }
  b.num_gpu_blocks = c.num_gpu_blocks;
  b.flex_attn_q_block_size = c.flex_attn_q_block_size;
  b.flex_attn_kv_block_size = c.flex_attn_kv_block_size;
  if (c.speculative_token_tree != nullptr) {
    const size_t n = strnlen(c.speculative_token_tree, 1 << 20);
    if (n == (1 << 20)) invalid("config->speculative_token_tree is longer than 1 MiB");
    b.speculative_token_tree = std::string(c.speculative_token_tree, n);
  }
  b.kv_sharing_fast_prefill = c.kv_sharing_fast_prefill != 0;
  b.max_encoder_len = c.max_encoder_len;
  b.cpu_attn_isa = c.cpu_attn_isa;
  if (c.reserved_1_1 != 0) invalid("config->reserved_1_1=", c.reserved_1_1, " must be 0");
  // ABI 1.2 (MLA; defaults when the caller's struct_size stops at 1.1)
  b.mla_kv_lora_rank = c.mla_kv_lora_rank;
  b.mla_qk_rope_head_dim = c.mla_qk_rope_head_dim;
  b.mla_qk_nope_head_dim = c.mla_qk_nope_head_dim;
  b.mla_v_head_dim = c.mla_v_head_dim;
  b.mla_chunked_prefill_workspace_size = c.mla_chunked_prefill_workspace_size;
  // vLLM 0.13's MLA prefill flags: vLLM 0.33's AttentionConfig refuses them (unexpected
  // keyword argument); its prefill backend is mla_prefill_backend (ABI 1.7).
  const std::pair<const char*, int32_t> removed[] = {
      {"disable_flashinfer_prefill", c.disable_flashinfer_prefill},
      {"use_cudnn_prefill", c.use_cudnn_prefill},
      {"use_trtllm_ragged_deepseek_prefill", c.use_trtllm_ragged_deepseek_prefill}};
  for (const auto& [name, value] : removed)
    if (value != 0)
      invalid("config->", name, "=", value, ": attention_config.", name,
              " was removed in vLLM 0.33 (choose the MLA prefill backend with "
              "config->mla_prefill_backend)");
  b.use_v2_model_runner = c.use_v2_model_runner != 0;
  b.num_sms = c.num_sms;
  b.rswa_window = c.rswa_window;
  b.is_mm_prefix_lm = c.is_mm_prefix_lm != 0;
  b.use_non_causal = c.use_non_causal != 0;
  b.enable_adaptive_verification = c.enable_adaptive_verification != 0;
  // ABI 1.6
  b.use_replayssm = c.use_replayssm != 0;
  b.replayssm_buffer_len = c.replayssm_buffer_len == 0 ? 16 : c.replayssm_buffer_len;
  b.mamba_backend_flashinfer = c.mamba_backend_flashinfer != 0;
  b.async_scheduling = c.async_scheduling != 0;
  b.hash_block_size = c.hash_block_size;
  b.cache_hit_alignment_tokens = c.cache_hit_alignment_tokens;
  b.num_hash_lookahead_tokens = c.num_hash_lookahead_tokens;
  b.use_eagle_block_drop = c.use_eagle_block_drop != 0;
  // ABI 1.6 (the INIT default when the caller's struct_size stops at 1.4/1.5)
  b.gdn_prefill_backend = c.gdn_prefill_backend;
  if (c.reserved_1_6 != 0) invalid("config->reserved_1_6=", c.reserved_1_6, " must be 0");
  // ABI 1.7 (the INIT defaults when the caller's struct_size stops at 1.6 or earlier)
  b.mla_prefill_backend = c.mla_prefill_backend;
  b.use_prefill_query_quantization = c.use_prefill_query_quantization != 0;
  // ABI 1.7
  b.block_table_width = c.block_table_width;
  if (c.reserved_1_7 != 0) invalid("config->reserved_1_7=", c.reserved_1_7, " must be 0");
  static_assert(static_cast<int>(ATTN_SPARSE_INDEXER_TOPK_DEEP_SELECT) ==
                        static_cast<int>(kSparseIndexerTopkDeepSelect) &&
                    static_cast<int>(ATTN_SPARSE_INDEXER_TOPK_AITER) ==
                        static_cast<int>(kSparseIndexerTopkAiter),
                "kSparseIndexerTopk* follow the ABI's numbering");
  // ABI 1.7: DeepSeek V4 / V4.1 (the INIT defaults when the caller's struct_size stops earlier)
  b.platform_rocm = c.platform_rocm != 0;
  b.prefill_context_parallel_size =
      c.prefill_context_parallel_size == 0 ? 1 : c.prefill_context_parallel_size;
  b.candidate_block_size = c.candidate_block_size;
  b.candidate_topk_blocks = c.candidate_topk_blocks;
  b.indexer_kv_mxfp4 = c.indexer_kv_mxfp4 != 0;
  b.sparse_indexer_topk_backend = c.sparse_indexer_topk_backend;
  b.speculative_dspark = c.speculative_dspark != 0;
  if (c.reserved_1_7_b != 0) invalid("config->reserved_1_7_b=", c.reserved_1_7_b, " must be 0");
  validate(b, spec);
  return b;
}

CommonMetadata to_common(const attn_common_metadata_t* common) {
  CommonMetadata m;
  fill_common(common, m);
  return m;
}

void fill_common(const attn_common_metadata_t* common, CommonMetadata& m) {
  // A caller of this header version (or a newer one) is read in place; an older one's struct
  // is copied over the defaults first (issue 18: the two 272-byte copies were ~10% of an O(1)
  // build).
  if (common == nullptr) invalid("common is NULL");
  attn_common_metadata_t copy;
  const attn_common_metadata_t* in = common;
  if (common->struct_size < sizeof(attn_common_metadata_t)) {
    const attn_common_metadata_t defaults = ATTN_COMMON_METADATA_INIT;
    copy = read_struct(common, defaults, kCommonMetadataSizes, "common");
    in = &copy;
  }
  const attn_common_metadata_t& c = *in;
  no_extension(c.extension, "common");
  // what validate() derives
  m.qsl_host = nullptr;
  m.seq_lens_host = nullptr;
  m.seq_lens_host_exact = false;
  m.host_max_seq_len = -1;
  m.dcp_local_seq_lens_host = nullptr;
  // A host batch passes the same view as a tensor and its mirror: converted once.
  auto fill_mirror = [](const attn_tensor_t* t, const attn_tensor_t* same_as,
                        const std::optional<Tensor>& converted, const char* name,
                        std::optional<Tensor>& out) {
    if (t != nullptr && t == same_as)
      out = converted;
    else
      fill_optional(t, name, out);
  };
  fill_optional(c.query_start_loc, "common->query_start_loc", m.query_start_loc);
  fill_mirror(c.query_start_loc_cpu, c.query_start_loc, m.query_start_loc,
              "common->query_start_loc_cpu", m.query_start_loc_cpu);
  fill_optional(c.seq_lens, "common->seq_lens", m.seq_lens);
  fill_mirror(c.seq_lens_cpu, c.seq_lens, m.seq_lens, "common->seq_lens_cpu", m.seq_lens_cpu);
  m.num_reqs = c.num_reqs;
  m.num_actual_tokens = c.num_actual_tokens;
  m.max_query_len = c.max_query_len;
  m.max_seq_len = c.max_seq_len;
  fill_optional(c.block_table_tensor, "common->block_table_tensor", m.block_table_tensor);
  fill_optional(c.slot_mapping, "common->slot_mapping", m.slot_mapping);
  m.causal = c.causal != 0;
  fill_optional(c.logits_indices_padded, "common->logits_indices_padded", m.logits_indices_padded);
  m.num_logits_indices = c.num_logits_indices;
  fill_optional(c.encoder_seq_lens, "common->encoder_seq_lens", m.encoder_seq_lens);
  fill_optional(c.encoder_seq_lens_cpu, "common->encoder_seq_lens_cpu", m.encoder_seq_lens_cpu);
  fill_optional(c.dcp_local_seq_lens, "common->dcp_local_seq_lens", m.dcp_local_seq_lens);
  fill_optional(c.dcp_local_seq_lens_cpu, "common->dcp_local_seq_lens_cpu",
                m.dcp_local_seq_lens_cpu);
  fill_optional(c.logits_indices_padded_cpu, "common->logits_indices_padded_cpu",
                m.logits_indices_padded_cpu);
  // ABI 1.2 (NULL when the caller's struct_size stops at 1.0/1.1)
  fill_optional(c.num_accepted_tokens, "common->num_accepted_tokens", m.num_accepted_tokens);
  fill_optional(c.num_decode_draft_tokens_cpu, "common->num_decode_draft_tokens_cpu",
                m.num_decode_draft_tokens_cpu);
  fill_optional(c.num_decode_draft_tokens, "common->num_decode_draft_tokens",
                m.num_decode_draft_tokens);
  fill_optional(c.is_prefilling, "common->is_prefilling", m.is_prefilling);
  // ABI 1.4, vLLM 0.33.0's fields (NULL / -1 when the caller's struct_size stops at 1.3)
  fill_optional(c.seq_lens_cpu_upper_bound, "common->seq_lens_cpu_upper_bound",
                m.seq_lens_cpu_upper_bound);
  fill_optional(c.dcp_local_seq_lens_cpu_upper_bound, "common->dcp_local_seq_lens_cpu_upper_bound",
                m.dcp_local_seq_lens_cpu_upper_bound);
  fill_optional(c.positions, "common->positions", m.positions);
  fill_optional(c.causal_per_request, "common->causal_per_request", m.causal_per_request);
  m.max_logits_per_req = c.max_logits_per_req;
  fill_optional(c.req_idx, "common->req_idx", m.req_idx);
  fill_optional(c.mm_req_doc_ranges, "common->mm_req_doc_ranges", m.mm_req_doc_ranges);
  fill_optional(c.rswa_prefix_lens, "common->rswa_prefix_lens", m.rswa_prefix_lens);
  fill_optional(c.replayssm_decode_base_cpu, "common->replayssm_decode_base_cpu",
                m.replayssm_decode_base_cpu);
  // ABI 1.7 (NULL when the caller's struct_size stops at 1.6)
  fill_optional(c.replay_start, "common->replay_start", m.replay_start);
}

CascadeQuery to_cascade_query(const attn_cascade_query_t* query) {
  const attn_cascade_query_t defaults = ATTN_CASCADE_QUERY_INIT;
  const attn_cascade_query_t q = read_struct(query, defaults, kCascadeQuerySizeV1, "query");
  no_extension(q.extension, "query");
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

attn_kv_cache_spec_t from_spec(const KvCacheSpec& k) {
  attn_kv_cache_spec_t s = ATTN_KV_CACHE_SPEC_INIT;
  s.kind = k.kind;
  s.block_size = k.block_size;
  s.num_kv_heads = k.num_kv_heads;
  s.head_size = k.head_size;
  s.dtype = k.dtype;
  s.sliding_window = k.sliding_window;
  s.attention_chunk_size = k.attention_chunk_size;
  s.mamba_type = k.mamba_type;
  s.mamba_chunk_size = k.mamba_chunk_size;
  s.mamba_cache_mode = k.mamba_cache_mode;
  s.num_speculative_blocks = k.num_speculative_blocks;
  s.num_prefill_checkpoint_blocks = k.num_prefill_checkpoint_blocks;
  s.prefill_checkpoint_alignment = k.prefill_checkpoint_alignment;
  s.mamba_replayssm_ngroups = k.mamba_replayssm_ngroups;
  s.mamba_num_heads = k.mamba_num_heads;
  s.index_topk = k.index_topk;
  s.topk_buffer_width = k.topk_buffer_width;
  // ABI 1.7 (attention variants)
  s.sink_len = k.sink_len;
  s.head_size_v = k.head_size_v;
  // ABI 1.7 (DeepSeek V4 sparse MLA)
  s.tokens_per_state = k.tokens_per_state;
  s.reserved_1_7 = k.reserved_1_7;
  return s;
}

attn_builder_config_t from_config(const BuilderConfig& b,
                                  std::vector<attn_per_layer_params_t>& layer_storage) {
  attn_builder_config_t c = ATTN_BUILDER_CONFIG_INIT;
  c.device = attn_device_t{b.device.type, b.device.id};
  c.max_num_seqs = b.max_num_seqs;
  c.max_num_batched_tokens = b.max_num_batched_tokens;
  c.max_model_len = b.max_model_len;
  c.num_attention_heads = b.num_attention_heads;
  c.num_speculative_tokens = b.num_speculative_tokens;
  c.parallel_drafting = b.parallel_drafting;
  c.decode_context_parallel_size = b.decode_context_parallel_size;
  c.dcp_rank = b.dcp_rank;
  c.cp_kv_cache_interleave_size = b.cp_kv_cache_interleave_size;
  c.cudagraph_mode = b.cudagraph_mode;
  c.max_cudagraph_capture_size = b.max_cudagraph_capture_size;
  c.cache_dtype = b.cache_dtype;
  c.attn_type = b.attn_type;
  c.device_capability = b.device_capability;
  c.flash_attn_version = b.flash_attn_version;
  c.flash_attn_max_num_splits_for_cuda_graph = b.flash_attn_max_num_splits_for_cuda_graph;
  c.batch_invariant = b.batch_invariant;
  c.validate = b.validate_full      ? ATTN_VALIDATE_FULL
               : b.validate_trusted ? ATTN_VALIDATE_TRUSTED
                                    : ATTN_VALIDATE_HOST;
  c.model_dtype = b.model_dtype;
  c.use_trtllm_attention = b.use_trtllm_attention;
  c.kv_transfer_enabled = b.kv_transfer_enabled;
  c.disable_flashinfer_q_quantization = b.disable_flashinfer_q_quantization;
  c.cudagraph_capture_sizes = b.cudagraph_capture_sizes.empty() ? nullptr : b.cudagraph_capture_sizes.data();
  c.num_cudagraph_capture_sizes = b.cudagraph_capture_sizes.size();
  c.num_gpu_blocks = b.num_gpu_blocks;
  c.flex_attn_q_block_size = b.flex_attn_q_block_size;
  c.flex_attn_kv_block_size = b.flex_attn_kv_block_size;
  c.speculative_token_tree = b.speculative_token_tree ? b.speculative_token_tree->c_str() : nullptr;
  c.kv_sharing_fast_prefill = b.kv_sharing_fast_prefill;
  c.max_encoder_len = b.max_encoder_len;
  c.cpu_attn_isa = b.cpu_attn_isa;
  c.mla_kv_lora_rank = b.mla_kv_lora_rank;
  c.mla_qk_rope_head_dim = b.mla_qk_rope_head_dim;
  c.mla_qk_nope_head_dim = b.mla_qk_nope_head_dim;
  c.mla_v_head_dim = b.mla_v_head_dim;
  c.mla_chunked_prefill_workspace_size = b.mla_chunked_prefill_workspace_size;
  c.use_v2_model_runner = b.use_v2_model_runner;
  c.num_sms = b.num_sms;
  c.rswa_window = b.rswa_window;
  c.is_mm_prefix_lm = b.is_mm_prefix_lm;
  c.use_non_causal = b.use_non_causal;
  c.enable_adaptive_verification = b.enable_adaptive_verification;
  c.use_replayssm = b.use_replayssm;
  c.replayssm_buffer_len = b.replayssm_buffer_len;
  c.mamba_backend_flashinfer = b.mamba_backend_flashinfer;
  c.async_scheduling = b.async_scheduling;
  c.hash_block_size = b.hash_block_size;
  c.cache_hit_alignment_tokens = b.cache_hit_alignment_tokens;
  c.num_hash_lookahead_tokens = b.num_hash_lookahead_tokens;
  c.use_eagle_block_drop = b.use_eagle_block_drop;
  c.gdn_prefill_backend = b.gdn_prefill_backend;
  c.mla_prefill_backend = b.mla_prefill_backend;
  c.use_prefill_query_quantization = b.use_prefill_query_quantization;
  c.block_table_width = b.block_table_width;
  c.platform_rocm = b.platform_rocm;
  c.prefill_context_parallel_size = b.prefill_context_parallel_size;
  c.candidate_block_size = b.candidate_block_size;
  c.candidate_topk_blocks = b.candidate_topk_blocks;
  c.indexer_kv_mxfp4 = b.indexer_kv_mxfp4;
  c.sparse_indexer_topk_backend = b.sparse_indexer_topk_backend;
  c.speculative_dspark = b.speculative_dspark;
  layer_storage.clear();
  for (const PerLayerParams& p : b.layers) {
    attn_per_layer_params_t q = ATTN_PER_LAYER_PARAMS_INIT;
    q.window_left = p.window_left;
    q.has_logits_soft_cap = p.logits_soft_cap.has_value();
    q.logits_soft_cap = p.logits_soft_cap.value_or(0.0);
    q.sm_scale = p.sm_scale;
    q.has_sinks = p.has_sinks;
    layer_storage.push_back(q);
  }
  c.layers = layer_storage.empty() ? nullptr : layer_storage.data();
  c.num_layers = layer_storage.size();
  return c;
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
