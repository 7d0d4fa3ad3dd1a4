// AMX_MLA: vLLM 0.33's AMXMLAMetadataBuilder (mla/amx_mla.py), the CPU platform's MLA backend
// where AMX exists: the base build (NEVER, single-token decodes, the CPU prefill backend), then
// attributes on the decode and prefill parts, returned as fields of its own after the chunked
// context (None when the part is None). bfloat16 models, kernel blocks of multiples of 32.
#include <algorithm>
#include <thread>

#include "backends/mla_common.h"
#include "core/error.h"
#include "core/vllm_release.h"
#include "ops/cpu_mla_ops.h"
#include "ops/state_space_ops.h"

namespace attn::backends {
namespace {

constexpr MlaClass kAmxMla =
    MlaClass("AMX_MLA", kCgNever, QueryLenSupport::kSingleOnly)
        .release(kVllmRelease)  // new in vLLM 0.33, matched whole
        .blocks(32).caches({kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16})
        .models({kKvDtypeBfloat16}).on(MlaPlatform::kCpu);

#define AMX_MLA_FIELDS(X)                                       \
  X(kDecodeReqToToken, "decode_req_to_token")                   \
  X(kDecodeSeqLensI64, "decode_seq_lens_i64")                   \
  X(kDecodeReqPoolIndices, "decode_req_pool_indices")           \
  X(kDecodeNumKvSplits, "decode_num_kv_splits")                 \
  X(kPrefillCpuSeqLens, "prefill_cpu_seq_lens")                 \
  X(kPrefillReqToToken, "prefill_req_to_token")                 \
  X(kPrefillReqPoolIndices, "prefill_req_pool_indices")         \
  X(kPrefillExtendSeqLens, "prefill_extend_seq_lens")           \
  X(kPrefillExtendStartLoc, "prefill_extend_start_loc")         \
  X(kPrefillMaxLenExtend, "prefill_max_len_extend")
ATTN_NAMED_LIST(Field, AMX_MLA_FIELDS);

#define AMX_MLA_BUFFERS(X)                                      \
  X(kBufReqToToken, "req_to_token (AMX_MLA)")                   \
  X(kBufSeqLensI64, "decode_seq_lens_i64")                      \
  X(kBufPoolIndices, "req_pool_indices")                        \
  X(kBufCpuSeqLens, "prefill_cpu_seq_lens")                     \
  X(kBufExtendLens, "prefill_extend_seq_lens")                  \
  X(kBufExtendStarts, "prefill_extend_start_loc")
ATTN_NAMED_LIST(Buffer, AMX_MLA_BUFFERS);

/// A req_to_token row: every position of the widest block table the config admits
/// (max_blocks_per_req x block_size entries).
int64_t row_entries(const KvCacheSpec& spec, const BuilderConfig& c) {
  return c.max_blocks_per_req(spec.block_size) * spec.block_size;
}

class AmxMlaBuilder final : public MlaCommonBuilder {
 public:
  explicit AmxMlaBuilder(const MlaArgs& a)
      : MlaCommonBuilder(a, {}, field_block(kFieldNames), buffer_plan(a.spec, a.config)) {
    // num_compute_units(): torch.get_num_threads() on vLLM's CPU platform, given as
    // config->num_sms; 0: the host's hardware threads (torch's default may count cores only)
    const BuilderConfig& c = this->config();
    threads_ = c.num_sms > 0 ? c.num_sms
                             : std::max<int64_t>(1, std::thread::hardware_concurrency());
  }

  /// req_to_token of every row (decodes' int32, then prefills' int64), and int64 lists.
  static std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c) {
    std::vector<BufferRequest> r = MlaCommonBuilder::buffer_plan(spec, c);  // sized first
    const int64_t seqs = c.max_num_seqs;
    BufferPlan p(kBufferNames);
    p.set(kBufReqToToken, buffer_bytes("req_to_token", {seqs, row_entries(spec, c), 8}));
    p.set(kBufSeqLensI64, buffer_bytes("decode_seq_lens_i64", {seqs, 8}));
    p.set(kBufPoolIndices, buffer_bytes("req_pool_indices", {seqs, 8}));
    p.set(kBufCpuSeqLens, buffer_bytes("prefill_cpu_seq_lens", {seqs, 8}));
    p.set(kBufExtendLens, buffer_bytes("prefill_extend_seq_lens", {seqs, 8}));
    p.set(kBufExtendStarts, buffer_bytes("prefill_extend_start_loc", {seqs, 8}));
    return appended(std::move(r), p);
  }

