// GDN_ATTN: the metadata of vLLM 0.33's GDNAttentionMetadataBuilder.build(). Without spec
// decode (no request marked in num_decode_draft_tokens_cpu) it splits decodes from prefills,
// a first chunk (is_prefilling, no prior state) being a prefill even with one token, and keeps
// zero-length padding out of the prefill counts; with spec decode, the requests whose
// num_decode_draft_tokens_cpu entry is >= 0 are spec decodes and every per-request and
// per-token tensor is split into a spec and a non-spec part (state indices, query_start_loc,
// token indices, accepted counts). The prefill part gets its own query_start_loc, state indices
// and initial-state flags, and, for the Triton/FLA prefill kernel, FLA's chunk indices and
// offsets. Decode-only batches go through persistent buffers for full CUDA graphs
// (UNIFORM_BATCH). The split runs on the host for a host builder and as kernels on CUDA.
//
// KIMI_K3_KDA_ROCM: vLLM 0.33's KimiK3ROCmKDAMetadataBuilder (models/kimi_k3/amd/
// kda_metadata.py), a subclass of GDN's builder, is this builder with these differences: under
// adaptive verification (speculative decoding with enable_adaptive_verification) its
// get_varlen_cudagraph_max_query_len is max_decode_query_len and uniform_spec_sequence_length
// is None; its prefill checkpoints are keyed on the prefill kernel's rows (the prefills
// [num_decodes, num_decodes + num_prefills) of a batch without spec decode, the non-spec rows of
// one with); its chunk_indices come from prepare_chunk_metadata_device (a chunk's sequence
// index is its row, zero-length rows counted); the prefill is Triton/FLA's whatever
// gdn_prefill_backend asks (vLLM's ROCm platform resolves FlashInfer to Triton, and refuses
// AITER for a builder with its own chunk metadata); no update_block_table (vLLM offers it to
// GDN's own class only).
#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/gdn_non_spec_split.h"
#include "backends/mamba_common.h"
#include "backends/persistent_copy.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "GDN_ATTN";

/// The builders of the family (BackendDescriptor::variant): GDN's, and vLLM's ROCm Kimi-K3
/// subclass (the head of this file).
enum Variant : int32_t { kGdn = 0, kKimiK3Rocm = 1 };

#define GDN_ATTN_FIELDS(X)                                       \
  X(kNumPrefills, "num_prefills")                                \
  X(kNumPrefillTokens, "num_prefill_tokens")                     \
  X(kNumDecodes, "num_decodes")                                  \
  X(kNumDecodeTokens, "num_decode_tokens")                       \
  X(kNumSpecDecodes, "num_spec_decodes")                         \
  X(kNumSpecDecodeTokens, "num_spec_decode_tokens")              \
  X(kNumActualTokens, "num_actual_tokens")                       \
  X(kHasInitialState, "has_initial_state")                       \
  X(kSpecQueryStartLoc, "spec_query_start_loc")                  \
  X(kNonSpecQueryStartLoc, "non_spec_query_start_loc")           \
  X(kSpecStateIndicesTensor, "spec_state_indices_tensor")        \
  X(kNonSpecStateIndicesTensor, "non_spec_state_indices_tensor") \
  X(kSpecSequenceMasks, "spec_sequence_masks")                   \
  X(kSpecTokenIndx, "spec_token_indx")                           \
  X(kNonSpecTokenIndx, "non_spec_token_indx")                    \
  X(kNumAcceptedTokens, "num_accepted_tokens")                   \
  X(kNumsDictBlockM, "nums_dict_block_m")                        \
  X(kNumsDictNums, "nums_dict_nums")                             \
  X(kNumsDictTot, "nums_dict_tot")                               \
  X(kNumsDictMlistLen, "nums_dict_mlist_len")                    \
  X(kBatchPtr, "batch_ptr")                                      \
  X(kTokenChunkOffsetPtr, "token_chunk_offset_ptr")              \
  X(kSpecSequenceMasksCpu, "spec_sequence_masks_cpu")            \
  X(kUniformSpecSequenceLength, "uniform_spec_sequence_length")  \
  X(kChunkIndices, "chunk_indices")                              \
  X(kChunkOffsets, "chunk_offsets")                              \
  X(kPrefillQueryStartLoc, "prefill_query_start_loc")            \
  X(kPrefillStateIndices, "prefill_state_indices")               \
  X(kPrefillHasInitialState, "prefill_has_initial_state")      \
  /* checkpoint (MambaPrefillCheckpointMetadata) flattened */   \
  X(kCkptOffsetsTensor, "checkpoint_checkpoint_offsets")         \
  X(kCkptStateIndices, "checkpoint_state_indices")               \
  X(kCkptOffsets, "checkpoint_offsets")                          \
  X(kCkptQueryLens, "checkpoint_query_lens")                     \
  X(kCkptRequestRows, "checkpoint_request_rows")                 \
  X(kCkptBlockCols, "checkpoint_block_cols")                     \
  /* flashinfer_checkpoint_plan (GDNFlashInferCheckpointPlan) */  \
  X(kFiEveryNTokens, "flashinfer_checkpoint_plan_every_n_tokens") \
  X(kFiNumCheckpoints, "flashinfer_checkpoint_plan_num_checkpoints") \
  X(kFiCuStarts, "flashinfer_checkpoint_plan_cu_starts")         \
  X(kFiRows, "flashinfer_checkpoint_plan_rows")
ATTN_NAMED_LIST(Field, GDN_ATTN_FIELDS);

