// ROCM_AITER_MLA_SPARSE: vLLM 0.33's ROCMAiterMLASparseMetadataBuilder
// (mla/rocm_aiter_mla_sparse.py): the sparse base build (sparse_mla_common.h) with varlen
// decodes, the reorder threshold 1 (spec-as-decode), the ROCm platform's unaligned context chunks
// and prefill backend (none on a layer with attention sinks), then its own fields: the tokens'
// req_id_per_token (the decodes' only under a dense-MHA prefill), qo_indptr (arange),
// paged_kv_last_page_len (ones), paged_kv_indptr (the cumsum of generate_sparse_seqlen_kernel's
// per-token lengths, tail filled), paged_kv_indices (a persistent buffer whose shrink tail the
// build zeroes; the forward writes it), attn_out_dtype, and whether aiter's persistent work
// metadata is used with the arguments of get_mla_metadata_v1 and whether vLLM relaunches it (the
// schedule itself, aiter's work_* / reduce_* buffers, is the runtime's). The AMD GPU is gfx942
// (docs/backends/rocm.md): aiter's Triton sparse MLA is gfx950-only, so no layer uses it.
#include <algorithm>
#include <utility>

#include "backends/sparse_mla_common.h"
#include "core/error.h"
#include "core/exact_seq_lens.h"

namespace attn::backends {
namespace {

// require_uniform_decodes = False (varlen); _init_reorder_batch_threshold(1,
// supports_spec_as_decode=True); get_supported_kernel_block_sizes [1, MultipleOf(16)] (any).
constexpr MlaClass kRocmAiterMlaSparse =
    MlaClass("ROCM_AITER_MLA_SPARSE", kCgUniformBatch, QueryLenSupport::kVarlen)
        .release("0.33 (partial)")
        .on(MlaPlatform::kRocm)
        .unaligned_chunks()
        .caches({kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16, kKvDtypeFp8E4m3});

/// ROCMAiterMLASparseMetadata's own fields (remapped_buf, an object, is None after a build and
/// has no field), then whether the work_* / reduce_* buffers are given, whether vLLM calls
/// get_mla_metadata_v1 in this build, and that call's scalar arguments.
#define ROCM_AITER_MLA_SPARSE_FIELDS(X)                  \
  X(kQoIndptr, "qo_indptr")                              \
  X(kPagedKvLastPageLen, "paged_kv_last_page_len")       \
  X(kPagedKvIndices, "paged_kv_indices")                 \
  X(kPagedKvIndptr, "paged_kv_indptr")                   \
  X(kAttnOutDtype, "attn_out_dtype")                     \
  X(kRemappedEpoch, "remapped_epoch")                    \
  X(kHasPersistentMetadata, "has_persistent_metadata")   \
  X(kSchedulerLaunched, "scheduler_launched")            \
  X(kNumHeadsPerHeadK, "scheduler_num_heads_per_head_k") \
  X(kNumHeadsK, "scheduler_num_heads_k")                 \
  X(kIsCausal, "scheduler_is_causal")                    \
  X(kPageSize, "scheduler_page_size")                    \
  X(kKvGranularity, "scheduler_kv_granularity")          \
  X(kMaxSeqlenQo, "scheduler_max_seqlen_qo")             \
  X(kUniSeqlenQo, "scheduler_uni_seqlen_qo")             \
  X(kFastMode, "scheduler_fast_mode")                    \
  X(kMaxSplitPerBatch, "scheduler_max_split_per_batch")  \
  X(kDtypeQ, "scheduler_dtype_q")                        \
  X(kDtypeKv, "scheduler_dtype_kv")
ATTN_NAMED_LIST(Field, ROCM_AITER_MLA_SPARSE_FIELDS);

#define ROCM_AITER_MLA_SPARSE_BUFFERS(X)                            \
  X(kBufQoIndptr, "qo_indptr (ROCM_AITER_MLA_SPARSE)")              \
  X(kBufLastPage, "paged_kv_last_page_len (ROCM_AITER_MLA_SPARSE)") \
  X(kBufIndices, "paged_kv_indices (ROCM_AITER_MLA_SPARSE)")        \
  X(kBufIndptr, "paged_kv_indptr (ROCM_AITER_MLA_SPARSE)")          \
  /* host */                                                        \
  X(kBufExactLens, "exact seq_lens (ROCM_AITER_MLA_SPARSE)")        \
  X(kBufPrevKey, "the previous metadata_key (ROCM_AITER_MLA_SPARSE)")
ATTN_NAMED_LIST(Buffer, ROCM_AITER_MLA_SPARSE_BUFFERS);

/// The arrays of metadata_key, each max_num_seqs int32 in kBufPrevKey.
enum KeyList : size_t { kKeySeqLens, kKeyContextLens, kKeySegLengths, kKeyListCount };

/// AiterMLAHelper._AITER_MIN_MLA_HEADS and _AITER_MAX_PADDED_MLA_HEADS.
constexpr int32_t kMinMlaHeads = 16, kMaxPaddedMlaHeads = 128;

/// AiterMLAHelper.get_actual_mla_num_heads without a native-H24 aiter: the next multiple of 16.
int64_t padded_heads(int64_t heads) {
  return (heads + kMinMlaHeads - 1) / kMinMlaHeads * kMinMlaHeads;
}

int64_t max_tokens(const BuilderConfig& c) {
  return std::max<int64_t>(1, c.max_num_batched_tokens);
}

void check_rocm_aiter_mla_sparse(const KvCacheSpec&, const BuilderConfig& c) {
  const int32_t h = c.num_attention_heads;
  // ROCMAiterMLASparseImpl: AiterMLAHelper.check_num_heads_validity (an assert)
  if (h <= 0 || (h > kMaxPaddedMlaHeads && h % kMinMlaHeads != 0))
    invalid("config->num_attention_heads=", h,
            ": ROCM_AITER_MLA_SPARSE needs a positive "
            "multiple of 16 heads, or an unaligned count up to 128 (vLLM 0.33's "
            "AiterMLAHelper.check_num_heads_validity)");
  if (c.decode_context_parallel_size > 1)  // ROCMAiterMLASparseImpl.supports_dcp = False
    fail(Status::kUnsupported,
         "ROCM_AITER_MLA_SPARSE does not support decode context "
         "parallelism (vLLM 0.33's ROCMAiterMLASparseImpl.supports_dcp is False; "
         "config->decode_context_parallel_size=",
         c.decode_context_parallel_size, ")");
}

/// _use_persistent_metadata: no layer has attention sinks (use_aiter_sparse_mla is gfx950-only).
bool no_sink_layers(const BuilderConfig& c) {
  return std::none_of(c.layers.begin(), c.layers.end(),
                      [](const PerLayerParams& p) { return p.has_sinks; });
}

class RocmAiterMlaSparseBuilder final : public SparseMlaCommonBuilder {
 public:
  explicit RocmAiterMlaSparseBuilder(const MlaArgs& a)
      : SparseMlaCommonBuilder(a, field_block(kFieldNames), buffer_plan(a.spec, a.config)) {
    const BuilderConfig& c = this->config();
    use_persistent_ = no_sink_layers(c);
    // the first layer's prefill backend: None with sinks (supports_dense_mha_prefill = False)
    prefill_backend_ = c.layers.empty() || !c.layers.front().has_sinks;
    // torch.arange(0, max_num_batched_tokens + 1) and torch.ones(max_num_batched_tokens)
    const ops::Exec e = exec(nullptr);
    ops::iota_i32(e, buf32(kBufQoIndptr), max_tokens(c) + 1);
    ops::fill_i32(e, buf32(kBufLastPage), max_tokens(c), 1);
  }

