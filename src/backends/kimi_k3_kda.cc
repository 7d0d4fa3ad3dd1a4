// KIMI_K3_KDA: the metadata of vLLM 0.33's KimiK3KDAMetadataBuilder.build()
// (vllm/models/kimi_k3/nvidia/kda_metadata.py), a GDN_ATTN subclass with a build of its own:
// GDN's request classification and CUDA-graph staging, without FLA's chunk metadata (Kimi-K3's
// prefill kernel prepares its own), with zero-length padding left out of every request-indexed
// non-spec tensor, all non-spec requests of a spec batch either prefills or packed decodes,
// the contiguous token starts of each group, FlashInfer's prefill order, and RecoverSSM
// (config->use_replayssm with spec decode): one state slot per spec decode, accepted counts of
// one, every active decode on the spec path, and the commit metadata. Level ALWAYS (one k + 1
// graph replays any mix); no update_block_table. The split runs on the host for a host builder
// and as kernels on CUDA.
#include <algorithm>
#include <numeric>
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
#include "ops/state_space_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "KIMI_K3_KDA";

#define KIMI_K3_KDA_FIELDS(X)                                                          \
  X(kNumPrefills, "num_prefills")                                                      \
  X(kNumPrefillTokens, "num_prefill_tokens")                                           \
  X(kNumDecodes, "num_decodes")                                                        \
  X(kNumDecodeTokens, "num_decode_tokens")                                             \
  X(kNumSpecDecodes, "num_spec_decodes")                                               \
  X(kNumSpecDecodeTokens, "num_spec_decode_tokens")                                    \
  X(kNumActualTokens, "num_actual_tokens")                                             \
  X(kHasInitialState, "has_initial_state")                                             \
  X(kSpecQueryStartLoc, "spec_query_start_loc")                                        \
  X(kNonSpecQueryStartLoc, "non_spec_query_start_loc")                                 \
  X(kSpecStateIndicesTensor, "spec_state_indices_tensor")                              \
  X(kNonSpecStateIndicesTensor, "non_spec_state_indices_tensor")                       \
  X(kSpecTokenIndx, "spec_token_indx")                                                 \
  X(kNonSpecTokenIndx, "non_spec_token_indx")                                          \
  X(kNumAcceptedTokens, "num_accepted_tokens")                                         \
  X(kNumsDictBlockM, "nums_dict_block_m")                                              \
  X(kNumsDictNums, "nums_dict_nums")                                                   \
  X(kNumsDictTot, "nums_dict_tot")                                                     \
  X(kNumsDictMlistLen, "nums_dict_mlist_len")                                          \
  X(kBatchPtr, "batch_ptr")                                                            \
  X(kTokenChunkOffsetPtr, "token_chunk_offset_ptr")                                    \
  X(kSpecTokenStart, "spec_token_start")                                               \
  X(kNonSpecTokenStart, "non_spec_token_start")                                        \
  X(kFlashinferPrefillQueryStartLoc, "flashinfer_prefill_query_start_loc")             \
  X(kFlashinferPrefillSeqOrder, "flashinfer_prefill_seq_order")                        \
  X(kCommitStateIndices, "recoverssm_commit_state_indices")                            \
  X(kCommitQueryStartLoc, "recoverssm_commit_query_start_loc")                         \
  X(kCommitRequestIndices, "recoverssm_commit_request_indices")                        \
  X(kCommitAlignBlockTable, "recoverssm_commit_align_block_table")                     \
  X(kCommitAlignNumComputedTokens, "recoverssm_commit_align_num_computed_tokens")      \
  X(kCommitAlignBlockSize, "recoverssm_commit_align_block_size")
ATTN_NAMED_LIST(Field, KIMI_K3_KDA_FIELDS);

