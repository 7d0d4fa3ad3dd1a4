// The MLA family: vLLM 0.33's MLACommonMetadataBuilder.build() (the decode/prefill split or the
// non-causal uniform block, the decode metadata with DCP totals, the prefill metadata with its
// chunked context) and the variants' class attributes and _build_decode overrides. Nested dataclasses are flattened:
// MLACommonDecodeMetadata fields get a "decode_" prefix, MLACommonPrefillMetadata fields a
// "prefill_" prefix and its ChunkedContextMetadata fields "prefill_chunked_context_"; a part
// vLLM leaves None (no decodes, no prefills, no context) leaves its fields None.
//
// Where vLLM calls an external library the metadata holds that call's inputs, named
// "decode_scheduler_<argument>": FlashAttention-3's get_scheduler_metadata (FLASH_ATTN_MLA) and
// FlashMLA's get_mla_metadata / get_mla_metadata_dense_fp8 (FLASHMLA, with the persistent
// buffers vLLM copies the fp8 schedule into under full graphs); FlashInfer's prefill plan()
// inputs ("prefill_*") when the prefill backend is FLASHINFER;
// TRTLLM_RAGGED and TOKENSPEED_MLA read prefill_query_seq_lens. The chunked-prefill workspace
// itself (tokens x head_size of the model dtype) is the runtime's: libattn reports its size.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/flash_attn.h"
#include "backends/mla_rocm_aiter.h"
#include "backends/persistent_copy.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/per_layer_params.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"
#include "ops/cpu_mla_ops.h"
#include "ops/state_space_ops.h"

