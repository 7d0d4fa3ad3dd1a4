// DEEPSEEK_V32_INDEXER: vLLM 0.33's DeepseekV32IndexerMetadataBuilder (mla/indexer.py), the
// lightning indexer of DeepSeek V3.2's sparse attention (no prefill context parallelism, one
// tensor-parallel rank's rows: row_shard_sizes None). It reads an MLA-kind spec (vLLM's
// MLAAttentionSpec with cache_role INDEXER: 132 uint8 a token, block size 64) and the
// `block_table_width` construction argument (config->block_table_width, ABI 1.7). The same
// builder serves DEEPSEEK_V4_INDEXER (kernel block 256), DEEPSEEK_V41_INDEXER (64 on 9.x, else
// 128), CPU_V4_INDEXER (DeepseekV4CPUIndexerMetadataBuilder: the CPU platform's paths and one
// prefill chunk a step) and DEEPSEEK_V41_SPARSE_INDEXER (below).
//
// Compressed caches (kv_cache_spec->tokens_per_state = R > 1, DeepSeek V4 / V4.1's C4 indexer):
// slot_mapping is get_compressed_slot_mapping's (op v4_compressed_slot_mapping, with the DCP
// setting), the prefill K rows are seq_lens // R (chunk plan, workspace max_prefill_buffer_size
// // R, cu_seq_lens, total / max_seqlen_k, the DCP-local sums with the interleave in states:
// cp_kv_cache_interleave_size // R) and each token's ke (its causal length // R); the decode
// seq_lens are divided by R after the DCP localization (global_seq_lens are not), on native
// next_n = 1 into expanded_seq_lens_buffer (num_decode_tokens rows). Under DCP the interleave
// must be a multiple of R (vLLM's NotImplementedError).
//
// The decode path follows vLLM's platform checks with DeepGEMM installed (the indexer's paged
// MQA logits need it on CUDA): compute capability 10.x runs the varlen kernel
// (supports_varlen: one row per decode token from _indexer_decode_metadata_kernel); 9.x takes
// native next_n 1, 2 and 4 and flattens otherwise (or always with adaptive verification);
// other capabilities take native next_n 1 and 2. Level: ALWAYS with varlen or flattening, else
// UNIFORM_BATCH; reorder_batch_threshold None (the indexer's own split uses 1 + k).
//
// Fields: the top-level DeepseekV32IndexerMetadata; "decode_*" its DeepSeekV32IndexerDecodeMetadata;
// "prefill_*" its DeepseekV32IndexerPrefillMetadata, whose list of chunks is flattened: the
// per-chunk scalars as host int32 lists "prefill_chunk_*" (prefill_num_chunks entries), each
// chunk's cu_seqlen_ks/ke as the token range [token_start, token_end) of "prefill_cu_seqlen_ks"
// / "_ke" (indexed from the first prefill token), its cu_seq_lens (num_reqs + 1) at
// prefill_chunk_cu_offset in "prefill_cu_seq_lens" (local_cu_seq_lens likewise; the same tensor
// without DCP, as vLLM aliases them), its block_table the rows [req_start, req_end) of
// block_table. token_to_seq (cu_seq_lens expanded: K row k belongs to the r with cu[r] <= k <
// cu[r + 1]) is not returned (docs/backends/sparse_mla.md).
#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/persistent_copy.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "DEEPSEEK_V32_INDEXER";
constexpr int32_t kIndexerBlockSize = 64;  // get_supported_kernel_block_sizes on CUDA: [64]
constexpr int64_t kMaxLogitsMb = 512;      // VLLM_SPARSE_INDEXER_MAX_LOGITS_MB's default

#define INDEXER_FIELDS(X)                                                          \
  X(kSeqLens, "seq_lens")                                                          \
  X(kMaxSeqLen, "max_seq_len")                                                     \
  X(kSlotMapping, "slot_mapping")                                                  \
  X(kNumDecodes, "num_decodes")                                                    \
  X(kNumDecodeTokens, "num_decode_tokens")                                         \
  X(kNumPrefills, "num_prefills")                                                  \
  X(kNumPrefillTokens, "num_prefill_tokens")                                       \
  X(kPositions, "positions")                                                       \
  X(kBlockTable, "block_table")                                                    \
  X(kDecodeBlockTable, "decode_block_table")                                       \
  X(kDecodeSeqLens, "decode_seq_lens")                                             \
  X(kDecodeDecodeLens, "decode_decode_lens")                                       \
  X(kDecodeRequiresPadding, "decode_requires_padding")                             \
  X(kDecodeScheduleMetadata, "decode_schedule_metadata")                           \
  X(kDecodeGlobalSeqLens, "decode_global_seq_lens")                                \
  X(kDecodePerReqDecodeLens, "decode_per_req_decode_lens")                         \
  X(kDecodeIsUniform, "decode_decode_is_uniform")                                  \
  X(kDecodeWriteMaxDecodeLen, "decode_write_max_decode_len")                       \
  X(kDecodeIndices, "decode_indices")                                              \
  X(kPrefillMaxPrefillSeqLen, "prefill_max_prefill_seq_len")                       \
  X(kPrefillRowShardSizes, "prefill_row_shard_sizes")                              \
  X(kPrefillNumChunks, "prefill_num_chunks")                                       \
  X(kPrefillCuSeqlenKs, "prefill_cu_seqlen_ks")                                    \
  X(kPrefillCuSeqlenKe, "prefill_cu_seqlen_ke")                                    \
  X(kPrefillCuSeqLens, "prefill_cu_seq_lens")                                      \
  X(kPrefillLocalCuSeqLens, "prefill_local_cu_seq_lens")                           \
  X(kPrefillChunkTokenStart, "prefill_chunk_token_start")                          \
  X(kPrefillChunkTokenEnd, "prefill_chunk_token_end")                              \
  X(kPrefillChunkReqStart, "prefill_chunk_req_start")                              \
  X(kPrefillChunkReqEnd, "prefill_chunk_req_end")                                  \
  X(kPrefillChunkCuOffset, "prefill_chunk_cu_offset")                              \
  X(kPrefillChunkTotalSeqLens, "prefill_chunk_total_seq_lens")                     \
  X(kPrefillChunkMaxSeqlenK, "prefill_chunk_max_seqlen_k")                         \
  X(kPrefillChunkSkipKvGather, "prefill_chunk_skip_kv_gather")                     \
  X(kPrefillChunkLocalTotalSeqLens, "prefill_chunk_local_total_seq_lens")          \
  X(kPrefillChunkMaxLocalTotalSeqLens, "prefill_chunk_max_local_total_seq_lens")   \
  /* DEEPSEEK_V41_SPARSE_INDEXER's DeepseekV41SparseIndexerMetadata additions */  \
  X(kSparseBlockKv, "sparse_block_kv")                                             \
  X(kSparseDecodeRowKs, "sparse_decode_row_ks")                                    \
  X(kSparseDecodeSparseIndices, "sparse_decode_sparse_indices")                    \
  X(kSparseDecodeEnd, "sparse_decode_end")                                         \
  X(kSparseDecodeColIndices, "sparse_decode_col_indices")                          \
  X(kSparsePrefillSparseIndices, "sparse_prefill_sparse_indices")                  \
  X(kSparsePrefillEnd, "sparse_prefill_end")                                       \
  X(kSparsePrefillColIndices, "sparse_prefill_col_indices")
