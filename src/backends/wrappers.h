// vLLM's builder wrappers, which apply to any backend: chunked local attention
// (create_chunked_local_attention_backend), KV-sharing fast prefill
// (create_fast_prefill_custom_backend), cross attention (create_cross_attention_backend) and
// encoder-only attention (create_encoder_only_attention_backend) and, new in vLLM 0.33, static
// sinks (create_static_sink_attention_backend) and Whisper's causal block pooling
// (create_whisper_attention_backend_with_block_pooling). A runtime selects them with the KV cache
// spec's kind, its sink_len, config->kv_sharing_fast_prefill and config->block_pool_size;
// builder_factory.h stacks them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/builder.h"
#include "core/persistent_buffers.h"

namespace attn::backends {

enum class Wrapper {
  kFastPrefill,
  kChunkedLocal,
  kCrossAttention,
  kEncoderOnly,
  kStaticSink,
  kBlockPooling,
};

/// The wrapper's own persistent buffers for this spec and config.
std::vector<BufferRequest> wrapper_buffers(Wrapper w, const KvCacheSpec& spec,
                                           const BuilderConfig& config);
/// The config the wrapped builder is created with (chunked local attention sizes it for the
/// virtual batches); workspace fields are the caller's to adjust.
BuilderConfig wrapper_inner_config(Wrapper w, const std::string& backend, const KvCacheSpec& spec,
                                   const BuilderConfig& config);
/// The spec the wrapped builder is created with (block pooling multiplies the block size).
KvCacheSpec wrapper_inner_spec(Wrapper w, const KvCacheSpec& spec, const BuilderConfig& config);
/// The wrapper's CUDA graph level given the wrapped builder's.
int32_t wrapper_cudagraph_support(Wrapper w, int32_t inner_level);
/// Checks what the wrapper needs from the spec and config (Error(kInvalidArgument) /
/// Error(kUnsupported) naming the field).
/// `backend`: the wrapped backend's name (block pooling takes only vLLM's list).
void check_wrapper(Wrapper w, const std::string& backend, const KvCacheSpec& spec,
                   const BuilderConfig& config);

std::unique_ptr<Builder> make_wrapper(Wrapper w, std::shared_ptr<const Backend> backend,
                                      const KvCacheSpec& spec, const BuilderConfig& config,
                                      std::unique_ptr<Builder> inner);

}  // namespace attn::backends
