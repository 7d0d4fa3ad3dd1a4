// vLLM's infer_global_hyperparameters.
#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "core/per_layer_params.h"

extern "C" {

ATTN_API attn_error_t* attn_infer_global_hyperparameters(const attn_per_layer_params_t* layers,
                                                         size_t num_layers,
                                                         attn_per_layer_params_t* out_global,
                                                         int32_t* out_has_same_window_lefts,
                                                         int32_t* out_has_same_all_params) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_global, "out_global");
  attn::capi::require(out_has_same_window_lefts, "out_has_same_window_lefts");
  attn::capi::require(out_has_same_all_params, "out_has_same_all_params");
  if (out_global->struct_size < attn::capi::kPerLayerParamsSizeV1)
    attn::invalid("out_global->struct_size=", out_global->struct_size, " is smaller than ",
                  attn::capi::kPerLayerParamsSizeV1);
  const auto params = attn::capi::to_layers(layers, num_layers, "layers");
  const attn::GlobalHyperparameters g = attn::infer_global_hyperparameters(params);
  attn_per_layer_params_t p = ATTN_PER_LAYER_PARAMS_INIT;
  p.window_left = g.params.window_left;
  p.has_logits_soft_cap = g.params.logits_soft_cap.has_value();
  p.logits_soft_cap = g.params.logits_soft_cap.value_or(0.0);
  p.sm_scale = g.params.sm_scale;
  p.has_sinks = g.params.has_sinks;
  attn::capi::write_struct(out_global, p, attn::capi::kPerLayerParamsSizeV1, "out_global");
  *out_has_same_window_lefts = g.has_same_window_lefts;
  *out_has_same_all_params = g.has_same_all_params;
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
