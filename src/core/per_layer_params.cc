#include "core/per_layer_params.h"

#include "core/error.h"

namespace attn {

GlobalHyperparameters infer_global_hyperparameters(const std::vector<PerLayerParams>& layers) {
  if (layers.empty()) invalid("No attention layers found in the model (num_layers=0)");
  GlobalHyperparameters g;
  g.params = layers.front();
  g.has_same_window_lefts = true;
  g.has_same_all_params = true;
  for (const PerLayerParams& p : layers) {
    if (p.window_left != g.params.window_left) g.has_same_window_lefts = false;
    if (!(p == g.params)) g.has_same_all_params = false;
  }
  return g;
}

}  // namespace attn
