// QWEN4_EXP_EXP_QSA_STATE: vLLM 0.33's QSAMetadataBuilder (models/qwen4_exp/common/qsa_cache.py),
// the builder of Qwen4-exp's QSA side caches (QSAStateBackend, a key-only backend whose caches
// are written and read out of band). Level UNIFORM_BATCH (the class attribute); reorder threshold
// 1, or 1 + num_speculative_tokens (_init_reorder_batch_threshold(1, supports_spec_as_decode=
// True)); no update_block_table, no draft-decode update (the base class's).
//
// Three caches, by spec (__init__):
//  - ATTN_KV_CIRCULAR_BUFFER (QSAKeyStateCache's CircularBufferSpec): a ring of block_size raw
//    keys in each request's one block; compress_ratio 1; the slot mapping is the ring's.
//  - ATTN_KV_MLA with tokens_per_state > 1 (QSACompressedKeyCache's MLAAttentionSpec): one
//    compressed key per tokens_per_state tokens; compress_ratio = tokens_per_state; the slot
//    mapping has a slot for the tokens that close a group; k_work_metadata is built.
//  - ATTN_KV_MLA with tokens_per_state 1 (or 0): compress_ratio 1; the slot mapping is the
//    batch's (a view). vLLM's builder takes any AttentionSpec this way; libattn takes the QSA
//    layers' two kinds only.
// storage_block_size is the spec's num_states (block_size / tokens_per_state).
//
// build(): split_decodes_and_prefills(threshold, require_uniform=True); decode_query_len, the
// first nonzero decode query length (0 without one); the per-token metadata
// (compute_token_to_req_indices, then ops::qsa_token_metadata) and, for the compressed cache,
// k_work_metadata (ops::qsa_work_metadata) in persistent buffers sized as vLLM's.
// vLLM's assertions: num_reqs > 0 (build_qsa_metadata_triton) is refused; the split's sums and
// the decodes' uniform query length always hold after a require_uniform split.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "QWEN4_EXP_EXP_QSA_STATE";

/// QSAForwardMetadata's fields in its order.
#define QSA_STATE_FIELDS(X)                  \
  X(kBlockTable, "block_table")              \
  X(kSlotMapping, "slot_mapping")            \
  X(kSeqLens, "seq_lens")                    \
  X(kQueryStartLoc, "query_start_loc")       \
  X(kTokenToReq, "token_to_req")             \
  X(kLogicalPositions, "logical_positions")  \
  X(kVisibleBlocks, "visible_blocks")        \
  X(kKWorkMetadata, "k_work_metadata")       \
  X(kNumActualTokens, "num_actual_tokens")   \
  X(kNumDecodes, "num_decodes")              \
  X(kNumDecodeTokens, "num_decode_tokens")   \
  X(kNumPrefills, "num_prefills")            \
  X(kNumPrefillTokens, "num_prefill_tokens") \
  X(kMaxQueryLen, "max_query_len")           \
  X(kDecodeQueryLen, "decode_query_len")     \
  X(kMaxSeqLen, "max_seq_len")               \
  X(kStorageBlockSize, "storage_block_size") \
  X(kCompressRatio, "compress_ratio")
ATTN_NAMED_LIST(Field, QSA_STATE_FIELDS);

/// vLLM's four per-token buffers (max_num_batched_tokens entries), its k_work_metadata_buffer
/// and the work scan's request sums (libattn's scratch; both empty unless the compressed cache).
#define QSA_STATE_BUFFERS(X)                          \
  X(kBufTokenToReq, "token_to_req_buffer")            \
  X(kBufSlotMapping, "slot_mapping_buffer")           \
  X(kBufLogicalPositions, "logical_positions_buffer") \
  X(kBufVisibleBlocks, "visible_blocks_buffer")       \
  X(kBufKWork, "k_work_metadata_buffer")              \
  X(kBufWorkEnds, "work_ends")
