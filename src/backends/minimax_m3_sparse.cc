// MINIMAX_M3_SPARSE: vLLM 0.33's MiniMaxM3SparseMetadataBuilder
// (models/minimax_m3/common/sparse_attention.py), the metadata of MiniMax-M3's block-sparse GQA
// layers (the attend over the KV blocks its lightning indexer selected). Spec: FullAttentionSpec
// (ATTN_KV_FULL_ATTENTION) with the kernel block size 128 (get_supported_kernel_block_sizes()
// == [128], one sparse block per page). Level UNIFORM_BATCH (a class attribute); reorder
// threshold 1 with supports_spec_as_decode; no update_block_table, no draft decode update.
//
// build(): split_decodes_and_prefills(threshold, require_uniform=True); the context lengths
// (compute_num_computed_tokens: seq_len - query_len) into the persistent context_len_buffer
// (max_num_batched_tokens entries, as vLLM's); with prefills the prefill part: cu_seqlens_q
// (query_start_loc[num_decodes:] - num_decode_tokens), cu_seqlens_k (0 and the running sums of the
// prefills' seq_lens), views of seq_lens, the context lengths and the block table from the
// first prefill on, the batch's max_query_len and max_seq_len, and total_kv_blocks (the sum of
// cdiv(seq_lens_cpu_upper_bound[r], 128) over the prefills, on the host); with decodes the
// decode part: seq_lens and block_table up to num_decodes and the uniform decode_query_len
// (vLLM asserts every decode query is that long or empty and that the decode tokens are
// num_decodes * it: a batch that fails is refused, naming the assertion).
//
// The AITER sparse PA path (vLLM's _minimax_m3_aiter_sparse_pa_requested(), an environment
// switch: config->rocm_aiter_shuffle_kv_cache) adds page16_slot_mapping (the slot mapping rebased
// onto AITER's page-16 numbering, minimax_m3_rebase_slots_to_page16, in a persistent int64
// buffer of max_num_batched_tokens entries) and the prefills' query_req_id / query_abs_pos
// (minimax_m3_query_token_positions, persistent int32 buffers); without it they are None.
//
// MINIMAX_M3_SPARSE_AITER_PA: vLLM 0.33's MiniMaxM3SparseAiterPAMetadataBuilder
// (models/minimax_m3/amd/sparse_attention_msa.py), the builder of vLLM's MINIMAX_M3_SPARSE
// backend on ROCm when the AITER sparse PA path is selected (select_main_backend_and_impl_cls:
// ROCm, VLLM_ROCM_USE_AITER=1 and VLLM_ROCM_SHUFFLE_KV_CACHE_LAYOUT=1). The base build (above,
// with config->rocm_aiter_shuffle_kv_cache read as the base reads its switch), then the block
// table rebased onto AITER's page-16 numbering (block_table * 2,
// minimax_m3_rebase_block_table_to_page16) into a persistent page16_block_table_buffer of
// max_num_seqs x cdiv(max_model_len, block_size) int32 entries (vLLM asserts the batch's table
// fits it: refused otherwise); the decode part's page16_block_table is its rows [0,
// num_decodes), the prefill part's the rest. Its metadata is the base's fields and these two.
#include <cstdint>
#include <memory>
#include <string>
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

constexpr const char* kName = "MINIMAX_M3_SPARSE";
constexpr const char* kAiterPaName = "MINIMAX_M3_SPARSE_AITER_PA";

