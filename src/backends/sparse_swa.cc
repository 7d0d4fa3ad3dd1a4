// DEEPSEEK_SPARSE_SWA: vLLM 0.33's DeepseekSparseSWAMetadataBuilder (mla/sparse_swa.py), the
// sliding-window cache of DeepSeek V4's attention layers: per token the window's paged slots
// (decode rows and prefill rows, _compute_swa_indices_and_lens_kernel), the validity mask, the
// token -> request map and the prefills' gather lengths (ComputePrefillMetadataKernel) shared by
// every layer. Spec: vLLM's SlidingWindowMLASpec (ATTN_KV_SLIDING_WINDOW) or MLAAttentionSpec
// (ATTN_KV_MLA); the window is the spec's sliding_window (vLLM reads hf_config.sliding_window;
// 0 on an MLA spec = DeepSeek V4's 128), block size a multiple of 32 (the head size, 512 in
// vLLM's selector, is not read). Level UNIFORM_BATCH (class attribute),
// reorder_batch_threshold None, the split at max_decode_query_len (1 + k), draft decode updates.
//
// build()'s keyword replay_start (SWA bounded replay) is common->replay_start (ABI 1.7): no
// window slot below it in the rows and the prefills' gather lengths, returned as given; NULL
// is vLLM's None (the persistent zeros of max_num_seqs + 1). Not inputs of libattn, so at
// vLLM's values for a text-only batch: the vision variant's image spans
// (prefill_left/right_visible None, prefill index width = window). DSpark (config->
// speculative_dspark, vLLM's speculative_config.use_dspark()): a non-causal batch's decode rows
// are DSpark's (every token of a request: the window before its block and the whole block) in
// their own buffer, noncausal_index_width = align_up(window + k, 64) wide; without DSpark such a
// batch with decode tokens is refused, as vLLM asserts. tile_sched_* (FlashMLA's scheduler
// objects) and flashinfer_sparse_index_cache (an empty dict) are not returned.
//
// The family: vLLM 0.33's subclasses of that builder, each reached through a DeepseekSparseSWA
// backend class whose get_name() is still "DEEPSEEK_SPARSE_SWA", so libattn names them (the
// mapping in docs/backends/sparse_mla.md). On the batches libattn builds their fields and split
// are the base's; they differ in the level (_cudagraph_support):
//   DEEPSEEK_SPARSE_SWA_FLASHMLA        deepseek_v4/nvidia/flashmla.py           ALWAYS
//   DEEPSEEK_SPARSE_SWA_FLASHINFER      deepseek_v4/nvidia/flashinfer_sparse.py  ALWAYS
//   DEEPSEEK_V41_SPARSE_SWA             deepseek_v41/sparse_mla.py (V4.1's layer types pick the
//                                       tile-scheduler plans; PCP slicing only with a prefill
//                                       context parallel size > 1, which libattn has not)
//                                                                                UNIFORM_BATCH
//   DEEPSEEK_V41_SPARSE_SWA_FLASHMLA    deepseek_v41/nvidia/flashmla.py          ALWAYS
//   DEEPSEEK_V41_SPARSE_SWA_FLASHINFER  deepseek_v41/nvidia/flashinfer_sparse.py (fills
//                                       flashinfer_decode_* on non-causal decodes: DSpark's)
//                                                                                ALWAYS
// Not offered: deepseek_v4/cpu/cpu_mla.py's DeepseekV4CPUSparseSWAMetadataBuilder, whose build
// raises KeyError('c1a') in vLLM 0.33 on every batch (its build_tile_scheduler answers three of
// the five layer types the base build reads).
//
// ROCm (config->platform_rocm required; rocm_ragged_rows.h for what libattn assumes of the GPU):
//   DEEPSEEK_SPARSE_SWA_ROCM_AITER      deepseek_v4/amd/rocm.py  (on ROCm vLLM's
//                                       DEEPSEEK_SPARSE_SWA backend builds with it, so the
//                                       base name refuses platform_rocm)
//   DEEPSEEK_V41_SPARSE_SWA_ROCM_AITER  deepseek_v41/amd/rocm.py
// UNIFORM_BATCH, ALWAYS under adaptive verification; no draft decode update
// (supports_draft_decode_metadata_update = False); the decode rows in ragged form
// (decode_swa_ragged_indices / _indptr, persistent buffers of max_num_batched_tokens *
// max(window, noncausal_index_width) and max_num_batched_tokens + 1 entries; the rows are
// decode_swa_width wide: DSpark's on a non-causal batch) and prefill_swa_ragged_* (None: aiter's
// Triton sparse MLA is an environment switch, off by default). V4.1's gfx942 --monokernel
// decode path (swa_decode_meta.build) is not modelled (monokernel off, vLLM's default).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/rocm_ragged_rows.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "DEEPSEEK_SPARSE_SWA";
constexpr int32_t kDefaultWindow = 128;  // DeepSeek V4's hf_config.sliding_window
constexpr int32_t kBlockMultiple = 32;   // get_supported_kernel_block_sizes: MultipleOf(32)
constexpr DType kBoolDtype{6, 8, 1};     // DLPack's kDLBool
constexpr int64_t kDsparkAlignment = 64; // compressor_utils' _DSPARK_SWA_INDEX_ALIGNMENT