ATTN_NAMED_LIST(Field, INDEXER_FIELDS);

/// DEEPSEEK_V32_INDEXER's fields: those before the sparse additions.
constexpr size_t kV32FieldCount = kSparseBlockKv;
/// The per-chunk host lists, in field order from kPrefillChunkTokenStart.
constexpr size_t kChunkListCount = kV32FieldCount - kPrefillChunkTokenStart;

/// Which builder: vLLM's DeepseekV32IndexerMetadataBuilder under the V3.2, V4 (kernel block
/// 256) and V4.1 (64 on 9.x, else 128) indexer backends, its CPU subclass (one prefill chunk a
/// step, CPU platform paths) and DeepseekV41SparseIndexerMetadataBuilder.
enum Variant : int32_t { kV32 = 0, kV41Sparse = 1, kV4 = 2, kV41 = 3, kCpuV4 = 4 };
constexpr const char* kVariantNames[] = {kName, "DEEPSEEK_V41_SPARSE_INDEXER",
                                         "DEEPSEEK_V4_INDEXER", "DEEPSEEK_V41_INDEXER",
                                         "CPU_V4_INDEXER"};

#define INDEXER_BUFFERS(X)                                          \
  X(kBufDecodeSeqLens, "decode_seq_lens_buffer")                    \
  X(kBufGlobalSeqLens, "global_decode_seq_lens_buffer")             \
  X(kBufExpandedBlockTable, "expanded_block_table_buffer")          \
  X(kBufDecodeLens, "decode_lens_buffer")                           \
  X(kBufPerReqDecodeLens, "per_req_decode_lens_buffer")             \
  X(kBufDecodeIndices, "decode_indices_buffer")                     \
  X(kBufSchedule, "scheduler_metadata_buffer")                      \
  X(kBufCuSeqLens, "prefill cu_seq_lens")                           \
  X(kBufLocalCuSeqLens, "prefill local_cu_seq_lens")                \
  X(kBufRowStart, "prefill row starts")                             \
  X(kBufKs, "prefill cu_seqlen_ks")                                 \
  X(kBufKe, "prefill cu_seqlen_ke")                                 \
  X(kBufSparseIndices, "sparse_indices_buffer")                     \
  X(kBufSparseEnd, "end_buffer")                                    \
  X(kBufSparseColIndices, "col_indices_buffer")                     \
  X(kBufZeroRowKs, "zero_row_ks")                                   \
  /* compress ratio > 1 */                                          \
  X(kBufCompressedSlots, "compressed_slot_mapping_buffer")          \
  X(kBufExpandedSeqLens, "expanded_seq_lens_buffer")                \
  X(kBufPlanLens, "prefill seq_lens_cpu_upper_bound")               \
  /* host */                                                        \
  X(kBufArange, "arange_buffer")                                    \
  X(kBufChunkLists, "the prefill chunks' lists")                    \
  X(kBufPlanLensCpu, "prefill seq_lens_cpu_upper_bound staging")
ATTN_NAMED_LIST(Buffer, INDEXER_BUFFERS);

/// The paths vLLM 0.33 picks from the platform (with DeepGEMM).
struct DecodePaths {
  int32_t capability = 0;
  bool supports_varlen = false;  ///< _supports_varlen_paged_mqa_logits: 10.x
  bool use_flattening = false;   ///< _use_flattening
  int32_t next_n = 1;
};

/// _supports_native_decode(next_n) on CUDA with DeepGEMM.
bool native_decode(int32_t capability, int64_t next_n) {
  if (capability / 10 == 10) return true;
  if (capability / 10 == 9) return next_n == 1 || next_n == 2 || next_n == 4;
  return next_n == 1 || next_n == 2;
}

/// The platform's compute capability as the builder asks it: 0 on CPU_V4_INDEXER (vLLM's CPU
/// platform: no CUDA, no DeepGEMM, so native next_n 1 and 2 and no varlen kernel).
int32_t capability(const BuilderConfig& c, int32_t variant) {
  return variant == kCpuV4 ? 0 : resolved_device_capability(c);
}

DecodePaths decode_paths(const BuilderConfig& c, int32_t variant) {
  DecodePaths d;
  d.capability = capability(c, variant);
  d.next_n = 1 + c.num_speculative_tokens;
  d.supports_varlen = d.capability / 10 == 10;
  // adaptive verification flattens where the flattened device query lengths exist (9.x)
  d.use_flattening = !native_decode(d.capability, d.next_n) ||
                     (c.num_speculative_tokens > 0 && c.enable_adaptive_verification &&
                      d.capability / 10 == 9);
  return d;
}

/// The worker's block table width (config->block_table_width, 0 = vLLM's get_block_table_width
/// of max_num_blocks_per_req(max_model_len) with its 128-token alignment).
int64_t table_width(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (c.block_table_width > 0) return c.block_table_width;
  const int64_t bs = spec.block_size;
  const int64_t per_block = bs * std::max<int32_t>(c.decode_context_parallel_size, 1);
  const int64_t blocks = (c.max_model_len + per_block - 1) / per_block;
  const int64_t align = 128 / std::gcd<int64_t>(128, bs);
  return (blocks + align - 1) / align * align;
}

/// max_prefill_buffer_size: get_max_prefill_buffer_size (max_model_len * (576 * 2 // 132) *
/// factor, the factor vLLM resolves: 5 up to 256K tokens, else 2) // compress_ratio.
int64_t prefill_buffer_rows(const BuilderConfig& c, int32_t ratio) {
  const int64_t factor = c.max_model_len <= 256 * 1024 ? 5 : 2;
  return static_cast<int64_t>(c.max_model_len) * (576 * 2 / 132) * factor / ratio;
}

/// The backend's kernel block size (get_supported_kernel_block_sizes on CUDA): V3.2's 64, V4's
/// 256, V4.1's 64 on compute capability 9.x and 128 otherwise.
int32_t kernel_block_size(int32_t variant, const BuilderConfig& c) {
  if (variant == kV4 || variant == kCpuV4) return 256;
  if (variant == kV41 || variant == kV41Sparse)
    return resolved_device_capability(c) / 10 == 9 ? 64 : 128;
  return kIndexerBlockSize;
}

int64_t decode_rows(const BuilderConfig& c) {
  return std::max<int64_t>(c.max_num_batched_tokens,
                           static_cast<int64_t>(c.max_num_seqs) * (1 + c.num_speculative_tokens));
}

