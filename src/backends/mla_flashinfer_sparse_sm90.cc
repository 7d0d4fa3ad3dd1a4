// FLASHINFER_MLA_SPARSE_SM90: vLLM 0.33's FlashInferMLASparseSM90Builder
// (mla/flashinfer_mla_sparse_sm90.py): the base FlashInfer sparse builder plus the plan inputs of
// FlashInfer's SM90 BatchMLAPagedAttentionWrapper (its _SM90State after build()'s plan, host
// staging). bfloat16 models, "auto", bfloat16 or fp8 (fp8_e4m3) caches, compute capability 9.x,
// kv_lora_rank 512.
#include <algorithm>
#include <vector>

#include "backends/mla_flashinfer_sparse.h"
#include "core/error.h"

namespace attn::backends {
namespace {

constexpr MlaClass kFlashInferMlaSparseSm90 =
    kFlashInferMlaSparseBase.named("FLASHINFER_MLA_SPARSE_SM90")
        .caches({kKvDtypeAuto, kKvDtypeBfloat16, kKvDtypeFp8E4m3});

#define SM90_FIELDS(X)                                  \
  X(kQoIndptr, "state_qo_indptr")                       \
  X(kKvIndptr, "state_kv_indptr")                       \
  X(kKvLenArr, "state_kv_len_arr")                      \
  X(kPlannedNumTokens, "state_planned_num_tokens")      \
  X(kReplanned, "state_replanned")
ATTN_NAMED_LIST(Field, SM90_FIELDS);

#define SM90_BUFFERS(X) X(kBufPlan, "FLASHINFER_MLA_SPARSE_SM90's plan staging")
ATTN_NAMED_LIST(Buffer, SM90_BUFFERS);

void check_sm90(const KvCacheSpec& spec, const BuilderConfig& c) {
  const int32_t cap = resolved_device_capability(c);
  if (cap != 0 && cap / 10 != 9)
    fail(Status::kUnsupported, "FLASHINFER_MLA_SPARSE_SM90 runs compute capability 9.x "
         "(supports_compute_capability), got config->device_capability=", cap);
  if (kv_lora_rank(c) != 512)
    fail(Status::kUnsupported, "FLASHINFER_MLA_SPARSE_SM90 requires kv_lora_rank=512, got "
         "config->mla_kv_lora_rank=", kv_lora_rank(c));
  require_bf16_model(kFlashInferMlaSparseSm90, spec, c);
}

class Sm90Builder final : public SparseMlaCommonBuilder {
 public:
  explicit Sm90Builder(const MlaArgs& a)
      : SparseMlaCommonBuilder(a, field_block(kFieldNames), buffer_plan(a.spec, a.config)) {}

  /// The staging of qo_indptr, kv_indptr (max_num_batched_tokens + 1 each) and kv_len_arr.
  static std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c) {
    std::vector<BufferRequest> r = SparseMlaCommonBuilder::buffer_plan(spec, c);  // sized first
    const int64_t tokens = std::max<int64_t>(1, c.max_num_batched_tokens);
    BufferPlan p(kBufferNames);
    p.set(kBufPlan,
          buffer_bytes("FLASHINFER_MLA_SPARSE_SM90's plan staging",
                       {3 * tokens + 2, sizeof(int32_t)}),
          true);
    return appended(std::move(r), p);
  }

 protected:
  /// build()'s plan (_kv_lens_host, _SM90State.plan and _plan): the host staging FlashInfer's
  /// wrapper.plan() reads, kept across builds as vLLM's state is (a plan is reused while its
  /// padded lengths still bound the batch's).
  void finish_build(const CommonMetadata& c, const ops::BatchSplit& s, const ops::Exec&) override {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    const int64_t max_tokens = cfg.max_num_batched_tokens, n = c.num_reqs;
    int32_t* qo = buffers_.as<int32_t>(kSparseOwnBuffers + kBufPlan);
    int32_t* kv = qo + max_tokens + 1;
    int32_t* lens = kv + max_tokens + 1;
    const int64_t max_valid = topk_tokens();  // min(index_topk + kpool - 1, the buffer's width)
    int64_t rows = c.qsl_host[n];
    // the rows' contexts: seq_len - query_len + j + 1, from the upper bound when given
    const Tensor* ub = c.seq_lens_cpu_upper_bound ? &*c.seq_lens_cpu_upper_bound : nullptr;
    const int32_t* sl = ub ? ub->as<const int32_t>() : c.host_seq_lens();
    const bool exact = rows == 0 || ub == nullptr;
    const bool adaptive = cfg.enable_adaptive_verification && cfg.num_speculative_tokens > 0;
    std::vector<int64_t> want(static_cast<size_t>(rows));
    int64_t longest = 0;
    for (int64_t r = 0; r < n; ++r) longest = std::max<int64_t>(longest, sl[r]);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t t = c.qsl_host[r]; t < c.qsl_host[r + 1]; ++t) {
        const int64_t ctx = (!exact && adaptive)
                                ? longest
                                : static_cast<int64_t>(sl[r]) - c.query_len(r) + 1 +
                                      (t - c.qsl_host[r]);
        want[t] = std::min(ctx, max_valid);  // exact: ctx <= topk ? ctx : topk (kpool 1)
      }
    // prefills on the dense MHA path are cut from the query first: the decode prefix only
    if (s.num_prefills > 0 && m.field(at(mla::kPrefillUseDenseMha)).int_value != 0)
      rows = s.num_decode_tokens;
    bool replan = true;
    if (!exact && rows == planned_) {
      replan = false;
      for (int64_t t = 0; t < rows && !replan; ++t)
        replan = !(lens[t] >= want[t] && lens[t] <= want[t] + kPlanSlack);
    }
    if (replan) {
      for (int64_t i = 0; i <= max_tokens; ++i) qo[i] = static_cast<int32_t>(std::min(i, rows));
      for (int64_t i = 0; i < max_tokens; ++i) {
        int64_t v = 0;
        if (i < rows) v = exact ? want[i] : std::min(want[i] + kPlanSlack, max_valid);
        lens[i] = static_cast<int32_t>(v);
      }
      kv[0] = 0;
      for (int64_t i = 0; i < max_tokens; ++i) kv[i + 1] = kv[i] + lens[i];
      planned_ = exact ? -1 : rows;
    }
    m.set_tensor(at(kQoIndptr), host_list(qo, max_tokens + 1), true);
    m.set_tensor(at(kKvIndptr), host_list(kv, max_tokens + 1), true);
    m.set_tensor(at(kKvLenArr), host_list(lens, max_tokens), true);
    m.set_int(at(kPlannedNumTokens), planned_);
    m.set_bool(at(kReplanned), replan);
  }

 private:
  using SparseMlaCommonBuilder::at;
  size_t at(Field f) const { return tail_field(f); }

  static constexpr int64_t kPlanSlack = 32;  // _PLAN_SLACK
  int64_t planned_ = -1;                     // _SM90State._planned_num_tokens
};

}  // namespace

extern const BackendDescriptor kFlashInferMlaSparseSm90Backend;
const BackendDescriptor kFlashInferMlaSparseSm90Backend =
    mla_descriptor<kFlashInferMlaSparseSm90, Sm90Builder, check_sm90>();

}  // namespace attn::backends
