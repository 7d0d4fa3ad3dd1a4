// BAILING_LINEAR_ATTN: the metadata of vLLM 0.33's BailingLinearAttentionMetadataBuilder.build()
// (vllm/v1/attention/backends/linear_attn.py), LINEAR_ATTN's subclass for Bailing's linear
// attention layers: the decode/prefill split at the reorder threshold (1 + k with spec decode
// when num_accepted_tokens is given), the state indices of the decodes (1 + k columns with spec
// decode, else column 0) and the prefills (column 0), the decodes' query_start_loc and accepted
// counts, and for full CUDA graphs decode-only batches staged into persistent buffers with
// PAD_SLOT_ID for padded (zero-length) rows. Level UNIFORM_BATCH; no update_block_table.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/mamba_common.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"
#include "ops/state_space_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "BAILING_LINEAR_ATTN";
/// vLLM's PAD_SLOT_ID, written into the staged state indices of padded rows.
constexpr int32_t kPadSlotId = -1;

#define BAILING_LINEAR_ATTN_FIELDS(X)             \
  X(kNumPrefills, "num_prefills")                 \
  X(kNumPrefillTokens, "num_prefill_tokens")      \
  X(kNumDecodes, "num_decodes")                   \
  X(kNumDecodeTokens, "num_decode_tokens")        \
  X(kQueryStartLoc, "query_start_loc")            \
  X(kSeqLens, "seq_lens")                         \
  X(kStateIndicesTensor, "state_indices_tensor")  \
  X(kStateIndicesTensorD, "state_indices_tensor_d") \
  X(kStateIndicesTensorP, "state_indices_tensor_p") \
  X(kNumAcceptedTokens, "num_accepted_tokens")    \
  X(kQueryStartLocD, "query_start_loc_d")
ATTN_NAMED_LIST(Field, BAILING_LINEAR_ATTN_FIELDS);

#define BAILING_LINEAR_ATTN_BUFFERS(X)                         \
  X(kBufAlign, "align state indices")                          \
  X(kBufCgState, "decode_state_indices_tensor")                \
  X(kBufCgLegacy, "decode_legacy_state_indices_tensor")        \
  X(kBufCgQsl, "decode_query_start_loc")                       \
  X(kBufCgAccepted, "decode_num_accepted_tokens")              \
  X(kBufCaptureAccepted, "capture num_accepted_tokens")
ATTN_NAMED_LIST(Buffer, BAILING_LINEAR_ATTN_BUFFERS);

/// vLLM's decode_cudagraph_max_bs here: max_num_seqs, capped by the largest capture size.
int64_t cg_rows(const BuilderConfig& c) { return decode_cudagraph_max_bs(c, 1); }

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  const int64_t reqs = c.max_num_seqs, cg = cg_rows(c);
  const int64_t cols = 1 + static_cast<int64_t>(c.num_speculative_tokens);
  const int64_t i32 = sizeof(int32_t);
  const int64_t align = spec.mamba_cache_mode == kMambaCacheAlign ? reqs : 0;
  BufferPlan p(kBufferNames);
  p.set(kBufAlign,
        buffer_bytes("align state indices", {align, 1 + spec.num_speculative_blocks, i32}));
  p.set(kBufCgState, buffer_bytes("cg", {cg, cols, i32}));
  p.set(kBufCgLegacy, buffer_bytes("cg", {cg, i32}));
  p.set(kBufCgQsl, buffer_bytes("cg", {cg + 1, i32}));
  p.set(kBufCgAccepted, buffer_bytes("cg", {cg, i32}));
  p.set(kBufCaptureAccepted, buffer_bytes("capture", {reqs, i32}));
  return p.requests();
}

