// TRITON_ATTN: the metadata of vLLM 0.33's TritonAttentionMetadataBuilder.build()
// (vllm/v1/attention/backends/triton_attn.py), field for field, then the cascade fields
// (libattn's extension: 0.33 removed cascade attention), which only a build with
// common_prefix_len > 0 returns. 0.13's per-token-head quantization fields (q_to_req,
// q_to_klen, num_decodes, ...) are gone in 0.33 and here: libattn only ever returned their
// defaults.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/common_fields.h"
#include "backends/persistent_copy.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "TRITON_ATTN";

constexpr int64_t kMinLaunchGridSize2d = 128;  // vLLM's MIN_LAUNCH_GRID_SIZE_2D
constexpr int64_t kNumParSoftmaxSegments = 16;  // vLLM's NUM_PAR_SOFTMAX_SEGMENTS
constexpr int64_t kNumParSoftmaxSegments64 = 64;  // vLLM 0.33's SM 12.0 layout
constexpr int64_t kMax3dQueryLen = 8;           // vLLM's MAX_3D_QUERY_LEN (unified attention)
/// Ranges per request the mm_prefix_range_tensor buffer holds (vLLM allocates the tensor per
/// build; libattn's persistent buffer is max_num_seqs x this x 2 int32).
constexpr int64_t kMaxMmPrefixRangesPerReq = 64;

#define TRITON_ATTN_FIELDS(X)                                     \
  ATTN_PASSTHROUGH_FIELDS(X, k, "")                               \
  X(kSeqThreshold3d, "seq_threshold_3D")                          \
  X(kNumParSoftmaxSegmentsField, "num_par_softmax_segments")      \
  X(kSoftmaxSegmOutput, "softmax_segm_output")                    \
  X(kSoftmaxSegmMax, "softmax_segm_max")                          \
  X(kSoftmaxSegmExpsum, "softmax_segm_expsum")                    \
  X(kCausal, "causal")                                            \
  X(kSchedulerMetadata, "scheduler_metadata")                     \
  X(kMmPrefixRange, "mm_prefix_range")                             \
  X(kMmPrefixRangeTensor, "mm_prefix_range_tensor")               \
  X(kRswaPrefixLens, "rswa_prefix_lens")                          \
  X(kRswaWindow, "rswa_window")                                   \
  X(kUseCascade, "use_cascade")                                   \
  X(kCommonPrefixLen, "common_prefix_len")                        \
  X(kCuPrefixQueryLens, "cu_prefix_query_lens")                   \
  X(kPrefixKvLens, "prefix_kv_lens")                              \
  X(kSuffixKvLens, "suffix_kv_lens")                              \
  X(kPrefixSchedulerMetadata, "prefix_scheduler_metadata")
ATTN_NAMED_LIST(Field, TRITON_ATTN_FIELDS);
constexpr size_t kPlainFieldCount = kUseCascade;  // the fields of a build without cascade

#define TRITON_ATTN_BUFFERS(X)                 \
  X(kBufOutput, "softmax_segm_output")         \
  X(kBufMax, "softmax_segm_max")               \
  X(kBufExpsum, "softmax_segm_expsum")         \
  X(kBufCu, "cu_prefix_query_lens")            \
  X(kBufPrefix, "prefix_kv_lens")              \
  X(kBufSuffix, "suffix_kv_lens")              \
  X(kBufRswaPrefixLens, "persistent_rswa_prefix_lens") \
  X(kBufMmRanges, "mm_prefix_range_tensor")    \
  X(kBufMmRangesCpu, "mm_prefix_range_tensor staging")
ATTN_NAMED_LIST(Buffer, TRITON_ATTN_BUFFERS);

int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

bool decode_cudagraph_enabled(const BuilderConfig& c) {
  return c.cudagraph_mode == kCudagraphFullAndPiecewise ||
         c.cudagraph_mode == kCudagraphFullDecodeOnly || c.cudagraph_mode == kCudagraphFull;
}

