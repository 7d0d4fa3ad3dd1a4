// MAMBA2, MAMBA1, SHORT_CONV: the metadata of vLLM 0.33's BaseMambaAttentionMetadataBuilder
// (_compute_common_metadata, _compute_chunk_metadata, _update_metadata_for_cudagraph_capture,
// build_for_cudagraph_capture, update_block_table) and of its subclasses: Mamba2 adds the
// chunked-scan metadata (seq_idx_p, cu_chunk_seqlen_p, last_chunk_indices_p,
// prep_initial_states, chunk_size) and its prefill checkpoint fields, Mamba1 and ShortConv
// nothing. Cache modes "none" and "align" ("all" was removed in vLLM 0.33). Field names are
// vLLM's; nums_dict, a dict keyed by BLOCK_M = 8, is flattened into nums_dict_* fields, the
// ReplaySSM scratch tuple and the checkpoint dataclass into prefixed fields
// (docs/backends/mamba.md).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/mamba_common.h"
#include "backends/persistent_copy.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

enum class Variant { kMamba2, kMamba1, kShortConv };

const std::string kMamba2Name = "MAMBA2";
const std::string kMamba1Name = "MAMBA1";
const std::string kShortConvName = "SHORT_CONV";

const std::string& name_of(Variant v) {
  return v == Variant::kMamba2 ? kMamba2Name : v == Variant::kMamba1 ? kMamba1Name : kShortConvName;
}

int32_t type_of(Variant v) {
  return v == Variant::kMamba2   ? kMambaTypeMamba2
         : v == Variant::kMamba1 ? kMambaTypeMamba1
                                 : kMambaTypeShortConv;
}

#define MAMBA_FIELDS(X)                                                       \
  /* BaseMambaAttentionMetadata, in its order */                              \
  X(kNumPrefills, "num_prefills")                                             \
  X(kNumPrefillTokens, "num_prefill_tokens")                                  \
  X(kNumDecodes, "num_decodes")                                               \
  X(kNumDecodeTokens, "num_decode_tokens")                                    \
  X(kNumReqs, "num_reqs")                                                     \
  X(kHasInitialStatesP, "has_initial_states_p")                               \
  X(kQueryStartLocP, "query_start_loc_p")                                     \
  X(kStateIndicesTensorP, "state_indices_tensor_p")                           \
  X(kStateIndicesTensorD, "state_indices_tensor_d")                           \
  X(kQueryStartLocD, "query_start_loc_d")                                     \
  X(kNumAcceptedTokens, "num_accepted_tokens")                                \
  X(kSeqLens, "seq_lens")                                                     \
  X(kCuChunkSeqlenP, "cu_chunk_seqlen_p")                                     \
  X(kLastChunkIndicesP, "last_chunk_indices_p")                               \
  /* nums_dict[8] flattened, then the two program buffers */                  \
  X(kNumsDictBlockM, "nums_dict_block_m")                                     \
  X(kNumsDictNums, "nums_dict_nums")                                          \
  X(kNumsDictTot, "nums_dict_tot")                                            \
  X(kNumsDictMlistLen, "nums_dict_mlist_len")                                 \
  X(kBatchPtr, "batch_ptr")                                                   \
  X(kTokenChunkOffsetPtr, "token_chunk_offset_ptr")                           \
  /* ReplaySSM (vLLM 0.33): Triton's ring cursor, flush flags and B.C scratch, \
     FlashInfer's scratch tuple (flattened) and contiguous state indices */    \
  X(kWritePosD, "write_pos_d")                                                \
  X(kIsFlushD, "is_flush_d")                                                  \
  X(kBcPreScratch, "bc_pre_scratch")                                          \
  X(kReplayssmScratchCbScaled, "replayssm_scratch_cb_scaled")                 \
  X(kReplayssmScratchCumAdtVec, "replayssm_scratch_cumAdt_vec")               \
  X(kReplayssmScratchCbOld, "replayssm_scratch_cb_old")                       \
  X(kReplayssmStateIndicesD, "replayssm_state_indices_d")                     \
  /* Mamba2AttentionMetadata */                                               \
  X(kPrepInitialStates, "prep_initial_states")                                \
  X(kChunkSize, "chunk_size")                                                 \
  X(kSeqIdxP, "seq_idx_p")                                                    \
  X(kCheckpointChunkIdx, "checkpoint_chunk_idx")                              \
  /* checkpoint_meta (MambaPrefillCheckpointMetadata) flattened */            \
  X(kCkptOffsetsTensor, "checkpoint_meta_checkpoint_offsets")                 \
  X(kCkptStateIndices, "checkpoint_meta_state_indices")                       \
  X(kCkptOffsets, "checkpoint_meta_offsets")                                  \
  X(kCkptQueryLens, "checkpoint_meta_query_lens")                             \
  X(kCkptRequestRows, "checkpoint_meta_request_rows")                         \
  X(kCkptBlockCols, "checkpoint_meta_block_cols")
ATTN_NAMED_LIST(FieldIndex, MAMBA_FIELDS);

/// The fields of a variant: the base metadata's, and Mamba2's (kPrepInitialStates on).
std::vector<std::string> field_names(Variant v) {
  const size_t n = v == Variant::kMamba2 ? kFieldIndexCount : kPrepInitialStates;
  return std::vector<std::string>(kFieldIndexNames, kFieldIndexNames + n);
}

