// FLASH_ATTN: the metadata of vLLM's FlashAttentionMetadataBuilder.build(), field for field,
// except the FA3 scheduler's own output: libattn does not run FlashAttention's
// get_scheduler_metadata, so it returns its inputs (scheduler_* fields) and the persistent
// buffer vLLM copies its output into (scheduler_metadata_buffer).
#include "backends/flash_attn.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/common_fields.h"
#include "backends/field_list.h"
#include "backends/flash_attn_cascade.h"
#include "backends/persistent_copy.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "FLASH_ATTN";

// The inputs of one get_scheduler_metadata call, as vLLM's schedule() passes them.
#define FLASH_ATTN_SCHEDULE_FIELDS(X, P, prefix)                                           \
  X(P##BatchSize, prefix "batch_size") X(P##MaxSeqlenQ, prefix "max_seqlen_q")             \
  X(P##MaxSeqlenK, prefix "max_seqlen_k") X(P##NumHeadsQ, prefix "num_heads_q")            \
  X(P##NumHeadsKv, prefix "num_heads_kv") X(P##Headdim, prefix "headdim")                  \
  X(P##CacheSeqlens, prefix "cache_seqlens") X(P##CuSeqlensQ, prefix "cu_seqlens_q")       \
  X(P##QkvDtype, prefix "qkv_dtype") X(P##PageSize, prefix "page_size")                    \
  X(P##Causal, prefix "causal") X(P##WindowLeft, prefix "window_left")                     \
  X(P##WindowRight, prefix "window_right") X(P##NumSplits, prefix "num_splits")
/// Offsets within a schedule block.
#define FLASH_ATTN_SCHEDULE_OFFSETS(X) FLASH_ATTN_SCHEDULE_FIELDS(X, kSched, "")
ATTN_NAMED_LIST(ScheduleField, FLASH_ATTN_SCHEDULE_OFFSETS);

// vLLM 0.33's FlashAttentionMetadata first, then libattn's additions (the FA3 scheduler's
// inputs), then the cascade fields (libattn's extension: 0.33 removed cascade attention), which
// only a build with common_prefix_len > 0 returns.
#define FLASH_ATTN_FIELDS(X)                                                  \
  ATTN_PASSTHROUGH_FIELDS(X, k, "")                                          \
  X(kMaxDcpContextKvLen, "max_dcp_context_kv_len")                           \
  X(kDcpContextKvLens, "dcp_context_kv_lens")                                \
  X(kNumDecodeReqs, "num_decode_reqs")                                       \
  X(kNumPrefillReqs, "num_prefill_reqs")                                     \
  X(kNumDecodeTokens, "num_decode_tokens")                                   \
  X(kNumPrefillTokens, "num_prefill_tokens")                                 \
  X(kSchedulerMetadata, "scheduler_metadata")                                \
  X(kMaxNumSplits, "max_num_splits")                                         \
  X(kCausal, "causal")                                                       \
  X(kMmPrefixQueryRangeTensor, "mm_prefix_query_range_tensor")               \
  X(kRswaPrefixLens, "rswa_prefix_lens")                                     \
  X(kRswaWindow, "rswa_window")                                              \
  X(kRswaWindowTensor, "rswa_window_tensor")                                 \
  X(kAotSchedule, "aot_schedule")                                            \
  X(kSchedulerMetadataBuffer, "scheduler_metadata_buffer")                   \
  FLASH_ATTN_SCHEDULE_FIELDS(X, kScheduler, "scheduler_")                    \
  X(kUseCascade, "use_cascade")                                              \
  X(kCommonPrefixLen, "common_prefix_len")                                   \
  X(kCuPrefixQueryLens, "cu_prefix_query_lens")                              \
  X(kPrefixKvLens, "prefix_kv_lens")                                         \
  X(kSuffixKvLens, "suffix_kv_lens")                                         \
  X(kPrefixSchedulerMetadata, "prefix_scheduler_metadata")                   \
  FLASH_ATTN_SCHEDULE_FIELDS(X, kPrefixScheduler, "prefix_scheduler_")
ATTN_NAMED_LIST(Field, FLASH_ATTN_FIELDS);
constexpr size_t kPlainFieldCount = kUseCascade;  // the fields of a build without cascade
constexpr size_t kScheduleBase = kSchedulerBatchSize;
constexpr size_t kPrefixScheduleBase = kPrefixSchedulerBatchSize;
static_assert(kSchedulerNumSplits - kScheduleBase == kSchedNumSplits &&
              kPrefixSchedulerNumSplits - kPrefixScheduleBase == kSchedNumSplits);

#define FLASH_ATTN_BUFFERS(X)                            \
  X(kBufCuPrefixQueryLens, "cu_prefix_query_lens")      \
  X(kBufPrefixKvLens, "prefix_kv_lens")                 \
  X(kBufSuffixKvLens, "suffix_kv_lens")                 \
  X(kBufDcpContextKvLens, "dcp_context_kv_lens")        \
  X(kBufSchedulerMetadata, "scheduler_metadata")        \
  X(kBufRswaPrefixLens, "persistent_rswa_prefix_lens")  \
  X(kBufRswaWindowTensor, "persistent_rswa_window_tensor") \
  X(kBufMmQueryRanges, "mm_prefix_query_ranges_gpu")    \
  X(kBufMmQueryRangesCpu, "mm_prefix_query_ranges_cpu")
ATTN_NAMED_LIST(Buffer, FLASH_ATTN_BUFFERS);

bool full_cuda_graph(const BuilderConfig& c) { return has_full_cudagraphs(c.cudagraph_mode); }

// get_flash_attn_version() as FlashAttentionMetadataBuilder asks it: None (0 here) on ROCm, where
// vLLM's FlashAttention is not vllm_flash_attn (so no FA3 AOT schedule and the class level
// UNIFORM_BATCH); the version flash_attn_version() picks elsewhere.
int32_t builder_fa_version(const BuilderConfig& c) {
  return c.platform_rocm ? 0 : flash_attn_version(c);
}

/// vLLM's self.max_cudagraph_size: the engine's max capture size (rounded for spec decode),
/// 0 when none is configured.
int64_t max_cudagraph_size(const BuilderConfig& c) {
  return c.max_cudagraph_capture_size > 0 ? c.resolved_max_cudagraph_capture_size() : 0;
}

int64_t scheduler_metadata_entries(const BuilderConfig& c) {
  // FA3's scheduler metadata: 1 + round_up(batch, 4) * 4 int32 (a tile-count semaphore and four
  // vectors per batch element), for the largest batch a captured graph can hold.
  const int64_t batch = std::max<int64_t>(c.max_num_seqs, max_cudagraph_size(c));
  return 1 + (batch + 3) / 4 * 4 * 4;
}

std::vector<BufferRequest> plan(const BuilderConfig& c) {
  const bool aot = builder_fa_version(c) == 3;
  const size_t seqs = static_cast<size_t>(c.max_num_seqs) * sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kBufCuPrefixQueryLens, 2 * sizeof(int32_t));
  p.set(kBufPrefixKvLens, sizeof(int32_t));
  p.set(kBufSuffixKvLens, seqs);
  p.set(kBufDcpContextKvLens, c.decode_context_parallel_size > 1 ? seqs : 0);
  p.set(kBufSchedulerMetadata,
        full_cuda_graph(c) && aot
            ? static_cast<size_t>(scheduler_metadata_entries(c)) * sizeof(int32_t)
            : 0);
  // vLLM 0.33: R-SWA buffers with model_config.rswa_window; the mm_prefix staging (host) and
  // device buffers, (max_num_batched_tokens, 2) int32, with model_config.is_mm_prefix_lm.
  const bool rswa = c.rswa_window > 0;
  const size_t mm = c.is_mm_prefix_lm
                        ? static_cast<size_t>(c.max_num_batched_tokens) * 2 * sizeof(int32_t)
                        : 0;
  p.set(kBufRswaPrefixLens, rswa ? seqs : 0);
  p.set(kBufRswaWindowTensor, rswa ? sizeof(int32_t) : 0);
  p.set(kBufMmQueryRanges, mm);
  p.set(kBufMmQueryRangesCpu, c.device.is_cuda() ? mm : 0, /*host=*/true);
  return p.requests();
}

// impl.sliding_window of one layer, as FlashAttentionImpl sets it from window_left.
std::pair<int32_t, int32_t> layer_window(int32_t window_left, int32_t attn_type) {
  if (window_left < 0) return {-1, -1};
  return {window_left, attn_type == kAttnEncoderOnly ? window_left : 0};
}

// vLLM 0.33's _maybe_symmetrize_window, applied to the window of every get_scheduler_metadata
// call (and to the layer's own call): a causal sliding window (w, 0) becomes (w, w) when the call
// is non-causal (causal False, or a per-request causal tensor whatever it holds), so that
// bidirectional queries attend both ways; full attention (-1, -1) and windows already
// symmetric (an encoder-only layer's) stay as they are.
std::pair<int32_t, int32_t> maybe_symmetrize_window(std::pair<int32_t, int32_t> window,
                                                    bool non_causal) {
  if (window.first >= 0 && window.second == 0 && non_causal) return {window.first, window.first};
  return window;
}

struct ScheduleArgs {
  int64_t batch_size;
  Tensor cu_seqlens_q;
  int64_t max_seqlen_q;
  Tensor seqlens;
  int64_t max_seqlen_k;
  bool causal;
  std::optional<Tensor> causal_tensor = std::nullopt;  ///< 0.33's per-request causal, when given.
};

class FlashAttnBuilder final : public Builder {
 public:
  FlashAttnBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                   const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(config), config.allocator, config.workspace,
                 config.workspace_size) {
    init_metadata(name_vector(kFieldNames, kPlainFieldCount));
    init_cascade_metadata(name_vector(kFieldNames));
    const BuilderConfig& c = this->config();
    aot_schedule_ = builder_fa_version(c) == 3;
    use_full_cuda_graph_ = full_cuda_graph(c);
    max_cudagraph_size_ = max_cudagraph_size(c);
    if (use_full_cuda_graph_ && aot_schedule_) {
      max_num_splits_ = c.flash_attn_max_num_splits_for_cuda_graph;
      scheduler_metadata_ =
          make_vector(buffers_.get(kBufSchedulerMetadata), c.device, kInt32,
                      scheduler_metadata_entries(c));
    }
    // qkv dtype of the schedule: fp8 caches run FlashAttention in e4m3; otherwise the spec's.
    qkv_dtype_ = c.cache_dtype == kKvDtypeFp8E4m3 ? kKvDtypeFp8E4m3 : spec.dtype;
    init_aot_sliding_window();
    if (c.rswa_window > 0)  // torch.tensor([rswa_window]) on the device, once
      ops::fill_i32(exec(nullptr), buffers_.as<int32_t>(kBufRswaWindowTensor), 1, c.rswa_window);
  }

  bool supports_update_block_table() const override { return true; }
  /// Values are read by DCP (the context split), cascade (the prefix split) and the prefix-LM
  /// query ranges; otherwise the result is views of the inputs plus scalars (and R-SWA's copy
  /// of num_reqs entries), so ATTN_VALIDATE_TRUSTED skips the value checks.
  bool reads_batch_values(int64_t common_prefix_len, const CommonMetadata& common) const override {
    return config().decode_context_parallel_size > 1 || common_prefix_len > 0 ||
           (common.mm_req_doc_ranges && config().is_mm_prefix_lm);
  }
  /// vLLM 0.33: only without DCP (build-time host decisions such as the skipped DCP context
  /// are not refreshed in place). Its update re-runs FA3's get_scheduler_metadata with the
  /// build's inputs: libattn returns those (scheduler_*), views of the advanced inputs, so the
  /// runtime re-runs it; nothing else changes.
  std::string draft_decode_update_refusal() const override {
    return config().decode_context_parallel_size > 1
               ? "decode context parallel (vLLM 0.33 keeps the fused draft path off with DCP)"
               : "";
  }

  bool use_cascade_attention(const CascadeQuery& q) const override {
    return flash_attn_use_cascade_attention(q);
  }

 protected:
  void do_build(int64_t common_prefix_len, const CommonMetadata& common, bool fast_build,
                const ops::Exec& exec) override {
    const BuilderConfig& c = config();
    const int32_t block_size = spec().block_size;
    if (common_prefix_len > 0 && common_prefix_len % block_size != 0)
      invalid("common_prefix_len=", common_prefix_len, " is not a multiple of block_size=",
              block_size, " (FlashAttention's cascade attention needs whole blocks)");
    if (common_prefix_len > common.max_seq_len)
      invalid("common_prefix_len=", common_prefix_len, " exceeds common->max_seq_len=",
              common.max_seq_len);

    const int64_t num_reqs = common.num_reqs;
    const int64_t num_actual_tokens = common.num_actual_tokens;
    const bool aot = aot_schedule_ && !fast_build;

    int64_t max_num_splits = 0;  // 0: FlashAttention's own heuristics (not graph-safe).
    if (use_full_cuda_graph_ && max_cudagraph_size_ > 0 && num_actual_tokens <= max_cudagraph_size_)
      max_num_splits = max_num_splits_;
    if (c.batch_invariant) max_num_splits = 1;

    Metadata& m = metadata();
    m.reset();
    const bool use_cascade = common_prefix_len > 0;
    int64_t max_dcp_context_kv_len = 0;
    std::optional<ScheduleArgs> schedule, prefix_schedule;

    if (c.decode_context_parallel_size > 1) {
      // vLLM 0.33: a persistent max_num_seqs buffer, zero past num_reqs, handed out [:num_reqs].
      int32_t* lens = buffers_.as<int32_t>(kBufDcpContextKvLens);
      ops::dcp_context_kv_lens(exec, common.query_start_loc->as<const int32_t>(),
                               common.seq_lens->as<const int32_t>(), num_reqs,
                               c.decode_context_parallel_size, c.dcp_rank,
                               c.cp_kv_cache_interleave_size, lens);
      ops::fill_i32(exec, lens + num_reqs, c.max_num_seqs - num_reqs, 0);
      const Tensor t = make_vector(lens, c.device, kInt32, num_reqs);
      m.set_tensor(kDcpContextKvLens, t, /*in_builder_buffer=*/true);
      // Decided on the host from rank-invariant inputs (the global contexts), as vLLM does with
      // seq_lens_cpu_upper_bound; without a host seq_lens it never skips.
      const bool skip = common.seq_lens_host != nullptr &&
                        ops::should_skip_dcp_context_attention(common.seq_lens_host,
                                                               common.qsl_host, num_reqs);
      if (common.max_query_len > 1) {
        const ops::DcpContextSplit split = ops::split_dcp_context_queries(
            common.qsl_host, num_reqs, common.seq_lens_host, common.max_query_len,
            num_actual_tokens);
        m.set_int(kNumDecodeReqs, split.num_decode_reqs);
        m.set_int(kNumPrefillReqs, split.num_prefill_reqs);
        m.set_int(kNumDecodeTokens, split.num_decode_tokens);
        m.set_int(kNumPrefillTokens, split.num_prefill_tokens);
      }
      if (!skip) {
        // The most tokens any rank holds: ceil(L / (N * I)) * I, without a device sync.
        const int64_t partitions =
            static_cast<int64_t>(c.decode_context_parallel_size) * c.cp_kv_cache_interleave_size;
        max_dcp_context_kv_len =
            (common.max_seq_len + partitions - 1) / partitions * c.cp_kv_cache_interleave_size;
        schedule = ScheduleArgs{num_reqs, *common.query_start_loc, common.max_query_len, t,
                                max_dcp_context_kv_len, false};
      }
    } else if (use_cascade) {
      int32_t* cu = buffers_.as<int32_t>(kBufCuPrefixQueryLens);
      int32_t* prefix = buffers_.as<int32_t>(kBufPrefixKvLens);
      int32_t* suffix = buffers_.as<int32_t>(kBufSuffixKvLens);
      ops::cascade_split(exec, common.seq_lens->as<const int32_t>(), num_reqs, num_actual_tokens,
                         common_prefix_len, cu, prefix, suffix);
      const Tensor cu_t = make_vector(cu, c.device, kInt32, 2);
      const Tensor prefix_t = make_vector(prefix, c.device, kInt32, 1);
      const Tensor suffix_t = make_vector(suffix, c.device, kInt32, num_reqs);
      m.set_tensor(kCuPrefixQueryLens, cu_t, true);
      m.set_tensor(kPrefixKvLens, prefix_t, true);
      m.set_tensor(kSuffixKvLens, suffix_t, true);
      prefix_schedule = ScheduleArgs{1, cu_t, num_actual_tokens, prefix_t, common_prefix_len, false};
      schedule = ScheduleArgs{num_reqs,  *common.query_start_loc,          common.max_query_len,
                              suffix_t, common.max_seq_len - common_prefix_len, true};
    } else if (aot) {  // (only FA3's AOT schedule reads it: three tensor copies otherwise)
      schedule = ScheduleArgs{num_reqs,         *common.query_start_loc, common.max_query_len,
                              *common.seq_lens, common.max_seq_len,    common.causal,
                              common.causal_per_request};
    }

    m.set_int(kNumActualTokens, num_actual_tokens);
    m.set_int(kMaxQueryLen, common.max_query_len);
    m.set_tensor(kQueryStartLoc, *common.query_start_loc);
    m.set_int(kMaxSeqLen, common.max_seq_len);
    m.set_tensor(kSeqLens, *common.seq_lens);
    m.set_tensor(kBlockTable, *common.block_table_tensor);
    m.set_tensor(kSlotMapping, *common.slot_mapping);
    if (use_cascade) {  // only the cascade variant has these fields
      m.set_bool(kUseCascade, true);
      m.set_int(kCommonPrefixLen, common_prefix_len);
    }
    m.set_int(kMaxDcpContextKvLen, max_dcp_context_kv_len);
    for (size_t f : {kNumDecodeReqs, kNumPrefillReqs, kNumDecodeTokens, kNumPrefillTokens})
      if (m.field(f).kind == FieldKind::kNone) m.set_int(f, 0);
    m.set_int(kMaxNumSplits, max_num_splits);
    // vLLM 0.33's `causal: bool | Tensor`: the per-request int32 tensor when the batch has one.
    if (common.causal_per_request)
      m.set_tensor(kCausal, *common.causal_per_request);
    else
      m.set_bool(kCausal, common.causal);
    set_mm_prefix_and_rswa(m, common, exec);
    m.set_bool(kAotSchedule, aot);
    if (aot && use_full_cuda_graph_) m.set_tensor(kSchedulerMetadataBuffer, scheduler_metadata_, true);
    if (aot && schedule) {
      write_schedule(m, kScheduleBase, *schedule, max_num_splits);
      if (prefix_schedule) write_schedule(m, kPrefixScheduleBase, *prefix_schedule, max_num_splits);
    }
  }

 private:
  void init_aot_sliding_window() {
    if (!aot_schedule_) return;
    const BuilderConfig& c = config();
    std::set<std::pair<int32_t, int32_t>> windows;
    if (!c.layers.empty()) {
      for (const PerLayerParams& p : c.layers) windows.insert(layer_window(p.window_left, c.attn_type));
    } else {
      const int32_t left = spec().kind == kKvSlidingWindow ? spec().sliding_window - 1 : -1;
      windows.insert(layer_window(left, c.attn_type));
    }
    if (windows.size() == 1) {
      aot_window_ = *windows.begin();
    } else if (windows.size() > 1) {
      aot_schedule_ = false;  // FA3's AOT scheduler needs one window for every layer.
    }
  }

  // vLLM 0.33's mm_prefix_query_range_tensor and R-SWA fields (FlashAttentionMetadataBuilder
  // .build's tail).
  void set_mm_prefix_and_rswa(Metadata& m, const CommonMetadata& common, const ops::Exec& exec) {
    const BuilderConfig& c = config();
    if (common.mm_req_doc_ranges && c.is_mm_prefix_lm) {
      // vLLM asserts "mm_prefix requires seq_lens_cpu_upper_bound" and reads the bound: on
      // async spec-decode rows it exceeds the exact length, moving those rows' positions past
      // the ranges. libattn reads the bound when given, else its exact host lengths.
      const int32_t* lens = common.seq_lens_cpu_upper_bound
                                ? common.seq_lens_cpu_upper_bound->as<const int32_t>()
                                : common.host_seq_lens();
      if (lens == nullptr)
        invalid("common->seq_lens_cpu_upper_bound is NULL (and no host seq_lens is given); "
                "FLASH_ATTN needs it with common->mm_req_doc_ranges (vLLM 0.33: mm_prefix "
                "requires seq_lens_cpu_upper_bound)");
      const Tensor& rows = *common.mm_req_doc_ranges;
      int32_t* staging = c.device.is_cuda() ? buffers_.as<int32_t>(kBufMmQueryRangesCpu)
                                            : buffers_.as<int32_t>(kBufMmQueryRanges);
      if (common.qsl_host[common.num_reqs] > c.max_num_batched_tokens)
        invalid("common->query_start_loc_cpu[num_reqs]=", common.qsl_host[common.num_reqs],
                " exceeds config->max_num_batched_tokens=", c.max_num_batched_tokens,
                " (the mm_prefix staging buffer's rows)");
      const int64_t n = ops::fill_mm_prefix_query_ranges(
          rows.as<const int32_t>(), rows.ndim > 0 ? rows.shape[0] : 0, common.qsl_host, lens,
          common.num_reqs, staging);
      if (n > 0) {
        int32_t* dst = buffers_.as<int32_t>(kBufMmQueryRanges);
        if (c.device.is_cuda()) copy_i32_into_buffer(exec, staging, true, 2 * n, dst);
        m.set_tensor(kMmPrefixQueryRangeTensor, make_matrix(dst, c.device, kInt32, n, 2, 2),
                     true);
      }
    }
    if (c.rswa_window > 0 && common.rswa_prefix_lens) {
      const Tensor& src = *common.rswa_prefix_lens;
      int32_t* dst = buffers_.as<int32_t>(kBufRswaPrefixLens);
      copy_i32_into_buffer(exec, src.as<const int32_t>(), src.host_accessible(),
                           common.num_reqs, dst);
      m.set_tensor(kRswaPrefixLens, make_vector(dst, c.device, kInt32, common.num_reqs), true);
      m.set_int(kRswaWindow, c.rswa_window);
      m.set_tensor(kRswaWindowTensor,
                   make_vector(buffers_.as<int32_t>(kBufRswaWindowTensor), c.device, kInt32, 1),
                   true);
    }
  }

  void write_schedule(Metadata& m, size_t base, const ScheduleArgs& a, int64_t num_splits) const {
    const BuilderConfig& c = config();
    m.set_int(base + kSchedBatchSize, a.batch_size);
    m.set_int(base + kSchedMaxSeqlenQ, a.max_seqlen_q);
    m.set_int(base + kSchedMaxSeqlenK, a.max_seqlen_k);
    m.set_int(base + kSchedNumHeadsQ,
              static_cast<int64_t>(c.num_attention_heads) * c.decode_context_parallel_size);
    m.set_int(base + kSchedNumHeadsKv, spec().num_kv_heads);
    m.set_int(base + kSchedHeaddim, spec().head_size);
    m.set_tensor(base + kSchedCacheSeqlens, a.seqlens, metadata_field_in_buffer(a.seqlens));
    m.set_tensor(base + kSchedCuSeqlensQ, a.cu_seqlens_q, metadata_field_in_buffer(a.cu_seqlens_q));
    m.set_int(base + kSchedQkvDtype, qkv_dtype_);
    m.set_int(base + kSchedPageSize, spec().block_size);
    if (a.causal_tensor)
      m.set_tensor(base + kSchedCausal, *a.causal_tensor);
    else
      m.set_bool(base + kSchedCausal, a.causal);
    // The builder's one AOT window, symmetrized for a non-causal call: the per-request tensor,
    // causal=false, and DCP's context pass, which vLLM 0.33 schedules with causal=False.
    const std::pair<int32_t, int32_t> window =
        maybe_symmetrize_window(aot_window_, a.causal_tensor.has_value() || !a.causal);
    m.set_int(base + kSchedWindowLeft, window.first);
    m.set_int(base + kSchedWindowRight, window.second);
    m.set_int(base + kSchedNumSplits, num_splits);
  }

  bool metadata_field_in_buffer(const Tensor& t) const {
    for (size_t b = 0; b < kBufferCount; ++b)
      if (t.data != nullptr && t.data == buffers_.get(b)) return true;
    return false;
  }

  PersistentBuffers buffers_;
  bool aot_schedule_ = false;
  bool use_full_cuda_graph_ = false;
  int64_t max_cudagraph_size_ = 0;
  int64_t max_num_splits_ = 0;
  int32_t qkv_dtype_ = kKvDtypeBfloat16;
  std::pair<int32_t, int32_t> aot_window_{-1, -1};
  Tensor scheduler_metadata_;
};

void check_supported(const BackendDescriptor& d, const KvCacheSpec& spec,
                     const BuilderConfig& config) {
  check_spec_kind(d, spec);
  if (spec.block_size % 16 != 0)
    fail(Status::kUnsupported, "FLASH_ATTN needs kv_cache_spec->block_size to be a multiple of "
                               "16, got ", spec.block_size);
  // vLLM 0.33's FlashAttentionBackend.supports_head_size: multiples of 8, up to 256, or up to
  // 512 where FlashAttention 4 runs
  const int32_t version = flash_attn_version(config);
  const int32_t max_head = version == 4 ? 512 : 256;
  if (spec.head_size % 8 != 0 || spec.head_size > max_head)
    fail(Status::kUnsupported, "FLASH_ATTN supports head sizes that are multiples of 8 up to "
                               "256 (512 on FlashAttention 4), got kv_cache_spec->head_size=",
         spec.head_size, " on FlashAttention ", version,
         " (config->flash_attn_version, else the device capability's)");
  if (config.cache_dtype == kKvDtypeFp8E5m2)
    fail(Status::kUnsupported, "FLASH_ATTN runs fp8 KV caches as e4m3 only; "
                               "config->cache_dtype=FP8_E5M2 is not supported");
}

}  // namespace

int32_t flash_attn_version(const BuilderConfig& config) {
  const int32_t capability = resolved_device_capability(config);
  const int32_t major = capability / 10;
  int32_t version = major == 9 ? 3 : (major == 10 ? 4 : 2);
  if (config.flash_attn_version != 0) version = config.flash_attn_version;
  if (major >= 10 && version == 3) version = 4;
  if (config.batch_invariant && version == 4) version = 2;
  return version;
}

extern const BackendDescriptor kFlashAttnBackend;
const BackendDescriptor kFlashAttnBackend{
    kName,
    "0.13-0.33 (partial)",
    kPagedAttentionKinds,
    0,
    [](const BackendDescriptor&, const KvCacheSpec&, const BuilderConfig& config) -> int32_t {
      // vLLM 0.33: FA3 and FA4 support full graphs for every batch; FA2 (and ROCm, where the
      // version is None) is UNIFORM_BATCH so that runtimes drop to FULL_AND_PIECEWISE.
      const int32_t version = builder_fa_version(config);
      return version == 3 || version == 4 ? kCgAlways : kCgUniformBatch;
    },
    check_supported,
    [](const BackendDescriptor&, const KvCacheSpec&, const BuilderConfig& config) {
      return plan(config);
    },
    create_builder_of<FlashAttnBuilder>,
};

// vLLM 0.33's FLASH_ATTN_DIFFKV (flash_attn_diffkv.py): FlashAttentionBackend with its own name
// and impl (K and V of different head sizes packed in one cache; the spec's head_size_v); its
// builder is FlashAttentionMetadataBuilder itself, so level, threshold, update_block_table and
// every field are FLASH_ATTN's. vLLM selects it only where FlashAttention 3 or 4 runs
// (is_supported_on_current_device), which the builder does not check: neither does libattn.
extern const BackendDescriptor kFlashAttnDiffKvBackend;
const BackendDescriptor kFlashAttnDiffKvBackend{
    "FLASH_ATTN_DIFFKV",
    "0.33 (partial, as FLASH_ATTN)",
    kPagedAttentionKinds,
    0,
    kFlashAttnBackend.cudagraph_support,
    check_supported,
    kFlashAttnBackend.buffer_plan,
    create_builder_of<FlashAttnBuilder>,
};

// vLLM 0.33's Qwen4-exp QSA owner (models/qwen4_exp/{nvidia,amd}/qsa.py): its backend
// (get_name() QWEN4_EXP_QSA_TRITON on both platforms) builds with Qwen4ExpQSAMetadataBuilder, a
// FlashAttentionMetadataBuilder subclass whose only change to the metadata side is the class
// level UNIFORM_BATCH (decode and target-verify graphs, whatever the FlashAttention version):
// threshold, update_block_table and every field are FLASH_ATTN's. The AMD subclass also reserves
// Octave split-KV workspace in __init__ (no metadata), and on ROCm get_flash_attn_version() is
// None (no FA3 AOT schedule). Both take the layer's FullAttentionSpec only (vLLM's QSA impl
// refuses sliding windows, and the owner is a decoder layer). docs/backends/flash_attn.md.
namespace {
void check_qwen4_qsa(const BackendDescriptor& d, const KvCacheSpec& spec,
                     const BuilderConfig& config) {
  check_supported(d, spec, config);
  const bool rocm = d.variant == 1;
  if (rocm && !config.platform_rocm)
    fail(Status::kUnsupported, d.name, " is vLLM 0.33's ROCm QSA builder "
         "(models/qwen4_exp/amd/qsa.py): config->platform_rocm=0; on CUDA use "
         "QWEN4_EXP_QSA_TRITON");
  if (!rocm && config.platform_rocm)
    fail(Status::kUnsupported, d.name, " is vLLM 0.33's CUDA QSA builder "
         "(models/qwen4_exp/nvidia/qsa.py): config->platform_rocm=1; on ROCm use "
         "QWEN4_EXP_QSA_TRITON_ROCM");
}
}  // namespace

extern const BackendDescriptor kQwen4ExpQsaTritonBackend;
const BackendDescriptor kQwen4ExpQsaTritonBackend{
    "QWEN4_EXP_QSA_TRITON",
    "0.33 (partial, as FLASH_ATTN)",
    kv_kind_bit(kKvFullAttention),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    check_qwen4_qsa,
    kFlashAttnBackend.buffer_plan,
    create_builder_of<FlashAttnBuilder>,
};

extern const BackendDescriptor kQwen4ExpQsaTritonRocmBackend;
const BackendDescriptor kQwen4ExpQsaTritonRocmBackend{
    "QWEN4_EXP_QSA_TRITON_ROCM",
    "0.33 (partial, as FLASH_ATTN)",
    kv_kind_bit(kKvFullAttention),
    1,
    fixed_cudagraph_support<kCgUniformBatch>,
    check_qwen4_qsa,
    kFlashAttnBackend.buffer_plan,
    create_builder_of<FlashAttnBuilder>,
};

}  // namespace attn::backends
