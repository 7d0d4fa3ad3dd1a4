// The wrappers of wrappers.h, one file each; wrappers.cc dispatches to these.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/builder.h"
#include "core/persistent_buffers.h"

namespace attn::backends {

// chunked_local_attention.cc
int64_t chunked_local_max_virtual_batches(const KvCacheSpec& spec, const BuilderConfig& config);
std::vector<BufferRequest> chunked_local_buffers(const KvCacheSpec& spec, const BuilderConfig& config);
std::unique_ptr<Builder> make_chunked_local(std::shared_ptr<const Backend> backend,
                                            const KvCacheSpec& spec, const BuilderConfig& config,
                                            std::unique_ptr<Builder> inner);

// fast_prefill_attention.cc
std::vector<BufferRequest> fast_prefill_buffers(const BuilderConfig& config);
std::unique_ptr<Builder> make_fast_prefill(std::shared_ptr<const Backend> backend,
                                           const KvCacheSpec& spec, const BuilderConfig& config,
                                           std::unique_ptr<Builder> inner);

// cross_attention.cc
std::vector<BufferRequest> cross_attention_buffers(const BuilderConfig& config);
std::unique_ptr<Builder> make_cross_attention(std::shared_ptr<const Backend> backend,
                                              const KvCacheSpec& spec, const BuilderConfig& config,
                                              std::unique_ptr<Builder> inner);

// encoder_only_attention.cc
std::unique_ptr<Builder> make_encoder_only(std::shared_ptr<const Backend> backend,
                                           const KvCacheSpec& spec, const BuilderConfig& config,
                                           std::unique_ptr<Builder> inner);

// static_sink_attention.cc
std::vector<BufferRequest> static_sink_buffers(const KvCacheSpec& spec, const BuilderConfig& config);
std::unique_ptr<Builder> make_static_sink(std::shared_ptr<const Backend> backend,
                                          const KvCacheSpec& spec, const BuilderConfig& config,
                                          std::unique_ptr<Builder> inner);

// whisper_block_pooling.cc
/// Whether vLLM 0.33's Whisper block-pooling wrapper takes this backend (libattn's name).
bool block_pooling_supports(const std::string& backend);
/// The spec the wrapped builder is created with: blocks of block_size * block_pool_size tokens.
KvCacheSpec block_pooling_inner_spec(const KvCacheSpec& spec, const BuilderConfig& config);
std::vector<BufferRequest> block_pooling_buffers(const BuilderConfig& config);
std::unique_ptr<Builder> make_block_pooling(std::shared_ptr<const Backend> backend,
                                            const KvCacheSpec& spec, const BuilderConfig& config,
                                            std::unique_ptr<Builder> inner);

}  // namespace attn::backends