  static std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c) {
    std::vector<BufferRequest> r = SparseMlaCommonBuilder::buffer_plan(spec, c);  // sized first
    const int64_t tokens = max_tokens(c), i32 = sizeof(int32_t);
    BufferPlan p(kBufferNames);
    p.set(kBufQoIndptr, buffer_bytes("qo_indptr", {tokens + 1, i32}));
    p.set(kBufLastPage, buffer_bytes("paged_kv_last_page_len", {tokens, i32}));
    p.set(kBufIndices, buffer_bytes("paged_kv_indices", {tokens, sparse_index_topk(spec), i32}));
    p.set(kBufIndptr, buffer_bytes("paged_kv_indptr", {tokens + 1, i32}));
    p.set(kBufExactLens, buffer_bytes("exact seq_lens", {c.max_num_seqs, i32}), true);
    p.set(kBufPrevKey, buffer_bytes("metadata_key", {kKeyListCount, c.max_num_seqs, i32}), true);
    return appended(std::move(r), p);
  }

 protected:
  bool has_prefill_backend() const override { return prefill_backend_; }

  /// The batch's host plan (before the metadata changes): the requests build() covers, whether
  /// the persistent work metadata is used, and the exact lengths its metadata_key reads.
  void plan_batch(const CommonMetadata& c, const ops::BatchSplit& s) override;

  void finish_build(const CommonMetadata& c, const ops::BatchSplit& s,
                    const ops::Exec& exec) override;