#define MAMBA_BUFFERS(X)                                  \
  X(kBufQslP, "query_start_loc_p")                        \
  X(kBufHasInitial, "has_initial_states_p")               \
  X(kBufAlign, "align state indices")                     \
  X(kBufCgStateD, "state_indices_tensor_d (CUDA graphs)") \
  X(kBufCgAccepted, "decode_num_accepted_tokens")         \
  X(kBufAccepted, "num_accepted_tokens")                  \
  X(kBufCuChunk, "cu_chunk_seqlen_p")                     \
  X(kBufSeqIdx, "seq_idx_p")                              \
  X(kBufLastChunk, "last_chunk_indices_p")                \
  X(kBufSeqP, "prefill seq_lens (host bound)")            \
  X(kBufSeqPCpu, "prefill seq_lens staging")              \
  X(kBufWritePos, "write_pos_d")                          \
  X(kBufWritePosCpu, "write_pos_d staging")               \
  X(kBufIsFlush, "is_flush_d")                            \
  X(kBufIsFlushCpu, "is_flush_d staging")                 \
  X(kBufBcPre, "bc_pre_scratch")                          \
  X(kBufCbScaled, "replayssm_scratch cb_scaled")          \
  X(kBufCumAdt, "replayssm_scratch cumAdt_vec")           \
  X(kBufCbOld, "replayssm_scratch cb_old")                \
  X(kBufReplayIdx, "replayssm_state_indices_d")           \
  X(kBufCkptOff, "checkpoint_offsets")                    \
  X(kBufCkptOffCpu, "checkpoint offsets (host list)")     \
  X(kBufCkptQlCpu, "checkpoint query_lens (host list)")   \
  X(kBufCkptRows, "checkpoint request_rows")              \
  X(kBufCkptRowsCpu, "checkpoint request_rows staging")   \
  X(kBufCkptCols, "checkpoint block_cols")                \
  X(kBufCkptColsCpu, "checkpoint block_cols staging")     \
  X(kBufCkptState, "checkpoint state_indices")            \
  X(kBufCkptIdx, "checkpoint_chunk_idx")                  \
  X(kBufBatchPtr, "batch_ptr")                            \
  X(kBufOffsetPtr, "token_chunk_offset_ptr")              \
  X(kBufQslPCpu, "query_start_loc_p_cpu")                 \
  X(kBufNumsCpu, "nums_dict nums")                        \
  X(kBufPrefillingCpu, "is_prefilling scratch")
ATTN_NAMED_LIST(Buffer, MAMBA_BUFFERS);

/// The sizes a builder plans from its spec and config.
struct Sizes {
  int64_t cg_bs = 0;       ///< vLLM's decode_cudagraph_max_bs
  int64_t d_cols = 0;      ///< columns of the persistent state_indices_tensor_d
  int32_t chunk = 0;       ///< the chunk of the chunk metadata; 0: none
  int64_t max_chunks = 0;  ///< chunks any batch can have
  int64_t programs = 0;    ///< causal conv1d programs any batch can have
  // ReplaySSM (vLLM 0.33's --use-replayssm): Triton's ring cursors and B.C scratch, or
  // FlashInfer's checkpointing_ssu scratch (allocate_checkpointing_ssu_scratch's shapes).
  bool replay_triton = false, replay_flashinfer = false;
  int64_t ring = 0;          ///< replayssm_buffer_len
  int64_t bc_rows = 0;       ///< max(decode_cudagraph_max_bs, max_num_seqs)
  int64_t ngroups = 0;       ///< MambaSpec.shapes[4][0]
  int64_t heads = 0;         ///< MambaSpec.shapes[2][0]
  int64_t token_pad = 0;     ///< cdiv(1 + k, 16) * 16
  int64_t old_token_pad = 0; ///< cdiv(replayssm_buffer_len, 8) * 8
  DType scratch_dtype;       ///< the model's dtype
  // MAMBA2's prefill checkpoints (MambaPrefillCheckpointBuilder): "align" mode, checkpoint
  // blocks in the spec, the config's hash sizes resolved.
  bool checkpoints = false;
};

/// The model's dtype as a tensor dtype (FlashInfer ReplaySSM's scratch).
DType tensor_dtype_of(int32_t kv_dtype) {
  switch (kv_dtype) {
    case kKvDtypeFloat16: return DType{2, 16, 1};
    case kKvDtypeFloat32: return kFloat32;
    default: return DType{4, 16, 1};  // bfloat16
  }
}

inline constexpr DType kInt8{0, 8, 1};
inline constexpr DType kInt64Dtype{0, 64, 1};

Sizes sizes_of(Variant v, const KvCacheSpec& spec, const BuilderConfig& c) {
  Sizes s;
  s.cg_bs = decode_cudagraph_max_bs(c, 1);
  s.d_cols = 1 + static_cast<int64_t>(c.num_speculative_tokens);
  s.chunk = v == Variant::kMamba2 ? spec.mamba_chunk_size : 0;
  s.checkpoints = v == Variant::kMamba2 && prefill_checkpoints_enabled(spec, c);
  // as vLLM's mamba2_static_sizes bounds them; a checkpoint splits a request into two segments,
  // each of which may open with a partial chunk
  if (s.chunk > 0)
    s.max_chunks = (static_cast<int64_t>(c.max_num_batched_tokens) + s.chunk - 1) / s.chunk +
                   (s.checkpoints ? 4 : 2) * static_cast<int64_t>(c.max_num_seqs);
  s.programs = conv1d_program_capacity(c);
  s.replay_triton = c.use_replayssm && !c.mamba_backend_flashinfer;
  s.replay_flashinfer = c.use_replayssm && c.mamba_backend_flashinfer;
  s.ring = c.replayssm_buffer_len;
  s.bc_rows = std::max<int64_t>(s.cg_bs, c.max_num_seqs);
  s.ngroups = spec.mamba_replayssm_ngroups;
  s.heads = spec.mamba_num_heads;
  s.token_pad = (1 + static_cast<int64_t>(c.num_speculative_tokens) + 15) / 16 * 16;
  s.old_token_pad = (s.ring + 7) / 8 * 8;
  s.scratch_dtype = tensor_dtype_of(c.model_dtype_for(spec));
  return s;
}