/// vLLM's seq_threshold_3D: 128 // num_kv_heads, moved to the closest CUDA graph capture size
/// (the first of equally close ones) when the mode captures full decode graphs.
int64_t triton_seq_threshold_3d(const KvCacheSpec& spec, const BuilderConfig& c) {
  int64_t threshold = kMinLaunchGridSize2d / spec.num_kv_heads;
  if (decode_cudagraph_enabled(c)) {
    const std::vector<int32_t> sizes = c.capture_sizes();
    if (sizes.empty())
      invalid("TRITON_ATTN needs CUDA graph capture sizes with config->cudagraph_mode=",
              c.cudagraph_mode, " (config->max_cudagraph_capture_size=",
              c.max_cudagraph_capture_size, " leaves none)");
    int64_t best = sizes[0];
    for (const int32_t s : sizes)  // the first of equally close sizes wins (Python's min)
      if (std::llabs(s - threshold) < std::llabs(best - threshold)) best = s;
    threshold = best;
  }
  return threshold;
}

/// vLLM 0.33's max_seqs_64_segments: on compute capability 12.0, the most requests whose
/// 16-segment decode grid under-fills the SMs, (num_sms - 1) // (16 * num_kv_heads); 0 elsewhere
/// or when the SM count is unknown (config->num_sms = 0).
int64_t max_seqs_64_segments(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (c.num_sms <= 0 || resolved_device_capability(c) != 120) return 0;
  return (static_cast<int64_t>(c.num_sms) - 1) / (kNumParSoftmaxSegments * spec.num_kv_heads);
}

/// The scratch layout: softmax segments per row and rows.
struct Scratch {
  int64_t segments;
  int64_t rows;
};

/// vLLM indexes the softmax scratch by query token, verification tokens included: 16 segments
/// for min(seq_threshold_3D, max_num_seqs) requests of up to min(1 + num_speculative_tokens
/// (twice that with parallel drafting), MAX_3D_QUERY_LEN) tokens each. With 64 segments (SM
/// 12.0), rows for min(max_seqs_64_segments, those requests) of them, and at least a quarter of
/// the 16-segment rows, so that the same memory viewed with 16 segments holds them all.
Scratch scratch_layout(const KvCacheSpec& spec, const BuilderConfig& c) {
  const int64_t seqs = std::min<int64_t>(triton_seq_threshold_3d(spec, c), c.max_num_seqs);
  int64_t query_len = 1;
  if (c.num_speculative_tokens > 0) {
    const int64_t drafted = static_cast<int64_t>(c.num_speculative_tokens) *
                            (c.parallel_drafting ? 2 : 1);
    query_len = std::min<int64_t>(1 + drafted, kMax3dQueryLen);
  }
  Scratch s{kNumParSoftmaxSegments, seqs * query_len};
  const int64_t seqs_64 = max_seqs_64_segments(spec, c);
  if (seqs_64 > 0) {
    const int64_t ratio = kNumParSoftmaxSegments64 / kNumParSoftmaxSegments;
    s.segments = kNumParSoftmaxSegments64;
    s.rows = std::max(std::min(seqs_64, seqs) * query_len, (s.rows + ratio - 1) / ratio);
  }
  return s;
}

