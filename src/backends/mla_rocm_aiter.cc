// ROCM_AITER_MLA: vLLM 0.33's AiterMLAMetadataBuilder (mla/rocm_aiter_mla.py): the base build,
// its prefill part with the ROCm platform's prefill backend (ROCM_AITER_FA), and AITER's decode
// part (AiterMLADecodeMetadata: one-token pages, the qo_indptr form, adaptive varlen rows) with
// the arguments of get_mla_metadata_v1, whose schedule is the runtime's. UNIFORM queries (VARLEN
// under adaptive varlen verify), any block size, the fp8 caches too, non-causal multi-token
// decode; decode context parallelism is refused (docs/backends/rocm.md).
#include <optional>

#include "backends/mla_common.h"
#include "backends/mla_rocm_aiter_plan.h"
#include "core/error.h"

namespace attn::backends {
namespace {

constexpr MlaClass kRocmAiterMla =
    MlaClass("ROCM_AITER_MLA", kCgUniformBatch, QueryLenSupport::kUniform)
        .release("0.33 (partial)").on(MlaPlatform::kRocm).non_causal_decode()
        .caches({kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16, kKvDtypeFp8E4m3,
                 kKvDtypeFp8E5m2});

/// AiterMLADecodeMetadata's additions, then get_mla_metadata_v1's scalar arguments.
#define ROCM_AITER_MLA_DECODE_FIELDS(X)                                 \
  X(kPagedKvIndptr, "decode_paged_kv_indptr")                           \
  X(kPagedKvIndices, "decode_paged_kv_indices")                         \
  X(kPagedKvLastPageLen, "decode_paged_kv_last_page_len")               \
  X(kQoIndptr, "decode_qo_indptr")                                      \
  X(kAttnOutDtype, "decode_attn_out_dtype")                             \
  X(kMaxQoLen, "decode_max_qo_len")                                     \
  X(kMinKvSeqLen, "decode_min_kv_seq_len")                              \
  X(kDcpRoute, "decode_dcp_route")                                      \
  X(kCpWorldSize, "decode_cp_world_size")                               \
  X(kCpRank, "decode_cp_rank")                                          \
  X(kAsmDecodeNumHeads, "decode_asm_decode_num_heads")                  \
  X(kMlaNumKvSplits, "decode_mla_num_kv_splits")                        \
  X(kUseGluonDecode, "decode_use_gluon_decode")                         \
  X(kUseGluonVerify, "decode_use_gluon_verify")                         \
  X(kHasPersistentMetadata, "decode_has_persistent_metadata")           \
  X(kVarlenQRows, "decode_varlen_q_rows")                               \
  X(kVarlenORows, "decode_varlen_o_rows")                               \
  X(kNumHeadsPerHeadK, "decode_scheduler_num_heads_per_head_k")         \
  X(kNumHeadsK, "decode_scheduler_num_heads_k")                         \
  X(kIsCausal, "decode_scheduler_is_causal")                            \
  X(kPageSize, "decode_scheduler_page_size")                            \
  X(kKvGranularity, "decode_scheduler_kv_granularity")                  \
  X(kMaxSeqlenQo, "decode_scheduler_max_seqlen_qo")                     \
  X(kUniSeqlenQo, "decode_scheduler_uni_seqlen_qo")                     \
  X(kFastMode, "decode_scheduler_fast_mode")                            \
  X(kDtypeQ, "decode_scheduler_dtype_q")                                \
  X(kDtypeKv, "decode_scheduler_dtype_kv")
ATTN_NAMED_LIST(Field, ROCM_AITER_MLA_DECODE_FIELDS);

#define ROCM_AITER_MLA_BUFFERS(X)                                       \
  X(kBufSeqLens, "decode_seq_lens (ROCM_AITER_MLA)")                    \
  X(kBufIndptr, "decode_paged_kv_indptr")                               \
  X(kBufIndices, "decode_paged_kv_indices")                             \
  X(kBufLastPage, "decode_paged_kv_last_page_len")                      \
  X(kBufQoIndptr, "decode_qo_indptr")                                   \
  X(kBufQRows, "decode_varlen_q_rows")                                  \
  X(kBufORows, "decode_varlen_o_rows")
ATTN_NAMED_LIST(Buffer, ROCM_AITER_MLA_BUFFERS);

/// _adaptive_varlen_verify_enabled: speculative decoding with enable_adaptive_verification, no
/// DCP, decodes wider than one token.
bool adaptive_varlen(const BuilderConfig& c) {
  return c.num_speculative_tokens > 0 && c.enable_adaptive_verification &&
         c.decode_context_parallel_size <= 1 && max_decode_query_len(c) > 1;
}

/// The persistent paged_kv_indices: max_num_seqs * max_model_len one-token pages, plus
/// max_num_seqs * k under adaptive varlen verify.
int64_t max_pages(const BuilderConfig& c) {
  int64_t pages = static_cast<int64_t>(c.max_num_seqs) * c.max_model_len;
  if (adaptive_varlen(c)) pages += static_cast<int64_t>(c.max_num_seqs) * c.num_speculative_tokens;
  return pages;
}

/// AiterMLAHelper.get_actual_mla_num_heads without a native-H24 aiter: the next multiple of 16.
int64_t padded_heads(int64_t heads) { return (heads + 15) / 16 * 16; }

void check_rocm_aiter_mla(const KvCacheSpec&, const BuilderConfig& c) {
  if (c.decode_context_parallel_size > 1)
    fail(Status::kUnsupported,
         "ROCM_AITER_MLA with decode context parallelism is not in libattn: vLLM 0.33 picks its "
         "DCP verify route (segmented, cprr, Triton) by the AMD GPU's architecture and aiter "
         "build (config->decode_context_parallel_size=",
         c.decode_context_parallel_size, ")");
  if (c.num_attention_heads <= 0)
    invalid("config->num_attention_heads=", c.num_attention_heads,
            ": ROCM_AITER_MLA sizes aiter's schedule by this rank's query heads");
}

class RocmAiterMlaBuilder final : public MlaCommonBuilder {
 public:
  /// _mtp_decode_qlen (the threshold), the adaptive varlen width (vLLM asserts it equals
  /// max_decode_query_len) and the all-ones last-page lengths.
  explicit RocmAiterMlaBuilder(const MlaArgs& a)
      : MlaCommonBuilder(a, field_block(kFieldNames), {}, buffer_plan(a.spec, a.config)) {
    const BuilderConfig& c = this->config();
    mtp_qlen_ = reorder_batch_threshold().value_or(1);
    if (adaptive_varlen(c)) {
      if (mtp_qlen_ != max_decode_query_len())
        fail(Status::kUnsupported, "ROCM_AITER_MLA: adaptive varlen verify needs the reorder "
             "threshold ", mtp_qlen_, " to equal max_decode_query_len ",
             max_decode_query_len(), " (vLLM 0.33 asserts it)");
      varlen_qlen_ = mtp_qlen_;
    }
    ops::fill_i32(exec(nullptr), buf32(kBufLastPage), c.max_num_seqs, 1);
  }

