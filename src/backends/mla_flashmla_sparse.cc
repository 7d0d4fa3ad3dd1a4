// FLASHMLA_SPARSE: vLLM 0.33's FlashMLASparseMetadataBuilder (mla/flashmla_sparse.py): the sparse
// base build with uniform decodes, its threshold from the heads table of the device family, and
// FlashMLASparseMetadata's own fields: with an fp8_ds_mla cache the fp8_extra_metadata of the
// mixed batch (fewer than 32 heads) or of the separate prefill/decode path
// (_build_fp8_separate_prefill_decode: the decodes' uniform query length, split_prefill_chunks
// over the prefills, the workspace rows of their tokens). bfloat16 models, kernel blocks of 64.
#include <algorithm>
#include <utility>

#include "backends/persistent_copy.h"
#include "backends/sparse_mla_common.h"
#include "core/error.h"

namespace attn::backends {
namespace {

// require_uniform_decodes = True; varlen decodes are safe under DCP with interleave 1 (vLLM
// 0.33's comment: causality comes from the indexer's top-k indices); "fp8" is fp8_ds_mla.
constexpr MlaClass kFlashMlaSparse =
    MlaClass("FLASHMLA_SPARSE", kCgUniformBatch, QueryLenSupport::kUniform)
        .release("0.33 (partial)").threshold_table(SparseThresholds::kByCapability)
        .dcp_varlen(DcpVarlen::kInterleaveOne).blocks(64)
        .caches({kKvDtypeAuto, kKvDtypeBfloat16, kKvDtypeFp8E4m3});

/// MIN_HEADS_FOR_BF16_PREFILL: below it an fp8 cache runs the mixed batch.
constexpr int32_t kMinHeadsForBf16Prefill = 32;

/// FlashMLASparseMetadata's own fields (fp8_extra_metadata flattened).
#define FLASHMLA_SPARSE_FIELDS(X)                                                              \
  X(kSchedulerMetadata, "fp8_extra_metadata_scheduler_metadata")                               \
  X(kDummyBlockTable, "fp8_extra_metadata_dummy_block_table")                                  \
  X(kCacheLens, "fp8_extra_metadata_cache_lens")                                               \
  X(kNumPrefills, "fp8_extra_metadata_num_prefills")                                           \
  X(kNumDecodes, "fp8_extra_metadata_num_decodes")                                             \
  X(kNumPrefillTokens, "fp8_extra_metadata_num_prefill_tokens")                                \
  X(kNumDecodeTokens, "fp8_extra_metadata_num_decode_tokens")                                  \
  X(kDecodeSeqLens, "fp8_extra_metadata_decode_seq_lens")                                      \
  X(kDecodeSchedulerMetadata, "fp8_extra_metadata_decode_kernel_metadata_scheduler_metadata")  \
  X(kDecodeDummyBlockTable, "fp8_extra_metadata_decode_kernel_metadata_dummy_block_table")     \
  X(kDecodeCacheLens, "fp8_extra_metadata_decode_kernel_metadata_cache_lens")                  \
  X(kDecodeQueryLen, "fp8_extra_metadata_decode_decode_query_len")                             \
  X(kPrefillRequestIds, "fp8_extra_metadata_prefill_request_ids")                              \
  X(kPrefillWorkspaceStarts, "fp8_extra_metadata_prefill_workspace_starts")                    \
  X(kPrefillNumChunks, "fp8_extra_metadata_prefill_num_chunks")                                \
  X(kChunkTokenStart, "fp8_extra_metadata_prefill_chunk_token_start")                          \
  X(kChunkTokenEnd, "fp8_extra_metadata_prefill_chunk_token_end")                              \
  X(kChunkReqStartIdx, "fp8_extra_metadata_prefill_chunk_req_start_idx")                       \
  X(kChunkReqEndIdx, "fp8_extra_metadata_prefill_chunk_req_end_idx")                           \
  X(kChunkTotSeqlen, "fp8_extra_metadata_prefill_chunk_chunk_tot_seqlen")                      \
  X(kUseMixedBatch, "fp8_use_mixed_batch")
ATTN_NAMED_LIST(Field, FLASHMLA_SPARSE_FIELDS);

#define FLASHMLA_SPARSE_BUFFERS(X)                                                      \
  X(kBufMaxModelLen, "fp8_extra_metadata cache_lens")                                   \
  X(kBufDummyBlockTable, "fp8_extra_metadata dummy_block_table")                        \
  X(kBufRequestIds, "fp8_extra_metadata_prefill_request_ids")                           \
  X(kBufWorkspaceStarts, "fp8_extra_metadata_prefill_workspace_starts")                 \
  X(kBufPlanLens, "the fp8 prefill chunks' seq_lens_cpu_upper_bound")                   \
  /* host */                                                                            \
  X(kBufChunkLists, "the fp8 prefill chunks' lists")                                    \
  X(kBufPlanLensCpu, "the fp8 prefill chunks' seq_lens_cpu_upper_bound staging")
ATTN_NAMED_LIST(Buffer, FLASHMLA_SPARSE_BUFFERS);

/// The fp8 prefill chunk lists, each max_num_seqs int32 in kBufChunkLists.
enum ChunkList : size_t { kTokenStart, kTokenEnd, kReqStart, kReqEnd, kTotSeqlen, kChunkListCount };

/// _compute_fp8_decode_padded_heads: the fp8 decode kernel takes 64 or 128.
int32_t fp8_decode_padded_heads(int64_t heads) { return heads <= 64 ? 64 : 128; }

/// get_prefill_workspace_size: max_model_len * sparse_mla_prefill_workspace_factor (5, the
/// attention config's default; not a libattn input).
int64_t prefill_workspace_size(const BuilderConfig& c) {
  return static_cast<int64_t>(c.max_model_len) * 5;
}

/// An fp8 cache without the mixed batch: FP8SeparatePrefillDecode.
bool separate_fp8(const BuilderConfig& c) {
  return is_fp8_cache(c) && c.num_attention_heads >= kMinHeadsForBf16Prefill;
}

void check_flashmla_sparse(const KvCacheSpec& spec, const BuilderConfig& c) {
  require_bf16_model(kFlashMlaSparse, spec, c);
  const int32_t h = c.num_attention_heads;
  if (h <= 0)
    invalid("config->num_attention_heads=", h, ": ", kFlashMlaSparse.name,
            " needs this rank's query heads (its threshold table and fp8 path)");
  if (c.decode_context_parallel_size <= 1) return;
  // vLLM 0.33 raises NotImplementedError at construction (without prefill context
  // parallelism, which libattn does not have).
  if (h >= kMinHeadsForBf16Prefill)
    fail(Status::kUnsupported,
         "DCP for FlashMLA sparse is only supported on the mixed-batch fp8 path (num_heads < ",
         kMinHeadsForBf16Prefill, "), got config->num_attention_heads=", h);
  const int64_t gathered = static_cast<int64_t>(h) * c.decode_context_parallel_size;
  if (fp8_decode_padded_heads(h) != fp8_decode_padded_heads(gathered))
    fail(Status::kUnsupported,
         "DCP for FlashMLA sparse requires the local and DCP-gathered head counts to pad to "
         "the same fp8 decode kernel envelope; got ",
         h, " local heads (pad to ", fp8_decode_padded_heads(h), ") vs ", gathered,
         " gathered heads (pad to ", fp8_decode_padded_heads(gathered), ")");
}

class FlashMlaSparseBuilder final : public SparseMlaCommonBuilder {
 public:
  explicit FlashMlaSparseBuilder(const MlaArgs& a)
      : SparseMlaCommonBuilder(a, field_block(kFieldNames), buffer_plan(a.spec, a.config)) {
    const BuilderConfig& c = this->config();
    use_mixed_batch_ = c.num_attention_heads < kMinHeadsForBf16Prefill;
    if (is_fp8_cache(c))  // vLLM's max_model_len_tensor: torch.full
      ops::fill_i32(exec(nullptr), buf32(kBufMaxModelLen), c.max_num_seqs, c.max_model_len);
  }

