// FLASHINFER: the metadata of vLLM's FlashInferMetadataBuilder.build(). vLLM hands the planned
// FlashInfer wrappers (prefill, decode, cascade) to its forward pass; libattn cannot run
// FlashInfer's plan(), so it returns every input plan() reads (host indptrs, device page
// indices, last-page lengths, heads, dtypes, hyperparameters) and the TRT-LLM prefill/decode
// fields, in vLLM's names, flattened with "prefill_"/"decode_" prefixes.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/exact_seq_lens.h"
#include "core/per_layer_params.h"
#include "core/persistent_buffers.h"
#include "ops/batch_ops.h"
#include "ops/device_runtime.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "FLASHINFER";

// The integer values of two vLLM enums in the metadata; attn_c.h names them
// (ATTN_FLASHINFER_DECODE_*, ATTN_KV_CACHE_LAYOUT_*) and tests/c/test_flashinfer.c checks them.
constexpr int32_t kDecodeXqa = 0;        ///< FlashInferDecodeKernel.XQA
constexpr int32_t kDecodeTrtllmGen = 1;  ///< FlashInferDecodeKernel.TRTLLM_GEN
constexpr int32_t kLayoutNhd = 0;        ///< get_flashinfer_layout_string == "NHD"
constexpr int32_t kLayoutHnd = 1;        ///< "HND"

#define FLASHINFER_FIELDS(X)                                             \
  /* FlashInferMetadata's scalars, in vLLM 0.33's order */               \
  X(kKvCacheLayout, "kv_cache_layout")                                   \
  X(kNumActualTokens, "num_actual_tokens")                               \
  X(kSlotMapping, "slot_mapping")                                        \
  X(kQDataTypePrefill, "q_data_type_prefill")                            \
  X(kQDataTypeDecode, "q_data_type_decode")                              \
  X(kNumDecodes, "num_decodes")                                          \
  X(kNumDecodeTokens, "num_decode_tokens")                               \
  X(kNumPrefills, "num_prefills")                                        \
  X(kNumPrefillTokens, "num_prefill_tokens")                             \
  X(kCausal, "causal")                                                   \
  /* which dataclass `prefill` / `decode` is (None: the field is None) */ \
  X(kPrefillUseTrtllm, "prefill_use_trtllm")                             \
  X(kDecodeUseTrtllm, "decode_use_trtllm")                               \
  /* plan() inputs shared by the paths */                                \
  X(kPagedKvIndptr, "paged_kv_indptr")                                   \
  X(kPagedKvIndptrCpu, "paged_kv_indptr_cpu")                            \
  X(kPagedKvIndices, "paged_kv_indices")                                 \
  X(kPagedKvLastPageLen, "paged_kv_last_page_len")                       \
  X(kPagedKvLastPageLenCpu, "paged_kv_last_page_len_cpu")                \
  X(kNumQoHeads, "num_qo_heads")                                         \
  X(kNumKvHeads, "num_kv_heads")                                         \
  X(kHeadDim, "head_dim")                                                \
  X(kPageSize, "page_size")                                              \
  X(kKvDataType, "kv_data_type")                                         \
  X(kODataType, "o_data_type")                                           \
  X(kSmScale, "sm_scale")                                                \
  X(kWindowLeft, "window_left")                                          \
  X(kLogitsSoftCap, "logits_soft_cap")                                   \
  X(kPrefillFixedSplitSize, "prefill_fixed_split_size")                  \
  X(kDecodeFixedSplitSize, "decode_fixed_split_size")                    \
  X(kDisableSplitKv, "disable_split_kv")                                 \
  /* prefill: FIPrefill's plan, or TRTLLMPrefill */                      \
  X(kPrefillQoIndptrCpu, "prefill_qo_indptr_cpu")                        \
  X(kPrefillPagedKvIndptrCpu, "prefill_paged_kv_indptr_cpu")             \
  X(kPrefillPagedKvLastPageLenCpu, "prefill_paged_kv_last_page_len_cpu") \
  X(kPrefillBlockTables, "prefill_block_tables")                         \
  X(kPrefillSeqLens, "prefill_seq_lens")                                 \
  X(kPrefillCumSeqLensQ, "prefill_cum_seq_lens_q")                       \
  X(kPrefillCumSeqLensKv, "prefill_cum_seq_lens_kv")                     \
  X(kPrefillMaxQLen, "prefill_max_q_len")                                \
  X(kPrefillMaxSeqLen, "prefill_max_seq_len")                            \
  /* decode: FIDecode's plan, or FlashInferTrtllmAPIDecode */            \
  X(kDecodePagedKvIndptrCpu, "decode_paged_kv_indptr_cpu")               \
  X(kDecodePagedKvLastPageLenCpu, "decode_paged_kv_last_page_len_cpu")   \
  X(kDecodeSeqLensCpu, "decode_seq_lens_cpu")                            \
  X(kDecodeNumQoHeads, "decode_num_qo_heads")                            \
  X(kDecodeUseCudagraph, "decode_use_cudagraph")                         \
  X(kDecodeKernel, "decode_kernel")                                      \
  X(kDecodeBlockTables, "decode_block_tables")                           \
  X(kDecodeSeqLens, "decode_seq_lens")                                   \
  X(kDecodeMaxSeqLen, "decode_max_seq_len")                              \
  X(kDecodeQLenPerReq, "decode_q_len_per_req")                           \
  X(kDecodeQCuSeqLens, "decode_q_cu_seq_lens")                           \
  X(kDecodeMask, "decode_mask")                                          \
  X(kDecodeDcpQueryStartLoc, "decode_dcp_query_start_loc")               \
  /* the two-level cascade plan: libattn's extension (vLLM 0.33 removed  \
     cascade attention), only in a build with common_prefix_len > 0 */   \
  X(kUseCascade, "use_cascade")                                          \
  X(kQoIndptrCpu, "qo_indptr_cpu")                                       \
  X(kSharedQoIndptrCpu, "shared_qo_indptr_cpu")                          \
  X(kSharedKvPageIndptrCpu, "shared_kv_page_indptr_cpu")                 \
  X(kSharedKvPageIndices, "shared_kv_page_indices")                      \
  X(kSharedKvLastPageLenCpu, "shared_kv_last_page_len_cpu")             \
  /* appended (issue 34): each variant's last field, index 51 of a build \
     without cascade (kPlainFieldCount), 57 with it (field_index) */     \
  X(kPrefillSinkWrapper, "prefill_sink_wrapper")
