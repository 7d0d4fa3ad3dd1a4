// CPU_ATTN: the metadata of vLLM's CPUAttentionMetadataBuilder.build()
// (vllm/v1/attention/backends/cpu_attn.py). vLLM's scheduler_metadata is the output of its C++
// op cpu_attn_get_scheduler_metadata; libattn returns that op's inputs (scheduler_* fields), as
// it does for FlashAttention's scheduler. Encoder-only batches get their private KV layout
// (block table, slot mapping, zeroed encoder_cache) in builder buffers; vLLM writes that slot
// mapping into the common metadata's own tensor, libattn into its buffer.
#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/common_fields.h"
#include "backends/cpu_isa.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "CPU_ATTN";

#define CPU_ATTN_FIELDS(X)                                               \
  ATTN_PASSTHROUGH_FIELDS(X, k, "")                                      \
  X(kSchedulerMetadata, "scheduler_metadata")                            \
  X(kCausal, "causal")                                                   \
  X(kDynamicCausal, "dynamic_causal")                                    \
  X(kUseSdpaPrefill, "use_sdpa_prefill")                                 \
  X(kNumDecodeTokens, "num_decode_tokens")                               \
  X(kSdpaAttnMasks, "sdpa_attn_masks")                                   \
  X(kSdpaStartLoc, "sdpa_start_loc")                                     \
  X(kEncoderCache, "encoder_cache")                                      \
  /* the inputs of cpu_attn_get_scheduler_metadata */                    \
  X(kSchedNumReqs, "scheduler_num_reqs")                                 \
  X(kSchedNumHeads, "scheduler_num_heads")                               \
  X(kSchedNumKvHeads, "scheduler_num_kv_heads")                          \
  X(kSchedHeadDim, "scheduler_head_dim")                                 \
  X(kSchedSeqLens, "scheduler_seq_lens")                                 \
  X(kSchedDtype, "scheduler_dtype")                                      \
  X(kSchedQueryStartLoc, "scheduler_query_start_loc")                    \
  X(kSchedCausal, "scheduler_causal")                                    \
  X(kSchedSlidingWindowSize, "scheduler_sliding_window_size")            \
  X(kSchedIsa, "scheduler_isa")                                          \
  X(kSchedEnableKvSplit, "scheduler_enable_kv_split")                    \
  X(kSchedKvCacheDtype, "scheduler_kv_cache_dtype")                      \
  X(kSchedDynamicCausal, "scheduler_dynamic_causal")
ATTN_NAMED_LIST(Field, CPU_ATTN_FIELDS);

// Encoder-only batches only: their private KV layout.
#define CPU_ATTN_BUFFERS(X)                           \
  X(kBufBlockTable, "encoder block_table")           \
  X(kBufSlotMapping, "encoder slot_mapping")         \
  X(kBufEncoderCache, "encoder_cache")
ATTN_NAMED_LIST(Buffer, CPU_ATTN_BUFFERS);

size_t dtype_bytes(int32_t dtype) { return dtype == kKvDtypeFloat32 ? 4 : 2; }

DType tensor_dtype(int32_t dtype) {
  switch (dtype) {
    case kKvDtypeFloat32: return DType{2, 32, 1};
    case kKvDtypeBfloat16: return DType{4, 16, 1};
    default: return DType{2, 16, 1};
  }
}

/// Encoder-only batches: at most cdiv(tokens, block_size) + requests blocks.
int64_t encoder_block_capacity(const KvCacheSpec& spec, const BuilderConfig& c) {
  return (c.max_num_batched_tokens + spec.block_size - 1) / spec.block_size + c.max_num_seqs;
}

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (spec.kind != kKvEncoderOnly) return {};
  const int64_t width = c.max_blocks_per_req(spec.block_size);
  const int64_t blocks = encoder_block_capacity(spec, c);
  const auto item = static_cast<int64_t>(dtype_bytes(c.model_dtype_for(spec)));
  BufferPlan p(kBufferNames);
  p.set(kBufBlockTable, buffer_bytes("encoder block_table", {c.max_num_seqs, width, 4}));
  p.set(kBufSlotMapping, buffer_bytes("encoder slot_mapping", {c.max_num_batched_tokens, 8}));
  p.set(kBufEncoderCache, buffer_bytes("encoder_cache", {blocks, spec.num_kv_heads,
                                                         spec.block_size, 2, spec.head_size, item}));
  return p.requests();
}

/// vLLM's _group_sliding_window: the one window every layer of the group has, else -1. A
/// layer's window_left is its window size minus 1.
int32_t group_sliding_window(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (c.layers.empty()) return spec.kind == kKvSlidingWindow ? spec.sliding_window : -1;
  std::set<int32_t> windows;
  for (const PerLayerParams& p : c.layers) windows.insert(p.window_left < 0 ? -1 : p.window_left + 1);
  return windows.size() == 1 ? *windows.begin() : -1;
}

int32_t isa_for(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (c.cpu_attn_isa != kCpuIsaDetect) return c.cpu_attn_isa;
  return choose_cpu_isa(host_cpu_features(), c.model_dtype_for(spec), spec.block_size,
                        spec.head_size, c.cache_dtype);
}

void check_supported(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& c) {
  if (c.device.is_cuda())
    fail(Status::kUnsupported, "CPU_ATTN builds metadata for the host; config->device is ",
         c.device.to_string());
  check_spec_kind(d, spec);
  static const int32_t kHeads[] = {32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512};
  if (std::find(std::begin(kHeads), std::end(kHeads), spec.head_size) == std::end(kHeads))
    fail(Status::kUnsupported, "CPU_ATTN supports head sizes 32, 64, 80, 96, 112, 128, 160, 192, "
                               "224, 256 and 512, got kv_cache_spec->head_size=", spec.head_size);
  isa_for(spec, c);  // vLLM raises for fp8 caches the CPU cannot run
}

