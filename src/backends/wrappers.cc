#include "backends/wrappers.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "backends/wrapper_kinds.h"
#include "core/error.h"
#include "core/kv_cache_spec.h"

namespace attn::backends {

std::vector<BufferRequest> wrapper_buffers(Wrapper w, const KvCacheSpec& spec,
                                           const BuilderConfig& config) {
  switch (w) {
    case Wrapper::kFastPrefill: return fast_prefill_buffers(config);
    case Wrapper::kChunkedLocal: return chunked_local_buffers(spec, config);
    case Wrapper::kCrossAttention: return cross_attention_buffers(config);
    case Wrapper::kEncoderOnly: return {};
    case Wrapper::kStaticSink: return static_sink_buffers(spec, config);
    case Wrapper::kBlockPooling: return block_pooling_buffers(config);
  }
  return {};
}

BuilderConfig wrapper_inner_config(Wrapper w, const std::string& backend, const KvCacheSpec& spec,
                                   const BuilderConfig& config) {
  BuilderConfig inner = config;
  if (w == Wrapper::kFastPrefill) inner.kv_sharing_fast_prefill = false;
  // The wrapped builder sees encoder lengths as its sequence lengths: size it for them.
  if (w == Wrapper::kCrossAttention)
    inner.max_model_len = std::max(config.max_model_len, config.max_encoder_len);
  // The wrapped builder sees sequences sink_len tokens longer (vLLM checks no length against
  // max_model_len; libattn's validation of the wrapped batch allows for the sinks).
  if (w == Wrapper::kStaticSink) inner.max_model_len = config.max_model_len + spec.sink_len;
  if (w == Wrapper::kBlockPooling) {
    // The wrapped builder sees block_pool_size times the tokens and lengths (vLLM's keeps the
    // model config: libattn's limits follow the pooled batch). vLLM sets num_heads_q to the
    // spec's num_kv_heads after the wrapped builder's __init__ (no GQA in Whisper's encoder):
    // FLASH_ATTN reads it when it builds (its schedule's num_heads_q), TRITON_ATTN sized its
    // scratch with the model's heads before (check_wrapper refuses the one view that differs).
    inner.max_num_batched_tokens = config.max_num_batched_tokens * config.block_pool_size;
    inner.max_model_len = config.max_model_len * config.block_pool_size;
    if (backend == "FLASH_ATTN") inner.num_attention_heads = spec.num_kv_heads;
    inner.block_pool_size = 0;
  }
  if (w == Wrapper::kChunkedLocal) {
    // The wrapped builder sees the virtual batches as its requests (vLLM's Triton variant sizes
    // the wrapped builder the same way).
    const int64_t v = chunked_local_max_virtual_batches(spec, config);
    if (v > (int64_t{1} << 31) - 1)
      invalid("config->max_num_seqs=", config.max_num_seqs, " and max_num_batched_tokens=",
              config.max_num_batched_tokens, " make more than 2^31-1 virtual batches");
    inner.max_num_seqs = static_cast<int32_t>(v);
  }
  return inner;
}

KvCacheSpec wrapper_inner_spec(Wrapper w, const KvCacheSpec& spec, const BuilderConfig& config) {
  return w == Wrapper::kBlockPooling ? block_pooling_inner_spec(spec, config) : spec;
}

int32_t wrapper_cudagraph_support(Wrapper w, int32_t inner_level) {
  if (w == Wrapper::kChunkedLocal) return kCgNever;
  // vLLM's subclass sets _cudagraph_support = UNIFORM_SINGLE_TOKEN_DECODE whatever the inner's.
  if (w == Wrapper::kBlockPooling) return kCgUniformSingleTokenDecode;
  return inner_level;
}

void check_wrapper(Wrapper w, const std::string& backend, const KvCacheSpec& spec,
                   const BuilderConfig& config) {
  switch (w) {
    case Wrapper::kChunkedLocal:
      if (spec.attention_chunk_size % spec.block_size != 0)
        invalid("kv_cache_spec->attention_chunk_size=", spec.attention_chunk_size,
                " is not divisible by kv_cache_spec->block_size=", spec.block_size);
      break;
    case Wrapper::kCrossAttention:
      if (config.max_encoder_len <= 0)
        invalid("config->max_encoder_len=", config.max_encoder_len,
                " must be positive for a CROSS_ATTENTION KV cache spec");
      break;
    case Wrapper::kFastPrefill:
      // vLLM's MLA impls raise NotImplementedError("KV sharing is not supported for MLA").
      if (spec.kind == kKvMla)
        fail(Status::kUnsupported, "KV sharing is not supported for MLA "
             "(config->kv_sharing_fast_prefill with an MLA KV cache spec)");
      break;
    case Wrapper::kEncoderOnly:
      break;
    case Wrapper::kStaticSink:
      // kv_cache_spec validation checked the kind (FULL_ATTENTION) and the multiple of block_size.
      if (static_cast<int64_t>(config.max_model_len) + spec.sink_len > INT32_MAX)
        invalid("config->max_model_len=", config.max_model_len, " + kv_cache_spec->sink_len=",
                spec.sink_len, " exceeds 2^31-1");
      break;
    case Wrapper::kBlockPooling: {
      if (!block_pooling_supports(backend))
        fail(Status::kUnsupported, "config->block_pool_size=", config.block_pool_size, ": ",
             backend, " has no Whisper block-pooling wrapper (vLLM 0.33 takes FLASH_ATTN, "
             "TRITON_ATTN, ROCM_ATTN, ROCM_AITER_FA and CPU_ATTN; libattn FLASH_ATTN and "
             "TRITON_ATTN)");
      if (backend == "TRITON_ATTN" && config.num_sms > 0 &&
          resolved_device_capability(config) == 120 &&
          config.num_attention_heads != spec.num_kv_heads)
        fail(Status::kUnsupported, "config->block_pool_size=", config.block_pool_size,
             " with TRITON_ATTN on SM 12.0 (config->num_sms=", config.num_sms,
             ") and config->num_attention_heads=", config.num_attention_heads,
             " != kv_cache_spec->num_kv_heads=", spec.num_kv_heads, ": vLLM 0.33 views its "
             "64-segment softmax scratch with the KV heads (num_heads_q overridden after the "
             "scratch was sized); libattn does not reproduce that view");
      if (spec.kind != kKvFullAttention && spec.kind != kKvSlidingWindow)
        invalid("config->block_pool_size=", config.block_pool_size, " needs a FULL_ATTENTION or "
                "SLIDING_WINDOW kv_cache_spec->kind (vLLM's causal Whisper layers), not ",
                spec.kind);
      const int64_t p = config.block_pool_size;
      if (p * spec.block_size > kMaxSpecTokens)
        invalid("kv_cache_spec->block_size=", spec.block_size, " * config->block_pool_size=", p,
                " exceeds ", kMaxSpecTokens);
      if (p * config.max_num_batched_tokens > kMaxNumBatchedTokens)
        invalid("config->max_num_batched_tokens=", config.max_num_batched_tokens,
                " * block_pool_size=", p, " exceeds ", kMaxNumBatchedTokens);
      if (p * config.max_model_len > kMaxModelLen)
        invalid("config->max_model_len=", config.max_model_len, " * block_pool_size=", p,
                " exceeds ", kMaxModelLen);
      break;
    }
  }
}

std::unique_ptr<Builder> make_wrapper(Wrapper w, std::shared_ptr<const Backend> backend,
                                      const KvCacheSpec& spec, const BuilderConfig& config,
                                      std::unique_ptr<Builder> inner) {
  switch (w) {
    case Wrapper::kFastPrefill:
      return make_fast_prefill(std::move(backend), spec, config, std::move(inner));
    case Wrapper::kChunkedLocal:
      return make_chunked_local(std::move(backend), spec, config, std::move(inner));
    case Wrapper::kCrossAttention:
      return make_cross_attention(std::move(backend), spec, config, std::move(inner));
    case Wrapper::kEncoderOnly:
      return make_encoder_only(std::move(backend), spec, config, std::move(inner));
    case Wrapper::kStaticSink:
      return make_static_sink(std::move(backend), spec, config, std::move(inner));
    case Wrapper::kBlockPooling:
      return make_block_pooling(std::move(backend), spec, config, std::move(inner));
  }
  fail(Status::kInternal, "unknown wrapper");
}

}  // namespace attn::backends