#define KIMI_K3_KDA_BUFFERS(X)                                          \
  X(kBufAlign, "align state indices")                                   \
  X(kBufMarksCpu, "spec marks (host)")                                  \
  X(kBufMarks, "spec marks")                                            \
  X(kBufSpecState, "spec_state_indices_tensor")                         \
  X(kBufNonSpecState, "non_spec_state_indices_tensor")                  \
  X(kBufSpecQsl, "spec_query_start_loc")                                \
  X(kBufNonSpecQsl, "non_spec_query_start_loc")                         \
  X(kBufNonSpecQslCpu, "non_spec_query_start_loc_cpu")                  \
  X(kBufSpecTokens, "spec_token_indx")                                  \
  X(kBufNonSpecTokens, "non_spec_token_indx")                           \
  X(kBufSpecAccepted, "num_accepted_tokens")                            \
  X(kBufOnes, "recoverssm_num_accepted_tokens")                         \
  X(kBufHasInitial, "has_initial_state")                                \
  X(kBufCgSpecState, "spec_state_indices_tensor (CUDA graphs)")         \
  X(kBufCgNonSpecState, "non_spec_state_indices_tensor (CUDA graphs)")  \
  X(kBufCgSpecQsl, "spec_query_start_loc (CUDA graphs)")                \
  X(kBufCgAccepted, "num_accepted_tokens (CUDA graphs)")                \
  X(kBufCaptureAccepted, "capture num_accepted_tokens")                 \
  X(kBufCaptureDraftCpu, "capture num_decode_draft_tokens_cpu")         \
  X(kBufBatchPtr, "batch_ptr")                                          \
  X(kBufOffsetPtr, "token_chunk_offset_ptr")                            \
  X(kBufNumsCpu, "nums_dict nums")                                      \
  X(kBufNoPriorStateCpu, "no_prior_state")                              \
  X(kBufRequestIdxCpu, "recoverssm request_indices (host)")             \
  X(kBufRequestIdx, "recoverssm request_indices")                       \
  X(kBufComputed, "recoverssm num_computed_tokens")                     \
  X(kBufFiQsl, "flashinfer_prefill_query_start_loc")                    \
  X(kBufFiOrderCpu, "flashinfer_prefill_seq_order (host)")              \
  X(kBufFiOrder, "flashinfer_prefill_seq_order")
ATTN_NAMED_LIST(Buffer, KIMI_K3_KDA_BUFFERS);

/// cache_config.use_kda_recoverssm, as VllmConfig.validate_mamba_cached_kernel sets it for a
/// Kimi (KDA) architecture: --use-replayssm with speculative decoding.
bool use_recoverssm(const BuilderConfig& c) {
  return c.use_replayssm && c.num_speculative_tokens > 0;
}