/// Whether a batch can take a per-token decode path (the expanded block table).
bool may_expand(const BuilderConfig& c, int32_t variant) {
  const DecodePaths d = decode_paths(c, variant);
  return d.supports_varlen || d.use_flattening || d.next_n >= 3;
}

/// DEEPSEEK_V41_SPARSE_INDEXER's construction-time numbers (vLLM 0.33's
/// DeepseekV41SparseIndexerMetadataBuilder.__init__).
struct SparseGeometry {
  int32_t block_kv = 0;           ///< pick_sparse_block_kv(candidate_block_size): 16 or 8.
  int64_t num_blocks = 0;         ///< candidate_topk_blocks * (candidate_block_size / block_kv).
  int64_t min_split_seq_len = 0;  ///< (num_sparse_cols * 2 + 3) / 4.
  int64_t topk = 0;               ///< the model's index_topk.
};

/// pick_sparse_block_kv: the largest of SPARSE_BLOCK_KV_CHOICES (16, 8) dividing the candidate
/// block size; 0 when none does.
int32_t pick_sparse_block_kv(int32_t candidate_block_size) {
  for (const int32_t sbk : {16, 8})
    if (candidate_block_size > 0 && candidate_block_size % sbk == 0) return sbk;
  return 0;
}

SparseGeometry sparse_geometry(const KvCacheSpec& spec, const BuilderConfig& c) {
  SparseGeometry g;
  g.block_kv = pick_sparse_block_kv(c.candidate_block_size);
  if (g.block_kv == 0) return g;
  g.num_blocks = int64_t{c.candidate_topk_blocks} * (c.candidate_block_size / g.block_kv);
  g.min_split_seq_len = (g.num_blocks * g.block_kv * 2 + 3) / 4;
  g.topk = sparse_index_topk(spec);
  return g;
}

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c, Variant v) {
  const int64_t rows = decode_rows(c), tokens = c.max_num_batched_tokens;
  const SparseGeometry g = v == kV41Sparse ? sparse_geometry(spec, c) : SparseGeometry{};
  const int64_t sparse_rows = v == kV41Sparse ? rows : 0;
  const int64_t i32 = sizeof(int32_t);
  const bool dcp = c.decode_context_parallel_size > 1;
  const bool compressed = spec.compress_ratio() > 1;
  BufferPlan p(kBufferNames);
  p.set(kBufDecodeSeqLens, buffer_bytes("decode_seq_lens_buffer", {rows, i32}));
  p.set(kBufGlobalSeqLens, buffer_bytes("global_decode_seq_lens_buffer", {dcp ? rows : 0, i32}));
  p.set(kBufExpandedBlockTable,
        buffer_bytes("expanded_block_table_buffer",
                     {may_expand(c, v) ? tokens : 0, table_width(spec, c), i32}));
  p.set(kBufDecodeLens, buffer_bytes("decode_lens_buffer", {rows, i32}));
  p.set(kBufPerReqDecodeLens, buffer_bytes("per_req_decode_lens_buffer", {rows, i32}));
  p.set(kBufDecodeIndices,
        buffer_bytes("decode_indices_buffer",
                     {decode_paths(c, v).supports_varlen ? rows : 0, i32}));
  p.set(kBufSchedule, buffer_bytes("scheduler_metadata_buffer",
                                   {std::max<int64_t>(c.num_sms, 0) + 1, 2, i32}));
  p.set(kBufCuSeqLens, buffer_bytes("prefill cu_seq_lens", {2 * int64_t{c.max_num_seqs} + 1, i32}));
  p.set(kBufLocalCuSeqLens, buffer_bytes("prefill local_cu_seq_lens",
                                         {dcp ? 2 * int64_t{c.max_num_seqs} + 1 : 0, i32}));
  p.set(kBufRowStart, buffer_bytes("prefill row starts", {c.max_num_seqs, i32}));
  p.set(kBufKs, buffer_bytes("prefill cu_seqlen_ks", {tokens, i32}));
  p.set(kBufKe, buffer_bytes("prefill cu_seqlen_ke", {tokens, i32}));
  p.set(kBufSparseIndices,
        buffer_bytes("sparse_indices_buffer", {sparse_rows, g.num_blocks, i32}));
  p.set(kBufSparseEnd, buffer_bytes("end_buffer", {sparse_rows, i32}));
  p.set(kBufSparseColIndices, buffer_bytes("col_indices_buffer", {sparse_rows, g.topk, i32}));
  p.set(kBufZeroRowKs, buffer_bytes("zero_row_ks", {sparse_rows, i32}));
  p.set(kBufCompressedSlots,
        buffer_bytes("compressed_slot_mapping_buffer", {compressed ? tokens : 0, 8}));
  p.set(kBufExpandedSeqLens,
        buffer_bytes("expanded_seq_lens_buffer", {compressed ? rows : 0, i32}));
  p.set(kBufArange, buffer_bytes("arange_buffer", {rows + 1, i32}));
  p.set(kBufPlanLens, buffer_bytes("prefill seq_lens_cpu_upper_bound", {c.max_num_seqs, i32}));
  p.set(kBufPlanLensCpu, buffer_bytes("prefill seq_lens_cpu_upper_bound", {c.max_num_seqs, i32}),
        /*host=*/true);
  p.set(kBufChunkLists,
        buffer_bytes("the prefill chunks' lists",
                     {static_cast<int64_t>(kChunkListCount), tokens, i32}),
        /*host=*/true);
  return p.requests();
}

