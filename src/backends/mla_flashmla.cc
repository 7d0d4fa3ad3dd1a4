// FLASHMLA: vLLM 0.33's FlashMLAMetadataBuilder (mla/flashmla.py). Its _build_decode adds the
// inputs of FlashMLA's get_mla_metadata / get_mla_metadata_dense_fp8 ("decode_scheduler_*"; the
// scheduler object itself is FlashMLA's, filled lazily), the persistent buffers vLLM copies the
// fp8 schedule into under full CUDA graphs, and the batch-invariant one-partition schedule vLLM
// builds itself (pure index math, computed here).
#include "backends/mla_common.h"
#include "core/error.h"

namespace attn::backends {
namespace {

constexpr MlaClass kFlashMla =
    MlaClass("FLASHMLA", kCgUniformBatch, QueryLenSupport::kUniform).threshold(128).blocks(64);

/// FlashMLAMetadataBuilder's decode additions (FlashMLADecodeMetadata's order).
#define FLASHMLA_DECODE_FIELDS(X)                                                  \
  X(kSchedulerMetadata, "decode_scheduler_metadata")                               \
  X(kCacheSeqlens, "decode_scheduler_cache_seqlens")                               \
  X(kNumQTokensPerHeadK, "decode_scheduler_num_q_tokens_per_head_k")               \
  X(kNumHeadsK, "decode_scheduler_num_heads_k")                                    \
  X(kIsFp8Kvcache, "decode_scheduler_is_fp8_kvcache")                              \
  X(kTileSchedulerMetadata, "decode_tile_scheduler_metadata")                      \
  X(kNumSplits, "decode_num_splits")                                               \
  X(kTileSchedulerMetadataBuffer, "decode_tile_scheduler_metadata_buffer")         \
  X(kNumSplitsBuffer, "decode_num_splits_buffer")
ATTN_NAMED_LIST(Field, FLASHMLA_DECODE_FIELDS);

#define FLASHMLA_BUFFERS(X)                                                        \
  X(kBufTile, "decode_tile_scheduler_metadata")                                    \
  X(kBufNumSplits, "decode_num_splits")                                            \
  X(kBufTileBuffer, "decode_tile_scheduler_metadata_buffer")                       \
  X(kBufNumSplitsBuffer, "decode_num_splits_buffer")
ATTN_NAMED_LIST(Buffer, FLASHMLA_BUFFERS);

/// The persistent fp8 tile-scheduler buffers: with an fp8 cache and full CUDA graphs vLLM 0.33
/// copies get_mla_metadata_dense_fp8's output into a zeroed (num_SMs, 8) and a
/// (max_num_seqs + 1) int32 buffer (config->num_sms is vLLM's num_compute_units()).
bool fp8_graph_buffers(const BuilderConfig& c) {
  return is_fp8_cache(c) && has_full_cudagraphs(c.cudagraph_mode);
}
/// vLLM's batch-invariant decode replaces FlashMLA's schedule by one partition (16-bit caches).
bool fixed_tiles(const BuilderConfig& c) { return c.batch_invariant && !is_fp8_cache(c); }

void check_flashmla(const KvCacheSpec&, const BuilderConfig& c) {
  if (fp8_graph_buffers(c) && c.num_sms <= 0)
    invalid("config->num_sms=", c.num_sms,
            ": FLASHMLA with an fp8 KV cache and full CUDA graphs keeps a (num_SMs, 8) "
            "tile-scheduler buffer (vLLM's num_compute_units()); set config->num_sms");
}

class FlashMlaBuilder final : public MlaCommonBuilder {
 public:
  explicit FlashMlaBuilder(const MlaArgs& a)
      : MlaCommonBuilder(a, field_block(kFieldNames), {}, buffer_plan(a.spec, a.config)) {}

  static std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c) {
    std::vector<BufferRequest> r = MlaCommonBuilder::buffer_plan(spec, c);  // sized first
    const int64_t seqs = c.max_num_seqs, i32 = sizeof(int32_t);
    const bool fixed = fixed_tiles(c), graphs = fp8_graph_buffers(c);
    BufferPlan p(kBufferNames);
    p.set(kBufTile, fixed ? static_cast<size_t>(8 * i32) : 0);
    p.set(kBufNumSplits, fixed ? buffer_bytes("decode_num_splits", {seqs + 1, i32}) : 0);
    p.set(kBufTileBuffer,
          graphs ? buffer_bytes("decode_tile_scheduler_metadata_buffer", {c.num_sms, 8, i32}) : 0);
    p.set(kBufNumSplitsBuffer,
          graphs ? buffer_bytes("decode_num_splits_buffer", {seqs + 1, i32}) : 0);
    return appended(std::move(r), p);
  }

 protected:
  void check_batch(const CommonMetadata& c, const ops::BatchSplit& s, bool) override {
    const int64_t width = c.block_table_tensor->shape[1];
    if (s.num_decodes > 0 && fixed_tiles(config()) && width % 64 != 0)
      invalid("FLASHMLA's batch-invariant decode needs the block table width (", width,
              " columns) to be a multiple of 64 (vLLM asserts topk % 64 == 0)");
  }

  /// get_mla_metadata(cache_seqlens, num_q_tokens_per_head_k, num_heads_k=1, is_fp8_kvcache)
  /// and, with an fp8 cache, get_mla_metadata_dense_fp8 with the same first three; the query
  /// heads are this rank's times the DCP size (the heads DCP all-gathers).
  void build_decode(const MlaDecode& d, const ops::Exec& exec) override {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    m.set_tensor(at(kCacheSeqlens), d.seq_lens);
    m.set_int(at(kNumQTokensPerHeadK), d.max_query_len * cfg.num_attention_heads * dcp());
    m.set_int(at(kNumHeadsK), 1);
    m.set_bool(at(kIsFp8Kvcache), is_fp8_cache(cfg));
    if (fp8_graph_buffers(cfg)) {
      m.set_tensor(at(kTileSchedulerMetadataBuffer),
                   make_matrix(buffer(kBufTileBuffer), cfg.device, kInt32, cfg.num_sms, 8, 8),
                   true);
      m.set_tensor(at(kNumSplitsBuffer),
                   device_vector(kOwnBuffers + kBufNumSplitsBuffer, cfg.max_num_seqs + 1), true);
    }
    if (fixed_tiles(cfg)) {
      const int64_t width = d.common.block_table_tensor->shape[1];
      ops::flashmla_fixed_tile_schedule(exec, d.num_decodes, static_cast<int32_t>(width / 64),
                                        static_cast<int32_t*>(buffer(kBufTile)),
                                        static_cast<int32_t*>(buffer(kBufNumSplits)));
      m.set_tensor(at(kTileSchedulerMetadata),
                   make_matrix(buffer(kBufTile), cfg.device, kInt32, 1, 8, 8), true);
      m.set_tensor(at(kNumSplits), device_vector(kOwnBuffers + kBufNumSplits, d.num_decodes + 1),
                   true);
    }
  }

 private:
  using MlaCommonBuilder::at;
  size_t at(Field f) const { return decode_field(f); }
  void* buffer(Buffer b) const { return buffers_.get(kOwnBuffers + b); }
};

}  // namespace

extern const BackendDescriptor kFlashMlaBackend;
const BackendDescriptor kFlashMlaBackend =
    mla_descriptor<kFlashMla, FlashMlaBuilder, check_flashmla>();

}  // namespace attn::backends
