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
// inputs ("prefill_*");
// cuDNN and TRT-LLM ragged prefill read prefill_query_seq_lens. The chunked-prefill workspace
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
  kCpuMla,
  kAmxMla,
};

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
int64_t mla_chunked_prefill_workspace_size(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (c.mla_chunked_prefill_workspace_size > 0) return c.mla_chunked_prefill_workspace_size;
  const int64_t seqs_blocks = static_cast<int64_t>(c.max_num_seqs) * spec.block_size;
  const int64_t size = std::min<int64_t>(
      std::max<int64_t>(8 * static_cast<int64_t>(c.max_model_len), 4 * seqs_blocks), 64 * 1024);
  const int64_t a = mla_chunk_alignment(spec, c);
  return (std::max(size, a) + a - 1) / a * a;
}

/// The capacities of the chunked-context buffers under this config. A prefill's context is at
/// most max_model_len tokens and a batch has at most max_num_seqs prefills. A request splits into at most 2 + context / M pieces (M = max_context_chunk): its
/// first piece, the pieces that start a chunk and do not finish it (exactly M each) and its
/// last; every chunk holds at least one piece.
ops::MlaChunkParams mla_chunk_capacities(const KvCacheSpec& spec, const BuilderConfig& c) {
  ops::MlaChunkParams p;
  p.workspace_size = mla_chunked_prefill_workspace_size(spec, c);
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

/// vLLM's use_flashinfer_prefill / use_cudnn_prefill / use_trtllm_ragged_deepseek_prefill, with
/// FlashInfer (and NVIDIA's artifactory) assumed installed.
struct PrefillPath {
  bool flashinfer = false, cudnn = false, trtllm_ragged = false;
};
bool is_cpu_variant(Variant v) { return v == Variant::kCpuMla || v == Variant::kAmxMla; }

PrefillPath prefill_path(Variant v, const BuilderConfig& c) {
  if (is_cpu_variant(v)) return {};  // the CPU platform's SDPA prefill
  const bool sm100 = resolved_device_capability(c) / 10 == 10;
  const bool r1_dims =
      qk_nope_head_dim(c) == 128 && qk_rope_head_dim(c) == 64 && v_head_dim(c) == 128;
  PrefillPath p;
  p.flashinfer = !c.disable_flashinfer_prefill && !c.use_cudnn_prefill && sm100 && r1_dims;
  p.cudnn = c.use_cudnn_prefill && sm100;
  p.trtllm_ragged = c.use_trtllm_ragged_deepseek_prefill && sm100 && r1_dims;
  return p;
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

/// vLLM 0.33's automatic choice (Platform.get_mla_prefill_backend_cls; mla_prefill_backend is
/// not a libattn input): on 10.x TRTLLM_RAGGED first for the (192, 64, 256) dimensions, else
/// FLASH_ATTN first; below, FLASH_ATTN. The first of each list is valid for the models libattn
/// accepts (float16/bfloat16, the dimensions named), with the libraries assumed installed.
int32_t prefill_backend(Variant v, const BuilderConfig& c) {
  // the CPU platform's get_mla_prefill_backend_cls: ZEN_CPU where zentorch is installed, else
  // CPU (libattn assumes no zentorch)
  if (is_cpu_variant(v)) return kPrefillCpu;
  const bool sm100 = resolved_device_capability(c) / 10 == 10;
  const bool dims_192 =
      qk_nope_head_dim(c) == 192 && qk_rope_head_dim(c) == 64 && v_head_dim(c) == 256;
  return sm100 && dims_192 ? kPrefillTrtllmRagged : kPrefillFlashAttn;
}

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
  const int64_t workspace = mla_chunked_prefill_workspace_size(spec, c);
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
  /* host */                                                                            \
  X(kBufHostContextLens, "host context lengths")                                        \
  X(kBufContextLensList, "prefill_chunked_context_context_lens_list")                   \
  X(kBufEmptySlices, "prefill_chunked_context_empty_token_slices")                      \
  X(kBufQueryLensCpu, "prefill_query_lens_cpu")                                         \
  X(kBufChunkLists, "the per-chunk lists")                                              \
  X(kBufEntryLists, "the per-entry lists")
ATTN_NAMED_LIST(Buffer, MLA_BUFFERS);

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
  const ops::MlaChunkParams cap = mla_chunk_capacities(spec, c);
  const int64_t C = cap.max_chunks, E = cap.max_entries;
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
  X(f_prefill_use_flashinfer, "prefill_use_flashinfer")                                       \
  X(f_prefill_use_cudnn, "prefill_use_cudnn")                                                 \
  X(f_prefill_use_trtllm_ragged, "prefill_use_trtllm_ragged")                                 \
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
  X(f_amx_prefill_max_len_extend, "prefill_max_len_extend")
ATTN_NAMED_LIST(Fid, MLA_FIELDS);
constexpr size_t kFieldIds = kFidCount;

/// The metadata fields of a variant, in order: MLACommonMetadata, the decode part (with the
/// variant's additions), the prefill part, its chunked context.
std::vector<Fid> variant_fields(Variant v) {
  std::vector<Fid> f;
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
  if (v == Variant::kFlashInferMla)  // FlashInferMLADecodeMetadata's order
    for (const Fid i : {f_decode_flattened_block_table, f_decode_flattened_seq_lens,
                        f_decode_flattened_row_req, f_decode_query_len, f_decode_query_start_loc,
                        f_decode_max_query_len})
      f.push_back(i);
  for (size_t i = f_prefill_block_table; i <= f_chunk_local_starts; ++i)
    f.push_back(static_cast<Fid>(i));
  if (v == Variant::kAmxMla)
    for (size_t i = f_amx_decode_req_to_token; i < kFieldIds; ++i) f.push_back(static_cast<Fid>(i));
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
    workspace_ = mla_chunked_prefill_workspace_size(spec, c);
    chunk_params_ = mla_chunk_capacities(spec, c);
    prefill_backend_ = prefill_backend(v.variant, c);
    dcp_ = c.decode_context_parallel_size;
    interleave_ = c.cp_kv_cache_interleave_size;
    prefill_ = prefill_path(v.variant, c);
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
    // AMX_MLA's num_compute_units(): torch.get_num_threads() on vLLM's CPU platform, given as
    // config->num_sms; 0: the host's hardware threads (torch's default may count cores only)
    amx_threads_ = c.num_sms > 0 ? c.num_sms
                                 : std::max<int64_t>(1, std::thread::hardware_concurrency());
    init_reorder_batch_threshold(v.reorder_batch_threshold,
                                 v.query_len_support != QueryLenSupport::kSingleOnly,
                                 supports_dcp_with_varlen(v.variant, c));
  }

  /// vLLM 0.33: TRITON_MLA without DCP (DCP-local lengths are not advanced between draft
  /// steps; its update is a no-op). The other dense MLA builders keep the base class's "no"
  /// (0.33's FLASH_ATTN_MLA, FLASHMLA, CUTLASS_MLA and FLASHINFER_MLA do not set it).
  std::string draft_decode_update_refusal() const override {
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
    const bool non_causal = !c.causal && !c.causal_per_request;
    const ops::BatchSplit s =
        non_causal ? non_causal_split(c)
                   : ops::split_decodes_and_prefills(
                         c.qsl_host, n, c.num_actual_tokens, c.max_query_len, threshold,
                         /*require_uniform=*/v_.query_len_support != QueryLenSupport::kVarlen,
                         v_.name.c_str());
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    const bool dcp = dcp_ > 1;
    if (np > 0 && c.seq_lens_host == nullptr)
      invalid("common->seq_lens_cpu is NULL; ", v_.name,
              " reads the context lengths of the "
              "prefills on the host (vLLM's seq_lens_cpu)");
    if (nd > 0 && dcp && !c.dcp_local_seq_lens)
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
        contexts[i] = static_cast<int32_t>(c.seq_lens_host[nd + i] - c.query_len(nd + i));
      // The plan's only refusals are a workspace below the alignment (refused at create) and a
      // batch beyond the buffers' capacities (which the config's limits exclude).
      chunks = ops::mla_context_chunk_plan(contexts, c.qsl_host + nd, np, chunk_params_,
                                           host_chunk_out(), v_.name.c_str());
    }
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
    // Past every check: a refused batch leaves the previous metadata as it was.

    int64_t max_seq_len = c.max_seq_len;
    if (nd > 0 && dcp) {
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
    m.set_int(at(f_head_dim), spec().head_size);
    m.set_int(at(f_chunked_prefill_workspace_size), workspace_);
    if (np > 0) build_prefill(c, nd, np, chunks, exec);
    // vLLM 0.33 hands _build_decode the promised bound min(common.max_query_len, threshold);
    // FLASHMLA and FLASH_ATTN_MLA measure the decodes' longest query instead.
    const int64_t decode_bound = std::min<int64_t>(c.max_query_len, threshold);
    if (nd > 0) build_decode(c, nd, s.num_decode_tokens, max_seq_len, decode_bound, exec);
    if (v_.variant == Variant::kAmxMla) build_amx(c, nd, np, max_seq_len, exec);
  }

  /// vLLM's build_for_cudagraph_capture: decode-only batches.
  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
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
    o.context_lens = buffers_.as<int32_t>(kBufContextLens);
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
    const bool query_seq_lens = prefill_.cudnn || prefill_.trtllm_ragged;
    // The device inputs; the host path reads the validated host lengths.
    const int32_t* qsl = (exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host) + nd;
    const int32_t* lens = (exec.on_cuda ? c.seq_lens->as<const int32_t>() : c.seq_lens_host) + nd;
    ops::MlaPrefillOut out;
    out.query_start_loc = buffers_.as<int32_t>(kBufPrefillQsl);
    if (query_seq_lens) out.query_seq_lens = buffers_.as<int32_t>(kBufQuerySeqLens);
    ops::mla_prefill_metadata(exec, qsl, np, out);
    if (C > 0) ops::mla_context_chunk_tensors(exec, qsl, lens, np, chunk_params_, chunks,
                                              device_chunk_out());
    int32_t* query_lens_cpu = buffers_.as<int32_t>(kBufQueryLensCpu);
    for (int64_t i = 0; i < np; ++i) query_lens_cpu[i] = static_cast<int32_t>(c.query_len(nd + i));

    const int32_t model_dtype = cfg.model_dtype_for(spec());
    m.set_tensor(at(f_prefill_block_table), rows_between(*c.block_table_tensor, nd, n));
    m.set_tensor(at(f_prefill_query_start_loc), device_vector(kBufPrefillQsl, np + 1), true);
    m.set_int(at(f_prefill_max_query_len), c.max_query_len);
    // No FP8 prefill query quantization (vLLM's use_prefill_query_quantization is off by
    // default and not a libattn input): the query and the output have the model's dtype.
    m.set_int(at(f_prefill_q_data_type), model_dtype);
    m.set_int(at(f_prefill_output_dtype), model_dtype);
    m.set_int(at(f_prefill_prefill_backend), prefill_backend_);
    m.set_tensor(at(f_prefill_query_lens_cpu), host_list(query_lens_cpu, np), true);
    m.set_bool(at(f_prefill_use_dense_mha), false);
    if (query_seq_lens)
      m.set_tensor(at(f_prefill_query_seq_lens), device_vector(kBufQuerySeqLens, np), true);
    m.set_bool(at(f_prefill_use_flashinfer), prefill_.flashinfer);
    m.set_bool(at(f_prefill_use_cudnn), prefill_.cudnn);
    m.set_bool(at(f_prefill_use_trtllm_ragged), prefill_.trtllm_ragged);
    if (prefill_.flashinfer) {
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

  static constexpr size_t kAbsent = ~size_t{0};
  const VariantInfo& v_;
  PersistentBuffers buffers_;
  std::vector<size_t> pos_;
  int64_t workspace_ = 0;
  ops::MlaChunkParams chunk_params_;
  int32_t prefill_backend_ = 0;
  int32_t dcp_ = 1;
  int32_t interleave_ = 1;
  PrefillPath prefill_;
  int64_t num_empty_ = 0;
  PerLayerParams hyper_;
  bool use_full_cuda_graph_ = false;
  int64_t max_cudagraph_size_ = 0;
  bool fa_aot_schedule_ = false;
  int64_t max_num_splits_ = 0;
  int64_t amx_threads_ = 1;  ///< AMX_MLA: num_compute_units()
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
BackendDescriptor mla_descriptor(Variant v, const char* vllm_release = "0.13-0.33 (partial)") {
  return {info(v).name.c_str(), vllm_release, kv_kind_bit(kKvMla),
          static_cast<int32_t>(v), mla_cudagraph_support, mla_check, mla_plan, mla_create};
}

}  // namespace

extern const BackendDescriptor kFlashMlaBackend, kFlashAttnMlaBackend, kCutlassMlaBackend,
    kFlashInferMlaBackend, kTritonMlaBackend, kTokenspeedMlaBackend, kCpuMlaBackend,
    kAmxMlaBackend;
const BackendDescriptor kFlashMlaBackend = mla_descriptor(Variant::kFlashMla);
const BackendDescriptor kFlashAttnMlaBackend = mla_descriptor(Variant::kFlashAttnMla);
const BackendDescriptor kCutlassMlaBackend = mla_descriptor(Variant::kCutlassMla);
const BackendDescriptor kFlashInferMlaBackend = mla_descriptor(Variant::kFlashInferMla);
const BackendDescriptor kTritonMlaBackend = mla_descriptor(Variant::kTritonMla);
const BackendDescriptor kTokenspeedMlaBackend = mla_descriptor(Variant::kTokenspeedMla);
/// New in vLLM 0.33 (the CPU platform's MLA backends).
const BackendDescriptor kCpuMlaBackend = mla_descriptor(Variant::kCpuMla, kVllmRelease);
const BackendDescriptor kAmxMlaBackend = mla_descriptor(Variant::kAmxMla, kVllmRelease);

}  // namespace attn::backends