ATTN_NAMED_LIST(Field, FLASHINFER_FIELDS);
constexpr size_t kPlainFieldCount = kUseCascade;  // the fields of a build without cascade
                                                   // (then prefill_sink_wrapper)

/// The fields of a build without cascade: those before use_cascade, then the appended ones.
std::vector<std::string> plain_field_names() {
  std::vector<std::string> names = name_vector(kFieldNames, kPlainFieldCount);
  names.emplace_back(kFieldNames[kPrefillSinkWrapper]);
  return names;
}

/// Where an appended field sits in the metadata of a build with or without cascade.
size_t field_index(size_t field, bool cascade) {
  return cascade ? field : kPlainFieldCount + (field - kPrefillSinkWrapper);
}

#define FLASHINFER_BUFFERS(X)                                \
  X(kBufIndptr, "paged_kv_indptr")                           \
  X(kBufIndices, "paged_kv_indices")                         \
  X(kBufLastPageLen, "paged_kv_last_page_len")               \
  X(kBufCumSeqLensQ, "prefill_cum_seq_lens_q")               \
  X(kBufCumSeqLensKv, "prefill_cum_seq_lens_kv")             \
  X(kBufCascadeCu, "cascade cu_prefix_query_lens")           \
  X(kBufCascadePrefix, "cascade prefix_kv_lens")             \
  X(kBufCascadeSuffix, "cascade suffix_kv_lens")             \
  X(kBufIndptrCpu, "paged_kv_indptr_cpu")                    \
  X(kBufLastPageLenCpu, "paged_kv_last_page_len_cpu")        \
  X(kBufPrefillQoIndptrCpu, "prefill_qo_indptr_cpu")         \
  X(kBufSharedQoIndptrCpu, "shared_qo_indptr_cpu")           \
  X(kBufSharedKvPageIndptrCpu, "shared_kv_page_indptr_cpu")  \
  X(kBufSharedLastPageLenCpu, "shared_kv_last_page_len_cpu") \
  X(kBufDecodeSeqLensCpu, "decode_seq_lens_cpu")             \
  X(kBufHostLens, "host seq_lens scratch")                   \
  X(kBufExactLensCpu, "exact host seq_lens")                 \
  X(kBufLocalLens, "DCP-local seq_lens")                     \
  X(kBufDecodeMask, "decode_mask")                           \
  X(kBufSuffixCpu, "host suffix lengths")
ATTN_NAMED_LIST(Buffer, FLASHINFER_BUFFERS);

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  const auto reqs = static_cast<size_t>(c.max_num_seqs);
  const size_t pages =
      buffer_bytes("paged_kv_indices", {c.max_num_seqs, c.max_blocks_per_req(spec.block_size)});
  const size_t i32 = sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kBufIndptr, (reqs + 1) * i32);
  p.set(kBufIndices, pages * i32);
  p.set(kBufLastPageLen, reqs * i32);
  p.set(kBufCumSeqLensQ, (reqs + 1) * i32);
  p.set(kBufCumSeqLensKv, (reqs + 1) * i32);
  p.set(kBufCascadeCu, 2 * i32);
  p.set(kBufCascadePrefix, i32);
  p.set(kBufCascadeSuffix, reqs * i32);
  p.set(kBufIndptrCpu, (reqs + 1) * i32, true);
  p.set(kBufLastPageLenCpu, reqs * i32, true);
  p.set(kBufPrefillQoIndptrCpu, (reqs + 1) * i32, true);
  p.set(kBufSharedQoIndptrCpu, 2 * i32, true);
  p.set(kBufSharedKvPageIndptrCpu, 2 * i32, true);
  p.set(kBufSharedLastPageLenCpu, i32, true);
  p.set(kBufDecodeSeqLensCpu, reqs * i32, true);
  p.set(kBufHostLens, reqs * i32, true);
  p.set(kBufExactLensCpu, reqs * i32, true);
  p.set(kBufLocalLens, reqs * i32);
  // XQA's packed draft mask: at most max_num_seqs x threshold rows of cdiv(threshold, 32) words
  // (a decode's query is at most the threshold, max_decode_query_len)
  const int64_t q_max = std::max<int64_t>(1, max_decode_query_len(c));
  p.set(kBufDecodeMask, reqs * static_cast<size_t>(q_max) * static_cast<size_t>((q_max + 31) / 32) *
                            sizeof(uint32_t));
  p.set(kBufSuffixCpu, reqs * i32, true);
  return p.requests();
}

/// The device's compute capability (major * 10 + minor; 0 = unknown, which vLLM's
/// has_device_capability answers False for, as on a machine without CUDA).
struct Arch {
  int32_t cap = 0;
  bool sm90() const { return cap == 90; }                    ///< is_device_capability(90)
  bool family(int32_t f) const { return cap > 0 && cap / 10 == f / 10; }  ///< ..._family(f)
  bool xqa() const { return sm90() || family(120); }         ///< SM90 and SM12x: XQA decode
  bool fa2_native_decode() const { return cap < 90; }        ///< _use_fa2_native_decode()
};

Arch arch_of(const BuilderConfig& c) { return Arch{resolved_device_capability(c)}; }

/// vLLM's supports_trtllm_attention(is_prefill): not batch-invariant, TRT-LLM kernels assumed
/// installed (config->use_trtllm_attention = 0 where they are not); XQA decode only on SM90 and
/// SM12x, both phases on SM100.
bool supports_trtllm(const Arch& a, const BuilderConfig& c, bool is_prefill) {
  if (c.batch_invariant) return false;
  if (a.xqa()) return !is_prefill;
  return a.family(100);
}

/// vLLM's can_use_trtllm_attention(num_qo_heads, num_kv_heads, is_prefill).
bool can_use_trtllm(const Arch& a, const KvCacheSpec& spec, const BuilderConfig& c,
                    bool is_prefill) {
  if (c.use_trtllm_attention == 0) return false;
  return supports_trtllm(a, c, is_prefill) && c.num_attention_heads % spec.num_kv_heads == 0;
}

