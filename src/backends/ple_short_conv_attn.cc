// PLE_SHORT_CONV_ATTN: the metadata of vLLM 0.33's PleShortConvAttentionMetadataBuilder
// (vllm/v1/attention/backends/short_conv_attn.py), SHORT_CONV's subclass for Qwen4Exp's PLE
// short convolution. Without spec-decode requests (no num_decode_draft_tokens_cpu entry >= 0)
// it is SHORT_CONV's build without num_accepted_tokens (an inner SHORT_CONV builder, so decodes
// are one-token queries), minus the causal conv1d metadata, plus its own fields: the conv-state
// slots of the decodes (column 0, graph-padded rows kept) then the prefills, has_initial_states_d
// (False on graph-padded rows), max_prefill_query_len from the host. With spec-decode requests
// it classifies each request by mask, not by position: spec (drafts >= 0), one-token decode,
// prefill (longer), zero-length rows in none; the token permutation (spec tokens, then decodes',
// then prefills'), per-group state slots, query_start_locs and accepted counts; for full CUDA
// graphs an all-spec batch is staged into persistent buffers (NULL_BLOCK_ID, the last
// query_start_loc, 1 accepted token on padded rows). Level UNIFORM_BATCH, threshold 1 (1 + k
// with spec decode), no update_block_table. Prefill checkpoints (MambaPrefillCheckpointBuilder)
// over the non-spec rows when there are prefills.
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
#include "ops/state_space_ops.h"