 protected:
  /// req_to_token: the decodes' rows (int32), then the prefills' (int64), of W x block_size
  /// entries each, in a buffer of max_num_seqs rows of max_blocks_per_req x block_size int64.
  void check_batch(const CommonMetadata& c, const ops::BatchSplit& s, bool) override {
    const int64_t nd = s.num_decodes, np = s.num_prefills, cols = c.block_table_tensor->shape[1];
    const int64_t row = cols * spec().block_size;
    const int64_t need = (nd * row * 4 + 7) / 8 * 8 + np * row * 8;
    const int64_t have =
        static_cast<int64_t>(config().max_num_seqs) * row_entries(spec(), config()) * 8;
    if (need > have)
      invalid("common->block_table_tensor has ", cols, " columns: AMX_MLA's req_to_token "
              "of ", nd, " decode and ", np, " prefill rows of ", row, " entries needs ", need,
              " bytes, more than the ", have, " its buffer holds (config->max_num_seqs rows of "
              "cdiv(config->max_model_len, block_size) blocks)");
  }

  /// For the decodes req_to_token (the expanded block table, int32), seq_lens_i64,
  /// req_pool_indices (arange) and num_kv_splits (powers of two up to max_seq_len // 512, at
  /// most 2 x num_compute_units()); for the prefills cpu_seq_lens (the batch's seq_lens, int64),
  /// req_to_token (int64), req_pool_indices, extend_seq_lens / extend_start_loc (from the
  /// prefill query_start_loc) and max_len_extend (host).
  void finish_build(const CommonMetadata& c, const ops::BatchSplit& s, int64_t max_seq_len,
                    const ops::Exec& exec) override {
    const Device dev = config().device;
    Metadata& m = metadata();
    const Tensor& bt = *c.block_table_tensor;
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    const int32_t bs = spec().block_size;
    const int64_t cols = bt.shape[1], row = cols * bs;
    char* rows = static_cast<char*>(buffer(kBufReqToToken));
    int64_t* pool = static_cast<int64_t*>(buffer(kBufPoolIndices));
    ops::iota_i64(exec, pool, std::max(nd, np));
    if (nd > 0) {
      int32_t* r2t = reinterpret_cast<int32_t*>(rows);
      ops::expand_block_table_i32(exec, bt.as<const int32_t>(), bt.strides[0], nd, cols, bs, r2t);
      m.set_tensor(at(kDecodeReqToToken), make_matrix(r2t, dev, kInt32, nd, row, row), true);
      const Tensor& lens = m.field(at(mla::kDecodeSeqLens)).tensor;
      int64_t* lens64 = static_cast<int64_t*>(buffer(kBufSeqLensI64));
      ops::widen_i32_i64(exec, lens.as<const int32_t>(), nd, lens64);
      m.set_tensor(at(kDecodeSeqLensI64), make_vector(lens64, dev, kInt64, nd), true);
      m.set_tensor(at(kDecodeReqPoolIndices), make_vector(pool, dev, kInt64, nd), true);
      int64_t splits = 1;  // _compute_num_kv_splits
      while (splits < std::max<int64_t>(1, max_seq_len / 512)) splits *= 2;
      m.set_int(at(kDecodeNumKvSplits), std::min<int64_t>(splits, 2 * threads_));
    }
    if (np > 0) {
      int64_t* r2t = reinterpret_cast<int64_t*>(rows + (nd * row * 4 + 7) / 8 * 8);
      ops::expand_block_table_i64(exec, bt.as<const int32_t>() + nd * bt.strides[0],
                                  bt.strides[0], np, cols, bs, r2t);
      m.set_tensor(at(kPrefillReqToToken), make_matrix(r2t, dev, kInt64, np, row, row), true);
      int64_t* cpu_lens = static_cast<int64_t*>(buffer(kBufCpuSeqLens));
      ops::widen_i32_i64(exec, c.seq_lens->as<const int32_t>() + nd, np, cpu_lens);
      m.set_tensor(at(kPrefillCpuSeqLens), make_vector(cpu_lens, dev, kInt64, np), true);
      m.set_tensor(at(kPrefillReqPoolIndices), make_vector(pool, dev, kInt64, np), true);
      int64_t* lens = static_cast<int64_t*>(buffer(kBufExtendLens));
      int64_t* starts = static_cast<int64_t*>(buffer(kBufExtendStarts));
      ops::extend_lens_i64(exec, buffers_.as<const int32_t>(mla::kBufPrefillQsl), np, lens,
                           starts);
      m.set_tensor(at(kPrefillExtendSeqLens), make_vector(lens, dev, kInt64, np), true);
      m.set_tensor(at(kPrefillExtendStartLoc), make_vector(starts, dev, kInt64, np), true);
      int64_t longest = 0;
      for (int64_t i = 0; i < np; ++i) longest = std::max(longest, c.query_len(nd + i));
      m.set_int(at(kPrefillMaxLenExtend), longest);
    }
  }

 private:
  using MlaCommonBuilder::at;
  size_t at(Field f) const { return tail_field(f); }
  void* buffer(Buffer b) const { return buffers_.get(kOwnBuffers + b); }

  int64_t threads_ = 1;  ///< num_compute_units()
};

}  // namespace

extern const BackendDescriptor kAmxMlaBackend;
const BackendDescriptor kAmxMlaBackend = mla_descriptor<kAmxMla, AmxMlaBuilder>();

}  // namespace attn::backends