class IndexerBuilder final : public Builder {
 public:
  IndexerBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                 const BuilderConfig& config, Variant variant)
      : Builder(std::move(backend), spec, config),
        variant_(variant),
        paths_(decode_paths(config, variant)),
        ratio_(spec.compress_ratio()),
        width_(table_width(spec, config)),
        sparse_(variant == kV41Sparse ? sparse_geometry(spec, config) : SparseGeometry{}),
        groups_(static_cast<size_t>(config.max_num_seqs)),
        buffers_(kVariantNames[variant], config.device,
                 plan(spec, config, variant), config.allocator, config.workspace,
                 config.workspace_size) {
    init_metadata(variant == kV41Sparse ? name_vector(kFieldNames)
                                        : name_vector(kFieldNames, kV32FieldCount));
    ops::iota_i32(exec(nullptr), buffers_.as<int32_t>(kBufArange), decode_rows(config) + 1);
    if (variant == kV41Sparse) {  // torch.zeros: the layers fill them, build() only slices
      const int64_t rows = decode_rows(config);
      ops::fill_i32(exec(nullptr), buffers_.as<int32_t>(kBufSparseIndices),
                    rows * sparse_.num_blocks, 0);
      ops::fill_i32(exec(nullptr), buffers_.as<int32_t>(kBufSparseEnd), rows, 0);
      ops::fill_i32(exec(nullptr), buffers_.as<int32_t>(kBufSparseColIndices), rows * sparse_.topk,
                    0);
      ops::fill_i32(exec(nullptr), buffers_.as<int32_t>(kBufZeroRowKs), rows, 0);
    }
    // the indexer opts out of the reorder vote: None (its split uses 1 + k itself)
    set_reorder_batch_threshold(std::nullopt);
  }

  std::string draft_decode_update_refusal() const override {
    return config().decode_context_parallel_size > 1
               ? "decode context parallel (vLLM 0.33's indexer: DCP not supported yet)"
               : "";
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    Metadata& m = metadata();
    const int64_t n = c.num_reqs, T = c.num_actual_tokens;
    ops::BatchSplit s;
    if (T > 0) {
      ops::SplitOptions o;
      o.decode_threshold = paths_.next_n;
      o.require_uniform = !(paths_.use_flattening || paths_.supports_varlen);
      s = ops::split_decodes_and_prefills(c.qsl_host, n, T, c.max_query_len, o);
      check_batch(c, s);  // a refused batch leaves the previous metadata as it was
    }
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    const int32_t* lens = exec.on_cuda ? c.seq_lens->as<const int32_t>() : c.seq_lens_host;
    m.reset();
    m.set_tensor(kSeqLens, *c.seq_lens);
    m.set_int(kMaxSeqLen, c.max_seq_len);
    if (ratio_ > 1)
      m.set_tensor(kSlotMapping, compressed_slot_mapping(c, qsl, lens, exec), true);
    else
      m.set_tensor(kSlotMapping, *c.slot_mapping);
    m.set_none(kPositions);
    for (const size_t f : {kNumDecodes, kNumDecodeTokens, kNumPrefills, kNumPrefillTokens})
      m.set_int(f, 0);
    if (variant_ == kV41Sparse) {
      m.set_int(kSparseBlockKv, sparse_.block_kv);
      for (size_t f = kSparseDecodeRowKs; f < kFieldCount; ++f) m.set_none(f);
    }
    if (T == 0) return;  // vLLM returns the counts 0 and no parts (block_table None too)
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    m.set_int(kNumDecodes, nd);
    m.set_int(kNumDecodeTokens, s.num_decode_tokens);
    m.set_int(kNumPrefills, np);
    m.set_int(kNumPrefillTokens, s.num_prefill_tokens);
    m.set_tensor(kBlockTable, *c.block_table_tensor);
    if (np > 0) build_prefill(c, nd, np, qsl, lens, exec);
    if (nd > 0) build_decode(c, nd, s.num_decode_tokens, qsl, lens, exec);
    if (variant_ == kV41Sparse) build_sparse_rows(c, nd, s.num_decode_tokens, np);
  }

  /// vLLM 0.33's update_draft_decode_metadata (decode-only, one token per request, no DCP):
  /// the per-token decode fields again from the batch's block_table and seq_lens (which the
  /// speculator advanced in place): the builder-buffer tensors of `md` are rewritten, the
  /// views of the inputs need nothing. DeepGEMM's schedule is the runtime's, as at build.
  void do_update_draft_decode(const Metadata& md, const ops::Exec& exec) override {
    const int64_t nd = md.field(kNumDecodes).int_value;
    const int64_t ndt = md.field(kNumDecodeTokens).int_value;
    if (nd == 0 || ndt == 0) return;
    if (md.field(kNumPrefills).int_value != 0 || nd != ndt)
      invalid(own_name(), "'s update_draft_decode_metadata needs a decode-only batch of one token "
              "per request (vLLM asserts it), got num_decodes=", nd, ", num_decode_tokens=",
              ndt, ", num_prefills=", md.field(kNumPrefills).int_value);
    const attn::Field& bt_in = md.field(kBlockTable);
    const attn::Field& lens_in = md.field(kSeqLens);
    auto target = [&md](size_t f) -> int32_t* {
      const attn::Field& x = md.field(f);
      return x.kind == FieldKind::kTensor && x.in_builder_buffer ? x.tensor.as<int32_t>()
                                                                  : nullptr;
    };
    ops::IndexerDecodeParams p;
    p.num_decodes = p.num_decode_tokens = ndt;
    p.mode = paths_.supports_varlen ? kernels::kIndexerVarlen : kernels::kIndexerFlatten;
    p.max_decode_len = 1;
    p.block_table = bt_in.tensor.as<const int32_t>();
    p.bt_stride = bt_in.tensor.strides[0];
    p.bt_width = bt_in.tensor.shape[1];
    p.out_width = md.field(kDecodeBlockTable).tensor.shape[1];
    p.compress_ratio = ratio_;  // decode.seq_lens = seq_lens // compress_ratio
    ops::IndexerDecodeOut out;
    out.seq_lens = target(kDecodeSeqLens);
    out.block_table = target(kDecodeBlockTable);
    out.decode_lens = target(kDecodeDecodeLens);
    out.per_req_decode_lens = target(kDecodePerReqDecodeLens);
    out.indices = target(kDecodeIndices);
    // the native next_n = 1 path returns the input's own seq_lens (nothing to refresh): the
    // op writes its lengths into the unreturned buffer
    if (out.seq_lens == nullptr) out.seq_lens = buffers_.as<int32_t>(kBufDecodeSeqLens);
    const int32_t* arange = buffers_.as<int32_t>(kBufArange);
    ops::indexer_decode_tensors(exec, arange, lens_in.tensor.as<const int32_t>(), p, out);
    if (ratio_ > 1) {
      // get_compressed_slot_mapping again over the refreshed decode block table, the arange as
      // both query_start_loc and the tokens' slots (never PAD), into metadata.slot_mapping
      const Tensor& bt = md.field(kDecodeBlockTable).tensor;
      ops::V4CompressedSlotsParams sp = slot_params(bt, ndt);
      sp.slots_int64 = false;
      ops::v4_compressed_slot_mapping(exec, arange, lens_in.tensor.as<const int32_t>(), arange,
                                      bt.as<const int32_t>(), sp, ndt,
                                      md.field(kSlotMapping).tensor.as<int64_t>());
    }
  }

 private:
  const char* own_name() const { return kVariantNames[variant_]; }

  /// The decodes' longest and shortest queries.
  std::pair<int32_t, int32_t> decode_query_range(const CommonMetadata& c, int64_t nd) const {
    int32_t max_len = 0, min_len = 0;
    for (int64_t b = 0; b < nd; ++b) {
      const int32_t q = c.qsl_host[b + 1] - c.qsl_host[b];
      max_len = b == 0 ? q : std::max(max_len, q);
      min_len = b == 0 ? q : std::min(min_len, q);
    }
    return {max_len, min_len};
  }

  /// Whether the decodes take a per-token path (flattened or varlen), vLLM's use_native.
  bool per_token_decode(int32_t max_len) const {
    const bool step_ok = max_len <= 1 || native_decode(paths_.capability, max_len);
    const bool use_native = !(paths_.use_flattening || paths_.supports_varlen) &&
                            max_len <= paths_.next_n && step_ok;
    return paths_.supports_varlen || !use_native;
  }

  /// What build() refuses, checked before the metadata changes.
  void check_batch(const CommonMetadata& c, const ops::BatchSplit& s) const {
    if (s.num_prefills > 0 && c.seq_lens_host == nullptr)
      invalid("common->seq_lens_cpu is NULL; ", own_name(),
              " plans its prefill chunks from the host lengths (vLLM's "
              "seq_lens_cpu_upper_bound)");
    if (s.num_decodes > 0 && per_token_decode(decode_query_range(c, s.num_decodes).first) &&
        c.block_table_tensor->shape[1] > width_)
      invalid("common->block_table_tensor has ", c.block_table_tensor->shape[1], " columns; ",
              own_name(), " was created with block_table_width=", width_,
              " (config->block_table_width: its per-token decode table)");
  }

  bool dcp() const { return config().decode_context_parallel_size > 1; }

  /// get_compressed_slot_mapping's parameters for a (rows, stride) block table.
  ops::V4CompressedSlotsParams slot_params(const Tensor& bt, int64_t num_reqs) const {
    ops::V4CompressedSlotsParams p;
    p.num_reqs = std::min<int64_t>(bt.shape[0], num_reqs);
    p.compress_ratio = ratio_;
    p.num_states = spec().block_size / ratio_;  // kv_cache_spec.num_states (check_indexer)
    p.block_table_stride = bt.strides[0];
    p.block_table_extent = bt.shape[0] > 0 ? (bt.shape[0] - 1) * bt.strides[0] + bt.shape[1] : 0;
    p.dcp_world_size = std::max<int32_t>(config().decode_context_parallel_size, 1);
    p.cp_interleave = config().cp_kv_cache_interleave_size;
    return p;
  }

  /// build()'s compressed slot mapping (compress ratio > 1): the batch's tokens' states in the
  /// compressed indexer cache, into compressed_slot_mapping_buffer.
  Tensor compressed_slot_mapping(const CommonMetadata& c, const int32_t* qsl, const int32_t* lens,
                                 const ops::Exec& exec) {
    const Tensor& bt = *c.block_table_tensor;
    ops::V4CompressedSlotsParams p = slot_params(bt, c.num_reqs);
    p.slots_int64 = c.slot_mapping->dtype == kInt64;
    int64_t* out = buffers_.as<int64_t>(kBufCompressedSlots);
    ops::v4_compressed_slot_mapping(exec, qsl, lens, c.slot_mapping->data, bt.as<const int32_t>(),
                                    p, c.num_actual_tokens, out);
    return make_vector(out, config().device, kInt64, c.num_actual_tokens);
  }
  /// compressed_cp_interleave_size: the DCP interleave in compressed states.
  int32_t prefill_interleave() const {
    const BuilderConfig& c = config();
    return dcp() && ratio_ > 1 ? c.cp_kv_cache_interleave_size / ratio_
                               : c.cp_kv_cache_interleave_size;
  }
  /// A compressed K length's part on DCP rank `rank`.
  int32_t local(int64_t len, int32_t rank) const {
    return ops::dcp_local_len(len, config().decode_context_parallel_size, rank,
                              prefill_interleave());
  }
  Tensor device_vector(Buffer b, int64_t len) const {
    return make_vector(buffers_.get(b), config().device, kInt32, len);
  }
  int32_t* chunk_list(size_t field) const {
    return buffers_.as<int32_t>(kBufChunkLists) +
           static_cast<int64_t>(field - kPrefillChunkTokenStart) * config().max_num_batched_tokens;
  }

  /// build()'s prefill part: _split_indexer_prefill_chunks and build_prefill_chunk_metadata.
  void build_prefill(const CommonMetadata& c, int64_t nd, int64_t np, const int32_t* qsl,
                     const int32_t* lens, const ops::Exec& exec) {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    const int32_t* hq = c.qsl_host + nd;
    // vLLM 0.33 plans the chunks from seq_lens_cpu_upper_bound // compress_ratio (the bound is
    // exact for a prefilling row, optimistic for an async spec row a uniform split made a
    // prefill); the DCP-local sums come from the exact lengths (the host's exact lengths, else
    // the bound), compressed the same way
    const int32_t* bound = c.seq_lens_upper_bound() + nd;  // checked by check_batch
    const int32_t* exact = c.host_seq_lens() + nd;
    std::vector<int32_t> qlens(static_cast<size_t>(np)), klens(static_cast<size_t>(np)),
        kexact(static_cast<size_t>(np));
    for (int64_t k = 0; k < np; ++k) {
      qlens[k] = hq[k + 1] - hq[k];
      klens[k] = bound[k] / ratio_;
      kexact[k] = exact[k] / ratio_;
    }
    const int32_t* hs = klens.data();
    const int32_t* hx = kexact.data();
    // CPU_V4_INDEXER plans one chunk of every prefill (no workspace or logits budget)
    const bool one_chunk = variant_ == kCpuV4;
    constexpr int64_t kNoBudget = std::numeric_limits<int64_t>::max();
    const int64_t W = one_chunk ? kNoBudget : prefill_buffer_rows(cfg, ratio_);
    const int64_t L = one_chunk ? kNoBudget : kMaxLogitsMb * 1024 * 1024 / 4;
    const int64_t G = ops::indexer_prefill_groups(qlens.data(), hs, np, W, L,
                                                  sparse_.min_split_seq_len, groups_.data());
    const int32_t world = cfg.decode_context_parallel_size;
    int64_t chunks = 0, longest = 0;
    // max_prefill_seq_len: the bound's longest (uncompressed)
    for (int64_t k = 0; k < np; ++k) longest = std::max<int64_t>(longest, bound[k]);
    for (int64_t g = 0; g < G; ++g) {
      const ops::IndexerGroup& gr = groups_[g];
      // the group's K rows (gr.n is the split's sum, clamped by min_split_seq_len)
      int64_t total = 0, max_k = 0, local_total = 0, max_local = 0;
      for (int64_t k = gr.start; k < gr.end; ++k) total += hs[k];
      if (total == 0) continue;  // build_prefill_chunk_metadata returns None
      for (int64_t k = gr.start; k < gr.end; ++k) max_k = std::max<int64_t>(max_k, hs[k]);
      if (world > 1) {
        for (int32_t r = 0; r < world; ++r) {
          int64_t sum = 0;
          for (int64_t k = gr.start; k < gr.end; ++k) sum += local(hx[k], r);
          if (r == cfg.dcp_rank) local_total = sum;
          max_local = std::max(max_local, sum);
        }
      } else {
        local_total = max_local = total;
      }
      const int64_t max_q = std::max<int64_t>(1, L / gr.n);
      const int64_t base = hq[gr.start];
      for (int64_t off = 0; off < gr.m; off += max_q) {
        const int64_t k = chunks++;
        chunk_list(kPrefillChunkTokenStart)[k] = static_cast<int32_t>(base + off);
        chunk_list(kPrefillChunkTokenEnd)[k] =
            static_cast<int32_t>(base + std::min(off + max_q, gr.m));
        chunk_list(kPrefillChunkReqStart)[k] = static_cast<int32_t>(nd + gr.start);
        chunk_list(kPrefillChunkReqEnd)[k] = static_cast<int32_t>(nd + gr.end);
        chunk_list(kPrefillChunkCuOffset)[k] = static_cast<int32_t>(gr.start + g);
        chunk_list(kPrefillChunkTotalSeqLens)[k] = static_cast<int32_t>(total);
        chunk_list(kPrefillChunkMaxSeqlenK)[k] = static_cast<int32_t>(max_k);
        chunk_list(kPrefillChunkSkipKvGather)[k] = off > 0;
        chunk_list(kPrefillChunkLocalTotalSeqLens)[k] = static_cast<int32_t>(local_total);
        chunk_list(kPrefillChunkMaxLocalTotalSeqLens)[k] = static_cast<int32_t>(max_local);
      }
    }
    ops::IndexerPrefillParams p;
    p.num_decodes = nd;
    p.num_prefills = np;
    p.workspace_size = W;
    p.max_logits_elems = L;
    p.dcp_size = world;
    p.dcp_rank = cfg.dcp_rank;
    p.interleave = prefill_interleave();
    p.min_split_seq_len = sparse_.min_split_seq_len;
    p.compress_ratio = ratio_;
    p.plan_seq_lens = upper_bound_where_run(exec, c, nd, np, buffers_.as<int32_t>(kBufPlanLensCpu),
                                            buffers_.as<int32_t>(kBufPlanLens));
    ops::IndexerPrefillArrays out;
    out.cu_seq_lens = buffers_.as<int32_t>(kBufCuSeqLens);
    out.local_cu_seq_lens = world > 1 ? buffers_.as<int32_t>(kBufLocalCuSeqLens) : nullptr;
    out.row_start = buffers_.as<int32_t>(kBufRowStart);
    out.cu_seqlen_ks = buffers_.as<int32_t>(kBufKs);
    out.cu_seqlen_ke = buffers_.as<int32_t>(kBufKe);
    ops::indexer_prefill_arrays(exec, qsl, lens, p, out);
    const int64_t tokens = c.qsl_host[nd + np] - c.qsl_host[nd];
    m.set_int(kPrefillMaxPrefillSeqLen, longest);
    m.set_none(kPrefillRowShardSizes);
    m.set_int(kPrefillNumChunks, chunks);
    m.set_tensor(kPrefillCuSeqlenKs, device_vector(kBufKs, tokens), true);
    m.set_tensor(kPrefillCuSeqlenKe, device_vector(kBufKe, tokens), true);
    m.set_tensor(kPrefillCuSeqLens, device_vector(kBufCuSeqLens, np + G), true);
    m.set_tensor(kPrefillLocalCuSeqLens,
                 device_vector(world > 1 ? kBufLocalCuSeqLens : kBufCuSeqLens, np + G), true);
    for (size_t f = kPrefillChunkTokenStart; f < kV32FieldCount; ++f)
      m.set_tensor(f, make_vector(chunk_list(f), Device{}, kInt32, chunks), true);
  }

  /// build()'s decode part (_prepare_decode_tensors, _prepare_global_decode_seq_lens, the
  /// varlen kernel, the DCP localization).
  void build_decode(const CommonMetadata& c, int64_t nd, int64_t ndt, const int32_t* qsl,
                    const int32_t* lens, const ops::Exec& exec) {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    const auto [max_len, min_len] = decode_query_range(c, nd);
    const int32_t next_n = paths_.next_n;
    const bool use_native = !per_token_decode(max_len);
    const Tensor& bt = *c.block_table_tensor;
    ops::IndexerDecodeParams p;
    p.num_decodes = nd;
    p.num_decode_tokens = ndt;
    p.max_decode_len = max_len;
    p.dcp_size = cfg.decode_context_parallel_size;
    p.dcp_rank = cfg.dcp_rank;
    p.interleave = cfg.cp_kv_cache_interleave_size;
    p.block_table = bt.as<const int32_t>();
    p.bt_stride = bt.strides[0];
    p.bt_width = bt.shape[1];
    p.out_width = width_;
    ops::IndexerDecodeOut out;
    out.per_req_decode_lens = buffers_.as<int32_t>(kBufPerReqDecodeLens);
    out.decode_lens = buffers_.as<int32_t>(kBufDecodeLens);
    const bool expanded = paths_.supports_varlen || !use_native;
    bool seq_in_buffer = true;
    if (paths_.supports_varlen) {
      p.mode = kernels::kIndexerVarlen;
    } else if (!use_native) {
      p.mode = kernels::kIndexerFlatten;
      const bool adaptive = cfg.enable_adaptive_verification && cfg.num_speculative_tokens > 0;
      p.uniform_kernel = (nd == 1 || !adaptive) && min_len == max_len &&
                         nd * static_cast<int64_t>(max_len) == ndt;
    } else {
      p.mode = next_n > 1 ? kernels::kIndexerNative2D : kernels::kIndexerNative1;
      seq_in_buffer = next_n > 1 || dcp();
    }
    if (expanded) {  // check_batch made sure the rows fit
      out.block_table = buffers_.as<int32_t>(kBufExpandedBlockTable);
      if (paths_.supports_varlen) out.indices = buffers_.as<int32_t>(kBufDecodeIndices);
    }
    // compress ratio > 1 on the native next_n = 1 path (not a buffer view in vLLM): the
    // compressed lengths go to expanded_seq_lens_buffer, num_decode_tokens rows of them
    const bool compressed_copy = ratio_ > 1 && p.mode == kernels::kIndexerNative1;
    p.compress_ratio = ratio_;
    if (compressed_copy)
      out.seq_lens = buffers_.as<int32_t>(kBufExpandedSeqLens);
    else if (seq_in_buffer)
      out.seq_lens = buffers_.as<int32_t>(kBufDecodeSeqLens);
    // the expanded global lengths: DCP on a per-token path with queries longer than 1
    const bool global_expanded = dcp() && expanded && max_len > 1;
    if (global_expanded) out.global_seq_lens = buffers_.as<int32_t>(kBufGlobalSeqLens);
    ops::indexer_decode_tensors(exec, qsl, lens, p, out);

    const Device dev = cfg.device;
    // decode.seq_lens: 2-D (rows, next_n) as DeepGEMM takes it
    int64_t rows = nd, cols = 1;
    if (expanded) rows = ndt;
    if (p.mode == kernels::kIndexerNative2D) cols = max_len;
    if (compressed_copy)
      m.set_tensor(kDecodeSeqLens,
                   make_matrix(buffers_.get(kBufExpandedSeqLens), dev, kInt32, ndt, 1, 1), true);
    else if (seq_in_buffer)
      m.set_tensor(kDecodeSeqLens,
                   make_matrix(buffers_.get(kBufDecodeSeqLens), dev, kInt32, rows, cols, cols),
                   true);
    else
      m.set_tensor(kDecodeSeqLens, make_matrix(c.seq_lens->data, c.seq_lens->device, kInt32,
                                               nd, 1, 1));
    if (expanded) {
      m.set_tensor(kDecodeBlockTable, make_matrix(buffers_.get(kBufExpandedBlockTable), dev,
                                                  kInt32, ndt, width_, width_),
                   true);
      m.set_tensor(kDecodeDecodeLens, device_vector(kBufDecodeLens, ndt), true);
    } else {
      m.set_tensor(kDecodeBlockTable, rows_between(bt, 0, nd));
      m.set_tensor(kDecodeDecodeLens, device_vector(kBufDecodeLens, nd), true);
    }
    m.set_bool(kDecodeRequiresPadding, !expanded && min_len != max_len);
    if (variant_ == kCpuV4) {
      // no DeepGEMM on the CPU platform: vLLM returns the whole (num_sms + 1, 2) buffer
      // (torch.empty, never written)
      m.set_tensor(kDecodeScheduleMetadata,
                   make_matrix(buffers_.get(kBufSchedule), dev, kInt32,
                               std::max<int64_t>(cfg.num_sms, 0) + 1, 2, 2),
                   true);
    } else if (cfg.num_sms > 0) {
      // get_paged_mqa_logits_metadata's (slots + 1, 2) rows of the persistent buffer (DeepGEMM
      // fills them); SM90's next_n = 4 schedules one task per 2-CTA cluster
      const int64_t slots = cfg.num_sms / (cols == 4 && paths_.capability / 10 == 9 ? 2 : 1);
      m.set_tensor(kDecodeScheduleMetadata,
                   make_matrix(buffers_.get(kBufSchedule), dev, kInt32, slots + 1, 2, 2), true);
    } else {
      m.set_none(kDecodeScheduleMetadata);
    }
    if (!dcp())
      m.set_none(kDecodeGlobalSeqLens);
    else if (global_expanded)
      m.set_tensor(kDecodeGlobalSeqLens, device_vector(kBufGlobalSeqLens, ndt), true);
    else
      m.set_tensor(kDecodeGlobalSeqLens, rows_between(*c.seq_lens, 0, nd));
    m.set_tensor(kDecodePerReqDecodeLens, device_vector(kBufPerReqDecodeLens, nd), true);
    m.set_bool(kDecodeIsUniform, min_len == max_len);
    m.set_int(kDecodeWriteMaxDecodeLen, max_len);
    if (paths_.supports_varlen)
      m.set_tensor(kDecodeIndices, device_vector(kBufDecodeIndices, ndt), true);
    else
      m.set_none(kDecodeIndices);
  }

  /// DEEPSEEK_V41_SPARSE_INDEXER's rows: the decode rows [0, num_decode_tokens) (the varlen
  /// layout: one row per decode token) and the prefill tokens' rows, views of the builder's
  /// zeroed scratch (sparse_indices, end, col_indices) and, for the decodes, zero_row_ks. The
  /// other row fields alias the base metadata's (docs/backends/sparse_mla.md).
  void build_sparse_rows(const CommonMetadata& c, int64_t nd, int64_t ndt, int64_t np) {
    Metadata& m = metadata();
    const Device dev = config().device;
    const int64_t nsb = sparse_.num_blocks, topk = sparse_.topk;
    auto rows = [&](Buffer b, int64_t start, int64_t stop, int64_t width) {
      int32_t* base = buffers_.as<int32_t>(b) + start * width;
      return width == 1 ? make_vector(base, dev, kInt32, stop - start)
                        : make_matrix(base, dev, kInt32, stop - start, width, width);
    };
    if (nd > 0) {
      m.set_tensor(kSparseDecodeRowKs, rows(kBufZeroRowKs, 0, ndt, 1), true);
      m.set_tensor(kSparseDecodeSparseIndices, rows(kBufSparseIndices, 0, ndt, nsb), true);
      m.set_tensor(kSparseDecodeEnd, rows(kBufSparseEnd, 0, ndt, 1), true);
      m.set_tensor(kSparseDecodeColIndices, rows(kBufSparseColIndices, 0, ndt, topk), true);
    }
    if (np > 0) {
      const int64_t first = c.qsl_host[nd], last = c.qsl_host[nd + np];
      m.set_tensor(kSparsePrefillSparseIndices, rows(kBufSparseIndices, first, last, nsb), true);
      m.set_tensor(kSparsePrefillEnd, rows(kBufSparseEnd, first, last, 1), true);
      m.set_tensor(kSparsePrefillColIndices, rows(kBufSparseColIndices, first, last, topk), true);
    }
  }

  Variant variant_;
  DecodePaths paths_;
  int32_t ratio_ = 1;  ///< kv_cache_spec.tokens_per_state (vLLM's compress_ratio)
  int64_t width_ = 0;
  SparseGeometry sparse_;
  std::vector<ops::IndexerGroup> groups_;
  PersistentBuffers buffers_;
};

