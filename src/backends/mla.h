// The MLA family: vLLM's MLACommonMetadataBuilder (vllm/model_executor/layers/attention/
// mla_attention.py, formerly vllm/v1/attention/backends/mla/common.py) and the builders of
// FLASHMLA, FLASH_ATTN_MLA, CUTLASS_MLA, FLASHINFER_MLA and TRITON_MLA (mla/*.py).
#pragma once

#include <cstdint>
#include <memory>

#include "core/backend.h"
#include "core/builder_config.h"
#include "core/kv_cache_spec.h"

namespace attn::backends {

/// vLLM's MLACommonMetadataBuilder.determine_chunked_prefill_workspace_size:
/// max(min(max(8 * max_model_len, 4 * max_num_seqs * block_size), 65536),
/// max_num_seqs * block_size) tokens, or config->mla_chunked_prefill_workspace_size when set.
int64_t mla_chunked_prefill_workspace_size(const KvCacheSpec& spec, const BuilderConfig& config);

/// The most context chunks a batch can need under this config: with n prefills that have
/// context (at most min(max_num_seqs, max_num_batched_tokens, workspace / block_size)) a chunk
/// is round_down(workspace // n, block_size) tokens and a context at most max_model_len - 1.
int64_t mla_max_context_chunks(const KvCacheSpec& spec, const BuilderConfig& config);

std::shared_ptr<const Backend> make_flashmla_backend();
std::shared_ptr<const Backend> make_flash_attn_mla_backend();
std::shared_ptr<const Backend> make_cutlass_mla_backend();
std::shared_ptr<const Backend> make_flashinfer_mla_backend();
std::shared_ptr<const Backend> make_triton_mla_backend();

}  // namespace attn::backends