std::vector<BufferRequest> plan(Variant v, const KvCacheSpec& spec, const BuilderConfig& c) {
  const Sizes s = sizes_of(v, spec, c);
  const int64_t reqs = c.max_num_seqs;
  const bool align = spec.mamba_cache_mode == kMambaCacheAlign;
  const bool spec_decode = c.num_speculative_tokens > 0;
  const int64_t i32 = sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kBufQslP, buffer_bytes("query_start_loc_p", {reqs + 1, i32}));
  p.set(kBufHasInitial, buffer_bytes("has_initial_states_p", {reqs}));
  p.set(kBufAlign, buffer_bytes("align state indices",
                                {align ? reqs : 0, 1 + spec.num_speculative_blocks, i32}));
  p.set(kBufCgStateD, buffer_bytes("state_indices_tensor_d", {s.cg_bs, s.d_cols, i32}));
  p.set(kBufCgAccepted,
        buffer_bytes("decode_num_accepted_tokens", {spec_decode ? s.cg_bs : 0, i32}));
  p.set(kBufAccepted, buffer_bytes("num_accepted_tokens", {spec_decode ? reqs : 0, i32}));
  p.set(kBufCuChunk, buffer_bytes("cu_chunk_seqlen_p", {s.chunk > 0 ? s.max_chunks + 1 : 0, i32}));
  p.set(kBufSeqIdx, buffer_bytes("seq_idx_p", {s.max_chunks, i32}));
  p.set(kBufLastChunk, buffer_bytes("last_chunk_indices_p", {s.chunk > 0 ? reqs : 0, i32}));
  p.set(kBufSeqP, buffer_bytes("prefill seq_lens", {s.chunk > 0 ? reqs : 0, i32}));
  p.set(kBufSeqPCpu, buffer_bytes("prefill seq_lens", {s.chunk > 0 ? reqs : 0, i32}), true);
  const int64_t tri = s.replay_triton ? 1 : 0, fi = s.replay_flashinfer ? 1 : 0;
  const int64_t dec = std::max<int64_t>(reqs, s.cg_bs);
  const int64_t half = static_cast<int64_t>(s.scratch_dtype.itemsize());
  p.set(kBufWritePos, buffer_bytes("write_pos_d", {tri * dec, i32}));
  p.set(kBufWritePosCpu, buffer_bytes("write_pos_d", {tri * dec, i32}), true);
  p.set(kBufIsFlush, buffer_bytes("is_flush_d", {tri * dec}));
  p.set(kBufIsFlushCpu, buffer_bytes("is_flush_d", {tri * dec}), true);
  p.set(kBufBcPre, buffer_bytes("bc_pre_scratch", {tri * s.bc_rows, s.ngroups, s.ring, 4}));
  p.set(kBufCbScaled, buffer_bytes("cb_scaled", {fi * reqs, s.heads, 32, s.token_pad / 2, half}));
  p.set(kBufCumAdt, buffer_bytes("cumAdt_vec", {fi * reqs, s.heads, s.token_pad, 4}));
  p.set(kBufCbOld, buffer_bytes("cb_old", {fi * reqs, s.heads, 32, s.old_token_pad / 2, half}));
  p.set(kBufReplayIdx, buffer_bytes("replayssm_state_indices_d", {fi * dec, i32}));
  const int64_t ck = s.checkpoints ? reqs : 0;
  p.set(kBufCkptOff, buffer_bytes("checkpoint_offsets", {ck, i32}));
  p.set(kBufCkptOffCpu, buffer_bytes("checkpoint offsets", {ck, i32}), true);
  p.set(kBufCkptQlCpu, buffer_bytes("checkpoint query_lens", {ck, i32}), true);
  p.set(kBufCkptRows, buffer_bytes("request_rows", {ck, 8}));
  p.set(kBufCkptRowsCpu, buffer_bytes("request_rows", {ck, 8}), true);
  p.set(kBufCkptCols, buffer_bytes("block_cols", {ck, 8}));
  p.set(kBufCkptColsCpu, buffer_bytes("block_cols", {ck, 8}), true);
  p.set(kBufCkptState, buffer_bytes("checkpoint state_indices", {ck, i32}));
  p.set(kBufCkptIdx, buffer_bytes("checkpoint_chunk_idx", {ck, 8}));
  p.set(kBufBatchPtr, buffer_bytes("batch_ptr", {s.programs, i32}));
  p.set(kBufOffsetPtr, buffer_bytes("token_chunk_offset_ptr", {s.programs, i32}));
  p.set(kBufQslPCpu, buffer_bytes("query_start_loc_p_cpu", {reqs + 1, i32}), true);
  p.set(kBufNumsCpu, buffer_bytes("nums", {reqs, i32}), true);
  p.set(kBufPrefillingCpu, buffer_bytes("is_prefilling", {reqs}), true);
  return p.requests();
}

void check_supported(Variant v, const KvCacheSpec& spec, const BuilderConfig& c) {
  check_mamba_spec(name_of(v).c_str(), type_of(v), spec);
  check_mamba_cache_mode(name_of(v).c_str(), spec);
  if (c.use_replayssm && !c.mamba_backend_flashinfer && spec.mamba_replayssm_ngroups <= 0)
    invalid("kv_cache_spec->mamba_replayssm_ngroups=", spec.mamba_replayssm_ngroups,
            " must be positive with config->use_replayssm on Triton (vLLM sizes bc_pre_scratch "
            "from MambaSpec.shapes[4][0], the B cache's groups)");
  if (c.use_replayssm && c.mamba_backend_flashinfer) {
    // FlashInfer's allocate_checkpointing_ssu_scratch refuses these (ValueError)
    if (spec.mamba_num_heads <= 0)
      invalid("kv_cache_spec->mamba_num_heads=", spec.mamba_num_heads, " must be positive with "
              "config->use_replayssm on FlashInfer (vLLM passes MambaSpec.shapes[2][0] to "
              "allocate_checkpointing_ssu_scratch: \"batch_size and num_heads must be positive\")");
    if (c.num_speculative_tokens + 1 > 16)
      invalid("config->num_speculative_tokens=", c.num_speculative_tokens, ": FlashInfer's "
              "ReplaySSM scratch takes 1 + num_speculative_tokens in [1, 16] "
              "(\"num_predicted_tokens must be in [1, 16]\")");
    if (c.replayssm_buffer_len > 16)
      invalid("config->replayssm_buffer_len=", c.replayssm_buffer_len, ": FlashInfer's ReplaySSM "
              "scratch takes it in [1, 16] (\"max_window must be in [1, 16]\")");
  }
  if (v == Variant::kMamba2 && spec.mamba_chunk_size <= 0)
    invalid("kv_cache_spec->mamba_chunk_size=", spec.mamba_chunk_size,
            " must be positive for MAMBA2 (vLLM: \"chunk_size needs to be set in the model "
            "config for Mamba2 models\"; model_config.get_mamba_chunk_size())");
}

/// What a build decided before writing anything (a refused batch leaves the metadata as it was).
struct Decision {
  int64_t num_reqs = 0, nd = 0, np = 0, ndt = 0, npt = 0;
  const Tensor* accepted = nullptr;  ///< num_accepted_tokens as this build sees it, or null
  bool accepted_in_buffer = false;
  int64_t num_chunks = 0;
  bool cuda_graph = false;  ///< the decode-only branch of _update_metadata_for_cudagraph_capture
  /// The host sequence lengths vLLM 0.33 reads (seq_lens_cpu_upper_bound, else the exact
  /// mirror): the split's prior-state test, the prefills' chunks and prep_initial_states.
  const int32_t* seq_host = nullptr;
  bool checkpoint = false;  ///< a prefill row has a checkpoint (host plan in the staging buffers)
};

