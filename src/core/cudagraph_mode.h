// vLLM 0.33's CUDA graph mode resolution (CompilationConfig.resolve_cudagraph_mode_and_sizes,
// with the reduction of GPUModelRunner._check_and_update_cudagraph_mode / MRV2's
// get_attn_cg_support in front, and MRV2's adaptive-verification varlen check): config logic,
// host only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn {

/// One attention group as the resolution sees it: its builder's level, its backend's name (for
/// messages; vLLM's backend class name) and its builder's varlen_cudagraph_max_query_len().
struct CudagraphGroup {
  int32_t cudagraph_support = 3;  ///< ATTN_CG_* (vLLM's AttentionCGSupport value).
  std::string backend_name;       ///< Empty: vLLM's None.
  std::optional<int32_t> varlen_max_query_len;
};

/// Everything resolve_cudagraph_mode_and_sizes reads (the CompilationConfig fields and the
/// model runner's arguments).
struct CudagraphResolveInputs {
  int32_t cudagraph_mode = 4;  ///< The configured mode (ATTN_CUDAGRAPH_MODE_*).
  std::vector<CudagraphGroup> groups;
  int32_t uniform_decode_query_len = 1;        ///< 1 + num_speculative_tokens.
  std::vector<int32_t> cudagraph_capture_sizes;  ///< As configured (vLLM keeps them sorted).
  int32_t max_cudagraph_capture_size = 0;      ///< 0 = None.
  bool use_v2_model_runner = false;
  bool piecewise_capture_available = true;
  bool splitting_ops_contain_attention = true;
  bool vllm_compile = true;  ///< compilation mode == VLLM_COMPILE.
  bool use_inductor_graph_partition = false;
  bool has_mamba_layers = false;  ///< kv_cache_config.has_mamba_layers (false: no config).
  bool is_profiling = false;
  int64_t num_blocks = 0;    ///< kv_cache_config.num_blocks.
  int64_t max_num_reqs = 0;  ///< 0 = None.
  bool adaptive_verification = false;  ///< MRV2 adaptive verification (varlen decode graphs).
};

struct CudagraphResolution {
  int32_t cudagraph_mode = 0;
  std::vector<int32_t> cudagraph_capture_sizes;
  int32_t max_cudagraph_capture_size = 0;  ///< 0 = None.
};

/// The lowest level over `groups` (ATTN_CG_ALWAYS for none) and the name of the first group
/// that has it (empty when every group is ALWAYS): vLLM's strict-< reduction.
std::pair<int32_t, std::string> min_cudagraph_support(const std::vector<CudagraphGroup>& groups);

/// vLLM 0.33's resolution. Errors: Error(kInvalidArgument) for malformed inputs (vLLM's
/// assertions); Error(kUnsupported) for vLLM's ValueErrors (FULL graphs with a NEVER group, no
/// capture size left after rounding, max_num_seqs above the Mamba block count, an adaptive
/// verification bound too small).
CudagraphResolution resolve_cudagraph_mode_and_sizes(const CudagraphResolveInputs& in);

}  // namespace attn