ATTN_NAMED_LIST(Buffer, QSA_STATE_BUFFERS);

bool is_circular(const KvCacheSpec& s) { return s.kind == kKvCircularBuffer; }

/// QSAMetadataBuilder.compress_ratio: an MLA spec's tokens_per_state, else 1.
int32_t qsa_compress_ratio(const KvCacheSpec& s) {
  return s.kind == kKvMla ? s.compress_ratio() : 1;
}

/// k_work_metadata is built for the compressed cache only.
bool builds_k_work(const KvCacheSpec& s) { return !is_circular(s) && qsa_compress_ratio(s) != 1; }

/// The k_work_metadata rows of `tokens` tokens and `requests` requests.
int64_t max_k_work(const KvCacheSpec& s, int64_t tokens, int64_t requests) {
  const int64_t ratio = qsa_compress_ratio(s);
  return (tokens + (ratio - 1) * requests) / ratio;
}

std::vector<BufferRequest> plan(const KvCacheSpec& s, const BuilderConfig& c) {
  const int64_t tokens = c.max_num_batched_tokens;
  const int64_t i32 = sizeof(int32_t), i64 = sizeof(int64_t);
  const bool work = builds_k_work(s);
  BufferPlan p(kBufferNames);
  p.set(kBufTokenToReq, buffer_bytes("token_to_req_buffer", {tokens, i32}));
  p.set(kBufSlotMapping, buffer_bytes("slot_mapping_buffer", {tokens, i64}));
  p.set(kBufLogicalPositions, buffer_bytes("logical_positions_buffer", {tokens, i64}));
  p.set(kBufVisibleBlocks, buffer_bytes("visible_blocks_buffer", {tokens, i32}));
  p.set(kBufKWork, work ? buffer_bytes("k_work_metadata_buffer",
                                       {max_k_work(s, tokens, c.max_num_seqs), 2, i32})
                        : 0);
  p.set(kBufWorkEnds, work ? buffer_bytes("work_ends", {c.max_num_seqs, i64}) : 0);
  return p.requests();
}