class MambaBuilder final : public Builder {
 public:
  MambaBuilder(std::shared_ptr<const Backend> backend, Variant v, const KvCacheSpec& spec,
               const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        v_(v),
        sizes_(sizes_of(v, spec, config)),
        buffers_(name_of(v).c_str(), config.device, plan(v, spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(field_names(v));
    num_spec_ = this->config().num_speculative_tokens;
    use_spec_ = num_spec_ > 0;
    full_cuda_graphs_ = has_full_cudagraphs(this->config().cudagraph_mode);
    // vLLM: _init_reorder_batch_threshold(1, use_spec_decode); update_block_table is disabled
    // with speculative decoding.
    init_reorder_batch_threshold(1, use_spec_);
  }

  bool supports_update_block_table() const override { return !use_spec_; }
  /// vLLM 0.33: Mamba2's decode reads the device request boundaries, so its FULL graphs replay
  /// varlen decode batches up to max_decode_query_len(); Mamba1 and ShortConv keep None.
  std::optional<int32_t> varlen_cudagraph_max_query_len() const override {
    if (v_ == Variant::kMamba2) return max_decode_query_len();
    return std::nullopt;
  }

 protected:
  CommonLimits limits() const override {
    CommonLimits lim = Builder::limits();
    // "none" and "align" tables hold state slots and are checked by check_state_table.
    lim.block_size = 0;
    return lim;
  }

  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const Tensor* accepted = c.num_accepted_tokens ? &*c.num_accepted_tokens : nullptr;
    const Decision d = decide(c, accepted, false);
    write(c, d, exec);
  }

  /// vLLM's build_for_cudagraph_capture: decode-only batches of 1 + num_speculative_tokens
  /// tokens per request, built with num_accepted_tokens = diff(query_start_loc) under spec
  /// decode (the caller's num_accepted_tokens is not read).
  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    const int64_t q = 1 + static_cast<int64_t>(num_spec_);
    if (c.max_query_len > q || c.num_reqs > sizes_.cg_bs)
      fail(Status::kUnsupported, name(), " only supports decode-only full CUDAGraph capture: "
           "common->max_query_len=", c.max_query_len, " must be <= 1 + num_speculative_tokens=",
           q, " and common->num_reqs=", c.num_reqs, " <= decode_cudagraph_max_bs=", sizes_.cg_bs,
           " (make sure all cudagraph capture sizes <= max_num_seqs)");
    if (c.max_query_len != q)
      fail(Status::kUnsupported, name(), " captures decode-only batches: common->max_query_len=",
           c.max_query_len, " must equal 1 + num_speculative_tokens=", q);
    if (num_spec_ > 0 && v_ != Variant::kMamba1) {
      int32_t* lens = buffers_.as<int32_t>(kBufAccepted);
      const Tensor accepted = make_vector(lens, config().device, kInt32, c.num_reqs);
      const Decision d = decide(c, &accepted, true);
      ops::query_lens_i32(exec, exec_qsl(exec, c), c.num_reqs, 0, lens);
      write(c, d, exec);
    } else {
      write(c, decide(c, nullptr, false), exec);
    }
  }

  void do_update_block_table(const Metadata& src, const Tensor& block_table,
                             const Tensor& slot_mapping, const ops::Exec& exec) override {
    if (src.field(kNumReqs).kind != FieldKind::kInt)
      invalid("metadata has no state indices to replace (it was never built)");
    // The metadata has no slot_mapping field, but the promise holds: a replacement unlike the
    // batch's is refused.
    check_replacement_slot_mapping(src, slot_mapping);
    const int64_t nd = src.field(kNumDecodes).int_value;
    const int64_t np = src.field(kNumPrefills).int_value;
    const Field& seq = src.field(kSeqLens);
    check_replacement_state_table(name().c_str(), spec(), block_table, nd + np,
                                  src.info.host_max_seq_len, config().device);
    if (seq.kind != FieldKind::kTensor || !usable_on(seq.tensor, config().device))
      invalid("metadata's seq_lens cannot be read on ", config().device.to_string());
    const bool cuda_graph = np == 0 && nd <= sizes_.cg_bs && full_cuda_graphs_;
    if (cuda_graph) check_state_d_width("block_table", block_table.shape[1], nd);
    Metadata& m = metadata();
    if (&src != &m) m.assign_values(src);
    m.info = src.info;
    const StateTable st = mamba_state_table(exec, spec(), block_table, seq.tensor.as<const int32_t>(),
                                            nd + np, buffers_.as<int32_t>(kBufAlign), config().device);
    const Tensor sd = set_state_indices(m, st, nd, np);
    // use_spec_decode is false here (update_block_table is unsupported with it).
    if (cuda_graph) copy_state_d(m, exec, sd, nd, nd + np);
    // FlashInfer ReplaySSM: column 0 of the new decode state indices (vLLM 0.33 runs
    // _update_metadata_for_cudagraph_capture again).
    if (sizes_.replay_flashinfer)
      set_replay_indices(m, exec, cuda_graph ? m.field(kStateIndicesTensorD).tensor : sd,
                         cuda_graph ? nd + np : nd);
    // MAMBA2: checkpoint destinations are block-table entries, re-gathered from this table
    // (vLLM 0.33's regather_state_indices).
    if (v_ == Variant::kMamba2 && m.field(kCkptRequestRows).kind == FieldKind::kTensor)
      gather_checkpoint_states(m, exec, block_table, np);
  }

 private:
  const std::string& name() const { return name_of(v_); }