#define SWA_FIELDS(X)                                                      \
  X(kBlockTable, "block_table")                                            \
  X(kSlotMapping, "slot_mapping")                                          \
  X(kBlockSize, "block_size")                                              \
  X(kSeqLens, "seq_lens")                                                  \
  X(kQueryStartLoc, "query_start_loc")                                     \
  X(kQueryStartLocCpu, "query_start_loc_cpu")                              \
  X(kIsValidToken, "is_valid_token")                                       \
  X(kTokenToReqIndices, "token_to_req_indices")                            \
  X(kDecodeSwaIndices, "decode_swa_indices")                               \
  X(kDecodeSwaLens, "decode_swa_lens")                                     \
  X(kDecodeSwaWidth, "decode_swa_width")                                   \
  X(kPrefillSwaIndices, "prefill_swa_indices")                             \
  X(kPrefillSwaLens, "prefill_swa_lens")                                   \
  X(kPrefillLeftVisible, "prefill_left_visible")                           \
  X(kPrefillRightVisible, "prefill_right_visible")                         \
  X(kReplayStart, "replay_start")                                          \
  X(kCacheSlotMapping, "cache_slot_mapping")                               \
  X(kCachePositions, "cache_positions")                                    \
  X(kNumDecodes, "num_decodes")                                            \
  X(kNumPrefills, "num_prefills")                                          \
  X(kNumDecodeTokens, "num_decode_tokens")                                 \
  X(kNumPrefillTokens, "num_prefill_tokens")                               \
  X(kMaxDecodeQueryLen, "max_decode_query_len")                            \
  X(kFlashinferDecodeTopkLens, "flashinfer_decode_topk_lens")              \
  X(kFlashinferDecodeSeqLens, "flashinfer_decode_seq_lens")                \
  X(kPrefillSeqLens, "prefill_seq_lens")                                   \
  X(kPrefillSeqLensCpu, "prefill_seq_lens_cpu")                            \
  X(kPrefillGatherLens, "prefill_gather_lens")                             \
  X(kPrefillQueryLensCpu, "prefill_query_lens_cpu")                        \
  X(kPrefillWindowSize, "prefill_window_size")                             \
  X(kPrefillMaxModelLen, "prefill_max_model_len")                          \
  X(kPrefillMaxNumBatchedTokens, "prefill_max_num_batched_tokens")        \
  X(kDecodeSwaRaggedIndices, "decode_swa_ragged_indices")                  \
  X(kDecodeSwaRaggedIndptr, "decode_swa_ragged_indptr")                    \
  X(kPrefillSwaRaggedIndices, "prefill_swa_ragged_indices")                \
  X(kPrefillSwaRaggedIndptr, "prefill_swa_ragged_indptr")
ATTN_NAMED_LIST(Field, SWA_FIELDS);
constexpr size_t kBaseFieldCount = kDecodeSwaRaggedIndices;  // the rest are the ROCm builders'

/// The family's builders: the CUDA ones (one builder) and the ROCm ones (ragged rows added).
/// The family's builders (BackendDescriptor::variant): the CUDA ones (one builder), the V4.1
/// FlashInfer one (DSpark's flashinfer_decode_* added) and the ROCm ones (ragged rows added).
enum Variant : int32_t { kCuda = 0, kRocm = 1, kV41FlashInfer = 2 };