namespace attn::backends {
namespace {

/// vLLM's QueryLenSupport: what the decode kernel takes (sets require_uniform and whether
/// spec-decode requests count as decodes).
enum class QueryLenSupport { kSingleOnly, kUniform, kVarlen };

enum class Variant {
  kFlashMla,
  kFlashAttnMla,
  kCutlassMla,
  kFlashInferMla,
  kTritonMla,
  kTokenspeedMla,
  kCpuMla,  ///< vLLM 0.33's CPU platform MLA backends (dense; before the sparse family).
  kAmxMla,
  kRocmAiterMla,    ///< vLLM 0.33's AiterMLAMetadataBuilder (dense; before the sparse family).
  kFlashMlaSparse,  ///< The sparse family (vLLM 0.33's SparseMLACommonMetadataBuilder).
  kFlashAttnMlaSparse,
  kFlashInferMlaSparse,        ///< FlashInferMLASparseTRTLLMMetadataBuilder (10.x).
  kFlashInferMlaSparseSm120,   ///< FlashInferMLASparseMetadataBuilder (12.x).
  kFlashAttnMlaSparseFa4,      ///< FlashAttnMLASparseFA4MetadataBuilder (the TRT-LLM builder).
  kFlashInferMlaSparseSm90,    ///< FlashInferMLASparseSM90Builder (9.x; its FlashInfer plan).
};

bool is_sparse(Variant v) { return v >= Variant::kFlashMlaSparse; }
bool is_cpu_variant(Variant v) { return v == Variant::kCpuMla || v == Variant::kAmxMla; }
/// The FlashInferMLASparseMetadataBuilder family (its threshold table, varlen DCP decodes).
bool fi_sparse_builder(Variant v) {
  return v == Variant::kFlashInferMlaSparse || v == Variant::kFlashInferMlaSparseSm120 ||
         v == Variant::kFlashAttnMlaSparseFa4 || v == Variant::kFlashInferMlaSparseSm90;
}
/// FlashInferMLASparseTRTLLMMetadataBuilder and its FA4 subclass: varlen CUDA graph bound and
/// draft decode updates.
bool trtllm_sparse_builder(Variant v) {
  return v == Variant::kFlashInferMlaSparse || v == Variant::kFlashAttnMlaSparseFa4;
}

/// The class attributes of one variant (vLLM 0.33's builder and backend classes).
struct VariantInfo {
  Variant variant;
  std::string name;
  int32_t cudagraph_support;
  QueryLenSupport query_len_support;
  int32_t reorder_batch_threshold;
  int32_t kernel_block_size;                ///< block_size must be a multiple (1: any).
  std::vector<int32_t> kernel_block_sizes;  ///< Alternatives (FLASHINFER_MLA: 32 or 64).
  std::vector<int32_t> cache_dtypes;        ///< Accepted config->cache_dtype values.
  bool supports_non_causal_multi_token_decode;  ///< The builder's class attribute.
};

const VariantInfo& info(Variant v) {
  static const VariantInfo infos[] = {
      {Variant::kFlashMla,
       "FLASHMLA",
       kCgUniformBatch,
       QueryLenSupport::kUniform,
       128,
       64,
       {},
       {kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16, kKvDtypeFp8E4m3},
       false},
      {Variant::kFlashAttnMla,
       "FLASH_ATTN_MLA",
       kCgUniformBatch,
       QueryLenSupport::kVarlen,
       512,
       16,
       {},
       {kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16},
       false},
      {Variant::kCutlassMla,
       "CUTLASS_MLA",
       kCgUniformSingleTokenDecode,
       QueryLenSupport::kSingleOnly,
       1,
       128,
       {},
       {kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16, kKvDtypeFp8E4m3},
       false},
      {Variant::kFlashInferMla,
       "FLASHINFER_MLA",
       kCgAlways,
       QueryLenSupport::kVarlen,
       1,
       1,
       {32, 64},
       {kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16, kKvDtypeFp8E4m3},
       true},
      {Variant::kTritonMla,
       "TRITON_MLA",
       kCgUniformBatch,
       QueryLenSupport::kUniform,
       1,
       1,  // vLLM selects it for multiples of 16; its builder does not depend on the size
       {},
       {kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16, kKvDtypeFp8E4m3},
       true},
      // vLLM 0.33's TokenspeedMLAMetadataBuilder (mla/tokenspeed_mla.py): the base builder with
      // UNIFORM queries, varlen DCP and non-causal multi-token decode; its backend takes fp8
      // caches only ("fp8", "fp8_e4m3") and kernel blocks of 32 or 64.
      {Variant::kTokenspeedMla,
       "TOKENSPEED_MLA",
       kCgUniformBatch,
       QueryLenSupport::kUniform,
       1,
       1,
       {32, 64},
       {kKvDtypeFp8E4m3},
       true},
      // vLLM 0.33's CPU platform MLA backends (mla/cpu_mla.py, mla/amx_mla.py): the base
      // MLACommonMetadataBuilder (NEVER, SINGLE_ONLY), CPU_MLA's kernel block 16 and "auto"
      // caches only; AMX_MLA's own builder (extra decode/prefill fields), blocks of multiples of
      // 32, the base backend's caches ("auto", "float16", "bfloat16").
      {Variant::kCpuMla,
       "CPU_MLA",
       kCgNever,
       QueryLenSupport::kSingleOnly,
       1,
       16,
       {},
       {kKvDtypeAuto},
       false},
      {Variant::kAmxMla,
       "AMX_MLA",
       kCgNever,
       QueryLenSupport::kSingleOnly,
       1,
       32,
       {},
       {kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16},
       false},
      // vLLM 0.33's AiterMLAMetadataBuilder (mla/rocm_aiter_mla.py): UNIFORM_BATCH, UNIFORM
      // queries (VARLEN under adaptive varlen verify), MultipleOf(1) blocks, the fp8 caches
      // too, non-causal multi-token decode; see docs/backends/rocm.md.
      {Variant::kRocmAiterMla,
       "ROCM_AITER_MLA",
       kCgUniformBatch,
       QueryLenSupport::kUniform,
       1,
       1,
       {},
       {kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16, kKvDtypeFp8E4m3, kKvDtypeFp8E5m2},
       true},
      // FlashMLASparseMetadataBuilder: its threshold comes from the heads table
      // (sparse_reorder_threshold); MultipleOf(64) blocks; "fp8" is "fp8_ds_mla"; the builder
      // never reads common.causal.
      {Variant::kFlashMlaSparse,
       "FLASHMLA_SPARSE",
       kCgUniformBatch,
       QueryLenSupport::kUniform,  // require_uniform_decodes = True
       256,
       64,
       {},
       {kKvDtypeAuto, kKvDtypeBfloat16, kKvDtypeFp8E4m3},
       false},
      // FlashAttnMLASparseMetadataBuilder: SparseMLACommonMetadata only, varlen decodes,
      // MultipleOf(64), FP16/BF16 caches (supports_combination).
      {Variant::kFlashAttnMlaSparse,
       "FLASH_ATTN_MLA_SPARSE",
       kCgUniformBatch,
       QueryLenSupport::kVarlen,
       256,
       64,
       {},
       {kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16},
       false},
      // FlashInferMLASparseMetadataBuilder (SM100's FLASHINFER_MLA_SPARSE): SparseMLACommonMetadata
      // only, varlen decodes, MultipleOf(32); "fp8" is fp8_ds_mla.
      {Variant::kFlashInferMlaSparse,
       "FLASHINFER_MLA_SPARSE",
       kCgUniformBatch,
       QueryLenSupport::kVarlen,
       1024,
       32,
       {},
       {kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16, kKvDtypeFp8E4m3},
       false},
      // FLASHINFER_MLA_SPARSE_SM120: the base FlashInfer sparse builder; bf16 models, "auto" or
      // fp8 (fp8_ds_mla) caches, MultipleOf(64), index_topk 2048.
      {Variant::kFlashInferMlaSparseSm120,
       "FLASHINFER_MLA_SPARSE_SM120",
       kCgUniformBatch,
       QueryLenSupport::kVarlen,
       1024,
       64,
       {},
       {kKvDtypeAuto, kKvDtypeFp8E4m3},
       false},
      // FLASH_ATTN_MLA_SPARSE_FA4: the TRT-LLM builder; bf16 models and caches, MultipleOf(64),
      // index_topk a multiple of 128.
      {Variant::kFlashAttnMlaSparseFa4,
       "FLASH_ATTN_MLA_SPARSE_FA4",
       kCgUniformBatch,
       QueryLenSupport::kVarlen,
       1024,
       64,
       {},
       {kKvDtypeAuto, kKvDtypeBfloat16},
       false},
      // FLASHINFER_MLA_SPARSE_SM90: the base FlashInfer sparse builder plus the plan inputs of
      // FlashInfer's SM90 BatchMLAPagedAttentionWrapper; bf16 models, "auto", bf16 or fp8
      // (fp8_e4m3) caches, MultipleOf(64), compute capability 9.x.
      {Variant::kFlashInferMlaSparseSm90,
       "FLASHINFER_MLA_SPARSE_SM90",
       kCgUniformBatch,
       QueryLenSupport::kVarlen,
       1024,
       64,
       {},
       {kKvDtypeAuto, kKvDtypeBfloat16, kKvDtypeFp8E4m3},
       false},
  };
  return infos[static_cast<int>(v)];
}

constexpr int32_t kMlaHeadSize = 576;  // MLACommonBackend.get_supported_head_sizes()

int32_t kv_lora_rank(const BuilderConfig& c) {
  return c.mla_kv_lora_rank ? c.mla_kv_lora_rank : 512;
}
int32_t qk_rope_head_dim(const BuilderConfig& c) {
  return c.mla_qk_rope_head_dim ? c.mla_qk_rope_head_dim : 64;
}
int32_t qk_nope_head_dim(const BuilderConfig& c) {
  return c.mla_qk_nope_head_dim ? c.mla_qk_nope_head_dim : 128;
}
int32_t v_head_dim(const BuilderConfig& c) { return c.mla_v_head_dim ? c.mla_v_head_dim : 128; }

bool is_fp8_cache(const BuilderConfig& c) {
  return c.cache_dtype == kKvDtypeFp8E4m3 || c.cache_dtype == kKvDtypeFp8E5m2;
}

/// FLASHMLA_SPARSE's MIN_HEADS_FOR_BF16_PREFILL: below it an fp8 cache runs the mixed batch.
constexpr int32_t kMinHeadsForBf16Prefill = 32;

/// FLASHMLA_SPARSE with an fp8_ds_mla cache: FlashMLASparseMetadata's fp8_extra_metadata.
bool flashmla_sparse_fp8(Variant v, const BuilderConfig& c) {
  return v == Variant::kFlashMlaSparse && is_fp8_cache(c);
}

/// vLLM 0.33's FlashMLASparseMetadataBuilder threshold: by this rank's query heads, from the
/// table of the device family (10.x: {8, 16, 32: 128, 64: 256, 128: 1024}, else 1024; below:
/// {16, 32: 128, 64: 256, 128: 256}, else 256).
///
/// FLASH_ATTN_MLA_SPARSE always takes the first (9.x) table, FLASHINFER_MLA_SPARSE the 10.x one.
int32_t sparse_reorder_threshold(Variant v, const BuilderConfig& c) {
  const int32_t h = c.num_attention_heads;
  const bool sm100_table = fi_sparse_builder(v) ||
                           (v == Variant::kFlashMlaSparse && resolved_device_capability(c) / 10 == 10);
  if (sm100_table) {
    if (h == 8 || h == 16 || h == 32) return 128;
    return h == 64 ? 256 : 1024;
  }
  if (h == 16 || h == 32) return 128;
  return 256;
}

/// FlashMLASparseImpl._compute_fp8_decode_padded_heads: the fp8 decode kernel takes 64 or 128.
int32_t fp8_decode_padded_heads(int64_t heads) { return heads <= 64 ? 64 : 128; }

/// vLLM 0.33's get_prefill_workspace_size: max_model_len * sparse_mla_prefill_workspace_factor
/// (5, the attention config's default; not a libattn input).
int64_t sparse_prefill_workspace_size(const BuilderConfig& c) {
  return static_cast<int64_t>(c.max_model_len) * 5;
}

/// vLLM's supports_dcp_with_varlen argument of the variant's builder.
bool supports_dcp_with_varlen(Variant v, const BuilderConfig& c) {
  if (v == Variant::kFlashAttnMla) return c.cp_kv_cache_interleave_size == 1;
  return v == Variant::kFlashInferMla || v == Variant::kTokenspeedMla;
}

/// The alignment of a split context chunk (build_mla_chunked_context_metadata's
/// chunk_alignment, and align_mla_chunked_context_workspace_size's alignment): the block size,
/// lcm'd with decode_context_parallel_size * cp_kv_cache_interleave_size under DCP.
int64_t mla_chunk_alignment(const KvCacheSpec& spec, const BuilderConfig& c) {
  int64_t a = spec.block_size;
  if (c.decode_context_parallel_size > 1)
    a = std::lcm(a, static_cast<int64_t>(c.decode_context_parallel_size) *
                        std::max(1, c.cp_kv_cache_interleave_size));
  return a;
}

/// vLLM 0.33's MLACommonMetadataBuilder.determine_chunked_prefill_workspace_size:
/// min(max(8 * max_model_len, 4 * max_num_seqs * block_size), 65536) tokens, rounded up by
/// align_mla_chunked_context_workspace_size to a multiple of mla_chunk_alignment (at least one
/// alignment); or config->mla_chunked_prefill_workspace_size as given when set.
///
/// The sparse family (SparseMLACommonMetadataBuilder's override): also at most
/// max_num_seqs * index_topk, at least block_size, and aligned up only under DCP.
int64_t mla_chunked_prefill_workspace_size(const KvCacheSpec& spec, const BuilderConfig& c,
                                           bool sparse = false) {
  if (c.mla_chunked_prefill_workspace_size > 0) return c.mla_chunked_prefill_workspace_size;
  const int64_t seqs_blocks = static_cast<int64_t>(c.max_num_seqs) * spec.block_size;
  if (sparse) {
    int64_t size = std::min<int64_t>(
        {std::max<int64_t>(8 * static_cast<int64_t>(c.max_model_len), 4 * seqs_blocks), 64 * 1024,
         static_cast<int64_t>(c.max_num_seqs) * sparse_index_topk(spec)});
    size = std::max<int64_t>(size, spec.block_size);
    if (c.decode_context_parallel_size <= 1) return size;
    const int64_t a = mla_chunk_alignment(spec, c);
    return (std::max(size, a) + a - 1) / a * a;
  }
  const int64_t size = std::min<int64_t>(
      std::max<int64_t>(8 * static_cast<int64_t>(c.max_model_len), 4 * seqs_blocks), 64 * 1024);
  const int64_t a = mla_chunk_alignment(spec, c);
  return (std::max(size, a) + a - 1) / a * a;
}

/// The capacities of the chunked-context buffers under this config. A prefill's context is at
/// most max_model_len tokens and a batch has at most max_num_seqs prefills. A request splits into at most 2 + context / M pieces (M = max_context_chunk): its
/// first piece, the pieces that start a chunk and do not finish it (exactly M each) and its
/// last; every chunk holds at least one piece.
ops::MlaChunkParams mla_chunk_capacities(const KvCacheSpec& spec, const BuilderConfig& c,
                                          bool sparse) {
  ops::MlaChunkParams p;
  p.workspace_size = mla_chunked_prefill_workspace_size(spec, c, sparse);
  p.block_size = spec.block_size;
  p.dcp_size = c.decode_context_parallel_size;
  p.interleave = std::max(1, c.cp_kv_cache_interleave_size);
  const int64_t a = mla_chunk_alignment(spec, c);
  const int64_t max_chunk = std::max<int64_t>(a, p.workspace_size / a * a);
  // every request may be a prefill (zero-length rows too, so not bounded by the token budget)
  const int64_t prefills = std::max<int64_t>(1, c.max_num_seqs);
  const int64_t context = std::max<int64_t>(1, c.max_model_len);
  p.max_entries = prefills * (2 + context / max_chunk);
  p.max_chunks = p.max_entries;
  p.max_tokens = prefills * context;
  const int64_t vb = static_cast<int64_t>(p.dcp_size) * p.interleave;
  p.max_local_tokens = p.dcp_size > 1 ? prefills * ((context + vb - 1) / vb * p.interleave) : 0;
  return p;
}

/// vLLM's max_cudagraph_capture_size, always resolved there: the config's, else the largest
/// capture size (0 when there is none).
int64_t max_cudagraph_size(const BuilderConfig& c) {
  if (c.max_cudagraph_capture_size > 0) return c.max_cudagraph_capture_size;
  const std::vector<int32_t> sizes = c.capture_sizes();
  return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

/// FA3's scheduler metadata entries: 1 + round_up(batch, 4) * 4 for the largest batch a graph
/// holds (vLLM's FlashAttnMLAMetadataBuilder).
int64_t scheduler_metadata_entries(const BuilderConfig& c) {
  const int64_t batch = std::max<int64_t>(c.max_num_seqs, max_cudagraph_size(c));
  return 1 + (batch + 3) / 4 * 4 * 4;
}

bool fa_mla_aot(const BuilderConfig& c) { return flash_attn_version(c) == 3; }

/// FLASHMLA's persistent FP8 tile-scheduler buffers: with an fp8 cache and full CUDA graphs
/// vLLM 0.33 copies get_mla_metadata_dense_fp8's output into a zeroed (num_SMs, 8) and a
/// (max_num_seqs + 1) int32 buffer (config->num_sms is vLLM's num_compute_units()).
bool flashmla_fp8_graph_buffers(const VariantInfo& v, const BuilderConfig& c) {
  return v.variant == Variant::kFlashMla && is_fp8_cache(c) && has_full_cudagraphs(c.cudagraph_mode);
}

/// vLLM 0.33's MLAPrefillBackendEnum, in its order (the value of prefill_prefill_backend).
enum MlaPrefillBackend : int32_t {
  kPrefillFlashAttn = 0,
  kPrefillFlashInfer = 1,
  kPrefillTrtllmRagged = 2,
  kPrefillTokenspeedMla = 3,
  kPrefillRocmAiterFa = 4,
  kPrefillCpu = 5,
  kPrefillZenCpu = 6,
};

const char* prefill_backend_name(int32_t b) {
  switch (b) {
    case kPrefillFlashAttn: return "FLASH_ATTN";
    case kPrefillFlashInfer: return "FLASHINFER";
    case kPrefillTrtllmRagged: return "TRTLLM_RAGGED";
    default: return "TOKENSPEED_MLA";
  }
}

/// vLLM 0.33's MLADimensions (qk_nope_head_dim, qk_rope_head_dim, v_head_dim).
struct MlaDims {
  int64_t nope, rope, v;
  bool operator==(const MlaDims& o) const { return nope == o.nope && rope == o.rope && v == o.v; }
  std::string str() const {
    return "(qk_nope_head_dim=" + std::to_string(nope) + ", qk_rope_head_dim=" +
           std::to_string(rope) + ", v_head_dim=" + std::to_string(v) + ")";
  }
};
constexpr MlaDims kR1Dims{128, 64, 128}, kV32Dims{192, 64, 256};

/// Why vLLM 0.33's validate_configuration refuses prefill backend `b` for this config (empty:
/// valid): FLASHINFER, TRTLLM_RAGGED and TOKENSPEED_MLA need compute capability 10.x; each
/// accepts the MLA dimensions it lists (FLASH_ATTN its own four, without listing them). The
/// model's dtype (float16/bfloat16, checked at create) and the libraries (assumed installed)
/// never refuse here.
std::vector<std::string> prefill_backend_refusals(int32_t b, const BuilderConfig& c) {
  std::vector<std::string> why;
  const int32_t cap = resolved_device_capability(c);
  if (b != kPrefillFlashAttn && cap / 10 != 10)
    why.push_back(cap <= 0 ? "device capability not available"
                           : "compute capability " + std::to_string(cap / 10) + "." +
                                 std::to_string(cap % 10) + " not supported");
  const MlaDims d{qk_nope_head_dim(c), qk_rope_head_dim(c), v_head_dim(c)};
  std::vector<MlaDims> listed;  // supported_mla_dimensions
  bool ok = false;
  if (b == kPrefillFlashAttn) {
    for (const MlaDims& x : {kR1Dims, kV32Dims, MlaDims{64, 64, 128}, MlaDims{256, 0, 256}})
      ok = ok || d == x;
  } else {
    listed = {kR1Dims};
    if (b == kPrefillTrtllmRagged) listed.push_back(kV32Dims);
    for (const MlaDims& x : listed) ok = ok || d == x;
  }
  if (!ok) {
    std::string r = "Model does not have supported MLA dimensions (got " + d.str();
    for (size_t i = 0; i < listed.size(); ++i) r += (i ? ", " : "; supported: ") + listed[i].str();
    why.push_back(r + ")");
  }
  return why;
}

/// vLLM 0.33's get_mla_prefill_backend (the layer's prefill backend, and what
/// determine_prefill_query_data_type asks): config->mla_prefill_backend when set, refused as
/// vLLM refuses an invalid one; else the automatic choice (Platform.get_mla_prefill_backend_cls):
/// on 10.x TRTLLM_RAGGED first for the (192, 64, 256) dimensions, else FLASH_ATTN first; below,
/// FLASH_ATTN. The first of each list is valid for the models libattn accepts (float16/bfloat16,
/// the dimensions named), with the libraries assumed installed.
int32_t prefill_backend(const BuilderConfig& c) {
  if (c.mla_prefill_backend != kMlaPrefillAuto) {
    const int32_t b = c.mla_prefill_backend - 1;  // MLAPrefillBackendEnum's order
    const std::vector<std::string> why = prefill_backend_refusals(b, c);
    if (!why.empty()) {
      std::string list;
      for (const std::string& w : why) list += (list.empty() ? "'" : ", '") + w + "'";
      invalid("Selected MLA prefill backend ", prefill_backend_name(b),
              " is not valid for this configuration. Reason: [", list,
              "] (config->mla_prefill_backend=", c.mla_prefill_backend, ")");
    }
    return b;
  }
  const bool sm100 = resolved_device_capability(c) / 10 == 10;
  const MlaDims d{qk_nope_head_dim(c), qk_rope_head_dim(c), v_head_dim(c)};
  return sm100 && d == kV32Dims ? kPrefillTrtllmRagged : kPrefillFlashAttn;
}

/// vLLM 0.33's determine_prefill_query_data_type: FP8 (the CUDA platform's float8_e4m3fn) when
/// the cache is quantized, use_prefill_query_quantization is set and
/// backend_supports_prefill_query_quantization (compute capability family 100 and the prefill
/// backend FLASHINFER, TRTLLM_RAGGED or TOKENSPEED_MLA); else the model's dtype.
int32_t prefill_query_dtype(const BuilderConfig& c, int32_t backend, int32_t model_dtype) {
  const bool backend_ok = backend == kPrefillFlashInfer || backend == kPrefillTrtllmRagged ||
                          backend == kPrefillTokenspeedMla;
  const bool fp8 = is_fp8_cache(c) && c.use_prefill_query_quantization &&
                   resolved_device_capability(c) / 10 == 10 && backend_ok;
  return fp8 ? kKvDtypeFp8E4m3 : model_dtype;
}

/// ROCM_AITER_MLA's _adaptive_varlen_verify_enabled: speculative decoding with
/// enable_adaptive_verification, no DCP, decodes wider than one token.
bool aiter_adaptive_varlen(Variant v, const BuilderConfig& c) {
  return v == Variant::kRocmAiterMla && c.num_speculative_tokens > 0 &&
         c.enable_adaptive_verification && c.decode_context_parallel_size <= 1 &&
         max_decode_query_len(c) > 1;
}

/// ROCM_AITER_MLA's persistent paged_kv_indices: max_num_seqs * max_model_len one-token pages,
/// plus max_num_seqs * k under adaptive varlen verify.
int64_t aiter_max_pages(Variant v, const BuilderConfig& c) {
  if (v != Variant::kRocmAiterMla) return 0;
  int64_t pages = static_cast<int64_t>(c.max_num_seqs) * c.max_model_len;
  if (aiter_adaptive_varlen(v, c))
    pages += static_cast<int64_t>(c.max_num_seqs) * c.num_speculative_tokens;
  return pages;
}

/// AiterMLAHelper.get_actual_mla_num_heads without a native-H24 aiter: the next multiple of 16.
int64_t aiter_padded_heads(int64_t heads) { return (heads + 15) / 16 * 16; }

void check_supported(const VariantInfo& v, const KvCacheSpec& spec, const BuilderConfig& c) {
  if (spec.kind != kKvMla)
    fail(Status::kUnsupported, v.name, " builds metadata for MLA KV cache specs only, not ",
         kv_cache_kind_name(spec.kind), " (kv_cache_spec->kind=", spec.kind, ")");
  if (spec.head_size != kMlaHeadSize)
    fail(Status::kUnsupported, v.name,
         " supports head size 576 (kv_lora_rank + qk_rope_head_dim "
         "of the latent cache), got kv_cache_spec->head_size=",
         spec.head_size);
  if (kv_lora_rank(c) + qk_rope_head_dim(c) != spec.head_size)
    invalid("config->mla_kv_lora_rank=", kv_lora_rank(c),
            " + config->mla_qk_rope_head_dim=", qk_rope_head_dim(c),
            " differs from kv_cache_spec->head_size=", spec.head_size,
            " (0 stands for 512 and 64)");
  if (spec.num_kv_heads != 1)
    invalid("kv_cache_spec->num_kv_heads=", spec.num_kv_heads,
            " must be 1 for an MLA spec (one latent head, vLLM's MLAAttentionSpec)");
  bool block_ok = spec.block_size % v.kernel_block_size == 0;
  if (!v.kernel_block_sizes.empty()) {
    block_ok = false;
    for (const int32_t s : v.kernel_block_sizes) block_ok = block_ok || spec.block_size % s == 0;
  }
  if (!block_ok) {
    std::string sizes;
    if (v.kernel_block_sizes.empty())
      sizes = std::to_string(v.kernel_block_size);
    else
      for (const int32_t s : v.kernel_block_sizes)
        sizes += (sizes.empty() ? "" : " or ") + std::to_string(s);
    fail(Status::kUnsupported, v.name, " needs kv_cache_spec->block_size to be a multiple of ",
         sizes, ", got ", spec.block_size);
  }
  if (std::find(v.cache_dtypes.begin(), v.cache_dtypes.end(), c.cache_dtype) ==
      v.cache_dtypes.end())
    fail(Status::kUnsupported, v.name,
         " does not support config->cache_dtype=", kv_dtype_name(c.cache_dtype));
  const int32_t model = c.model_dtype_for(spec);
  if (v.variant == Variant::kAmxMla) {
    if (model != kKvDtypeBfloat16)  // AMXMLABackend.supported_dtypes
      fail(Status::kUnsupported, v.name, " runs bfloat16 models only, got ", kv_dtype_name(model),
           " (config->model_dtype, else kv_cache_spec->dtype)");
  } else if (model != kKvDtypeFloat16 && model != kKvDtypeBfloat16 &&
             !(v.variant == Variant::kCpuMla && model == kKvDtypeFloat32)) {
    fail(Status::kUnsupported, v.name,
         v.variant == Variant::kCpuMla ? " runs float16, bfloat16 and float32 models, got "
                                       : " runs float16 and bfloat16 models, got ",
         kv_dtype_name(model), " (config->model_dtype, else kv_cache_spec->dtype)");
  }
  if (c.attn_type != kAttnDecoder)
    fail(Status::kUnsupported, v.name,
         " runs decoder self-attention only (config->attn_type=", c.attn_type, ")");
  if (c.kv_sharing_fast_prefill)
    fail(Status::kUnsupported, v.name,
         ": KV sharing is not supported for MLA "
         "(config->kv_sharing_fast_prefill)");
  for (size_t i = 0; i < c.layers.size(); ++i)
    if (c.layers[i].window_left != -1 || c.layers[i].logits_soft_cap)
      fail(Status::kUnsupported, v.name,
           " does not support sliding windows or logits soft "
           "capping (config->layers[",
           i, "])");
  if (flashmla_fp8_graph_buffers(v, c) && c.num_sms <= 0)
    invalid("config->num_sms=", c.num_sms,
            ": FLASHMLA with an fp8 KV cache and full CUDA graphs keeps a (num_SMs, 8) "
            "tile-scheduler buffer (vLLM's num_compute_units()); set config->num_sms");
  if (v.variant == Variant::kFlashInferMla) {
    if (c.decode_context_parallel_size > 1 && c.cp_kv_cache_interleave_size != 1)
      fail(Status::kUnsupported,
           "FLASHINFER_MLA with decode context parallelism needs "
           "config->cp_kv_cache_interleave_size=1, got ",
           c.cp_kv_cache_interleave_size);
    const int32_t nope = qk_nope_head_dim(c);
    if (nope != 64 && nope != 128 && nope != 192)
      fail(Status::kUnsupported,
           "FLASHINFER_MLA needs qk_nope_head_dim in [64, 128, 192], got "
           "config->mla_qk_nope_head_dim=",
           nope);
  }
  if (v.variant == Variant::kRocmAiterMla && c.decode_context_parallel_size > 1)
    fail(Status::kUnsupported,
         "ROCM_AITER_MLA with decode context parallelism is not in libattn: vLLM 0.33 picks its "
         "DCP verify route (segmented, cprr, Triton) by the AMD GPU's architecture and aiter "
         "build (config->decode_context_parallel_size=",
         c.decode_context_parallel_size, ")");
  if (v.variant == Variant::kRocmAiterMla && c.num_attention_heads <= 0)
    invalid("config->num_attention_heads=", c.num_attention_heads,
            ": ROCM_AITER_MLA sizes aiter's schedule by this rank's query heads");
  if (v.variant == Variant::kFlashAttnMlaSparse && c.decode_context_parallel_size > 1)
    fail(Status::kUnsupported, "FlashAttention MLA Sparse does not support DCP for now "
         "(config->decode_context_parallel_size=", c.decode_context_parallel_size, ")");
  if (v.variant == Variant::kFlashInferMlaSparseSm120 && sparse_index_topk(spec) != 2048)
    fail(Status::kUnsupported, "FLASHINFER_MLA_SPARSE_SM120 requires index_topk=2048; got ",
         sparse_index_topk(spec), " (kv_cache_spec->index_topk)");
  if (v.variant == Variant::kFlashInferMlaSparseSm90) {
    const int32_t cap = resolved_device_capability(c);
    if (cap != 0 && cap / 10 != 9)
      fail(Status::kUnsupported, "FLASHINFER_MLA_SPARSE_SM90 runs compute capability 9.x "
           "(supports_compute_capability), got config->device_capability=", cap);
    if (kv_lora_rank(c) != 512)
      fail(Status::kUnsupported, "FLASHINFER_MLA_SPARSE_SM90 requires kv_lora_rank=512, got "
           "config->mla_kv_lora_rank=", kv_lora_rank(c));
    if (c.model_dtype_for(spec) != kKvDtypeBfloat16)
      fail(Status::kUnsupported, v.name, " runs bfloat16 models only (supported_dtypes), got ",
           kv_dtype_name(c.model_dtype_for(spec)),
           " (config->model_dtype, else kv_cache_spec->dtype)");
  }
  if (v.variant == Variant::kFlashAttnMlaSparseFa4 && sparse_index_topk(spec) % 128 != 0)
    fail(Status::kUnsupported, "FA4 sparse MLA requires index_topk % 128 == 0, got ",
         sparse_index_topk(spec), " (kv_cache_spec->index_topk)");
  if ((v.variant == Variant::kFlashInferMlaSparseSm120 ||
       v.variant == Variant::kFlashAttnMlaSparseFa4) &&
      c.model_dtype_for(spec) != kKvDtypeBfloat16)
    fail(Status::kUnsupported, v.name, " runs bfloat16 models only (supported_dtypes), got ",
         kv_dtype_name(c.model_dtype_for(spec)), " (config->model_dtype, else kv_cache_spec->dtype)");
  if (is_sparse(v.variant) && v.variant != Variant::kFlashMlaSparse &&
      c.model_dtype_for(spec) != kKvDtypeBfloat16 && c.model_dtype_for(spec) != kKvDtypeFloat16)
    fail(Status::kUnsupported, v.name, " runs float16 and bfloat16 models, got ",
         kv_dtype_name(c.model_dtype_for(spec)), " (config->model_dtype, else kv_cache_spec->dtype)");
  if (v.variant == Variant::kFlashMlaSparse) {
    if (c.model_dtype_for(spec) != kKvDtypeBfloat16)
      fail(Status::kUnsupported, v.name, " runs bfloat16 models only (supported_dtypes), got ",
           kv_dtype_name(c.model_dtype_for(spec)), " (config->model_dtype, else kv_cache_spec->dtype)");
    const int32_t h = c.num_attention_heads;
    if (h <= 0)
      invalid("config->num_attention_heads=", h, ": ", v.name,
              " needs this rank's query heads (its threshold table and fp8 path)");
    if (c.decode_context_parallel_size > 1) {
      // vLLM 0.33 raises NotImplementedError at construction (without prefill context
      // parallelism, which libattn does not have).
      if (h >= kMinHeadsForBf16Prefill)
        fail(Status::kUnsupported,
             "DCP for FlashMLA sparse is only supported on the mixed-batch fp8 path (num_heads < ",
             kMinHeadsForBf16Prefill, "), got config->num_attention_heads=", h);
      const int64_t gathered = static_cast<int64_t>(h) * c.decode_context_parallel_size;
      if (fp8_decode_padded_heads(h) != fp8_decode_padded_heads(gathered))
        fail(Status::kUnsupported,
             "DCP for FlashMLA sparse requires the local and DCP-gathered head counts to pad to "
             "the same fp8 decode kernel envelope; got ",
             h, " local heads (pad to ", fp8_decode_padded_heads(h), ") vs ", gathered,
             " gathered heads (pad to ", fp8_decode_padded_heads(gathered), ")");
    }
  }
  const int64_t workspace = mla_chunked_prefill_workspace_size(spec, c, is_sparse(v.variant));
  const int64_t alignment = mla_chunk_alignment(spec, c);
  if (workspace < alignment)
    invalid("config->mla_chunked_prefill_workspace_size=", workspace,
            " is smaller than the context chunk alignment of ", alignment,
            " rows (block_size, lcm'd with decode_context_parallel_size * "
            "cp_kv_cache_interleave_size under DCP; vLLM asserts max_context_chunk > 0)");
  if (c.decode_context_parallel_size > 1 && workspace % c.decode_context_parallel_size != 0)
    invalid("the MLA chunked-prefill workspace of ", workspace,
            " tokens is not a multiple of config->decode_context_parallel_size=",
            c.decode_context_parallel_size, " (vLLM asserts it)");
}

#define MLA_BUFFERS(X)                                                                  \
  /* on the builder's device */                                                         \
  X(kBufPrefillQsl, "prefill_query_start_loc")                                          \
  X(kBufQuerySeqLens, "prefill_query_seq_lens")                                         \
  X(kBufContextLens, "prefill_chunked_context_context_lens")                            \
  X(kBufStarts, "prefill_chunked_context_chunk_starts")                                 \
  X(kBufChunkQsl, "prefill_chunked_context_chunk_query_start_loc")                      \
  X(kBufCuSeqLens, "prefill_chunked_context_chunk_cu_seq_lens")                         \
  X(kBufTokenToSeq, "prefill_chunked_context_chunk_token_to_seq")                       \
  X(kBufPaddedLocalCu, "prefill_chunked_context_chunk_padded_local_cu_seq_lens")        \
  X(kBufPaddedLocalTts, "prefill_chunked_context_chunk_padded_local_token_to_seq")      \
  X(kBufPlanScratch, "the device's chunk plan")                                         \
  X(kBufSchedulerMetadata, "decode_scheduler_metadata_buffer")                          \
  X(kBufTile, "decode_tile_scheduler_metadata")                                         \
  X(kBufNumSplits, "decode_num_splits")                                                 \
  X(kBufTileBuffer, "decode_tile_scheduler_metadata_buffer")                            \
  X(kBufNumSplitsBuffer, "decode_num_splits_buffer")                                    \
  X(kBufReqToToken, "req_to_token (AMX_MLA)")                                           \
  X(kBufSeqLensI64, "decode_seq_lens_i64")                                              \
  X(kBufPoolIndices, "req_pool_indices")                                                \
  X(kBufCpuSeqLens, "prefill_cpu_seq_lens")                                             \
  X(kBufExtendLens, "prefill_extend_seq_lens")                                          \
  X(kBufExtendStarts, "prefill_extend_start_loc")                                       \
  X(kBufReqIdPerToken, "req_id_per_token")                                              \
  X(kBufMaxModelLen, "fp8_extra_metadata cache_lens")                                   \
  X(kBufDummyBlockTable, "fp8_extra_metadata dummy_block_table")                        \
  X(kBufFp8RequestIds, "fp8_extra_metadata_prefill_request_ids")                        \
  X(kBufFp8WorkspaceStarts, "fp8_extra_metadata_prefill_workspace_starts")              \
  X(kBufFp8PlanLens, "the fp8 prefill chunks' seq_lens_cpu_upper_bound")                 \
  X(kBufAiterSeqLens, "decode_seq_lens (ROCM_AITER_MLA)")                               \
  X(kBufAiterIndptr, "decode_paged_kv_indptr")                                          \
  X(kBufAiterIndices, "decode_paged_kv_indices")                                        \
  X(kBufAiterLastPage, "decode_paged_kv_last_page_len")                                 \
  X(kBufAiterQoIndptr, "decode_qo_indptr")                                              \
  X(kBufAiterQRows, "decode_varlen_q_rows")                                             \
  X(kBufAiterORows, "decode_varlen_o_rows")                                             \
  /* host */                                                                            \
  X(kBufHostContextLens, "host context lengths")                                        \
  X(kBufContextLensList, "prefill_chunked_context_context_lens_list")                   \
  X(kBufEmptySlices, "prefill_chunked_context_empty_token_slices")                      \
  X(kBufQueryLensCpu, "prefill_query_lens_cpu")                                         \
  X(kBufChunkLists, "the per-chunk lists")                                              \
  X(kBufEntryLists, "the per-entry lists")                                               \
  X(kBufFp8ChunkLists, "the fp8 prefill chunks' lists")                                  \
  X(kBufFp8PlanLensCpu, "the fp8 prefill chunks' seq_lens_cpu_upper_bound staging")       \
  X(kBufSm90Plan, "FLASHINFER_MLA_SPARSE_SM90's plan staging")
ATTN_NAMED_LIST(Buffer, MLA_BUFFERS);

/// FLASHMLA_SPARSE's fp8 prefill chunk lists, each max_num_seqs int32 in kBufFp8ChunkLists.
enum Fp8ChunkList {
  kFp8TokenStart,
  kFp8TokenEnd,
  kFp8ReqStart,
  kFp8ReqEnd,
  kFp8TotSeqlen,
  kFp8ChunkListCount
};

/// The per-chunk host lists, each C + 1 int32 in kBufChunkLists (ContextChunk's scalars and
/// the offsets of each chunk in the concatenated arrays).
enum ChunkList {
  kChunkRequestStart,
  kChunkRequestEnd,
  kChunkTokenStart,
  kChunkTokenEnd,
  kChunkContinuationTokenEnd,
  kChunkIsContinuation,
  kChunkNumContextTokens,
  kChunkMaxQueryLen,
  kChunkMaxSeqLen,
  kChunkAllRowsActive,
  kChunkNumLocalContextTokens,
  kChunkRequestOffsets,
  kChunkBoundaryOffsets,
  kChunkTokenOffsets,
  kChunkLocalTokenOffsets,
  kChunkListCount
};
/// The per-entry host lists, each E int32 in kBufEntryLists, then chunk_entry_offsets (C + 1)
/// and local_context_lens_allranks (E x dcp).
enum EntryList {
  kEntrySeqLens,
  kEntryPaddedLocalSeqLens,
  kEntryLocalStarts,
  kEntryRequest,
  kEntryStart,
  kEntryLen,
  kEntryListCount
};

/// AMX_MLA's req_to_token row: every position of the widest block table the config admits
/// (max_blocks_per_req x block_size entries).
int64_t amx_row_entries(const KvCacheSpec& spec, const BuilderConfig& c) {
  return c.max_blocks_per_req(spec.block_size) * spec.block_size;
}

std::vector<BufferRequest> plan(const VariantInfo& v, const KvCacheSpec& spec,
                                const BuilderConfig& c) {
  const int64_t seqs = c.max_num_seqs;
  const bool sparse = is_sparse(v.variant);
  const ops::MlaChunkParams cap = mla_chunk_capacities(spec, c, sparse);
  const int64_t C = cap.max_chunks, E = cap.max_entries;
  const int64_t tokens = std::max<int64_t>(1, c.max_num_batched_tokens);
  const bool fp8_separate =
      flashmla_sparse_fp8(v.variant, c) && c.num_attention_heads >= kMinHeadsForBf16Prefill;
  const bool dcp = c.decode_context_parallel_size > 1;
  const int64_t i32 = sizeof(int32_t);
  const bool scheduler =
      v.variant == Variant::kFlashAttnMla && has_full_cudagraphs(c.cudagraph_mode) && fa_mla_aot(c);
  const bool fixed_tiles = v.variant == Variant::kFlashMla && c.batch_invariant && !is_fp8_cache(c);
  const bool fp8_graph_tiles = flashmla_fp8_graph_buffers(v, c);
  BufferPlan p(kBufferNames);
  p.set(kBufPrefillQsl, buffer_bytes("prefill_query_start_loc", {seqs + 1, i32}));
  p.set(kBufQuerySeqLens, buffer_bytes("prefill_query_seq_lens", {seqs, i32}));
  p.set(kBufContextLens, buffer_bytes("prefill_chunked_context_context_lens", {seqs, i32}));
  p.set(kBufStarts, buffer_bytes("prefill_chunked_context_chunk_starts", {E, i32}));
  p.set(kBufChunkQsl,
        buffer_bytes("prefill_chunked_context_chunk_query_start_loc", {E + C, i32}));
  p.set(kBufCuSeqLens, buffer_bytes("prefill_chunked_context_chunk_cu_seq_lens", {E + C, i32}));
  p.set(kBufTokenToSeq,
        buffer_bytes("prefill_chunked_context_chunk_token_to_seq", {cap.max_tokens, i32}));
  p.set(kBufPaddedLocalCu,
        dcp ? buffer_bytes("prefill_chunked_context_chunk_padded_local_cu_seq_lens",
                           {E + C, i32})
            : 0);
  p.set(kBufPaddedLocalTts,
        dcp ? buffer_bytes("prefill_chunked_context_chunk_padded_local_token_to_seq",
                           {cap.max_local_tokens, i32})
            : 0);
  p.set(kBufPlanScratch, buffer_bytes("the device's chunk plan", {3 * (C + 1) + 3 * E, i32}));
  p.set(kBufSchedulerMetadata,
        scheduler ? static_cast<size_t>(scheduler_metadata_entries(c) * i32) : 0);
  p.set(kBufTile, fixed_tiles ? static_cast<size_t>(8 * i32) : 0);
  p.set(kBufNumSplits, fixed_tiles ? buffer_bytes("decode_num_splits", {seqs + 1, i32}) : 0);
  p.set(kBufTileBuffer, fp8_graph_tiles ? buffer_bytes("decode_tile_scheduler_metadata_buffer",
                                                       {c.num_sms, 8, i32})
                                        : 0);
  p.set(kBufNumSplitsBuffer,
        fp8_graph_tiles ? buffer_bytes("decode_num_splits_buffer", {seqs + 1, i32}) : 0);
  // AMX_MLA: req_to_token of every row (decodes' int32, then prefills' int64), and int64 lists
  const int64_t amx = v.variant == Variant::kAmxMla ? 1 : 0;
  p.set(kBufReqToToken, buffer_bytes("req_to_token", {amx * seqs, amx_row_entries(spec, c), 8}));
  p.set(kBufSeqLensI64, buffer_bytes("decode_seq_lens_i64", {amx * seqs, 8}));
  p.set(kBufPoolIndices, buffer_bytes("req_pool_indices", {amx * seqs, 8}));
  p.set(kBufCpuSeqLens, buffer_bytes("prefill_cpu_seq_lens", {amx * seqs, 8}));
  p.set(kBufExtendLens, buffer_bytes("prefill_extend_seq_lens", {amx * seqs, 8}));
  p.set(kBufExtendStarts, buffer_bytes("prefill_extend_start_loc", {amx * seqs, 8}));
  p.set(kBufReqIdPerToken, sparse ? buffer_bytes("req_id_per_token", {tokens, i32}) : 0);
  p.set(kBufMaxModelLen,
        flashmla_sparse_fp8(v.variant, c) ? buffer_bytes("fp8_extra_metadata cache_lens", {seqs, i32}) : 0);
  p.set(kBufDummyBlockTable,
        flashmla_sparse_fp8(v.variant, c) ? buffer_bytes("fp8_extra_metadata dummy_block_table", {seqs, i32})
                                  : 0);
  p.set(kBufFp8RequestIds,
        fp8_separate ? buffer_bytes("fp8_extra_metadata_prefill_request_ids", {tokens, i32}) : 0);
  p.set(kBufFp8WorkspaceStarts,
        fp8_separate ? buffer_bytes("fp8_extra_metadata_prefill_workspace_starts", {seqs, i32})
                     : 0);
  p.set(kBufFp8ChunkLists,
        fp8_separate
            ? buffer_bytes("the fp8 prefill chunks' lists", {kFp8ChunkListCount, seqs, i32})
            : 0,
        true);
  for (const bool host : {false, true})
    p.set(host ? kBufFp8PlanLensCpu : kBufFp8PlanLens,
          fp8_separate ? buffer_bytes("the fp8 prefill chunks' seq_lens_cpu_upper_bound",
                                      {seqs, i32})
                       : 0,
          host);
  p.set(kBufSm90Plan,
        v.variant == Variant::kFlashInferMlaSparseSm90
            ? buffer_bytes("FLASHINFER_MLA_SPARSE_SM90's plan staging", {3 * tokens + 2, i32})
            : 0,
        true);
  const int64_t aiter = v.variant == Variant::kRocmAiterMla ? 1 : 0;
  const int64_t varlen_rows =
      aiter_adaptive_varlen(v.variant, c) ? seqs * max_decode_query_len(c) : 0;
  p.set(kBufAiterSeqLens, buffer_bytes("decode_seq_lens", {aiter * seqs, i32}));
  p.set(kBufAiterIndptr, buffer_bytes("decode_paged_kv_indptr", {aiter * (seqs + 1), i32}));
  p.set(kBufAiterIndices,
        buffer_bytes("decode_paged_kv_indices", {aiter_max_pages(v.variant, c), i32}));
  p.set(kBufAiterLastPage, buffer_bytes("decode_paged_kv_last_page_len", {aiter * seqs, i32}));
  p.set(kBufAiterQoIndptr, buffer_bytes("decode_qo_indptr", {aiter * (seqs + 1), i32}));
  p.set(kBufAiterQRows, buffer_bytes("decode_varlen_q_rows", {varlen_rows, 8}));
  p.set(kBufAiterORows,
        buffer_bytes("decode_varlen_o_rows", {varlen_rows ? varlen_rows + 1 : 0, 8}));
  p.set(kBufHostContextLens, buffer_bytes("host context lengths", {seqs, i32}), true);
  p.set(kBufContextLensList,
        buffer_bytes("prefill_chunked_context_context_lens_list", {seqs, i32}), true);
  p.set(kBufEmptySlices,
        buffer_bytes("prefill_chunked_context_empty_token_slices", {seqs, 2, i32}), true);
  p.set(kBufQueryLensCpu, buffer_bytes("prefill_query_lens_cpu", {seqs, i32}), true);
  p.set(kBufChunkLists, buffer_bytes("the per-chunk lists", {kChunkListCount, C + 1, i32}), true);
  const int64_t ranks = dcp ? c.decode_context_parallel_size : 0;
  p.set(kBufEntryLists,
        buffer_bytes("the per-entry lists", {kEntryListCount * E + C + 1 + E * ranks, i32}), true);
  return p.requests();
}

/// Every field any variant has, in metadata order (kFidNames: the names, vLLM's, flattened).
#define MLA_FIELDS(X)                                                                         \
  X(f_num_reqs, "num_reqs")                                                                   \
  X(f_max_query_len, "max_query_len")                                                         \
  X(f_max_seq_len, "max_seq_len")                                                             \
  X(f_num_actual_tokens, "num_actual_tokens")                                                 \
  X(f_query_start_loc, "query_start_loc")                                                     \
  X(f_slot_mapping, "slot_mapping")                                                           \
  X(f_num_decodes, "num_decodes")                                                             \
  X(f_num_decode_tokens, "num_decode_tokens")                                                 \
  X(f_num_prefills, "num_prefills")                                                           \
  X(f_causal, "causal")                                                                       \
  X(f_head_dim, "head_dim")                                                                   \
  X(f_chunked_prefill_workspace_size, "chunked_prefill_workspace_size")                       \
  X(f_decode_block_table, "decode_block_table")                                               \
  X(f_decode_seq_lens, "decode_seq_lens")                                                     \
  X(f_decode_dcp_tot_seq_lens, "decode_dcp_tot_seq_lens")                                     \
  X(f_decode_query_start_loc, "decode_query_start_loc")                                       \
  X(f_decode_max_query_len, "decode_max_query_len")                                           \
  X(f_decode_max_seq_len, "decode_max_seq_len")                                               \
  X(f_decode_scheduler_metadata, "decode_scheduler_metadata")                                 \
  X(f_decode_max_num_splits, "decode_max_num_splits")                                         \
  X(f_decode_scheduler_metadata_buffer, "decode_scheduler_metadata_buffer")                   \
  X(f_decode_scheduler_batch_size, "decode_scheduler_batch_size")                             \
  X(f_decode_scheduler_max_seqlen_q, "decode_scheduler_max_seqlen_q")                         \
  X(f_decode_scheduler_max_seqlen_k, "decode_scheduler_max_seqlen_k")                         \
  X(f_decode_scheduler_num_heads_q, "decode_scheduler_num_heads_q")                           \
  X(f_decode_scheduler_num_heads_kv, "decode_scheduler_num_heads_kv")                         \
  X(f_decode_scheduler_headdim, "decode_scheduler_headdim")                                   \
  X(f_decode_scheduler_cache_seqlens, "decode_scheduler_cache_seqlens")                       \
  X(f_decode_scheduler_qkv_dtype, "decode_scheduler_qkv_dtype")                               \
  X(f_decode_scheduler_headdim_v, "decode_scheduler_headdim_v")                               \
  X(f_decode_scheduler_page_size, "decode_scheduler_page_size")                               \
  X(f_decode_scheduler_cu_seqlens_q, "decode_scheduler_cu_seqlens_q")                         \
  X(f_decode_scheduler_causal, "decode_scheduler_causal")                                     \
  X(f_decode_scheduler_num_splits, "decode_scheduler_num_splits")                             \
  X(f_decode_scheduler_num_q_tokens_per_head_k, "decode_scheduler_num_q_tokens_per_head_k")   \
  X(f_decode_scheduler_num_heads_k, "decode_scheduler_num_heads_k")                           \
  X(f_decode_scheduler_is_fp8_kvcache, "decode_scheduler_is_fp8_kvcache")                     \
  X(f_decode_tile_scheduler_metadata, "decode_tile_scheduler_metadata")                       \
  X(f_decode_num_splits, "decode_num_splits")                                                 \
  X(f_decode_tile_scheduler_metadata_buffer, "decode_tile_scheduler_metadata_buffer")         \
  X(f_decode_num_splits_buffer, "decode_num_splits_buffer")                                   \
  X(f_decode_flattened_block_table, "decode_flattened_block_table")                           \
  X(f_decode_flattened_seq_lens, "decode_flattened_seq_lens")                                 \
  X(f_decode_flattened_row_req, "decode_flattened_row_req")                                   \
  X(f_decode_query_len, "decode_query_len")                                                   \
  X(f_prefill_block_table, "prefill_block_table")                                             \
  X(f_prefill_query_start_loc, "prefill_query_start_loc")                                     \
  X(f_prefill_max_query_len, "prefill_max_query_len")                                         \
  X(f_prefill_q_data_type, "prefill_q_data_type")                                             \
  X(f_prefill_output_dtype, "prefill_output_dtype")                                           \
  X(f_prefill_prefill_backend, "prefill_prefill_backend")                                     \
  X(f_prefill_query_lens_cpu, "prefill_query_lens_cpu")                                       \
  X(f_prefill_use_dense_mha, "prefill_use_dense_mha")                                         \
  X(f_prefill_query_seq_lens, "prefill_query_seq_lens")                                       \
  X(f_prefill_num_qo_heads, "prefill_num_qo_heads")                                           \
  X(f_prefill_num_kv_heads, "prefill_num_kv_heads")                                           \
  X(f_prefill_head_dim_qk, "prefill_head_dim_qk")                                             \
  X(f_prefill_head_dim_vo, "prefill_head_dim_vo")                                             \
  X(f_prefill_sm_scale, "prefill_sm_scale")                                                   \
  X(f_prefill_window_left, "prefill_window_left")                                             \
  X(f_prefill_logits_soft_cap, "prefill_logits_soft_cap")                                     \
  X(f_prefill_chunked_context_context_lens, "prefill_chunked_context_context_lens")           \
  X(f_prefill_chunked_context_context_lens_list, "prefill_chunked_context_context_lens_list") \
  X(f_prefill_chunked_context_empty_token_slices,                                             \
    "prefill_chunked_context_empty_token_slices")                                             \
  X(f_prefill_chunked_context_num_chunks, "prefill_chunked_context_num_chunks")               \
  X(f_chunk_request_start, "prefill_chunked_context_chunk_request_start")                     \
  X(f_chunk_request_end, "prefill_chunked_context_chunk_request_end")                         \
  X(f_chunk_token_start, "prefill_chunked_context_chunk_token_start")                         \
  X(f_chunk_token_end, "prefill_chunked_context_chunk_token_end")                             \
  X(f_chunk_continuation_token_end, "prefill_chunked_context_chunk_continuation_token_end")   \
  X(f_chunk_is_continuation, "prefill_chunked_context_chunk_is_continuation")                 \
  X(f_chunk_num_context_tokens, "prefill_chunked_context_chunk_num_context_tokens")           \
  X(f_chunk_max_query_len, "prefill_chunked_context_chunk_max_query_len")                     \
  X(f_chunk_max_seq_len, "prefill_chunked_context_chunk_max_seq_len")                         \
  X(f_chunk_all_rows_active, "prefill_chunked_context_chunk_all_rows_active")                 \
  X(f_chunk_num_local_context_tokens,                                                         \
    "prefill_chunked_context_chunk_num_local_context_tokens")                                 \
  X(f_chunk_request_offsets, "prefill_chunked_context_chunk_request_offsets")                 \
  X(f_chunk_boundary_offsets, "prefill_chunked_context_chunk_boundary_offsets")               \
  X(f_chunk_token_offsets, "prefill_chunked_context_chunk_token_offsets")                     \
  X(f_chunk_local_token_offsets, "prefill_chunked_context_chunk_local_token_offsets")         \
  X(f_chunk_query_start_loc, "prefill_chunked_context_chunk_query_start_loc")                 \
  X(f_chunk_cu_seq_lens, "prefill_chunked_context_chunk_cu_seq_lens")                         \
  X(f_chunk_starts, "prefill_chunked_context_chunk_starts")                                   \
  X(f_chunk_seq_lens, "prefill_chunked_context_chunk_seq_lens")                               \
  X(f_chunk_token_to_seq, "prefill_chunked_context_chunk_token_to_seq")                       \
  X(f_chunk_padded_local_seq_lens, "prefill_chunked_context_chunk_padded_local_seq_lens")     \
  X(f_chunk_local_context_lens_allranks,                                                      \
    "prefill_chunked_context_chunk_local_context_lens_allranks")                              \
  X(f_chunk_padded_local_cu_seq_lens,                                                         \
    "prefill_chunked_context_chunk_padded_local_cu_seq_lens")                                 \
  X(f_chunk_padded_local_token_to_seq,                                                        \
    "prefill_chunked_context_chunk_padded_local_token_to_seq")                                \
  X(f_chunk_local_starts, "prefill_chunked_context_chunk_local_starts")                       \
  /* the sparse family's (SparseMLACommonMetadata, FlashMLASparseMetadata) */                 \
  X(f_block_table, "block_table")                                                             \
  X(f_req_id_per_token, "req_id_per_token")                                                   \
  X(f_seq_lens, "seq_lens")                                                                   \
  X(f_block_size, "block_size")                                                               \
  X(f_topk_tokens, "topk_tokens")                                                             \
  X(f_prefill_max_seq_len, "prefill_max_seq_len")                                             \
  X(f_cp_kv_cache_interleave_size, "cp_kv_cache_interleave_size")                             \
  X(f_fp8_scheduler_metadata, "fp8_extra_metadata_scheduler_metadata")                        \
  X(f_fp8_dummy_block_table, "fp8_extra_metadata_dummy_block_table")                          \
  X(f_fp8_cache_lens, "fp8_extra_metadata_cache_lens")                                        \
  X(f_fp8_num_prefills, "fp8_extra_metadata_num_prefills")                                    \
  X(f_fp8_num_decodes, "fp8_extra_metadata_num_decodes")                                      \
  X(f_fp8_num_prefill_tokens, "fp8_extra_metadata_num_prefill_tokens")                        \
  X(f_fp8_num_decode_tokens, "fp8_extra_metadata_num_decode_tokens")                          \
  X(f_fp8_decode_seq_lens, "fp8_extra_metadata_decode_seq_lens")                              \
  X(f_fp8_decode_scheduler_metadata,                                                          \
    "fp8_extra_metadata_decode_kernel_metadata_scheduler_metadata")                           \
  X(f_fp8_decode_dummy_block_table,                                                           \
    "fp8_extra_metadata_decode_kernel_metadata_dummy_block_table")                            \
  X(f_fp8_decode_cache_lens, "fp8_extra_metadata_decode_kernel_metadata_cache_lens")          \
  X(f_fp8_decode_query_len, "fp8_extra_metadata_decode_decode_query_len")                     \
  X(f_fp8_prefill_request_ids, "fp8_extra_metadata_prefill_request_ids")                      \
  X(f_fp8_prefill_workspace_starts, "fp8_extra_metadata_prefill_workspace_starts")            \
  X(f_fp8_prefill_num_chunks, "fp8_extra_metadata_prefill_num_chunks")                        \
  X(f_fp8_chunk_token_start, "fp8_extra_metadata_prefill_chunk_token_start")                  \
  X(f_fp8_chunk_token_end, "fp8_extra_metadata_prefill_chunk_token_end")                      \
  X(f_fp8_chunk_req_start_idx, "fp8_extra_metadata_prefill_chunk_req_start_idx")              \
  X(f_fp8_chunk_req_end_idx, "fp8_extra_metadata_prefill_chunk_req_end_idx")                  \
  X(f_fp8_chunk_tot_seqlen, "fp8_extra_metadata_prefill_chunk_chunk_tot_seqlen")              \
  X(f_fp8_use_mixed_batch, "fp8_use_mixed_batch")                                             \
  /* FLASHINFER_MLA_SPARSE_SM90's _SM90State after build()'s plan (host staging) */          \
  X(f_sm90_qo_indptr, "state_qo_indptr")                                                      \
  X(f_sm90_kv_indptr, "state_kv_indptr")                                                      \
  X(f_sm90_kv_len_arr, "state_kv_len_arr")                                                    \
  X(f_sm90_planned_num_tokens, "state_planned_num_tokens")                                    \
  X(f_sm90_replanned, "state_replanned")                                                      \
  /* AMX_MLA's attributes on the decode and prefill parts (AMXMLAMetadataBuilder.build) */    \
  X(f_amx_decode_req_to_token, "decode_req_to_token")                                         \
  X(f_amx_decode_seq_lens_i64, "decode_seq_lens_i64")                                         \
  X(f_amx_decode_req_pool_indices, "decode_req_pool_indices")                                 \
  X(f_amx_decode_num_kv_splits, "decode_num_kv_splits")                                       \
  X(f_amx_prefill_cpu_seq_lens, "prefill_cpu_seq_lens")                                       \
  X(f_amx_prefill_req_to_token, "prefill_req_to_token")                                       \
  X(f_amx_prefill_req_pool_indices, "prefill_req_pool_indices")                               \
  X(f_amx_prefill_extend_seq_lens, "prefill_extend_seq_lens")                                 \
  X(f_amx_prefill_extend_start_loc, "prefill_extend_start_loc")                               \
  X(f_amx_prefill_max_len_extend, "prefill_max_len_extend")                                   \
  /* ROCM_AITER_MLA's AiterMLADecodeMetadata, then get_mla_metadata_v1's scalar arguments */  \
  X(f_aiter_paged_kv_indptr, "decode_paged_kv_indptr")                                        \
  X(f_aiter_paged_kv_indices, "decode_paged_kv_indices")                                      \
  X(f_aiter_paged_kv_last_page_len, "decode_paged_kv_last_page_len")                          \
  X(f_aiter_qo_indptr, "decode_qo_indptr")                                                    \
  X(f_aiter_attn_out_dtype, "decode_attn_out_dtype")                                          \
  X(f_aiter_max_qo_len, "decode_max_qo_len")                                                  \
  X(f_aiter_min_kv_seq_len, "decode_min_kv_seq_len")                                          \
  X(f_aiter_dcp_route, "decode_dcp_route")                                                    \
  X(f_aiter_cp_world_size, "decode_cp_world_size")                                            \
  X(f_aiter_cp_rank, "decode_cp_rank")                                                        \
  X(f_aiter_asm_decode_num_heads, "decode_asm_decode_num_heads")                              \
  X(f_aiter_mla_num_kv_splits, "decode_mla_num_kv_splits")                                    \
  X(f_aiter_use_gluon_decode, "decode_use_gluon_decode")                                      \
  X(f_aiter_use_gluon_verify, "decode_use_gluon_verify")                                      \
  X(f_aiter_has_persistent_metadata, "decode_has_persistent_metadata")                        \
  X(f_aiter_varlen_q_rows, "decode_varlen_q_rows")                                            \
  X(f_aiter_varlen_o_rows, "decode_varlen_o_rows")                                            \
  X(f_aiter_num_heads_per_head_k, "decode_scheduler_num_heads_per_head_k")                    \
  X(f_aiter_is_causal, "decode_scheduler_is_causal")                                          \
  X(f_aiter_kv_granularity, "decode_scheduler_kv_granularity")                                \
  X(f_aiter_max_seqlen_qo, "decode_scheduler_max_seqlen_qo")                                  \
  X(f_aiter_uni_seqlen_qo, "decode_scheduler_uni_seqlen_qo")                                  \
  X(f_aiter_fast_mode, "decode_scheduler_fast_mode")                                          \
  X(f_aiter_dtype_q, "decode_scheduler_dtype_q")                                              \
  X(f_aiter_dtype_kv, "decode_scheduler_dtype_kv")
ATTN_NAMED_LIST(Fid, MLA_FIELDS);
constexpr size_t kFieldIds = kFidCount;

/// The metadata fields of a variant, in order: MLACommonMetadata, the decode part (with the
/// variant's additions), the prefill part, its chunked context.
std::vector<Fid> variant_fields(Variant v) {
  std::vector<Fid> f;
  if (is_sparse(v)) {
    // MLACommonMetadata (decode is always None), SparseMLACommonMetadata's own, the prefill
    // part (SparseMLAPrefillMetadata: no 0.13 extensions), FlashMLASparseMetadata's.
    for (size_t i = f_num_reqs; i <= f_chunked_prefill_workspace_size; ++i)
      f.push_back(static_cast<Fid>(i));
    for (const Fid i : {f_block_table, f_req_id_per_token, f_seq_lens, f_block_size, f_topk_tokens,
                        f_decode_max_query_len, f_prefill_max_seq_len,
                        f_cp_kv_cache_interleave_size})
      f.push_back(i);
    for (size_t i = f_prefill_block_table; i <= f_prefill_use_dense_mha; ++i)
      f.push_back(static_cast<Fid>(i));
    for (size_t i = f_prefill_chunked_context_context_lens; i <= f_chunk_local_starts; ++i)
      f.push_back(static_cast<Fid>(i));
    if (v == Variant::kFlashMlaSparse)  // FlashMLASparseMetadata's own
      for (size_t i = f_fp8_scheduler_metadata; i <= f_fp8_use_mixed_batch; ++i)
        f.push_back(static_cast<Fid>(i));
    if (v == Variant::kFlashInferMlaSparseSm90)  // FlashInferMLASparseSM90Metadata.state
      for (size_t i = f_sm90_qo_indptr; i <= f_sm90_replanned; ++i)
        f.push_back(static_cast<Fid>(i));
    return f;
  }
  for (size_t i = f_num_reqs; i <= f_decode_dcp_tot_seq_lens; ++i) f.push_back(static_cast<Fid>(i));
  if (v == Variant::kFlashAttnMla)
    for (size_t i = f_decode_query_start_loc; i <= f_decode_scheduler_num_splits; ++i)
      f.push_back(static_cast<Fid>(i));
  if (v == Variant::kFlashMla) {
    for (const Fid i : {f_decode_scheduler_metadata, f_decode_scheduler_cache_seqlens})
      f.push_back(i);
    for (size_t i = f_decode_scheduler_num_q_tokens_per_head_k; i <= f_decode_num_splits_buffer;
         ++i)
      f.push_back(static_cast<Fid>(i));
  }
  if (v == Variant::kRocmAiterMla) {  // AiterMLADecodeMetadata's, then aiter's arguments
    for (size_t i = f_aiter_paged_kv_indptr; i <= f_aiter_varlen_o_rows; ++i)
      f.push_back(static_cast<Fid>(i));
    for (const Fid i : {f_aiter_num_heads_per_head_k, f_decode_scheduler_num_heads_k,
                        f_aiter_is_causal, f_decode_scheduler_page_size, f_aiter_kv_granularity,
                        f_aiter_max_seqlen_qo, f_aiter_uni_seqlen_qo, f_aiter_fast_mode,
                        f_aiter_dtype_q, f_aiter_dtype_kv})
      f.push_back(i);
  }
  if (v == Variant::kFlashInferMla)  // FlashInferMLADecodeMetadata's order
    for (const Fid i : {f_decode_flattened_block_table, f_decode_flattened_seq_lens,
                        f_decode_flattened_row_req, f_decode_query_len, f_decode_query_start_loc,
                        f_decode_max_query_len})
      f.push_back(i);
  for (size_t i = f_prefill_block_table; i <= f_chunk_local_starts; ++i)
    f.push_back(static_cast<Fid>(i));
  if (v == Variant::kAmxMla)
    for (size_t i = f_amx_decode_req_to_token; i <= f_amx_prefill_max_len_extend; ++i)
      f.push_back(static_cast<Fid>(i));
  return f;
}

std::vector<std::string> field_names(Variant v) {
  std::vector<std::string> names;
  for (const Fid f : variant_fields(v)) names.emplace_back(kFidNames[f]);
  return names;
}

class MlaBuilder final : public Builder {
 public:
  MlaBuilder(std::shared_ptr<const Backend> backend, const VariantInfo& v, const KvCacheSpec& spec,
             const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        v_(v),
        buffers_(v.name.c_str(), config.device, plan(v, spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(field_names(v.variant));
    pos_.assign(kFieldIds, kAbsent);
    for (size_t f = 0; f < kFieldIds; ++f)
      if (const auto i = metadata().find(kFidNames[f])) pos_[f] = *i;
    const BuilderConfig& c = this->config();
    sparse_ = is_sparse(v.variant);
    workspace_ = mla_chunked_prefill_workspace_size(spec, c, sparse_);
    chunk_params_ = mla_chunk_capacities(spec, c, sparse_);
    // the CPU platform's get_mla_prefill_backend ignores attention_config.mla_prefill_backend
    // and picks ZEN_CPU where zentorch is installed, else CPU (libattn assumes no zentorch)
    // ROCM_AITER_MLA: the ROCm platform's get_mla_prefill_backend_cls, ROCM_AITER_FA first
    // (valid for the dimensions libattn accepts), unless config->mla_prefill_backend names one
    if (v.variant == Variant::kRocmAiterMla)
      prefill_backend_ = c.mla_prefill_backend == kMlaPrefillAuto ? kPrefillRocmAiterFa
                                                                  : c.mla_prefill_backend - 1;
    else
      prefill_backend_ = is_cpu_variant(v.variant) ? kPrefillCpu : prefill_backend(c);
    dcp_ = c.decode_context_parallel_size;
    interleave_ = c.cp_kv_cache_interleave_size;
    use_full_cuda_graph_ = has_full_cudagraphs(c.cudagraph_mode);
    max_cudagraph_size_ = max_cudagraph_size(c);
    if (v.variant == Variant::kFlashAttnMla) {
      fa_aot_schedule_ = fa_mla_aot(c);
      if (use_full_cuda_graph_ && fa_aot_schedule_)
        max_num_splits_ = c.flash_attn_max_num_splits_for_cuda_graph;
      if (c.batch_invariant) max_num_splits_ = 1;
    }
    if (!c.layers.empty()) {
      hyper_ = infer_global_hyperparameters(c.layers).params;
    } else {
      hyper_.sm_scale =
          1.0 / std::sqrt(static_cast<double>(qk_nope_head_dim(c) + qk_rope_head_dim(c)));
    }
    if (sparse_) {
      topk_tokens_ = sparse_index_topk(spec);
      fp8_use_mixed_batch_ = c.num_attention_heads < kMinHeadsForBf16Prefill;
      if (flashmla_sparse_fp8(v.variant, c))  // vLLM's max_model_len_tensor: torch.full
        ops::fill_i32(exec(nullptr), buffers_.as<int32_t>(kBufMaxModelLen), c.max_num_seqs,
                      c.max_model_len);
      // Varlen decodes are safe under DCP with interleave 1 (vLLM 0.33's comment: causality
      // comes from the indexer's top-k indices).
      // FLASHMLA_SPARSE: varlen decodes are safe under DCP with interleave 1 (vLLM 0.33's
      // comment: causality comes from the indexer's top-k indices); FLASHINFER_MLA_SPARSE
      // always; FLASH_ATTN_MLA_SPARSE never (the base default).
      const bool dcp_varlen = fi_sparse_builder(v.variant) ||
                              (v.variant == Variant::kFlashMlaSparse &&
                               c.cp_kv_cache_interleave_size == 1);
      init_reorder_batch_threshold(sparse_reorder_threshold(v.variant, c),
                                   /*supports_spec_as_decode=*/true, dcp_varlen);
      return;
    }
    // AMX_MLA's num_compute_units(): torch.get_num_threads() on vLLM's CPU platform, given as
    // config->num_sms; 0: the host's hardware threads (torch's default may count cores only)
    amx_threads_ = c.num_sms > 0 ? c.num_sms
                                 : std::max<int64_t>(1, std::thread::hardware_concurrency());
    init_reorder_batch_threshold(v.reorder_batch_threshold,
                                 v.query_len_support != QueryLenSupport::kSingleOnly,
                                 supports_dcp_with_varlen(v.variant, c));
    if (v.variant == Variant::kRocmAiterMla) init_aiter();
  }

  /// vLLM 0.33: TRITON_MLA without DCP (DCP-local lengths are not advanced between draft
  /// steps; its update is a no-op). The other dense MLA builders keep the base class's "no"
  /// (0.33's FLASH_ATTN_MLA, FLASHMLA, CUTLASS_MLA and FLASHINFER_MLA do not set it).
  std::string draft_decode_update_refusal() const override {
    if (v_.variant == Variant::kFlashAttnMlaSparse || trtllm_sparse_builder(v_.variant))
      return dcp_ > 1 ? "decode context parallel (vLLM 0.33's sparse builders update only "
                        "without DCP)"
                      : "";  // vLLM 0.33: dcp_world_size == 1
    if (v_.variant != Variant::kTritonMla) return Builder::draft_decode_update_refusal();
    return dcp_ > 1 ? "decode context parallel (DCP-local lengths are not advanced between "
                      "draft steps)"
                    : "";
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool /*fast_build: unused by vLLM's MLA*/,
                const ops::Exec& exec) override {
    const BuilderConfig& cfg = config();
    const int64_t n = c.num_reqs;
    const int32_t threshold = reorder_batch_threshold().value_or(1);
    // vLLM 0.33: a non-causal batch (common.causal is False, not a per-request tensor) is one
    // uniform query block, all decodes; otherwise the split with
    // treat_short_extends_as_decodes = not use_pcp (libattn has no prefill context
    // parallelism: always true).
    // The sparse builders never read common.causal.
    const bool non_causal = !sparse_ && !c.causal && !c.causal_per_request;
    const ops::BatchSplit s =
        non_causal ? non_causal_split(c)
                   : ops::split_decodes_and_prefills(
                         c.qsl_host, n, c.num_actual_tokens, c.max_query_len, threshold,
                         /*require_uniform=*/v_.query_len_support != QueryLenSupport::kVarlen &&
                             aiter_varlen_qlen_ == 0,
                         v_.name.c_str());
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    const bool dcp = dcp_ > 1;
    // vLLM 0.33 reads the prefills' context lengths from seq_lens_cpu_upper_bound ("exact for
    // prefill rows", no sync), even where a uniform split counts an async spec-decode row, whose
    // bound assumes every draft accepted, as a prefill; without the bound, the exact host
    // lengths (libattn's pre-1.4 callers).
    const int32_t* prefill_seq_lens = c.seq_lens_upper_bound();
    if (np > 0 && prefill_seq_lens == nullptr)
      invalid("common->seq_lens_cpu_upper_bound is NULL (and no host seq_lens is given); ",
              v_.name, " reads the context lengths of the prefills on the host (vLLM 0.33 "
              "asserts seq_lens_cpu_upper_bound is not None)");
    if (nd > 0 && dcp && !sparse_ && !c.dcp_local_seq_lens)
      invalid("common->dcp_local_seq_lens is NULL; ", v_.name,
              " decodes with "
              "decode_context_parallel_size=",
              dcp_, " read this rank's lengths from it");
    const Tensor& bt = *c.block_table_tensor;
    if (nd > 0 && v_.variant == Variant::kFlashMla && cfg.batch_invariant && !is_fp8_cache(cfg) &&
        bt.shape[1] % 64 != 0)
      invalid("FLASHMLA's batch-invariant decode needs the block table width (", bt.shape[1],
              " columns) to be a multiple of 64 (vLLM asserts topk % 64 == 0)");
    ops::MlaChunkCounts chunks;
    if (np > 0) {
      int32_t* contexts = buffers_.as<int32_t>(kBufHostContextLens);
      for (int64_t i = 0; i < np; ++i)
        contexts[i] = static_cast<int32_t>(prefill_seq_lens[nd + i] - c.query_len(nd + i));
      // The plan's only refusals are a workspace below the alignment (refused at create) and a
      // batch beyond the buffers' capacities (which the config's limits exclude).
      chunks = ops::mla_context_chunk_plan(contexts, c.qsl_host + nd, np, chunk_params_,
                                           host_chunk_out(), v_.name.c_str());
    }
    Fp8Plan fp8;
    if (sparse_) fp8 = plan_sparse_fp8(c, nd, np, s.num_decode_tokens);
    if (v_.variant == Variant::kAmxMla) {
      // req_to_token: the decodes' rows (int32), then the prefills' (int64), of W x block_size
      // entries each, in a buffer of max_num_seqs rows of max_blocks_per_req x block_size int64
      const int64_t row = bt.shape[1] * spec().block_size;
      const int64_t need = (nd * row * 4 + 7) / 8 * 8 + np * row * 8;
      const int64_t have = static_cast<int64_t>(cfg.max_num_seqs) * amx_row_entries(spec(), cfg) * 8;
      if (need > have)
        invalid("common->block_table_tensor has ", bt.shape[1], " columns: AMX_MLA's req_to_token "
                "of ", nd, " decode and ", np, " prefill rows of ", row, " entries needs ", need,
                " bytes, more than the ", have, " its buffer holds (config->max_num_seqs rows of "
                "cdiv(config->max_model_len, block_size) blocks)");
    }
    if (v_.variant == Variant::kRocmAiterMla && nd > 0) aiter_ = plan_aiter(c, nd, s, !non_causal);
    // Past every check: a refused batch leaves the previous metadata as it was.

    int64_t max_seq_len = c.max_seq_len;
    if (nd > 0 && dcp && !sparse_) {
      // The most tokens a rank holds: ceil(L / (N * I)) * I, without a device sync.
      const int64_t partitions = static_cast<int64_t>(dcp_) * interleave_;
      max_seq_len = (max_seq_len + partitions - 1) / partitions * interleave_;
    }
    Metadata& m = metadata();
    m.reset();
    m.set_int(at(f_num_reqs), n);
    m.set_int(at(f_max_query_len), c.max_query_len);
    m.set_int(at(f_max_seq_len), max_seq_len);
    m.set_int(at(f_num_actual_tokens), c.num_actual_tokens);
    m.set_tensor(at(f_query_start_loc), *c.query_start_loc);
    m.set_tensor(at(f_slot_mapping), *c.slot_mapping);
    m.set_int(at(f_num_decodes), nd);
    m.set_int(at(f_num_decode_tokens), s.num_decode_tokens);
    m.set_int(at(f_num_prefills), np);
    m.set_bool(at(f_causal), !non_causal);  // vLLM's causal=not non_causal_decode
    if (!sparse_) m.set_int(at(f_head_dim), spec().head_size);  // the sparse build leaves None
    m.set_int(at(f_chunked_prefill_workspace_size), workspace_);
    if (sparse_) {
      build_sparse(c, nd, np, s.num_decode_tokens, fp8, exec);
      if (np > 0) build_prefill(c, nd, np, chunks, exec);
      if (v_.variant == Variant::kFlashInferMlaSparseSm90) plan_sm90(c, np, s.num_decode_tokens);
      return;
    }
    if (np > 0) build_prefill(c, nd, np, chunks, exec);
    // vLLM 0.33 hands _build_decode the promised bound min(common.max_query_len, threshold);
    // FLASHMLA and FLASH_ATTN_MLA measure the decodes' longest query instead.
    const int64_t decode_bound = std::min<int64_t>(c.max_query_len, threshold);
    if (nd > 0) build_decode(c, nd, s.num_decode_tokens, max_seq_len, decode_bound, exec);
    if (v_.variant == Variant::kAmxMla) build_amx(c, nd, np, max_seq_len, exec);
  }

  /// FlashInferMLASparseTRTLLMMetadataBuilder.get_varlen_cudagraph_max_query_len (and its FA4
  /// subclass's): max_decode_query_len; the others keep the base class's None.
  std::optional<int32_t> varlen_cudagraph_max_query_len() const override {
    if (trtllm_sparse_builder(v_.variant)) return max_decode_query_len();
    // AiterMLAMetadataBuilder's: under adaptive varlen verify (its level is UNIFORM_BATCH)
    if (aiter_varlen_qlen_ > 0) return max_decode_query_len();
    return std::nullopt;
  }

  /// FLASH_ATTN_MLA_SPARSE's (and the TRT-LLM sparse builders') update_draft_decode_metadata: req_id_per_token again over the
  /// decode tokens from the (advanced) query_start_loc the metadata views.
  void do_update_draft_decode(const Metadata& md, const ops::Exec& exec) override {
    if (v_.variant != Variant::kFlashAttnMlaSparse && !trtllm_sparse_builder(v_.variant))
      return Builder::do_update_draft_decode(md, exec);
    const int64_t tokens = md.field(at(f_num_decode_tokens)).int_value;
    if (tokens == 0) return;
    const Tensor& qsl = md.field(at(f_query_start_loc)).tensor;
    ops::compute_token_to_req_indices(exec, qsl.as<const int32_t>(),
                                      md.field(at(f_num_reqs)).int_value, tokens, tokens,
                                      buffers_.as<int32_t>(kBufReqIdPerToken));
  }

  /// vLLM's build_for_cudagraph_capture: decode-only batches.
  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    // The sparse builders keep the base class's build_for_cudagraph_capture (build).
    if (sparse_) return do_build(0, c, false, exec);
    const int64_t t = reorder_batch_threshold().value_or(1);
    if (c.num_reqs > c.num_actual_tokens * t)
      fail(Status::kUnsupported, v_.name,
           " only supports decode-only full CUDA graph capture: "
           "num_reqs=",
           c.num_reqs, " exceeds num_actual_tokens=", c.num_actual_tokens,
           " * reorder_batch_threshold=", t, " (make every capture size <= max_num_seqs)");
    if (c.max_query_len > t)
      fail(Status::kUnsupported, v_.name,
           " only supports decode-only full CUDA graph capture: "
           "max_query_len=",
           c.max_query_len, " exceeds reorder_batch_threshold=", t);
    do_build(0, c, false, exec);
  }

 private:
  /// The index of a field of this variant (resolved at create time; Error(kInternal) for a
  /// field the variant does not have).
  size_t at(Fid f) const {
    if (pos_[f] == kAbsent) fail(Status::kInternal, v_.name, " has no field ", kFidNames[f]);
    return pos_[f];
  }

  Tensor device_vector(Buffer b, int64_t n) const {
    return make_vector(buffers_.get(b), config().device, kInt32, n);
  }

  int32_t* chunk_list(ChunkList l) const {
    return buffers_.as<int32_t>(kBufChunkLists) + l * (chunk_params_.max_chunks + 1);
  }
  int32_t* entry_list(int64_t l) const {
    return buffers_.as<int32_t>(kBufEntryLists) + l * chunk_params_.max_entries;
  }
  int32_t* chunk_entry_offsets_host() const { return entry_list(kEntryListCount); }
  int32_t* allranks_host() const {
    return chunk_entry_offsets_host() + chunk_params_.max_chunks + 1;
  }

  /// Where mla_context_chunk_plan writes: the builder's host buffers.
  ops::MlaChunkHostOut host_chunk_out() {
    ops::MlaChunkHostOut o;
    o.request_start = chunk_list(kChunkRequestStart);
    o.request_end = chunk_list(kChunkRequestEnd);
    o.token_start = chunk_list(kChunkTokenStart);
    o.token_end = chunk_list(kChunkTokenEnd);
    o.continuation_token_end = chunk_list(kChunkContinuationTokenEnd);
    o.is_continuation = chunk_list(kChunkIsContinuation);
    o.num_context_tokens = chunk_list(kChunkNumContextTokens);
    o.max_query_len = chunk_list(kChunkMaxQueryLen);
    o.max_seq_len = chunk_list(kChunkMaxSeqLen);
    o.all_rows_active = chunk_list(kChunkAllRowsActive);
    o.num_local_context_tokens = chunk_list(kChunkNumLocalContextTokens);
    o.request_offsets = chunk_list(kChunkRequestOffsets);
    o.boundary_offsets = chunk_list(kChunkBoundaryOffsets);
    o.token_offsets = chunk_list(kChunkTokenOffsets);
    o.local_token_offsets = chunk_list(kChunkLocalTokenOffsets);
    o.seq_lens = entry_list(kEntrySeqLens);
    if (dcp_ > 1) {
      o.padded_local_seq_lens = entry_list(kEntryPaddedLocalSeqLens);
      o.local_starts = entry_list(kEntryLocalStarts);
      o.local_context_lens_allranks = allranks_host();
    }
    o.context_lens_list = buffers_.as<int32_t>(kBufContextLensList);
    o.empty_token_slices = buffers_.as<int32_t>(kBufEmptySlices);
    o.num_empty = &num_empty_;
    o.chunk_entry_offsets = chunk_entry_offsets_host();
    o.entry_request = entry_list(kEntryRequest);
    o.entry_start = entry_list(kEntryStart);
    o.entry_len = entry_list(kEntryLen);
    return o;
  }

  /// Where mla_context_chunk_tensors writes: the builder's device buffers.
  ops::MlaChunkTensors device_chunk_out() const {
    const int64_t C = chunk_params_.max_chunks, E = chunk_params_.max_entries;
    int32_t* scratch = buffers_.as<int32_t>(kBufPlanScratch);
    ops::MlaChunkTensors o;
    o.starts = buffers_.as<int32_t>(kBufStarts);
    o.query_start_loc = buffers_.as<int32_t>(kBufChunkQsl);
    o.cu_seq_lens = buffers_.as<int32_t>(kBufCuSeqLens);
    o.token_to_seq = buffers_.as<int32_t>(kBufTokenToSeq);
    if (dcp_ > 1) {
      o.padded_local_cu_seq_lens = buffers_.as<int32_t>(kBufPaddedLocalCu);
      o.padded_local_token_to_seq = buffers_.as<int32_t>(kBufPaddedLocalTts);
    }
    o.chunk_entry_offsets = scratch;
    o.chunk_token_offsets = scratch + (C + 1);
    o.chunk_local_token_offsets = scratch + 2 * (C + 1);
    o.entry_request = scratch + 3 * (C + 1);
    o.entry_start = o.entry_request + E;
    o.entry_len = o.entry_start + E;
    return o;
  }

  Tensor host_list(int32_t* p, int64_t n) const { return make_vector(p, Device{}, kInt32, n); }
  Tensor device_list(Buffer b, int64_t n) const {
    return make_vector(buffers_.get(b), config().device, kInt32, n);
  }

  void build_prefill(const CommonMetadata& c, int64_t nd, int64_t np,
                     const ops::MlaChunkCounts& chunks, const ops::Exec& exec) {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    const int64_t n = c.num_reqs, C = chunks.num_chunks, E = chunks.num_entries;
    const bool dcp = dcp_ > 1;
    // 0.33's TRTLLM_RAGGED and TOKENSPEED_MLA prefills read the query lengths on the device
    // (their prepare_metadata's _query_seq_lens); FlashInfer's plans its ragged wrapper.
    const bool query_seq_lens =
        prefill_backend_ == kPrefillTrtllmRagged || prefill_backend_ == kPrefillTokenspeedMla;
    const bool flashinfer = prefill_backend_ == kPrefillFlashInfer;
    // The device inputs; the host path reads the validated host lengths.
    const int32_t* qsl = (exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host) + nd;
    ops::MlaPrefillOut out;
    out.query_start_loc = buffers_.as<int32_t>(kBufPrefillQsl);
    if (query_seq_lens) out.query_seq_lens = buffers_.as<int32_t>(kBufQuerySeqLens);
    ops::mla_prefill_metadata(exec, qsl, np, out);
    if (C > 0) {
      // vLLM 0.33's context_lens: the host's (from seq_lens_cpu_upper_bound), copied to the
      // device (an asynchronous copy on the build's stream: the host buffer is the builder's
      // and stays until the next build); the device plan reads them from there.
      int32_t* contexts = buffers_.as<int32_t>(kBufContextLens);
      copy_i32_into_buffer(exec, buffers_.as<int32_t>(kBufHostContextLens), true, np, contexts);
      ops::mla_context_chunk_tensors(exec, qsl, contexts, np, chunk_params_, chunks,
                                     device_chunk_out());
    }
    int32_t* query_lens_cpu = buffers_.as<int32_t>(kBufQueryLensCpu);
    for (int64_t i = 0; i < np; ++i) query_lens_cpu[i] = static_cast<int32_t>(c.query_len(nd + i));

    const int32_t model_dtype = cfg.model_dtype_for(spec());
    m.set_tensor(at(f_prefill_block_table), rows_between(*c.block_table_tensor, nd, n));
    m.set_tensor(at(f_prefill_query_start_loc), device_vector(kBufPrefillQsl, np + 1), true);
    // The sparse builders' _build_prefill_fields measure the prefills' longest query.
    int64_t prefill_max_query_len = c.max_query_len;
    if (sparse_) {
      prefill_max_query_len = 0;
      for (int64_t i = 0; i < np; ++i)
        prefill_max_query_len = std::max(prefill_max_query_len, c.query_len(nd + i));
    }
    m.set_int(at(f_prefill_max_query_len), prefill_max_query_len);
    // The output has the model's dtype; the query FP8 under use_prefill_query_quantization
    // (the sparse builders' queries keep the model's dtype).
    m.set_int(at(f_prefill_q_data_type),
              sparse_ ? model_dtype : prefill_query_dtype(cfg, prefill_backend_, model_dtype));
    m.set_int(at(f_prefill_output_dtype), model_dtype);
    m.set_int(at(f_prefill_prefill_backend), prefill_backend_);
    m.set_tensor(at(f_prefill_query_lens_cpu), host_list(query_lens_cpu, np), true);
    // Only the sparse builders use dense MHA: when every prefill fits the top-k budget
    // (vLLM 0.33's _use_dense_mha_prefill without HiSparse or sparse_mla_force_mqa, neither a
    // libattn input; libattn has no prefill context parallelism).
    m.set_bool(at(f_prefill_use_dense_mha), sparse_ && sparse_prefill_max_seq_len(c, nd, np) <=
                                                           topk_tokens_);
    if (query_seq_lens)
      m.set_tensor(at(f_prefill_query_seq_lens), device_vector(kBufQuerySeqLens, np), true);
    if (flashinfer && !sparse_) {  // the sparse prefill metadata has no plan fields
      // FlashInfer's ragged prefill plan(): non-latent heads, num_kv_heads == num_qo_heads.
      m.set_int(at(f_prefill_num_qo_heads), cfg.num_attention_heads);
      m.set_int(at(f_prefill_num_kv_heads), cfg.num_attention_heads);
      m.set_int(at(f_prefill_head_dim_qk), qk_nope_head_dim(cfg) + qk_rope_head_dim(cfg));
      m.set_int(at(f_prefill_head_dim_vo), v_head_dim(cfg));
      m.set_float(at(f_prefill_sm_scale), hyper_.sm_scale);
      m.set_int(at(f_prefill_window_left), hyper_.window_left);
      if (hyper_.logits_soft_cap)
        m.set_float(at(f_prefill_logits_soft_cap), *hyper_.logits_soft_cap);
    }
    if (C == 0) return;  // no prefill has context: chunked_context is None

    const int64_t boundaries = E + C;
    m.set_tensor(at(f_prefill_chunked_context_context_lens), device_list(kBufContextLens, np),
                 true);
    m.set_tensor(at(f_prefill_chunked_context_context_lens_list),
                 host_list(buffers_.as<int32_t>(kBufContextLensList), np), true);
    m.set_tensor(at(f_prefill_chunked_context_empty_token_slices),
                 make_matrix(buffers_.get(kBufEmptySlices), Device{}, kInt32, num_empty_, 2, 2),
                 true);
    m.set_int(at(f_prefill_chunked_context_num_chunks), C);
    static constexpr std::pair<Fid, ChunkList> kScalars[] = {
        {f_chunk_request_start, kChunkRequestStart},
        {f_chunk_request_end, kChunkRequestEnd},
        {f_chunk_token_start, kChunkTokenStart},
        {f_chunk_token_end, kChunkTokenEnd},
        {f_chunk_continuation_token_end, kChunkContinuationTokenEnd},
        {f_chunk_is_continuation, kChunkIsContinuation},
        {f_chunk_num_context_tokens, kChunkNumContextTokens},
        {f_chunk_max_query_len, kChunkMaxQueryLen},
        {f_chunk_max_seq_len, kChunkMaxSeqLen},
        {f_chunk_all_rows_active, kChunkAllRowsActive},
        {f_chunk_num_local_context_tokens, kChunkNumLocalContextTokens},
        {f_chunk_boundary_offsets, kChunkBoundaryOffsets}};
    for (const auto& [f, l] : kScalars) m.set_tensor(at(f), host_list(chunk_list(l), C), true);
    m.set_tensor(at(f_chunk_request_offsets), host_list(chunk_list(kChunkRequestOffsets), C + 1),
                 true);
    m.set_tensor(at(f_chunk_token_offsets), host_list(chunk_list(kChunkTokenOffsets), C + 1),
                 true);
    m.set_tensor(at(f_chunk_query_start_loc), device_list(kBufChunkQsl, boundaries), true);
    m.set_tensor(at(f_chunk_cu_seq_lens), device_list(kBufCuSeqLens, boundaries), true);
    m.set_tensor(at(f_chunk_starts), device_list(kBufStarts, E), true);
    m.set_tensor(at(f_chunk_seq_lens), host_list(entry_list(kEntrySeqLens), E), true);
    m.set_tensor(at(f_chunk_token_to_seq), device_list(kBufTokenToSeq, chunks.num_tokens), true);
    if (dcp) {
      m.set_tensor(at(f_chunk_local_token_offsets),
                   host_list(chunk_list(kChunkLocalTokenOffsets), C + 1), true);
      m.set_tensor(at(f_chunk_padded_local_seq_lens),
                   host_list(entry_list(kEntryPaddedLocalSeqLens), E), true);
      m.set_tensor(at(f_chunk_local_context_lens_allranks),
                   make_matrix(allranks_host(), Device{}, kInt32, E, dcp_, dcp_), true);
      m.set_tensor(at(f_chunk_padded_local_cu_seq_lens), device_list(kBufPaddedLocalCu, boundaries),
                   true);
      m.set_tensor(at(f_chunk_padded_local_token_to_seq),
                   device_list(kBufPaddedLocalTts, chunks.num_local_tokens), true);
      m.set_tensor(at(f_chunk_local_starts), host_list(entry_list(kEntryLocalStarts), E), true);
    }
  }

  /// AMX_MLA's attributes (AMXMLAMetadataBuilder.build after the base build): for the decodes
  /// req_to_token (the expanded block table, int32), seq_lens_i64, req_pool_indices (arange)
  /// and num_kv_splits (powers of two up to max_seq_len // 512, at most 2 x config->num_sms);
  /// for the prefills cpu_seq_lens (the batch's seq_lens, int64), req_to_token (int64),
  /// req_pool_indices, extend_seq_lens / extend_start_loc (from the prefill query_start_loc)
  /// and max_len_extend (host).
  void build_amx(const CommonMetadata& c, int64_t nd, int64_t np, int64_t max_seq_len,
                 const ops::Exec& exec) {
    const BuilderConfig& cfg = config();
    const Device dev = cfg.device;
    Metadata& m = metadata();
    const Tensor& bt = *c.block_table_tensor;
    const int32_t bs = spec().block_size;
    const int64_t cols = bt.shape[1], row = cols * bs;
    char* rows = static_cast<char*>(buffers_.get(kBufReqToToken));
    int64_t* pool = buffers_.as<int64_t>(kBufPoolIndices);
    ops::iota_i64(exec, pool, std::max(nd, np));
    if (nd > 0) {
      int32_t* r2t = reinterpret_cast<int32_t*>(rows);
      ops::expand_block_table_i32(exec, bt.as<const int32_t>(), bt.strides[0], nd, cols, bs, r2t);
      m.set_tensor(at(f_amx_decode_req_to_token), make_matrix(r2t, dev, kInt32, nd, row, row),
                   true);
      const Tensor& lens = m.field(at(f_decode_seq_lens)).tensor;
      int64_t* lens64 = buffers_.as<int64_t>(kBufSeqLensI64);
      ops::widen_i32_i64(exec, lens.as<const int32_t>(), nd, lens64);
      m.set_tensor(at(f_amx_decode_seq_lens_i64), make_vector(lens64, dev, kInt64, nd), true);
      m.set_tensor(at(f_amx_decode_req_pool_indices), make_vector(pool, dev, kInt64, nd), true);
      int64_t splits = 1;  // _compute_num_kv_splits
      while (splits < std::max<int64_t>(1, max_seq_len / 512)) splits *= 2;
      m.set_int(at(f_amx_decode_num_kv_splits), std::min<int64_t>(splits, 2 * amx_threads_));
    }
    if (np > 0) {
      int64_t* r2t = reinterpret_cast<int64_t*>(rows + (nd * row * 4 + 7) / 8 * 8);
      ops::expand_block_table_i64(exec, bt.as<const int32_t>() + nd * bt.strides[0],
                                  bt.strides[0], np, cols, bs, r2t);
      m.set_tensor(at(f_amx_prefill_req_to_token), make_matrix(r2t, dev, kInt64, np, row, row),
                   true);
      int64_t* cpu_lens = buffers_.as<int64_t>(kBufCpuSeqLens);
      ops::widen_i32_i64(exec, c.seq_lens->as<const int32_t>() + nd, np, cpu_lens);
      m.set_tensor(at(f_amx_prefill_cpu_seq_lens), make_vector(cpu_lens, dev, kInt64, np), true);
      m.set_tensor(at(f_amx_prefill_req_pool_indices), make_vector(pool, dev, kInt64, np), true);
      int64_t* lens = buffers_.as<int64_t>(kBufExtendLens);
      int64_t* starts = buffers_.as<int64_t>(kBufExtendStarts);
      ops::extend_lens_i64(exec, buffers_.as<const int32_t>(kBufPrefillQsl), np, lens, starts);
      m.set_tensor(at(f_amx_prefill_extend_seq_lens), make_vector(lens, dev, kInt64, np), true);
      m.set_tensor(at(f_amx_prefill_extend_start_loc), make_vector(starts, dev, kInt64, np),
                   true);
      int64_t longest = 0;
      for (int64_t i = 0; i < np; ++i) longest = std::max(longest, c.query_len(nd + i));
      m.set_int(at(f_amx_prefill_max_len_extend), longest);
    }
  }

  /// vLLM 0.33's non-causal multi-token decode: every request a decode, provided the builder
  /// supports it and the queries are one uniform block followed by zero-length padding.
  ops::BatchSplit non_causal_split(const CommonMetadata& c) const {
    if (!v_.supports_non_causal_multi_token_decode)
      fail(Status::kUnsupported, v_.name,
           ": non-causal multi-token MLA (common->causal=0) requires an explicitly supported "
           "attention group (vLLM 0.33's supports_non_causal_multi_token_decode: "
           "FLASHINFER_MLA, TRITON_MLA)");
    const int64_t n = c.num_reqs;
    int64_t active = 0;
    for (int64_t i = 0; i < n; ++i) active += c.query_len(i) > 0;
    bool ok = active > 0;
    for (int64_t i = 0; i < n && ok; ++i)
      ok = i < active ? c.query_len(i) == c.query_len(0) : c.query_len(i) == 0;
    if (!ok) {
      std::string lens;
      for (int64_t i = 0; i < n && i < 16; ++i)
        lens += (i ? ", " : "") + std::to_string(c.query_len(i));
      invalid("Non-causal MLA requires a uniform query block; got query lengths [", lens,
              n > 16 ? ", ...]" : "]", " (common->causal=0)");
    }
    ops::BatchSplit s;
    s.num_decodes = n;
    s.num_decode_tokens = c.num_actual_tokens;
    return s;
  }

  void build_decode(const CommonMetadata& c, int64_t nd, int64_t num_decode_tokens,
                    int64_t max_seq_len, int64_t decode_bound, const ops::Exec& exec) {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    const bool dcp = dcp_ > 1;
    const Tensor seq_lens = rows_between(dcp ? *c.dcp_local_seq_lens : *c.seq_lens, 0, nd);
    m.set_tensor(at(f_decode_block_table), rows_between(*c.block_table_tensor, 0, nd));
    m.set_tensor(at(f_decode_seq_lens), seq_lens);
    if (dcp) m.set_tensor(at(f_decode_dcp_tot_seq_lens), rows_between(*c.seq_lens, 0, nd));
    int64_t max_query_len = 0;  // the decodes' (uniform unless VARLEN)
    for (int64_t i = 0; i < nd; ++i) max_query_len = std::max(max_query_len, c.query_len(i));

    if (v_.variant == Variant::kFlashAttnMla) {
      const Tensor qsl = rows_between(*c.query_start_loc, 0, nd + 1);
      int64_t max_num_splits = 0;
      if (use_full_cuda_graph_ && max_cudagraph_size_ > 0 &&
          num_decode_tokens <= max_cudagraph_size_)
        max_num_splits = max_num_splits_;
      if (cfg.batch_invariant) max_num_splits = 1;
      m.set_tensor(at(f_decode_query_start_loc), qsl);
      m.set_int(at(f_decode_max_query_len), max_query_len);
      m.set_int(at(f_decode_max_seq_len), max_seq_len);
      m.set_int(at(f_decode_max_num_splits), max_num_splits);
      if (fa_aot_schedule_) {
        if (use_full_cuda_graph_)
          m.set_tensor(at(f_decode_scheduler_metadata_buffer),
                       device_vector(kBufSchedulerMetadata, scheduler_metadata_entries(cfg)), true);
        m.set_int(at(f_decode_scheduler_batch_size), nd);
        m.set_int(at(f_decode_scheduler_max_seqlen_q), max_query_len);
        m.set_int(at(f_decode_scheduler_max_seqlen_k), max_seq_len);
        m.set_int(at(f_decode_scheduler_num_heads_q),
                  static_cast<int64_t>(cfg.num_attention_heads) * dcp_);
        m.set_int(at(f_decode_scheduler_num_heads_kv), 1);
        m.set_int(at(f_decode_scheduler_headdim), qk_rope_head_dim(cfg));
        m.set_tensor(at(f_decode_scheduler_cache_seqlens), seq_lens);
        m.set_int(at(f_decode_scheduler_qkv_dtype), spec().dtype);
        m.set_int(at(f_decode_scheduler_headdim_v), kv_lora_rank(cfg));
        m.set_int(at(f_decode_scheduler_page_size), spec().block_size);
        m.set_tensor(at(f_decode_scheduler_cu_seqlens_q), qsl);
        m.set_bool(at(f_decode_scheduler_causal), true);
        m.set_int(at(f_decode_scheduler_num_splits), max_num_splits);
      }
    } else if (v_.variant == Variant::kRocmAiterMla) {
      build_aiter_decode(c, nd, exec);
    } else if (v_.variant == Variant::kFlashInferMla) {
      // FlashInferMLADecodeMetadata: the flattened rows stay unbuilt (None, query_len 0; the
      // impl fills them lazily for non-causal blocks); the promised bound, not the measured.
      m.set_int(at(f_decode_query_len), 0);
      m.set_tensor(at(f_decode_query_start_loc), rows_between(*c.query_start_loc, 0, nd + 1));
      m.set_int(at(f_decode_max_query_len), decode_bound);
    } else if (v_.variant == Variant::kFlashMla) {
      // get_mla_metadata(cache_seqlens, num_q_tokens_per_head_k, num_heads_k=1, is_fp8_kvcache)
      // and, with an fp8 cache, get_mla_metadata_dense_fp8 with the same first three; the
      // query heads are this rank's times the DCP size (the heads DCP all-gathers).
      m.set_tensor(at(f_decode_scheduler_cache_seqlens), seq_lens);
      m.set_int(at(f_decode_scheduler_num_q_tokens_per_head_k),
                max_query_len * cfg.num_attention_heads * dcp_);
      m.set_int(at(f_decode_scheduler_num_heads_k), 1);
      m.set_bool(at(f_decode_scheduler_is_fp8_kvcache), is_fp8_cache(cfg));
      if (flashmla_fp8_graph_buffers(v_, cfg)) {
        m.set_tensor(at(f_decode_tile_scheduler_metadata_buffer),
                     make_matrix(buffers_.get(kBufTileBuffer), cfg.device, kInt32, cfg.num_sms, 8,
                                 8),
                     true);
        m.set_tensor(at(f_decode_num_splits_buffer),
                     device_vector(kBufNumSplitsBuffer, cfg.max_num_seqs + 1), true);
      }
      if (cfg.batch_invariant && !is_fp8_cache(cfg)) {
        // vLLM's batch-invariant decode replaces FlashMLA's schedule by one partition.
        const int64_t width = c.block_table_tensor->shape[1];
        ops::flashmla_fixed_tile_schedule(exec, nd, static_cast<int32_t>(width / 64),
                                          buffers_.as<int32_t>(kBufTile),
                                          buffers_.as<int32_t>(kBufNumSplits));
        m.set_tensor(at(f_decode_tile_scheduler_metadata),
                     make_matrix(buffers_.get(kBufTile), cfg.device, kInt32, 1, 8, 8), true);
        m.set_tensor(at(f_decode_num_splits), device_vector(kBufNumSplits, nd + 1), true);
      }
    }
  }

  /// ROCM_AITER_MLA's construction: _mtp_decode_qlen (the threshold), the adaptive varlen
  /// width (vLLM asserts it equals max_decode_query_len) and the all-ones last-page lengths.
  void init_aiter() {
    const BuilderConfig& c = config();
    aiter_mtp_qlen_ = reorder_batch_threshold().value_or(1);
    if (aiter_adaptive_varlen(v_.variant, c)) {
      if (aiter_mtp_qlen_ != max_decode_query_len())
        fail(Status::kUnsupported, "ROCM_AITER_MLA: adaptive varlen verify needs the reorder "
             "threshold ", aiter_mtp_qlen_, " to equal max_decode_query_len ",
             max_decode_query_len(), " (vLLM 0.33 asserts it)");
      aiter_varlen_qlen_ = aiter_mtp_qlen_;
    }
    ops::fill_i32(exec(nullptr), buffers_.as<int32_t>(kBufAiterLastPage), c.max_num_seqs, 1);
  }

  /// ROCM_AITER_MLA's host plan of a batch's decodes, and what vLLM would refuse or libattn
  /// cannot index (a kernel length past the block table's tokens).
  AiterPlan plan_aiter(const CommonMetadata& c, int64_t nd, const ops::BatchSplit& s,
                       bool causal) const {
    const BuilderConfig& cfg = config();
    AiterPlanIn in;
    in.qsl = c.qsl_host;
    in.num_decodes = nd;
    in.num_decode_tokens = s.num_decode_tokens;
    in.causal = causal;
    in.varlen_qlen = aiter_varlen_qlen_;
    in.mtp_qlen = aiter_mtp_qlen_;
    in.decode_heads = cfg.num_attention_heads;
    in.fp8 = is_fp8_cache(cfg);
    in.full_graphs = use_full_cuda_graph_;
    const AiterPlan p = plan_aiter_decode(in);
    // Without exact host lengths (a CUDA batch with only the upper bound, or none) the kernel's
    // clamps (table width, buffer capacity) are the guard.
    if (!c.seq_lens_exact()) return p;
    const int64_t tokens = c.block_table_tensor->shape[1] * spec().block_size;
    int64_t total = 0;
    for (int64_t r = 0; r < nd; ++r) {
      const int64_t q = c.query_len(r), seq = c.host_seq_lens()[r];
      const int64_t len = p.varlen ? seq + p.max_qo_len - q : (p.pad && q <= 0 ? p.max_qo_len : seq);
      if (len > tokens + (p.varlen ? p.max_qo_len - 1 : 0))
        invalid("ROCM_AITER_MLA: decode ", r, " needs ", len, " pages, more than the ", tokens,
                " tokens of its block-table row (common->block_table_tensor has ",
                c.block_table_tensor->shape[1], " columns of ", spec().block_size, ")");
      total += len;
    }
    if (total > aiter_max_pages(v_.variant, cfg))
      invalid("ROCM_AITER_MLA: the decodes need ", total, " pages, more than paged_kv_indices' ",
              aiter_max_pages(v_.variant, cfg), " (max_num_seqs * max_model_len)");
    return p;
  }

  /// AiterMLADecodeMetadata and get_mla_metadata_v1's arguments (aiter's schedule itself, the
  /// work_* / reduce_* buffers, is the runtime's).
  void build_aiter_decode(const CommonMetadata& c, int64_t nd, const ops::Exec& exec) {
    const BuilderConfig& cfg = config();
    const Device dev = cfg.device;
    Metadata& m = metadata();
    const AiterPlan& p = aiter_;
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
    a.reset_indices = use_full_cuda_graph_;
    a.indices_capacity = aiter_max_pages(v_.variant, cfg);
    a.indptr_capacity = use_full_cuda_graph_ ? cfg.max_num_seqs + 1 : 0;
    const int64_t rows = p.varlen ? static_cast<int64_t>(cfg.max_num_seqs) * aiter_varlen_qlen_ : 0;
    a.o_rows_size = p.varlen ? rows + 1 : 0;
    a.kernel_seq_lens = buffers_.as<int32_t>(kBufAiterSeqLens);
    a.indptr = buffers_.as<int32_t>(kBufAiterIndptr);
    a.indices = buffers_.as<int32_t>(kBufAiterIndices);
    a.qo_indptr = buffers_.as<int32_t>(kBufAiterQoIndptr);
    if (p.varlen) {
      a.q_rows = buffers_.as<int64_t>(kBufAiterQRows);
      a.o_rows = buffers_.as<int64_t>(kBufAiterORows);
    }
    ops::aiter_mla_decode_tables(exec, a);
    m.set_tensor(at(f_decode_seq_lens), make_vector(a.kernel_seq_lens, dev, kInt32, nd), true);
    m.set_tensor(at(f_aiter_paged_kv_indptr), make_vector(a.indptr, dev, kInt32, nd + 1), true);
    m.set_tensor(at(f_aiter_paged_kv_indices),
                 make_vector(a.indices, dev, kInt32, a.indices_capacity), true);
    m.set_tensor(at(f_aiter_paged_kv_last_page_len), device_vector(kBufAiterLastPage, nd), true);
    m.set_tensor(at(f_aiter_qo_indptr), make_vector(a.qo_indptr, dev, kInt32, nd + 1), true);
    const int32_t model_dtype = cfg.model_dtype_for(spec());
    m.set_int(at(f_aiter_attn_out_dtype), model_dtype);
    m.set_int(at(f_aiter_max_qo_len), p.max_qo_len);
    m.set_int(at(f_aiter_min_kv_seq_len), 1);
    m.set_int(at(f_aiter_dcp_route), 0);  // _DCPDecodeRoute.PLAIN
    m.set_int(at(f_aiter_cp_world_size), 1);
    m.set_int(at(f_aiter_cp_rank), 0);
    m.set_int(at(f_aiter_asm_decode_num_heads), 0);
    m.set_int(at(f_aiter_mla_num_kv_splits), 0);
    m.set_bool(at(f_aiter_use_gluon_decode), false);
    m.set_bool(at(f_aiter_use_gluon_verify), false);
    m.set_bool(at(f_aiter_has_persistent_metadata), p.persistent);
    if (p.varlen) {
      m.set_tensor(at(f_aiter_varlen_q_rows),
                   make_vector(a.q_rows, dev, kInt64, nd * aiter_varlen_qlen_), true);
      m.set_tensor(at(f_aiter_varlen_o_rows), make_vector(a.o_rows, dev, kInt64, rows + 1), true);
    }
    if (!p.persistent) return;
    // get_mla_metadata_v1(qo_indptr, paged_kv_indptr, paged_kv_last_page_len, heads, 1,
    // causal, <the schedule>, page_size=1, kv_granularity=16, max_seqlen_qo, uni_seqlen_qo,
    // fast_mode=True, dtype_q, dtype_kv)
    const bool fp8 = is_fp8_cache(cfg);
    m.set_int(at(f_aiter_num_heads_per_head_k), aiter_padded_heads(cfg.num_attention_heads));
    m.set_int(at(f_decode_scheduler_num_heads_k), 1);
    m.set_bool(at(f_aiter_is_causal), c.causal || c.causal_per_request);
    m.set_int(at(f_decode_scheduler_page_size), 1);
    m.set_int(at(f_aiter_kv_granularity), 16);
    m.set_int(at(f_aiter_max_seqlen_qo), p.max_qo_len);
    m.set_int(at(f_aiter_uni_seqlen_qo), p.uni_seqlen_qo);
    m.set_bool(at(f_aiter_fast_mode), true);
    m.set_int(at(f_aiter_dtype_q), fp8 ? kKvDtypeFp8E4m3 : model_dtype);
    m.set_int(at(f_aiter_dtype_kv), fp8 ? kKvDtypeFp8E4m3 : spec().dtype);
  }

  /// FLASHMLA_SPARSE's fp8 separate prefill/decode plan (host, before the metadata changes).
  struct Fp8Plan {
    bool separate = false;        ///< fp8 cache without the mixed batch
    int64_t decode_query_len = 0;
    int64_t active_decodes = 0;   ///< num_decode_tokens / decode_query_len
    int64_t num_chunks = 0;       ///< split_prefill_chunks' chunks
  };

  int32_t* fp8_chunk_list(Fp8ChunkList l) const {
    return buffers_.as<int32_t>(kBufFp8ChunkLists) + static_cast<int64_t>(l) * config().max_num_seqs;
  }

  /// The prefills' longest sequence, from seq_lens_cpu_upper_bound as vLLM 0.33 reads it ("exact
  /// for prefill rows"; optimistic for an async spec-decode row a uniform split made a prefill);
  /// the host lengths without the bound.
  int64_t sparse_prefill_max_seq_len(const CommonMetadata& c, int64_t nd, int64_t np) const {
    int64_t longest = 0;
    for (int64_t i = nd; i < nd + np; ++i)
      longest = std::max<int64_t>(longest, c.seq_lens_upper_bound()[i]);
    return longest;
  }

  /// vLLM 0.33's _build_fp8_separate_prefill_decode, its host part: the decodes' uniform query
  /// length and split_prefill_chunks over the prefills' seq_lens_cpu_upper_bound (else the host
  /// lengths; chunk lists in kBufFp8ChunkLists). Refuses what vLLM asserts.
  Fp8Plan plan_sparse_fp8(const CommonMetadata& c, int64_t nd, int64_t np,
                          int64_t num_decode_tokens) {
    Fp8Plan p;
    if (!flashmla_sparse_fp8(v_.variant, config()) || fp8_use_mixed_batch_) return p;
    p.separate = true;
    if (c.num_actual_tokens == 0) return p;  // vLLM returns an empty FP8SeparatePrefillDecode
    if (nd > 0) {
      p.decode_query_len = c.qsl_host[1] - c.qsl_host[0];
      if (p.decode_query_len <= 0)
        invalid("FLASHMLA_SPARSE's fp8 decode path needs the first decode's query to be "
                "non-empty (vLLM asserts decode_query_len > 0), got query_start_loc[1] - "
                "query_start_loc[0] = ",
                p.decode_query_len);
      if (num_decode_tokens % p.decode_query_len != 0)
        invalid("FLASHMLA_SPARSE's fp8 decode path needs num_decode_tokens=", num_decode_tokens,
                " to be a multiple of the first decode's query length ", p.decode_query_len,
                " (vLLM asserts it)");
      p.active_decodes = num_decode_tokens / p.decode_query_len;
    }
    if (np > 0) {
      const int64_t limit = sparse_prefill_workspace_size(config());
      const int32_t* lens = c.seq_lens_upper_bound() + nd;
      const int32_t* qsl = c.qsl_host + nd;
      int64_t i = 0;
      while (i < np) {
        const int64_t start = i;
        int64_t total = 0;
        while (i < np && total + lens[i] <= limit) total += lens[i++];
        if (i == start)
          invalid(c.seq_lens_cpu_upper_bound ? "common->seq_lens_cpu_upper_bound[" : "seq_lens[",
                  nd + i, "]=", lens[i], " exceeds FLASHMLA_SPARSE's prefill "
                  "workspace of ", limit, " rows (max_model_len * 5; vLLM asserts it)");
        const int64_t k = p.num_chunks++;
        fp8_chunk_list(kFp8TokenStart)[k] = qsl[start];
        fp8_chunk_list(kFp8TokenEnd)[k] = qsl[i];
        fp8_chunk_list(kFp8ReqStart)[k] = static_cast<int32_t>(start);
        fp8_chunk_list(kFp8ReqEnd)[k] = static_cast<int32_t>(i);
        fp8_chunk_list(kFp8TotSeqlen)[k] = static_cast<int32_t>(total);
      }
    }
    return p;
  }

  /// SparseMLACommonMetadataBuilder.build's own fields and FlashMLASparseMetadataBuilder's fp8
  /// part (the prefill part is build_prefill's).
  void build_sparse(const CommonMetadata& c, int64_t nd, int64_t np, int64_t num_decode_tokens,
                    const Fp8Plan& fp8, const ops::Exec& exec) {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    const int64_t n = c.num_reqs, T = c.num_actual_tokens;
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    const int32_t* lens = exec.on_cuda ? c.seq_lens->as<const int32_t>() : c.seq_lens_host;
    // CommonAttentionMetadata.token_to_req_indices: mapped up to query_start_loc_cpu[-1], zeros
    // after, num_actual_tokens returned.
    const int64_t mapped = c.qsl_host[n];
    ops::compute_token_to_req_indices(exec, qsl, n, mapped, std::max(mapped, T),
                                      buffers_.as<int32_t>(kBufReqIdPerToken));
    m.set_tensor(at(f_block_table), *c.block_table_tensor);
    m.set_tensor(at(f_req_id_per_token), device_vector(kBufReqIdPerToken, T), true);
    m.set_tensor(at(f_seq_lens), *c.seq_lens);
    m.set_int(at(f_block_size), spec().block_size);
    m.set_int(at(f_topk_tokens), topk_tokens_);
    int64_t decode_max_query_len = 0;
    if (nd > 0) {
      if (c.max_logits_per_req >= 0) {
        decode_max_query_len = c.max_logits_per_req;
      } else if (np == 0) {
        decode_max_query_len = c.max_query_len;
      } else {
        for (int64_t i = 0; i < nd; ++i)
          decode_max_query_len = std::max(decode_max_query_len, c.query_len(i));
      }
    }
    m.set_int(at(f_decode_max_query_len), decode_max_query_len);
    m.set_int(at(f_prefill_max_seq_len), np > 0 ? sparse_prefill_max_seq_len(c, nd, np) : 0);
    m.set_int(at(f_cp_kv_cache_interleave_size), interleave_);
    if (v_.variant != Variant::kFlashMlaSparse) return;  // SparseMLACommonMetadata only
    m.set_bool(at(f_fp8_use_mixed_batch), fp8_use_mixed_batch_);
    if (!is_fp8_cache(cfg)) return;  // fp8_extra_metadata is None
    if (!fp8.separate) {
      // _build_fp8_mixed_decode_prefill: FlashMLA's lazily filled scheduler (None here: the
      // kernel library's object), one row of the dummy table and of the max_model_len tensor.
      m.set_tensor(at(f_fp8_dummy_block_table),
                   make_matrix(buffers_.get(kBufDummyBlockTable), cfg.device, kInt32, 1, 1, 1),
                   true);
      m.set_tensor(at(f_fp8_cache_lens), device_vector(kBufMaxModelLen, 1), true);
      return;
    }
    if (T == 0) {  // FP8SeparatePrefillDecode(): zero counts, no parts
      for (const Fid f : {f_fp8_num_prefills, f_fp8_num_decodes, f_fp8_num_prefill_tokens,
                          f_fp8_num_decode_tokens})
        m.set_int(at(f), 0);
      return;
    }
    m.set_int(at(f_fp8_num_prefills), np);
    m.set_int(at(f_fp8_num_decodes), fp8.active_decodes);
    m.set_int(at(f_fp8_num_prefill_tokens), T - num_decode_tokens);
    m.set_int(at(f_fp8_num_decode_tokens), num_decode_tokens);
    if (np > 0) {
      // the workspace starts restart where the host's chunks do: from seq_lens_cpu_upper_bound
      // (vLLM 0.33's workspace_rows), staged where the op runs; else the batch's lengths
      const int32_t* bound =
          upper_bound_where_run(exec, c, nd, np, buffers_.as<int32_t>(kBufFp8PlanLensCpu),
                                buffers_.as<int32_t>(kBufFp8PlanLens));
      ops::sparse_mla_fp8_prefill_metadata(exec, qsl, bound ? bound : lens, nd, np, T,
                                           sparse_prefill_workspace_size(cfg),
                                           buffers_.as<int32_t>(kBufFp8RequestIds),
                                           buffers_.as<int32_t>(kBufFp8WorkspaceStarts));
      m.set_tensor(at(f_fp8_prefill_request_ids), device_vector(kBufFp8RequestIds, T), true);
      m.set_tensor(at(f_fp8_prefill_workspace_starts), device_vector(kBufFp8WorkspaceStarts, np),
                   true);
      m.set_int(at(f_fp8_prefill_num_chunks), fp8.num_chunks);
      static constexpr std::pair<Fid, Fp8ChunkList> kLists[] = {
          {f_fp8_chunk_token_start, kFp8TokenStart},
          {f_fp8_chunk_token_end, kFp8TokenEnd},
          {f_fp8_chunk_req_start_idx, kFp8ReqStart},
          {f_fp8_chunk_req_end_idx, kFp8ReqEnd},
          {f_fp8_chunk_tot_seqlen, kFp8TotSeqlen}};
      for (const auto& [f, l] : kLists)
        m.set_tensor(at(f), host_list(fp8_chunk_list(l), fp8.num_chunks), true);
    }
    if (nd > 0) {
      // vLLM 0.33 slices [:active_num_decodes]: a padded batch's count (num_decode_tokens
      // counts the padding) stops at the end of seq_lens (num_reqs) and of the persistent
      // buffers (max_num_seqs), as torch's slices do
      const int64_t k = fp8.active_decodes;
      const int64_t k_buf = std::min<int64_t>(k, cfg.max_num_seqs);
      m.set_tensor(at(f_fp8_decode_seq_lens), rows_between(*c.seq_lens, 0, std::min(k, c.num_reqs)));
      m.set_tensor(at(f_fp8_decode_dummy_block_table),
                   make_matrix(buffers_.get(kBufDummyBlockTable), cfg.device, kInt32, k_buf, 1, 1),
                   true);
      m.set_tensor(at(f_fp8_decode_cache_lens), device_vector(kBufMaxModelLen, k_buf), true);
      m.set_int(at(f_fp8_decode_query_len), fp8.decode_query_len);
    }
  }

  /// FlashInferMLASparseSM90Builder.build's plan (_kv_lens_host, _SM90State.plan and _plan):
  /// the host staging FlashInfer's wrapper.plan() reads, kept across builds as vLLM's state
  /// is (a plan is reused while its padded lengths still bound the batch's).
  void plan_sm90(const CommonMetadata& c, int64_t np, int64_t num_decode_tokens) {
    const BuilderConfig& cfg = config();
    Metadata& m = metadata();
    const int64_t max_tokens = cfg.max_num_batched_tokens, n = c.num_reqs;
    int32_t* qo = buffers_.as<int32_t>(kBufSm90Plan);
    int32_t* kv = qo + max_tokens + 1;
    int32_t* lens = kv + max_tokens + 1;
    const int64_t max_valid = topk_tokens_;  // min(index_topk + kpool - 1, the buffer's width)
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
    if (np > 0 && m.field(at(f_prefill_use_dense_mha)).int_value != 0) rows = num_decode_tokens;
    bool replan = true;
    if (!exact && rows == sm90_planned_) {
      replan = false;
      for (int64_t t = 0; t < rows && !replan; ++t)
        replan = !(lens[t] >= want[t] && lens[t] <= want[t] + kSm90PlanSlack);
    }
    if (replan) {
      for (int64_t i = 0; i <= max_tokens; ++i) qo[i] = static_cast<int32_t>(std::min(i, rows));
      for (int64_t i = 0; i < max_tokens; ++i) {
        int64_t v = 0;
        if (i < rows) v = exact ? want[i] : std::min(want[i] + kSm90PlanSlack, max_valid);
        lens[i] = static_cast<int32_t>(v);
      }
      kv[0] = 0;
      for (int64_t i = 0; i < max_tokens; ++i) kv[i + 1] = kv[i] + lens[i];
      sm90_planned_ = exact ? -1 : rows;
    }
    m.set_tensor(at(f_sm90_qo_indptr), host_list(qo, max_tokens + 1), true);
    m.set_tensor(at(f_sm90_kv_indptr), host_list(kv, max_tokens + 1), true);
    m.set_tensor(at(f_sm90_kv_len_arr), host_list(lens, max_tokens), true);
    m.set_int(at(f_sm90_planned_num_tokens), sm90_planned_);
    m.set_bool(at(f_sm90_replanned), replan);
  }

  static constexpr int64_t kSm90PlanSlack = 32;  // _PLAN_SLACK
  int64_t sm90_planned_ = -1;                     // _SM90State._planned_num_tokens
  static constexpr size_t kAbsent = ~size_t{0};
  bool sparse_ = false;
  int32_t topk_tokens_ = 0;
  bool fp8_use_mixed_batch_ = false;
  const VariantInfo& v_;
  PersistentBuffers buffers_;
  std::vector<size_t> pos_;
  int64_t workspace_ = 0;
  ops::MlaChunkParams chunk_params_;
  int32_t prefill_backend_ = 0;
  int32_t dcp_ = 1;
  int32_t interleave_ = 1;
  int64_t num_empty_ = 0;
  PerLayerParams hyper_;
  bool use_full_cuda_graph_ = false;
  int64_t max_cudagraph_size_ = 0;
  bool fa_aot_schedule_ = false;
  int64_t max_num_splits_ = 0;
  int64_t amx_threads_ = 1;  ///< AMX_MLA: num_compute_units()
  int32_t aiter_varlen_qlen_ = 0;  ///< ROCM_AITER_MLA: _varlen_decode_qlen (0: off)
  int32_t aiter_mtp_qlen_ = 1;     ///< ROCM_AITER_MLA: _mtp_decode_qlen
  AiterPlan aiter_;                ///< ROCM_AITER_MLA: the batch's decode plan
};

/// The functions of an MLA descriptor: its variant picks the VariantInfo.
const VariantInfo& info_of(const BackendDescriptor& d) { return info(static_cast<Variant>(d.variant)); }

int32_t mla_cudagraph_support(const BackendDescriptor& d, const KvCacheSpec&, const BuilderConfig&) {
  // The class attribute: none of the five overrides get_cudagraph_support.
  return info_of(d).cudagraph_support;
}
void mla_check(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& config) {
  check_supported(info_of(d), spec, config);
}
std::vector<BufferRequest> mla_plan(const BackendDescriptor& d, const KvCacheSpec& spec,
                                    const BuilderConfig& config) {
  return plan(info_of(d), spec, config);
}
std::unique_ptr<Builder> mla_create(const BackendDescriptor& d,
                                    std::shared_ptr<const Backend> backend,
                                    const KvCacheSpec& spec, const BuilderConfig& config) {
  return std::make_unique<MlaBuilder>(std::move(backend), info_of(d), spec, config);
}

/// An MLA backend's descriptor: its name from its VariantInfo.
BackendDescriptor mla_descriptor(Variant v) {
  // the CPU platform's MLA backends are new in vLLM 0.33 and matched whole
  const char* release = is_cpu_variant(v) ? kVllmRelease
                        : is_sparse(v) || v == Variant::kRocmAiterMla ? "0.33 (partial)"
                                          : "0.13-0.33 (partial)";
  return {info(v).name.c_str(), release, kv_kind_bit(kKvMla),
          static_cast<int32_t>(v), mla_cudagraph_support, mla_check, mla_plan, mla_create};
}

}  // namespace

extern const BackendDescriptor kFlashMlaBackend, kFlashAttnMlaBackend, kCutlassMlaBackend,
    kFlashInferMlaBackend, kTritonMlaBackend, kTokenspeedMlaBackend;
const BackendDescriptor kFlashMlaBackend = mla_descriptor(Variant::kFlashMla);
const BackendDescriptor kFlashAttnMlaBackend = mla_descriptor(Variant::kFlashAttnMla);
const BackendDescriptor kCutlassMlaBackend = mla_descriptor(Variant::kCutlassMla);
const BackendDescriptor kFlashInferMlaBackend = mla_descriptor(Variant::kFlashInferMla);
const BackendDescriptor kTritonMlaBackend = mla_descriptor(Variant::kTritonMla);
extern const BackendDescriptor kFlashMlaSparseBackend;
const BackendDescriptor kFlashMlaSparseBackend = mla_descriptor(Variant::kFlashMlaSparse);
extern const BackendDescriptor kFlashAttnMlaSparseBackend, kFlashInferMlaSparseBackend;
const BackendDescriptor kFlashAttnMlaSparseBackend = mla_descriptor(Variant::kFlashAttnMlaSparse);
const BackendDescriptor kFlashInferMlaSparseBackend =
    mla_descriptor(Variant::kFlashInferMlaSparse);
extern const BackendDescriptor kFlashInferMlaSparseSm120Backend, kFlashAttnMlaSparseFa4Backend;
const BackendDescriptor kFlashInferMlaSparseSm120Backend =
    mla_descriptor(Variant::kFlashInferMlaSparseSm120);
const BackendDescriptor kFlashAttnMlaSparseFa4Backend =
    mla_descriptor(Variant::kFlashAttnMlaSparseFa4);
const BackendDescriptor kTokenspeedMlaBackend = mla_descriptor(Variant::kTokenspeedMla);
extern const BackendDescriptor kFlashInferMlaSparseSm90Backend;
const BackendDescriptor kFlashInferMlaSparseSm90Backend =
    mla_descriptor(Variant::kFlashInferMlaSparseSm90);
extern const BackendDescriptor kCpuMlaBackend, kAmxMlaBackend;
const BackendDescriptor kCpuMlaBackend = mla_descriptor(Variant::kCpuMla);
const BackendDescriptor kAmxMlaBackend = mla_descriptor(Variant::kAmxMla);
extern const BackendDescriptor kRocmAiterMlaBackend;
const BackendDescriptor kRocmAiterMlaBackend = mla_descriptor(Variant::kRocmAiterMla);

}  // namespace attn::backends
