#include "core/cudagraph_mode.h"

#include <algorithm>

#include "core/builder_config.h"
#include "core/error.h"

namespace attn {
namespace {

const char* mode_name(int32_t m) {
  switch (m) {
    case kCudagraphNone: return "NONE";
    case kCudagraphPiecewise: return "PIECEWISE";
    case kCudagraphFull: return "FULL";
    case kCudagraphFullDecodeOnly: return "FULL_DECODE_ONLY";
    case kCudagraphFullAndPiecewise: return "FULL_AND_PIECEWISE";
    default: return "?";
  }
}

// CUDAGraphMode.decode_mode() / mixed_mode(): the tuple modes' halves.
int32_t decode_mode(int32_t m) {
  return m == kCudagraphFullDecodeOnly || m == kCudagraphFullAndPiecewise ? kCudagraphFull : m;
}
int32_t mixed_mode(int32_t m) {
  if (m == kCudagraphFullDecodeOnly) return kCudagraphNone;
  if (m == kCudagraphFullAndPiecewise) return kCudagraphPiecewise;
  return m;
}
bool requires_piecewise(int32_t m) {
  return m == kCudagraphPiecewise || m == kCudagraphFullAndPiecewise;
}
int32_t without_piecewise(int32_t m) {
  if (m == kCudagraphPiecewise) return kCudagraphNone;
  if (m == kCudagraphFullAndPiecewise) return kCudagraphFullDecodeOnly;
  return m;
}

std::string backend_or_none(const std::string& name) { return name.empty() ? "None" : name; }

std::string support_text(int32_t level) {
  return cat("AttentionCGSupport.", cudagraph_support_name(level));
}

// MRV2's get_varlen_cudagraph_unsupported_backend + the ValueError of
// maybe_create_adaptive_verification_manager.
void check_varlen_bounds(const CudagraphResolveInputs& in) {
  const int32_t max_query_len = in.uniform_decode_query_len;
  for (const CudagraphGroup& g : in.groups) {
    if (g.cudagraph_support == kCgAlways) continue;
    // NEVER means never, whatever the builder's bound says.
    const std::optional<int32_t> bound =
        g.cudagraph_support == kCgNever ? std::nullopt : g.varlen_max_query_len;
    if (!bound || *bound < max_query_len)
      fail(Status::kUnsupported, "Adaptive verification replays decode cudagraphs whose "
           "per-request query lengths vary up to ", max_query_len, ", but ",
           backend_or_none(g.backend_name), " allows ",
           bound ? cat("at most ", *bound) : std::string("none"),
           " (vLLM 0.33 raises ValueError; disable adaptive verification or use a backend that "
           "does)");
  }
}

// CompilationConfig.adjust_cudagraph_sizes_for_spec_decode.
void round_sizes(CudagraphResolution& r, int32_t multiple_of) {
  if (r.cudagraph_capture_sizes.empty() || multiple_of <= 1) return;
  if (r.max_cudagraph_capture_size <= 0)
    invalid("args->max_cudagraph_capture_size=0 (None) with ", r.cudagraph_capture_sizes.size(),
            " capture sizes to round to multiples of ", multiple_of,
            " (vLLM asserts max_cudagraph_capture_size is not None)");
  const int64_t max = r.max_cudagraph_capture_size;
  std::vector<int32_t> rounded;
  for (const int32_t s : r.cudagraph_capture_sizes) {
    const int64_t up = (static_cast<int64_t>(s) + multiple_of - 1) / multiple_of * multiple_of;
    if (up <= max) rounded.push_back(static_cast<int32_t>(up));
  }
  std::sort(rounded.begin(), rounded.end());
  rounded.erase(std::unique(rounded.begin(), rounded.end()), rounded.end());
  if (rounded.empty() && multiple_of <= max) rounded.push_back(multiple_of);
  if (rounded.empty())
    fail(Status::kUnsupported, "No valid cudagraph sizes after rounding to multiple of ",
         multiple_of, " (num_speculative_tokens + 1): adjust num_speculative_tokens (",
         multiple_of - 1, ") or max_cudagraph_capture_size (", max,
         ") or cudagraph_capture_sizes");
  r.max_cudagraph_capture_size = rounded.back();
  r.cudagraph_capture_sizes = std::move(rounded);
}

}  // namespace

std::pair<int32_t, std::string> min_cudagraph_support(const std::vector<CudagraphGroup>& groups) {
  int32_t level = kCgAlways;
  std::string name;
  for (const CudagraphGroup& g : groups)
    if (g.cudagraph_support < level) {
      level = g.cudagraph_support;
      name = g.backend_name;
    }
  return {level, name};
}

CudagraphResolution resolve_cudagraph_mode_and_sizes(const CudagraphResolveInputs& in) {
  if (in.cudagraph_mode < kCudagraphNone || in.cudagraph_mode > kCudagraphFullAndPiecewise)
    invalid("args->cudagraph_mode=", in.cudagraph_mode, " is not an ATTN_CUDAGRAPH_MODE_* value");
  if (in.uniform_decode_query_len < 1)
    invalid("args->uniform_decode_query_len=", in.uniform_decode_query_len, " is below 1");
  if (in.max_cudagraph_capture_size < 0)
    invalid("args->max_cudagraph_capture_size=", in.max_cudagraph_capture_size,
            " is negative (0 for None)");
  if (in.num_blocks < 0) invalid("args->num_blocks=", in.num_blocks, " is negative");
  if (in.max_num_reqs < 0)
    invalid("args->max_num_reqs=", in.max_num_reqs, " is negative (0 for None)");
  for (size_t i = 0; i < in.groups.size(); ++i) {
    const CudagraphGroup& g = in.groups[i];
    if (g.cudagraph_support < kCgNever || g.cudagraph_support > kCgAlways)
      invalid("args->group_cudagraph_support[", i, "]=", g.cudagraph_support,
              " is not an ATTN_CG_* value");
    if (g.varlen_max_query_len && *g.varlen_max_query_len < 0)
      invalid("args->group_varlen_max_query_len[", i, "]=", *g.varlen_max_query_len,
              " is negative other than -1 (None)");
  }
  for (size_t i = 0; i < in.cudagraph_capture_sizes.size(); ++i)
    if (in.cudagraph_capture_sizes[i] < 1)
      invalid("args->cudagraph_capture_sizes[", i, "]=", in.cudagraph_capture_sizes[i],
              " is below 1");

  CudagraphResolution r;
  r.cudagraph_capture_sizes = in.cudagraph_capture_sizes;
  r.max_cudagraph_capture_size = in.max_cudagraph_capture_size;
  int32_t mode = in.cudagraph_mode;

  if (in.adaptive_verification) {
    // MRV2: the varlen check (maybe_create_adaptive_verification_manager), then
    // resolve_adaptive_cudagraph_mode, both before the resolution.
    if (!in.use_v2_model_runner)
      invalid("args->adaptive_verification=1 needs args->use_v2_model_runner=1 (adaptive "
              "verification is model runner V2's)");
    check_varlen_bounds(in);
    if (!has_full_cudagraphs(mode))
      invalid("args->adaptive_verification=1 with args->cudagraph_mode=", mode_name(mode),
              ", which has no FULL cudagraphs (vLLM asserts mode.has_full_cudagraphs())");
    mode = mode == kCudagraphFullDecodeOnly || !in.piecewise_capture_available
               ? kCudagraphFullDecodeOnly
               : kCudagraphFullAndPiecewise;
  }

  if (mode == kCudagraphNone) {
    r.cudagraph_mode = kCudagraphNone;
    return r;
  }
  const auto [min_cg, min_name] = min_cudagraph_support(in.groups);
  const std::string backend = backend_or_none(min_name);

  // Mixed batches in FULL graphs need ALWAYS.
  if (mixed_mode(mode) == kCudagraphFull && min_cg != kCgAlways) {
    if (min_cg == kCgNever)
      fail(Status::kUnsupported, "CUDAGraphMode.", mode_name(mode), " is not supported with ",
           backend, " backend (support: ", support_text(min_cg),
           "); please try cudagraph_mode=PIECEWISE, and make sure compilation mode is "
           "VLLM_COMPILE");
    mode = in.splitting_ops_contain_attention ? kCudagraphFullAndPiecewise
                                              : kCudagraphFullDecodeOnly;
  }
  // FULL decode graphs with a NEVER group.
  if (decode_mode(mode) == kCudagraphFull && min_cg == kCgNever) {
    mode = in.vllm_compile &&
                   (in.splitting_ops_contain_attention || in.use_inductor_graph_partition)
               ? kCudagraphPiecewise
               : kCudagraphNone;
  }
  // Spec decode with FULL decode graphs needs UNIFORM_BATCH.
  if (decode_mode(mode) == kCudagraphFull && in.uniform_decode_query_len > 1 &&
      min_cg < kCgUniformBatch)
    mode = in.splitting_ops_contain_attention ? kCudagraphPiecewise : kCudagraphNone;
  if (!in.piecewise_capture_available && requires_piecewise(mode)) mode = without_piecewise(mode);
  if (has_full_cudagraphs(mode) && min_cg == kCgNever)
    fail(Status::kUnsupported, "CUDAGraphMode.", mode_name(mode), " is not supported with ",
         backend, " backend (support: ", support_text(min_cg),
         "); please try cudagraph_mode=PIECEWISE, and make sure compilation mode is "
         "VLLM_COMPILE");
  // MRV1 only: capture sizes become multiples of 1 + k.
  if (!in.use_v2_model_runner && decode_mode(mode) == kCudagraphFull &&
      in.uniform_decode_query_len > 1)
    round_sizes(r, in.uniform_decode_query_len);
  // Mamba: one cache block per decode sequence under FULL graphs.
  if (in.max_num_reqs > 0 && has_full_cudagraphs(mode) && !in.is_profiling &&
      in.has_mamba_layers && in.max_num_reqs > in.num_blocks)
    fail(Status::kUnsupported, "max_num_seqs (", in.max_num_reqs,
         ") exceeds available Mamba cache blocks (", in.num_blocks,
         "). Each decode sequence requires one Mamba cache block, so CUDA graph capture cannot "
         "proceed. Please lower max_num_seqs to at most ", in.num_blocks,
         " or increase gpu_memory_utilization.");
  r.cudagraph_mode = mode;
  return r;
}

}  // namespace attn