class BailingLinearAttnBuilder final : public Builder {
 public:
  BailingLinearAttnBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                           const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    num_spec_ = this->config().num_speculative_tokens;
    init_reorder_batch_threshold(1, num_spec_ > 0);
    full_cuda_graphs_ = has_full_cudagraphs(this->config().cudagraph_mode);
    cg_bs_ = cg_rows(this->config());
  }

 protected:
  CommonLimits limits() const override {
    CommonLimits lim = Builder::limits();
    lim.block_size = 0;  // "none" and "align" tables hold state slots (check_state_table)
    return lim;
  }

  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    build_with(c, c.num_accepted_tokens ? &*c.num_accepted_tokens : nullptr, false, exec);
  }

  /// vLLM's build_for_cudagraph_capture: with spec decode, max_query_len <= 1 + k (asserted)
  /// and num_accepted_tokens = diff(query_start_loc).
  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    if (num_spec_ == 0) return build_with(c, nullptr, false, exec);
    if (c.max_query_len > 1 + num_spec_)
      fail(Status::kUnsupported, "Bailing linear attention only supports speculative decoding "
           "with query length <= 1 + number of speculative tokens (common->max_query_len=",
           c.max_query_len, ", 1 + num_speculative_tokens=", 1 + num_spec_, ")");
    int32_t* accepted = buffers_.as<int32_t>(kBufCaptureAccepted);
    ops::query_lens_i32(exec, exec_qsl(exec, c), c.num_reqs, 0, accepted);
    const Tensor t = make_vector(accepted, config().device, kInt32, c.num_reqs);
    build_with(c, &t, true, exec);
  }

 private:
  /// `accepted_in_buffer`: `accepted` is this builder's (a capture's diff(query_start_loc)).
  void build_with(const CommonMetadata& c, const Tensor* accepted, bool accepted_in_buffer,
                  const ops::Exec& exec) {
    const bool use_spec = num_spec_ > 0 && accepted != nullptr;
    const int64_t n = c.num_reqs;
    const ops::BatchSplit s = ops::split_decodes_and_prefills(
        c.qsl_host, n, c.num_actual_tokens, c.max_query_len,
        use_spec ? reorder_batch_threshold().value_or(1) : 1, /*require_uniform=*/false);
    check_state_table(kName, spec(), c);
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    const Device dev = config().device;

    Metadata& m = metadata();
    m.reset();
    m.set_int(kNumPrefills, np);
    m.set_int(kNumPrefillTokens, s.num_prefill_tokens);
    m.set_int(kNumDecodes, nd);
    m.set_int(kNumDecodeTokens, s.num_decode_tokens);
    m.set_tensor(kQueryStartLoc, *c.query_start_loc);
    m.set_tensor(kSeqLens, *c.seq_lens);
    const int32_t* seq = exec_seq_lens(exec, c);
    const StateTable st = mamba_state_table(exec, spec(), *c.block_table_tensor, seq, n,
                                            buffers_.as<int32_t>(kBufAlign), dev);
    const int64_t width = st.table.shape[1];
    const int64_t cols = 1 + static_cast<int64_t>(num_spec_);
    const int64_t spec_cols = std::min(cols, width);  // torch's [:, :1 + k]
    Tensor legacy = column_view(st.table, 0, n, 0);
    bool legacy_buf = st.in_buffer;
    Tensor state_d = use_spec ? matrix_view(st.table, 0, nd, spec_cols) : column_view(st.table, 0, nd, 0);
    bool state_d_buf = st.in_buffer;
    m.set_tensor(kStateIndicesTensorP, column_view(st.table, nd, np, 0), st.in_buffer);
    Tensor qsl_d, acc;
    bool qsl_d_buf = false, acc_buf = false;
    if (use_spec) {
      qsl_d = vector_view(*c.query_start_loc, 0, nd + 1);
      acc = vector_view(*accepted, 0, nd);
      acc_buf = accepted_in_buffer;
    }

    if (np == 0 && nd <= cg_bs_ && full_cuda_graphs_) {
      // Padded decodes (seq_len 0) and the rows past them get PAD_SLOT_ID.
      if (use_spec) {
        if (spec_cols != cols && spec_cols != 1)
          invalid("block_table_tensor has ", spec_cols, " state columns: vLLM 0.33's "
                  "BAILING_LINEAR_ATTN copies the decodes' [:, :", cols, "] into its (", cols,
                  ")-column CUDA-graph buffer, which torch refuses for ", spec_cols, " columns "
                  "(only 1 broadcasts)");
        int32_t* buf = buffers_.as<int32_t>(kBufCgState);
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t src_col = spec_cols == cols ? j : 0;
          ops::mask_padded_rows_i32(exec, state_d.as<const int32_t>() + src_col,
                                    state_d.strides[0], nd, 1, seq, kPadSlotId, buf + j, cols, n);
        }
        state_d = make_matrix(buf, dev, kInt32, n, cols, cols);
        state_d_buf = true;
      }
      int32_t* lb = buffers_.as<int32_t>(kBufCgLegacy);
      ops::mask_padded_rows_i32(exec, legacy.as<const int32_t>(), legacy.strides[0], nd, 1, seq,
                                kPadSlotId, lb, 1, n);
      legacy = make_vector(lb, dev, kInt32, n);
      legacy_buf = true;
      if (!use_spec) {
        state_d = legacy;
        state_d_buf = true;
      } else {
        int32_t* qb = buffers_.as<int32_t>(kBufCgQsl);
        ops::copy_pad_i32(exec, qsl_d.as<const int32_t>(), 1, nd + 1, 1, qb, 1, n + 1, 0,
                          /*pad_with_last=*/true);
        qsl_d = make_vector(qb, dev, kInt32, n + 1);
        qsl_d_buf = true;
        int32_t* ab = buffers_.as<int32_t>(kBufCgAccepted);
        ops::copy_pad_i32(exec, acc.as<const int32_t>(), 1, nd, 1, ab, 1, n, 1, false);
        acc = make_vector(ab, dev, kInt32, n);
        acc_buf = true;
      }
    }
    m.set_tensor(kStateIndicesTensor, legacy, legacy_buf);
    m.set_tensor(kStateIndicesTensorD, state_d, state_d_buf);
    if (use_spec) {
      m.set_tensor(kQueryStartLocD, qsl_d, qsl_d_buf);
      m.set_tensor(kNumAcceptedTokens, acc, acc_buf);
    }
  }

  PersistentBuffers buffers_;
  int32_t num_spec_ = 0;
  bool full_cuda_graphs_ = false;
  int64_t cg_bs_ = 0;
};

}  // namespace

extern const BackendDescriptor kBailingLinearAttnBackend;
const BackendDescriptor kBailingLinearAttnBackend{
    kName,
    kVllmRelease,
    kv_kind_bit(kKvMamba),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    [](const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig&) {
      check_mamba_spec(d.name, kMambaTypeLinearAttention, spec);
      check_mamba_cache_mode(d.name, spec);
    },
    buffer_plan_of<plan>,
    create_builder_of<BailingLinearAttnBuilder>,
};

}  // namespace attn::backends
