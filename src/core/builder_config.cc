#include "core/builder_config.h"

#include <algorithm>

#include "core/error.h"
#include "ops/device_runtime.h"

namespace attn {

const char* cudagraph_support_name(int32_t level) {
  switch (level) {
    case kCgNever:
      return "NEVER";
    case kCgUniformSingleTokenDecode:
      return "UNIFORM_SINGLE_TOKEN_DECODE";
    case kCgUniformBatch:
      return "UNIFORM_BATCH";
    case kCgAlways:
      return "ALWAYS";
    default:
      return "unknown";
  }
}

bool has_full_cudagraphs(int32_t mode) {
  return mode == kCudagraphFull || mode == kCudagraphFullDecodeOnly ||
         mode == kCudagraphFullAndPiecewise;
}

int64_t BuilderConfig::max_blocks_per_req(int32_t block_size) const {
  return (static_cast<int64_t>(max_model_len) + block_size - 1) / block_size;
}

namespace {

void expect_positive(int64_t v, const char* field) {
  if (v <= 0) invalid("config->", field, "=", v, " must be positive");
}

void expect_at_most(int64_t v, int64_t limit, const char* field) {
  if (v > limit)
    invalid("config->", field, "=", v, " exceeds libattn's create-time limit of ", limit,
            " (docs/architecture.md, Limits)");
}

void expect_range(int64_t v, int64_t lo, int64_t hi, const char* field, const char* what) {
  if (v < lo || v > hi) invalid("config->", field, "=", v, " is not ", what);
}

}  // namespace

void validate(BuilderConfig& c, const KvCacheSpec& spec) {
  if (c.device.type != kDeviceCPU && c.device.type != kDeviceCUDA)
    invalid("config->device.device_type=", c.device.type,
            " is not ATTN_DEVICE_CPU (1) or ATTN_DEVICE_CUDA (2)");
  if (c.device.id < 0) invalid("config->device.device_id=", c.device.id, " is negative");
  if (c.device.type == kDeviceCPU && c.device.id != 0)
    invalid("config->device.device_id=", c.device.id, " must be 0 for ATTN_DEVICE_CPU");
  expect_positive(c.max_num_seqs, "max_num_seqs");
  expect_positive(c.max_num_batched_tokens, "max_num_batched_tokens");
  expect_positive(c.max_model_len, "max_model_len");
  // libattn's create-time limits (the buffers made at create grow with these)
  expect_at_most(c.max_num_seqs, kMaxNumSeqs, "max_num_seqs");
  expect_at_most(c.max_num_batched_tokens, kMaxNumBatchedTokens, "max_num_batched_tokens");
  expect_at_most(c.max_model_len, kMaxModelLen, "max_model_len");
  expect_at_most(c.max_cudagraph_capture_size, kMaxNumBatchedTokens, "max_cudagraph_capture_size");
  expect_at_most(c.max_encoder_len, kMaxModelLen, "max_encoder_len");
  expect_positive(c.num_attention_heads, "num_attention_heads");
  if (c.num_speculative_tokens < 0 || c.num_speculative_tokens > kMaxSpeculativeTokens)
    invalid("config->num_speculative_tokens=", c.num_speculative_tokens, " is not in [0, ",
            kMaxSpeculativeTokens, "]");
  expect_positive(c.decode_context_parallel_size, "decode_context_parallel_size");
  expect_at_most(c.decode_context_parallel_size, kMaxContextParallelSize,
                 "decode_context_parallel_size");
  if (c.dcp_rank < 0 || c.dcp_rank >= c.decode_context_parallel_size)
    invalid("config->dcp_rank=", c.dcp_rank, " is not in [0, decode_context_parallel_size=",
            c.decode_context_parallel_size, ")");
  expect_positive(c.cp_kv_cache_interleave_size, "cp_kv_cache_interleave_size");
  if (spec.block_size % c.cp_kv_cache_interleave_size != 0)
    invalid("kv_cache_spec->block_size=", spec.block_size,
            " is not a multiple of config->cp_kv_cache_interleave_size=",
            c.cp_kv_cache_interleave_size);
  expect_range(c.cudagraph_mode, kCudagraphNone, kCudagraphFullAndPiecewise, "cudagraph_mode",
               "an ATTN_CUDAGRAPH_MODE_* value (0..4)");
  if (c.max_cudagraph_capture_size < 0)
    invalid("config->max_cudagraph_capture_size=", c.max_cudagraph_capture_size,
            " is negative (0 means None)");
  expect_range(c.cache_dtype, kKvDtypeAuto, kKvDtypeUint8, "cache_dtype",
               "an ATTN_KV_DTYPE_* value (0..6)");
  expect_range(c.attn_type, kAttnDecoder, kAttnEncoderDecoder, "attn_type",
               "an ATTN_TYPE_* value (0..3)");
  if (c.num_sms < 0) invalid("config->num_sms=", c.num_sms, " is negative");
  expect_at_most(c.num_sms, kMaxNumSms, "num_sms");
  if (c.rswa_window < 0)
    invalid("config->rswa_window=", c.rswa_window, " is negative (0 means None)");
  // ABI 1.6
  if (c.replayssm_buffer_len <= 0)
    invalid("config->replayssm_buffer_len=", c.replayssm_buffer_len, " must be positive (vLLM's "
            "cache_config.replayssm_buffer_len; 0 means the default 16)");
  if (c.hash_block_size < 0)
    invalid("config->hash_block_size=", c.hash_block_size, " is negative (0 means None)");
  if (c.cache_hit_alignment_tokens < 0)
    invalid("config->cache_hit_alignment_tokens=", c.cache_hit_alignment_tokens,
            " is negative (0 means None)");
  if (c.num_hash_lookahead_tokens < 0)
    invalid("config->num_hash_lookahead_tokens=", c.num_hash_lookahead_tokens, " is negative");
  if (c.device_capability < 0)
    invalid("config->device_capability=", c.device_capability, " is negative");
  if (c.block_table_width < 0)
    invalid("config->block_table_width=", c.block_table_width,
            " is negative (0 means the worker's width)");
  if (c.prefill_context_parallel_size < 1)
    invalid("config->prefill_context_parallel_size=", c.prefill_context_parallel_size,
            " must be positive (0 means 1)");
  expect_at_most(c.prefill_context_parallel_size, kMaxContextParallelSize,
                 "prefill_context_parallel_size");
  if (c.candidate_block_size < 0)
    invalid("config->candidate_block_size=", c.candidate_block_size,
            " is negative (0 means absent)");
  if (c.candidate_topk_blocks < 0)
    invalid("config->candidate_topk_blocks=", c.candidate_topk_blocks,
            " is negative (0 means absent)");
  expect_range(c.sparse_indexer_topk_backend, kSparseIndexerTopkAuto, kSparseIndexerTopkAiter,
               "sparse_indexer_topk_backend", "an ATTN_SPARSE_INDEXER_TOPK_* value (0..7)");
  if (c.block_pool_size < 0)
    invalid("config->block_pool_size=", c.block_pool_size,
            " is negative (0 means no Whisper block pooling)");
  expect_at_most(c.block_pool_size, kMaxBlockPoolSize, "block_pool_size");
  if (c.sparse_num_index_heads < 0)
    invalid("config->sparse_num_index_heads=", c.sparse_num_index_heads,
            " is negative (0 means absent)");
  expect_at_most(c.sparse_num_index_heads, kMaxNumIndexHeads, "sparse_num_index_heads");
  if (c.tensor_parallel_size < 1)
    invalid("config->tensor_parallel_size=", c.tensor_parallel_size,
            " must be positive (0 means 1)");
  expect_at_most(c.tensor_parallel_size, kMaxContextParallelSize, "tensor_parallel_size");
  if (c.speculative_dspark && c.num_speculative_tokens == 0)
    invalid("config->speculative_dspark=1 with config->num_speculative_tokens=0 (DSpark is a "
            "speculative method: its drafts need speculative tokens)");
  expect_range(c.gdn_prefill_backend, kGdnPrefillAuto, kGdnPrefillFlashInfer,
               "gdn_prefill_backend", "an ATTN_GDN_PREFILL_* value (0..2)");
  expect_range(c.mla_prefill_backend, kMlaPrefillAuto, kMlaPrefillTokenspeedMla,
               "mla_prefill_backend", "an ATTN_MLA_PREFILL_* value (0..4)");
  if (c.flash_attn_version != 0 && (c.flash_attn_version < 2 || c.flash_attn_version > 4))
    invalid("config->flash_attn_version=", c.flash_attn_version, " is not 0 (auto), 2, 3 or 4");
  if (c.flash_attn_max_num_splits_for_cuda_graph < 0)
    invalid("config->flash_attn_max_num_splits_for_cuda_graph=",
            c.flash_attn_max_num_splits_for_cuda_graph, " is negative");
  if (c.workspace_size > 0 && c.workspace == nullptr)
    invalid("config->workspace is NULL but config->workspace_size=", c.workspace_size);
  if (c.workspace != nullptr &&
      reinterpret_cast<uintptr_t>(c.workspace) % kBufferAlignment != 0)
    invalid("config->workspace=", c.workspace, " is not ", kBufferAlignment, "-byte aligned");
  expect_range(c.model_dtype, kKvDtypeAuto, kKvDtypeFloat32, "model_dtype",
               "ATTN_KV_DTYPE_AUTO, FLOAT16, BFLOAT16 or FLOAT32 (0..3)");
  expect_range(c.use_trtllm_attention, -1, 1, "use_trtllm_attention",
               "-1 (auto), 0 (off) or 1 (force)");
  for (size_t i = 0; i < c.cudagraph_capture_sizes.size(); ++i)
    if (c.cudagraph_capture_sizes[i] <= 0)
      invalid("config->cudagraph_capture_sizes[", i, "]=", c.cudagraph_capture_sizes[i],
              " must be positive");
    else if (c.cudagraph_capture_sizes[i] > kMaxNumBatchedTokens)
      invalid("config->cudagraph_capture_sizes[", i, "]=", c.cudagraph_capture_sizes[i],
              " exceeds libattn's create-time limit of ", kMaxNumBatchedTokens,
              " (docs/architecture.md, Limits)");
  if (c.num_gpu_blocks < 0 || c.num_gpu_blocks > (int64_t{1} << 31) - 1)
    invalid("config->num_gpu_blocks=", c.num_gpu_blocks, " is not in [0, 2^31-1] (block ids are int32)");
  expect_at_most(c.num_gpu_blocks, kMaxNumGpuBlocks, "num_gpu_blocks");
  expect_range(c.flex_attn_q_block_size, 0, 1 << 16, "flex_attn_q_block_size",
               "in [0, 65536] (0 for the default)");
  expect_range(c.flex_attn_kv_block_size, 0, 1 << 16, "flex_attn_kv_block_size",
               "in [0, 65536] (0 for the default)");
  if (c.max_encoder_len < 0) invalid("config->max_encoder_len=", c.max_encoder_len, " is negative");
  expect_range(c.cpu_attn_isa, 0, 7, "cpu_attn_isa", "an ATTN_CPU_ISA_* value (0..7)");
  // ABI 1.2 (MLA): dimensions and the workspace; 0 keeps the default.
  expect_range(c.mla_kv_lora_rank, 0, 1 << 16, "mla_kv_lora_rank", "in [0, 65536] (0 for 512)");
  expect_range(c.mla_qk_rope_head_dim, 0, 1 << 16, "mla_qk_rope_head_dim",
               "in [0, 65536] (0 for 64)");
  expect_range(c.mla_qk_nope_head_dim, 0, 1 << 16, "mla_qk_nope_head_dim",
               "in [0, 65536] (0 for 128)");
  expect_range(c.mla_v_head_dim, 0, 1 << 16, "mla_v_head_dim", "in [0, 65536] (0 for 128)");
  if (c.mla_chunked_prefill_workspace_size < 0)
    invalid("config->mla_chunked_prefill_workspace_size=", c.mla_chunked_prefill_workspace_size,
            " is negative (0 means vLLM's size)");
  if (!c.allocator) c.allocator = default_allocator();
}

std::vector<int32_t> BuilderConfig::capture_sizes() const {
  const int64_t tokens = max_num_batched_tokens;
  const int64_t q = 1 + static_cast<int64_t>(num_speculative_tokens);
  std::vector<int64_t> sizes;
  int64_t max = 0;
  if (!cudagraph_capture_sizes.empty()) {
    // vLLM keeps the runtime's sizes sorted, without duplicates, up to max_num_batched_tokens.
    for (const int32_t v : cudagraph_capture_sizes)
      if (v <= tokens) sizes.push_back(v);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    max = sizes.empty() ? 0 : sizes.back();
  } else {
    // vLLM's default: [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16) up to
    // max_cudagraph_capture_size, or min(2 * max_num_seqs * (1 + spec tokens), 512), and never
    // more than max_num_batched_tokens.
    max = max_cudagraph_capture_size > 0
              ? max_cudagraph_capture_size
              : std::min<int64_t>(2 * static_cast<int64_t>(max_num_seqs) * q, 512);
    max = std::min(max, tokens);
    for (int64_t v : {1, 2, 4})
      if (v <= max) sizes.push_back(v);
    for (int64_t v = 8; v < 256 && v <= max; v += 8) sizes.push_back(v);
    for (int64_t v = 256; v <= max; v += 16) sizes.push_back(v);
  }
  if (rounds_capture_sizes()) {
    // Spec decode with full decode graphs: every size a multiple of 1 + spec tokens
    // (vLLM's adjust_cudagraph_sizes_for_spec_decode; model runner V1 only).
    std::vector<int64_t> rounded;
    for (const int64_t v : sizes) {
      const int64_t r = (v + q - 1) / q * q;
      if (r <= max) rounded.push_back(r);
    }
    std::sort(rounded.begin(), rounded.end());
    rounded.erase(std::unique(rounded.begin(), rounded.end()), rounded.end());
    if (rounded.empty() && q <= max) rounded.push_back(q);
    sizes = rounded;
  }
  return std::vector<int32_t>(sizes.begin(), sizes.end());
}

bool BuilderConfig::rounds_capture_sizes() const {
  return num_speculative_tokens > 0 && has_full_cudagraphs(cudagraph_mode) && !use_v2_model_runner;
}

int64_t BuilderConfig::resolved_max_cudagraph_capture_size() const {
  if (max_cudagraph_capture_size > 0 && !rounds_capture_sizes()) return max_cudagraph_capture_size;
  const std::vector<int32_t> sizes = capture_sizes();  // rounded where vLLM rounds them
  // No size left after rounding: vLLM's engine refuses the configuration (ValueError "No valid
  // cudagraph sizes after rounding"); TRITON_ATTN refuses it too, the others keep the maximum.
  if (sizes.empty()) return max_cudagraph_capture_size;
  return *std::max_element(sizes.begin(), sizes.end());
}

int32_t BuilderConfig::model_dtype_for(const KvCacheSpec& spec) const {
  return model_dtype != kKvDtypeAuto ? model_dtype : spec.dtype;
}

int32_t max_decode_query_len(const BuilderConfig& c) {
  if (c.num_speculative_tokens <= 0) return 1;
  const int32_t per_token = c.parallel_drafting && !c.use_v2_model_runner ? 2 : 1;
  return 1 + per_token * c.num_speculative_tokens;
}

int32_t resolved_device_capability(const BuilderConfig& c) {
  if (c.device_capability > 0) return c.device_capability;
  if (!c.device.is_cuda() || !ops::cuda_compiled()) return 0;
  try {
    if (ops::cuda_device_count() <= c.device.id) return 0;
    return ops::cuda_device_capability(c.device.id);
  } catch (const Error&) {
    return 0;
  }
}

}  // namespace attn

namespace attn {
void check_device_available(const BuilderConfig& c) {
  if (!c.device.is_cuda()) return;
  if (!ops::cuda_compiled())
    fail(Status::kUnsupported, "config->device is ", c.device.to_string(),
         " but libattn was built without CUDA support");
  const int32_t n = ops::cuda_device_count();
  if (c.device.id >= n) {
    const std::string why = n == 0 ? ": " + ops::cuda_no_device_reason() : std::string();
    fail(Status::kCuda, "config->device is ", c.device.to_string(), " but ", n,
         " CUDA device(s) are visible", why);
  }
}
}  // namespace attn