/// The last dimension of softmax_segm_output: next_power_of_2(head_size); TRITON_ATTN_DIFFKV's
/// builder re-allocates it with next_power_of_2(head_size_v) (the partial outputs are V-shaped).
int64_t output_dim(const KvCacheSpec& spec, bool diffkv) {
  return next_power_of_2(diffkv ? spec.value_head_size() : spec.head_size);
}

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c, bool diffkv) {
  const Scratch sc = scratch_layout(spec, c);
  const int64_t s = sc.rows, g = sc.segments;
  const int64_t heads = c.num_attention_heads;
  const int64_t dim = output_dim(spec, diffkv);
  BufferPlan p(kBufferNames);
  p.set(kBufOutput, buffer_bytes("softmax_segm_output", {s, heads, g, dim, 4}));
  p.set(kBufMax, buffer_bytes("softmax_segm_max", {s, heads, g, 4}));
  p.set(kBufExpsum, buffer_bytes("softmax_segm_expsum", {s, heads, g, 4}));
  p.set(kBufCu, 2 * sizeof(int32_t));
  p.set(kBufPrefix, sizeof(int32_t));
  p.set(kBufSuffix, static_cast<size_t>(c.max_num_seqs) * sizeof(int32_t));
  p.set(kBufRswaPrefixLens,
        c.rswa_window > 0 ? static_cast<size_t>(c.max_num_seqs) * sizeof(int32_t) : 0);
  const size_t mm = c.is_mm_prefix_lm ? static_cast<size_t>(c.max_num_seqs) *
                                            kMaxMmPrefixRangesPerReq * 2 * sizeof(int32_t)
                                      : 0;
  p.set(kBufMmRanges, mm);
  p.set(kBufMmRangesCpu, c.device.is_cuda() ? mm : 0, /*host=*/true);
  return p.requests();
}