  static std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c) {
    std::vector<BufferRequest> r = MlaCommonBuilder::buffer_plan(spec, c);  // sized first
    const int64_t seqs = c.max_num_seqs, i32 = sizeof(int32_t);
    const int64_t varlen_rows = adaptive_varlen(c) ? seqs * attn::max_decode_query_len(c) : 0;
    BufferPlan p(kBufferNames);
    p.set(kBufSeqLens, buffer_bytes("decode_seq_lens", {seqs, i32}));
    p.set(kBufIndptr, buffer_bytes("decode_paged_kv_indptr", {seqs + 1, i32}));
    p.set(kBufIndices, buffer_bytes("decode_paged_kv_indices", {max_pages(c), i32}));
    p.set(kBufLastPage, buffer_bytes("decode_paged_kv_last_page_len", {seqs, i32}));
    p.set(kBufQoIndptr, buffer_bytes("decode_qo_indptr", {seqs + 1, i32}));
    p.set(kBufQRows, buffer_bytes("decode_varlen_q_rows", {varlen_rows, 8}));
    p.set(kBufORows, buffer_bytes("decode_varlen_o_rows", {varlen_rows ? varlen_rows + 1 : 0, 8}));
    return appended(std::move(r), p);
  }

  /// get_varlen_cudagraph_max_query_len under adaptive varlen verify (its level is
  /// UNIFORM_BATCH); else the base class's None.
  std::optional<int32_t> varlen_cudagraph_max_query_len() const override {
    if (varlen_qlen_ > 0) return max_decode_query_len();
    return std::nullopt;
  }