/// Rows of the persistent spec state buffer: vLLM's (max_num_seqs, 1) under RecoverSSM, GDN's
/// (decode_cudagraph_max_bs, 1 + k) otherwise.
int64_t spec_buffer_rows(const BuilderConfig& c) {
  return use_recoverssm(c) ? c.max_num_seqs : decode_cudagraph_max_bs(c, 1 + c.num_speculative_tokens);
}

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  const int64_t reqs = c.max_num_seqs, tokens = c.max_num_batched_tokens;
  const int64_t slots = use_recoverssm(c) ? 1 : 1 + static_cast<int64_t>(c.num_speculative_tokens);
  const int64_t cg = decode_cudagraph_max_bs(c, 1 + c.num_speculative_tokens);
  const int64_t staged = std::max(cg, spec_buffer_rows(c));
  const int64_t i32 = sizeof(int32_t);
  const int64_t align = spec.mamba_cache_mode == kMambaCacheAlign ? reqs : 0;
  const int64_t programs = conv1d_program_capacity(c);
  BufferPlan p(kBufferNames);
  p.set(kBufAlign,
        buffer_bytes("align state indices", {align, 1 + spec.num_speculative_blocks, i32}));
  p.set(kBufMarksCpu, buffer_bytes("marks", {reqs, i32}), true);
  p.set(kBufMarks, buffer_bytes("marks", {reqs, i32}));
  p.set(kBufSpecState, buffer_bytes("spec_state_indices_tensor", {reqs, slots, i32}));
  p.set(kBufNonSpecState, buffer_bytes("non_spec_state_indices", {reqs, i32}));
  p.set(kBufSpecQsl, buffer_bytes("spec_query_start_loc", {reqs + 1, i32}));
  p.set(kBufNonSpecQsl, buffer_bytes("non_spec_query_start_loc", {reqs + 1, i32}));
  p.set(kBufNonSpecQslCpu, buffer_bytes("non_spec_qsl_cpu", {reqs + 1, i32}), true);
  p.set(kBufSpecTokens, buffer_bytes("spec_token_indx", {tokens, 8}));
  p.set(kBufNonSpecTokens, buffer_bytes("non_spec_token_indx", {tokens, 8}));
  p.set(kBufSpecAccepted, buffer_bytes("num_accepted_tokens", {reqs, i32}));
  p.set(kBufOnes, buffer_bytes("ones", {use_recoverssm(c) ? reqs : 0, i32}));
  p.set(kBufHasInitial, buffer_bytes("has_initial_state", {reqs}));
  p.set(kBufCgSpecState, buffer_bytes("cg", {spec_buffer_rows(c), slots, i32}));
  p.set(kBufCgNonSpecState, buffer_bytes("cg", {cg, i32}));
  p.set(kBufCgSpecQsl, buffer_bytes("cg", {staged + 1, i32}));
  p.set(kBufCgAccepted, buffer_bytes("cg", {staged, i32}));
  p.set(kBufCaptureAccepted, buffer_bytes("capture", {reqs, i32}));
  p.set(kBufCaptureDraftCpu, buffer_bytes("capture", {reqs, i32}), true);
  p.set(kBufBatchPtr, buffer_bytes("batch_ptr", {programs, i32}));
  p.set(kBufOffsetPtr, buffer_bytes("token_chunk_offset_ptr", {programs, i32}));
  p.set(kBufNumsCpu, buffer_bytes("nums", {reqs, i32}), true);
  p.set(kBufNoPriorStateCpu, buffer_bytes("no_prior_state", {reqs}), true);
  p.set(kBufRequestIdxCpu, buffer_bytes("request_indices", {reqs, i32}), true);
  p.set(kBufRequestIdx, buffer_bytes("request_indices", {reqs, i32}));
  p.set(kBufComputed, buffer_bytes("num_computed_tokens", {reqs, i32}));
  p.set(kBufFiQsl, buffer_bytes("flashinfer_prefill_query_start_loc", {reqs + 1, 8}));
  p.set(kBufFiOrderCpu, buffer_bytes("flashinfer_prefill_seq_order", {reqs, i32}), true);
  p.set(kBufFiOrder, buffer_bytes("flashinfer_prefill_seq_order", {reqs, i32}));
  return p.requests();
}

/// What create() refuses beyond the spec kind and type: "all" mode (removed in 0.33), "align"
/// mode under model runner V2 (vLLM then reads the aligned state indices MRV2 precomputes,
/// mamba_aligned_state_indices, an input libattn does not take) and prefill checkpoints (not
/// built: the lane's and GDN_ATTN's absence).
void check(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& c) {
  check_mamba_spec(d.name, kMambaTypeGdnAttention, spec);
  check_mamba_cache_mode(d.name, spec);
  if (spec.mamba_cache_mode == kMambaCacheAlign && c.use_v2_model_runner)
    fail(Status::kUnsupported, d.name, " in mamba_cache_mode \"align\" under model runner V2 "
         "(config->use_v2_model_runner=1): vLLM 0.33 then reads the state indices model runner "
         "V2 precomputes for the group (mamba_aligned_state_indices), which libattn does not "
         "receive");
  if (spec.num_prefill_checkpoint_blocks > 0)
    fail(Status::kUnsupported, d.name, " does not build prefill checkpoints "
         "(kv_cache_spec->num_prefill_checkpoint_blocks=", spec.num_prefill_checkpoint_blocks,
         ")");
}

/// Counts and branches decided on the host before anything is written.
struct Decision {
  int64_t ns = 0, nd = 0, np = 0, ndt = 0, npt = 0, nsdt = 0;
  bool all_spec = false;       ///< the spec path with neither prefills nor decodes
  int64_t active_non_spec = 0; ///< non-spec requests with tokens (the spec path)
  int64_t spec_token_start = -1, non_spec_token_start = -1;  ///< -1 = None
};