  Decision decide(const CommonMetadata& c, const Tensor* accepted, bool accepted_in_buffer) {
    Decision d;
    d.num_reqs = c.num_reqs;
    // vLLM 0.33's _compute_common_metadata asserts both.
    if (!c.is_prefilling)
      invalid("common->is_prefilling is NULL; ", name(), " needs it (vLLM 0.33's "
              "_compute_common_metadata asserts common_attn_metadata.is_prefilling is not None)");
    const int32_t* seq_host = c.seq_lens_cpu_upper_bound
                                  ? c.seq_lens_cpu_upper_bound->as<const int32_t>()
                                  : c.host_seq_lens();
    d.seq_host = seq_host;
    if (seq_host == nullptr)
      invalid("common->seq_lens_cpu_upper_bound is NULL (and no host seq_lens is given); ", name(),
              " needs it (vLLM 0.33's _compute_common_metadata asserts "
              "seq_lens_cpu_upper_bound is not None)");
    // Mamba1's build() drops the keyword arguments (it calls _compute_common_metadata alone).
    const Tensor* drafts = nullptr;
    if (v_ != Variant::kMamba1) {
      d.accepted = accepted;
      d.accepted_in_buffer = accepted_in_buffer;
      if (c.num_decode_draft_tokens_cpu) drafts = &*c.num_decode_draft_tokens_cpu;
    }
    // Multi-token queries are decodes only when num_accepted_tokens is given.
    const int32_t threshold = d.accepted != nullptr ? reorder_batch_threshold().value_or(1) : 1;
    // One-token prefills with prior state, and prompt tails padded with placeholder drafts
    // (query_len == drafts + 1), are decodes in 0.33: is_prefilling is cleared for them.
    uint8_t* prefilling = buffers_.as<uint8_t>(kBufPrefillingCpu);
    const int32_t* draft_counts = drafts ? drafts->as<const int32_t>() : nullptr;
    const CommonMetadata::PrefillingFlags flags = c.prefilling_flags();
    const int32_t* qsl = c.qsl_host;
    uint8_t any_prefilling = 0;
    // Without a set flag no request is prefilling (the loop would write zeros the split does
    // not read: no mask is passed).
    for (int64_t i = 0, n = c.any_prefilling() ? c.num_reqs : 0; i < n; ++i) {
      const int64_t q = int64_t{qsl[i + 1]} - qsl[i];
      const bool pre = flags(i);
      const bool stateful = pre && seq_host[i] > q;
      const bool to_decode =
          stateful && (q == 1 || (draft_counts != nullptr && draft_counts[i] >= 0 &&
                                  q == static_cast<int64_t>(draft_counts[i]) + 1));
      prefilling[i] = pre && !to_decode ? 1 : 0;
      any_prefilling |= prefilling[i];
    }
    // No mask when no request is prefilling: the split's O(1) answer for a decode-only step.
    const ops::BatchSplit s = ops::split_decodes_and_prefills(
        c.qsl_host, c.num_reqs, c.num_actual_tokens, c.max_query_len, threshold,
        /*require_uniform=*/false, /*treat_short_extends_as_decodes=*/false,
        any_prefilling ? prefilling : nullptr);
    d.nd = s.num_decodes;
    d.np = s.num_prefills;
    d.ndt = s.num_decode_tokens;
    d.npt = s.num_prefill_tokens;

    check_state_table(name().c_str(), spec(), c);
    if (d.np > 0) {
      // The prefills' relative query_start_loc on the host (conv1d programs, chunk counts).
      int32_t* qsl_p = buffers_.as<int32_t>(kBufQslPCpu);
      for (int64_t k = 0; k <= d.np; ++k) qsl_p[k] = c.qsl_host[d.nd + k] - c.qsl_host[d.nd];
      if (sizes_.checkpoints) d.checkpoint = plan_checkpoints(c, d);
      if (sizes_.chunk > 0) {
        d.num_chunks = ops::mamba_num_chunks(
            qsl_p, seq_host + d.nd, d.np, sizes_.chunk,
            d.checkpoint ? buffers_.as<const int32_t>(kBufCkptOffCpu) : nullptr);
        if (d.num_chunks > sizes_.max_chunks)  // cannot happen for a validated batch
          fail(Status::kInternal, name(), ": ", d.num_chunks, " chunks exceed the ",
               sizes_.max_chunks, " planned");
      }
    }
    if (sizes_.replay_triton && d.nd > 0 &&
        (!c.replayssm_decode_base_cpu || (config().async_scheduling && use_spec_)))
      invalid("--use-replayssm requires exact CPU sequence lengths and decode-base counts to "
              "derive decode write positions (vLLM 0.33's ValueError): ",
              !c.replayssm_decode_base_cpu ? "common->replayssm_decode_base_cpu is NULL"
                                           : "config->async_scheduling with speculative decoding");
    d.cuda_graph = d.np == 0 && d.nd <= sizes_.cg_bs && full_cuda_graphs_;
    if (d.cuda_graph)
      check_state_d_width("common->block_table_tensor", c.block_table_tensor->shape[1], d.nd);
    return d;
  }

  /// The columns of state_indices_tensor_d for a block table `bt_width` wide: the state
  /// table's ("none": the block table's; "align": 1 + num_speculative_blocks), at most
  /// 1 + num_speculative_tokens.
  int64_t state_d_cols(int64_t bt_width) const {
    const int64_t width = spec().mamba_cache_mode == kMambaCacheAlign
                              ? 1 + static_cast<int64_t>(spec().num_speculative_blocks)
                              : bt_width;
    return std::min<int64_t>(width, 1 + static_cast<int64_t>(num_spec_));
  }

  /// Refuses, before anything is written, decode state indices that vLLM 0.33's copy_ into the
  /// CUDA-graph buffer cannot broadcast (neither 1 nor 1 + num_speculative_tokens columns).
  void check_state_d_width(const char* table, int64_t bt_width, int64_t nd) const {
    const int64_t cols = state_d_cols(bt_width);
    if (nd > 0 && cols != 1 && cols != sizes_.d_cols)
      invalid(table, " has ", bt_width, " columns: ", name(), " copies the decodes' state "
              "indices (", cols, " columns) into its CUDA-graph buffer of 1 + "
              "num_speculative_tokens = ", sizes_.d_cols, " columns, which takes 1 or ",
              sizes_.d_cols, " (vLLM 0.33's copy_ cannot broadcast ", cols, ")");
  }

  /// state_indices_tensor_d / _p from a state table; returns the decode part.
  Tensor set_state_indices(Metadata& m, const StateTable& st, int64_t nd, int64_t np) {
    const Tensor sd = matrix_view(st.table, 0, nd, std::min<int64_t>(st.table.shape[1],
                                                                    1 + static_cast<int64_t>(num_spec_)));
    m.set_tensor(kStateIndicesTensorD, sd, st.in_buffer);
    m.set_tensor(kStateIndicesTensorP, column_view(st.table, nd, np, 0), st.in_buffer);
    return sd;
  }