/// vLLM's _is_xqa_head_dim_supported.
bool xqa_head_dim_supported(int32_t head_dim) {
  return head_dim >= 16 && head_dim <= 256 && head_dim % 16 == 0;
}

/// The builder's flashinfer_trtllm_api_decode_kernel (-1 = None: FlashInfer-native decode):
/// XQA on SM90/SM12x (head_dim a multiple of 16 in [16, 256], no DCP), trtllm-gen on SM100.
int32_t trtllm_api_decode_kernel(const Arch& a, const KvCacheSpec& spec, const BuilderConfig& c) {
  if (!can_use_trtllm(a, spec, c, /*is_prefill=*/false)) return -1;
  const int32_t kernel = a.xqa() ? kDecodeXqa : kDecodeTrtllmGen;
  if (kernel == kDecodeXqa &&
      (!xqa_head_dim_supported(spec.head_size) || c.decode_context_parallel_size > 1))
    return -1;
  return kernel;
}

/// vLLM's _uses_trtllm_gen_varlen_decode: adaptive verification on trtllm-gen without DCP.
bool uses_trtllm_gen_varlen_decode(const BuilderConfig& c, int32_t kernel) {
  return c.num_speculative_tokens > 0 && c.enable_adaptive_verification &&
         kernel == kDecodeTrtllmGen && c.decode_context_parallel_size <= 1;
}

/// FlashInferMetadataBuilder.get_cudagraph_support (vLLM 0.33's classmethod).
int32_t flashinfer_cudagraph_support(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (c.decode_context_parallel_size > 1) return kCgUniformSingleTokenDecode;
  const Arch a = arch_of(c);
  if (a.fa2_native_decode())  // fa2 decodes uniform causal spec queries
    return c.use_non_causal ? kCgUniformSingleTokenDecode : kCgUniformBatch;
  const bool uniform = can_use_trtllm(a, spec, c, /*is_prefill=*/false) &&
                       !(a.xqa() && !xqa_head_dim_supported(spec.head_size));
  return uniform && (!c.use_non_causal || a.xqa()) ? kCgUniformBatch
                                                    : kCgUniformSingleTokenDecode;
}

/// FlashInferMetadataBuilder.get_varlen_cudagraph_max_query_len (0.33's classmethod).
std::optional<int32_t> flashinfer_varlen_cudagraph_max_query_len(const KvCacheSpec& spec,
                                                                 const BuilderConfig& c) {
  const Arch a = arch_of(c);
  if (a.fa2_native_decode() || flashinfer_cudagraph_support(spec, c) != kCgUniformBatch)
    return std::nullopt;
  const int32_t kernel = a.xqa() ? kDecodeXqa : kDecodeTrtllmGen;
  if (!uses_trtllm_gen_varlen_decode(c, kernel)) return std::nullopt;
  return max_decode_query_len(c);
}

bool is_fp8(int32_t dtype) { return dtype == kKvDtypeFp8E4m3 || dtype == kKvDtypeFp8E5m2; }

/// The KV cache's element type as FlashInfer sees it: the fp8 cache dtype, else the spec's.
int32_t kv_cache_dtype(const KvCacheSpec& spec, const BuilderConfig& c) {
  return is_fp8(c.cache_dtype) ? c.cache_dtype : spec.dtype;
}

/// vLLM 0.33's get_q_data_type(is_prefill): the model dtype when Q quantization is disabled
/// or XQA decodes an fp8 cache on SM90/SM12x; the fp8 cache dtype on SM90 and SM100; else the
/// model dtype (fa2-only architectures cannot take fp8 queries) or, unquantized, the spec's.
int32_t q_data_type(const Arch& a, const KvCacheSpec& spec, const BuilderConfig& c,
                    bool is_prefill) {
  const int32_t model = c.model_dtype_for(spec);
  if (c.disable_flashinfer_q_quantization) return model;
  if (!is_fp8(c.cache_dtype)) return spec.dtype;
  if (a.xqa() && !is_prefill && c.use_trtllm_attention != 0) return model;
  if (a.sm90() || a.family(100)) return c.cache_dtype;
  return model;
}

/// vLLM's FlashInferBackend.supports_sink().
bool supports_sink(const Arch& a, const BuilderConfig& c) {
  if (c.use_trtllm_attention == 0) return false;
  if (a.xqa()) return supports_trtllm(a, c, false);
  if (!a.family(100)) return false;
  return supports_trtllm(a, c, false) && supports_trtllm(a, c, true);
}

/// The global hyperparameters: the first layer's (vLLM's infer_global_hyperparameters), or,
/// without per-layer parameters, the spec's window, no soft cap, scale head_size^-0.5, no sinks.
GlobalHyperparameters hyperparameters(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (!c.layers.empty()) return infer_global_hyperparameters(c.layers);
  GlobalHyperparameters g;
  g.params.window_left = spec.kind == kKvSlidingWindow ? spec.sliding_window - 1 : -1;
  g.params.sm_scale = 1.0 / std::sqrt(static_cast<double>(spec.head_size));
  g.has_same_window_lefts = g.has_same_all_params = true;
  return g;
}

