// vLLM 0.33's CUDA graph mode resolution and the builders' varlen cudagraph bound (ABI 1.4):
// attn_resolve_cudagraph_mode_and_sizes and attn_builder_varlen_cudagraph_max_query_len.
#include <cstring>
#include <optional>

#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "capi/handles.h"
#include "core/builder.h"
#include "core/cudagraph_mode.h"

namespace {

constexpr attn_cudagraph_resolve_args_t kResolveArgsDefaults = ATTN_CUDAGRAPH_RESOLVE_ARGS_INIT;
// The first (1.4) size of the struct: the smallest struct_size accepted.
constexpr size_t kResolveArgsSizeV1 = sizeof(attn_cudagraph_resolve_args_t);

attn::CudagraphResolveInputs to_inputs(const attn_cudagraph_resolve_args_t* args) {
  const attn_cudagraph_resolve_args_t a =
      attn::capi::read_struct(args, kResolveArgsDefaults, kResolveArgsSizeV1, "args");
  attn::CudagraphResolveInputs in;
  in.cudagraph_mode = a.cudagraph_mode;
  in.uniform_decode_query_len = a.uniform_decode_query_len;
  if (a.num_groups > (size_t{1} << 20))
    attn::invalid("args->num_groups=", a.num_groups, " is above 2^20");
  if (a.num_groups > 0 && a.group_cudagraph_support == nullptr)
    attn::invalid("args->group_cudagraph_support is NULL with args->num_groups=", a.num_groups);
  in.groups.resize(a.num_groups);
  for (size_t i = 0; i < a.num_groups; ++i) {
    attn::CudagraphGroup& g = in.groups[i];
    g.cudagraph_support = a.group_cudagraph_support[i];
    if (a.group_backend_names != nullptr && a.group_backend_names[i] != nullptr)
      g.backend_name = a.group_backend_names[i];
    if (a.group_varlen_max_query_len != nullptr && a.group_varlen_max_query_len[i] != -1)
      g.varlen_max_query_len = a.group_varlen_max_query_len[i];
  }
  if (a.num_cudagraph_capture_sizes > (size_t{1} << 24))
    attn::invalid("args->num_cudagraph_capture_sizes=", a.num_cudagraph_capture_sizes,
                  " is above 2^24");
  if (a.num_cudagraph_capture_sizes > 0 && a.cudagraph_capture_sizes == nullptr)
    attn::invalid("args->cudagraph_capture_sizes is NULL with args->num_cudagraph_capture_sizes=",
                  a.num_cudagraph_capture_sizes);
  in.cudagraph_capture_sizes.assign(a.cudagraph_capture_sizes,
                                    a.cudagraph_capture_sizes + a.num_cudagraph_capture_sizes);
  in.max_cudagraph_capture_size = a.max_cudagraph_capture_size;
  const auto flag = [](int32_t v, const char* name) {
    if (v != 0 && v != 1) attn::invalid("args->", name, "=", v, " is not 0 or 1");
    return v == 1;
  };
  in.use_v2_model_runner = flag(a.use_v2_model_runner, "use_v2_model_runner");
  in.piecewise_capture_available =
      flag(a.piecewise_capture_available, "piecewise_capture_available");
  in.splitting_ops_contain_attention =
      flag(a.splitting_ops_contain_attention, "splitting_ops_contain_attention");
  in.vllm_compile = flag(a.vllm_compile, "vllm_compile");
  in.use_inductor_graph_partition =
      flag(a.use_inductor_graph_partition, "use_inductor_graph_partition");
  in.has_mamba_layers = flag(a.has_mamba_layers, "has_mamba_layers");
  in.is_profiling = flag(a.is_profiling, "is_profiling");
  in.adaptive_verification = flag(a.adaptive_verification, "adaptive_verification");
  in.num_blocks = a.num_blocks;
  in.max_num_reqs = a.max_num_reqs;
  return in;
}

}  // namespace

extern "C" {

ATTN_API attn_error_t* attn_builder_varlen_cudagraph_max_query_len(
    const attn_builder_t* builder, int32_t* out_value, int32_t* out_has_value) noexcept {
  ATTN_API_TRY
  attn::capi::require(builder, "builder");
  attn::capi::require(out_value, "out_value");
  attn::capi::require(out_has_value, "out_has_value");
  const std::optional<int32_t> v = builder->impl->varlen_cudagraph_max_query_len();
  *out_value = v.value_or(-1);
  *out_has_value = v ? 1 : 0;
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_resolve_cudagraph_mode_and_sizes(
    const attn_cudagraph_resolve_args_t* args, int32_t* out_mode, int32_t* out_max_capture_size,
    int32_t* out_sizes, size_t* inout_num_sizes) noexcept {
  ATTN_API_TRY
  attn::capi::require(args, "args");
  attn::capi::require(out_mode, "out_mode");
  attn::capi::require(out_max_capture_size, "out_max_capture_size");
  attn::capi::require(inout_num_sizes, "inout_num_sizes");
  const attn::CudagraphResolution r = attn::resolve_cudagraph_mode_and_sizes(to_inputs(args));
  const size_t n = r.cudagraph_capture_sizes.size();
  if (out_sizes != nullptr) {
    if (*inout_num_sizes < n)
      attn::invalid("*inout_num_sizes=", *inout_num_sizes, " is smaller than the ", n,
                    " resolved capture sizes (pass out_sizes=NULL to query the count)");
    if (n > 0) std::memcpy(out_sizes, r.cudagraph_capture_sizes.data(), n * sizeof(int32_t));
  }
  *inout_num_sizes = n;
  *out_mode = r.cudagraph_mode;
  *out_max_capture_size = r.max_cudagraph_capture_size;
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