  /// The persistent copy of state_indices_tensor_d, (padded_bs, 1 + num_speculative_tokens),
  /// padded with NULL_BLOCK_ID: vLLM's `buffer[:num_decodes].copy_(state_indices_tensor_d)`,
  /// which broadcasts a one-column table (a "none" table narrower than 1 + k) over every
  /// column and refuses other widths.
  void copy_state_d(Metadata& m, const ops::Exec& exec, const Tensor& sd, int64_t nd,
                    int64_t padded_bs) {
    int32_t* buf = buffers_.as<int32_t>(kBufCgStateD);
    const int64_t cols = sd.shape[1], width = sizes_.d_cols;
    if (cols == width) {
      ops::copy_pad_i32(exec, sd.as<const int32_t>(), sd.strides[0], nd, cols, buf, width,
                        padded_bs, kNullBlockId, false);
    } else if (cols == 1) {
      for (int64_t j = 0; j < width; ++j)
        ops::copy_pad_i32(exec, sd.as<const int32_t>(), sd.strides[0], nd, 1, buf + j, width,
                          padded_bs, kNullBlockId, false);
    } else {  // check_state_d_width refused it before anything was written
      fail(Status::kInternal, name(), ": ", cols, " state-index columns for a buffer of ", width);
    }
    m.set_tensor(kStateIndicesTensorD,
                 make_matrix(buf, config().device, kInt32, padded_bs, width, width), true);
  }

  void write(const CommonMetadata& c, const Decision& d, const ops::Exec& exec) {
    const Device dev = config().device;
    const Device host{};
    const int64_t n = d.num_reqs, nd = d.nd, np = d.np;
    const int32_t* qsl = exec_qsl(exec, c);
    const int32_t* seq = exec_seq_lens(exec, c);

    Metadata& m = metadata();
    m.reset();
    m.set_int(kNumPrefills, np);
    m.set_int(kNumPrefillTokens, d.npt);
    m.set_int(kNumDecodes, nd);
    m.set_int(kNumDecodeTokens, d.ndt);
    m.set_int(kNumReqs, n);
    m.set_tensor(kSeqLens, *c.seq_lens);

    const StateTable st = mamba_state_table(exec, spec(), *c.block_table_tensor, seq, n,
                                            buffers_.as<int32_t>(kBufAlign), dev);
    const Tensor sd = set_state_indices(m, st, nd, np);

    // Spec decode: the decodes' query_start_loc and accepted counts; without
    // num_accepted_tokens (one-token prefills reclassified as decodes, Mamba1 whose build drops
    // the argument) every token counts as accepted: diff(query_start_loc_d).
    std::optional<Tensor> accepted;
    bool accepted_in_buffer = false;
    std::optional<Tensor> qsl_d;
    // Without decodes (or spec decode) vLLM keeps the caller's tensor as it is.
    if (d.accepted != nullptr) {
      accepted = *d.accepted;
      accepted_in_buffer = d.accepted_in_buffer;
    }
    if (nd > 0 && use_spec_) {
      qsl_d = vector_view(*c.query_start_loc, 0, nd + 1);
      if (d.accepted != nullptr) {
        accepted = vector_view(*d.accepted, 0, nd);
        accepted_in_buffer = d.accepted_in_buffer;
      } else {
        int32_t* lens = buffers_.as<int32_t>(kBufAccepted);
        ops::query_lens_i32(exec, qsl, nd, 0, lens);
        accepted = make_vector(lens, dev, kInt32, nd);
        accepted_in_buffer = true;
      }
    }

    bool prep_initial_states = false;
    if (np > 0) {
      int32_t* qsl_p = buffers_.as<int32_t>(kBufQslP);
      uint8_t* has_initial = buffers_.as<uint8_t>(kBufHasInitial);
      ops::mamba_prefill_metadata(exec, qsl, seq, nd, np, qsl_p, has_initial);
      m.set_tensor(kQueryStartLocP, make_vector(qsl_p, dev, kInt32, np + 1), true);
      m.set_tensor(kHasInitialStatesP, make_vector(has_initial, dev, kBool, np), true);

      const int32_t* qsl_p_cpu = buffers_.as<const int32_t>(kBufQslPCpu);
      int32_t* nums = buffers_.as<int32_t>(kBufNumsCpu);
      int32_t* batch_ptr = buffers_.as<int32_t>(kBufBatchPtr);
      int32_t* offsets = buffers_.as<int32_t>(kBufOffsetPtr);
      const int64_t tot =
          conv1d_metadata(exec, qsl_p_cpu, qsl_p, np, nums, batch_ptr, offsets, sizes_.programs);
      const int64_t programs = conv1d_num_programs(tot);
      m.set_int(kNumsDictBlockM, 8);
      m.set_tensor(kNumsDictNums, make_vector(nums, host, kInt32, np), true);
      m.set_int(kNumsDictTot, tot);
      m.set_int(kNumsDictMlistLen, tot);
      m.set_tensor(kBatchPtr, make_vector(batch_ptr, dev, kInt32, programs), true);
      m.set_tensor(kTokenChunkOffsetPtr, make_vector(offsets, dev, kInt32, programs), true);

      if (sizes_.chunk > 0) {
        // vLLM 0.33 chunks the prefills from the host bound (_prefill_cpu_metadata; exact for
        // rows that are prefilling, not for a spec-decode row counted as a prefill) and uploads
        // the result: the bound's prefill rows are staged and copied where the kernel runs.
        int32_t* seq_p_cpu = buffers_.as<int32_t>(kBufSeqPCpu);
        int32_t* seq_p = buffers_.as<int32_t>(kBufSeqP);
        std::copy(d.seq_host + nd, d.seq_host + nd + np, seq_p_cpu);
        copy_i32_into_buffer(exec, seq_p_cpu, true, np, seq_p);
        int32_t* cu = buffers_.as<int32_t>(kBufCuChunk);
        int32_t* seq_idx = buffers_.as<int32_t>(kBufSeqIdx);
        int32_t* last = buffers_.as<int32_t>(kBufLastChunk);
        int32_t* ckpt_off = nullptr;
        int64_t* ckpt_idx = nullptr;
        if (d.checkpoint) {
          ckpt_off = buffers_.as<int32_t>(kBufCkptOff);
          ckpt_idx = buffers_.as<int64_t>(kBufCkptIdx);
          write_checkpoints(c, d, exec);
        }
        ops::mamba_chunk_metadata(exec, qsl_p, seq_p, np, sizes_.chunk, sizes_.max_chunks, cu,
                                  seq_idx, last, ckpt_off, ckpt_idx);
        if (d.checkpoint)
          m.set_tensor(kCheckpointChunkIdx, make_vector(ckpt_idx, dev, kInt64, np), true);
        m.set_tensor(kCuChunkSeqlenP, make_vector(cu, dev, kInt32, d.num_chunks + 1), true);
        m.set_tensor(kLastChunkIndicesP, make_vector(last, dev, kInt32, np), true);
        m.set_tensor(kSeqIdxP, make_vector(seq_idx, dev, kInt32, d.num_chunks), true);
      }
      if (v_ == Variant::kMamba2)  // any(computed > 0) from the host bound, as vLLM 0.33
        for (int64_t k = 0; k < np && !prep_initial_states; ++k)
          prep_initial_states = d.seq_host[nd + k] > c.query_len(nd + k);
    }
    if (v_ == Variant::kMamba2) {
      m.set_bool(kPrepInitialStates, prep_initial_states);
      m.set_int(kChunkSize, sizes_.chunk);
    }

    if (sizes_.replay_triton && nd > 0) write_positions(c, d, exec);
    if (nd > 0) set_replay_scratch(m, nd);

    // _update_metadata_for_cudagraph_capture: decode-only batches go through the persistent
    // buffers, padded to num_reqs rows.
    bool replay_idx_set = false;
    if (d.cuda_graph) {
      const int64_t padded_bs = n;
      copy_state_d(m, exec, sd, nd, padded_bs);
      // Triton ReplaySSM: the cursors already live in the persistent buffers (padded_bs ==
      // num_decodes here: no prefills, so nothing to pad with 0).
      if (sizes_.replay_triton && nd > 0) {
        m.set_tensor(kWritePosD, make_vector(buffers_.as<int32_t>(kBufWritePos), dev, kInt32,
                                             padded_bs), true);
        m.set_tensor(kIsFlushD, make_vector(buffers_.as<uint8_t>(kBufIsFlush), dev, kInt8,
                                            padded_bs), true);
      }
      set_replay_scratch(m, padded_bs);
      if (sizes_.replay_flashinfer) {
        set_replay_indices(m, exec, m.field(kStateIndicesTensorD).tensor, padded_bs);
        replay_idx_set = true;
      }
      if (use_spec_ && accepted) {
        if (qsl_d) qsl_d = vector_view(*c.query_start_loc, 0, padded_bs + 1);
        int32_t* buf = buffers_.as<int32_t>(kBufCgAccepted);
        ops::copy_pad_i32(exec, accepted->as<const int32_t>(), 1, nd, 1, buf, 1, padded_bs,
                          /*pad with the first slot index*/ 1, false);
        accepted = make_vector(buf, dev, kInt32, padded_bs);
        accepted_in_buffer = true;
      }
    }
    // FlashInfer ReplaySSM: state_indices_tensor_d[:, 0].contiguous() otherwise.
    if (sizes_.replay_flashinfer && !replay_idx_set) set_replay_indices(m, exec, sd, nd);
    if (qsl_d) m.set_tensor(kQueryStartLocD, *qsl_d);
    if (accepted) m.set_tensor(kNumAcceptedTokens, *accepted, accepted_in_buffer);
  }