/// MiniMaxM3SparseMetadata's fields in its order, its prefill (MiniMaxM3SparsePrefillMetadata)
/// and decode (MiniMaxM3SparseDecodeMetadata) parts flattened with their prefixes where vLLM
/// has the part, and page16_slot_mapping; then MINIMAX_M3_SPARSE_AITER_PA's two
/// (MiniMaxM3SparseAiterPAPrefillMetadata / DecodeMetadata's page16_block_table).
#define MINIMAX_M3_SPARSE_FIELDS(X)                      \
  ATTN_MINIMAX_M3_TOP_FIELDS(X, k)                       \
  X(kPrefillCuSeqlensQ, "prefill_cu_seqlens_q")          \
  X(kPrefillCuSeqlensK, "prefill_cu_seqlens_k")          \
  X(kPrefillSeqLens, "prefill_seq_lens")                 \
  X(kPrefillContextLens, "prefill_context_lens")         \
  X(kPrefillBlockTable, "prefill_block_table")           \
  X(kPrefillMaxQueryLen, "prefill_max_query_len")        \
  X(kPrefillMaxSeqLen, "prefill_max_seq_len")            \
  X(kPrefillTotalKvBlocks, "prefill_total_kv_blocks")    \
  X(kPrefillQueryReqId, "prefill_query_req_id")          \
  X(kPrefillQueryAbsPos, "prefill_query_abs_pos")        \
  X(kDecodeSeqLens, "decode_seq_lens")                   \
  X(kDecodeBlockTable, "decode_block_table")             \
  X(kDecodeDecodeQueryLen, "decode_decode_query_len")    \
  X(kPage16SlotMapping, "page16_slot_mapping")           \
  X(kPrefillPage16BlockTable, "prefill_page16_block_table") \
  X(kDecodePage16BlockTable, "decode_page16_block_table")
ATTN_NAMED_LIST(Field, MINIMAX_M3_SPARSE_FIELDS);

/// The builder's context_len_buffer and page16_slot_mapping_buffer (vLLM's), and the prefill
/// arrays vLLM allocates per build (cu_seqlens_q / _k: max_num_seqs + 1 entries; the AITER
/// path's query_req_id / query_abs_pos: max_num_batched_tokens); MINIMAX_M3_SPARSE_AITER_PA's
/// page16_block_table_buffer.
#define MINIMAX_M3_SPARSE_BUFFERS(X)                \
  X(kBufContextLens, "context_len_buffer")          \
  X(kBufPage16Slots, "page16_slot_mapping_buffer")  \
  X(kBufCuSeqlensQ, "prefill_cu_seqlens_q")         \
  X(kBufCuSeqlensK, "prefill_cu_seqlens_k")         \
  X(kBufQueryReqId, "prefill_query_req_id")         \
  X(kBufQueryAbsPos, "prefill_query_abs_pos")      \
  X(kBufPage16Table, "page16_block_table_buffer")
ATTN_NAMED_LIST(Buffer, MINIMAX_M3_SPARSE_BUFFERS);

/// The page16_block_table_buffer's columns: cdiv(max_model_len, block_size).
int64_t page16_table_cols(const KvCacheSpec& spec, const BuilderConfig& c) {
  return (c.max_model_len + spec.block_size - 1) / spec.block_size;
}

template <bool kAiterPa>
std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  const int64_t tokens = c.max_num_batched_tokens, reqs = c.max_num_seqs;
  const int64_t i32 = sizeof(int32_t), i64 = sizeof(int64_t);
  const bool aiter = c.rocm_aiter_shuffle_kv_cache;
  BufferPlan p(kBufferNames);
  p.set(kBufContextLens, buffer_bytes("context_len_buffer", {tokens, i32}));
  p.set(kBufPage16Slots, aiter ? buffer_bytes("page16_slot_mapping_buffer", {tokens, i64}) : 0);
  p.set(kBufCuSeqlensQ, buffer_bytes("prefill_cu_seqlens_q", {reqs + 1, i32}));
  p.set(kBufCuSeqlensK, buffer_bytes("prefill_cu_seqlens_k", {reqs + 1, i32}));
  p.set(kBufQueryReqId, aiter ? buffer_bytes("prefill_query_req_id", {tokens, i32}) : 0);
  p.set(kBufQueryAbsPos, aiter ? buffer_bytes("prefill_query_abs_pos", {tokens, i32}) : 0);
  p.set(kBufPage16Table, kAiterPa ? buffer_bytes("page16_block_table_buffer",
                                                 {reqs, page16_table_cols(spec, c), i32})
                                  : 0);
  return p.requests();
}

