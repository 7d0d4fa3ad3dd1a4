// The engine-side configuration a builder reads (the parts of vLLM's VllmConfig that
// builders use), the device, and the memory options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/kv_cache_spec.h"
#include "core/per_layer_params.h"
#include "core/tensor.h"

namespace attn {

/// The most speculative tokens per request libattn accepts (vLLM proposes tens): 1 + 2x this
/// (parallel drafting) and its products with request counts stay far from int32/int64 limits.
inline constexpr int32_t kMaxSpeculativeTokens = 1 << 16;

/// Create-time limits (docs/architecture.md, "Limits"): every buffer a builder allocates when it
/// is created grows with these config values, so a config past one is refused by name before
/// anything is allocated (vLLM runs 256-1024 sequences, batches of up to a few 100k tokens and
/// models of up to 10M tokens).
inline constexpr int32_t kMaxNumSeqs = 1 << 20;           ///< config->max_num_seqs
inline constexpr int32_t kMaxNumBatchedTokens = 1 << 24;  ///< max_num_batched_tokens, capture sizes
inline constexpr int32_t kMaxModelLen = 1 << 24;          ///< max_model_len, max_encoder_len
inline constexpr int64_t kMaxNumGpuBlocks = int64_t{1} << 26;  ///< num_gpu_blocks (FLEX's tables)
inline constexpr int32_t kMaxContextParallelSize = 1 << 10;  ///< DCP and PCP world sizes
inline constexpr int32_t kMaxNumSms = 1 << 16;  ///< num_sms (GPU SMs or CPU compute units)

/// Numbered as the ABI's ATTN_CG_* levels (vLLM's AttentionCGSupport).
enum CudagraphSupport : int32_t {
  kCgNever = 0,
  kCgUniformSingleTokenDecode = 1,
  kCgUniformBatch = 2,
  kCgAlways = 3,
};
const char* cudagraph_support_name(int32_t level);

/// Numbered as the ABI's ATTN_CUDAGRAPH_MODE_* values.
enum CudagraphMode : int32_t {
  kCudagraphNone = 0,
  kCudagraphPiecewise = 1,
  kCudagraphFull = 2,
  kCudagraphFullDecodeOnly = 3,
  kCudagraphFullAndPiecewise = 4,
};
/// Numbered as the ABI's ATTN_GDN_PREFILL_* values (ABI 1.6).
enum GdnPrefillBackend : int32_t {
  kGdnPrefillAuto = 0,
  kGdnPrefillTriton = 1,
  kGdnPrefillFlashInfer = 2,
};

/// Numbered as the ABI's ATTN_MLA_PREFILL_* values (ABI 1.7); MLAPrefillBackendEnum's order
/// (libattn's prefill_prefill_backend) is one less.
enum MlaPrefillChoice : int32_t {
  kMlaPrefillAuto = 0,
  kMlaPrefillFlashAttn = 1,
  kMlaPrefillFlashInfer = 2,
  kMlaPrefillTrtllmRagged = 3,
  kMlaPrefillTokenspeedMla = 4,
};

/// Numbered as the ABI's ATTN_SPARSE_INDEXER_TOPK_* values (ABI 1.7): vLLM 0.33's
/// SparseIndexerTopkBackend in its Literal's order.
enum SparseIndexerTopkBackend : int32_t {
  kSparseIndexerTopkAuto = 0,
  kSparseIndexerTopkDeepSelect = 1,
  kSparseIndexerTopkAiter = 7,
};

/// vLLM's CUDAGraphMode.has_full_cudagraphs().
bool has_full_cudagraphs(int32_t mode);

/// Numbered as the ABI's ATTN_TYPE_* values.
enum AttentionType : int32_t {
  kAttnDecoder = 0,
  kAttnEncoder = 1,
  kAttnEncoderOnly = 2,
  kAttnEncoderDecoder = 3,
};

struct BuilderConfig {
  Device device;
  int32_t max_num_seqs = 0;
  int32_t max_num_batched_tokens = 0;
  int32_t max_model_len = 0;
  int32_t num_attention_heads = 0;
  int32_t num_speculative_tokens = 0;  ///< At most kMaxSpeculativeTokens.
  bool parallel_drafting = false;
  int32_t decode_context_parallel_size = 1;
  int32_t dcp_rank = 0;
  int32_t cp_kv_cache_interleave_size = 1;
  int32_t cudagraph_mode = kCudagraphFullAndPiecewise;
  int32_t max_cudagraph_capture_size = 0;  ///< 0 = None.
  int32_t cache_dtype = kKvDtypeAuto;
  int32_t attn_type = kAttnDecoder;
  int32_t device_capability = 0;
  int32_t flash_attn_version = 0;
  int32_t flash_attn_max_num_splits_for_cuda_graph = 32;
  bool batch_invariant = false;
  bool validate_full = false;
  /// ABI 1.7 ATTN_VALIDATE_TRUSTED: builds whose do_build reads no batch values skip the value
  /// checks (Builder::reads_batch_values); shapes, dtypes, devices, extents and scalars stay.
  bool validate_trusted = false;
  std::vector<PerLayerParams> layers;
  std::shared_ptr<Allocator> allocator;  ///< Never null after validation.
  void* workspace = nullptr;
  size_t workspace_size = 0;
  // ABI 1.1
  int32_t model_dtype = kKvDtypeAuto;       ///< AUTO: the spec's dtype (see model_dtype_for).
  int32_t use_trtllm_attention = -1;        ///< -1 None (auto), 0 False, 1 True.
  bool kv_transfer_enabled = false;
  bool disable_flashinfer_q_quantization = false;
  std::vector<int32_t> cudagraph_capture_sizes;  ///< Empty: vLLM's default list.
  int64_t num_gpu_blocks = 0;
  int32_t flex_attn_q_block_size = 0;
  int32_t flex_attn_kv_block_size = 0;
  std::optional<std::string> speculative_token_tree;
  bool kv_sharing_fast_prefill = false;
  int32_t max_encoder_len = 0;
  int32_t cpu_attn_isa = 0;                 ///< ATTN_CPU_ISA_*; 0 = detect.
  // ABI 1.2: the MLA backends (0 = the default named in attn_c.h)
  int32_t mla_kv_lora_rank = 0;
  int32_t mla_qk_rope_head_dim = 0;
  int32_t mla_qk_nope_head_dim = 0;
  int32_t mla_v_head_dim = 0;
  int32_t mla_chunked_prefill_workspace_size = 0;
  // ABI 1.4
  bool use_v2_model_runner = false;  ///< vLLM's model runner V2 (max_decode_query_len).
  int32_t num_sms = 0;               ///< 0 = unknown.
  int32_t rswa_window = 0;           ///< vLLM 0.33's model_config.rswa_window; 0 = None.
  bool is_mm_prefix_lm = false;      ///< vLLM 0.33's model_config.is_mm_prefix_lm.
  bool use_non_causal = false;       ///< vLLM's attention_config.use_non_causal.
  bool enable_adaptive_verification = false;  ///< speculative_config's flag of that name.
  // ABI 1.6: vLLM 0.33's ReplaySSM and prefill-checkpoint settings (the Mamba builders).
  bool use_replayssm = false;            ///< cache_config.use_replayssm.
  int32_t replayssm_buffer_len = 16;     ///< cache_config.replayssm_buffer_len (> 0).
  bool mamba_backend_flashinfer = false; ///< mamba_config.backend == FLASHINFER.
  bool async_scheduling = false;         ///< scheduler_config.async_scheduling.
  int32_t hash_block_size = 0;           ///< cache_config.hash_block_size; 0 = None.
  int32_t cache_hit_alignment_tokens = 0;  ///< cache_config's; 0 = None.
  int32_t num_hash_lookahead_tokens = 0;   ///< VllmConfig.num_hash_lookahead_tokens.
  bool use_eagle_block_drop = false;     ///< speculative_config.use_eagle_block_drop().
  int32_t gdn_prefill_backend = 0;  ///< ABI 1.6: kGdnPrefill* (GDN_ATTN's prefill kernel).
  // ABI 1.7: vLLM 0.33's MLA prefill inputs (attention_config).
  int32_t mla_prefill_backend = 0;            ///< kMlaPrefill* (0 = None: automatic).
  bool use_prefill_query_quantization = false;  ///< attention_config's flag of that name.
  int32_t block_table_width = 0;  ///< ABI 1.7: the requires_block_table_width argument; 0 = the worker's.
  // ABI 1.7: DeepSeek V4 / V4.1 (the compressors and the V4.1 sparse indexer)
  bool platform_rocm = false;                 ///< current_platform.is_rocm().
  int32_t prefill_context_parallel_size = 1;  ///< parallel_config's PCP world size (>= 1).
  int32_t candidate_block_size = 0;           ///< hf_text_config.candidate_block_size; 0 = absent.
  int32_t candidate_topk_blocks = 0;          ///< hf_text_config.candidate_topk_blocks; 0 = absent.
  bool indexer_kv_mxfp4 = false;              ///< resolve_indexer_kv_dtype("fp8") == "mxfp4".
  int32_t sparse_indexer_topk_backend = 0;    ///< kSparseIndexerTopk* (kernel_config's value).
  bool speculative_dspark = false;  ///< ABI 1.7: speculative_config.use_dspark().