 protected:
  bool require_uniform_decodes() const override {
    return MlaCommonBuilder::require_uniform_decodes() && varlen_qlen_ == 0;
  }

  /// The host plan of the batch's decodes, and what vLLM would refuse or libattn cannot index
  /// (a kernel length past the block table's tokens).
  void check_batch(const CommonMetadata& c, const ops::BatchSplit& s, bool causal) override {
    const int64_t nd = s.num_decodes;
    if (nd == 0) return;
    AiterPlanIn in;
    in.qsl = c.qsl_host;
    in.num_decodes = nd;
    in.num_decode_tokens = s.num_decode_tokens;
    in.causal = causal;
    in.varlen_qlen = varlen_qlen_;
    in.mtp_qlen = mtp_qlen_;
    in.decode_heads = config().num_attention_heads;
    in.fp8 = is_fp8_cache(config());
    in.full_graphs = full_cuda_graphs();
    plan_ = plan_aiter_decode(in);
    // Without exact host lengths (a CUDA batch with only the upper bound, or none) the kernel's
    // clamps (table width, buffer capacity) are the guard.
    if (!c.seq_lens_exact()) return;
    const AiterPlan& p = plan_;
    const int64_t tokens = c.block_table_tensor->shape[1] * spec().block_size;
    int64_t total = 0;
    for (int64_t r = 0; r < nd; ++r) {
      const int64_t q = c.query_len(r), seq = c.host_seq_lens()[r];
      const int64_t len =
          p.varlen ? seq + p.max_qo_len - q : (p.pad && q <= 0 ? p.max_qo_len : seq);
      if (len > tokens + (p.varlen ? p.max_qo_len - 1 : 0))
        invalid("ROCM_AITER_MLA: decode ", r, " needs ", len, " pages, more than the ", tokens,
                " tokens of its block-table row (common->block_table_tensor has ",
                c.block_table_tensor->shape[1], " columns of ", spec().block_size, ")");
      total += len;
    }
    if (total > max_pages(config()))
      invalid("ROCM_AITER_MLA: the decodes need ", total, " pages, more than paged_kv_indices' ",
              max_pages(config()), " (max_num_seqs * max_model_len)");
  }

  void build_decode(const MlaDecode& d, const ops::Exec& exec) override;

 private:
  using MlaCommonBuilder::at;
  size_t at(Field f) const { return decode_field(f); }
  int32_t* buf32(Buffer b) const { return buffers_.as<int32_t>(kOwnBuffers + b); }

