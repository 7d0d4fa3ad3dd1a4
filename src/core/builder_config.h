// The engine-side configuration a builder reads (the parts of vLLM's VllmConfig that
// builders use), the device, and the memory options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/abi_fields.h"
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
inline constexpr int32_t kMaxContextParallelSize = 1 << 10;  ///< DCP, PCP and TP world sizes
inline constexpr int32_t kMaxNumSms = 1 << 16;  ///< num_sms (GPU SMs or CPU compute units)
inline constexpr int32_t kMaxBlockPoolSize = 1 << 10;  ///< block_pool_size (Whisper: 4 to 16)
inline constexpr int32_t kMaxNumIndexHeads = 1 << 16;  ///< sparse_num_index_heads (MiniMax-M3)

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

/// attn_builder_config_t's fields (core/abi_fields.h lists them, attn_c.h documents them), and
/// the ones the core holds otherwise than the ABI (the list's SPECIAL rows).
struct BuilderConfig {
  ATTN_BUILDER_CONFIG_FIELDS(ATTN_CORE_MEMBER)
  Device device;
  bool validate_full = false;
  /// ABI 1.7 ATTN_VALIDATE_TRUSTED: builds whose do_build reads no batch values skip the value
  /// checks (Builder::reads_batch_values); shapes, dtypes, devices, extents and scalars stay.
  bool validate_trusted = false;
  std::vector<PerLayerParams> layers;
  std::shared_ptr<Allocator> allocator;  ///< Never null after validation.
  void* workspace = nullptr;
  size_t workspace_size = 0;
  std::vector<int32_t> cudagraph_capture_sizes;  ///< Empty: vLLM's default list.
  std::optional<std::string> speculative_token_tree;

  /// cdiv(max_model_len, block_size): the widest block table row a request can need.
  int64_t max_blocks_per_req(int32_t block_size) const;
  /// cudagraph_capture_sizes, or vLLM's default: [1, 2, 4] + range(8, 256, 8) +
  /// range(256, max + 1, 16) up to max = max_cudagraph_capture_size, or min(2 * max_num_seqs,
  /// 512) when that is 0; with full graphs and speculative tokens (model runner V1) rounded up
  /// to multiples of 1 + k and kept at or below that max, as vLLM's engine adjusts them.
  std::vector<int32_t> capture_sizes() const;
  /// Whether vLLM's engine rounds the capture sizes to multiples of 1 + k: speculative tokens,
  /// full CUDA graphs, model runner V1 (resolve_cudagraph_mode_and_sizes).
  bool rounds_capture_sizes() const;
  /// vLLM's compilation_config.max_cudagraph_capture_size as its builders read it: the
  /// configured one (else the largest capture size), and with full CUDA graphs and speculative
  /// tokens (model runner V1) the largest size left after vLLM's engine rounds them to
  /// multiples of 1 + k (adjust_cudagraph_sizes_for_spec_decode, before it makes the builders:
  /// 512 becomes 510 for k = 1, 498 for k = 2); 0 when there is none. Every builder that reads
  /// vLLM's max_cudagraph_capture_size reads this.
  int64_t resolved_max_cudagraph_capture_size() const;
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