class TritonAttnBuilder final : public Builder {
 public:
  TritonAttnBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                    const BuilderConfig& config, bool diffkv = false)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(spec, config, diffkv), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames, kPlainFieldCount));
    init_cascade_metadata(name_vector(kFieldNames));
    threshold_ = triton_seq_threshold_3d(spec, config);
    const int64_t heads = config.num_attention_heads;
    const int64_t dim = output_dim(spec, diffkv);
    const Device d = config.device;
    const Scratch sc = scratch_layout(spec, config);
    const int64_t s = sc.rows, g = sc.segments;
    segments_ = g;
    rows_ = s;
    max_seqs_64_ = max_seqs_64_segments(spec, config);
    output_ = shaped(buffers_.get(kBufOutput), d, {s, heads, g, dim});
    max_ = shaped(buffers_.get(kBufMax), d, {s, heads, g});
    expsum_ = shaped(buffers_.get(kBufExpsum), d, {s, heads, g});
    if (g != kNumParSoftmaxSegments) {  // the same memory with 16 segments, more rows
      const int64_t r16 = s * g / kNumParSoftmaxSegments;
      output16_ = shaped(buffers_.get(kBufOutput), d, {r16, heads, kNumParSoftmaxSegments, dim});
      max16_ = shaped(buffers_.get(kBufMax), d, {r16, heads, kNumParSoftmaxSegments});
      expsum16_ = shaped(buffers_.get(kBufExpsum), d, {r16, heads, kNumParSoftmaxSegments});
    }
  }

  /// vLLM 0.33: not with R-SWA (build() restages the prefix lengths, which its no-op update
  /// does not refresh); otherwise a no-op.
  /// Values are read by the cascade variant and the prefix-LM ranges (request indices);
  /// otherwise the result is views plus scalars (ATTN_VALIDATE_TRUSTED: O(1)).
  bool reads_batch_values(int64_t common_prefix_len, const CommonMetadata& common) const override {
    return common_prefix_len > 0 || common.mm_req_doc_ranges.has_value();
  }
  std::string draft_decode_update_refusal() const override {
    return config().rswa_window > 0
               ? "R-SWA (build() restages the prefix lengths, which the update does not refresh)"
               : "";
  }

 protected:
  void do_build(int64_t common_prefix_len, const CommonMetadata& c, bool /*fast_build*/,
                const ops::Exec& exec) override {
    Metadata& m = metadata();
    m.reset();
    set_passthrough(m, 0, c);
    m.set_int(kSeqThreshold3d, threshold_);
    // vLLM 0.33 on SM 12.0: 64 segments unless the 16-segment grid already fills the SMs (more
    // requests than max_seqs_64_segments) or the 64-segment rows cannot hold every query token;
    // then the 16-segment view of the same scratch.
    const bool narrow_view = segments_ != kNumParSoftmaxSegments &&
                             (max_seqs_64_ < c.seq_lens->shape[0] || rows_ < c.num_actual_tokens);
    m.set_int(kNumParSoftmaxSegmentsField, narrow_view ? kNumParSoftmaxSegments : segments_);
    m.set_tensor(kSoftmaxSegmOutput, narrow_view ? output16_ : output_, true);
    m.set_tensor(kSoftmaxSegmMax, narrow_view ? max16_ : max_, true);
    m.set_tensor(kSoftmaxSegmExpsum, narrow_view ? expsum16_ : expsum_, true);
    // vLLM 0.33's `causal: bool | Tensor`: the per-request int32 tensor when the batch has one.
    if (c.causal_per_request)
      m.set_tensor(kCausal, *c.causal_per_request);
    else
      m.set_bool(kCausal, c.causal);
    set_mm_prefix_and_rswa(m, c, exec);
    if (common_prefix_len > 0) {  // the cascade variant (libattn's extension)
      m.set_bool(kUseCascade, true);
      m.set_int(kCommonPrefixLen, common_prefix_len);
      // vLLM builds these when asked, although its use_cascade_attention never asks.
      auto* cu = buffers_.as<int32_t>(kBufCu);
      auto* prefix = buffers_.as<int32_t>(kBufPrefix);
      auto* suffix = buffers_.as<int32_t>(kBufSuffix);
      ops::cascade_split(exec, c.seq_lens->as<const int32_t>(), c.num_reqs, c.num_actual_tokens,
                         common_prefix_len, cu, prefix, suffix);
      const Device d = config().device;
      m.set_tensor(kCuPrefixQueryLens, make_vector(cu, d, kInt32, 2), true);
      m.set_tensor(kPrefixKvLens, make_vector(prefix, d, kInt32, 1), true);
      m.set_tensor(kSuffixKvLens, make_vector(suffix, d, kInt32, c.num_reqs), true);
    }
  }

  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    do_build(0, c, false, exec);
    // vLLM fills seq_lens with 1 in place (the runtime's own buffer, which the captured graph
    // reads at replay) so that capture does not run at max_model_len.
    ops::fill_i32(exec, c.seq_lens->as<int32_t>(), c.num_reqs, 1);
  }

 private:
  // vLLM 0.33's mm_prefix_range (the dict, as the batch's (request, start, end) rows),
  // mm_prefix_range_tensor (compute_mm_prefix_range_tensor) and the R-SWA fields.
  void set_mm_prefix_and_rswa(Metadata& m, const CommonMetadata& c, const ops::Exec& exec) {
    const BuilderConfig& cfg = config();
    if (c.mm_req_doc_ranges) {
      const Tensor& rows = *c.mm_req_doc_ranges;
      m.set_tensor(kMmPrefixRange, rows);
      const int64_t num_ranges = rows.ndim > 0 ? rows.shape[0] : 0;
      const int32_t* r = rows.as<const int32_t>();
      const int64_t width = ops::mm_prefix_max_ranges(r, num_ranges, c.num_reqs);
      if (width > 0) {
        if (!cfg.is_mm_prefix_lm)
          invalid("common->mm_req_doc_ranges has ranges but config->is_mm_prefix_lm is 0; "
                  "TRITON_ATTN sizes its mm_prefix_range_tensor buffer only for a PrefixLM model");
        if (width > kMaxMmPrefixRangesPerReq)
          invalid("common->mm_req_doc_ranges has ", width, " ranges for one request; "
                  "TRITON_ATTN's mm_prefix_range_tensor holds at most ",
                  kMaxMmPrefixRangesPerReq, " per request");
        int32_t* dst = buffers_.as<int32_t>(kBufMmRanges);
        int32_t* staging = cfg.device.is_cuda() ? buffers_.as<int32_t>(kBufMmRangesCpu) : dst;
        ops::mm_prefix_range_tensor(r, num_ranges, c.num_reqs, width, staging);
        if (cfg.device.is_cuda())
          copy_i32_into_buffer(exec, staging, true, c.num_reqs * width * 2, dst);
        Tensor t;
        t.data = dst;
        t.device = cfg.device;
        t.dtype = kInt32;
        t.ndim = 3;
        t.shape[0] = c.num_reqs;
        t.shape[1] = width;
        t.shape[2] = 2;
        t.strides[0] = width * 2;
        t.strides[1] = 2;
        t.strides[2] = 1;
        m.set_tensor(kMmPrefixRangeTensor, t, true);
      }
    }
    if (cfg.rswa_window > 0 && c.rswa_prefix_lens) {
      const Tensor& src = *c.rswa_prefix_lens;
      int32_t* dst = buffers_.as<int32_t>(kBufRswaPrefixLens);
      copy_i32_into_buffer(exec, src.as<const int32_t>(), src.host_accessible(), c.num_reqs, dst);
      m.set_tensor(kRswaPrefixLens, make_vector(dst, cfg.device, kInt32, c.num_reqs), true);
      m.set_int(kRswaWindow, cfg.rswa_window);
    }
  }

  static Tensor shaped(void* data, Device d, std::initializer_list<int64_t> dims) {
    Tensor t;
    t.data = data;
    t.device = d;
    t.dtype = kFloat32;
    t.ndim = static_cast<int32_t>(dims.size());
    int i = 0;
    for (const int64_t n : dims) t.shape[i++] = n;
    int64_t stride = 1;
    for (int k = t.ndim - 1; k >= 0; --k) {
      t.strides[k] = stride;
      stride *= t.shape[k];
    }
    return t;
  }

  PersistentBuffers buffers_;
  int64_t threshold_ = 0;
  int64_t segments_ = kNumParSoftmaxSegments;  // of the allocated layout
  int64_t rows_ = 0;
  int64_t max_seqs_64_ = 0;
  Tensor output_, max_, expsum_;
  Tensor output16_, max16_, expsum16_;  // the 16-segment view of a 64-segment scratch
};

