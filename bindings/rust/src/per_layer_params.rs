//! [`PerLayerParams`]: one attention layer's hyperparameters (`attn_per_layer_params_t`).
use crate::sys;

/// vLLM's `PerLayerParameters`. `Default` is `ATTN_PER_LAYER_PARAMS_INIT`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerLayerParams {
    /// Left sliding-window size, or -1 for none.
    pub window_left: i32,
    /// The logits soft cap, None when unset.
    pub logits_soft_cap: Option<f64>,
    /// Softmax scale.
    pub sm_scale: f64,
    /// Whether the layer has attention sinks.
    pub has_sinks: bool,
}

impl Default for PerLayerParams {
    fn default() -> PerLayerParams {
        PerLayerParams { window_left: -1, logits_soft_cap: None, sm_scale: 1.0, has_sinks: false }
    }
}

impl PerLayerParams {
    /// The C struct.
    pub fn to_raw(&self) -> sys::attn_per_layer_params_t {
        sys::attn_per_layer_params_t {
            window_left: self.window_left,
            has_logits_soft_cap: i32::from(self.logits_soft_cap.is_some()),
            logits_soft_cap: self.logits_soft_cap.unwrap_or(0.0),
            sm_scale: self.sm_scale,
            has_sinks: i32::from(self.has_sinks),
            ..sys::attn_per_layer_params_t::INIT
        }
    }

    pub(crate) fn from_raw(p: &sys::attn_per_layer_params_t) -> PerLayerParams {
        PerLayerParams {
            window_left: p.window_left,
            logits_soft_cap: (p.has_logits_soft_cap != 0).then_some(p.logits_soft_cap),
            sm_scale: p.sm_scale,
            has_sinks: p.has_sinks != 0,
        }
    }
}

/// What `attn_infer_global_hyperparameters` infers from every layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GlobalHyperparameters {
    /// The first layer's parameters.
    pub global: PerLayerParams,
    /// Whether every layer has the first one's window_left.
    pub has_same_window_lefts: bool,
    /// Whether every layer equals the first.
    pub has_same_all_params: bool,
}

impl crate::Library {
    /// `attn_infer_global_hyperparameters` (vLLM's `infer_global_hyperparameters`).
    pub fn infer_global_hyperparameters(&self, layers: &[PerLayerParams]) -> crate::Result<GlobalHyperparameters> {
        let raw: Vec<sys::attn_per_layer_params_t> = layers.iter().map(PerLayerParams::to_raw).collect();
        let mut global = sys::attn_per_layer_params_t::INIT;
        let (mut same_window, mut same_all) = (0, 0);
        // SAFETY: raw.len() entries of struct_size bytes; valid out-pointers.
        self.check(unsafe {
            (self.api().attn_infer_global_hyperparameters)(
                raw.as_ptr(),
                raw.len(),
                &mut global,
                &mut same_window,
                &mut same_all,
            )
        })?;
        Ok(GlobalHyperparameters {
            global: PerLayerParams::from_raw(&global),
            has_same_window_lefts: same_window != 0,
            has_same_all_params: same_all != 0,
        })
    }
}