#define SWA_BUFFERS(X)                                   \
  X(kBufTokenToReq, "token_to_req_indices")              \
  X(kBufIsValid, "is_valid_token")                       \
  X(kBufDecodeIndices, "decode_swa_indices")             \
  X(kBufDecodeLens, "decode_swa_lens")                   \
  X(kBufPrefillIndices, "prefill_swa_indices")           \
  X(kBufPrefillLens, "prefill_swa_lens")                 \
  X(kBufReplayStart, "no_replay_start")                  \
  X(kBufDecodeIndicesNoncausal, "decode_swa_indices_noncausal") \
  X(kBufFiTopkLens, "_decode_topk_lens")                 \
  X(kBufFiSeqLens, "_decode_seq_lens")                   \
  X(kBufGatherLens, "prefill_gather_lens")               \
  X(kBufDecodeRagged, "decode_swa_ragged_indices")       \
  X(kBufDecodeRaggedIndptr, "decode_swa_ragged_indptr")  \
  /* host */                                             \
  X(kBufQueryLensCpu, "prefill_query_lens_cpu")
ATTN_NAMED_LIST(Buffer, SWA_BUFFERS);

/// The window: the spec's sliding_window (SlidingWindowMLASpec's, the model's); 0 on an MLA spec
/// (vLLM's MLAAttentionSpec carries none: the builder reads hf_config.sliding_window) stands for
/// DeepSeek V4's 128.
int32_t window_of(const KvCacheSpec& spec) {
  return spec.sliding_window > 0 ? spec.sliding_window : kDefaultWindow;
}

/// noncausal_index_width: DSpark's row width, get_dspark_swa_index_width = align_up(window + k,
/// 64); 0 without DSpark (vLLM's value then).
int32_t noncausal_width_of(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (!c.speculative_dspark) return 0;
  const int64_t w = window_of(spec) + int64_t{c.num_speculative_tokens};
  return static_cast<int32_t>((w + kDsparkAlignment - 1) / kDsparkAlignment * kDsparkAlignment);
}

std::vector<BufferRequest> plan(const BackendDescriptor& d, const KvCacheSpec& spec,
                                const BuilderConfig& c) {
  const int64_t window = window_of(spec), noncausal = noncausal_width_of(spec, c);
  const int64_t fi = d.variant == kV41FlashInfer ? 1 : 0;
  const int64_t tokens = c.max_num_batched_tokens, seqs = c.max_num_seqs, i32 = sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kBufTokenToReq, buffer_bytes("token_to_req_indices", {tokens, i32}));
  p.set(kBufIsValid, buffer_bytes("is_valid_token", {tokens, 1}));
  p.set(kBufDecodeIndices, buffer_bytes("decode_swa_indices", {tokens, window, i32}));
  p.set(kBufDecodeLens, buffer_bytes("decode_swa_lens", {tokens, i32}));
  p.set(kBufPrefillIndices,
        buffer_bytes("prefill_swa_indices", {tokens, window, i32}));
  p.set(kBufPrefillLens, buffer_bytes("prefill_swa_lens", {tokens, i32}));
  p.set(kBufReplayStart, buffer_bytes("no_replay_start", {seqs + 1, i32}));  // zeros
  // DSpark's rows (vLLM allocates them on the first non-causal build; here with the builder)
  p.set(kBufDecodeIndicesNoncausal,
        buffer_bytes("decode_swa_indices_noncausal", {tokens, noncausal, i32}));
  // the V4.1 FlashInfer member's _decode_topk_lens / _decode_seq_lens
  p.set(kBufFiTopkLens, buffer_bytes("_decode_topk_lens", {fi * tokens, i32}));
  p.set(kBufFiSeqLens, buffer_bytes("_decode_seq_lens", {fi * tokens, i32}));
  p.set(kBufGatherLens, buffer_bytes("prefill_gather_lens", {seqs, i32}));
  // ROCm: max_tokens * max(window, noncausal_index_width = 0 without DSpark), max_tokens + 1
  const int64_t rocm = d.variant == kRocm ? 1 : 0;
  p.set(kBufDecodeRagged, buffer_bytes("decode_swa_ragged_indices",
                                       {rocm * tokens, std::max(window, noncausal), i32}));
  p.set(kBufDecodeRaggedIndptr,
        buffer_bytes("decode_swa_ragged_indptr", {rocm * (tokens + 1), i32}));
  p.set(kBufQueryLensCpu, buffer_bytes("prefill_query_lens_cpu", {seqs, i32}), /*host=*/true);
  return p.requests();
}