  static std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c) {
    std::vector<BufferRequest> r = SparseMlaCommonBuilder::buffer_plan(spec, c);  // sized first
    const int64_t seqs = c.max_num_seqs, i32 = sizeof(int32_t);
    const int64_t tokens = std::max<int64_t>(1, c.max_num_batched_tokens);
    const int64_t fp8 = is_fp8_cache(c) ? 1 : 0, separate = separate_fp8(c) ? 1 : 0;
    BufferPlan p(kBufferNames);
    p.set(kBufMaxModelLen, buffer_bytes("fp8_extra_metadata cache_lens", {fp8 * seqs, i32}));
    p.set(kBufDummyBlockTable,
          buffer_bytes("fp8_extra_metadata dummy_block_table", {fp8 * seqs, i32}));
    p.set(kBufRequestIds,
          buffer_bytes("fp8_extra_metadata_prefill_request_ids", {separate * tokens, i32}));
    p.set(kBufWorkspaceStarts,
          buffer_bytes("fp8_extra_metadata_prefill_workspace_starts", {separate * seqs, i32}));
    p.set(kBufChunkLists,
          buffer_bytes("the fp8 prefill chunks' lists", {kChunkListCount, separate * seqs, i32}),
          true);
    for (const bool host : {false, true})
      p.set(host ? kBufPlanLensCpu : kBufPlanLens,
            buffer_bytes("the fp8 prefill chunks' seq_lens_cpu_upper_bound",
                         {separate * seqs, i32}),
            host);
    return appended(std::move(r), p);
  }