#define GDN_ATTN_BUFFERS(X)                                            \
  X(kBufAlign, "align state indices")                                  \
  X(kBufMasks, "spec_sequence_masks")                                  \
  X(kBufSpecState, "spec_state_indices_tensor")                        \
  X(kBufNonSpecState, "non_spec_state_indices_tensor")                 \
  X(kBufSpecQsl, "spec_query_start_loc")                               \
  X(kBufNonSpecQsl, "non_spec_query_start_loc")                        \
  X(kBufSpecTokens, "spec_token_indx")                                 \
  X(kBufNonSpecTokens, "non_spec_token_indx")                          \
  X(kBufSpecAccepted, "num_accepted_tokens")                           \
  X(kBufHasInitial, "has_initial_state")                               \
  X(kBufCgSpecState, "spec_state_indices_tensor (CUDA graphs)")        \
  X(kBufCgNonSpecState, "non_spec_state_indices_tensor (CUDA graphs)") \
  X(kBufCgMasks, "spec_sequence_masks (CUDA graphs)")                  \
  X(kBufCgSpecTokens, "spec_token_indx (CUDA graphs)")                 \
  X(kBufCgNonSpecTokens, "non_spec_token_indx (CUDA graphs)")          \
  X(kBufCgSpecQsl, "spec_query_start_loc (CUDA graphs)")               \
  X(kBufCgNonSpecQsl, "non_spec_query_start_loc (CUDA graphs)")        \
  X(kBufCgAccepted, "num_accepted_tokens (CUDA graphs)")               \
  X(kBufCaptureAccepted, "capture num_accepted_tokens")                \
  X(kBufCaptureDraft, "capture num_decode_draft_tokens")               \
  X(kBufBatchPtr, "batch_ptr")                                         \
  X(kBufOffsetPtr, "token_chunk_offset_ptr")                           \
  X(kBufCaptureDraftCpu, "capture num_decode_draft_tokens_cpu")        \
  X(kBufNonSpecQslCpu, "non_spec_query_start_loc_cpu")                 \
  X(kBufNumsCpu, "nums_dict nums")                                    \
  X(kBufMasksCpu, "spec_sequence_masks_cpu")                           \
  X(kBufNoPriorStateCpu, "no_prior_state")                             \
  X(kBufPrefillQsl, "prefill_query_start_loc")                         \
  X(kBufPrefillQslCpu, "prefill_query_start_loc_cpu")                  \
  X(kBufChunkIndices, "chunk_indices")                                 \
  X(kBufChunkOffsets, "chunk_offsets")                                 \
  X(kBufCkptOff, "checkpoint_offsets")                                 \
  X(kBufCkptOffCpu, "checkpoint offsets (host list)")                  \
  X(kBufCkptQlCpu, "checkpoint query_lens (host list)")                \
  X(kBufCkptRows, "checkpoint request_rows")                           \
  X(kBufCkptRowsCpu, "checkpoint request_rows staging")                \
  X(kBufCkptCols, "checkpoint block_cols")                             \
  X(kBufCkptColsCpu, "checkpoint block_cols staging")                  \
  X(kBufCkptState, "checkpoint state_indices")                         \
  X(kBufFiPlan, "flashinfer_checkpoint_plan cu_starts and rows")       \
  X(kBufFiPlanCpu, "flashinfer_checkpoint_plan staging")
ATTN_NAMED_LIST(Buffer, GDN_ATTN_BUFFERS);

/// FLA's chunk size (vLLM's FLA_CHUNK_SIZE): the Triton/FLA prefill's chunk_indices/offsets.
constexpr int32_t kFlaChunkSize = 64;
/// vLLM's FLASHINFER_GDN_CHECKPOINT_ALIGNMENT: FlashInfer's GDN prefill emits states every N
/// tokens, N a multiple of its 64-token chunk.
constexpr int64_t kFlashInferCheckpointAlignment = 64;

/// vLLM 0.33's GDN prefill backend (_resolve_gdn_prefill_backend), as far as it changes the
/// metadata: FlashInfer's chunk kernel reads cu_seqlens only (no chunk_indices/offsets).
enum class PrefillBackend { kTriton, kFlashInfer };

/// config->gdn_prefill_backend (ABI 1.6); AUTO: vLLM's "auto" on a CUDA platform as far as the
/// config describes it, FlashInfer on compute capability 9.0, else Triton/FLA (vLLM also picks
/// FlashInfer on 10.x/12.x when the model's linear_key_head_dim is 128 and the CUDA runtime is
/// 13 or newer: the caller passes FLASHINFER there).
PrefillBackend prefill_backend(int32_t variant, const BuilderConfig& c) {
  if (variant == kKimiK3Rocm) return PrefillBackend::kTriton;  // vLLM's ROCm platform
  if (c.gdn_prefill_backend == kGdnPrefillTriton) return PrefillBackend::kTriton;
  if (c.gdn_prefill_backend == kGdnPrefillFlashInfer) return PrefillBackend::kFlashInfer;
  return resolved_device_capability(c) == 90 ? PrefillBackend::kFlashInfer
                                             : PrefillBackend::kTriton;
}

/// The most FLA chunks a batch can have: every request's tokens in 64-token chunks, one partial
/// chunk each.
int64_t max_fla_chunks(const BuilderConfig& c) {
  return (static_cast<int64_t>(c.max_num_batched_tokens) + kFlaChunkSize - 1) / kFlaChunkSize +
         c.max_num_seqs;
}

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  const int64_t reqs = c.max_num_seqs, tokens = c.max_num_batched_tokens;
  const int64_t cols = 1 + static_cast<int64_t>(c.num_speculative_tokens);
  const int64_t cg = decode_cudagraph_max_bs(c, cols);
  const int64_t i32 = sizeof(int32_t);
  const int64_t align = spec.mamba_cache_mode == kMambaCacheAlign ? reqs : 0;
  const int64_t programs = conv1d_program_capacity(c);
  BufferPlan p(kBufferNames);
  p.set(kBufAlign,
        buffer_bytes("align state indices", {align, 1 + spec.num_speculative_blocks, i32}));
  p.set(kBufMasks, buffer_bytes("spec_sequence_masks", {reqs}));
  p.set(kBufSpecState, buffer_bytes("spec_state_indices_tensor", {reqs, cols, i32}));
  p.set(kBufNonSpecState, buffer_bytes("non_spec_state_indices", {reqs, i32}));
  p.set(kBufSpecQsl, buffer_bytes("spec_query_start_loc", {reqs + 1, i32}));
  p.set(kBufNonSpecQsl, buffer_bytes("non_spec_query_start_loc", {reqs + 1, i32}));
  // int64 (vLLM's argsort indices) in a batch with prefills, int32 (torch.arange) without
  p.set(kBufSpecTokens, buffer_bytes("spec_token_indx", {tokens, 8}));
  p.set(kBufNonSpecTokens, buffer_bytes("non_spec_token_indx", {tokens, 8}));
  p.set(kBufSpecAccepted, buffer_bytes("num_accepted_tokens", {reqs, i32}));
  p.set(kBufHasInitial, buffer_bytes("has_initial_state", {reqs}));
  p.set(kBufCgSpecState, buffer_bytes("cg", {cg, cols, i32}));
  p.set(kBufCgNonSpecState, buffer_bytes("cg", {cg, i32}));
  p.set(kBufCgMasks, buffer_bytes("cg", {cg}));
  p.set(kBufCgSpecTokens, buffer_bytes("cg", {cg, cols, i32}));
  p.set(kBufCgNonSpecTokens, buffer_bytes("cg", {cg, cols, i32}));
  p.set(kBufCgSpecQsl, buffer_bytes("cg", {cg + 1, i32}));
  p.set(kBufCgNonSpecQsl, buffer_bytes("cg", {cg + 1, i32}));
  p.set(kBufCgAccepted, buffer_bytes("cg", {cg, i32}));
  p.set(kBufCaptureAccepted, buffer_bytes("capture", {reqs, i32}));
  p.set(kBufCaptureDraft, buffer_bytes("capture", {reqs, i32}));
  p.set(kBufBatchPtr, buffer_bytes("batch_ptr", {programs, i32}));
  p.set(kBufOffsetPtr, buffer_bytes("token_chunk_offset_ptr", {programs, i32}));
  p.set(kBufCaptureDraftCpu, buffer_bytes("capture", {reqs, i32}), true);
  p.set(kBufNonSpecQslCpu, buffer_bytes("non_spec_qsl_cpu", {reqs + 1, i32}), true);
  p.set(kBufNumsCpu, buffer_bytes("nums", {reqs, i32}), true);
  p.set(kBufMasksCpu, buffer_bytes("spec_sequence_masks_cpu", {reqs}), true);
  p.set(kBufNoPriorStateCpu, buffer_bytes("no_prior_state", {reqs}), true);
  p.set(kBufPrefillQsl, buffer_bytes("prefill_query_start_loc", {reqs + 1, i32}));
  p.set(kBufPrefillQslCpu, buffer_bytes("prefill_query_start_loc_cpu", {reqs + 1, i32}), true);
  p.set(kBufChunkIndices, buffer_bytes("chunk_indices", {max_fla_chunks(c), 2, i32}));
  p.set(kBufChunkOffsets, buffer_bytes("chunk_offsets", {reqs + 1, 8}));
  // prefill checkpoints (vLLM 0.33's MambaPrefillCheckpointBuilder over the non-spec rows)
  const int64_t ck = prefill_checkpoints_enabled(spec, c) ? reqs : 0;
  p.set(kBufCkptOff, buffer_bytes("checkpoint_offsets", {ck, i32}));
  p.set(kBufCkptOffCpu, buffer_bytes("checkpoint offsets", {ck, i32}), true);
  p.set(kBufCkptQlCpu, buffer_bytes("checkpoint query_lens", {ck, i32}), true);
  p.set(kBufCkptRows, buffer_bytes("checkpoint request_rows", {ck, 8}));
  p.set(kBufCkptRowsCpu, buffer_bytes("checkpoint request_rows", {ck, 8}), true);
  p.set(kBufCkptCols, buffer_bytes("checkpoint block_cols", {ck, 8}));
  p.set(kBufCkptColsCpu, buffer_bytes("checkpoint block_cols", {ck, 8}), true);
  p.set(kBufCkptState, buffer_bytes("checkpoint state_indices", {ck, i32}));
  const int64_t fi = ck > 0 ? 2 * ck + 1 : 0;  // cu_starts (P + 1) then rows (<= reqs)
  p.set(kBufFiPlan, buffer_bytes("flashinfer_checkpoint_plan", {fi, 8}));
  p.set(kBufFiPlanCpu, buffer_bytes("flashinfer_checkpoint_plan", {fi, 8}), true);
  return p.requests();
}

