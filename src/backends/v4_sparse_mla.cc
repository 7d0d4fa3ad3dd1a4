// DeepSeek V4 / V4.1 sparse MLA: vLLM 0.33's DeepseekV4SparseMLAMetadataBuilder of
// models/deepseek_v4/sparse_mla.py (FLASHMLA_SPARSE_DSV4, level ALWAYS; FLASHINFER_MLA_SPARSE_DSV4,
// ALWAYS; CPU_V4_MLA_SPARSE, the base's UNIFORM_BATCH without the C128A metadata;
// XPU_V4_MLA_SPARSE, the base builder itself, UNIFORM_BATCH: models/deepseek_v4/xpu/
// xpu_sparse.py's DeepseekV4XPUSparseBackend keeps DeepseekV4SparseMLABackend's builder) and of
// models/deepseek_v41/sparse_mla.py (FLASHMLA_SPARSE_DSV41, FLASHMLA_MEGA_ATTN_DSV41,
// FLASHINFER_MLA_SPARSE_DSV41; all ALWAYS, compress ratio 1 or 2, no C128A fields). Spec:
// MLAAttentionSpec (ATTN_KV_MLA) with tokens_per_state (the compress ratio R; 0 = 1), block
// sizes a multiple of 256 (get_supported_kernel_block_sizes). Reorder threshold 1 with
// supports_spec_as_decode.
//
// build(): req_id_per_token (token_to_req_indices); with R > 1 the batch's block table is
// clamped to >= 0 in place (vLLM's block_table_tensor.clamp_(min=0): the caller's table changes,
// as in vLLM) and slot_mapping is the compressed slot mapping (get_compressed_slot_mapping, no
// DCP); with R == 128 (V4 only, not CPU) the C128A top-k rows (build_c128a_topk_metadata) from
// common->positions, which must then be given. The C128A decode rows are max_compressed_tokens
// (active_topk_width) wide, as on SM90/SM100; vLLM's SM120 path returns the whole buffer row,
// whose columns past that width the kernel does not write (uninitialized), and is not modelled.
// V4.1's prefill context parallelism (pcp_size > 1: a chunk of the slots and an all-gather) is
// not a libattn input (pcp_size 1).
//
// ROCm (models/deepseek_v4/amd/rocm.py, models/deepseek_v41/amd/rocm.py; config->platform_rocm
// required): ROCM_FLASHMLA_SPARSE_DSV4 (DeepseekV4ROCMAiterMLASparseMetadataBuilder) and
// ROCM_FLASHMLA_SPARSE_DSV41 (DeepseekV41ROCMAiterMLASparseMetadataBuilder) extend the V4 / V4.1
// base builder (level UNIFORM_BATCH), ALWAYS under adaptive verification. V4's adds the C128A
// decode rows in ragged form (c128a_decode_topk_ragged_indices / _indptr, persistent buffers of
// max_num_batched_tokens * c128a_max_compressed and max_num_batched_tokens + 1 entries; None
// without C128A decode rows) and for_cudagraph_capture (False; in build_for_cudagraph_capture
// True on gfx950: rocm_ragged_rows.h);
// V4.1's adds nothing but the level and block sizes (multiples of 64: [64, 128]).
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

constexpr int32_t kKernelBlockSize = 256;  // get_supported_kernel_block_sizes
constexpr int32_t kRocmV41KernelBlockSize = 64;  // ROCM_FLASHMLA_SPARSE_DSV41's: [64, 128]
constexpr int32_t kC128aRatio = 128;       // compress_ratio of the C128A layers
constexpr int64_t kC128aAlignment = 128;   // _C128A_TOPK_ALIGNMENT

/// Which builder: V4's (C128A metadata at ratio 128, any ratio), V4's CPU one (no C128A
/// metadata), V4.1's (ratio 1 or 2, no C128A fields).
/// The ROCm builders: V4's (kV4's fields and the ragged C128A decode rows) and V4.1's.
enum Variant : int32_t { kV4 = 0, kV4Cpu = 1, kV41 = 2, kV4Rocm = 3, kV41Rocm = 4 };

bool is_v41(int32_t variant) { return variant == kV41 || variant == kV41Rocm; }

