// What src/capi calls instead of Backend::create / cudagraph_support / buffer_plan: the same
// with vLLM's wrappers stacked around the backend's builder as the spec and config ask
// (outermost first): KV-sharing fast prefill (config->kv_sharing_fast_prefill), then chunked
// local attention (CHUNKED_LOCAL_ATTENTION spec), cross attention (CROSS_ATTENTION spec) or
// encoder-only attention (ENCODER_ONLY spec), or static sinks (a FULL_ATTENTION spec with
// sink_len > 0). A wrapper's buffers come first in a workspace.
#pragma once

#include <cstddef>
#include <memory>

#include "core/backend.h"
#include "core/builder.h"

namespace attn::backends {

std::unique_ptr<Builder> create_builder(const std::shared_ptr<const Backend>& backend,
                                        const KvCacheSpec& spec, const BuilderConfig& config);

/// The level a builder for this spec and config would have, without creating it.
int32_t cudagraph_support(const Backend& backend, const KvCacheSpec& spec,
                          const BuilderConfig& config);

/// Bytes of caller workspace a builder for this spec and config uses.
size_t workspace_bytes(const Backend& backend, const KvCacheSpec& spec, const BuilderConfig& config);

}  // namespace attn::backends