/// The build's inputs beyond the batch: vLLM's keyword arguments.
struct Inputs {
  const Tensor* accepted = nullptr;      ///< num_accepted_tokens (where the batch lives)
  const int32_t* draft_cpu = nullptr;    ///< num_decode_draft_tokens_cpu
  const int32_t* draft_exec = nullptr;   ///< the same where the build runs
};

/// Counts and branches decided on the host before anything is written.
struct Decision {
  bool spec = false;  ///< spec_sequence_masks is not None
  int64_t ns = 0, nd = 0, np = 0, ndt = 0, npt = 0, nsdt = 0;
  bool all_spec = false;     ///< num_prefills == 0 and num_decodes == 0 with spec decodes
  bool cg_spec = false;      ///< the persistent spec-decode copies
  bool cg_non_spec = false;  ///< the persistent decode copies
  int64_t uniform_spec_len = -1;  ///< uniform_spec_sequence_length; -1 = None
};

class GdnBuilder final : public Builder {
 public:
  GdnBuilder(std::shared_ptr<const Backend> backend, const BackendDescriptor& d,
             const KvCacheSpec& spec, const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        name_(d.name),
        rocm_kda_(d.variant == kKimiK3Rocm),
        adaptive_(rocm_kda_ && config.num_speculative_tokens > 0 &&
                  config.enable_adaptive_verification),
        buffers_(d.name, config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    const BuilderConfig& c = this->config();
    num_spec_ = c.num_speculative_tokens;
    use_spec_ = num_spec_ > 0;
    init_reorder_batch_threshold(1, use_spec_);
    full_cuda_graphs_ = has_full_cudagraphs(c.cudagraph_mode);
    cg_bs_ = decode_cudagraph_max_bs(c, 1 + num_spec_);
    program_capacity_ = conv1d_program_capacity(c);
    prefill_backend_ = prefill_backend(d.variant, c);
    checkpoints_ = prefill_checkpoints_enabled(spec, c);
    // vLLM: plan_flashinfer_checkpoints on the FlashInfer prefill with an alignment that is a
    // multiple of 64 (prefill_checkpoint_alignment None: no plan, and no checkpoint is valid)
    const int64_t a = spec.prefill_checkpoint_alignment;
    plan_flashinfer_ = prefill_backend_ == PrefillBackend::kFlashInfer && a > 0 &&
                       a % kFlashInferCheckpointAlignment == 0;
  }

 protected:
  CommonLimits limits() const override {
    CommonLimits lim = Builder::limits();
    lim.block_size = 0;  // "none" or "align": one state per request, not a paged KV table
    return lim;
  }

  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    Inputs in;
    if (c.num_accepted_tokens) in.accepted = &*c.num_accepted_tokens;
    if (c.num_decode_draft_tokens_cpu) {
      in.draft_cpu = c.num_decode_draft_tokens_cpu->as<const int32_t>();
    } else if (c.num_decode_draft_tokens) {
      if (!c.num_decode_draft_tokens->host_accessible())
        invalid("common->num_decode_draft_tokens_cpu is NULL; ", name_, " reads the draft "
                "counts on the host (vLLM's num_decode_draft_tokens_cpu)");
      in.draft_cpu = c.num_decode_draft_tokens->as<const int32_t>();  // a host builder's tensor
    }
    if (!exec.on_cuda)
      in.draft_exec = in.draft_cpu;
    else if (c.num_decode_draft_tokens)
      in.draft_exec = c.num_decode_draft_tokens->as<const int32_t>();
    const Decision d = decide(c, in, exec);
    write(c, in, d, exec);
  }