/// A (rows, 1, width) view of int32 rows `width` apart (vLLM's [:rows] of a (max, 1, w) buffer).
Tensor index_rows(void* data, Device dev, int64_t rows, int64_t width) {
  return make_row_blocks(data, dev, kInt32, rows, width, width);
}

class SparseSwaBuilder final : public Builder {
 public:
  SparseSwaBuilder(std::shared_ptr<const Backend> backend, const BackendDescriptor& d,
                   const KvCacheSpec& spec, const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        rocm_(d.variant == kRocm),
        fi_decode_lens_(d.variant == kV41FlashInfer),
        window_(window_of(spec)),
        noncausal_width_(noncausal_width_of(spec, config)),
        threshold_(attn::max_decode_query_len(config)),
        buffers_(this->backend().name().c_str(), config.device, plan(d, spec, config),
                 config.allocator, config.workspace, config.workspace_size) {
    std::vector<std::string> names = name_vector(kFieldNames);
    if (!rocm_) names.resize(kBaseFieldCount);
    init_metadata(names);
    set_reorder_batch_threshold(std::nullopt);  // set to None in __init__
  }

  std::string draft_decode_update_refusal() const override {
    return rocm_ ? "vLLM 0.33's ROCm builder keeps it off (supports_draft_decode_metadata_update "
                   "= False: the update would not refresh the ragged SWA rows)"
                 : "";
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const ops::BatchSplit s = ops::split_decodes_and_prefills(
        c.qsl_host, c.num_reqs, c.num_actual_tokens, c.max_query_len, threshold_, false);
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    const int64_t ndt = s.num_decode_tokens, npt = s.num_prefill_tokens;
    check_batch(c, np, ndt);
    const BuilderConfig& cfg = config();
    const Device dev = cfg.device;
    Metadata& m = metadata();
    m.reset();
    const int32_t* qsl = c.query_start_loc->as<const int32_t>();  // usable on the exec's side
    const int32_t* lens = c.seq_lens->as<const int32_t>();
    const Tensor& slots = *c.slot_mapping;
    const int64_t n = c.num_reqs, T = c.num_actual_tokens, S = slots.numel();
    // CommonAttentionMetadata.token_to_req_indices: mapped up to query_start_loc_cpu[-1]
    const int64_t mapped = c.qsl_host[n];
    int32_t* t2r = buffers_.as<int32_t>(kBufTokenToReq);
    ops::compute_token_to_req_indices(exec, qsl, n, mapped, std::max(mapped, T), t2r);
    uint8_t* valid = buffers_.as<uint8_t>(kBufIsValid);
    ops::sparse_swa_valid_tokens(exec, slots.data, slots.dtype == kInt64, S, valid);
    // build(replay_start=...): the caller's starts, else vLLM's persistent zeros
    const int32_t* replay = c.replay_start ? c.replay_start->as<const int32_t>()
                                           : buffers_.as<const int32_t>(kBufReplayStart);
    // decode rows: DSpark's in their own buffer for a non-causal batch (check_batch refused it
    // without DSpark), else the causal window
    const bool dspark_rows = !c.causal && ndt > 0;
    const Buffer decode_buf = dspark_rows ? kBufDecodeIndicesNoncausal : kBufDecodeIndices;
    const int32_t decode_width = dspark_rows ? noncausal_width_ : window_;
    ops::SwaIndicesParams p = indices_params(*c.block_table_tensor, ndt, 0, dspark_rows);
    ops::sparse_swa_indices(exec, qsl, lens, t2r, valid, c.block_table_tensor->as<int32_t>(),
                            replay, p, buffers_.as<int32_t>(decode_buf),
                            buffers_.as<int32_t>(kBufDecodeLens));
    p = indices_params(*c.block_table_tensor, npt, ndt, false);
    ops::sparse_swa_indices(exec, qsl, lens, t2r, valid, c.block_table_tensor->as<int32_t>(),
                            replay, p, buffers_.as<int32_t>(kBufPrefillIndices),
                            buffers_.as<int32_t>(kBufPrefillLens));

    m.set_tensor(kBlockTable, *c.block_table_tensor);
    m.set_tensor(kSlotMapping, slots);
    m.set_int(kBlockSize, spec().block_size);
    m.set_tensor(kSeqLens, *c.seq_lens);
    m.set_tensor(kQueryStartLoc, *c.query_start_loc);
    m.set_tensor(kQueryStartLocCpu, c.query_start_loc_cpu);
    m.set_tensor(kIsValidToken, make_vector(valid, dev, kBoolDtype, S), true);
    m.set_tensor(kTokenToReqIndices, make_vector(t2r, dev, kInt32, T), true);
    m.set_tensor(kDecodeSwaIndices, index_rows(buffers_.get(decode_buf), dev, ndt, decode_width),
                 true);
    m.set_tensor(kDecodeSwaLens, make_vector(buffers_.get(kBufDecodeLens), dev, kInt32, ndt), true);
    m.set_int(kDecodeSwaWidth, c.causal ? window_ : noncausal_width_);
    if (npt > 0) {
      m.set_tensor(kPrefillSwaIndices,
                   index_rows(buffers_.get(kBufPrefillIndices), dev, npt, window_), true);
      m.set_tensor(kPrefillSwaLens, make_vector(buffers_.get(kBufPrefillLens), dev, kInt32, npt),
                   true);
    } else {
      m.set_none(kPrefillSwaIndices);
      m.set_none(kPrefillSwaLens);
    }
    for (const Field f : {kPrefillLeftVisible, kPrefillRightVisible, kCacheSlotMapping,
                          kCachePositions, kFlashinferDecodeTopkLens, kFlashinferDecodeSeqLens})
      m.set_none(f);
    if (fi_decode_lens_ && dspark_rows) fill_flashinfer_decode_lens(ndt, lens, t2r, exec);
    if (c.replay_start)
      m.set_tensor(kReplayStart, *c.replay_start);
    else
      m.set_tensor(kReplayStart,
                   make_vector(buffers_.get(kBufReplayStart), dev, kInt32, cfg.max_num_seqs + 1),
                   true);
    m.set_int(kNumDecodes, nd);
    m.set_int(kNumPrefills, np);
    m.set_int(kNumDecodeTokens, ndt);
    m.set_int(kNumPrefillTokens, npt);
    m.set_int(kMaxDecodeQueryLen, std::min<int64_t>(c.max_query_len, threshold_));
    build_prefill(c, nd, np, qsl, lens, replay, exec);
    if (rocm_) build_ragged(ndt, buffers_.as<const int32_t>(decode_buf), decode_width, exec);
  }

  /// update_draft_decode_metadata: the mask, the decode tokens' requests and their window rows
  /// again from the (advanced) inputs the metadata views.
  void do_update_draft_decode(const Metadata& md, const ops::Exec& exec) override {
    const int64_t ndt = md.field(kNumDecodeTokens).int_value;
    if (ndt == 0) return;
    const Tensor& slots = md.field(kSlotMapping).tensor;
    const Tensor& qsl = md.field(kQueryStartLoc).tensor;
    const Tensor& bt = md.field(kBlockTable).tensor;
    const Tensor& valid = md.field(kIsValidToken).tensor;
    const Tensor& t2r = md.field(kTokenToReqIndices).tensor;
    ops::sparse_swa_valid_tokens(exec, slots.data, slots.dtype == kInt64, valid.numel(),
                                 valid.as<uint8_t>());
    ops::compute_token_to_req_indices(exec, qsl.as<const int32_t>(), qsl.numel() - 1, ndt, ndt,
                                      t2r.as<int32_t>());
    // the rows build() put in DSpark's buffer are DSpark's again (vLLM compares the pointers)
    int32_t* rows = md.field(kDecodeSwaIndices).tensor.as<int32_t>();
    const bool dspark_rows = rows == buffers_.as<int32_t>(kBufDecodeIndicesNoncausal);
    const ops::SwaIndicesParams p = indices_params(bt, ndt, 0, dspark_rows);
    const int32_t* lens = md.field(kSeqLens).tensor.as<const int32_t>();
    ops::sparse_swa_indices(exec, qsl.as<const int32_t>(), lens, t2r.as<int32_t>(),
                            valid.as<uint8_t>(), bt.as<int32_t>(),
                            md.field(kReplayStart).tensor.as<const int32_t>(), p, rows,
                            md.field(kDecodeSwaLens).tensor.as<int32_t>());
    // V4.1 FlashInfer: the lengths again, in the tensors `md` holds, when its build filled them
    if (md.field(kFlashinferDecodeTopkLens).kind != FieldKind::kNone)
      ops::sparse_swa_flashinfer_decode_lens(
          exec, md.field(kDecodeSwaLens).tensor.as<const int32_t>(), lens, t2r.as<const int32_t>(),
          ndt, window_, md.field(kFlashinferDecodeTopkLens).tensor.as<int32_t>(),
          md.field(kFlashinferDecodeSeqLens).tensor.as<int32_t>());
  }

 private:
  ops::SwaIndicesParams indices_params(const Tensor& bt, int64_t rows, int64_t offset,
                                       bool dspark) const {
    ops::SwaIndicesParams p;
    p.num_tokens = rows;
    p.token_offset = offset;
    p.window_size = window_;
    p.index_width = dspark ? noncausal_width_ : window_;
    p.noncausal = dspark ? 1 : 0;
    p.block_size = spec().block_size;
    p.block_table_stride = bt.strides[0];
    p.block_table_extent = bt.shape[0] > 0 ? (bt.shape[0] - 1) * bt.strides[0] + bt.shape[1] : 0;
    return p;
  }

  /// What build() refuses (vLLM asserts or fails), checked before the metadata changes.
  void check_batch(const CommonMetadata& c, int64_t np, int64_t ndt) const {
    const Tensor& slots = *c.slot_mapping;
    if (slots.numel() > config().max_num_batched_tokens)
      invalid("common->slot_mapping has ", slots.numel(), " entries, more than "
              "config->max_num_batched_tokens=", config().max_num_batched_tokens,
              " (", backend().name(), "'s is_valid_token buffer)");
    if (np > 0 && c.host_seq_lens() == nullptr)
      invalid("common->seq_lens_cpu is NULL; ", backend().name(), " returns the prefills' host lengths "
              "(vLLM's seq_lens_cpu_upper_bound)");
    if (c.replay_start && c.replay_start->host_accessible() && c.host_seq_lens() != nullptr) {
      // no window KV below a request's start, and its scheduled tokens are computed from it on
      const int32_t* start = c.replay_start->as<const int32_t>();
      const int32_t* lens = c.host_seq_lens();
      for (int64_t r = 0; r < c.num_reqs; ++r) {
        const int64_t first = int64_t{lens[r]} - (c.qsl_host[r + 1] - c.qsl_host[r]);
        if (start[r] > first)
          invalid("common->replay_start[", r, "]=", start[r], " is past request ", r,
                  "'s first scheduled position ", first, " (seq_len - query_len); ",
                  backend().name(), " reads window KV from it on");
      }
    }
    if (!c.causal && ndt > 0 && noncausal_width_ == 0)
      fail(Status::kUnsupported, backend().name(), " builds non-causal decode rows only for DSpark "
           "speculation (vLLM asserts it): common->causal=0 with num_decode_tokens=", ndt,
           " needs config->speculative_dspark=1");
  }

  /// V4.1 FlashInfer's _fill_noncausal_decode_lens at build: flashinfer_decode_topk_lens =
  /// max(decode_swa_lens, window), flashinfer_decode_seq_lens = seq_lens[token_to_req], over the
  /// decode tokens, in the builder's persistent buffers (the draft update refills the tensors
  /// of the metadata it is given).
  void fill_flashinfer_decode_lens(int64_t ndt, const int32_t* seq_lens, const int32_t* t2r,
                                   const ops::Exec& exec) {
    Metadata& m = metadata();
    const Device dev = config().device;
    int32_t* topk = buffers_.as<int32_t>(kBufFiTopkLens);
    int32_t* seq = buffers_.as<int32_t>(kBufFiSeqLens);
    ops::sparse_swa_flashinfer_decode_lens(exec, buffers_.as<const int32_t>(kBufDecodeLens),
                                           seq_lens, t2r, ndt, window_, topk, seq);
    m.set_tensor(kFlashinferDecodeTopkLens, make_vector(topk, dev, kInt32, ndt), true);
    m.set_tensor(kFlashinferDecodeSeqLens, make_vector(seq, dev, kInt32, ndt), true);
  }

  /// _build_deepseek_v4_metadata: the prefills' fields (None and zeros without prefills).
  void build_prefill(const CommonMetadata& c, int64_t nd, int64_t np, const int32_t* qsl,
                     const int32_t* lens, const int32_t* replay, const ops::Exec& exec) {
    Metadata& m = metadata();
    if (np == 0) {
      for (const Field f : {kPrefillSeqLens, kPrefillSeqLensCpu, kPrefillGatherLens,
                            kPrefillQueryLensCpu})
        m.set_none(f);
      for (const Field f : {kPrefillWindowSize, kPrefillMaxModelLen, kPrefillMaxNumBatchedTokens})
        m.set_int(f, 0);
      return;
    }
    const BuilderConfig& cfg = config();
    int32_t* gather = buffers_.as<int32_t>(kBufGatherLens);
    ops::sparse_swa_prefill_gather_lens(exec, qsl, lens, replay, nd, np, window_, gather);
    int32_t* qlens = buffers_.as<int32_t>(kBufQueryLensCpu);
    for (int64_t k = 0; k < np; ++k) qlens[k] = c.qsl_host[nd + k + 1] - c.qsl_host[nd + k];
    m.set_tensor(kPrefillSeqLens, rows_between(*c.seq_lens, nd, c.seq_lens->shape[0]));
    // seq_lens_cpu_upper_bound[nd:], as vLLM reads it; the exact host lengths without it
    if (c.seq_lens_cpu_upper_bound)
      m.set_tensor(kPrefillSeqLensCpu, rows_between(*c.seq_lens_cpu_upper_bound, nd,
                                                    c.seq_lens_cpu_upper_bound->shape[0]));
    else
      m.set_tensor(kPrefillSeqLensCpu,
                   make_vector(const_cast<int32_t*>(c.host_seq_lens() + nd), Device{}, kInt32,
                               c.num_reqs - nd));
    m.set_tensor(kPrefillGatherLens, make_vector(gather, cfg.device, kInt32, np), true);
    m.set_tensor(kPrefillQueryLensCpu, make_vector(qlens, Device{}, kInt32, np), true);
    m.set_int(kPrefillWindowSize, window_);
    m.set_int(kPrefillMaxModelLen, cfg.max_model_len);
    m.set_int(kPrefillMaxNumBatchedTokens, cfg.max_num_batched_tokens);
  }

  /// The ROCm builders' ragged rows: the decode rows (`width` wide: the window, or DSpark's
  /// noncausal_index_width) when there are decode tokens, else None; prefill_swa_ragged_* None
  /// (rocm_ragged_rows.h).
  void build_ragged(int64_t ndt, const int32_t* rows, int32_t width, const ops::Exec& exec) {
    Metadata& m = metadata();
    for (const Field f : {kDecodeSwaRaggedIndices, kDecodeSwaRaggedIndptr,
                          kPrefillSwaRaggedIndices, kPrefillSwaRaggedIndptr})
      m.set_none(f);
    if (ndt == 0) return;
    set_ragged_rows(m, kDecodeSwaRaggedIndices, kDecodeSwaRaggedIndptr, rows, ndt, width, width,
                    buffers_.as<const int32_t>(kBufDecodeLens), width, rocm_gfx950(config()),
                    buffers_.as<int32_t>(kBufDecodeRagged),
                    buffers_.as<int32_t>(kBufDecodeRaggedIndptr), config().device, exec);
  }

  bool rocm_;                ///< The ROCm members (the ragged rows).
  bool fi_decode_lens_;      ///< The V4.1 FlashInfer member (flashinfer_decode_*).
  int32_t window_;
  int32_t noncausal_width_;  ///< DSpark's row width; 0 without DSpark.
  int32_t threshold_;
  PersistentBuffers buffers_;
};

std::unique_ptr<Builder> create(const BackendDescriptor& d, std::shared_ptr<const Backend> backend,
                                const KvCacheSpec& spec, const BuilderConfig& config) {
  return std::make_unique<SparseSwaBuilder>(std::move(backend), d, spec, config);
}

void check_sparse_swa(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& c) {
  check_spec_kind(d, spec);
  if (d.variant == kRocm) check_rocm_platform(d, c);
  if (c.platform_rocm && std::string(d.name) == kName)
    fail(Status::kUnsupported, d.name, " on ROCm is vLLM 0.33's DeepseekV4ROCMAiterSparseSWA"
         "MetadataBuilder (DeepseekSparseSWABackend.get_builder_cls): build it as "
         "DEEPSEEK_SPARSE_SWA_ROCM_AITER (config->platform_rocm=1)");
  if (spec.block_size <= 0 || spec.block_size % kBlockMultiple != 0)
    fail(Status::kUnsupported, d.name, " takes block sizes that are multiples of 32 (vLLM 0.33): "
         "kv_cache_spec->block_size=", spec.block_size);
  if (c.attn_type != kAttnDecoder)
    fail(Status::kUnsupported, d.name,
         " runs decoder self-attention only (config->attn_type=", c.attn_type, ")");
}

}  // namespace