namespace attn::backends {

extern const BackendDescriptor kShortConvBackend;

namespace {

constexpr const char* kName = "PLE_SHORT_CONV_ATTN";

/// The base (SHORT_CONV) fields this builder writes itself, by name.
#define PLE_BASE_FIELDS(X)                          \
  X(kNumPrefills, "num_prefills")                   \
  X(kNumPrefillTokens, "num_prefill_tokens")        \
  X(kNumDecodes, "num_decodes")                     \
  X(kNumDecodeTokens, "num_decode_tokens")          \
  X(kNumReqs, "num_reqs")                           \
  X(kHasInitialStatesP, "has_initial_states_p")     \
  X(kQueryStartLocP, "query_start_loc_p")           \
  X(kStateIndicesTensorP, "state_indices_tensor_p") \
  X(kStateIndicesTensorD, "state_indices_tensor_d") \
  X(kQueryStartLocD, "query_start_loc_d")           \
  X(kNumAcceptedTokens, "num_accepted_tokens")      \
  X(kSeqLens, "seq_lens")                           \
  /* needs_causal_conv1d_metadata = False: None */  \
  X(kNumsDictBlockM, "nums_dict_block_m")           \
  X(kNumsDictNums, "nums_dict_nums")                \
  X(kNumsDictTot, "nums_dict_tot")                  \
  X(kNumsDictMlistLen, "nums_dict_mlist_len")       \
  X(kBatchPtr, "batch_ptr")                         \
  X(kTokenChunkOffsetPtr, "token_chunk_offset_ptr")
ATTN_NAMED_LIST(Base, PLE_BASE_FIELDS);

/// PleShortConvAttentionMetadata's own fields, in its order, after SHORT_CONV's; checkpoint
/// (MambaPrefillCheckpointMetadata) flattened.
#define PLE_EXTRA_FIELDS(X)                                  \
  X(kNumSpecDecodes, "num_spec_decodes")                     \
  X(kNumSpecDecodeTokens, "num_spec_decode_tokens")          \
  X(kNumActualTokens, "num_actual_tokens")                   \
  X(kSpecQueryLen, "spec_query_len")                         \
  X(kMaxPrefillQueryLen, "max_prefill_query_len")            \
  X(kQueryStartLoc, "query_start_loc")                       \
  X(kStateIndicesTensor, "state_indices_tensor")             \
  X(kHasInitialStatesD, "has_initial_states_d")              \
  X(kNonSpecQueryStartLoc, "non_spec_query_start_loc")       \
  X(kSpecQueryStartLoc, "spec_query_start_loc")              \
  X(kSpecStateIndicesTensor, "spec_state_indices_tensor")    \
  X(kSpecSequenceMasks, "spec_sequence_masks")               \
  X(kSpecTokenIndx, "spec_token_indx")                       \
  X(kNonSpecTokenIndx, "non_spec_token_indx")                \
  X(kNumDecodeDraftTokensCpu, "num_decode_draft_tokens_cpu")  \
  X(kCkptOffsetsTensor, "checkpoint_checkpoint_offsets")     \
  X(kCkptStateIndices, "checkpoint_state_indices")           \
  X(kCkptOffsets, "checkpoint_offsets")                      \
  X(kCkptQueryLens, "checkpoint_query_lens")                 \
  X(kCkptRequestRows, "checkpoint_request_rows")             \
  X(kCkptBlockCols, "checkpoint_block_cols")
ATTN_NAMED_LIST(Extra, PLE_EXTRA_FIELDS);

#define PLE_BUFFERS(X)                                   \
  X(kBufState, "state_indices_tensor (decodes, prefills)") \
  X(kBufHasInitD, "has_initial_states_d")                \
  X(kBufAlign, "align state indices")                    \
  X(kBufMaskCpu, "spec_sequence_masks staging")          \
  X(kBufMask, "spec_sequence_masks")                     \
  X(kBufOrderCpu, "request order staging")               \
  X(kBufOrder, "request order")                          \
  X(kBufSpecState, "spec_state_indices_tensor")          \
  X(kBufSpecAccepted, "num_accepted_tokens (spec)")      \
  X(kBufSpecQsl, "spec_query_start_loc")                 \
  X(kBufNsState, "non-spec state indices")               \
  X(kBufNsQsl, "non_spec_query_start_loc")               \
  X(kBufNsQslP, "query_start_loc_p")                     \
  X(kBufNsHasInit, "non-spec has_initial_states")        \
  X(kBufPerm, "token permutation")                       \
  X(kBufCgState, "spec_state_indices_tensor (CUDA graphs)") \
  X(kBufCgMask, "spec_sequence_masks (CUDA graphs)")     \
  X(kBufCgQsl, "spec_query_start_loc (CUDA graphs)")     \
  X(kBufCgAccepted, "num_accepted_tokens (CUDA graphs)") \
  X(kBufCapAccepted, "capture num_accepted_tokens")      \
  X(kBufCapDraftsCpu, "capture num_decode_draft_tokens_cpu") \
  X(kBufCkptOffCpu, "checkpoint offsets (host list)")       \
  X(kBufCkptQlCpu, "checkpoint query_lens (host list)")     \
  X(kBufCkptRowsCpu, "checkpoint request_rows staging")     \
  X(kBufCkptColsCpu, "checkpoint block_cols staging")       \
  X(kBufCkptOff, "checkpoint_offsets")                      \
  X(kBufCkptRows, "checkpoint request_rows")                \
  X(kBufCkptCols, "checkpoint block_cols")                  \
  X(kBufCkptState, "checkpoint state_indices")
ATTN_NAMED_LIST(Buffer, PLE_BUFFERS);

/// vLLM's decode_cudagraph_max_bs and decode_cudagraph_max_tokens of this builder.
int64_t cg_rows(const BuilderConfig& c) { return decode_cudagraph_max_bs(c, 1); }
int64_t cg_tokens(const BuilderConfig& c) {
  return decode_cudagraph_max_bs(c, 1 + static_cast<int64_t>(c.num_speculative_tokens));
}

/// The buffers of this builder (the inner SHORT_CONV builder's follow them).
std::vector<BufferRequest> own_plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  const int64_t reqs = c.max_num_seqs, cg = cg_rows(c);
  const int64_t s = c.num_speculative_tokens > 0 ? 1 : 0;
  const int64_t i32 = sizeof(int32_t);
  const int64_t align = spec.mamba_cache_mode == kMambaCacheAlign ? s * reqs : 0;
  BufferPlan p(kBufferNames);
  p.set(kBufState, buffer_bytes("state_indices_tensor", {reqs, i32}));
  p.set(kBufHasInitD, buffer_bytes("has_initial_states_d", {std::max(reqs, cg)}));
  p.set(kBufAlign,
        buffer_bytes("align state indices", {align, 1 + spec.num_speculative_blocks, i32}));
  p.set(kBufMaskCpu, buffer_bytes("spec_sequence_masks", {s * reqs}), true);
  p.set(kBufMask, buffer_bytes("spec_sequence_masks", {s * reqs}));
  p.set(kBufOrderCpu, buffer_bytes("order", {s * reqs, i32}), true);
  p.set(kBufOrder, buffer_bytes("order", {s * reqs, i32}));
  p.set(kBufSpecState, buffer_bytes("spec state", {s * reqs, i32}));
  p.set(kBufSpecAccepted, buffer_bytes("spec accepted", {s * reqs, i32}));
  p.set(kBufSpecQsl, buffer_bytes("spec qsl", {s * (reqs + 1), i32}));
  p.set(kBufNsState, buffer_bytes("non-spec state", {s * reqs, i32}));
  p.set(kBufNsQsl, buffer_bytes("non-spec qsl", {s * (reqs + 1), i32}));
  p.set(kBufNsQslP, buffer_bytes("qsl_p", {s * (reqs + 1), i32}));
  p.set(kBufNsHasInit, buffer_bytes("has_initial", {s * reqs}));
  p.set(kBufPerm, buffer_bytes("token permutation", {s * c.max_num_batched_tokens, 8}));
  p.set(kBufCgState, buffer_bytes("cg state", {s * cg, i32}));
  p.set(kBufCgMask, buffer_bytes("cg masks", {s * cg}));
  p.set(kBufCgQsl, buffer_bytes("cg qsl", {s * (cg + 1), i32}));
  p.set(kBufCgAccepted, buffer_bytes("cg accepted", {s * cg, i32}));
  p.set(kBufCapAccepted, buffer_bytes("capture accepted", {s * reqs, i32}));
  p.set(kBufCapDraftsCpu, buffer_bytes("capture drafts", {s * reqs, i32}), true);
  const int64_t ck = prefill_checkpoints_enabled(spec, c) ? reqs : 0;
  p.set(kBufCkptOffCpu, buffer_bytes("checkpoint offsets", {ck, i32}), true);
  p.set(kBufCkptQlCpu, buffer_bytes("checkpoint query_lens", {ck, i32}), true);
  p.set(kBufCkptRowsCpu, buffer_bytes("request_rows", {ck, 8}), true);
  p.set(kBufCkptColsCpu, buffer_bytes("block_cols", {ck, 8}), true);
  p.set(kBufCkptOff, buffer_bytes("checkpoint_offsets", {ck, i32}));
  p.set(kBufCkptRows, buffer_bytes("request_rows", {ck, 8}));
  p.set(kBufCkptCols, buffer_bytes("block_cols", {ck, 8}));
  p.set(kBufCkptState, buffer_bytes("checkpoint state_indices", {ck, i32}));
  return p.requests();
}

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  std::vector<BufferRequest> r = own_plan(spec, c);
  const std::vector<BufferRequest> inner =
      kShortConvBackend.buffer_plan(kShortConvBackend, spec, c);
  r.insert(r.end(), inner.begin(), inner.end());
  return r;
}