  /// vLLM's build_for_cudagraph_capture: num_accepted_tokens = diff(query_start_loc) and
  /// num_decode_draft_tokens_cpu = num_accepted_tokens - 1.
  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    const int64_t n = c.num_reqs;
    if (n > cg_bs_ || c.num_actual_tokens > cg_bs_)
      fail(Status::kUnsupported, "GDN only supports decode-only full CUDAGraph capture. Make "
           "sure batch size (", n, ") <= cudagraph capture sizes (", cg_bs_, "), and number of "
           "tokens (", c.num_actual_tokens, ") <= cudagraph capture sizes (", cg_bs_, ")");
    int32_t* draft_cpu = buffers_.as<int32_t>(kBufCaptureDraftCpu);
    for (int64_t i = 0; i < n; ++i) draft_cpu[i] = static_cast<int32_t>(c.query_len(i) - 1);
    int32_t* accepted = buffers_.as<int32_t>(kBufCaptureAccepted);
    int32_t* draft = buffers_.as<int32_t>(kBufCaptureDraft);
    const Tensor accepted_t = make_vector(accepted, config().device, kInt32, n);
    Inputs in;
    in.accepted = &accepted_t;
    in.draft_cpu = draft_cpu;
    in.draft_exec = exec.on_cuda ? draft : draft_cpu;
    const Decision d = decide(c, in, exec);
    const int32_t* qsl = exec_qsl(exec, c);
    ops::query_lens_i32(exec, qsl, n, 0, accepted);
    if (exec.on_cuda) ops::query_lens_i32(exec, qsl, n, -1, draft);
    write(c, in, d, exec);
  }

  /// vLLM 0.33: only model runner V2 on CUDA (it reuses metadata at capture too; the batch's
  /// FULL-graph buffers stay shared with the source group's metadata), and only GDN's own class.
  bool supports_update_block_table() const override {
    return !rocm_kda_ && config().use_v2_model_runner != 0 && config().device.is_cuda();
  }

  /// KIMI_K3_KDA_ROCM under adaptive verification: max_decode_query_len; else GDN's None.
  std::optional<int32_t> varlen_cudagraph_max_query_len() const override {
    if (adaptive_) return max_decode_query_len();
    return std::nullopt;
  }

  /// vLLM 0.33's update_block_table: re-gathers this group's state indices (spec, non-spec,
  /// prefill) from the new table; every other field stays the source metadata's.
  void do_update_block_table(const Metadata& src, const Tensor& block_table,
                             const Tensor& slot_mapping, const ops::Exec& exec) override {
    if (src.field(kNumPrefills).kind != FieldKind::kInt)
      invalid("metadata has no state indices to replace (it was never built)");
    if (spec().mamba_cache_mode == kMambaCacheAlign)
      fail(Status::kUnsupported, "GDN_ATTN's update_block_table in mamba_cache_mode \"align\": "
           "vLLM 0.33 then takes the state indices model runner V2 precomputed for this group "
           "(mamba_aligned_state_indices), which libattn does not receive; build this group's "
           "metadata instead");
    check_replacement_slot_mapping(src, slot_mapping);
    const int64_t n = src.info.num_reqs, cols = 1 + static_cast<int64_t>(num_spec_);
    const int64_t np = src.field(kNumPrefills).int_value, nd = src.field(kNumDecodes).int_value;
    const int64_t ns = src.field(kNumSpecDecodes).int_value;
    const int64_t nsdt = src.field(kNumSpecDecodeTokens).int_value;
    check_replacement_state_table(name_, spec(), block_table, n, src.info.host_max_seq_len,
                                  config().device);
    const attn::Field& masks = src.field(kSpecSequenceMasks);
    const bool spec_path = src.field(kSpecSequenceMasksCpu).kind == FieldKind::kTensor;
    const int64_t spec_cols = std::min(cols, block_table.shape[1]);
    if (spec_path && stage_spec(np, nd, ns, nsdt) && spec_cols != cols)
      invalid("block_table has ", block_table.shape[1], " columns, fewer than the ", cols,
              " (1 + num_speculative_tokens) of the persistent spec_state_indices_tensor");
    if (spec_path && np > 0 && (masks.kind != FieldKind::kTensor ||
                                !usable_on(masks.tensor, config().device)))
      invalid("metadata's spec_sequence_masks cannot be read on ", config().device.to_string());
    Metadata& m = metadata();
    if (&src != &m) m.assign_values(src);
    m.info = src.info;
    const Device dev = config().device;
    const int32_t* bt = block_table.as<const int32_t>();
    const int64_t stride = block_table.strides[0];
    Tensor spec_idx, non_spec_idx;
    bool has_spec = false, has_non_spec = false, in_buf = false;
    if (!spec_path) {
      non_spec_idx = column_view(block_table, 0, n, 0);
      has_non_spec = true;
    } else if (np == 0) {
      spec_idx = matrix_view(block_table, 0, ns, spec_cols);
      has_spec = true;
    } else {
      int32_t* sp = buffers_.as<int32_t>(kBufSpecState);
      int32_t* nsp = buffers_.as<int32_t>(kBufNonSpecState);
      ops::gdn_masked_state_gather(exec, masks.tensor.as<const uint8_t>(), n, bt, stride,
                                   block_table.shape[1], spec_cols, sp, nsp);
      spec_idx = make_matrix(sp, dev, kInt32, ns, spec_cols, spec_cols);
      non_spec_idx = make_vector(nsp, dev, kInt32, n - ns);
      has_spec = has_non_spec = in_buf = true;
    }
    m.set_none(kSpecStateIndicesTensor);
    m.set_none(kNonSpecStateIndicesTensor);
    m.set_none(kPrefillStateIndices);
    if (has_spec) m.set_tensor(kSpecStateIndicesTensor, spec_idx, in_buf);
    if (has_non_spec) m.set_tensor(kNonSpecStateIndicesTensor, non_spec_idx, in_buf);
    if (np > 0 && has_non_spec)
      m.set_tensor(kPrefillStateIndices,
                   spec_path ? non_spec_idx : vector_view(non_spec_idx, nd, n - nd), in_buf);
    if (spec_path && stage_spec(np, nd, ns, nsdt)) {
      const int64_t bs = src.field(kSpecStateIndicesTensor).tensor.shape[0];
      int32_t* state = buffers_.as<int32_t>(kBufCgSpecState);
      ops::copy_pad_i32(exec, bt, stride, ns, cols, state, cols, bs, kNullBlockId, false);
      m.set_tensor(kSpecStateIndicesTensor, make_matrix(state, dev, kInt32, bs, cols, cols), true);
    }
    if (!spec_path && stage_decode(np, nd, ns)) {
      const int64_t bs = src.field(kNonSpecStateIndicesTensor).tensor.shape[0];
      int32_t* state = buffers_.as<int32_t>(kBufCgNonSpecState);
      ops::copy_pad_i32(exec, bt, stride, nd, 1, state, 1, bs, kNullBlockId, false);
      m.set_tensor(kNonSpecStateIndicesTensor, make_vector(state, dev, kInt32, bs), true);
    }
  }

 private:
  Decision decide(const CommonMetadata& c, const Inputs& in, const ops::Exec& exec) {
    Decision d;
    const int64_t n = c.num_reqs;
    // vLLM 0.33: the spec path whenever any request is marked (num_decode_draft_tokens_cpu >=
    // 0), even when every marked request drafted nothing: only that path applies each
    // request's accepted-token offset to the recurrent state.
    if (use_spec_ && in.draft_cpu != nullptr) {
      for (int64_t i = 0; i < n; ++i) d.ns += in.draft_cpu[i] >= 0 ? 1 : 0;
      d.spec = d.ns > 0;
    }
    if (!d.spec) {
      d.ns = 0;
      split_non_spec(c, d);
    } else {
      // Counted from the host query lengths; zero-length (padding) requests are neither.
      int64_t non_spec_tokens = 0, non_spec = 0, zero = 0;
      int64_t first_spec_len = -1;
      bool uniform = true;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t q = c.query_len(i);
        if (in.draft_cpu[i] >= 0) {
          if (first_spec_len < 0) first_spec_len = q;
          uniform = uniform && q == first_spec_len;
          continue;
        }
        ++non_spec;
        non_spec_tokens += q;
        if (q == 1) ++d.nd;
        if (q == 0) ++zero;
      }
      // KIMI_K3_KDA_ROCM drops it under adaptive verification (replace(..., None))
      d.uniform_spec_len = first_spec_len > 0 && uniform && !adaptive_ ? first_spec_len : -1;
      d.np = non_spec - d.nd - zero;
      d.ndt = d.nd;
      d.npt = non_spec_tokens - d.ndt;
      d.nsdt = c.qsl_host[n] - d.npt - d.ndt;
      // Decodes and spec decodes are mutually exclusive: with spec decodes in the batch, the
      // non-spec decodes go through the prefill path.
      if (d.nd > 0 && d.ns > 0) {
        d.np += d.nd;
        d.npt += d.ndt;
        d.nd = d.ndt = 0;
      }
      d.all_spec = d.np == 0 && d.nd == 0;
      if (in.accepted == nullptr)
        invalid("common->num_accepted_tokens is NULL; ", name_, " gathers it for the ", d.ns,
                " spec-decode requests that common->num_decode_draft_tokens_cpu marks");
      if (exec.on_cuda && in.draft_exec == nullptr)
        invalid("common->num_decode_draft_tokens is NULL; a CUDA ", name_, " builder needs the "
                "device copy of num_decode_draft_tokens_cpu for a batch with spec decodes");
    }
    check_state_table(name_, spec(), c);
    d.cg_spec = stage_spec(d.np, d.nd, d.ns, d.nsdt);
    const int64_t cols = 1 + static_cast<int64_t>(num_spec_), width = state_width(c);
    if (d.cg_spec && width > 1 && width < cols)
      invalid("block_table_tensor has ", width, " state columns: vLLM 0.33's ", name_, " copies the "
              "spec decodes' block_table[:, :", cols, "] into its (", cols, ")-column CUDA-graph "
              "buffer, which torch refuses for ", width, " columns (only 1 broadcasts)");
    d.cg_non_spec = stage_decode(d.np, d.nd, d.ns);
    return d;
  }

  /// vLLM 0.33's non-spec split: first chunks (query > 0, is_prefilling, no state before:
  /// seq_lens_cpu_upper_bound <= query length) are prefills even with one token
  /// (split_decodes_and_prefills with treat_short_extends_as_decodes=False over that mask);
  /// then trailing zero-length padding leaves both prefill counts.
  void split_non_spec(const CommonMetadata& c, Decision& d) {
    const GdnNonSpecSplit s = gdn_non_spec_split(c, buffers_.as<uint8_t>(kBufNoPriorStateCpu),
                                                 name_, /*bound_always=*/false);
    d.nd = s.num_decodes;
    d.np = s.num_prefills;
    d.ndt = s.num_decode_tokens;
    d.npt = s.num_prefill_tokens;
  }


  /// Columns of the batch's state table (mamba_get_block_table_tensor): the block table's in
  /// "none" mode, 1 + num_speculative_blocks in "align" mode.
  int64_t state_width(const CommonMetadata& c) const {
    if (spec().mamba_cache_mode == kMambaCacheAlign) return 1 + spec().num_speculative_blocks;
    return c.block_table_tensor->shape[1];
  }

  /// vLLM's _stage_spec_decode: spec-decode metadata goes into the FULL cudagraph buffers.
  bool stage_spec(int64_t np, int64_t nd, int64_t ns, int64_t nsdt) const {
    return full_cuda_graphs_ && np == 0 && nd == 0 && ns <= cg_bs_ && nsdt <= cg_bs_;
  }
  /// vLLM's _stage_decode: decode metadata goes into the FULL cudagraph buffers.
  bool stage_decode(int64_t np, int64_t nd, int64_t ns) const {
    return full_cuda_graphs_ && np == 0 && ns == 0 && nd <= cg_bs_;
  }

  void write(const CommonMetadata& c, const Inputs& in, const Decision& d,
             const ops::Exec& exec) {
    const Device dev = config().device;
    const Device host{};
    const int64_t n = c.num_reqs;
    const int64_t cols = 1 + static_cast<int64_t>(num_spec_);
    // vLLM slices block_table[..., :num_spec + 1]: a narrower table gives fewer columns.
    const int64_t spec_cols = std::min(cols, state_width(c));
    const int32_t* qsl = exec_qsl(exec, c);
    const int32_t* seq = exec_seq_lens(exec, c);
    auto i32 = [&](Buffer b) { return buffers_.as<int32_t>(b); };

    Metadata& m = metadata();
    m.reset();
    m.set_int(kNumPrefills, d.np);
    m.set_int(kNumPrefillTokens, d.npt);
    m.set_int(kNumDecodes, d.nd);
    m.set_int(kNumDecodeTokens, d.ndt);
    m.set_int(kNumSpecDecodes, d.ns);
    m.set_int(kNumSpecDecodeTokens, d.nsdt);
    m.set_int(kNumActualTokens, c.num_actual_tokens);

    const StateTable st = mamba_state_table(exec, spec(), *c.block_table_tensor, seq, n,
                                            i32(kBufAlign), dev);
    const int64_t non_spec = n - d.ns;
    // The non-spec query_start_loc on the host and where the build runs (conv1d metadata).
    const int32_t* non_spec_qsl_cpu = c.qsl_host;
    const int32_t* non_spec_qsl_exec = qsl;
    Tensor spec_qsl, non_spec_qsl, spec_tokens, non_spec_tokens, spec_state, non_spec_state;
    bool non_spec_state_buf = true;
    uint8_t* has_initial = buffers_.as<uint8_t>(kBufHasInitial);
    if (!d.spec) {
      non_spec_state = column_view(st.table, 0, n, 0);
      non_spec_state_buf = st.in_buffer;
      non_spec_qsl = *c.query_start_loc;
      m.set_tensor(kNonSpecStateIndicesTensor, non_spec_state, non_spec_state_buf);
      m.set_tensor(kNonSpecQueryStartLoc, non_spec_qsl, false);
    } else {
      ops::GdnSplitOut o;
      o.masks = buffers_.as<uint8_t>(kBufMasks);
      o.spec_state = i32(kBufSpecState);
      o.spec_accepted = i32(kBufSpecAccepted);
      if (!d.all_spec) {
        o.non_spec_state = i32(kBufNonSpecState);
        o.spec_qsl = i32(kBufSpecQsl);
        o.non_spec_qsl = i32(kBufNonSpecQsl);
        o.spec_token_indx = buffers_.as<int64_t>(kBufSpecTokens);
        o.non_spec_token_indx = buffers_.as<int64_t>(kBufNonSpecTokens);
      }
      if (d.np > 0) o.non_spec_has_initial = has_initial;
      ops::gdn_spec_split(exec, qsl, seq, n, in.draft_exec, st.table.as<const int32_t>(),
                          st.table.strides[0], st.table.shape[1], spec_cols,
                          in.accepted->as<const int32_t>(), config().max_num_batched_tokens, o);
      m.set_tensor(kSpecSequenceMasks, make_vector(o.masks, dev, kBool, n), true);
      uint8_t* masks_cpu = buffers_.as<uint8_t>(kBufMasksCpu);
      for (int64_t i = 0; i < n; ++i) masks_cpu[i] = in.draft_cpu[i] >= 0 ? 1 : 0;
      m.set_tensor(kSpecSequenceMasksCpu, make_vector(masks_cpu, host, kBool, n), true);
      if (d.uniform_spec_len > 0) m.set_int(kUniformSpecSequenceLength, d.uniform_spec_len);
      spec_state = make_matrix(o.spec_state, dev, kInt32, d.ns, spec_cols, spec_cols);
      m.set_tensor(kSpecStateIndicesTensor, spec_state, true);
      m.set_tensor(kNumAcceptedTokens, make_vector(o.spec_accepted, dev, kInt32, d.ns), true);
      if (d.all_spec) {
        const int64_t tokens = std::min<int64_t>(d.ns * cols, c.qsl_host[n]);
        ops::iota_i32(exec, i32(kBufSpecTokens), tokens);
        spec_tokens = make_vector(i32(kBufSpecTokens), dev, kInt32, tokens);
        non_spec_tokens = make_vector(i32(kBufNonSpecTokens), dev, kInt32, 0);
        spec_qsl = vector_view(*c.query_start_loc, 0, d.ns + 1);
        m.set_tensor(kSpecQueryStartLoc, spec_qsl, false);
      } else {
        spec_tokens = make_vector(o.spec_token_indx, dev, kInt64, d.nsdt);
        non_spec_tokens = make_vector(o.non_spec_token_indx, dev, kInt64, d.npt + d.ndt);
        non_spec_state = make_vector(o.non_spec_state, dev, kInt32, non_spec);
        spec_qsl = make_vector(o.spec_qsl, dev, kInt32, d.ns + 1);
        non_spec_qsl = make_vector(o.non_spec_qsl, dev, kInt32, non_spec + 1);
        m.set_tensor(kNonSpecStateIndicesTensor, non_spec_state, true);
        m.set_tensor(kSpecQueryStartLoc, spec_qsl, true);
        m.set_tensor(kNonSpecQueryStartLoc, non_spec_qsl, true);
        // The host copy the conv1d metadata is computed from.
        int32_t* host_qsl = i32(kBufNonSpecQslCpu);
        host_qsl[0] = 0;
        for (int64_t i = 0, k = 0; i < n; ++i)
          if (in.draft_cpu[i] < 0) {
            host_qsl[k + 1] = static_cast<int32_t>(host_qsl[k] + c.query_len(i));
            ++k;
          }
        non_spec_qsl_cpu = host_qsl;
        non_spec_qsl_exec = o.non_spec_qsl;
      }
      m.set_tensor(kSpecTokenIndx, spec_tokens, true);
      m.set_tensor(kNonSpecTokenIndx, non_spec_tokens, true);
    }

    if (d.np > 0) {
      if (!d.spec) ops::mamba_prefill_metadata(exec, qsl, seq, 0, n, nullptr, has_initial);
      m.set_tensor(kHasInitialState, make_vector(has_initial, dev, kBool, non_spec), true);
      const int64_t prefill_rows = write_prefill(c, d, exec, non_spec_qsl, non_spec_qsl_cpu,
                                                 non_spec_state, non_spec_state_buf || d.spec);
      if (checkpoints_) write_checkpoints(c, in, d, exec, prefill_rows);
      int32_t* nums = i32(kBufNumsCpu);
      const int64_t tot = conv1d_metadata(exec, non_spec_qsl_cpu, non_spec_qsl_exec, non_spec,
                                          nums, i32(kBufBatchPtr), i32(kBufOffsetPtr),
                                          program_capacity_);
      const int64_t programs = conv1d_num_programs(tot);
      m.set_int(kNumsDictBlockM, 8);
      m.set_tensor(kNumsDictNums, make_vector(nums, host, kInt32, non_spec), true);
      m.set_int(kNumsDictTot, tot);
      m.set_int(kNumsDictMlistLen, tot);
      m.set_tensor(kBatchPtr, make_vector(i32(kBufBatchPtr), dev, kInt32, programs), true);
      m.set_tensor(kTokenChunkOffsetPtr, make_vector(i32(kBufOffsetPtr), dev, kInt32, programs),
                   true);
    }

    // Persistent copies for full CUDA graphs, per request (batch_size = num_reqs), clipped to
    // the buffers as torch's slices are.
    const int64_t bs = std::min(n, cg_bs_);
    if (d.cg_spec) {
      int32_t* state = i32(kBufCgSpecState);
      if (spec_cols == cols) {
        ops::copy_pad_i32(exec, spec_state.as<const int32_t>(), cols, d.ns, cols, state, cols,
                          bs, kNullBlockId, false);
      } else {  // one column, broadcast by torch's copy_ into every column of the buffer
        for (int64_t j = 0; j < cols; ++j)
          ops::copy_pad_i32(exec, spec_state.as<const int32_t>(), 1, d.ns, 1, state + j, cols,
                            bs, kNullBlockId, false);
      }
      m.set_tensor(kSpecStateIndicesTensor, make_matrix(state, dev, kInt32, bs, cols, cols), true);
      uint8_t* masks = buffers_.as<uint8_t>(kBufCgMasks);
      ops::copy_pad_u8(exec, buffers_.as<const uint8_t>(kBufMasks), d.ns, masks, bs, 0);
      m.set_tensor(kSpecSequenceMasks, make_vector(masks, dev, kBool, bs), true);
      const std::pair<Field, Buffer> tokens[] = {{kNonSpecTokenIndx, kBufCgNonSpecTokens},
                                                 {kSpecTokenIndx, kBufCgSpecTokens}};
      for (const auto& [field, buffer] : tokens) {
        const Tensor& t = m.field(field).tensor;
        const int64_t len = t.shape[0];
        ops::copy_pad_i32(exec, t.as<const int32_t>(), 1, len, 1, i32(buffer), 1, len, 0, false);
        m.set_tensor(field, make_vector(i32(buffer), dev, kInt32, len), true);
      }
      ops::copy_pad_i32(exec, spec_qsl.as<const int32_t>(), 1, d.ns + 1, 1, i32(kBufCgSpecQsl), 1,
                        bs + 1, 0, /*pad_with_last=*/true);
      m.set_tensor(kSpecQueryStartLoc, make_vector(i32(kBufCgSpecQsl), dev, kInt32, bs + 1), true);
      ops::copy_pad_i32(exec, i32(kBufSpecAccepted), 1, d.ns, 1, i32(kBufCgAccepted), 1, bs, 1,
                        false);
      m.set_tensor(kNumAcceptedTokens, make_vector(i32(kBufCgAccepted), dev, kInt32, bs), true);
    }
    if (d.cg_non_spec) {
      ops::copy_pad_i32(exec, non_spec_state.as<const int32_t>(), non_spec_state.strides[0], d.nd,
                        1, i32(kBufCgNonSpecState), 1, bs, kNullBlockId, false);
      m.set_tensor(kNonSpecStateIndicesTensor,
                   make_vector(i32(kBufCgNonSpecState), dev, kInt32, bs), true);
      ops::copy_pad_i32(exec, non_spec_qsl.as<const int32_t>(), 1, d.nd + 1, 1,
                        i32(kBufCgNonSpecQsl), 1, bs + 1, 0, /*pad_with_last=*/true);
      m.set_tensor(kNonSpecQueryStartLoc, make_vector(i32(kBufCgNonSpecQsl), dev, kInt32, bs + 1),
                   true);
    }
  }

  /// The prefill kernel's inputs (vLLM 0.33): in a non-spec batch with decodes, the decodes
  /// are peeled off to the recurrent kernel, so the prefill part is requests [nd, n) with its
  /// query_start_loc rebased (non_spec_query_start_loc[nd:] - num_decode_tokens); otherwise it
  /// is the whole non-spec part. The Triton/FLA prefill also gets FLA's chunk indices and
  /// offsets of that query_start_loc (FlashInfer's reads it directly).
  /// Returns the prefill kernel's rows (prefill_query_start_loc has one more entry).
  int64_t write_prefill(const CommonMetadata& c, const Decision& d, const ops::Exec& exec,
                        const Tensor& non_spec_qsl, const int32_t* non_spec_qsl_cpu,
                        const Tensor& non_spec_state, bool non_spec_state_buf) {
    Metadata& m = metadata();
    const Device dev = config().device;
    const int64_t n = c.num_reqs, non_spec = n - d.ns;
    uint8_t* has_initial = buffers_.as<uint8_t>(kBufHasInitial);
    const int32_t* qsl_p_cpu = non_spec_qsl_cpu;
    const int32_t* qsl_p_exec = non_spec_qsl.as<const int32_t>();
    int64_t rows = non_spec;
    if (!d.spec && d.nd > 0) {
      rows = n - d.nd;
      int32_t* qsl_p = buffers_.as<int32_t>(kBufPrefillQsl);
      ops::mamba_prefill_metadata(exec, exec_qsl(exec, c), nullptr, d.nd, rows, qsl_p, nullptr);
      int32_t* host_p = buffers_.as<int32_t>(kBufPrefillQslCpu);
      for (int64_t k = 0; k <= rows; ++k) host_p[k] = c.qsl_host[d.nd + k] - c.qsl_host[d.nd];
      qsl_p_cpu = host_p;
      qsl_p_exec = qsl_p;
      m.set_tensor(kPrefillQueryStartLoc, make_vector(qsl_p, dev, kInt32, rows + 1), true);
      m.set_tensor(kPrefillStateIndices, vector_view(non_spec_state, d.nd, rows),
                   non_spec_state_buf);
      m.set_tensor(kPrefillHasInitialState, make_vector(has_initial + d.nd, dev, kBool, rows),
                   true);
    } else {
      const attn::Field& q = m.field(kNonSpecQueryStartLoc);
      m.set_tensor(kPrefillQueryStartLoc, non_spec_qsl, q.in_builder_buffer);
      m.set_tensor(kPrefillStateIndices, non_spec_state, non_spec_state_buf);
      m.set_tensor(kPrefillHasInitialState, make_vector(has_initial, dev, kBool, rows), true);
    }
    if (prefill_backend_ != PrefillBackend::kTriton) return rows;
    int64_t chunks = 0;
    for (int64_t k = 0; k < rows; ++k)
      chunks += (std::max(qsl_p_cpu[k + 1] - qsl_p_cpu[k], 0) + kFlaChunkSize - 1) / kFlaChunkSize;
    int32_t* indices = buffers_.as<int32_t>(kBufChunkIndices);
    int64_t* offsets = buffers_.as<int64_t>(kBufChunkOffsets);
    ops::gdn_chunk_metadata(exec, qsl_p_exec, rows, kFlaChunkSize, /*index_by_row=*/rocm_kda_,
                            indices, offsets);
    m.set_tensor(kChunkIndices, make_matrix(indices, dev, kInt32, chunks, 2, 2), true);
    m.set_tensor(kChunkOffsets, make_vector(offsets, dev, kInt64, rows + 1), true);
    return rows;
  }

  /// vLLM 0.33's prefill checkpoints of a batch with prefills ("align" mode, checkpoint blocks,
  /// the hash sizes resolved): MambaPrefillCheckpointBuilder.build over the non-spec rows (all
  /// rows without spec decode; KIMI_K3_KDA_ROCM: the prefills [num_decodes, num_decodes +
  /// num_prefills) then), from seq_lens_cpu_upper_bound; None when no row has one. The
  /// offsets, rows and columns are uploaded (vLLM's async_tensor_h2d) and the state indices
  /// gathered from the block table (host or CUDA). On FlashInfer's prefill with a 64-multiple
  /// alignment, plan_flashinfer_checkpoints too: every_n_tokens = gcd of the offsets,
  /// cu_starts over the prefill kernel's (trailing) rows' query_len // every_n_tokens, and per
  /// trailing row with a checkpoint its state's index cu_starts[i] + offset // every_n_tokens - 1
  /// (0 elsewhere), uploaded as one int64 tensor.
  void write_checkpoints(const CommonMetadata& c, const Inputs& in, const Decision& d,
                         const ops::Exec& exec, int64_t prefill_rows) {
    const int64_t n = c.num_reqs;
    const int32_t* seq = checkpoint_seq_lens(name_, c);
    int64_t* rows = buffers_.as<int64_t>(kBufCkptRowsCpu);
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i)
      if (d.spec ? in.draft_cpu[i] < 0 : !rocm_kda_ || (i >= d.nd && i < d.nd + d.np))
        rows[count++] = i;
    CheckpointPlan plan;
    plan.offsets = buffers_.as<int32_t>(kBufCkptOffCpu);
    plan.query_lens = buffers_.as<int32_t>(kBufCkptQlCpu);
    plan.rows = rows;
    plan.cols = buffers_.as<int64_t>(kBufCkptColsCpu);
    if (!plan_prefill_checkpoints(name_, spec(), config(), c, seq, rows, 0, count, plan)) return;
    const Device dev = config().device, host{};
    Metadata& m = metadata();
    int32_t* off = buffers_.as<int32_t>(kBufCkptOff);
    int64_t* rows_d = buffers_.as<int64_t>(kBufCkptRows);
    int64_t* cols_d = buffers_.as<int64_t>(kBufCkptCols);
    copy_i32_into_buffer(exec, plan.offsets, true, count, off);
    copy_u8_into_buffer(exec, reinterpret_cast<const uint8_t*>(rows), true, count * 8,
                        reinterpret_cast<uint8_t*>(rows_d));
    copy_u8_into_buffer(exec, reinterpret_cast<const uint8_t*>(plan.cols), true, count * 8,
                        reinterpret_cast<uint8_t*>(cols_d));
    m.set_tensor(kCkptOffsetsTensor, make_vector(off, dev, kInt32, count), true);
    m.set_tensor(kCkptOffsets, make_vector(plan.offsets, host, kInt32, count), true);
    m.set_tensor(kCkptQueryLens, make_vector(plan.query_lens, host, kInt32, count), true);
    m.set_tensor(kCkptRequestRows, make_vector(rows_d, dev, kInt64, count), true);
    m.set_tensor(kCkptBlockCols, make_vector(cols_d, dev, kInt64, count), true);
    const Tensor& bt = *c.block_table_tensor;
    int32_t* state = buffers_.as<int32_t>(kBufCkptState);
    ops::mamba_checkpoint_state_indices(exec, bt.as<const int32_t>(), bt.strides[0], rows_d,
                                        cols_d, count, state);
    m.set_tensor(kCkptStateIndices, make_vector(state, dev, kInt32, count), true);
    if (!plan_flashinfer_) return;
    int64_t every = 0;
    for (int64_t k = 0; k < count; ++k) every = std::gcd(every, int64_t{plan.offsets[k]});
    const int64_t first = count - prefill_rows;  // the prefill kernel runs the trailing rows
    int64_t* fi = buffers_.as<int64_t>(kBufFiPlanCpu);
    int64_t* fi_rows = fi + prefill_rows + 1;
    fi[0] = 0;
    for (int64_t i = 0; i < prefill_rows; ++i)
      fi[i + 1] = fi[i] + plan.query_lens[first + i] / every;
    for (int64_t k = 0; k < count; ++k) fi_rows[k] = 0;
    for (int64_t i = 0; i < prefill_rows; ++i)
      if (plan.offsets[first + i] != 0)
        fi_rows[first + i] = fi[i] + plan.offsets[first + i] / every - 1;
    const int64_t total = prefill_rows + 1 + count;
    int64_t* fi_d = buffers_.as<int64_t>(kBufFiPlan);
    copy_u8_into_buffer(exec, reinterpret_cast<const uint8_t*>(fi), true, total * 8,
                        reinterpret_cast<uint8_t*>(fi_d));
    m.set_int(kFiEveryNTokens, every);
    m.set_int(kFiNumCheckpoints, fi[prefill_rows]);
    m.set_tensor(kFiCuStarts, make_vector(fi_d, dev, kInt64, prefill_rows + 1), true);
    m.set_tensor(kFiRows, make_vector(fi_d + prefill_rows + 1, dev, kInt64, count), true);
  }

  const char* name_;  ///< The descriptor's name (messages).
  bool rocm_kda_;     ///< KIMI_K3_KDA_ROCM (kKimiK3Rocm).
  bool adaptive_;     ///< KIMI_K3_KDA_ROCM under adaptive verification.
  PersistentBuffers buffers_;
  PrefillBackend prefill_backend_ = PrefillBackend::kTriton;
  bool checkpoints_ = false;      ///< MambaPrefillCheckpointBuilder can return checkpoints
  bool plan_flashinfer_ = false;  ///< vLLM's plan_flashinfer_checkpoints
  int32_t num_spec_ = 0;
  bool use_spec_ = false;
  bool full_cuda_graphs_ = false;
  int64_t cg_bs_ = 0;
  int64_t program_capacity_ = 0;
};