 private:
  using SparseMlaCommonBuilder::at;
  size_t at(Field f) const { return tail_field(f); }
  int32_t* buf32(Buffer b) const { return buffers_.as<int32_t>(kSparseOwnBuffers + b); }
  int32_t* key_list(KeyList l) const {
    return buf32(kBufPrevKey) + static_cast<int64_t>(l) * config().max_num_seqs;
  }
  Tensor own_vector(Buffer b, int64_t n) const {
    return make_vector(buf32(b), config().device, kInt32, n);
  }
  /// Whether metadata_key differs from the last one get_mla_metadata_v1 ran for (and records
  /// it when it does): (num_tokens, max_query_len, heads, min(seq_lens, topk),
  /// min(seq_lens - query_lens, topk), query_lens) over the first n requests, seq_lens exact.
  bool key_changed(const CommonMetadata& c, int64_t n, int64_t num_tokens);

  struct Plan {
    int64_t num_reqs = 0;    ///< num_decodes under a dense-MHA prefill, else num_reqs
    int64_t num_tokens = 0;  ///< query_start_loc_cpu[num_reqs]
    bool persistent = false;
    const int32_t* exact_seq_lens = nullptr;  ///< with `persistent`
  };
  Plan plan_;

  bool use_persistent_ = true;       ///< _use_persistent_metadata
  bool prefill_backend_ = true;      ///< the first layer's prefill_backend is not None
  int64_t prev_req_extent_ = 0;      ///< _prev_req_extent
  int64_t prev_indices_extent_ = 0;  ///< _prev_indices_extent
  bool has_prev_key_ = false;        ///< _prev_metadata_key is not None
  int64_t prev_key_n_ = 0, prev_key_tokens_ = 0, prev_key_max_query_len_ = 0;
};

bool RocmAiterMlaSparseBuilder::key_changed(const CommonMetadata& c, int64_t n,
                                            int64_t num_tokens) {
  const int32_t* seq = plan_.exact_seq_lens;
  const int64_t topk = topk_tokens();
  bool same = has_prev_key_ && prev_key_n_ == n && prev_key_tokens_ == num_tokens &&
              prev_key_max_query_len_ == c.max_query_len;
  for (int64_t r = 0; same && r < n; ++r) {
    const int64_t q = c.qsl_host[r + 1] - c.qsl_host[r];
    same = key_list(kKeySeqLens)[r] == std::min<int64_t>(seq[r], topk) &&
           key_list(kKeyContextLens)[r] == std::min<int64_t>(seq[r] - q, topk) &&
           key_list(kKeySegLengths)[r] == q;
  }
  if (same) return false;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t q = c.qsl_host[r + 1] - c.qsl_host[r];
    key_list(kKeySeqLens)[r] = static_cast<int32_t>(std::min<int64_t>(seq[r], topk));
    key_list(kKeyContextLens)[r] = static_cast<int32_t>(std::min<int64_t>(seq[r] - q, topk));
    key_list(kKeySegLengths)[r] = static_cast<int32_t>(q);
  }
  has_prev_key_ = true;
  prev_key_n_ = n;
  prev_key_tokens_ = num_tokens;
  prev_key_max_query_len_ = c.max_query_len;
  return true;
}

void RocmAiterMlaSparseBuilder::plan_batch(const CommonMetadata& c, const ops::BatchSplit& s) {
  const BuilderConfig& cfg = config();
  const int64_t nd = s.num_decodes, np = s.num_prefills;
  const int64_t topk = topk_tokens();
  Plan& p = plan_ = Plan{};
  // metadata.prefill exists with a prefill backend only: its use_dense_mha as the base decides
  // it, and the metadata's prefill_max_seq_len (0 without)
  const int64_t prefill_max = prefill_backend_ && np > 0 ? prefill_max_seq_len(c, nd, np) : 0;
  const bool dense_prefill = prefill_backend_ && np > 0 && prefill_max <= topk;
  p.num_reqs = dense_prefill ? nd : c.num_reqs;
  p.num_tokens = c.qsl_host[p.num_reqs];
  // the persistent work metadata: no sink layer; not _use_rocm_sparse_triton (a BF16 cache
  // with head_size == kv_lora_rank: no rope, which libattn's MLA dimensions never have); not
  // _is_long_bf16_prefill (kv dtype bf16 unless fp8: prefills only, the longest past top-k);
  // tokens
  const bool fp8 = is_fp8_cache(cfg);
  const bool triton_sparse =
      !fp8 && kv_lora_rank(cfg) + qk_rope_head_dim(cfg) == kv_lora_rank(cfg) && (np > 0 || nd > 0);
  const bool long_bf16_prefill = !fp8 && nd == 0 && np > 0 && prefill_max > topk;
  p.persistent = use_persistent_ && !triton_sparse && !long_bf16_prefill && p.num_tokens > 0;
  // vLLM 0.33 reads seq_lens[:num_reqs].cpu() for metadata_key (a sync without exact host
  // lengths, checked as a mirror)
  if (p.persistent) p.exact_seq_lens = exact_host_seq_lens(c, buf32(kBufExactLens));
}

