// FLASH_ATTN_MLA: vLLM 0.33's FlashAttnMLAMetadataBuilder (mla/flashattn_mla.py). Varlen
// decodes up to 512 tokens; its _build_decode adds the decodes' query_start_loc and lengths and,
// with FlashAttention 3, the inputs of get_scheduler_metadata ("decode_scheduler_*") and the
// persistent buffer vLLM copies its result into under full CUDA graphs.
//
// FLASH_ATTN_MLA_XPU: vLLM 0.33's XPUFlashAttnMLAMetadataBuilder (the same file), the builder of
// XPUFlashAttnMLABackend, which vLLM's XPU platform selects for FLASH_ATTN_MLA (and which keeps
// that name: get_name() is inherited). libattn names it apart, as a runtime asks for a builder
// by name (docs/backends/mla.md). It is this builder with the subclass's class attributes
// (UNIFORM_SINGLE_TOKEN_DECODE, QueryLenSupport.SINGLE_ONLY, reorder_batch_threshold 1), its
// backend's kernel block sizes (multiples of 64), and no ahead-of-time schedule: its
// _schedule_decode returns None, and on XPU get_flash_attn_version() is 2, so neither the
// scheduler buffer nor the CUDA-graph split bound of FlashAttention 3 exists (max_num_splits 0;
// 1 with batch_invariant).
#include <algorithm>

#include "backends/flash_attn.h"
#include "backends/mla_common.h"
#include "core/vllm_release.h"

namespace attn::backends {
namespace {

constexpr MlaClass kFlashAttnMla =
    MlaClass("FLASH_ATTN_MLA", kCgUniformBatch, QueryLenSupport::kVarlen)
        .threshold(512).dcp_varlen(DcpVarlen::kInterleaveOne).blocks(16)
        .caches({kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16});

/// FlashAttnMLADecodeMetadata's additions, then get_scheduler_metadata's arguments.
#define FLASH_ATTN_MLA_DECODE_FIELDS(X)                                 \
  X(kQueryStartLoc, "decode_query_start_loc")                           \
  X(kMaxQueryLen, "decode_max_query_len")                               \
  X(kMaxSeqLen, "decode_max_seq_len")                                   \
  X(kSchedulerMetadata, "decode_scheduler_metadata")                    \
  X(kMaxNumSplits, "decode_max_num_splits")                             \
  X(kSchedulerMetadataBuffer, "decode_scheduler_metadata_buffer")       \
  X(kBatchSize, "decode_scheduler_batch_size")                          \
  X(kMaxSeqlenQ, "decode_scheduler_max_seqlen_q")                       \
  X(kMaxSeqlenK, "decode_scheduler_max_seqlen_k")                       \
  X(kNumHeadsQ, "decode_scheduler_num_heads_q")                         \
  X(kNumHeadsKv, "decode_scheduler_num_heads_kv")                       \
  X(kHeaddim, "decode_scheduler_headdim")                               \
  X(kCacheSeqlens, "decode_scheduler_cache_seqlens")                    \
  X(kQkvDtype, "decode_scheduler_qkv_dtype")                            \
  X(kHeaddimV, "decode_scheduler_headdim_v")                            \
  X(kPageSize, "decode_scheduler_page_size")                            \
  X(kCuSeqlensQ, "decode_scheduler_cu_seqlens_q")                       \
  X(kSchedulerCausal, "decode_scheduler_causal")                        \
  X(kNumSplits, "decode_scheduler_num_splits")
ATTN_NAMED_LIST(Field, FLASH_ATTN_MLA_DECODE_FIELDS);

#define FLASH_ATTN_MLA_BUFFERS(X) X(kBufSchedulerMetadata, "decode_scheduler_metadata_buffer")
ATTN_NAMED_LIST(Buffer, FLASH_ATTN_MLA_BUFFERS);

constexpr MlaClass kFlashAttnMlaXpu =
    MlaClass("FLASH_ATTN_MLA_XPU", kCgUniformSingleTokenDecode, QueryLenSupport::kSingleOnly)
        .release(kVllmRelease).threshold(1).dcp_varlen(DcpVarlen::kInterleaveOne).blocks(64)
        .caches({kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16});

/// FlashAttention 3 plans ahead of time (get_scheduler_metadata); never the XPU builder (its
/// _schedule_decode returns None; FlashAttention 2 on XPU).
bool aot_schedule(bool xpu, const BuilderConfig& c) { return !xpu && flash_attn_version(c) == 3; }

/// FA3's scheduler metadata entries: 1 + round_up(batch, 4) * 4 for the largest batch a graph
/// holds.
int64_t scheduler_metadata_entries(const BuilderConfig& c) {
  const int64_t batch = std::max<int64_t>(c.max_num_seqs, c.resolved_max_cudagraph_capture_size());
  return 1 + (batch + 3) / 4 * 4 * 4;
}

/// FLASH_ATTN_MLA's builder; `Xpu`: FLASH_ATTN_MLA_XPU's (the head of this file).
template <bool Xpu>
class FlashAttnMlaBuilder final : public MlaCommonBuilder {
 public:
  explicit FlashAttnMlaBuilder(const MlaArgs& a)
      : MlaCommonBuilder(a, field_block(kFieldNames), {}, buffer_plan(a.spec, a.config)) {
    const BuilderConfig& c = this->config();
    graph_size_ = c.resolved_max_cudagraph_capture_size();
    scheduler_entries_ = scheduler_metadata_entries(c);
    if (full_cuda_graphs() && aot_schedule(Xpu, c))
      max_num_splits_ = c.flash_attn_max_num_splits_for_cuda_graph;
    if (c.batch_invariant) max_num_splits_ = 1;
  }

