// MINIMAX_M3_SPARSE_INDEXER: vLLM 0.33's MiniMaxM3IndexerTritonMetadataBuilder
// (models/minimax_m3/common/indexer.py), the metadata of MiniMax-M3's lightning indexer on its
// Triton path (the index keys' side cache, one 128-wide key per token). Spec: MLAAttentionSpec
// (ATTN_KV_MLA: one vector a token, SparseCacheRole.INDEXER) at the kernel block size 128. Level
// UNIFORM_BATCH (a class attribute); reorder threshold 1 with supports_spec_as_decode; no
// update_block_table, no draft decode update.
//
// __init__ (MiniMaxM3IndexerMetadataBuilder): the model's sparse_num_index_heads
// (config->sparse_num_index_heads, required: vLLM reads the key; ATTN_ERR_UNSUPPORTED without
// it) and the TP world size (config->tensor_parallel_size); vLLM asserts that the larger is a
// multiple of the smaller, and a config that breaks it is refused by name. The heads a rank runs
// (max(1, heads / tp)) size nothing this builder returns.
//
// build(): split_decodes_and_prefills(threshold, require_uniform=True) with vLLM's assertions on
// the decodes (minimax_m3_split); the context lengths (compute_num_computed_tokens) into the
// persistent context_len_buffer (max_num_batched_tokens entries, as vLLM's); with prefills the
// prefill part: cu_seqlens_q (query_start_loc[num_decodes:] - num_decode_tokens), views of
// seq_lens, the context lengths and the block table from the first prefill on, the batch's
// max_query_len and max_seq_len; with decodes the decode part: seq_lens and block_table up to
// num_decodes, the batch's max_seq_len, the uniform decode_query_len and max_decode_query_len
// (the reorder threshold).
//
// MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM: vLLM 0.33's AMD MiniMaxM3IndexerMSAMetadataBuilder
// (models/minimax_m3/amd/indexer_msa.py; vLLM's MiniMaxM3IndexerMSABackend there inherits the name
// MINIMAX_M3_SPARSE_INDEXER, and its ROCm model picks it when msa_indexer_unsupported_reason
// finds nothing: ROCm gfx950, the AITER sparse PA attend, an fp8 index cache, 16 top-k blocks,
// sparse_block_size 128): the same build, then the prefill rows' causal shape (with prefills;
// vLLM asserts positions are given): over the prefill tokens, prefill_num_valid_pages
// (positions // sparse_block_size + 1, the base's num_valid_pages_buffer from num_decode_tokens
// on), prefill_row_req_id (searchsorted(cu_seqlens_q[1:], t, right=True)) and prefill_kv_lens
// (positions + 1), each in a persistent max_num_batched_tokens buffer as vLLM's. vLLM reads
// sparse_block_size from the model config; the only value its selection accepts is 128
// (MSA_SPARSE_BLOCK_SIZE), which libattn uses (kMiniMaxM3BlockSize).
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/minimax_m3_common.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "MINIMAX_M3_SPARSE_INDEXER";
constexpr const char* kMsaRocmName = "MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM";

/// MiniMaxM3IndexerMetadata's fields in its order, its prefill (MiniMaxM3IndexerPrefillMetadata)
/// and decode (MiniMaxM3IndexerDecodeMetadata) parts flattened with their prefixes; then the
/// AMD MiniMaxM3IndexerMSAMetadata's own three (MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM).
#define MINIMAX_M3_INDEXER_FIELDS(X)                    \
  ATTN_MINIMAX_M3_TOP_FIELDS(X, k)                      \
  X(kPrefillCuSeqlensQ, "prefill_cu_seqlens_q")         \
  X(kPrefillSeqLens, "prefill_seq_lens")                \
  X(kPrefillContextLens, "prefill_context_lens")        \
  X(kPrefillBlockTable, "prefill_block_table")          \
  X(kPrefillMaxQueryLen, "prefill_max_query_len")       \
  X(kPrefillMaxSeqLen, "prefill_max_seq_len")           \
  X(kDecodeSeqLens, "decode_seq_lens")                  \
  X(kDecodeBlockTable, "decode_block_table")            \
  X(kDecodeMaxSeqLen, "decode_max_seq_len")             \
  X(kDecodeDecodeQueryLen, "decode_decode_query_len")   \
  X(kDecodeMaxDecodeQueryLen, "decode_max_decode_query_len") \
  X(kPrefillNumValidPages, "prefill_num_valid_pages")   \
  X(kPrefillRowReqId, "prefill_row_req_id")             \
  X(kPrefillKvLens, "prefill_kv_lens")