#define V4_FIELDS(X)                                                   \
  X(kNumReqs, "num_reqs")                                              \
  X(kMaxQueryLen, "max_query_len")                                     \
  X(kMaxSeqLen, "max_seq_len")                                         \
  X(kNumActualTokens, "num_actual_tokens")                             \
  X(kQueryStartLoc, "query_start_loc")                                 \
  X(kSlotMapping, "slot_mapping")                                      \
  X(kBlockTable, "block_table")                                        \
  X(kReqIdPerToken, "req_id_per_token")                                \
  X(kBlockSize, "block_size")                                          \
  X(kTopkTokens, "topk_tokens")                                        \
  X(kC128aGlobalDecodeTopkIndices, "c128a_global_decode_topk_indices") \
  X(kC128aDecodeTopkLens, "c128a_decode_topk_lens")                    \
  X(kC128aPrefillTopkIndices, "c128a_prefill_topk_indices")            \
  X(kC128aDecodeTopkRaggedIndices, "c128a_decode_topk_ragged_indices") \
  X(kC128aDecodeTopkRaggedIndptr, "c128a_decode_topk_ragged_indptr")   \
  X(kForCudagraphCapture, "for_cudagraph_capture")
ATTN_NAMED_LIST(Field, V4_FIELDS);
constexpr size_t kV41FieldCount = kC128aGlobalDecodeTopkIndices;  // V4.1 has no C128A fields
constexpr size_t kV4FieldCount = kC128aDecodeTopkRaggedIndices;   // the ROCm ones are kV4Rocm's

#define V4_BUFFERS(X)                               \
  X(kBufReqIdPerToken, "req_id_per_token")          \
  X(kBufCompressedSlots, "compressed_slot_mapping") \
  X(kBufC128aDecode, "c128a_global_decode")         \
  X(kBufC128aDecodeLens, "c128a_decode_lens")       \
  X(kBufC128aPrefill, "c128a_prefill")              \
  X(kBufC128aRagged, "c128a_decode_topk_ragged_indices") \
  X(kBufC128aRaggedIndptr, "c128a_decode_topk_ragged_indptr")
ATTN_NAMED_LIST(Buffer, V4_BUFFERS);

bool builds_c128a(int32_t variant, const KvCacheSpec& spec) {
  return (variant == kV4 || variant == kV4Rocm) && spec.compress_ratio() == kC128aRatio;
}

/// __init__'s c128a_max_compressed: cdiv(max_model_len, 128) rounded up to the alignment.
int64_t c128a_max_compressed(const BuilderConfig& c) {
  const int64_t states = (static_cast<int64_t>(c.max_model_len) + kC128aRatio - 1) / kC128aRatio;
  return (states + kC128aAlignment - 1) / kC128aAlignment * kC128aAlignment;
}

std::vector<BufferRequest> plan_variant(int32_t variant, const KvCacheSpec& spec,
                                        const BuilderConfig& c) {
  const int64_t tokens = c.max_num_batched_tokens, i32 = sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kBufReqIdPerToken, buffer_bytes("req_id_per_token", {tokens, i32}));
  // The compressed slots with a ratio > 1, the C128A rows at ratio 128 (else 0 bytes).
  const bool compressed = spec.compress_ratio() > 1, c128a = builds_c128a(variant, spec);
  const int64_t width = c128a ? c128a_max_compressed(c) : 0;
  p.set(kBufCompressedSlots, compressed ? buffer_bytes("compressed_slot_mapping", {tokens, 8}) : 0);
  p.set(kBufC128aDecode, c128a ? buffer_bytes("c128a_global_decode", {tokens, width, i32}) : 0);
  p.set(kBufC128aDecodeLens, c128a ? buffer_bytes("c128a_decode_lens", {tokens, i32}) : 0);
  p.set(kBufC128aPrefill, c128a ? buffer_bytes("c128a_prefill", {tokens, width, i32}) : 0);
  // ROCm's ragged decode rows: max_tokens * c128a_max_compressed and max_tokens + 1 entries
  const bool ragged = c128a && variant == kV4Rocm;
  p.set(kBufC128aRagged,
        ragged ? buffer_bytes("c128a_decode_topk_ragged_indices", {tokens, width, i32}) : 0);
  p.set(kBufC128aRaggedIndptr,
        ragged ? buffer_bytes("c128a_decode_topk_ragged_indptr", {tokens + 1, i32}) : 0);
  return p.requests();
}