  /// vLLM 0.33's MambaPrefillCheckpointBuilder.build over the prefill rows (host lengths: the
  /// bound, exact for prefills): per row, the checkpoint position get_mamba_prefill_checkpoint_
  /// position(seq_len, cache_hit_alignment_tokens, drop_eagle_block, lookahead) and whether
  /// is_mamba_prefill_checkpoint_valid places it in this query; offset = position - query start
  /// (0: none), column cdiv(seq_len, block_size) - 2 (-1: none). Staged in host buffers;
  /// returns whether any row has one (else vLLM's checkpoint_meta is None).
  bool plan_checkpoints(const CommonMetadata& c, const Decision& d) {
    CheckpointPlan out;
    out.offsets = buffers_.as<int32_t>(kBufCkptOffCpu);
    out.query_lens = buffers_.as<int32_t>(kBufCkptQlCpu);
    out.rows = buffers_.as<int64_t>(kBufCkptRowsCpu);
    out.cols = buffers_.as<int64_t>(kBufCkptColsCpu);
    return plan_prefill_checkpoints(name().c_str(), spec(), config(), c, d.seq_host, nullptr,
                                    d.nd, d.np, out);
  }

  /// checkpoint_meta's fields from the staged plan: the device copies of the offsets, rows and
  /// columns (vLLM's async_tensor_h2d), the host lists, and the state indices gathered from the
  /// block table.
  void write_checkpoints(const CommonMetadata& c, const Decision& d, const ops::Exec& exec) {
    const Device dev = config().device, host{};
    const int64_t np = d.np;
    Metadata& m = metadata();
    int32_t* off = buffers_.as<int32_t>(kBufCkptOff);
    int64_t* rows = buffers_.as<int64_t>(kBufCkptRows);
    int64_t* cols = buffers_.as<int64_t>(kBufCkptCols);
    copy_i32_into_buffer(exec, buffers_.as<int32_t>(kBufCkptOffCpu), true, np, off);
    copy_u8_into_buffer(exec, buffers_.as<uint8_t>(kBufCkptRowsCpu), true, np * 8,
                        reinterpret_cast<uint8_t*>(rows));
    copy_u8_into_buffer(exec, buffers_.as<uint8_t>(kBufCkptColsCpu), true, np * 8,
                        reinterpret_cast<uint8_t*>(cols));
    m.set_tensor(kCkptOffsetsTensor, make_vector(off, dev, kInt32, np), true);
    m.set_tensor(kCkptOffsets, make_vector(buffers_.as<int32_t>(kBufCkptOffCpu), host, kInt32, np), true);
    m.set_tensor(kCkptQueryLens, make_vector(buffers_.as<int32_t>(kBufCkptQlCpu), host, kInt32, np), true);
    m.set_tensor(kCkptRequestRows, make_vector(rows, dev, kInt64, np), true);
    m.set_tensor(kCkptBlockCols, make_vector(cols, dev, kInt64, np), true);
    gather_checkpoint_states(m, exec, *c.block_table_tensor, np);
  }

  /// checkpoint_meta.state_indices from `block_table` (a build's or update_block_table's).
  void gather_checkpoint_states(Metadata& m, const ops::Exec& exec, const Tensor& block_table,
                                int64_t np) {
    int32_t* out = buffers_.as<int32_t>(kBufCkptState);
    ops::mamba_checkpoint_state_indices(exec, block_table.as<const int32_t>(), block_table.strides[0],
                                        buffers_.as<const int64_t>(kBufCkptRows),
                                        buffers_.as<const int64_t>(kBufCkptCols), np, out);
    m.set_tensor(kCkptStateIndices, make_vector(out, config().device, kInt32, np), true);
  }