void check_supported(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig&) {
  check_spec_kind(d, spec);
  if (spec.block_size % 16 != 0)
    fail(Status::kUnsupported, "TRITON_ATTN needs kv_cache_spec->block_size to be a multiple "
                               "of 16, got ", spec.block_size);
  if (spec.head_size < 32)
    fail(Status::kUnsupported, "TRITON_ATTN supports head sizes of at least 32, got "
                               "kv_cache_spec->head_size=", spec.head_size);
}

}  // namespace

extern const BackendDescriptor kTritonAttnBackend;
const BackendDescriptor kTritonAttnBackend{
    kName,
    "0.13-0.33 (partial)",
    kPagedAttentionKinds,
    0,
    fixed_cudagraph_support<kCgAlways>,
    check_supported,
    [](const BackendDescriptor&, const KvCacheSpec& spec, const BuilderConfig& config) {
      return plan(spec, config, false);
    },
    create_builder_of<TritonAttnBuilder>,
};

// vLLM 0.33's TRITON_ATTN_DIFFKV (triton_attn_diffkv.py): TritonAttentionDiffKVMetadataBuilder,
// TRITON_ATTN's builder whose softmax_segm_output has next_power_of_2(head_size_v) as its last
// dimension (kv_cache_spec->head_size_v; vLLM reads the backend's class attribute the layer
// set). Level, threshold and the other fields are TRITON_ATTN's; decoder self-attention only
// (its supports_attn_type), so no cross or encoder-only specs.
extern const BackendDescriptor kTritonAttnDiffKvBackend;
const BackendDescriptor kTritonAttnDiffKvBackend{
    "TRITON_ATTN_DIFFKV",
    "0.33 (partial, as TRITON_ATTN)",
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow) |
        kv_kind_bit(kKvChunkedLocalAttention),
    1,
    fixed_cudagraph_support<kCgAlways>,
    check_supported,
    [](const BackendDescriptor&, const KvCacheSpec& spec, const BuilderConfig& config) {
      return plan(spec, config, true);
    },
    [](const BackendDescriptor&, std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
       const BuilderConfig& config) -> std::unique_ptr<Builder> {
      return std::make_unique<TritonAttnBuilder>(std::move(backend), spec, config, true);
    },
};

}  // namespace attn::backends