std::vector<BufferRequest> plan(const BackendDescriptor& d, const KvCacheSpec& spec,
                                const BuilderConfig& c) {
  return plan_variant(d.variant, spec, c);
}

/// The smallest power of two >= n (n >= 1): triton.next_power_of_2.
int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

class V4SparseMlaBuilder final : public Builder {
 public:
  V4SparseMlaBuilder(std::shared_ptr<const Backend> owner, int32_t variant, const KvCacheSpec& spec,
                     const BuilderConfig& config)
      : Builder(std::move(owner), spec, config),
        variant_(variant),
        ratio_(spec.compress_ratio()),
        c128a_(builds_c128a(variant, spec)),
        c128a_max_(c128a_ ? c128a_max_compressed(config) : 0),
        buffers_(backend().name().c_str(), config.device, plan_variant(variant, spec, config),
                 config.allocator, config.workspace, config.workspace_size) {
    std::vector<std::string> names = name_vector(kFieldNames);
    if (is_v41(variant)) names.resize(kV41FieldCount);
    if (variant == kV4 || variant == kV4Cpu) names.resize(kV4FieldCount);
    init_metadata(names);
    init_reorder_batch_threshold(1, /*supports_spec_as_decode=*/true);
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const ops::BatchSplit s = ops::split_decodes_and_prefills(
        c.qsl_host, c.num_reqs, c.num_actual_tokens, c.max_query_len,
        reorder_batch_threshold().value_or(1), false);
    const int64_t ndt = s.num_decode_tokens, npt = s.num_prefill_tokens;
    const int64_t width = c128a_ && ndt + npt > 0 ? check_c128a(c, ndt + npt) : 0;
    const Device dev = config().device;
    Metadata& m = metadata();
    m.reset();
    const int32_t* qsl = c.query_start_loc->as<const int32_t>();
    const Tensor& slots = *c.slot_mapping;
    const Tensor& bt = *c.block_table_tensor;
    const int64_t n = c.num_reqs, T = c.num_actual_tokens;
    const int64_t mapped = c.qsl_host[n];
    int32_t* t2r = buffers_.as<int32_t>(kBufReqIdPerToken);
    ops::compute_token_to_req_indices(exec, qsl, n, mapped, std::max(mapped, T), t2r);

    m.set_int(kNumReqs, n);
    m.set_int(kMaxQueryLen, c.max_query_len);
    m.set_int(kMaxSeqLen, c.max_seq_len);
    m.set_int(kNumActualTokens, T);
    m.set_tensor(kQueryStartLoc, *c.query_start_loc);
    if (ratio_ > 1) {
      const int64_t rows = bt.shape[0], cols = bt.shape[1];
      ops::clamp_block_table(exec, bt.as<int32_t>(), rows, cols, bt.strides[0]);
      ops::V4CompressedSlotsParams p;
      p.num_reqs = std::min<int64_t>(rows, n);
      p.compress_ratio = ratio_;
      p.num_states = spec().block_size / ratio_;
      p.block_table_stride = bt.strides[0];
      p.block_table_extent = extent(bt);
      p.slots_int64 = slots.dtype == kInt64;
      int64_t* out = buffers_.as<int64_t>(kBufCompressedSlots);
      ops::v4_compressed_slot_mapping(exec, qsl, c.seq_lens->as<const int32_t>(), slots.data,
                                      bt.as<const int32_t>(), p, T, out);
      m.set_tensor(kSlotMapping, make_vector(out, dev, kInt64, T), true);
    } else {
      m.set_tensor(kSlotMapping, slots);
    }
    m.set_tensor(kBlockTable, bt);
    m.set_tensor(kReqIdPerToken, make_vector(t2r, dev, kInt32, T), true);
    m.set_int(kBlockSize, spec().block_size);
    m.set_int(kTopkTokens, sparse_index_topk(spec()));
    if (is_v41(variant_)) return;
    for (const Field f :
         {kC128aGlobalDecodeTopkIndices, kC128aDecodeTopkLens, kC128aPrefillTopkIndices})
      m.set_none(f);
    if (variant_ == kV4Rocm) {
      m.set_none(kC128aDecodeTopkRaggedIndices);
      m.set_none(kC128aDecodeTopkRaggedIndptr);
      m.set_bool(kForCudagraphCapture, false);  // the dataclass default; do_capture below
    }
    if (width > 0) build_c128a(c, ndt, npt, width, t2r, exec);
  }