int32_t indexer_cudagraph_support(const BackendDescriptor& desc, const KvCacheSpec&,
                                  const BuilderConfig& c) {
  const DecodePaths d = decode_paths(c, desc.variant);
  return d.supports_varlen || d.use_flattening ? kCgAlways : kCgUniformBatch;
}

void check_indexer(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& c) {
  check_spec_kind(d, spec);
  // vLLM 0.33 runs the indexer on the backend's kernel blocks (a larger cache block is split by
  // the worker, whose builder sees the kernel block). At compress ratio 1 nothing libattn
  // computes reads the block size, so a multiple is taken as that cache block; a compressed
  // cache's slots count kv_cache_spec.num_states = block_size // ratio states a block, so the
  // block size must be the kernel block itself.
  const int32_t kernel_block = kernel_block_size(d.variant, c);
  const int32_t ratio = spec.compress_ratio();
  if (spec.block_size <= 0 || spec.block_size % kernel_block != 0)
    fail(Status::kUnsupported, d.name, " runs kernel block size ", kernel_block,
         " (vLLM 0.33): kv_cache_spec->block_size=", spec.block_size,
         " is not a multiple of it");
  if (ratio > 1 && spec.block_size != kernel_block)
    fail(Status::kUnsupported, d.name, " builds a compressed indexer cache (kv_cache_spec->"
         "tokens_per_state=", ratio, ") on its kernel blocks of ", kernel_block,
         " tokens: kv_cache_spec->block_size=", spec.block_size, " must be that block");
  if (ratio > spec.block_size)
    invalid("kv_cache_spec->tokens_per_state=", ratio, " exceeds kv_cache_spec->block_size=",
            spec.block_size, " (a block would hold no compressed state)");
  if (c.attn_type != kAttnDecoder)
    fail(Status::kUnsupported, d.name,
         " runs decoder self-attention only (config->attn_type=", c.attn_type, ")");
  if (c.decode_context_parallel_size > 1 && c.cp_kv_cache_interleave_size <= 0)
    invalid("config->cp_kv_cache_interleave_size=", c.cp_kv_cache_interleave_size,
            " must be positive");
  // each compressed state must live on one rank (vLLM raises NotImplementedError)
  if (c.decode_context_parallel_size > 1 && ratio > 1 &&
      c.cp_kv_cache_interleave_size % ratio != 0)
    fail(Status::kUnsupported, "DCP with sparse indexer KV compression (kv_cache_spec->"
         "tokens_per_state=", ratio, ") requires config->cp_kv_cache_interleave_size to be a "
         "multiple of it, got ", c.cp_kv_cache_interleave_size);
  if (c.platform_rocm)
    fail(Status::kUnsupported, d.name, " builds vLLM 0.33's CUDA paths (config->platform_rocm="
         "1: ROCm's kernel block sizes and MXFP4 cache are not covered)");
  if (c.prefill_context_parallel_size > 1)
    fail(Status::kUnsupported, d.name, " builds one rank without prefill context parallelism "
         "(config->prefill_context_parallel_size=", c.prefill_context_parallel_size, ")");
  // dsa_indexer_uses_fp4: the MXFP4 indexer cache needs compute capability 10.x on CUDA (and
  // the CPU platform has none)
  if (c.indexer_kv_mxfp4 && capability(c, d.variant) / 10 != 10)
    fail(Status::kUnsupported, "indexer_kv_dtype='mxfp4' requires Blackwell datacenter GPUs "
         "(sm_10x, e.g. B200/GB200); sm_120 (consumer Blackwell) and earlier architectures are "
         "not supported (config->indexer_kv_mxfp4=1, device capability ",
         capability(c, d.variant), ")");
}