  int32_t varlen_qlen_ = 0;  ///< _varlen_decode_qlen (0: off)
  int32_t mtp_qlen_ = 1;     ///< _mtp_decode_qlen
  AiterPlan plan_;           ///< The batch's decode plan
};

/// AiterMLADecodeMetadata and get_mla_metadata_v1's arguments (aiter's schedule itself, the
/// work_* / reduce_* buffers, is the runtime's).
void RocmAiterMlaBuilder::build_decode(const MlaDecode& d, const ops::Exec& exec) {
  const BuilderConfig& cfg = config();
  const CommonMetadata& c = d.common;
  const Device dev = cfg.device;
  const int64_t nd = d.num_decodes;
  Metadata& m = metadata();
  const AiterPlan& p = plan_;
  const Tensor& bt = *c.block_table_tensor;
  ops::AiterMlaDecodeArgs a;
  a.query_start_loc = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
  a.seq_lens = c.seq_lens->as<const int32_t>();  // on the builder's device, as vLLM's
  a.block_table = bt.as<const int32_t>();
  a.bt_stride = bt.strides[0];
  a.bt_width = bt.shape[1];
  a.num_reqs = nd;
  a.kernel_block_size = spec().block_size;
  a.pad_qlen = p.pad ? static_cast<int32_t>(p.max_qo_len) : 0;
  a.varlen = p.varlen;
  a.uniform_qo = p.uniform_qo;
  a.reset_indices = full_cuda_graphs();
  a.indices_capacity = max_pages(cfg);
  a.indptr_capacity = full_cuda_graphs() ? cfg.max_num_seqs + 1 : 0;
  const int64_t rows = p.varlen ? static_cast<int64_t>(cfg.max_num_seqs) * varlen_qlen_ : 0;
  a.o_rows_size = p.varlen ? rows + 1 : 0;
  a.kernel_seq_lens = buf32(kBufSeqLens);
  a.indptr = buf32(kBufIndptr);
  a.indices = buf32(kBufIndices);
  a.qo_indptr = buf32(kBufQoIndptr);
  if (p.varlen) {
    a.q_rows = buffers_.as<int64_t>(kOwnBuffers + kBufQRows);
    a.o_rows = buffers_.as<int64_t>(kOwnBuffers + kBufORows);
  }
  ops::aiter_mla_decode_tables(exec, a);
  m.set_tensor(at(mla::kDecodeSeqLens), make_vector(a.kernel_seq_lens, dev, kInt32, nd), true);
  m.set_tensor(at(kPagedKvIndptr), make_vector(a.indptr, dev, kInt32, nd + 1), true);
  m.set_tensor(at(kPagedKvIndices), make_vector(a.indices, dev, kInt32, a.indices_capacity),
               true);
  m.set_tensor(at(kPagedKvLastPageLen), device_vector(kOwnBuffers + kBufLastPage, nd), true);
  m.set_tensor(at(kQoIndptr), make_vector(a.qo_indptr, dev, kInt32, nd + 1), true);
  const int32_t model_dtype = cfg.model_dtype_for(spec());
  m.set_int(at(kAttnOutDtype), model_dtype);
  m.set_int(at(kMaxQoLen), p.max_qo_len);
  m.set_int(at(kMinKvSeqLen), 1);
  m.set_int(at(kDcpRoute), 0);  // _DCPDecodeRoute.PLAIN
  m.set_int(at(kCpWorldSize), 1);
  m.set_int(at(kCpRank), 0);
  m.set_int(at(kAsmDecodeNumHeads), 0);
  m.set_int(at(kMlaNumKvSplits), 0);
  m.set_bool(at(kUseGluonDecode), false);
  m.set_bool(at(kUseGluonVerify), false);
  m.set_bool(at(kHasPersistentMetadata), p.persistent);
  if (p.varlen) {
    m.set_tensor(at(kVarlenQRows), make_vector(a.q_rows, dev, kInt64, nd * varlen_qlen_), true);
    m.set_tensor(at(kVarlenORows), make_vector(a.o_rows, dev, kInt64, rows + 1), true);
  }
  if (!p.persistent) return;
  // get_mla_metadata_v1(qo_indptr, paged_kv_indptr, paged_kv_last_page_len, heads, 1,
  // causal, <the schedule>, page_size=1, kv_granularity=16, max_seqlen_qo, uni_seqlen_qo,
  // fast_mode=True, dtype_q, dtype_kv)
  const bool fp8 = is_fp8_cache(cfg);
  m.set_int(at(kNumHeadsPerHeadK), padded_heads(cfg.num_attention_heads));
  m.set_int(at(kNumHeadsK), 1);
  m.set_bool(at(kIsCausal), c.causal || c.causal_per_request);
  m.set_int(at(kPageSize), 1);
  m.set_int(at(kKvGranularity), 16);
  m.set_int(at(kMaxSeqlenQo), p.max_qo_len);
  m.set_int(at(kUniSeqlenQo), p.uni_seqlen_qo);
  m.set_bool(at(kFastMode), true);
  m.set_int(at(kDtypeQ), fp8 ? kKvDtypeFp8E4m3 : model_dtype);
  m.set_int(at(kDtypeKv), fp8 ? kKvDtypeFp8E4m3 : spec().dtype);
}

}  // namespace

extern const BackendDescriptor kRocmAiterMlaBackend;
const BackendDescriptor kRocmAiterMlaBackend =
    mla_descriptor<kRocmAiterMla, RocmAiterMlaBuilder, check_rocm_aiter_mla>();

}  // namespace attn::backends