/// The inner SHORT_CONV builder's config: the workspace past this builder's buffers.
BuilderConfig inner_config(const KvCacheSpec& spec, const BuilderConfig& c) {
  BuilderConfig ic = c;
  if (c.workspace != nullptr) {
    const size_t own = workspace_bytes(own_plan(spec, c), c.device);
    ic.workspace = static_cast<char*>(c.workspace) + own;
    ic.workspace_size = c.workspace_size >= own ? c.workspace_size - own : 0;
  }
  return ic;
}

void check(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& c) {
  check_mamba_spec(d.name, kMambaTypeShortConv, spec);
  check_mamba_cache_mode(d.name, spec);
  kShortConvBackend.check(kShortConvBackend, spec, c);
}

class PleShortConvBuilder final : public Builder {
 public:
  PleShortConvBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                      const BuilderConfig& config)
      : Builder(backend, spec, config),
        buffers_(kName, config.device, own_plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    inner_ = kShortConvBackend.create(kShortConvBackend, backend, spec, inner_config(spec, config));
    std::vector<std::string> names = inner_->metadata_field_names();
    extra_ = names.size();
    for (size_t i = 0; i < kExtraCount; ++i) names.emplace_back(kExtraNames[i]);
    init_metadata(names);
    for (size_t i = 0; i < kBaseCount; ++i) base_[i] = metadata().index_of(kBaseNames[i]);
    num_spec_ = this->config().num_speculative_tokens;
    init_reorder_batch_threshold(1, num_spec_ > 0);
    full_cuda_graphs_ = has_full_cudagraphs(this->config().cudagraph_mode);
    cg_bs_ = cg_rows(this->config());
    cg_tokens_ = cg_tokens(this->config());
    checkpoints_ = prefill_checkpoints_enabled(spec, this->config());
  }

 protected:
  CommonLimits limits() const override {
    CommonLimits lim = Builder::limits();
    lim.block_size = 0;  // "none" and "align" tables hold state slots (check_state_table)
    return lim;
  }

  void do_build(int64_t common_prefix_len, const CommonMetadata& c, bool fast_build,
                const ops::Exec& exec) override {
    // Spec-decode requests: num_decode_draft_tokens_cpu[:num_reqs] >= 0 (with spec decode on).
    const int32_t* drafts = num_spec_ > 0 && c.num_decode_draft_tokens_cpu
                                ? c.num_decode_draft_tokens_cpu->as<const int32_t>()
                                : nullptr;
    bool any = false;
    for (int64_t i = 0; drafts != nullptr && i < c.num_reqs && !any; ++i) any = drafts[i] >= 0;
    if (any)
      build_spec(c, drafts, exec);
    else
      build_non_spec(common_prefix_len, c, fast_build, exec);
  }

  /// vLLM's build_for_cudagraph_capture: batch size and tokens within the decode graph bounds;
  /// with spec decode num_accepted_tokens = diff(query_start_loc) and
  /// num_decode_draft_tokens_cpu = diff(query_start_loc_cpu) - 1.
  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    if (c.num_reqs > cg_bs_ || c.num_actual_tokens > cg_tokens_)
      fail(Status::kUnsupported, "ShortConv only supports decode-only full CUDAGraph capture: "
           "batch size (common->num_reqs=", c.num_reqs, ") must be <= cudagraph capture size (",
           cg_bs_, ") and number of tokens (common->num_actual_tokens=", c.num_actual_tokens,
           ") <= token capture size (", cg_tokens_, ")");
    if (num_spec_ == 0) return build_non_spec(0, c, false, exec);
    CommonMetadata t = c;
    int32_t* accepted = buffers_.as<int32_t>(kBufCapAccepted);
    ops::query_lens_i32(exec, exec_qsl(exec, c), c.num_reqs, 0, accepted);
    t.num_accepted_tokens = make_vector(accepted, config().device, kInt32, c.num_reqs);
    int32_t* drafts = buffers_.as<int32_t>(kBufCapDraftsCpu);
    for (int64_t i = 0; i < c.num_reqs; ++i) drafts[i] = static_cast<int32_t>(c.query_len(i) - 1);
    t.num_decode_draft_tokens_cpu = make_vector(drafts, Device{}, kInt32, c.num_reqs);
    do_build(0, t, false, exec);
  }

 private:
  /// The non-spec build: SHORT_CONV's without num_accepted_tokens (and without the draft
  /// counts, which _build_non_spec_metadata keeps for itself), then PLE's fields.
  void build_non_spec(int64_t common_prefix_len, const CommonMetadata& c, bool fast_build,
                      const ops::Exec& exec) {
    CommonMetadata t = c;
    t.num_accepted_tokens.reset();
    t.num_decode_draft_tokens_cpu.reset();
    const Metadata& im = inner_->build(common_prefix_len, t, fast_build, exec.stream);
    // checkpoint_builder.build(common, range(num_reqs)) when there are prefills (planned before
    // this metadata is written: a refused batch leaves it as it was)
    const bool ckpt = im.field(base_[kNumPrefills]).int_value > 0 &&
                      plan_checkpoints(c, nullptr, c.num_reqs);
    Metadata& m = metadata();
    m.reset();
    m.assign_prefix(im);
    if (ckpt) write_checkpoints(c, c.num_reqs, exec);
    for (size_t i = kNumsDictBlockM; i <= kTokenChunkOffsetPtr; ++i) m.set_none(base_[i]);
    const int64_t nd = im.field(base_[kNumDecodes]).int_value;
    const int64_t np = im.field(base_[kNumPrefills]).int_value;
    const Device dev = config().device;

    // state_indices_tensor: column 0 of the decodes' (graph-padded) slots, then the prefills'.
    const Field& fd = im.field(base_[kStateIndicesTensorD]);
    const Field& fp = im.field(base_[kStateIndicesTensorP]);
    const Tensor col0 = column_view(fd.tensor, 0, fd.tensor.shape[0], 0);
    if (np == 0) {
      m.set_tensor(extra_ + kStateIndicesTensor, col0, fd.in_builder_buffer);
    } else if (nd == 0) {
      m.set_tensor(extra_ + kStateIndicesTensor, vector_view(fp.tensor, 0, np),
                   fp.in_builder_buffer);
    } else {
      int32_t* buf = buffers_.as<int32_t>(kBufState);
      ops::copy_pad_i32(exec, col0.as<const int32_t>(), col0.strides[0], nd, 1, buf, 1, nd, 0,
                        false);
      ops::copy_pad_i32(exec, fp.tensor.as<const int32_t>(), fp.tensor.strides[0], np, 1,
                        buf + nd, 1, np, 0, false);
      m.set_tensor(extra_ + kStateIndicesTensor, make_vector(buf, dev, kInt32, nd + np), true);
    }

    // has_initial_states_d: computed tokens > 0 of the decodes, False on graph-padded rows.
    if (nd > 0) {
      const bool cg = full_cuda_graphs_ && np == 0 && nd <= cg_bs_;
      const int64_t rows = cg ? col0.shape[0] : nd;
      uint8_t* buf = buffers_.as<uint8_t>(kBufHasInitD);
      ops::has_initial_states_u8(exec, exec_qsl(exec, c), exec_seq_lens(exec, c), nd, rows, buf);
      m.set_tensor(extra_ + kHasInitialStatesD, make_vector(buf, dev, kBool, rows), true);
    }
    int64_t max_prefill = 0;
    for (int64_t r = nd; r < nd + np; ++r) max_prefill = std::max(max_prefill, c.query_len(r));
    set_scalars(m, c, 0, 0, max_prefill);
    m.set_tensor(extra_ + kNonSpecQueryStartLoc, *c.query_start_loc);
  }

  void set_scalars(Metadata& m, const CommonMetadata& c, int64_t nsd, int64_t nst,
                   int64_t max_prefill) {
    m.set_int(extra_ + kNumSpecDecodes, nsd);
    m.set_int(extra_ + kNumSpecDecodeTokens, nst);
    m.set_int(extra_ + kNumActualTokens, c.num_actual_tokens);
    m.set_int(extra_ + kSpecQueryLen, 1 + static_cast<int64_t>(num_spec_));
    m.set_int(extra_ + kMaxPrefillQueryLen, max_prefill);
    m.set_tensor(extra_ + kQueryStartLoc, *c.query_start_loc);
    if (c.num_decode_draft_tokens_cpu)  // a capture's are this builder's
      m.set_tensor(extra_ + kNumDecodeDraftTokensCpu, *c.num_decode_draft_tokens_cpu,
                   buffers_.contains(c.num_decode_draft_tokens_cpu->data));
  }

  /// The spec build: requests classified by mask (spec: drafts >= 0; decode: one token;
  /// prefill: longer; zero-length non-spec rows: none).
  void build_spec(const CommonMetadata& c, const int32_t* drafts, const ops::Exec& exec) {
    const int64_t n = c.num_reqs;
    if (!c.num_accepted_tokens)
      invalid("common->num_accepted_tokens is NULL: ", kName, " builds spec-decode requests "
              "(common->num_decode_draft_tokens_cpu has entries >= 0) from it (vLLM 0.33 "
              "asserts num_accepted_tokens is not None)");
    uint8_t* mask = buffers_.as<uint8_t>(kBufMaskCpu);
    int32_t* order = buffers_.as<int32_t>(kBufOrderCpu);
    int64_t nsd = 0, nd = 0, np = 0, nst = 0, npt = 0, max_prefill = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = c.query_len(i);
      mask[i] = drafts[i] >= 0 ? 1 : 0;
      if (mask[i]) {
        order[nsd++] = static_cast<int32_t>(i);
        nst += q;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      if (!mask[i] && c.query_len(i) == 1) order[nsd + nd++] = static_cast<int32_t>(i);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = c.query_len(i);
      if (!mask[i] && q > 1) {
        order[nsd + nd + np++] = static_cast<int32_t>(i);
        npt += q;
        max_prefill = std::max(max_prefill, q);
      }
    }
    const bool cg = full_cuda_graphs_ && np == 0 && nd == 0 && nsd <= cg_bs_ && nst <= cg_tokens_;
    if (cg && n > cg_bs_)
      invalid("common->num_reqs=", n, " exceeds ", kName, "'s CUDA-graph buffers of ", cg_bs_,
              " rows (decode_cudagraph_max_bs): vLLM 0.33's spec_sequence_masks copy_ fails");
    check_state_table(kName, spec(), c);
    // checkpoint_builder.build(common, non_spec_req_idx) when there are prefills
    const bool ckpt = np > 0 && plan_checkpoints(c, order + nsd, nd + np);
    const Device dev = config().device;
    const int32_t* qsl = exec_qsl(exec, c);
    const int32_t* seq = exec_seq_lens(exec, c);
    const StateTable st = mamba_state_table(exec, spec(), *c.block_table_tensor, seq, n,
                                            buffers_.as<int32_t>(kBufAlign), dev);
    const Tensor& accepted = *c.num_accepted_tokens;

    Metadata& m = metadata();
    m.reset();
    m.set_int(base_[kNumPrefills], np);
    m.set_int(base_[kNumPrefillTokens], npt);
    m.set_int(base_[kNumDecodes], nd);
    m.set_int(base_[kNumDecodeTokens], nd);
    m.set_int(base_[kNumReqs], n);
    m.set_tensor(base_[kSeqLens], *c.seq_lens);
    set_scalars(m, c, nsd, nst, max_prefill);
    uint8_t* mask_dev = buffers_.as<uint8_t>(kBufMask);
    copy_u8_into_buffer(exec, mask, true, n, mask_dev);
    Tensor masks = make_vector(mask_dev, dev, kBool, n);

    Tensor spec_state, spec_qsl, spec_acc;
    bool spec_state_buf = false, spec_qsl_buf = false, spec_acc_buf = false;
    if (nd == 0 && np == 0) {
      // Every real request is a spec decode; zero-length padding trails them.
      spec_state = column_view(st.table, 0, nsd, 0);
      spec_state_buf = st.in_buffer;
      spec_acc = vector_view(accepted, 0, nsd);
      spec_qsl = vector_view(*c.query_start_loc, 0, nsd + 1);
      m.set_tensor(extra_ + kStateIndicesTensor, column_view(st.table, 0, 0, 0), st.in_buffer);
    } else {
      const int64_t nn = nd + np;
      int32_t* order_exec = order;
      if (exec.on_cuda) {
        order_exec = buffers_.as<int32_t>(kBufOrder);
        copy_i32_into_buffer(exec, order, true, nsd + nn, order_exec);
      }
      ops::GdnSplitOut out;
      out.spec_state = buffers_.as<int32_t>(kBufSpecState);
      out.spec_accepted = buffers_.as<int32_t>(kBufSpecAccepted);
      out.spec_qsl = buffers_.as<int32_t>(kBufSpecQsl);
      out.non_spec_state = buffers_.as<int32_t>(kBufNsState);
      out.non_spec_qsl = buffers_.as<int32_t>(kBufNsQsl);
      out.non_spec_has_initial = buffers_.as<uint8_t>(kBufNsHasInit);
      int64_t* perm = buffers_.as<int64_t>(kBufPerm);
      out.spec_token_indx = perm;
      out.non_spec_token_indx = perm + nst;
      int32_t* qsl_p = buffers_.as<int32_t>(kBufNsQslP);
      ops::ple_spec_gather(exec, qsl, seq, st.table.as<const int32_t>(), st.table.strides[0],
                           accepted.as<const int32_t>(), order_exec, nsd, nn, nd, qsl_p, out);
      const int64_t total = c.qsl_host[n];
      m.set_tensor(extra_ + kSpecTokenIndx, make_vector(perm, dev, kInt64, nst), true);
      m.set_tensor(extra_ + kNonSpecTokenIndx, make_vector(perm + nst, dev, kInt64, total - nst),
                   true);
      spec_state = make_vector(out.spec_state, dev, kInt32, nsd);
      spec_acc = make_vector(out.spec_accepted, dev, kInt32, nsd);
      spec_qsl = make_vector(out.spec_qsl, dev, kInt32, nsd + 1);
      spec_state_buf = spec_acc_buf = spec_qsl_buf = true;
      const Tensor ns_state = make_vector(out.non_spec_state, dev, kInt32, nn);
      m.set_tensor(extra_ + kStateIndicesTensor, ns_state, true);
      m.set_tensor(extra_ + kNonSpecQueryStartLoc,
                   make_vector(out.non_spec_qsl, dev, kInt32, nn + 1), true);
      m.set_tensor(base_[kStateIndicesTensorD], vector_view(ns_state, 0, nd), true);
      m.set_tensor(base_[kStateIndicesTensorP], vector_view(ns_state, nd, np), true);
      if (nd > 0) {
        m.set_tensor(extra_ + kHasInitialStatesD,
                     make_vector(out.non_spec_has_initial, dev, kBool, nd), true);
        m.set_tensor(base_[kQueryStartLocD], make_vector(out.non_spec_qsl, dev, kInt32, nd + 1),
                     true);
      }
      if (np > 0) {
        m.set_tensor(base_[kHasInitialStatesP],
                     make_vector(out.non_spec_has_initial + nd, dev, kBool, np), true);
        m.set_tensor(base_[kQueryStartLocP], make_vector(qsl_p, dev, kInt32, np + 1), true);
      }
    }

    if (cg) {
      // An all-spec batch within the decode graph bounds: staged into persistent buffers of
      // num_reqs rows.
      int32_t* sb = buffers_.as<int32_t>(kBufCgState);
      ops::copy_pad_i32(exec, spec_state.as<const int32_t>(), spec_state.strides[0], nsd, 1, sb,
                        1, n, kNullBlockId, false);
      spec_state = make_vector(sb, dev, kInt32, n);
      uint8_t* mb = buffers_.as<uint8_t>(kBufCgMask);
      copy_u8_into_buffer(exec, mask, true, n, mb);
      masks = make_vector(mb, dev, kBool, n);
      int32_t* qb = buffers_.as<int32_t>(kBufCgQsl);
      ops::copy_pad_i32(exec, spec_qsl.as<const int32_t>(), 1, nsd + 1, 1, qb, 1, n + 1, 0,
                        /*pad_with_last=*/true);
      spec_qsl = make_vector(qb, dev, kInt32, n + 1);
      int32_t* ab = buffers_.as<int32_t>(kBufCgAccepted);
      ops::copy_pad_i32(exec, spec_acc.as<const int32_t>(), spec_acc.strides[0], nsd, 1, ab, 1,
                        n, 1, false);
      spec_acc = make_vector(ab, dev, kInt32, n);
      spec_state_buf = spec_qsl_buf = spec_acc_buf = true;
    }
    m.set_tensor(extra_ + kSpecStateIndicesTensor, spec_state, spec_state_buf);
    m.set_tensor(extra_ + kSpecQueryStartLoc, spec_qsl, spec_qsl_buf);
    m.set_tensor(base_[kNumAcceptedTokens], spec_acc, spec_acc_buf);
    m.set_tensor(extra_ + kSpecSequenceMasks, masks, true);
    if (ckpt) write_checkpoints(c, nd + np, exec);
  }

  /// MambaPrefillCheckpointBuilder.build's plan over `n` request rows (`rows`, or 0..n - 1),
  /// staged in host buffers; whether any row has a checkpoint (else vLLM's checkpoint is None).
  bool plan_checkpoints(const CommonMetadata& c, const int32_t* rows, int64_t n) {
    if (!checkpoints_) return false;
    const int32_t* seq_host = checkpoint_seq_lens(kName, c);
    CheckpointPlan out;
    out.offsets = buffers_.as<int32_t>(kBufCkptOffCpu);
    out.query_lens = buffers_.as<int32_t>(kBufCkptQlCpu);
    out.rows = buffers_.as<int64_t>(kBufCkptRowsCpu);
    out.cols = buffers_.as<int64_t>(kBufCkptColsCpu);
    if (rows != nullptr)  // the request rows, widened in place (the plan rewrites each as itself)
      for (int64_t k = 0; k < n; ++k) out.rows[k] = rows[k];
    return plan_prefill_checkpoints(kName, spec(), config(), c, seq_host,
                                    rows != nullptr ? out.rows : nullptr, 0, n, out);
  }

  /// checkpoint's fields from the staged plan: the device copies of the offsets, rows and
  /// columns (vLLM's async_tensor_h2d), the host lists, and the state indices gathered from the
  /// batch's block table (NULL_BLOCK_ID where a row has none).
  void write_checkpoints(const CommonMetadata& c, int64_t n, const ops::Exec& exec) {
    const Device dev = config().device, host{};
    Metadata& m = metadata();
    int32_t* off = buffers_.as<int32_t>(kBufCkptOff);
    int64_t* rows = buffers_.as<int64_t>(kBufCkptRows);
    int64_t* cols = buffers_.as<int64_t>(kBufCkptCols);
    copy_i32_into_buffer(exec, buffers_.as<int32_t>(kBufCkptOffCpu), true, n, off);
    copy_u8_into_buffer(exec, buffers_.as<uint8_t>(kBufCkptRowsCpu), true, n * 8,
                        reinterpret_cast<uint8_t*>(rows));
    copy_u8_into_buffer(exec, buffers_.as<uint8_t>(kBufCkptColsCpu), true, n * 8,
                        reinterpret_cast<uint8_t*>(cols));
    m.set_tensor(extra_ + kCkptOffsetsTensor, make_vector(off, dev, kInt32, n), true);
    m.set_tensor(extra_ + kCkptOffsets,
                 make_vector(buffers_.as<int32_t>(kBufCkptOffCpu), host, kInt32, n), true);
    m.set_tensor(extra_ + kCkptQueryLens,
                 make_vector(buffers_.as<int32_t>(kBufCkptQlCpu), host, kInt32, n), true);
    m.set_tensor(extra_ + kCkptRequestRows, make_vector(rows, dev, kInt64, n), true);
    m.set_tensor(extra_ + kCkptBlockCols, make_vector(cols, dev, kInt64, n), true);
    const Tensor& bt = *c.block_table_tensor;
    int32_t* state = buffers_.as<int32_t>(kBufCkptState);
    ops::mamba_checkpoint_state_indices(exec, bt.as<const int32_t>(), bt.strides[0], rows, cols,
                                        n, state);
    m.set_tensor(extra_ + kCkptStateIndices, make_vector(state, dev, kInt32, n), true);
  }

  PersistentBuffers buffers_;
  std::unique_ptr<Builder> inner_;
  size_t extra_ = 0;
  size_t base_[kBaseCount] = {};
  int32_t num_spec_ = 0;
  bool full_cuda_graphs_ = false;
  int64_t cg_bs_ = 0;
  int64_t cg_tokens_ = 0;
  bool checkpoints_ = false;
};

}  // namespace

extern const BackendDescriptor kPleShortConvAttnBackend;
const BackendDescriptor kPleShortConvAttnBackend{
    kName,
    kVllmRelease,
    kv_kind_bit(kKvMamba),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    check,
    buffer_plan_of<plan>,
    create_builder_of<PleShortConvBuilder>,
};

}  // namespace attn::backends