void RocmAiterMlaSparseBuilder::finish_build(const CommonMetadata& c, const ops::BatchSplit&,
                                             const ops::Exec& exec) {
  const BuilderConfig& cfg = config();
  Metadata& m = metadata();
  const int64_t topk = topk_tokens();
  const int64_t n = plan_.num_reqs, num_tokens = plan_.num_tokens;
  // req_id_per_token: the base's buffer (vLLM's subclass replaces it, so the base's
  // token_to_req_indices writes it too), its shrink tail re-zeroed, viewed to num_tokens
  int32_t* req_ids = buffers_.as<int32_t>(kOwnBuffers + mla::kBufReqIdPerToken);
  const int64_t new_indices = num_tokens * topk;
  if (prev_req_extent_ > num_tokens)
    ops::fill_i32(exec, req_ids + num_tokens, prev_req_extent_ - num_tokens, 0);
  if (prev_indices_extent_ > new_indices)
    ops::fill_i32(exec, buf32(kBufIndices) + new_indices, prev_indices_extent_ - new_indices, 0);
  prev_req_extent_ = num_tokens;
  prev_indices_extent_ = new_indices;
  // generate_sparse_seqlen_triton and its cumsum, over the first n requests
  const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
  ops::aiter_sparse_kv_indptr(exec, qsl, c.seq_lens->as<const int32_t>(), n, num_tokens,
                              static_cast<int32_t>(topk), max_tokens(cfg) + 1, buf32(kBufIndptr));
  m.set_tensor(at(mla::kReqIdPerToken), make_vector(req_ids, cfg.device, kInt32, num_tokens), true);
  m.set_tensor(at(kQoIndptr), own_vector(kBufQoIndptr, num_tokens + 1), true);
  m.set_tensor(at(kPagedKvLastPageLen), own_vector(kBufLastPage, num_tokens), true);
  m.set_tensor(at(kPagedKvIndptr), own_vector(kBufIndptr, num_tokens + 1), true);
  m.set_tensor(at(kPagedKvIndices), own_vector(kBufIndices, new_indices), true);
  const int32_t model_dtype = cfg.model_dtype_for(spec());
  m.set_int(at(kAttnOutDtype), model_dtype);
  m.set_int(at(kRemappedEpoch), -1);
  const bool fp8 = is_fp8_cache(cfg), persistent = plan_.persistent;
  m.set_bool(at(kHasPersistentMetadata), persistent);
  m.set_bool(at(kSchedulerLaunched), persistent && key_changed(c, n, num_tokens));
  if (!persistent) return;
  // get_mla_metadata_v1(qo_indptr, paged_kv_indptr, paged_kv_last_page_len, heads, 1, True,
  // <the schedule>, page_size=1, kv_granularity=16, max_seqlen_qo=1, uni_seqlen_qo=1,
  // fast_mode=True, max_split_per_batch, dtype_q, dtype_kv)
  m.set_int(at(kNumHeadsPerHeadK), padded_heads(cfg.num_attention_heads));
  m.set_int(at(kNumHeadsK), 1);
  m.set_bool(at(kIsCausal), true);
  m.set_int(at(kPageSize), 1);
  m.set_int(at(kKvGranularity), 16);
  m.set_int(at(kMaxSeqlenQo), 1);
  m.set_int(at(kUniSeqlenQo), 1);
  m.set_bool(at(kFastMode), true);
  // _sparse_decode_max_split: next_power_of_2(max(1, min(max_seq_len, topk) // 128)), capped
  // by the compute units (config->num_sms; 0, unknown: uncapped)
  int64_t splits = 1;
  const int64_t want = std::max<int64_t>(1, std::min<int64_t>(c.max_seq_len, topk) / 128);
  while (splits < want) splits *= 2;
  if (cfg.num_sms > 0) splits = std::min<int64_t>(splits, cfg.num_sms);
  m.set_int(at(kMaxSplitPerBatch), splits);
  m.set_int(at(kDtypeQ), fp8 ? kKvDtypeFp8E4m3 : model_dtype);
  m.set_int(at(kDtypeKv), fp8 ? kKvDtypeFp8E4m3 : kKvDtypeBfloat16);
}

}  // namespace

extern const BackendDescriptor kRocmAiterMlaSparseBackend;
const BackendDescriptor kRocmAiterMlaSparseBackend =
    mla_descriptor<kRocmAiterMlaSparse, RocmAiterMlaSparseBuilder, check_rocm_aiter_mla_sparse>();

}  // namespace attn::backends