 protected:
  /// _build_fp8_separate_prefill_decode, its host part: the decodes' uniform query length and
  /// split_prefill_chunks over the prefills' seq_lens_cpu_upper_bound (else the host lengths;
  /// chunk lists in kBufChunkLists). Refuses what vLLM asserts.
  void plan_batch(const CommonMetadata& c, const ops::BatchSplit& s) override {
    Fp8Plan& p = fp8_ = Fp8Plan{};
    if (!is_fp8_cache(config()) || use_mixed_batch_) return;
    p.separate = true;
    if (c.num_actual_tokens == 0) return;  // vLLM returns an empty FP8SeparatePrefillDecode
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    if (nd > 0) {
      p.decode_query_len = c.qsl_host[1] - c.qsl_host[0];
      if (p.decode_query_len <= 0)
        invalid("FLASHMLA_SPARSE's fp8 decode path needs the first decode's query to be "
                "non-empty (vLLM asserts decode_query_len > 0), got query_start_loc[1] - "
                "query_start_loc[0] = ",
                p.decode_query_len);
      if (s.num_decode_tokens % p.decode_query_len != 0)
        invalid("FLASHMLA_SPARSE's fp8 decode path needs num_decode_tokens=", s.num_decode_tokens,
                " to be a multiple of the first decode's query length ", p.decode_query_len,
                " (vLLM asserts it)");
      p.active_decodes = s.num_decode_tokens / p.decode_query_len;
    }
    if (np == 0) return;
    const int64_t limit = prefill_workspace_size(config());
    const int32_t* lens = c.seq_lens_upper_bound() + nd;
    const int32_t* qsl = c.qsl_host + nd;
    int64_t i = 0;
    while (i < np) {
      const int64_t start = i;
      int64_t total = 0;
      while (i < np && total + lens[i] <= limit) total += lens[i++];
      if (i == start)
        invalid(c.seq_lens_cpu_upper_bound ? "common->seq_lens_cpu_upper_bound[" : "seq_lens[",
                nd + i, "]=", lens[i], " exceeds FLASHMLA_SPARSE's prefill "
                "workspace of ", limit, " rows (max_model_len * 5; vLLM asserts it)");
      const int64_t k = p.num_chunks++;
      chunk_list(kTokenStart)[k] = qsl[start];
      chunk_list(kTokenEnd)[k] = qsl[i];
      chunk_list(kReqStart)[k] = static_cast<int32_t>(start);
      chunk_list(kReqEnd)[k] = static_cast<int32_t>(i);
      chunk_list(kTotSeqlen)[k] = static_cast<int32_t>(total);
    }
  }