ATTN_NAMED_LIST(Field, MINIMAX_M3_INDEXER_FIELDS);

/// The builder's context_len_buffer (vLLM's) and the prefills' cu_seqlens_q, which vLLM
/// allocates per build (max_num_seqs + 1 entries).
/// The MSA builder's three more (the base's num_valid_pages_buffer, its row_req_id_buffer and
/// kv_lens_buffer: max_num_batched_tokens entries each); the Triton builder's are empty.
#define MINIMAX_M3_INDEXER_BUFFERS(X)             \
  X(kBufContextLens, "context_len_buffer")        \
  X(kBufCuSeqlensQ, "prefill_cu_seqlens_q")       \
  X(kBufNumValidPages, "num_valid_pages_buffer")  \
  X(kBufRowReqId, "row_req_id_buffer")            \
  X(kBufKvLens, "kv_lens_buffer")
ATTN_NAMED_LIST(Buffer, MINIMAX_M3_INDEXER_BUFFERS);

template <bool kMsa>
std::vector<BufferRequest> plan(const KvCacheSpec&, const BuilderConfig& c) {
  const int64_t i32 = sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kBufContextLens, buffer_bytes("context_len_buffer", {c.max_num_batched_tokens, i32}));
  p.set(kBufCuSeqlensQ, buffer_bytes("prefill_cu_seqlens_q", {c.max_num_seqs + 1, i32}));
  for (const Buffer b : {kBufNumValidPages, kBufRowReqId, kBufKvLens})
    p.set(b, kMsa ? buffer_bytes(kBufferNames[b], {c.max_num_batched_tokens, i32}) : 0);
  return p.requests();
}

/// The spec checks (check_minimax_m3_spec), then MiniMaxM3IndexerMetadataBuilder.__init__'s
/// reads and assertions on the index heads and the TP world size.
void check(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& c) {
  check_minimax_m3_spec(d, spec, c);
  const int32_t heads = c.sparse_num_index_heads, tp = c.tensor_parallel_size;
  if (heads == 0)
    fail(Status::kUnsupported, "config->sparse_num_index_heads=0 (absent): ", d.name,
         " requires a MiniMax-M3 model's sparse_attention_config[\"sparse_num_index_heads\"] "
         "(vLLM 0.33 raises KeyError without it)");
  if (heads >= tp ? heads % tp != 0 : tp % heads != 0)
    invalid("config->sparse_num_index_heads=", heads, " and config->tensor_parallel_size=", tp,
            ": ", d.name,
            " needs the larger to be a multiple of the smaller (vLLM 0.33 asserts "
            "it to split the index heads over the ranks)");
}

template <bool kMsa>
class MiniMaxM3IndexerBuilder final : public Builder {
  static constexpr const char* kOwnName = kMsa ? kMsaRocmName : kName;