class QsaStateBuilder final : public Builder {
 public:
  QsaStateBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                  const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        compress_ratio_(qsa_compress_ratio(spec)),
        storage_block_size_(spec.block_size / spec.compress_ratio()),
        circular_size_(is_circular(spec) ? spec.block_size : 0),
        build_k_work_(builds_k_work(spec)),
        buffers_(kName, config.device, plan(spec, config), config.allocator, config.workspace,
                 config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    init_reorder_batch_threshold(1, /*supports_spec_as_decode=*/true);
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const int64_t n = c.num_reqs, T = c.num_actual_tokens;
    // Every check before anything is written: a refused batch leaves the metadata as it was.
    if (n == 0)
      invalid("common->num_reqs=0: ", kName,
              " needs a request (vLLM 0.33's "
              "build_qsa_metadata_triton asserts num_reqs > 0)");
    const int32_t threshold = reorder_batch_threshold().value_or(1);
    const ops::BatchSplit s = ops::split_decodes_and_prefills(c.qsl_host, n, T, c.max_query_len,
                                                              threshold, /*require_uniform=*/true);
    // the first nonzero decode query length (the uniform split leaves the others equal or 0)
    int64_t decode_query_len = 0;
    for (int64_t r = 0; r < s.num_decodes && decode_query_len == 0; ++r)
      decode_query_len = c.query_len(r);

    const Device dev = config().device;
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    const int32_t* seq_lens = c.seq_lens->as<const int32_t>();
    const Tensor& bt = *c.block_table_tensor;
    const Tensor& common_slots = *c.slot_mapping;
    const int64_t mapped = c.qsl_host[n];
    int32_t* t2r = buffers_.as<int32_t>(kBufTokenToReq);
    ops::compute_token_to_req_indices(exec, qsl, n, mapped, T, t2r);

    ops::QsaTokenArgs a;
    a.query_start_loc = qsl;
    a.seq_lens = seq_lens;
    a.token_to_req = t2r;
    a.common_slot_mapping = common_slots.data;
    a.common_slots_int64 = common_slots.dtype == kInt64;
    a.block_table = bt.as<const int32_t>();
    a.block_table_stride = bt.strides[0];
    a.block_table_cols = bt.shape[1];
    a.num_mapped_tokens = mapped;
    a.num_tokens = T;
    a.storage_block_size = storage_block_size_;
    a.compress_ratio = compress_ratio_;
    a.circular_buffer_size = circular_size_;
    a.logical_positions = buffers_.as<int64_t>(kBufLogicalPositions);
    a.visible_blocks = buffers_.as<int32_t>(kBufVisibleBlocks);
    const bool own_slots = circular_size_ > 0 || compress_ratio_ != 1;
    a.slot_mapping = own_slots ? buffers_.as<int64_t>(kBufSlotMapping) : nullptr;
    ops::qsa_token_metadata(exec, a);

    int64_t work_rows = 0;
    int32_t* k_work = buffers_.as<int32_t>(kBufKWork);
    if (build_k_work_) {
      ops::QsaWorkArgs w;
      w.query_start_loc = qsl;
      w.seq_lens = seq_lens;
      w.num_reqs = n;
      w.compress_ratio = compress_ratio_;
      w.max_num_work = work_rows = max_k_work(spec(), T, n);
      w.work_ends = buffers_.as<int64_t>(kBufWorkEnds);
      w.k_work_metadata = k_work;
      ops::qsa_work_metadata(exec, w);
    }

    Metadata& m = metadata();
    m.reset();
    m.set_tensor(kBlockTable, bt);
    m.set_tensor(
        kSlotMapping,
        own_slots ? make_vector(a.slot_mapping, dev, kInt64, T) : rows_between(common_slots, 0, T),
        own_slots);
    m.set_tensor(kSeqLens, *c.seq_lens);
    m.set_tensor(kQueryStartLoc, *c.query_start_loc);
    m.set_tensor(kTokenToReq, make_vector(t2r, dev, kInt32, T), true);
    m.set_tensor(kLogicalPositions, make_vector(a.logical_positions, dev, kInt64, T), true);
    m.set_tensor(kVisibleBlocks, make_vector(a.visible_blocks, dev, kInt32, T), true);
    m.set_tensor(kKWorkMetadata, make_matrix(k_work, dev, kInt32, work_rows, 2, 2), true);
    m.set_int(kNumActualTokens, T);
    m.set_int(kNumDecodes, s.num_decodes);
    m.set_int(kNumDecodeTokens, s.num_decode_tokens);
    m.set_int(kNumPrefills, s.num_prefills);
    m.set_int(kNumPrefillTokens, s.num_prefill_tokens);
    m.set_int(kMaxQueryLen, c.max_query_len);
    m.set_int(kDecodeQueryLen, decode_query_len);
    m.set_int(kMaxSeqLen, c.max_seq_len);
    m.set_int(kStorageBlockSize, storage_block_size_);
    m.set_int(kCompressRatio, compress_ratio_);
  }

 private:
  int32_t compress_ratio_;
  int32_t storage_block_size_;
  int32_t circular_size_;
  bool build_k_work_;
  PersistentBuffers buffers_;
};

}  // namespace

extern const BackendDescriptor kQwen4ExpQsaStateBackend;
const BackendDescriptor kQwen4ExpQsaStateBackend{
    kName,
    kVllmRelease,
    // the QSA layers' specs: QSAKeyStateCache's CircularBufferSpec and QSACompressedKeyCache's
    // MLAAttentionSpec (tokens_per_state 1 gives the plain cache)
    kv_kind_bit(kKvCircularBuffer) | kv_kind_bit(kKvMla),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    check_spec_kind_only,
    buffer_plan_of<plan>,
    create_builder_of<QsaStateBuilder>,
};

}  // namespace attn::backends
