//! Gamma and Tweedie regression: log-link models of positive (gamma) or non-negative, zero-inflated
//! (Tweedie) targets, like `count:poisson` in `regression.rs`. Predictions are `e^m`; `base_score`
//! is the weighted label mean, given as `log(base_score)` to the trees. The per-row gradients are
//! `boost_kernels::objective`'s, which the GPU backend's gradient kernel runs too.

use primitives::ops::GradientPair;

use super::regression::elementwise;
use super::{
    format_f32, newton_intercept, validate_rows, weighted_label_mean, DeviceObjective, Objective, OutputTransform,
};
use crate::data::MetaInfo;
use crate::metric::format_threshold;
use crate::{Error, Result};
use boost_kernels::metric::Transform;
use boost_kernels::objective::ElementwiseObjective;
pub use boost_kernels::objective::{gamma_gradient, tweedie_gradient};

/// XGBoost compares `|scale_pos_weight - 1|` with `kRtEps` to choose the Newton-step intercept.
const RT_EPS: f32 = 1e-6;

/// `reg:gamma`: the gamma deviance with a log link (XGBoost's `RegLossObj<GammaDeviance>`, so
/// `scale_pos_weight` applies to rows labelled 1 as in squared error).
#[derive(Clone, Debug)]
pub struct Gamma {
    scale_pos_weight: f32,
}

impl Gamma {
    /// Gamma regression, rows labelled 1 weighted by `scale_pos_weight`.
    pub fn new(scale_pos_weight: f32) -> Self {
        Self { scale_pos_weight }
    }
}

impl Objective for Gamma {
    fn name(&self) -> &'static str {
        "reg:gamma"
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)?;
        if let Some(i) = info.labels.iter().position(|&y| y <= 0.0) {
            return Err(Error::InvalidData(format!(
                "row {i}: label {} is not positive, which reg:gamma requires",
                info.labels[i]
            )));
        }
        Ok(())
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        let spw = self.scale_pos_weight;
        elementwise(margins, info, out, |m, y, w| gamma_gradient(m, y, w, spw));
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::Elementwise(ElementwiseObjective {
            kind: ElementwiseObjective::GAMMA,
            parameter: self.scale_pos_weight,
        }))
    }
    fn device_eval_transform(&self) -> Option<Transform> {
        Some(Transform::EXP)
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Exp
    }
    fn prob_to_margin(&self, base_score: f32) -> f32 {
        libm::logf(base_score)
    }
    /// The weighted label mean; with `scale_pos_weight`, a Newton step from 0 through `e^m`.
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        if (self.scale_pos_weight - 1.0).abs() > RT_EPS {
            boost_kernels::exp::expf(newton_intercept(self, info))
        } else {
            weighted_label_mean(info)
        }
    }
    fn check_base_score(&self, base_score: f32) -> Result<()> {
        if !(base_score.is_finite() && base_score > 0.0) {
            return Err(Error::param("base_score", format!("must be > 0 for reg:gamma, got {base_score}")));
        }
        Ok(())
    }
    fn default_metric(&self) -> &'static str {
        "gamma-deviance"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name(), "reg_loss_param": {"scale_pos_weight": format_f32(self.scale_pos_weight)}})
    }
}

/// `reg:tweedie`: the Tweedie negative log likelihood with variance power `ρ` in `[1, 2)`
/// (`tweedie_variance_power`, 1.5 by default).
#[derive(Clone, Debug)]
pub struct Tweedie {
    rho: f32,
}

impl Tweedie {
    /// Tweedie regression with variance power `rho`; an error naming `tweedie_variance_power`
    /// outside `[1, 2)`.
    pub fn new(rho: f32) -> Result<Self> {
        if !(1.0..2.0).contains(&rho) {
            return Err(Error::param("tweedie_variance_power", format!("must be in [1, 2), got {rho}")));
        }
        Ok(Self { rho })
    }
}

impl Objective for Tweedie {
    fn name(&self) -> &'static str {
        "reg:tweedie"
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)?;
        if let Some(i) = info.labels.iter().position(|&y| y < 0.0) {
            return Err(Error::InvalidData(format!(
                "row {i}: label {} is negative, which reg:tweedie does not take",
                info.labels[i]
            )));
        }
        Ok(())
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        let rho = self.rho;
        elementwise(margins, info, out, |m, y, w| tweedie_gradient(m, y, w, rho));
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::Elementwise(ElementwiseObjective { kind: ElementwiseObjective::TWEEDIE, parameter: self.rho }))
    }
    fn device_eval_transform(&self) -> Option<Transform> {
        Some(Transform::EXP)
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Exp
    }
    /// `log(base_score)`: all labels 0 give `-inf`, as in XGBoost.
    fn prob_to_margin(&self, base_score: f32) -> f32 {
        libm::logf(base_score)
    }
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        weighted_label_mean(info)
    }
    fn check_base_score(&self, base_score: f32) -> Result<()> {
        if !(base_score.is_finite() && base_score >= 0.0) {
            return Err(Error::param("base_score", format!("must be >= 0 for reg:tweedie, got {base_score}")));
        }
        Ok(())
    }
    fn default_metric(&self) -> &'static str {
        "tweedie-nloglik"
    }
    /// `tweedie-nloglik@ρ`, `ρ` printed as C++ streams print it (6 significant digits).
    fn default_metric_name(&self) -> String {
        format!("tweedie-nloglik@{}", format_threshold(self.rho))
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name(), "tweedie_regression_param": {"tweedie_variance_power": format_f32(self.rho)}})
    }
}