void check_gdn(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig&) {
  check_mamba_spec(d.name, kMambaTypeGdnAttention, spec);
  check_mamba_cache_mode(d.name, spec);
}

std::unique_ptr<Builder> create(const BackendDescriptor& d, std::shared_ptr<const Backend> backend,
                                const KvCacheSpec& spec, const BuilderConfig& config) {
  return std::make_unique<GdnBuilder>(std::move(backend), d, spec, config);
}

}  // namespace

/// GDN's builder and its ROCm Kimi-K3 subclass (the head of this file): one check, one buffer
/// plan, one builder; both UNIFORM_BATCH (the subclass keeps GDN's class attribute).
extern const BackendDescriptor kGdnAttnBackend;
const BackendDescriptor kGdnAttnBackend{
    kName,          "0.13-0.33 (partial)", kv_kind_bit(kKvMamba),  kGdn,
    fixed_cudagraph_support<kCgUniformBatch>, check_gdn, buffer_plan_of<plan>, create,
};
extern const BackendDescriptor kKimiK3KdaRocmBackend;
const BackendDescriptor kKimiK3KdaRocmBackend{
    "KIMI_K3_KDA_ROCM", kVllmRelease, kv_kind_bit(kKvMamba), kKimiK3Rocm,
    fixed_cudagraph_support<kCgUniformBatch>, check_gdn, buffer_plan_of<plan>, create,
};

}  // namespace attn::backends
