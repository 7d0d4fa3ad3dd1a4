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

/// MiniMaxM3IndexerMetadata's fields in its order, its prefill (MiniMaxM3IndexerPrefillMetadata)
/// and decode (MiniMaxM3IndexerDecodeMetadata) parts flattened with their prefixes.
#define MINIMAX_M3_INDEXER_FIELDS(X)                  \
  ATTN_MINIMAX_M3_TOP_FIELDS(X, k)                    \
  X(kPrefillCuSeqlensQ, "prefill_cu_seqlens_q")       \
  X(kPrefillSeqLens, "prefill_seq_lens")              \
  X(kPrefillContextLens, "prefill_context_lens")      \
  X(kPrefillBlockTable, "prefill_block_table")        \
  X(kPrefillMaxQueryLen, "prefill_max_query_len")     \
  X(kPrefillMaxSeqLen, "prefill_max_seq_len")         \
  X(kDecodeSeqLens, "decode_seq_lens")                \
  X(kDecodeBlockTable, "decode_block_table")          \
  X(kDecodeMaxSeqLen, "decode_max_seq_len")           \
  X(kDecodeDecodeQueryLen, "decode_decode_query_len") \
  X(kDecodeMaxDecodeQueryLen, "decode_max_decode_query_len")
ATTN_NAMED_LIST(Field, MINIMAX_M3_INDEXER_FIELDS);

/// The builder's context_len_buffer (vLLM's) and the prefills' cu_seqlens_q, which vLLM
/// allocates per build (max_num_seqs + 1 entries).
#define MINIMAX_M3_INDEXER_BUFFERS(X)      \
  X(kBufContextLens, "context_len_buffer") \
  X(kBufCuSeqlensQ, "prefill_cu_seqlens_q")
ATTN_NAMED_LIST(Buffer, MINIMAX_M3_INDEXER_BUFFERS);

std::vector<BufferRequest> plan(const KvCacheSpec&, const BuilderConfig& c) {
  const int64_t i32 = sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kBufContextLens, buffer_bytes("context_len_buffer", {c.max_num_batched_tokens, i32}));
  p.set(kBufCuSeqlensQ, buffer_bytes("prefill_cu_seqlens_q", {c.max_num_seqs + 1, i32}));
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

class MiniMaxM3IndexerBuilder final : public Builder {
 public:
  MiniMaxM3IndexerBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                          const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(spec, config), config.allocator, config.workspace,
                 config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    init_reorder_batch_threshold(1, /*supports_spec_as_decode=*/true);
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const int64_t n = c.num_reqs;
    const int32_t threshold = reorder_batch_threshold().value_or(1);
    // Every check before anything is written: a refused batch leaves the metadata as it was.
    const MiniMaxM3Split s = minimax_m3_split(c, threshold, config().max_num_batched_tokens, kName);
    const int64_t nd = s.num_decodes, np = s.num_prefills;

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
    buffer_plan_of<plan>,
    create_builder_of<MiniMaxM3IndexerBuilder>,
};

}  // namespace attn::backends