  /// cdiv(max_model_len, block_size): the widest block table row a request can need.
  int64_t max_blocks_per_req(int32_t block_size) const;
  /// cudagraph_capture_sizes, or vLLM's default: [1, 2, 4] + range(8, 256, 8) +
  /// range(256, max + 1, 16) up to max = max_cudagraph_capture_size, or min(2 * max_num_seqs,
  /// 512) when that is 0.
  std::vector<int32_t> capture_sizes() const;
  /// The model's dtype: model_dtype, or the spec's when AUTO.
  int32_t model_dtype_for(const KvCacheSpec& spec) const;
};

/// Checks every field against its range and against the spec; throws Error(kInvalidArgument)
/// naming "config-><field>". Sets a default allocator when none is given.
void validate(BuilderConfig& config, const KvCacheSpec& spec);

/// The compute capability the config describes: config.device_capability when set, else the
/// device's own (CUDA builds with a visible device), else 0 (unknown).
/// vLLM 0.33's max_decode_query_len: 1 without speculative tokens, else 1 + k, plus k more for
/// the parallel drafter's mask slots on model runner V1.
int32_t max_decode_query_len(const BuilderConfig& c);

int32_t resolved_device_capability(const BuilderConfig& config);

}  // namespace attn

namespace attn {
/// For a CUDA device: Error(kUnsupported) when CUDA is not compiled in, Error(kCuda) with the
/// runtime's reason when the device is not visible. Nothing for the host.
void check_device_available(const BuilderConfig& config);
}  // namespace attn