template <bool kAiterPa>
class MiniMaxM3SparseBuilder final : public Builder {
 public:
  MiniMaxM3SparseBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                         const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        aiter_(config.rocm_aiter_shuffle_kv_cache),
        table_cols_(page16_table_cols(spec, config)),
        buffers_(kAiterPa ? kAiterPaName : kName, config.device, plan<kAiterPa>(spec, config),
                 config.allocator, config.workspace, config.workspace_size) {
    init_metadata(kAiterPa ? name_vector(kFieldNames)
                           : name_vector(kFieldNames, kPrefillPage16BlockTable));
    init_reorder_batch_threshold(1, /*supports_spec_as_decode=*/true);
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const int64_t n = c.num_reqs, T = c.num_actual_tokens;
    // Every check before anything is written: a refused batch leaves the metadata as it was.
    const MiniMaxM3Split s = minimax_m3_split(c, reorder_batch_threshold().value_or(1),
                                              config().max_num_batched_tokens, kName);
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    const int64_t ndt = s.num_decode_tokens, npt = s.num_prefill_tokens;
    const Tensor& slots = *c.slot_mapping;
    const int64_t total_kv_blocks = np > 0 ? prefill_kv_blocks(c, nd) : 0;
    if (np > 0 && aiter_ && c.qsl_host[n] - ndt < npt)
      invalid("common->query_start_loc_cpu[", n, "]=", c.qsl_host[n],
              " is less than common->num_actual_tokens=", T, ": ", kName,
              "'s query_req_id / query_abs_pos (config->rocm_aiter_shuffle_kv_cache) give the "
              "prefill tokens past the last query a request past the prefills (vLLM indexes "
              "out of range)");
    if (aiter_ && slots.shape[0] > config().max_num_batched_tokens)
      invalid("common->slot_mapping has ", slots.shape[0], " entries, more than "
              "config->max_num_batched_tokens=", config().max_num_batched_tokens, " (", kName,
              "'s page16_slot_mapping_buffer)");
    const Tensor& bt = *c.block_table_tensor;
    if (kAiterPa && (n > config().max_num_seqs || bt.shape[1] > table_cols_))
      invalid("common->block_table_tensor has shape (", n, ", ", bt.shape[1],
              "): it exceeds the page-16 rebase buffer (", config().max_num_seqs, ", ",
              table_cols_, ") (", kAiterPaName, ": max_num_seqs x cdiv(config->max_model_len, "
              "block_size); vLLM asserts it fits)");

    const Device dev = config().device;
    const Tensor& seq_lens = *c.seq_lens;
    int32_t* context_lens = buffers_.as<int32_t>(kBufContextLens);
    Metadata& m = metadata();
    const int32_t* qsl = minimax_m3_build_top(c, s, exec, context_lens, m);
    if (np > 0) {
      int32_t* cu_q = buffers_.as<int32_t>(kBufCuSeqlensQ);
      int32_t* cu_k = buffers_.as<int32_t>(kBufCuSeqlensK);
      ops::minimax_m3_prefill_arrays(exec, qsl + nd, seq_lens.as<const int32_t>() + nd, np, ndt,
                                     cu_q, cu_k);
      m.set_tensor(kPrefillCuSeqlensQ, make_vector(cu_q, dev, kInt32, np + 1), true);
      m.set_tensor(kPrefillCuSeqlensK, make_vector(cu_k, dev, kInt32, np + 1), true);
      m.set_tensor(kPrefillSeqLens, rows_between(seq_lens, nd, n));
      m.set_tensor(kPrefillContextLens, make_vector(context_lens + nd, dev, kInt32, np), true);
      m.set_tensor(kPrefillBlockTable, rows_between(bt, nd, n));
      m.set_int(kPrefillMaxQueryLen, c.max_query_len);
      m.set_int(kPrefillMaxSeqLen, c.max_seq_len);
      m.set_int(kPrefillTotalKvBlocks, total_kv_blocks);
      if (aiter_) {
        int32_t* req_id = buffers_.as<int32_t>(kBufQueryReqId);
        int32_t* abs_pos = buffers_.as<int32_t>(kBufQueryAbsPos);
        ops::minimax_m3_query_token_positions(exec, cu_q, context_lens + nd, np, npt, req_id,
                                              abs_pos);
        m.set_tensor(kPrefillQueryReqId, make_vector(req_id, dev, kInt32, npt), true);
        m.set_tensor(kPrefillQueryAbsPos, make_vector(abs_pos, dev, kInt32, npt), true);
      }
    }
    if (nd > 0) {
      m.set_tensor(kDecodeSeqLens, rows_between(seq_lens, 0, nd));
      m.set_tensor(kDecodeBlockTable, rows_between(bt, 0, nd));
      m.set_int(kDecodeDecodeQueryLen, s.decode_query_len);
    }
    if (aiter_) {
      const int64_t len = slots.shape[0];
      int64_t* page16 = buffers_.as<int64_t>(kBufPage16Slots);
      ops::minimax_m3_page16_slot_mapping(exec, slots.data, slots.dtype == kInt64, len,
                                          spec().block_size, page16);
      m.set_tensor(kPage16SlotMapping, make_vector(page16, dev, kInt64, len), true);
    }
    if (kAiterPa) {
      int32_t* page16 = buffers_.as<int32_t>(kBufPage16Table);
      ops::minimax_m3_page16_block_table(exec, bt.as<const int32_t>(), bt.strides[0], n,
                                         bt.shape[1], page16, table_cols_);
      if (nd > 0)
        m.set_tensor(kDecodePage16BlockTable,
                     make_matrix(page16, dev, kInt32, nd, bt.shape[1], table_cols_), true);
      if (np > 0)
        m.set_tensor(kPrefillPage16BlockTable,
                     make_matrix(page16 + nd * table_cols_, dev, kInt32, np, bt.shape[1],
                                 table_cols_),
                     true);
    }
  }