/// DeepseekV41SparseIndexerMetadataBuilder.__init__'s refusals, in its order, after the base
/// builder's. libattn cannot probe the kernel libraries: with compute capability 10.x it takes
/// DeepGEMM >= 2.8 (fp8_fp4_sparse_mqa_logits), the varlen paged MQA logits layout and
/// DeepSelect (whose SM100 stride alignment is 1024 B in, 32 B out) as installed.
void check_v41_sparse(const BackendDescriptor& d, const KvCacheSpec& spec,
                      const BuilderConfig& c) {
  check_indexer(d, spec, c);
  const char* prefix = "attention_config.indexer_sparse_logits";
  if (c.candidate_block_size <= 0 || c.candidate_topk_blocks <= 0)
    fail(Status::kUnsupported, prefix, " requires a two-level (candidate block) indexer model such as "
            "DeepSeek-V4.1 (config->candidate_block_size=", c.candidate_block_size,
            ", config->candidate_topk_blocks=", c.candidate_topk_blocks, ")");
  if (!c.indexer_kv_mxfp4)
    fail(Status::kUnsupported, prefix, " requires the MXFP4 indexer cache (attention_config.indexer_kv_dtype="
            "'mxfp4'): the sparse kernels take UE8M0-packed granularity-32 scales "
            "(config->indexer_kv_mxfp4=0)");
  if (resolved_device_capability(c) / 10 != 10)
    fail(Status::kUnsupported, prefix, " requires an SM100-class GPU (device capability ",
         resolved_device_capability(c), ")");
  if (c.decode_context_parallel_size > 1)
    fail(Status::kUnsupported, prefix, " is not supported with decode/prefill context parallel "
         "(config->decode_context_parallel_size=", c.decode_context_parallel_size, ")");
  if (c.sparse_indexer_topk_backend != kSparseIndexerTopkAuto &&
      c.sparse_indexer_topk_backend != kSparseIndexerTopkDeepSelect)
    invalid(prefix, " uses DeepSelect for the top-k; config->sparse_indexer_topk_backend=",
            c.sparse_indexer_topk_backend, " (neither AUTO nor DEEP_SELECT) is not supported "
            "with it");
  const SparseGeometry g = sparse_geometry(spec, c);
  if (g.block_kv == 0)
    invalid("config->candidate_block_size=", c.candidate_block_size, " is not a multiple of any "
            "supported sparse_block_kv (16, 8)");
  if (spec.block_size % g.block_kv != 0)
    invalid(prefix, ": indexer cache pages (", spec.block_size, " tokens) must be a multiple "
            "of ", g.block_kv, " tokens");
  const int64_t cols = g.num_blocks * g.block_kv;
  if (cols >= (int64_t{1} << 23) || (cols * 2) % 1024 != 0)
    invalid("DeepSelect needs the sparse logits row (", cols, " bf16 columns, ", cols * 2,
            " B) to be 1024B-aligned (candidate_topk_blocks=", c.candidate_topk_blocks,
            ", candidate_block_size=", c.candidate_block_size, ")");
  if (g.topk > 4096 || (g.topk * 4) % 32 != 0)
    invalid("DeepSelect needs topk <= 4096 with a 32B-aligned int32 output row, got topk=",
            g.topk, " (kv_cache_spec->index_topk)");
}