 public:
  MiniMaxM3IndexerBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                          const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kOwnName, config.device, plan<kMsa>(spec, config),
                 config.allocator, config.workspace, config.workspace_size) {
    init_metadata(kMsa ? name_vector(kFieldNames)
                       : name_vector(kFieldNames, kPrefillNumValidPages));
    init_reorder_batch_threshold(1, /*supports_spec_as_decode=*/true);
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const int64_t n = c.num_reqs;
    const int32_t threshold = reorder_batch_threshold().value_or(1);
    // Every check before anything is written: a refused batch leaves the metadata as it was.
    const MiniMaxM3Split s =
        minimax_m3_split(c, threshold, config().max_num_batched_tokens, kOwnName);
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    if (kMsa && np > 0) check_msa_prefill_rows(c);

    const Device dev = config().device;
    const Tensor& seq_lens = *c.seq_lens;
    const Tensor& bt = *c.block_table_tensor;
    int32_t* context_lens = buffers_.as<int32_t>(kBufContextLens);
    Metadata& m = metadata();
    const int32_t* qsl = minimax_m3_build_top(c, s, exec, context_lens, m);
    if (np > 0) {
      int32_t* cu_q = buffers_.as<int32_t>(kBufCuSeqlensQ);
      ops::minimax_m3_prefill_arrays(exec, qsl + nd, nullptr, np, s.num_decode_tokens, cu_q,
                                     nullptr);
      m.set_tensor(kPrefillCuSeqlensQ, make_vector(cu_q, dev, kInt32, np + 1), true);
      m.set_tensor(kPrefillSeqLens, rows_between(seq_lens, nd, n));
      m.set_tensor(kPrefillContextLens, make_vector(context_lens + nd, dev, kInt32, np), true);
      m.set_tensor(kPrefillBlockTable, rows_between(bt, nd, n));
      m.set_int(kPrefillMaxQueryLen, c.max_query_len);
      m.set_int(kPrefillMaxSeqLen, c.max_seq_len);
      if (kMsa) build_msa_prefill_rows(c, s, exec, cu_q);
    }
    if (nd > 0) {
      m.set_tensor(kDecodeSeqLens, rows_between(seq_lens, 0, nd));
      m.set_tensor(kDecodeBlockTable, rows_between(bt, 0, nd));
      m.set_int(kDecodeMaxSeqLen, c.max_seq_len);
      m.set_int(kDecodeDecodeQueryLen, s.decode_query_len);
      m.set_int(kDecodeMaxDecodeQueryLen, threshold);
    }
  }

 private:
  /// What the MSA build reads for its prefill rows, checked before anything is written: the
  /// positions (vLLM asserts them). The tokens fit its max_num_batched_tokens buffers: the
  /// common checks refuse a batch of more tokens.
  void check_msa_prefill_rows(const CommonMetadata& c) const {
    if (!c.positions)
      invalid("common->positions is NULL; ", kMsaRocmName,
              " reads the prefill tokens' positions for their causal page counts and lengths "
              "(vLLM asserts positions is not None when the batch has prefills)");
  }

  /// prefill_num_valid_pages, prefill_row_req_id and prefill_kv_lens over the prefill tokens,
  /// views of the buffers from num_decode_tokens on (vLLM's slices).
  void build_msa_prefill_rows(const CommonMetadata& c, const MiniMaxM3Split& s,
                              const ops::Exec& exec, const int32_t* cu_q) {
    const int64_t ndt = s.num_decode_tokens, npt = s.num_prefill_tokens;
    const Device dev = config().device;
    int32_t* pages = buffers_.as<int32_t>(kBufNumValidPages) + ndt;
    int32_t* req_id = buffers_.as<int32_t>(kBufRowReqId) + ndt;
    int32_t* kv_lens = buffers_.as<int32_t>(kBufKvLens) + ndt;
    ops::minimax_m3_msa_prefill_rows(exec, cu_q, s.num_prefills,
                                     c.positions->as<const int64_t>() + ndt, npt,
                                     kMiniMaxM3BlockSize, pages, req_id, kv_lens);
    Metadata& m = metadata();
    m.set_tensor(kPrefillNumValidPages, make_vector(pages, dev, kInt32, npt), true);
    m.set_tensor(kPrefillRowReqId, make_vector(req_id, dev, kInt32, npt), true);
    m.set_tensor(kPrefillKvLens, make_vector(kv_lens, dev, kInt32, npt), true);
  }

  PersistentBuffers buffers_;
};

}  // namespace

extern const BackendDescriptor kMiniMaxM3IndexerBackend;
const BackendDescriptor kMiniMaxM3IndexerBackend{
    kName,
    kVllmRelease,
    kv_kind_bit(kKvMla),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    check,
    buffer_plan_of<plan<false>>,
    create_builder_of<MiniMaxM3IndexerBuilder<false>>,
};

extern const BackendDescriptor kMiniMaxM3IndexerMsaRocmBackend;
const BackendDescriptor kMiniMaxM3IndexerMsaRocmBackend{
    kMsaRocmName,
    kVllmRelease,
    kv_kind_bit(kKvMla),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    check,
    buffer_plan_of<plan<true>>,
    create_builder_of<MiniMaxM3IndexerBuilder<true>>,
};

}  // namespace attn::backends