 private:
  /// total_kv_blocks: the sum of cdiv(seq_lens_cpu_upper_bound[r], 128) over the prefills
  /// (vLLM asserts the bound is given; libattn takes the exact host lengths without one).
  int64_t prefill_kv_blocks(const CommonMetadata& c, int64_t nd) const {
    const int32_t* bound = c.seq_lens_upper_bound();
    if (bound == nullptr)
      invalid("common->seq_lens_cpu_upper_bound is NULL (and no host seq_lens is given); ", kName,
              " reads it for the prefills' total_kv_blocks (vLLM asserts it is given)");
    int64_t blocks = 0;
    for (int64_t r = nd; r < c.num_reqs; ++r)
      blocks += (static_cast<int64_t>(bound[r]) + kMiniMaxM3BlockSize - 1) / kMiniMaxM3BlockSize;
    return blocks;
  }

  bool aiter_;
  int64_t table_cols_;  ///< page16_block_table_buffer's columns
  PersistentBuffers buffers_;
};

}  // namespace

extern const BackendDescriptor kMiniMaxM3SparseBackend;
const BackendDescriptor kMiniMaxM3SparseBackend{
    kName,
    kVllmRelease,
    kv_kind_bit(kKvFullAttention),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    check_minimax_m3_spec,
    buffer_plan_of<plan<false>>,
    create_builder_of<MiniMaxM3SparseBuilder<false>>,
};

extern const BackendDescriptor kMiniMaxM3SparseAiterPaBackend;
const BackendDescriptor kMiniMaxM3SparseAiterPaBackend{
    kAiterPaName,
    kVllmRelease,
    kv_kind_bit(kKvFullAttention),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    check_minimax_m3_spec,
    buffer_plan_of<plan<true>>,
    create_builder_of<MiniMaxM3SparseBuilder<true>>,
};

}  // namespace attn::backends