  /// Triton ReplaySSM's per-decode ring cursor and flush flag, from the host lengths as vLLM
  /// 0.33 derives them (on the CPU, then uploaded): computed = seq_len - query_len; the anchor
  /// is replayssm_decode_base_cpu (in "align" mode at least the start of the current block);
  /// steps = computed - anchor, 0 for padding rows and for one-token prefills replayed as
  /// decodes (steps < 0, which flush); write_pos = steps mod replayssm_buffer_len; flush at
  /// the ring's last slot, for those prefills, and in "align" mode on a step that completes a
  /// block.
  void write_positions(const CommonMetadata& c, const Decision& d, const ops::Exec& exec) {
    const int64_t nd = d.nd, ring = sizes_.ring, bs = spec().block_size;
    const bool align = spec().mamba_cache_mode == kMambaCacheAlign;
    const int32_t* base = c.replayssm_decode_base_cpu->as<const int32_t>();
    int32_t* pos = buffers_.as<int32_t>(kBufWritePosCpu);
    uint8_t* flush = buffers_.as<uint8_t>(kBufIsFlushCpu);
    for (int64_t i = 0; i < nd; ++i) {
      const int64_t q = c.query_len(i);
      const int64_t computed = static_cast<int64_t>(d.seq_host[i]) - q;
      int64_t anchor = base[i];
      if (align) anchor = std::max<int64_t>(anchor, floor_div(computed, bs) * bs);
      int64_t steps = computed - anchor;
      const bool valid = q > 0;
      const bool leftover = valid && steps < 0;
      if (!valid || leftover) steps = 0;
      const int64_t wp = ((steps % ring) + ring) % ring;
      bool f = wp == ring - 1 || leftover;
      if (align && valid && floor_mod(computed + q, bs) == 0) f = true;
      pos[i] = static_cast<int32_t>(wp);
      flush[i] = f ? 1 : 0;
    }
    const Device dev = config().device;
    copy_i32_into_buffer(exec, pos, true, nd, buffers_.as<int32_t>(kBufWritePos));
    copy_u8_into_buffer(exec, flush, true, nd, buffers_.as<uint8_t>(kBufIsFlush));
    Metadata& m = metadata();
    m.set_tensor(kWritePosD, make_vector(buffers_.as<int32_t>(kBufWritePos), dev, kInt32, nd), true);
    m.set_tensor(kIsFlushD, make_vector(buffers_.as<uint8_t>(kBufIsFlush), dev, kInt8, nd), true);
  }

  static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
  static int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

  /// The first `rows` rows of the ReplaySSM scratch: Triton's bc_pre_scratch (rows, ngroups,
  /// replayssm_buffer_len) float32, or FlashInfer's three checkpointing_ssu buffers. Scratch:
  /// never written by the build (vLLM's torch.empty).
  void set_replay_scratch(Metadata& m, int64_t rows) {
    const Device dev = config().device;
    const Sizes& z = sizes_;
    if (z.replay_triton)
      m.set_tensor(kBcPreScratch, compact(buffers_.as<void>(kBufBcPre), dev, kFloat32,
                                          {rows, z.ngroups, z.ring}), true);
    if (z.replay_flashinfer) {
      m.set_tensor(kReplayssmScratchCbScaled,
                   compact(buffers_.as<void>(kBufCbScaled), dev, z.scratch_dtype,
                           {rows, z.heads, 32, z.token_pad / 2}), true);
      m.set_tensor(kReplayssmScratchCumAdtVec,
                   compact(buffers_.as<void>(kBufCumAdt), dev, kFloat32,
                           {rows, z.heads, z.token_pad}), true);
      m.set_tensor(kReplayssmScratchCbOld,
                   compact(buffers_.as<void>(kBufCbOld), dev, z.scratch_dtype,
                           {rows, z.heads, 32, z.old_token_pad / 2}), true);
    }
  }

  /// replayssm_state_indices_d: column 0 of `sd` (rows entries), copied contiguous.
  void set_replay_indices(Metadata& m, const ops::Exec& exec, const Tensor& sd, int64_t rows) {
    int32_t* buf = buffers_.as<int32_t>(kBufReplayIdx);
    ops::copy_pad_i32(exec, sd.as<const int32_t>(), sd.strides[0], rows, 1, buf, 1, rows, 0,
                      false);
    m.set_tensor(kReplayssmStateIndicesD, make_vector(buf, config().device, kInt32, rows), true);
  }

  static Tensor compact(void* data, Device dev, DType dtype, std::initializer_list<int64_t> dims) {
    Tensor t;
    t.data = data;
    t.device = dev;
    t.dtype = dtype;
    t.ndim = static_cast<int32_t>(dims.size());
    int32_t k = 0;
    for (int64_t d : dims) t.shape[k++] = d;
    int64_t stride = 1;
    for (int32_t j = t.ndim - 1; j >= 0; --j) {
      t.strides[j] = stride;
      stride *= t.shape[j];
    }
    return t;
  }

  Variant v_;
  Sizes sizes_;
  PersistentBuffers buffers_;
  int32_t num_spec_ = 0;
  bool use_spec_ = false;
  bool full_cuda_graphs_ = false;
};

/// A Mamba-family descriptor: its variant picks the builder.
Variant variant_of(const BackendDescriptor& d) { return static_cast<Variant>(d.variant); }

BackendDescriptor mamba_descriptor(Variant v, const char* vllm_release) {
  return {
      name_of(v).c_str(),
      vllm_release,
      kv_kind_bit(kKvMamba),
      static_cast<int32_t>(v),
      // BaseMambaAttentionMetadataBuilder._cudagraph_support
      fixed_cudagraph_support<kCgUniformBatch>,
      [](const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& config) {
        check_supported(variant_of(d), spec, config);
      },
      [](const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& config) {
        return plan(variant_of(d), spec, config);
      },
      [](const BackendDescriptor& d, std::shared_ptr<const Backend> backend,
         const KvCacheSpec& spec, const BuilderConfig& config) -> std::unique_ptr<Builder> {
        return std::make_unique<MambaBuilder>(std::move(backend), variant_of(d), spec, config);
      },
  };
}

}  // namespace

extern const BackendDescriptor kMamba2Backend, kMamba1Backend, kShortConvBackend;
const BackendDescriptor kMamba2Backend = mamba_descriptor(Variant::kMamba2, kVllmRelease);
const BackendDescriptor kMamba1Backend = mamba_descriptor(Variant::kMamba1, kVllmRelease);
/// SHORT_CONV: the base builder as it is (vLLM's ShortConvAttentionMetadataBuilder adds nothing).
const BackendDescriptor kShortConvBackend =
    mamba_descriptor(Variant::kShortConv, kVllmRelease);

}  // namespace attn::backends