class KimiK3KdaBuilder final : public Builder {
 public:
  KimiK3KdaBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                   const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    const BuilderConfig& c = this->config();
    num_spec_ = c.num_speculative_tokens;
    use_spec_ = num_spec_ > 0;
    init_reorder_batch_threshold(1, use_spec_);
    full_cuda_graphs_ = has_full_cudagraphs(c.cudagraph_mode);
    cg_bs_ = decode_cudagraph_max_bs(c, 1 + num_spec_);
    spec_rows_ = spec_buffer_rows(c);
    recoverssm_ = use_recoverssm(c);
    slots_ = recoverssm_ ? 1 : 1 + num_spec_;
    program_capacity_ = conv1d_program_capacity(c);
    // additional_config["kda_prefill_backend"] == "flashinfer", told through the GDN prefill
    // backend choice (KDA's metadata reads no other part of it).
    flashinfer_prefill_ = c.gdn_prefill_backend == kGdnPrefillFlashInfer;
  }

 protected:
  CommonLimits limits() const override {
    CommonLimits lim = Builder::limits();
    lim.block_size = 0;
    return lim;
  }

  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const Tensor* accepted = c.num_accepted_tokens ? &*c.num_accepted_tokens : nullptr;
    const int32_t* draft_cpu = nullptr;
    if (c.num_decode_draft_tokens_cpu) {
      draft_cpu = c.num_decode_draft_tokens_cpu->as<const int32_t>();
    } else if (c.num_decode_draft_tokens) {
      if (!c.num_decode_draft_tokens->host_accessible())
        invalid("common->num_decode_draft_tokens_cpu is NULL; KIMI_K3_KDA reads the draft "
                "counts on the host (vLLM's num_decode_draft_tokens_cpu)");
      draft_cpu = c.num_decode_draft_tokens->as<const int32_t>();
    }
    build_with(c, accepted, draft_cpu, exec);
  }

  /// GDN's build_for_cudagraph_capture (KDA inherits it): num_accepted_tokens =
  /// diff(query_start_loc) and num_decode_draft_tokens_cpu = that - 1.
  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    const int64_t n = c.num_reqs;
    if (n > cg_bs_ || c.num_actual_tokens > cg_bs_)
      fail(Status::kUnsupported, "GDN only supports decode-only full CUDAGraph capture. Make "
           "sure batch size (", n, ") <= cudagraph capture sizes (", cg_bs_, "), and number of "
           "tokens (", c.num_actual_tokens, ") <= cudagraph capture sizes (", cg_bs_, ")");
    int32_t* draft_cpu = buffers_.as<int32_t>(kBufCaptureDraftCpu);
    for (int64_t i = 0; i < n; ++i) draft_cpu[i] = static_cast<int32_t>(c.query_len(i) - 1);
    int32_t* accepted = buffers_.as<int32_t>(kBufCaptureAccepted);
    ops::query_lens_i32(exec, exec_qsl(exec, c), n, 0, accepted);
    const Tensor accepted_t = make_vector(accepted, config().device, kInt32, n);
    build_with(c, &accepted_t, draft_cpu, exec);
  }

 private:
  void build_with(const CommonMetadata& c, const Tensor* accepted, const int32_t* draft_cpu,
                  const ops::Exec& exec) {
    check_state_table(kName, spec(), c);
    int32_t* marks = buffers_.as<int32_t>(kBufMarksCpu);
    Decision d;
    const int64_t n = c.num_reqs;
    // The spec rows (vLLM's spec_sequence_masks_cpu): num_decode_draft_tokens_cpu >= 0; under
    // RecoverSSM also every active decode, and only rows of at most 1 + k tokens.
    if (use_spec_ && draft_cpu != nullptr) {
      if (recoverssm_ && !c.is_prefilling)
        invalid("common->is_prefilling is NULL; KIMI_K3_KDA's RecoverSSM spec path needs it "
                "(vLLM 0.33 asserts it)");
      for (int64_t i = 0; i < n; ++i) {
        const int64_t q = c.query_len(i);
        bool s = draft_cpu[i] >= 0;
        if (recoverssm_) s = (s || (!c.prefilling(i) && q > 0)) && q <= 1 + num_spec_;
        marks[i] = s ? 0 : -1;
        d.ns += s ? 1 : 0;
      }
    }
    if (d.ns == 0)
      split_non_spec(c, d);
    else
      split_spec(c, accepted, d);
    write(c, accepted, d, exec);
  }

  /// GDN's non-spec split (vLLM 0.33): first chunks are prefills even with one token, then the
  /// trailing zero-length padding leaves both prefill counts.
  void split_non_spec(const CommonMetadata& c, Decision& d) {
    const GdnNonSpecSplit s = gdn_non_spec_split(c, buffers_.as<uint8_t>(kBufNoPriorStateCpu),
                                                 "KIMI_K3_KDA", /*bound_always=*/true);
    d.nd = s.num_decodes;
    d.np = s.num_prefills;
    d.ndt = s.num_decode_tokens;
    d.npt = s.num_prefill_tokens;
  }


  /// KDA's spec path: the active (non-empty) non-spec requests are all prefills when any of
  /// them is prefilling or not one token long, else all packed decodes.
  void split_spec(const CommonMetadata& c, const Tensor* accepted, Decision& d) {
    const int64_t n = c.num_reqs;
    const int32_t* marks = buffers_.as<const int32_t>(kBufMarksCpu);
    if (accepted == nullptr)
      invalid("common->num_accepted_tokens is NULL; KIMI_K3_KDA gathers it for the ", d.ns,
              " spec-decode requests (vLLM 0.33 asserts it)");
    if (!c.is_prefilling)
      invalid("common->is_prefilling is NULL; KIMI_K3_KDA's spec path tells one-token prefill "
              "chunks from decodes by it (vLLM 0.33 asserts it)");
    int64_t tokens = 0;
    bool use_prefill = false;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = c.query_len(i);
      if (marks[i] >= 0 || q == 0) continue;
      ++d.active_non_spec;
      tokens += q;
      use_prefill = use_prefill || c.prefilling(i) || q != 1;
    }
    if (use_prefill) {
      d.np = d.active_non_spec;
      d.npt = tokens;
    } else {
      d.nd = d.active_non_spec;
      d.ndt = tokens;
    }
    d.nsdt = c.qsl_host[n] - tokens;
    d.all_spec = d.np == 0 && d.nd == 0;
    if (d.all_spec) return;
    // spec_token_start / non_spec_token_start: when the non-empty requests form one spec run
    // and one non-spec run (exactly one change of the mask).
    int64_t changes = 0, prev = -1, first = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (c.query_len(i) == 0) continue;
      const int64_t s = marks[i] >= 0 ? 1 : 0;
      if (prev >= 0 && s != prev) ++changes;
      if (first < 0) first = s;
      prev = s;
    }
    if (changes == 1) {
      d.spec_token_start = first ? 0 : tokens;
      d.non_spec_token_start = first ? d.nsdt : 0;
    }
  }

  void write(const CommonMetadata& c, const Tensor* accepted, const Decision& d,
             const ops::Exec& exec) {
    const Device dev = config().device;
    const Device host{};
    const int64_t n = c.num_reqs;
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
    const int64_t width = st.table.shape[1];
    const int64_t spec_cols = std::min(slots_, width);  // torch's [:, :slots] of the table
    // The non-spec rows (request-indexed), their query_start_loc on the host and where the
    // build runs.
    int64_t non_spec_rows = n;
    const int32_t* non_spec_qsl_cpu = c.qsl_host;
    const int32_t* non_spec_qsl_exec = qsl;
    Tensor spec_state, spec_qsl, accepted_t, non_spec_state;
    bool have_non_spec_qsl = false;
    uint8_t* has_initial = buffers_.as<uint8_t>(kBufHasInitial);
    if (d.ns == 0) {
      non_spec_state = column_view(st.table, 0, n, 0);
      m.set_tensor(kNonSpecStateIndicesTensor, non_spec_state, st.in_buffer);
      m.set_tensor(kNonSpecQueryStartLoc, *c.query_start_loc, false);
      have_non_spec_qsl = true;
      if (d.np > 0) ops::mamba_prefill_metadata(exec, qsl, seq, 0, n, nullptr, has_initial);
    } else if (d.all_spec) {
      // Real requests precede the trailing CUDA-graph padding: the first ns rows.
      spec_state = matrix_view(st.table, 0, d.ns, spec_cols);
      m.set_tensor(kSpecStateIndicesTensor, spec_state, st.in_buffer);
      spec_qsl = vector_view(*c.query_start_loc, 0, d.ns + 1);
      m.set_tensor(kSpecQueryStartLoc, spec_qsl, false);
      accepted_t = vector_view(*accepted, 0, d.ns);
      m.set_tensor(kNumAcceptedTokens, accepted_t, false);
    } else {
      const int32_t* marks_exec = buffers_.as<const int32_t>(kBufMarksCpu);
      if (exec.on_cuda) {
        copy_i32_into_buffer(exec, marks_exec, true, n, i32(kBufMarks));
        marks_exec = i32(kBufMarks);
      }
      ops::GdnSplitOut o;
      o.spec_state = i32(kBufSpecState);
      o.spec_accepted = i32(kBufSpecAccepted);
      o.spec_qsl = i32(kBufSpecQsl);
      o.spec_token_indx = buffers_.as<int64_t>(kBufSpecTokens);
      o.non_spec_token_indx = buffers_.as<int64_t>(kBufNonSpecTokens);
      o.non_spec_state = i32(kBufNonSpecState);
      if (d.np > 0) {
        o.non_spec_qsl = i32(kBufNonSpecQsl);
        o.non_spec_has_initial = has_initial;
      }
      ops::kda_spec_split(exec, qsl, seq, n, marks_exec, st.table.as<const int32_t>(),
                          st.table.strides[0], width, spec_cols,
                          accepted->as<const int32_t>(), config().max_num_batched_tokens, o);
      non_spec_rows = d.active_non_spec;
      spec_state = make_matrix(o.spec_state, dev, kInt32, d.ns, spec_cols, spec_cols);
      m.set_tensor(kSpecStateIndicesTensor, spec_state, true);
      spec_qsl = make_vector(o.spec_qsl, dev, kInt32, d.ns + 1);
      m.set_tensor(kSpecQueryStartLoc, spec_qsl, true);
      accepted_t = make_vector(o.spec_accepted, dev, kInt32, d.ns);
      m.set_tensor(kNumAcceptedTokens, accepted_t, true);
      non_spec_state = make_vector(o.non_spec_state, dev, kInt32, non_spec_rows);
      m.set_tensor(kNonSpecStateIndicesTensor, non_spec_state, true);
      m.set_tensor(kSpecTokenIndx, make_vector(o.spec_token_indx, dev, kInt64, d.nsdt), true);
      m.set_tensor(kNonSpecTokenIndx,
                   make_vector(o.non_spec_token_indx, dev, kInt64, d.npt + d.ndt), true);
      if (d.spec_token_start >= 0) {
        m.set_int(kSpecTokenStart, d.spec_token_start);
        m.set_int(kNonSpecTokenStart, d.non_spec_token_start);
      }
      if (d.np > 0) {
        m.set_tensor(kNonSpecQueryStartLoc, make_vector(o.non_spec_qsl, dev, kInt32,
                                                        non_spec_rows + 1), true);
        have_non_spec_qsl = true;
        int32_t* host_qsl = i32(kBufNonSpecQslCpu);
        const int32_t* mk = buffers_.as<const int32_t>(kBufMarksCpu);
        host_qsl[0] = 0;
        for (int64_t i = 0, k = 0; i < n; ++i)
          if (mk[i] < 0 && c.query_len(i) > 0) {
            host_qsl[k + 1] = static_cast<int32_t>(host_qsl[k] + c.query_len(i));
            ++k;
          }
        non_spec_qsl_cpu = host_qsl;
        non_spec_qsl_exec = o.non_spec_qsl;
      }
    }
    if (d.ns > 0 && recoverssm_) {  // RecoverSSM: accepted counts from a buffer of ones
      ops::fill_i32(exec, i32(kBufOnes), d.ns, 1);
      accepted_t = make_vector(i32(kBufOnes), dev, kInt32, d.ns);
      m.set_tensor(kNumAcceptedTokens, accepted_t, true);
    }

    if (d.np > 0) {
      m.set_tensor(kHasInitialState, make_vector(has_initial, dev, kBool, non_spec_rows), true);
      int32_t* nums = i32(kBufNumsCpu);
      const int64_t tot = conv1d_metadata(exec, non_spec_qsl_cpu, non_spec_qsl_exec,
                                          non_spec_rows, nums, i32(kBufBatchPtr),
                                          i32(kBufOffsetPtr), program_capacity_);
      const int64_t programs = conv1d_num_programs(tot);
      m.set_int(kNumsDictBlockM, 8);
      m.set_tensor(kNumsDictNums, make_vector(nums, host, kInt32, non_spec_rows), true);
      m.set_int(kNumsDictTot, tot);
      m.set_int(kNumsDictMlistLen, tot);
      m.set_tensor(kBatchPtr, make_vector(i32(kBufBatchPtr), dev, kInt32, programs), true);
      m.set_tensor(kTokenChunkOffsetPtr, make_vector(i32(kBufOffsetPtr), dev, kInt32, programs),
                   true);
    }

    // Full CUDA graphs: spec decodes only (vLLM's stage_spec_decode_metadata kernel, which
    // reads `slots` columns through the source's strides), or decodes only.
    if (full_cuda_graphs_ && d.ns > 0 && d.np == 0 && d.nd == 0 && n <= spec_rows_ &&
        d.nsdt <= cg_bs_) {
      const int64_t stride = spec_state.strides[0];
      if (spec_cols < slots_ && d.ns > 0) {
        // The kernel reads past the view's columns into the table's storage: refused where
        // that runs past the table itself.
        const int64_t extent = (st.table.shape[0] - 1) * st.table.strides[0] + width;
        if ((d.ns - 1) * stride + slots_ > extent)
          invalid("block_table_tensor has ", width, " state columns: vLLM 0.33's KIMI_K3_KDA "
                  "stages ", slots_, " columns of each spec decode's row into its CUDA-graph "
                  "buffer, reading past the end of the table");
      }
      int32_t* state = i32(kBufCgSpecState);
      ops::copy_pad_i32(exec, spec_state.as<const int32_t>(), stride, d.ns, slots_, state,
                        slots_, n, kNullBlockId, false);
      spec_state = make_matrix(state, dev, kInt32, n, slots_, slots_);
      m.set_tensor(kSpecStateIndicesTensor, spec_state, true);
      ops::copy_pad_i32(exec, spec_qsl.as<const int32_t>(), 1, d.ns + 1, 1, i32(kBufCgSpecQsl),
                        1, n + 1, 0, /*pad_with_last=*/true);
      spec_qsl = make_vector(i32(kBufCgSpecQsl), dev, kInt32, n + 1);
      m.set_tensor(kSpecQueryStartLoc, spec_qsl, true);
      ops::copy_pad_i32(exec, accepted_t.as<const int32_t>(), 1, d.ns, 1, i32(kBufCgAccepted), 1,
                        n, 1, false);
      m.set_tensor(kNumAcceptedTokens, make_vector(i32(kBufCgAccepted), dev, kInt32, n), true);
    }
    if (full_cuda_graphs_ && d.np == 0 && d.ns == 0 && d.nd <= cg_bs_) {
      const int64_t bs = std::min(n, cg_bs_);
      ops::copy_pad_i32(exec, non_spec_state.as<const int32_t>(), non_spec_state.strides[0],
                        d.nd, 1, i32(kBufCgNonSpecState), 1, bs, kNullBlockId, false);
      m.set_tensor(kNonSpecStateIndicesTensor,
                   make_vector(i32(kBufCgNonSpecState), dev, kInt32, bs), true);
    }

    if (recoverssm_ && d.ns > 0) write_commit(c, d, spec_state, spec_qsl, exec);

    if (flashinfer_prefill_ && d.np > 0 && have_non_spec_qsl) {
      const int64_t rows = non_spec_rows;
      int64_t* fi_qsl = buffers_.as<int64_t>(kBufFiQsl);
      ops::widen_i32_i64(exec, non_spec_qsl_exec, rows + 1, fi_qsl);
      m.set_tensor(kFlashinferPrefillQueryStartLoc, make_vector(fi_qsl, dev, kInt64, rows + 1),
                   true);
      if (d.npt + d.ndt > rows) {
        // torch.argsort(lengths, descending=True), ties in request order.
        int32_t* order = i32(kBufFiOrderCpu);
        std::iota(order, order + rows, 0);
        std::stable_sort(order, order + rows, [&](int32_t a, int32_t b) {
          return non_spec_qsl_cpu[a + 1] - non_spec_qsl_cpu[a] >
                 non_spec_qsl_cpu[b + 1] - non_spec_qsl_cpu[b];
        });
        int32_t* out = order;
        if (exec.on_cuda) {
          copy_i32_into_buffer(exec, order, true, rows, i32(kBufFiOrder));
          out = i32(kBufFiOrder);
        }
        m.set_tensor(kFlashinferPrefillSeqOrder, make_vector(out, dev, kInt32, rows), true);
      }
    }
  }

  /// RecoverSSM's commit metadata (KDARecoverSSMCommitMetadata): the final spec state indices
  /// and query_start_loc, the spec rows' request indices (a batch with non-spec requests), and
  /// in "align" mode the block table, num_computed_tokens and the block size.
  void write_commit(const CommonMetadata& c, const Decision& d, const Tensor& spec_state,
                    const Tensor& spec_qsl, const ops::Exec& exec) {
    Metadata& m = metadata();
    const Device dev = config().device;
    const int64_t n = c.num_reqs;
    m.set_tensor(kCommitStateIndices, spec_state, true);
    m.set_tensor(kCommitQueryStartLoc, spec_qsl, m.field(kSpecQueryStartLoc).in_builder_buffer);
    if (!d.all_spec) {
      int32_t* idx = buffers_.as<int32_t>(kBufRequestIdxCpu);
      const int32_t* marks = buffers_.as<const int32_t>(kBufMarksCpu);
      int64_t k = 0;
      for (int64_t i = 0; i < n; ++i)
        if (marks[i] >= 0) idx[k++] = static_cast<int32_t>(i);
      int32_t* out = idx;
      if (exec.on_cuda) {
        copy_i32_into_buffer(exec, idx, true, k, buffers_.as<int32_t>(kBufRequestIdx));
        out = buffers_.as<int32_t>(kBufRequestIdx);
      }
      m.set_tensor(kCommitRequestIndices, make_vector(out, dev, kInt32, k), true);
    }
    if (spec().mamba_cache_mode == kMambaCacheAlign) {
      m.set_tensor(kCommitAlignBlockTable, *c.block_table_tensor, false);
      int32_t* computed = buffers_.as<int32_t>(kBufComputed);
      ops::num_computed_tokens_i32(exec, exec_qsl(exec, c), exec_seq_lens(exec, c), n, computed);
      m.set_tensor(kCommitAlignNumComputedTokens, make_vector(computed, dev, kInt32, n), true);
      m.set_int(kCommitAlignBlockSize, spec().block_size);
    }
  }

  PersistentBuffers buffers_;
  int32_t num_spec_ = 0;
  bool use_spec_ = false;
  bool recoverssm_ = false;
  bool flashinfer_prefill_ = false;
  bool full_cuda_graphs_ = false;
  int64_t cg_bs_ = 0;
  int64_t spec_rows_ = 0;
  int64_t slots_ = 1;
  int64_t program_capacity_ = 0;
};

}  // namespace

extern const BackendDescriptor kKimiK3KdaBackend;
const BackendDescriptor kKimiK3KdaBackend{
    kName,
    kVllmRelease,
    kv_kind_bit(kKvMamba),
    0,
    fixed_cudagraph_support<kCgAlways>,
    check,
    buffer_plan_of<plan>,
    create_builder_of<KimiK3KdaBuilder>,
};

}  // namespace attn::backends