  /// build_for_cudagraph_capture: the build; ROCm V4's sets for_cudagraph_capture = _ON_GFX950.
  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    do_build(0, c, false, exec);
    if (variant_ == kV4Rocm) metadata().set_bool(kForCudagraphCapture, rocm_gfx950(config()));
  }

 private:
  static int64_t extent(const Tensor& bt) {
    return bt.shape[0] > 0 ? (bt.shape[0] - 1) * bt.strides[0] + bt.shape[1] : 0;
  }

  /// _build_c128a_metadata's checks (vLLM asserts) and its active_topk_width.
  int64_t check_c128a(const CommonMetadata& c, int64_t rows) const {
    if (!c.positions)
      invalid("common->positions is NULL; ", backend().name(),
              " reads the tokens' positions for the C128A "
              "top-k metadata of a kv_cache_spec->tokens_per_state=128 layer (vLLM asserts "
              "positions is not None)");
    if (c.positions->dtype != kInt64 || c.positions->numel() < rows)
      invalid("common->positions must be int64 with at least ", rows, " entries, got ",
              c.positions->numel());
    const int64_t width = std::min<int64_t>(
        std::max<int64_t>(next_power_of_2(std::max<int64_t>(c.max_seq_len / ratio_, 1)),
                          kC128aAlignment),
        c128a_max_);
    if (width < c.max_seq_len / ratio_)
      invalid("common->max_seq_len=", c.max_seq_len, " needs ", c.max_seq_len / ratio_,
              " C128A entries, more than config->max_model_len=", config().max_model_len,
              " allows (", c128a_max_, "; vLLM asserts)");
    return width;
  }

  void build_c128a(const CommonMetadata& c, int64_t ndt, int64_t npt, int64_t width,
                   const int32_t* t2r, const ops::Exec& exec) {
    const Tensor& bt = *c.block_table_tensor;
    ops::C128aTopkParams p;
    p.num_decode_tokens = ndt;
    p.num_prefill_tokens = npt;
    p.compress_ratio = ratio_;
    p.width = static_cast<int32_t>(width);
    p.row_stride = static_cast<int32_t>(c128a_max_);
    p.block_size = spec().block_size / ratio_;
    p.block_table_stride = bt.strides[0];
    p.block_table_extent = extent(bt);
    p.slots_int64 = c.slot_mapping->dtype == kInt64;
    int32_t* dec = buffers_.as<int32_t>(kBufC128aDecode);
    int32_t* lens = buffers_.as<int32_t>(kBufC128aDecodeLens);
    int32_t* pre = buffers_.as<int32_t>(kBufC128aPrefill);
    ops::v4_c128a_topk_metadata(exec, c.positions->as<const int64_t>(), t2r, bt.as<const int32_t>(),
                                c.slot_mapping->data, p, dec, lens, pre);
    const Device dev = config().device;
    Metadata& m = metadata();
    if (ndt > 0) {
      // global_decode.view(num_decode_tokens, 1, -1): rows c128a_max_ apart
      m.set_tensor(kC128aGlobalDecodeTopkIndices,
                   make_row_blocks(dec, dev, kInt32, ndt, width, c128a_max_), true);
      m.set_tensor(kC128aDecodeTopkLens, make_vector(lens, dev, kInt32, ndt), true);
      if (variant_ == kV4Rocm)
        set_ragged_rows(m, kC128aDecodeTopkRaggedIndices, kC128aDecodeTopkRaggedIndptr, dec, ndt,
                        width, c128a_max_, lens, c128a_max_, rocm_gfx950(config()),
                        buffers_.as<int32_t>(kBufC128aRagged),
                        buffers_.as<int32_t>(kBufC128aRaggedIndptr), dev, exec);
    }
    if (npt > 0)
      m.set_tensor(kC128aPrefillTopkIndices, make_matrix(pre, dev, kInt32, npt, width, c128a_max_),
                   true);
  }

  int32_t variant_;
  int32_t ratio_;
  bool c128a_;
  int64_t c128a_max_;
  PersistentBuffers buffers_;
};