std::vector<BufferRequest> indexer_plan(const BackendDescriptor& d, const KvCacheSpec& spec,
                                        const BuilderConfig& c) {
  return plan(spec, c, static_cast<Variant>(d.variant));
}

std::unique_ptr<Builder> create_indexer(const BackendDescriptor& d,
                                        std::shared_ptr<const Backend> backend,
                                        const KvCacheSpec& spec, const BuilderConfig& c) {
  return std::make_unique<IndexerBuilder>(std::move(backend), spec, c,
                                          static_cast<Variant>(d.variant));
}

}  // namespace

#define INDEXER_BACKEND(symbol, variant, check)                                            \
  extern const BackendDescriptor symbol;                                                    \
  const BackendDescriptor symbol{kVariantNames[variant], kVllmRelease, kv_kind_bit(kKvMla), \
                                 variant,                indexer_cudagraph_support,         \
                                 check,                  indexer_plan,                      \
                                 create_indexer};

INDEXER_BACKEND(kDeepseekV32IndexerBackend, kV32, check_indexer)
INDEXER_BACKEND(kDeepseekV41SparseIndexerBackend, kV41Sparse, check_v41_sparse)
INDEXER_BACKEND(kDeepseekV4IndexerBackend, kV4, check_indexer)
INDEXER_BACKEND(kDeepseekV41IndexerBackend, kV41, check_indexer)
INDEXER_BACKEND(kCpuV4IndexerBackend, kCpuV4, check_indexer)

}  // namespace attn::backends