void check_supported(const KvCacheSpec& spec, const BuilderConfig& c) {
  const Arch a = arch_of(c);
  if (spec.head_size != 64 && spec.head_size != 128 && spec.head_size != 256 &&
      spec.head_size != 512)
    fail(Status::kUnsupported, "FLASHINFER supports head sizes 64, 128, 256 and 512, got "
                               "kv_cache_spec->head_size=", spec.head_size);
  // vLLM 0.33's get_supported_kernel_block_sizes: 128..1024 only on the trtllm-gen GQA path.
  const bool large_pages = spec.num_kv_heads > 0 &&
                           c.num_attention_heads / spec.num_kv_heads > 1 && a.family(100) &&
                           can_use_trtllm(a, spec, c, /*is_prefill=*/false);
  const int32_t bs = spec.block_size;
  const bool small = bs == 16 || bs == 32 || bs == 64;
  const bool large = bs == 128 || bs == 256 || bs == 512 || bs == 1024;
  if (!small && !(large && large_pages))
    fail(Status::kUnsupported, "FLASHINFER supports block sizes 16, 32 and 64 (128 to 1024 "
                               "only for GQA on TRT-LLM, compute capability 10.x), got "
                               "kv_cache_spec->block_size=", bs);
  if (c.model_dtype_for(spec) != kKvDtypeFloat16 && c.model_dtype_for(spec) != kKvDtypeBfloat16)
    fail(Status::kUnsupported, "FLASHINFER runs float16 and bfloat16 models, got ",
         kv_dtype_name(c.model_dtype_for(spec)), " (config->model_dtype, else kv_cache_spec->dtype)");
  if (!is_fp8(c.cache_dtype) && c.model_dtype != kKvDtypeAuto && c.model_dtype != spec.dtype)
    invalid("kv_cache_spec->dtype=", kv_dtype_name(spec.dtype), " differs from config->model_dtype=",
            kv_dtype_name(c.model_dtype), " with a non-fp8 KV cache");
  if (hyperparameters(spec, c).params.has_sinks && !supports_sink(a, c))
    fail(Status::kUnsupported, "FLASHINFER supports attention sinks only on TRT-LLM/XQA "
                               "(compute capability 9.0, 10.x or 12.x, "
                               "config->use_trtllm_attention != 0, not batch-invariant)");
}

struct Split {
  int64_t num_decodes, num_prefills, num_decode_tokens, num_prefill_tokens;
};

/// vLLM 0.33's _compute_decode_query_lens: the decode query width, and whether the decode
/// reads per-request offsets (q_cu_seq_lens = query_start_loc[:num_decodes + 1]).
struct DecodeQueryLens {
  int64_t q_len_per_req = 1;
  bool ragged = false;
};

DecodeQueryLens decode_query_lens(const int32_t* qsl, int64_t nd, int64_t nd_tokens, bool xqa) {
  DecodeQueryLens r;
  if (nd == 0 || nd_tokens == 0) return r;
  auto len = [&](int64_t i) { return static_cast<int64_t>(qsl[i + 1] - qsl[i]); };
  if (!xqa) {
    const int64_t q = nd_tokens / nd;
    bool uniform = nd_tokens % nd == 0;
    int64_t max_q = 0;
    for (int64_t i = 0; i < nd; ++i) {
      uniform = uniform && len(i) == q;
      max_q = std::max(max_q, len(i));
    }
    if (uniform) { r.q_len_per_req = q; return r; }
    // padded zero-length rows after a uniform spec decode: trtllm-gen's varlen API
    if (max_q > 1) { r.q_len_per_req = max_q; r.ragged = true; }
    return r;
  }
  int64_t first = -1, max_q = 0;
  bool uniform = true;
  for (int64_t i = 0; i < nd; ++i) {
    if (len(i) <= 0) continue;
    if (first < 0) first = len(i);
    uniform = uniform && len(i) == first;
    max_q = std::max(max_q, len(i));
  }
  const int64_t q = first < 0 ? 1 : max_q;
  if (uniform && nd_tokens == nd * q) { r.q_len_per_req = q; return r; }
  if (q <= 1) return r;
  r.q_len_per_req = q;
  r.ragged = true;
  return r;
}