std::unique_ptr<Builder> create(const BackendDescriptor& d, std::shared_ptr<const Backend> backend,
                                const KvCacheSpec& spec, const BuilderConfig& config) {
  return std::make_unique<V4SparseMlaBuilder>(std::move(backend), d.variant, spec, config);
}

void check_v4_sparse_mla(const BackendDescriptor& d, const KvCacheSpec& spec,
                         const BuilderConfig& c) {
  check_spec_kind(d, spec);
  if (d.variant == kV4Rocm || d.variant == kV41Rocm) check_rocm_platform(d, c);
  // ROCM_FLASHMLA_SPARSE_DSV41's kernel block sizes are [64, 128]: multiples of 64
  const int32_t kernel_block = d.variant == kV41Rocm ? kRocmV41KernelBlockSize : kKernelBlockSize;
  if (spec.block_size <= 0 || spec.block_size % kernel_block != 0)
    fail(Status::kUnsupported, d.name, " takes block sizes that are multiples of ", kernel_block,
         " (vLLM 0.33's kernel block size): kv_cache_spec->block_size=", spec.block_size);
  if (c.attn_type != kAttnDecoder)
    fail(Status::kUnsupported, d.name,
         " runs decoder self-attention only (config->attn_type=", c.attn_type, ")");
  if (is_v41(d.variant) && spec.compress_ratio() > 2)
    invalid(d.name,
            " (DeepSeek V4.1) compresses at ratio 1 or 2 (vLLM raises ValueError): "
            "kv_cache_spec->tokens_per_state=",
            spec.tokens_per_state);
  if (builds_c128a(d.variant, spec) && c.max_model_len <= 0)
    invalid("config->max_model_len=", c.max_model_len, " must be positive for ", d.name,
            "'s C128A buffers (kv_cache_spec->tokens_per_state=128)");
}

}  // namespace

#define V4_SPARSE_MLA_BACKEND_(symbol, name, variant, support) \
  extern const BackendDescriptor symbol;                        \
  const BackendDescriptor symbol{name,                          \
                                 kVllmRelease,                  \
                                 kv_kind_bit(kKvMla),           \
                                 variant,                       \
                                 support,                       \
                                 check_v4_sparse_mla,           \
                                 plan,                          \
                                 create};
#define V4_SPARSE_MLA_BACKEND(symbol, name, variant, level) \
  V4_SPARSE_MLA_BACKEND_(symbol, name, variant, fixed_cudagraph_support<level>)

V4_SPARSE_MLA_BACKEND(kFlashmlaSparseDsv4Backend, "FLASHMLA_SPARSE_DSV4", kV4, kCgAlways)
V4_SPARSE_MLA_BACKEND(kFlashinferMlaSparseDsv4Backend, "FLASHINFER_MLA_SPARSE_DSV4", kV4, kCgAlways)
V4_SPARSE_MLA_BACKEND(kCpuV4MlaSparseBackend, "CPU_V4_MLA_SPARSE", kV4Cpu, kCgUniformBatch)
V4_SPARSE_MLA_BACKEND(kXpuV4MlaSparseBackend, "XPU_V4_MLA_SPARSE", kV4, kCgUniformBatch)
V4_SPARSE_MLA_BACKEND(kFlashmlaSparseDsv41Backend, "FLASHMLA_SPARSE_DSV41", kV41, kCgAlways)
V4_SPARSE_MLA_BACKEND(kFlashmlaMegaAttnDsv41Backend, "FLASHMLA_MEGA_ATTN_DSV41", kV41, kCgAlways)
V4_SPARSE_MLA_BACKEND(kFlashinferMlaSparseDsv41Backend, "FLASHINFER_MLA_SPARSE_DSV41", kV41,
                      kCgAlways)
// ROCm: the base builders' UNIFORM_BATCH, ALWAYS under adaptive verification
V4_SPARSE_MLA_BACKEND_(kRocmFlashmlaSparseDsv4Backend, "ROCM_FLASHMLA_SPARSE_DSV4", kV4Rocm,
                       rocm_cudagraph_support<kCgUniformBatch>)
V4_SPARSE_MLA_BACKEND_(kRocmFlashmlaSparseDsv41Backend, "ROCM_FLASHMLA_SPARSE_DSV41", kV41Rocm,
                       rocm_cudagraph_support<kCgUniformBatch>)

}  // namespace attn::backends