  /// FlashMLASparseMetadata's fp8 part.
  void finish_build(const CommonMetadata& c, const ops::BatchSplit& s,
                    const ops::Exec& exec) override {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    const int64_t nd = s.num_decodes, np = s.num_prefills, T = c.num_actual_tokens;
    m.set_bool(at(kUseMixedBatch), use_mixed_batch_);
    if (!is_fp8_cache(cfg)) return;  // fp8_extra_metadata is None
    if (!fp8_.separate) {
      // _build_fp8_mixed_decode_prefill: FlashMLA's lazily filled scheduler (None here: the
      // kernel library's object), one row of the dummy table and of the max_model_len tensor.
      m.set_tensor(at(kDummyBlockTable),
                   make_matrix(buf32(kBufDummyBlockTable), cfg.device, kInt32, 1, 1, 1), true);
      m.set_tensor(at(kCacheLens), device_vector(kSparseOwnBuffers + kBufMaxModelLen, 1), true);
      return;
    }
    if (T == 0) {  // FP8SeparatePrefillDecode(): zero counts, no parts
      for (const Field f : {kNumPrefills, kNumDecodes, kNumPrefillTokens, kNumDecodeTokens})
        m.set_int(at(f), 0);
      return;
    }
    m.set_int(at(kNumPrefills), np);
    m.set_int(at(kNumDecodes), fp8_.active_decodes);
    m.set_int(at(kNumPrefillTokens), T - s.num_decode_tokens);
    m.set_int(at(kNumDecodeTokens), s.num_decode_tokens);
    if (np > 0) {
      // the workspace starts restart where the host's chunks do: from seq_lens_cpu_upper_bound
      // (vLLM 0.33's workspace_rows), staged where the op runs; else the batch's lengths
      const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
      const int32_t* lens = exec.on_cuda ? c.seq_lens->as<const int32_t>() : c.seq_lens_host;
      const int32_t* bound =
          upper_bound_where_run(exec, c, nd, np, buf32(kBufPlanLensCpu), buf32(kBufPlanLens));
      ops::sparse_mla_fp8_prefill_metadata(exec, qsl, bound ? bound : lens, nd, np, T,
                                           prefill_workspace_size(cfg), buf32(kBufRequestIds),
                                           buf32(kBufWorkspaceStarts));
      m.set_tensor(at(kPrefillRequestIds), device_vector(kSparseOwnBuffers + kBufRequestIds, T),
                   true);
      m.set_tensor(at(kPrefillWorkspaceStarts),
                   device_vector(kSparseOwnBuffers + kBufWorkspaceStarts, np), true);
      m.set_int(at(kPrefillNumChunks), fp8_.num_chunks);
      static constexpr std::pair<Field, ChunkList> kLists[] = {{kChunkTokenStart, kTokenStart},
                                                              {kChunkTokenEnd, kTokenEnd},
                                                              {kChunkReqStartIdx, kReqStart},
                                                              {kChunkReqEndIdx, kReqEnd},
                                                              {kChunkTotSeqlen, kTotSeqlen}};
      for (const auto& [f, l] : kLists)
        m.set_tensor(at(f), host_list(chunk_list(l), fp8_.num_chunks), true);
    }
    if (nd > 0) {
      // vLLM 0.33 slices [:active_num_decodes]: a padded batch's count (num_decode_tokens
      // counts the padding) stops at the end of seq_lens (num_reqs) and of the persistent
      // buffers (max_num_seqs), as torch's slices do
      const int64_t k = fp8_.active_decodes;
      const int64_t k_buf = std::min<int64_t>(k, cfg.max_num_seqs);
      m.set_tensor(at(kDecodeSeqLens), rows_between(*c.seq_lens, 0, std::min(k, c.num_reqs)));
      m.set_tensor(at(kDecodeDummyBlockTable),
                   make_matrix(buf32(kBufDummyBlockTable), cfg.device, kInt32, k_buf, 1, 1), true);
      m.set_tensor(at(kDecodeCacheLens),
                   device_vector(kSparseOwnBuffers + kBufMaxModelLen, k_buf), true);
      m.set_int(at(kDecodeQueryLen), fp8_.decode_query_len);
    }
  }

 private:
  /// The fp8 separate prefill/decode plan of the batch (host, before the metadata changes).
  struct Fp8Plan {
    bool separate = false;  ///< fp8 cache without the mixed batch
    int64_t decode_query_len = 0;
    int64_t active_decodes = 0;  ///< num_decode_tokens / decode_query_len
    int64_t num_chunks = 0;      ///< split_prefill_chunks' chunks
  };

  using SparseMlaCommonBuilder::at;
  size_t at(Field f) const { return tail_field(f); }
  int32_t* buf32(Buffer b) const { return buffers_.as<int32_t>(kSparseOwnBuffers + b); }
  int32_t* chunk_list(ChunkList l) const {
    return buf32(kBufChunkLists) + static_cast<int64_t>(l) * config().max_num_seqs;
  }

  bool use_mixed_batch_ = false;
  Fp8Plan fp8_;
};

}  // namespace

extern const BackendDescriptor kFlashMlaSparseBackend;
const BackendDescriptor kFlashMlaSparseBackend =
    mla_descriptor<kFlashMlaSparse, FlashMlaSparseBuilder, check_flashmla_sparse>();

}  // namespace attn::backends