class FlashInferBuilder final : public Builder {
 public:
  FlashInferBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                    const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(plain_field_names());
    init_cascade_metadata(name_vector(kFieldNames));
    const BuilderConfig& c = this->config();
    max_num_pages_ = static_cast<int64_t>(c.max_num_seqs) * c.max_blocks_per_req(spec.block_size);
    if (c.batch_invariant) {
      decode_fixed_split_size_ = 2048;
      prefill_fixed_split_size_ = 4096;
      disable_split_kv_ = true;
    }
    enable_cuda_graph_ = has_full_cudagraphs(c.cudagraph_mode);
    decode_cudagraph_max_bs_ =
        static_cast<int64_t>(1 + c.num_speculative_tokens) * c.max_num_seqs;
    // vLLM's max_cudagraph_capture_size as its builders read it
    const int64_t largest = c.resolved_max_cudagraph_capture_size();
    if (largest > 0) decode_cudagraph_max_bs_ = std::min<int64_t>(decode_cudagraph_max_bs_, largest);
    kv_cache_dtype_ = kv_cache_dtype(spec, c);
    model_dtype_ = c.model_dtype_for(spec);
    // Resolved once: with device_capability 0 (auto) it is a device query, not for every build.
    arch_ = arch_of(c);
    q_data_type_prefill_ = q_data_type(arch_, spec, c, /*is_prefill=*/true);
    q_data_type_decode_ = q_data_type(arch_, spec, c, /*is_prefill=*/false);
    decode_kernel_ = trtllm_api_decode_kernel(arch_, spec, c);
    use_xqa_ = decode_kernel_ == kDecodeXqa;
    use_trtllm_gen_varlen_decode_ = uses_trtllm_gen_varlen_decode(c, decode_kernel_);
    // vLLM 0.33: spec-as-decode for XQA/trtllm-gen and for fa2-native decode (below SM90);
    // threshold 1 under DCP (trtllm-gen's causal mask is not DCP-aware).
    init_reorder_batch_threshold(1, decode_kernel_ >= 0 || arch_.fa2_native_decode(),
                                 /*supports_dcp_with_varlen=*/false);
    hyper_ = hyperparameters(spec, c);
    // The layout the engine resolves for FlashInfer: HND on 10.x (its supported layouts are
    // LBHNC/BLHNC), else vLLM's default LBNHC (NHD).
    kv_cache_layout_ = arch_.family(100) ? kLayoutHnd : kLayoutNhd;
  }

  std::optional<int32_t> varlen_cudagraph_max_query_len() const override {
    return flashinfer_varlen_cudagraph_max_query_len(spec(), config());
  }
  /// vLLM 0.33: trtllm-gen decode without DCP (fused draft steps advance seq_lens in place and
  /// keep the block tables: one build serves every step); its update is a no-op.
  std::string draft_decode_update_refusal() const override {
    if (decode_kernel_ != kDecodeTrtllmGen) return "decode does not run on trtllm-gen";
    if (config().decode_context_parallel_size > 1) return "decode context parallel";
    return "";
  }

 protected:
  void do_build(int64_t cpl, const CommonMetadata& c, bool /*fast_build: unused by vLLM*/,
                const ops::Exec& exec) override {
    const BuilderConfig& cfg = config();
    const int32_t ps = spec().block_size;
    const int64_t n = c.num_reqs;
    const int32_t threshold = reorder_batch_threshold().value_or(1);
    const bool causal = c.causal;
    Split s{0, n, 0, c.num_actual_tokens};  // non-causal (not XQA): everything is a prefill
    if (causal || use_xqa_) {
      const ops::BatchSplit b = ops::split_decodes_and_prefills(
          c.qsl_host, n, c.num_actual_tokens, c.max_query_len, threshold,
          /*require_uniform=*/!(use_xqa_ || use_trtllm_gen_varlen_decode_), "FLASHINFER");
      s = Split{b.num_decodes, b.num_prefills, b.num_decode_tokens, b.num_prefill_tokens};
    }
    const int64_t nd = s.num_decodes;
    const bool use_cascade = cpl > 0;
    const bool use_dcp = cfg.decode_context_parallel_size > 1;
    const bool prefill_use_trtllm =
        causal && use_trtllm_prefill(/*has_spec=*/threshold > 1);
    const bool decode_trtllm_api = decode_kernel_ >= 0 && (causal || use_xqa_);
    if (!causal && use_dcp)
      fail(Status::kUnsupported, "FLASHINFER's non-causal prefill does not support DCP "
                                 "(common->causal=0 with decode_context_parallel_size > 1)");
    const bool all_uses_trtllm = causal && (s.num_prefills == 0 || prefill_use_trtllm) &&
                                 (nd == 0 || decode_trtllm_api);
    if (!all_uses_trtllm) {
      if (hyper_.params.has_sinks && use_dcp)
        fail(Status::kUnsupported, "FLASHINFER's DCP prefill does not support attention sinks "
                                   "(every part of the batch must run on TRT-LLM)");
      if (!hyper_.has_same_window_lefts)
        fail(Status::kUnsupported, "FLASHINFER needs the same window_left in every layer "
                                   "(vLLM: \"Window left is not the same for all layers\")");
      if (!hyper_.has_same_all_params)
        fail(Status::kUnsupported, "FLASHINFER needs every layer to share window_left, "
                                   "logits_soft_cap, sm_scale and has_sinks");
    }
    if (use_dcp && decode_trtllm_api && nd > 0 && !c.dcp_local_seq_lens)
      invalid("common->dcp_local_seq_lens is NULL; FLASHINFER's trtllm-gen decode with DCP "
              "reads it");
    if (use_cascade) {
      if (cpl % ps != 0)
        invalid("common_prefix_len=", cpl, " is not a multiple of block_size=", ps,
                " (FlashInfer's cascade needs whole pages)");
      if (c.seq_lens_host == nullptr)
        invalid("common->seq_lens_cpu is NULL; FLASHINFER's cascade plan reads the sequence "
                "lengths on the host");
      for (int64_t i = 0; i < n; ++i)
        if (c.seq_lens_host[i] <= cpl)
          invalid("common->seq_lens[", i, "]=", c.seq_lens_host[i],
                  " leaves nothing after common_prefix_len=", cpl);
    }
    // vLLM 0.33's seq_lens_cpu: the upper bound without speculative tokens (it is exact then),
    // else a synchronous seq_lens.cpu().
    const int32_t* lens = nullptr;
    if (use_dcp || !all_uses_trtllm) {
      lens = exact_host_seq_lens(c, exec);
      if (lens == nullptr)
        invalid("common->seq_lens_cpu is NULL; FLASHINFER reads the sequence lengths on the "
                "host for this batch (vLLM copies them from the device)");
    }
    // Past every check: a refused batch leaves the builder as it was.

    Metadata& m = metadata();
    m.reset();
    m.set_int(kKvCacheLayout, kv_cache_layout_);
    m.set_int(kNumActualTokens, c.num_actual_tokens);
    m.set_tensor(kSlotMapping, *c.slot_mapping);
    m.set_int(kQDataTypePrefill, q_data_type_prefill_);
    m.set_int(kQDataTypeDecode, q_data_type_decode_);
    m.set_int(kNumDecodes, s.num_decodes);
    m.set_int(kNumDecodeTokens, s.num_decode_tokens);
    m.set_int(kNumPrefills, s.num_prefills);
    m.set_int(kNumPrefillTokens, s.num_prefill_tokens);
    if (use_cascade) m.set_bool(kUseCascade, true);
    m.set_bool(kCausal, causal);
    set_plan_scalars(m);

    const Device d = cfg.device;
    const Device host{};
    const Tensor& bt = *c.block_table_tensor;
    // The device lengths; a host build reads the validated host copy (a mirror may stand for
    // seq_lens, and the unchecked tensor must not drive the page layout).
    const int32_t* dev_seq_lens =
        exec.on_cuda || c.seq_lens_host == nullptr ? c.seq_lens->as<const int32_t>() : c.seq_lens_host;

    // TRT-LLM prefill: cum_seq_lens_kv, rebased as vLLM 0.33 (0, then the prefills' cumulative
    // pages, from the device seq_lens); computed before the paged layout, which shares scratch.
    if (s.num_prefills > 0 && prefill_use_trtllm) {
      ops::paged_kv_metadata(exec, dev_seq_lens + nd, n - nd, bt.as<const int32_t>() + nd * bt.strides[0],
                             bt.strides[0], bt.shape[1], ps, buffers_.as<int32_t>(kBufCumSeqLensKv),
                             buffers_.as<int32_t>(kBufIndices), max_num_pages_,
                             buffers_.as<int32_t>(kBufLastPageLen));
    }

    if (use_dcp && lens != nullptr) {
      // vLLM 0.33: the prefills keep their context only (the new tokens run as a ragged causal
      // pass), then every length becomes this rank's share; the page layout follows them.
      auto* local = buffers_.as<int32_t>(kBufHostLens);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t len = i < nd ? lens[i] : lens[i] - c.query_len(i);
        local[i] = ops::dcp_local_len(len, cfg.decode_context_parallel_size, cfg.dcp_rank,
                                      cfg.cp_kv_cache_interleave_size);
      }
      lens = local;
    }

    const bool needs_native_prefill = s.num_prefills > 0 && !prefill_use_trtllm;
    const bool needs_native_decode = nd > 0 && !decode_trtllm_api;
    if (use_cascade || needs_native_prefill || needs_native_decode) {
      // Device: indptr, indices, last_page_len in one pass. With a shared prefix of C pages each
      // request keeps its pages [C, n): the suffix lengths and the table from column C.
      const int32_t* dev_lens = exec.on_cuda ? dev_seq_lens : lens;
      const int32_t* dev_table = bt.as<const int32_t>();
      const int32_t* counts_lens = lens;
      if (use_cascade) {
        auto* suffix_cpu = buffers_.as<int32_t>(kBufSuffixCpu);
        ops::cascade_split(exec, dev_seq_lens, n, c.num_actual_tokens, cpl,
                           buffers_.as<int32_t>(kBufCascadeCu),
                           buffers_.as<int32_t>(kBufCascadePrefix),
                           buffers_.as<int32_t>(kBufCascadeSuffix));
        dev_lens = buffers_.as<const int32_t>(kBufCascadeSuffix);
        dev_table += cpl / ps;
        for (int64_t i = 0; i < n; ++i) suffix_cpu[i] = static_cast<int32_t>(c.seq_lens_host[i] - cpl);
        counts_lens = suffix_cpu;
      } else if (exec.on_cuda && use_dcp) {
        // the DCP-local lengths on the device: decodes whole, prefills their context
        auto* local = buffers_.as<int32_t>(kBufLocalLens);
        const int32_t* qsl = c.query_start_loc->as<const int32_t>();
        ops::dcp_local_seq_lens(exec, dev_seq_lens, nd, cfg.decode_context_parallel_size,
                                cfg.dcp_rank, cfg.cp_kv_cache_interleave_size, local);
        ops::dcp_context_kv_lens(exec, qsl + nd, dev_seq_lens + nd, n - nd,
                                 cfg.decode_context_parallel_size, cfg.dcp_rank,
                                 cfg.cp_kv_cache_interleave_size, local + nd);
        dev_lens = local;
      }
      const int64_t width = bt.shape[1] - (use_cascade ? cpl / ps : 0);
      ops::paged_kv_metadata(exec, dev_lens, n, dev_table, bt.strides[0], width, ps,
                             buffers_.as<int32_t>(kBufIndptr), buffers_.as<int32_t>(kBufIndices),
                             max_num_pages_, buffers_.as<int32_t>(kBufLastPageLen));
      auto* indptr_cpu = buffers_.as<int32_t>(kBufIndptrCpu);
      auto* last_cpu = buffers_.as<int32_t>(kBufLastPageLenCpu);
      const int64_t num_pages = ops::paged_kv_counts(counts_lens, n, ps, indptr_cpu, last_cpu);
      m.set_tensor(kPagedKvIndptr, make_vector(buffers_.get(kBufIndptr), d, kInt32, n + 1), true);
      m.set_tensor(kPagedKvIndptrCpu, make_vector(indptr_cpu, host, kInt32, n + 1), true);
      m.set_tensor(kPagedKvIndices, make_vector(buffers_.get(kBufIndices), d, kInt32, num_pages), true);
      m.set_tensor(kPagedKvLastPageLen, make_vector(buffers_.get(kBufLastPageLen), d, kInt32, n), true);
      m.set_tensor(kPagedKvLastPageLenCpu, make_vector(last_cpu, host, kInt32, n), true);
    }

    if (use_cascade) {
      const int64_t pages = cpl / ps;
      auto* qo = buffers_.as<int32_t>(kBufSharedQoIndptrCpu);
      auto* kv = buffers_.as<int32_t>(kBufSharedKvPageIndptrCpu);
      auto* last = buffers_.as<int32_t>(kBufSharedLastPageLenCpu);
      qo[0] = 0;
      qo[1] = static_cast<int32_t>(c.num_actual_tokens);
      kv[0] = 0;
      kv[1] = static_cast<int32_t>(pages);
      last[0] = ps;
      m.set_tensor(kQoIndptrCpu, host_qsl(c));
      m.set_tensor(kSharedQoIndptrCpu, make_vector(qo, host, kInt32, 2), true);
      m.set_tensor(kSharedKvPageIndptrCpu, make_vector(kv, host, kInt32, 2), true);
      m.set_tensor(kSharedKvPageIndices, make_vector(bt.data, bt.device, kInt32, pages));
      m.set_tensor(kSharedKvLastPageLenCpu, make_vector(last, host, kInt32, 1), true);
      return;  // the whole batch runs through the cascade plan
    }

    if (s.num_prefills > 0) {
      m.set_bool(kPrefillUseTrtllm, prefill_use_trtllm);
      auto* qo = buffers_.as<int32_t>(kBufPrefillQoIndptrCpu);
      int64_t max_q = 0;
      for (int64_t i = nd; i <= n; ++i) qo[i - nd] = c.qsl_host[i] - c.qsl_host[nd];
      for (int64_t i = nd; i < n; ++i) max_q = std::max<int64_t>(max_q, c.query_len(i));
      if (prefill_use_trtllm) {
        auto* cum_q = buffers_.as<int32_t>(kBufCumSeqLensQ);
        ops::slice_query_start_locs(exec, c.query_start_loc->as<const int32_t>(), nd, n, 0, 0, cum_q);
        Tensor tables = rows_between(bt, nd, n);
        if (q_data_type_prefill_ != kKvDtypeFp8E4m3 && is_fp8(cfg.cache_dtype)) {
          // vLLM 0.33 dequantizes the fp8 cache one page per table entry: it keeps the columns
          // the longest prefill (by seq_lens_cpu_upper_bound, else max_seq_len) needs.
          int64_t max_prefill = c.max_seq_len;
          if (c.seq_lens_cpu_upper_bound) {
            const int32_t* bound = c.seq_lens_cpu_upper_bound->as<const int32_t>();
            max_prefill = 0;
            for (int64_t i = nd; i < n; ++i) max_prefill = std::max<int64_t>(max_prefill, bound[i]);
          }
          tables.shape[1] = std::min<int64_t>(tables.shape[1], (max_prefill + ps - 1) / ps);
        }
        m.set_tensor(kPrefillBlockTables, tables);
        m.set_tensor(kPrefillSeqLens, rows_between(*c.seq_lens, nd, n));
        m.set_tensor(kPrefillCumSeqLensQ, make_vector(cum_q, d, kInt32, n - nd + 1), true);
        // vLLM writes it over the tail of its indptr buffer; libattn into a buffer of its own,
        // so paged_kv_indptr stays whole.
        m.set_tensor(kPrefillCumSeqLensKv,
                     make_vector(buffers_.get(kBufCumSeqLensKv), d, kInt32, n - nd + 1), true);
        m.set_int(kPrefillMaxQLen, max_q);
        m.set_int(kPrefillMaxSeqLen, c.max_seq_len);
      } else {
        // FIPrefill's wrapper: vLLM 0.33's _get_prefill_wrapper (causal or not) makes
        // FlashInfer's BatchAttentionWithAttentionSinkWrapper for a layer with sinks on SM 9.0
        // and SM 12.x (sinks elsewhere run on TRT-LLM or are refused; with DCP, refused)
        m.set_bool(field_index(kPrefillSinkWrapper, false),
                   hyper_.params.has_sinks && arch_.xqa() && !use_dcp);
        // FIPrefill's plan() inputs; a TRTLLMPrefill has none of them (vLLM 0.33 passes the
        // rebased query offsets to plan() only)
        m.set_tensor(kPrefillQoIndptrCpu, make_vector(qo, host, kInt32, n - nd + 1), true);
        m.set_tensor(kPrefillPagedKvIndptrCpu,
                     make_vector(buffers_.as<int32_t>(kBufIndptrCpu) + nd, host, kInt32, n - nd + 1), true);
        m.set_tensor(kPrefillPagedKvLastPageLenCpu,
                     make_vector(buffers_.as<int32_t>(kBufLastPageLenCpu) + nd, host, kInt32, n - nd), true);
      }
    }
    if (nd > 0) {
      m.set_bool(kDecodeUseTrtllm, decode_trtllm_api);
      if (decode_trtllm_api) {
        // FlashInferTrtllmAPIDecode
        const DecodeQueryLens q = decode_query_lens(c.qsl_host, nd, s.num_decode_tokens, use_xqa_);
        int64_t q_len_per_req = q.q_len_per_req;
        bool with_offsets = q.ragged;
        if (!use_xqa_ && use_trtllm_gen_varlen_decode_) {
          // host query lengths may underestimate the device's: a safe bound, device offsets
          q_len_per_req = std::min<int64_t>(c.max_query_len, threshold);
          with_offsets = true;
        }
        m.set_int(kDecodeKernel, decode_kernel_);
        m.set_tensor(kDecodeBlockTables, rows_between(bt, 0, nd));
        m.set_tensor(kDecodeSeqLens, rows_between(use_dcp ? *c.dcp_local_seq_lens : *c.seq_lens, 0, nd));
        m.set_int(kDecodeMaxSeqLen, c.max_seq_len);
        m.set_int(kDecodeQLenPerReq, q_len_per_req);
        if (with_offsets) m.set_tensor(kDecodeQCuSeqLens, rows_between(*c.query_start_loc, 0, nd + 1));
        if (use_xqa_ && q_len_per_req > 1) set_decode_mask(m, c, nd, q_len_per_req, q.ragged, causal, exec);
        if (use_dcp)
          m.set_tensor(kDecodeDcpQueryStartLoc, rows_between(*c.query_start_loc, 0, nd + 1));
      } else {
        // FIDecode: fast_plan_decode over the first rows of the indptr. fa2 (below SM90) plans
        // one row per decode (padded zero-length rows included) with q_len_per_req =
        // decode tokens / decodes; otherwise one row per decode token.
        int64_t rows = s.num_decode_tokens, q_len_per_req = 1;
        if (arch_.fa2_native_decode()) {
          rows = nd;
          q_len_per_req = s.num_decode_tokens / nd;
        }
        const bool use_cudagraph = enable_cuda_graph_ && s.num_prefills == 0 &&
                                   s.num_decode_tokens <= decode_cudagraph_max_bs_;
        // vLLM 0.33 slices its persistent buffers, paged_kv_indptr.cpu[:rows + 1] and
        // paged_kv_last_page_len.cpu[:rows]: a slice past their max_num_seqs (+ 1) entries stops
        // at their end, and the rows past num_reqs hold what earlier builds left there (an
        // all-decode batch padded past num_reqs plans them). So do libattn's buffers, written
        // on the same rows; the lengths are FlashInfer's get_seq_lens of the two, in int32.
        rows = std::min<int64_t>(rows, cfg.max_num_seqs);
        const auto* indptr_cpu = buffers_.as<const int32_t>(kBufIndptrCpu);
        const auto* last_cpu = buffers_.as<const int32_t>(kBufLastPageLenCpu);
        auto* kv_lens = buffers_.as<int32_t>(kBufDecodeSeqLensCpu);
        for (int64_t i = 0; i < rows; ++i) {
          const uint32_t pages = static_cast<uint32_t>(indptr_cpu[i + 1]) -
                                 static_cast<uint32_t>(indptr_cpu[i]) - 1u;
          const uint32_t full = static_cast<int32_t>(pages) > 0 ? pages : 0u;  // clamp(min=0)
          kv_lens[i] = static_cast<int32_t>(full * static_cast<uint32_t>(ps) +
                                            static_cast<uint32_t>(last_cpu[i]));
        }
        m.set_tensor(kDecodePagedKvIndptrCpu,
                     make_vector(buffers_.get(kBufIndptrCpu), host, kInt32, rows + 1), true);
        m.set_tensor(kDecodePagedKvLastPageLenCpu,
                     make_vector(buffers_.get(kBufLastPageLenCpu), host, kInt32, rows), true);
        m.set_tensor(kDecodeSeqLensCpu, make_vector(kv_lens, host, kInt32, rows), true);
        m.set_int(kDecodeNumQoHeads,
                  static_cast<int64_t>(cfg.num_attention_heads) * cfg.decode_context_parallel_size);
        m.set_bool(kDecodeUseCudagraph, use_cudagraph);
        m.set_int(kDecodeQLenPerReq, q_len_per_req);
      }
    }
  }

 private:
  /// vLLM 0.33's seq_lens_cpu for a build that needs it: seq_lens_cpu_upper_bound without
  /// speculative tokens (exact then), else the exact lengths: the host mirror when it is exact,
  /// or, on a CUDA builder, a synchronous copy of the device seq_lens (vLLM's seq_lens.cpu()).
  const int32_t* exact_host_seq_lens(const CommonMetadata& c, const ops::Exec& exec) {
    const int32_t* host = c.host_seq_lens();
    if (host != nullptr && (config().num_speculative_tokens == 0 || c.seq_lens_exact())) return host;
    if (!exec.on_cuda) return host;  // seq_lens itself is host memory: validate made it exact
    return attn::exact_host_seq_lens(c, buffers_.as<int32_t>(kBufExactLensCpu));
  }

  /// vLLM 0.33's _get_decode_mask: XQA's packed draft mask, uint16. Uniform decodes: (nd, q,
  /// 2 * cdiv(q, 32)), every request the same rows; ragged: one row per decode token,
  /// (num_decode_tokens, 2 * cdiv(max q, 32)), each row masked to its request's length.
  void set_decode_mask(Metadata& m, const CommonMetadata& c, int64_t nd, int64_t q_len,
                       bool ragged, bool causal, const ops::Exec& exec) {
    const int32_t packed = static_cast<int32_t>((q_len + 31) / 32);
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    const int64_t rows = c.qsl_host[nd] - c.qsl_host[0];
    auto* out = buffers_.as<uint32_t>(kBufDecodeMask);
    ops::xqa_draft_mask(exec, qsl, nd, packed, causal, out);
    Tensor t;
    t.data = out;
    t.device = config().device;
    t.dtype = DType{1, 16, 1};  // uint16
    if (ragged) {
      t.ndim = 2;
      t.shape[0] = rows;
      t.shape[1] = 2 * packed;
      t.strides[0] = 2 * packed;
      t.strides[1] = 1;
    } else {
      t.ndim = 3;
      t.shape[0] = nd;
      t.shape[1] = q_len;
      t.shape[2] = 2 * packed;
      t.strides[0] = q_len * 2 * packed;
      t.strides[1] = 2 * packed;
      t.strides[2] = 1;
    }
    m.set_tensor(kDecodeMask, t, true);
  }

  /// vLLM 0.33's use_trtllm_attention(..., is_prefill=True, force_use_trtllm = True for pages
  /// of 128 or more, else the config's, has_sinks, has_spec) with the builder's prefill Q dtype.
  bool use_trtllm_prefill(bool /*has_spec: decode only*/) const {
    const BuilderConfig& c = config();
    const int32_t force = spec().block_size >= 128 ? 1 : c.use_trtllm_attention;
    if (force == 0) return false;
    if (c.decode_context_parallel_size > 1) return false;
    if (!supports_trtllm(arch_, c, /*is_prefill=*/true)) return false;
    if (c.num_attention_heads % spec().num_kv_heads != 0) return false;
    if (q_data_type_prefill_ == kKvDtypeFp8E4m3) return true;
    if (hyper_.params.has_sinks) return true;
    if (force < 0) return !is_fp8(c.cache_dtype);  // auto: an unquantized cache
    return true;
  }

  void set_plan_scalars(Metadata& m) const {
    m.set_int(kNumQoHeads, config().num_attention_heads);
    m.set_int(kNumKvHeads, spec().num_kv_heads);
    m.set_int(kHeadDim, spec().head_size);
    m.set_int(kPageSize, spec().block_size);
    m.set_int(kKvDataType, kv_cache_dtype_);
    m.set_int(kODataType, model_dtype_);
    m.set_float(kSmScale, hyper_.params.sm_scale);
    m.set_int(kWindowLeft, hyper_.params.window_left);
    if (hyper_.params.logits_soft_cap) m.set_float(kLogitsSoftCap, *hyper_.params.logits_soft_cap);
    m.set_int(kPrefillFixedSplitSize, prefill_fixed_split_size_);
    m.set_int(kDecodeFixedSplitSize, decode_fixed_split_size_);
    m.set_bool(kDisableSplitKv, disable_split_kv_);
  }

  static Tensor host_qsl(const CommonMetadata& c) {
    return c.query_start_loc_cpu ? *c.query_start_loc_cpu : *c.query_start_loc;
  }

  PersistentBuffers buffers_;
  int64_t max_num_pages_ = 0;
  GlobalHyperparameters hyper_;
  bool enable_cuda_graph_ = false;
  int64_t decode_cudagraph_max_bs_ = 0;
  int32_t kv_cache_dtype_ = kKvDtypeBfloat16;
  int32_t model_dtype_ = kKvDtypeBfloat16;
  int32_t q_data_type_prefill_ = kKvDtypeBfloat16;  ///< vLLM's self.q_data_type_prefill
  int32_t q_data_type_decode_ = kKvDtypeBfloat16;   ///< vLLM's self.q_data_type_decode
  int32_t decode_kernel_ = -1;  ///< flashinfer_trtllm_api_decode_kernel; -1 = None
  bool use_xqa_ = false;
  bool use_trtllm_gen_varlen_decode_ = false;
  int32_t kv_cache_layout_ = kLayoutNhd;
  Arch arch_;  ///< Of the builder's device, resolved at create time.
  int64_t decode_fixed_split_size_ = -1;
  int64_t prefill_fixed_split_size_ = -1;
  bool disable_split_kv_ = false;
};

}  // namespace

extern const BackendDescriptor kFlashInferBackend;
const BackendDescriptor kFlashInferBackend{
    kName,
    "0.13-0.33 (partial)",
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow) |
        kv_kind_bit(kKvChunkedLocalAttention),  // vLLM's FlashInferImpl: decoder self-attention
    0,
    [](const BackendDescriptor&, const KvCacheSpec& spec, const BuilderConfig& config) -> int32_t {
      return flashinfer_cudagraph_support(spec, config);  // vLLM 0.33's classmethod
    },
    [](const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& config) {
      check_spec_kind(d, spec);
      check_supported(spec, config);
    },
    buffer_plan_of<plan>,
    create_builder_of<FlashInferBuilder>,
};

}  // namespace attn::backends
