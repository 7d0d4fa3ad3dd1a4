// vLLM's PerLayerParameters and infer_global_hyperparameters.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace attn {

struct PerLayerParams {
  int32_t window_left = -1;
  std::optional<double> logits_soft_cap;
  double sm_scale = 1.0;
  bool has_sinks = false;

  /// Dataclass equality over the four parameters (has_same_* are not part of it).
  bool operator==(const PerLayerParams& o) const {
    return window_left == o.window_left && logits_soft_cap == o.logits_soft_cap &&
           sm_scale == o.sm_scale && has_sinks == o.has_sinks;
  }
};

struct GlobalHyperparameters {
  PerLayerParams params;       ///< The first layer's parameters.
  bool has_same_window_lefts = false;
  bool has_same_all_params = false;
};

/// Throws Error(kInvalidArgument, "No attention layers found in the model.") when empty.
GlobalHyperparameters infer_global_hyperparameters(const std::vector<PerLayerParams>& layers);

}  // namespace attn