class CpuAttnBuilder final : public Builder {
 public:
  CpuAttnBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                 const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    isa_ = isa_for(spec, config);
    window_ = group_sliding_window(spec, config);
    model_dtype_ = config.model_dtype_for(spec);
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec&) override {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    m.reset();
    set_passthrough(m, 0, c);
    // vLLM 0.33: a per-request causal tensor becomes dynamic_causal, and causal is then False.
    const bool dynamic = c.causal_per_request.has_value();
    const bool causal = spec().kind == kKvCrossAttention || dynamic ? false : c.causal;
    m.set_bool(kCausal, causal);
    if (dynamic) {
      m.set_tensor(kDynamicCausal, *c.causal_per_request);
      m.set_tensor(kSchedDynamicCausal, *c.causal_per_request);
    }
    m.set_bool(kUseSdpaPrefill, false);
    m.set_int(kNumDecodeTokens, 0);
    if (spec().kind == kKvEncoderOnly) {
      if (c.seq_lens_host == nullptr)
        invalid("common->seq_lens must be readable on the host for an encoder-only batch");
      const int32_t bs = spec().block_size;
      int64_t total = 0, widest = 0;
      for (int64_t r = 0; r < c.num_reqs; ++r) {
        const int64_t b = (static_cast<int64_t>(c.seq_lens_host[r]) + bs - 1) / bs;
        total += b;
        widest = std::max(widest, b);
      }
      const int64_t capacity = encoder_block_capacity(spec(), cfg);
      if (total > capacity)
        invalid("the encoder-only batch needs ", total, " KV blocks; the builder holds ", capacity,
                " (cdiv(max_num_batched_tokens, block_size) + max_num_seqs)");
      auto* table = buffers_.as<int32_t>(kBufBlockTable);
      auto* slots = buffers_.as<int64_t>(kBufSlotMapping);
      ops::encoder_only_kv_layout(c.qsl_host, c.seq_lens_host, c.num_reqs, bs, widest, widest,
                                  c.num_actual_tokens, table, slots);
      if (c.positions) {
        // vLLM 0.33 writes the slot mapping from `positions` through the encoder block table
        // (compute_slot_mapping_kernel_impl); without positions, each request's tokens are
        // taken at positions [seq_len - query_len, seq_len).
        ops::compute_slot_mapping(ops::Exec{}, c.qsl_host, c.num_reqs,
                                  c.positions->as<const int64_t>(), c.qsl_host[c.num_reqs],
                                  table, widest, widest, bs, 1, 0, 1, slots, c.num_actual_tokens);
      }
      const Tensor block_table = make_matrix(table, cfg.device, kInt32, c.num_reqs, widest, widest);
      const size_t block_bytes = static_cast<size_t>(spec().num_kv_heads) * bs * 2 *
                                 spec().head_size * dtype_bytes(model_dtype_);
      std::memset(buffers_.get(kBufEncoderCache), 0, static_cast<size_t>(total) * block_bytes);
      Tensor cache;
      cache.data = buffers_.get(kBufEncoderCache);
      cache.device = cfg.device;
      cache.dtype = tensor_dtype(model_dtype_);
      cache.ndim = 4;
      const int64_t dims[4] = {total, spec().num_kv_heads, bs, 2 * static_cast<int64_t>(spec().head_size)};
      int64_t stride = 1;
      for (int k = 3; k >= 0; --k) {
        cache.shape[k] = dims[k];
        cache.strides[k] = stride;
        stride *= dims[k];
      }
      m.set_tensor(kBlockTable, block_table, true);
      m.set_tensor(kSlotMapping,
                   make_vector(slots, cfg.device, kInt64, c.num_actual_tokens), true);
      m.set_tensor(kEncoderCache, cache, true);
    }
    m.set_int(kSchedNumReqs, c.num_reqs);
    m.set_int(kSchedNumHeads, cfg.num_attention_heads);
    m.set_int(kSchedNumKvHeads, spec().num_kv_heads);
    m.set_int(kSchedHeadDim, spec().head_size);
    m.set_tensor(kSchedSeqLens, *c.seq_lens);
    m.set_int(kSchedDtype, model_dtype_);
    m.set_tensor(kSchedQueryStartLoc, *c.query_start_loc);
    m.set_bool(kSchedCausal, causal);
    m.set_int(kSchedSlidingWindowSize, window_);
    m.set_int(kSchedIsa, isa_);
    m.set_bool(kSchedEnableKvSplit, true);  // VLLM_CPU_ATTN_SPLIT_KV's default
    m.set_int(kSchedKvCacheDtype, cfg.cache_dtype);
  }

 private:
  PersistentBuffers buffers_;
  int32_t isa_ = 0;
  int32_t window_ = -1;
  int32_t model_dtype_ = kKvDtypeBfloat16;
};

}  // namespace

extern const BackendDescriptor kCpuAttnBackend;
const BackendDescriptor kCpuAttnBackend{
    kName,
    kVllmRelease,
    kPagedAttentionKinds,
    0,
    fixed_cudagraph_support<kCgNever>,
    check_supported,
    buffer_plan_of<plan>,
    create_builder_of<CpuAttnBuilder>,
};

}  // namespace attn::backends