  static std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c) {
    std::vector<BufferRequest> r = MlaCommonBuilder::buffer_plan(spec, c);  // sized first
    const bool scheduler = has_full_cudagraphs(c.cudagraph_mode) && aot_schedule(Xpu, c);
    BufferPlan p(kBufferNames);
    p.set(kBufSchedulerMetadata,
          scheduler ? static_cast<size_t>(scheduler_metadata_entries(c) * sizeof(int32_t)) : 0);
    return appended(std::move(r), p);
  }

 protected:
  void build_decode(const MlaDecode& d, const ops::Exec&) override {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    const Tensor qsl = rows_between(*d.common.query_start_loc, 0, d.num_decodes + 1);
    int64_t max_num_splits = 0;
    if (full_cuda_graphs() && graph_size_ > 0 && d.num_decode_tokens <= graph_size_)
      max_num_splits = max_num_splits_;
    if (cfg.batch_invariant) max_num_splits = 1;
    m.set_tensor(at(kQueryStartLoc), qsl);
    m.set_int(at(kMaxQueryLen), d.max_query_len);
    m.set_int(at(kMaxSeqLen), d.max_seq_len);
    m.set_int(at(kMaxNumSplits), max_num_splits);
    if (!aot_schedule(Xpu, cfg)) return;
    if (full_cuda_graphs())
      m.set_tensor(at(kSchedulerMetadataBuffer),
                   device_vector(kOwnBuffers + kBufSchedulerMetadata, scheduler_entries_),
                   true);
    m.set_int(at(kBatchSize), d.num_decodes);
    m.set_int(at(kMaxSeqlenQ), d.max_query_len);
    m.set_int(at(kMaxSeqlenK), d.max_seq_len);
    m.set_int(at(kNumHeadsQ), static_cast<int64_t>(cfg.num_attention_heads) * dcp());
    m.set_int(at(kNumHeadsKv), 1);
    m.set_int(at(kHeaddim), qk_rope_head_dim(cfg));
    m.set_tensor(at(kCacheSeqlens), d.seq_lens);
    m.set_int(at(kQkvDtype), spec().dtype);
    m.set_int(at(kHeaddimV), kv_lora_rank(cfg));
    m.set_int(at(kPageSize), spec().block_size);
    m.set_tensor(at(kCuSeqlensQ), qsl);
    m.set_bool(at(kSchedulerCausal), true);
    m.set_int(at(kNumSplits), max_num_splits);
  }

 private:
  using MlaCommonBuilder::at;
  size_t at(Field f) const { return decode_field(f); }

  int64_t max_num_splits_ = 0;  ///< flash_attn_max_num_splits_for_cuda_graph where it applies
  // Of the config, so resolved once here: the capture sizes cost ~7k instructions a call
  // (callgrind, docs/performance.md "Issue 31: the host-path outliers").
  int64_t graph_size_ = 0;         ///< vLLM's max_cudagraph_capture_size
  int64_t scheduler_entries_ = 0;  ///< entries of the scheduler metadata buffer
};

}  // namespace

extern const BackendDescriptor kFlashAttnMlaBackend;
const BackendDescriptor kFlashAttnMlaBackend =
    mla_descriptor<kFlashAttnMla, FlashAttnMlaBuilder<false>>();
extern const BackendDescriptor kFlashAttnMlaXpuBackend;
const BackendDescriptor kFlashAttnMlaXpuBackend =
    mla_descriptor<kFlashAttnMlaXpu, FlashAttnMlaBuilder<true>>();

}  // namespace attn::backends