/// One descriptor of the family: vLLM's subclasses of DeepseekSparseSWAMetadataBuilder differ
/// from it only in their level on the batches libattn builds, the V4.1 FlashInfer one also in
/// its DSpark lengths, the ROCm ones also in their ragged rows and draft decode update (see the
/// head of this file), so they share its check, buffers and builder.
constexpr BackendDescriptor sparse_swa_descriptor(const char* name, int32_t variant,
                                                  decltype(BackendDescriptor::cudagraph_support)
                                                      support) {
  return BackendDescriptor{
      name,     kVllmRelease,     kv_kind_bit(kKvSlidingWindow) | kv_kind_bit(kKvMla),
      variant,  support,          check_sparse_swa,
      plan,     create,
  };
}

#define SWA_VARIANTS(X)                                                                         \
  X(kDeepseekSparseSwaBackend, kName, kCuda, fixed_cudagraph_support<kCgUniformBatch>)          \
  X(kDeepseekSparseSwaFlashMlaBackend, "DEEPSEEK_SPARSE_SWA_FLASHMLA", kCuda,                   \
    fixed_cudagraph_support<kCgAlways>)                                                         \
  X(kDeepseekSparseSwaFlashInferBackend, "DEEPSEEK_SPARSE_SWA_FLASHINFER", kCuda,               \
    fixed_cudagraph_support<kCgAlways>)                                                         \
  X(kDeepseekV41SparseSwaBackend, "DEEPSEEK_V41_SPARSE_SWA", kCuda,                             \
    fixed_cudagraph_support<kCgUniformBatch>)                                                   \
  X(kDeepseekV41SparseSwaFlashMlaBackend, "DEEPSEEK_V41_SPARSE_SWA_FLASHMLA", kCuda,            \
    fixed_cudagraph_support<kCgAlways>)                                                         \
  X(kDeepseekV41SparseSwaFlashInferBackend, "DEEPSEEK_V41_SPARSE_SWA_FLASHINFER", kV41FlashInfer, \
    fixed_cudagraph_support<kCgAlways>)                                                         \
  X(kDeepseekSparseSwaRocmAiterBackend, "DEEPSEEK_SPARSE_SWA_ROCM_AITER", kRocm,                \
    rocm_cudagraph_support<kCgUniformBatch>)                                                    \
  X(kDeepseekV41SparseSwaRocmAiterBackend, "DEEPSEEK_V41_SPARSE_SWA_ROCM_AITER", kRocm,         \
    rocm_cudagraph_support<kCgUniformBatch>)
#define SWA_DESCRIPTOR_(descriptor, name, variant, support) \
  extern const BackendDescriptor descriptor;                \
  const BackendDescriptor descriptor = sparse_swa_descriptor(name, variant, support);
SWA_VARIANTS(SWA_DESCRIPTOR_)
#undef SWA_DESCRIPTOR_

}  // namespace attn::backends
