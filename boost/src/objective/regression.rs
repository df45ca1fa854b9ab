//! Element-wise objectives: squared error, squared log error, the logistic family, hinge,
//! pseudo-Huber and Poisson (gamma and Tweedie are in `log_link.rs`, absolute error in
//! `scaled_residual.rs`). Each row's gradient depends on its own margin, label and weight only
//! (formulas in the parent module's table); the per-row functions are `boost_kernels::objective`'s,
//! plain `f32` code with `libm` that the GPU backend's gradient kernel runs too.

use primitives::ops::GradientPair;
use rayon::prelude::*;

use super::{
    format_f32, newton_intercept, sigmoid, validate_rows, weight_of, weighted_label_mean, DeviceObjective, Objective,
    OutputTransform,
};
use crate::data::MetaInfo;
use crate::{Error, Result};
use boost_kernels::metric::Transform;
use boost_kernels::objective::ElementwiseObjective;
pub use boost_kernels::objective::{
    hinge_gradient, logistic_gradient, poisson_gradient, pseudo_huber_gradient,
    squared_error_gradient, squared_log_error_gradient,
};

/// XGBoost compares `|scale_pos_weight - 1|` with `kRtEps` to choose the Newton-step intercept.
const RT_EPS: f32 = 1e-6;

/// Rows per parallel task of the gradient loops.
const ROWS_PER_TASK: usize = 1 << 14;

/// Applies a per-row gradient function to every row (in parallel: rows are independent, so the
/// result does not depend on the schedule). Rows beyond the margins get zero gradients.
pub(super) fn elementwise(
    margins: &[f32],
    info: &MetaInfo,
    out: &mut [GradientPair<f32>],
    f: impl Fn(f32, f32, f32) -> GradientPair<f32> + Sync,
) {
    let n = margins.len().min(out.len());
    let (head, tail) = out.split_at_mut(n);
    head.par_chunks_mut(ROWS_PER_TASK).enumerate().for_each(|(c, chunk)| {
        for (j, o) in chunk.iter_mut().enumerate() {
            let i = c * ROWS_PER_TASK + j;
            let label = info.labels.get(i).copied().unwrap_or(0.0);
            *o = f(margins[i], label, weight_of(info, i));
        }
    });
    tail.fill(GradientPair::new(0.0, 0.0));
}

/// `reg:squarederror`.
#[derive(Clone, Debug)]
pub struct SquaredError {
    scale_pos_weight: f32,
}

impl SquaredError {
    /// Squared error, positive rows' gradients scaled by `scale_pos_weight`.
    pub fn new(scale_pos_weight: f32) -> Self {
        Self { scale_pos_weight }
    }
}

impl Objective for SquaredError {
    fn name(&self) -> &'static str {
        "reg:squarederror"
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        let spw = self.scale_pos_weight;
        elementwise(margins, info, out, |m, y, w| squared_error_gradient(m, y, w, spw));
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::Elementwise(ElementwiseObjective {
            kind: ElementwiseObjective::SQUARED_ERROR,
            parameter: self.scale_pos_weight,
        }))
    }
    fn device_eval_transform(&self) -> Option<Transform> {
        Some(Transform::IDENTITY)
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Identity
    }
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        if (self.scale_pos_weight - 1.0).abs() > RT_EPS {
            newton_intercept(self, info)
        } else {
            weighted_label_mean(info)
        }
    }
    fn default_metric(&self) -> &'static str {
        "rmse"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name(), "reg_loss_param": {"scale_pos_weight": format_f32(self.scale_pos_weight)}})
    }
}

/// `reg:squaredlogerror`: `½(log1p(p) - log1p(y))²` on the margin itself (no link); labels above -1.
#[derive(Clone, Debug)]
pub struct SquaredLogError;

impl Objective for SquaredLogError {
    fn name(&self) -> &'static str {
        "reg:squaredlogerror"
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)?;
        if let Some(i) = info.labels.iter().position(|&y| y <= -1.0) {
            return Err(Error::InvalidData(format!(
                "row {i}: label {} is not above -1, which reg:squaredlogerror requires (log(label + 1))",
                info.labels[i]
            )));
        }
        Ok(())
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        elementwise(margins, info, out, squared_log_error_gradient);
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::Elementwise(ElementwiseObjective {
            kind: ElementwiseObjective::SQUARED_LOG_ERROR,
            parameter: 0.0,
        }))
    }
    fn device_eval_transform(&self) -> Option<Transform> {
        Some(Transform::IDENTITY)
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Identity
    }
    /// A Newton step from 0 (XGBoost's `FitIntercept`).
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        newton_intercept(self, info)
    }
    fn default_metric(&self) -> &'static str {
        "rmsle"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name()})
    }
}

/// `binary:hinge`: the hinge loss of `y = 2 label - 1` (labels 0 and 1); predictions are 0 or 1.
#[derive(Clone, Debug)]
pub struct Hinge;

impl Objective for Hinge {
    fn name(&self) -> &'static str {
        "binary:hinge"
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        elementwise(margins, info, out, hinge_gradient);
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::Elementwise(ElementwiseObjective { kind: ElementwiseObjective::HINGE, parameter: 0.0 }))
    }
    fn device_eval_transform(&self) -> Option<Transform> {
        Some(Transform::STEP)
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Step
    }
    /// XGBoost's `FitIntercept`: a Newton step from 0, then the prediction transform, so 1 when
    /// the weighted labels lean positive, else 0 (the margin itself: no `prob_to_margin`).
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        boost_kernels::metric::step(newton_intercept(self, info))
    }
    fn default_metric(&self) -> &'static str {
        "error"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name()})
    }
}

/// Which of XGBoost's three logistic objectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogisticKind {
    /// `reg:logistic`: probabilities out, `rmse` by default.
    Regression,
    /// `binary:logistic`: probabilities out, `logloss` by default.
    Binary,
    /// `binary:logitraw`: margins out.
    Raw,
}

/// `reg:logistic`, `binary:logistic`, `binary:logitraw`.
#[derive(Clone, Debug)]
pub struct Logistic {
    kind: LogisticKind,
    scale_pos_weight: f32,
}

impl Logistic {
    /// The logistic objective of `kind`, positive rows' gradients scaled by `scale_pos_weight`.
    pub fn new(kind: LogisticKind, scale_pos_weight: f32) -> Self {
        Self { kind, scale_pos_weight }
    }
}

impl Objective for Logistic {
    fn name(&self) -> &'static str {
        match self.kind {
            LogisticKind::Regression => "reg:logistic",
            LogisticKind::Binary => "binary:logistic",
            LogisticKind::Raw => "binary:logitraw",
        }
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)?;
        if let Some(i) = info.labels.iter().position(|&y| !(0.0..=1.0).contains(&y)) {
            return Err(Error::InvalidData(format!(
                "row {i}: label {} is outside [0, 1], which {} requires",
                info.labels[i],
                self.name()
            )));
        }
        Ok(())
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        let spw = self.scale_pos_weight;
        elementwise(margins, info, out, |m, y, w| logistic_gradient(m, y, w, spw));
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::Elementwise(ElementwiseObjective {
            kind: ElementwiseObjective::LOGISTIC,
            parameter: self.scale_pos_weight,
        }))
    }
    fn device_eval_transform(&self) -> Option<Transform> {
        Some(if self.kind == LogisticKind::Raw { Transform::IDENTITY } else { Transform::SIGMOID })
    }
    fn output_transform(&self) -> OutputTransform {
        if self.kind == LogisticKind::Raw {
            OutputTransform::Identity
        } else {
            OutputTransform::Sigmoid
        }
    }
    /// XGBoost's `-log(1/p - 1)` in `f32`, after clamping `p` into `[1e-6, 1 - 1e-6]` (so 0 and 1
    /// give finite margins); identity for `binary:logitraw`.
    fn prob_to_margin(&self, base_score: f32) -> f32 {
        if self.kind == LogisticKind::Raw {
            return base_score;
        }
        let p = base_score.clamp(RT_EPS, 1.0 - RT_EPS);
        -libm::logf(1.0 / p - 1.0)
    }
    /// Without `scale_pos_weight` the weighted label mean (a probability; for `binary:logitraw`
    /// XGBoost uses it as the margin, unchanged). With it, a Newton step from 0 through `σ` (no `σ`
    /// for `binary:logitraw`): for 3 positives of weight 3 and 10 negatives, `σ(-2/19)`, not `9/19`.
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        if (self.scale_pos_weight - 1.0).abs() > RT_EPS {
            let step = newton_intercept(self, info);
            match self.kind {
                LogisticKind::Raw => step,
                _ => sigmoid(step),
            }
        } else {
            weighted_label_mean(info)
        }
    }
    fn check_base_score(&self, base_score: f32) -> Result<()> {
        if self.kind != LogisticKind::Raw && !(0.0..=1.0).contains(&base_score) {
            return Err(Error::param("base_score", format!("must be in [0, 1] for {}, got {base_score}", self.name())));
        }
        if !base_score.is_finite() {
            return Err(Error::param("base_score", format!("must be finite, got {base_score}")));
        }
        Ok(())
    }
    fn default_metric(&self) -> &'static str {
        match self.kind {
            LogisticKind::Regression => "rmse",
            _ => "logloss",
        }
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name(), "reg_loss_param": {"scale_pos_weight": format_f32(self.scale_pos_weight)}})
    }
}

/// `reg:pseudohubererror`.
#[derive(Clone, Debug)]
pub struct PseudoHuber {
    slope: f32,
}

impl PseudoHuber {
    /// Pseudo-Huber error with this slope.
    pub fn new(huber_slope: f32) -> Self {
        Self { slope: huber_slope }
    }
}

impl Objective for PseudoHuber {
    fn name(&self) -> &'static str {
        "reg:pseudohubererror"
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        let slope = self.slope;
        elementwise(margins, info, out, |m, y, w| pseudo_huber_gradient(m, y, w, slope));
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::Elementwise(ElementwiseObjective {
            kind: ElementwiseObjective::PSEUDO_HUBER,
            parameter: self.slope,
        }))
    }
    fn device_eval_transform(&self) -> Option<Transform> {
        Some(Transform::IDENTITY)
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Identity
    }
    /// A Newton step from 0 (XGBoost's `FitIntercept`), not the median.
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        newton_intercept(self, info)
    }
    fn default_metric(&self) -> &'static str {
        "mphe"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name(), "pseudo_huber_param": {"huber_slope": format_f32(self.slope)}})
    }
}

/// `count:poisson`.
#[derive(Clone, Debug)]
pub struct Poisson {
    max_delta_step: f32,
}

impl Poisson {
    /// With XGBoost's `max_delta_step` (0.7 by default for Poisson).
    pub fn new(max_delta_step: f32) -> Self {
        Self { max_delta_step }
    }
}

impl Objective for Poisson {
    fn name(&self) -> &'static str {
        "count:poisson"
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)?;
        if let Some(i) = info.labels.iter().position(|&y| y < 0.0) {
            return Err(Error::InvalidData(format!(
                "row {i}: label {} is negative, which count:poisson does not take",
                info.labels[i]
            )));
        }
        Ok(())
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        let step = self.max_delta_step;
        elementwise(margins, info, out, |m, y, w| poisson_gradient(m, y, w, step));
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::Elementwise(ElementwiseObjective {
            kind: ElementwiseObjective::POISSON,
            parameter: self.max_delta_step,
        }))
    }
    fn device_eval_transform(&self) -> Option<Transform> {
        Some(Transform::EXP)
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Exp
    }
    /// `log(base_score)`: a base score of 0 (all labels 0) gives `-inf`, as in XGBoost.
    fn prob_to_margin(&self, base_score: f32) -> f32 {
        libm::logf(base_score)
    }
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        weighted_label_mean(info)
    }
    fn check_base_score(&self, base_score: f32) -> Result<()> {
        if !(base_score.is_finite() && base_score >= 0.0) {
            return Err(Error::param("base_score", format!("must be >= 0 for count:poisson, got {base_score}")));
        }
        Ok(())
    }
    fn default_metric(&self) -> &'static str {
        "poisson-nloglik"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name(), "poisson_regression_param": {"max_delta_step": format_f32(self.max_delta_step)}})
    }
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::objective::from_name;
    use rand::{Rng, SeedableRng};

    fn info(labels: &[f32], weights: &[f32]) -> MetaInfo {
        MetaInfo { labels: labels.to_vec(), weights: weights.to_vec(), ..Default::default() }
    }

    fn obj(name: &str, params: &[(&str, &str)]) -> Box<dyn Objective> {
        let p: Vec<(String, String)> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        from_name(name, &p).unwrap()
    }

    fn grads(o: &dyn Objective, margins: &[f32], info: &MetaInfo) -> Vec<GradientPair<f32>> {
        let mut out = vec![GradientPair::new(0.0, 0.0); margins.len()];
        o.gradients(margins, info, 0, &mut out);
        out
    }

    /// Checks gradient and hessian against central finite differences of `loss` (f64) at random
    /// margins; weights are random too.
    fn check_derivatives(o: &dyn Objective, labels: &[f32], loss: impl Fn(f64, f64) -> f64, tol: f64) {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let weights: Vec<f32> = labels.iter().map(|_| rng.gen_range(0.2f32..2.0)).collect();
        let margins: Vec<f32> = labels.iter().map(|_| rng.gen_range(-3.0f32..3.0)).collect();
        let inf = info(labels, &weights);
        let g = grads(o, &margins, &inf);
        let eps = 1e-4;
        for i in 0..labels.len() {
            let (m, y, w) = (margins[i] as f64, labels[i] as f64, weights[i] as f64);
            let d1 = (loss(m + eps, y) - loss(m - eps, y)) / (2.0 * eps) * w;
            let d2 = (loss(m + eps, y) - 2.0 * loss(m, y) + loss(m - eps, y)) / (eps * eps) * w;
            let close = |a: f64, b: f64| (a - b).abs() <= tol * (1.0 + b.abs());
            assert!(close(g[i].grad as f64, d1), "{} row {i}: grad {} vs {d1}", o.name(), g[i].grad);
            assert!(close(g[i].hess as f64, d2), "{} row {i}: hess {} vs {d2}", o.name(), g[i].hess);
        }
    }

    #[test]
    fn derivatives_match_finite_differences() {
        let labels = [0.5f32, -1.0, 3.0, 2.0, 0.1, 7.0, -3.0, 0.0, 1.25];
        check_derivatives(&*obj("reg:squarederror", &[]), &labels, |m, y| 0.5 * (m - y) * (m - y), 1e-3);
        for slope in [1.0f64, 1.5, 0.3] {
            let o = obj("reg:pseudohubererror", &[("huber_slope", &slope.to_string())]);
            let loss = move |m: f64, y: f64| slope * slope * ((1.0 + ((m - y) / slope).powi(2)).sqrt() - 1.0);
            check_derivatives(&*o, &labels, loss, 2e-3);
        }
        let binary = [0.0f32, 1.0, 1.0, 0.0, 0.3, 1.0, 0.0, 0.75];
        let logloss = |m: f64, y: f64| {
            let p = 1.0 / (1.0 + (-m).exp());
            -(y * p.ln() + (1.0 - y) * (1.0 - p).ln())
        };
        for name in ["reg:logistic", "binary:logistic", "binary:logitraw"] {
            check_derivatives(&*obj(name, &[]), &binary, logloss, 2e-3);
        }
        // Poisson: the gradient is exact; the hessian is e^(m + max_delta_step), so check it with
        // max_delta_step = 0 against the true second derivative.
        let counts = [0.0f32, 1.0, 3.0, 2.0, 0.0, 5.0];
        let nll = |m: f64, y: f64| m.exp() - y * m;
        check_derivatives(&*obj("count:poisson", &[("max_delta_step", "0")]), &counts, nll, 2e-3);
        let g0 = grads(&*obj("count:poisson", &[]), &[0.5], &info(&[2.0], &[]))[0];
        assert!((g0.hess as f64 - (1.2f64).exp()).abs() < 1e-5);
    }

    #[test]
    fn log_link_and_log_error_derivatives_match_finite_differences() {
        // Gamma deviance `y e^-m + m` and Tweedie `-y e^((1-ρ)m)/(1-ρ) + e^((2-ρ)m)/(2-ρ)`.
        let positive = [0.5f32, 1.0, 3.0, 2.0, 0.1, 7.0, 0.3];
        check_derivatives(&*obj("reg:gamma", &[]), &positive, |m, y| y * (-m).exp() + m, 2e-3);
        for rho in [1.2f64, 1.5, 1.8] {
            let o = obj("reg:tweedie", &[("tweedie_variance_power", &rho.to_string())]);
            let loss = move |m: f64, y: f64| -y * ((1.0 - rho) * m).exp() / (1.0 - rho) + ((2.0 - rho) * m).exp() / (2.0 - rho);
            check_derivatives(&*o, &[0.0, 1.0, 3.0, 2.0, 0.5, 7.0], loss, 2e-3);
        }
        // Squared log error at margins above -1 (the hessian is XGBoost's, exact where >= 1e-6).
        let o = obj("reg:squaredlogerror", &[]);
        let margins = [0.5f32, 2.0, -0.5, 4.0];
        let labels = [1.0f32, 0.5, 0.0, 2.0];
        let g = grads(&*o, &margins, &info(&labels, &[]));
        for i in 0..4 {
            let (m, y) = (margins[i] as f64, labels[i] as f64);
            let d = m.ln_1p() - y.ln_1p();
            let (g1, h1) = (d / (m + 1.0), (1.0 - d) / ((m + 1.0) * (m + 1.0)));
            assert!((g[i].grad as f64 - g1).abs() < 1e-6 && (g[i].hess as f64 - h1).abs() < 1e-6, "row {i}");
        }
    }

    #[test]
    fn new_objectives_gradients_match_xgboost_3_4() {
        // From xgboost 3.4.1: margins as base_margin, one exact tree with a row a leaf (lambda 0,
        // eta 1, min_child_weight 0), G = -leaf * cover, H = cover.
        let margins = [0.3f32, -1.2, 2.5, -0.7, 1.1];
        let weights = [1.0f32, 0.5, 1.0, 3.0, 1.0];
        let check = |name: &str, p: &[(&str, &str)], labels: [f32; 5], want: [(f32, f32); 5]| {
            let g = grads(&*obj(name, p), &margins, &info(&labels, &weights));
            for (i, &(wg, wh)) in want.iter().enumerate() {
                let close = |a: f32, b: f32| (a - b).abs() <= 2e-6 * (1.0 + b.abs());
                assert!(close(g[i].grad, wg) && close(g[i].hess, wh), "{name} row {i}: {:?} vs {wg}, {wh}", g[i]);
            }
        };
        let want = [(0.62959087, 0.3704091), (-2.8201172, 3.3201172), (0.75374502, 0.246255), (-3.0412581, 6.0412579), (-1.3300974, 2.3300974)];
        check("reg:gamma", &[], [0.5, 2.0, 3.0, 1.0, 7.0], want);
        let want = [(1.2336781, 0.86357475), (-1.2174740, 0.58109742), (4.3375034, 4.4533525), (-1.8631550, 2.3968256), (-2.8727000, 3.0215764)];
        check("reg:tweedie", &[("tweedie_variance_power", "1.3")], [0.0, 2.0, 3.0, 1.0, 7.0], want);
        // Row 1's margin -1.2 is floored at -1 + 1e-6: huge but finite.
        let want = [(0.20181867, 0.43647087), (-7352827.5, 7.7434496e12), (-0.038151808, 0.092533171), (-16.094379, 86.981262), (-0.63690674, 0.53004634)];
        check("reg:squaredlogerror", &[], [0.0, 2.0, 3.0, 0.5, 7.0], want);
        // Hinge: -y w inside the margin (`m y < 1`, `y = 2 label - 1`), else 0 and the least normal.
        let g = grads(&*obj("binary:hinge", &[]), &margins, &info(&[0.0, 1.0, 1.0, 0.0, 1.0], &weights));
        let want = [(1.0, 1.0), (-0.5, 0.5), (0.0, f32::MIN_POSITIVE), (3.0, 3.0), (0.0, f32::MIN_POSITIVE)];
        assert_eq!(g.iter().map(|p| (p.grad, p.hess)).collect::<Vec<_>>(), want);
    }

    #[test]
    fn scale_pos_weight_scales_rows_labelled_one() {
        let o = obj("binary:logistic", &[("scale_pos_weight", "3")]);
        let g = grads(&*o, &[0.0, 0.0, 0.0], &info(&[1.0, 0.0, 0.5], &[2.0, 2.0, 2.0]));
        assert_eq!(g[0].grad, -0.5 * 6.0);
        assert_eq!(g[0].hess, 0.25 * 6.0);
        assert_eq!(g[1].grad, 0.5 * 2.0);
        assert_eq!(g[2].grad, 0.0);
        assert_eq!(g[2].hess, 0.5);
        // XGBoost applies it to squared error too.
        let o = obj("reg:squarederror", &[("scale_pos_weight", "2")]);
        let g = grads(&*o, &[3.0, 3.0], &info(&[1.0, 2.0], &[]));
        assert_eq!((g[0].grad, g[0].hess), (4.0, 2.0));
        assert_eq!((g[1].grad, g[1].hess), (1.0, 1.0));
    }

    #[test]
    fn logistic_hessian_is_floored() {
        let g = grads(&*obj("binary:logistic", &[]), &[40.0, -40.0, -100.0], &info(&[1.0, 0.0, 1.0], &[]));
        assert_eq!(g[0].hess, 1e-16);
        assert_eq!(g[1].hess, 1e-16);
        assert!((g[2].grad + 1.0).abs() < 1e-6);
    }

    #[test]
    fn gradients_match_xgboost() {
        // Obtained from xgboost 3.2.0: margins set as base_margin, a one-row-per-leaf exact tree with
        // lambda = 0, eta = 1, min_child_weight = 0; each leaf gives G = -leaf * cover, H = cover.
        let margins = [0.3f32, -1.2, 2.5, -0.7, 1.1];
        let labels = [0.0f32, 1.0, 1.0, 1.0, 0.0];
        let weights = [1.0f32, 0.5, 1.0, 3.0, 1.0];
        let g = grads(&*obj("binary:logistic", &[("scale_pos_weight", "2")]), &margins, &info(&labels, &weights));
        let want = [
            (0.5744425, 0.24445832),
            (-0.7685248, 0.17789444),
            (-0.15171635, 0.14020743),
            (-4.0091265, 1.3302772),
            (0.75026008, 0.18736987),
        ];
        for (i, &(wg, wh)) in want.iter().enumerate() {
            assert!((g[i].grad - wg).abs() < 2e-6 && (g[i].hess - wh).abs() < 2e-6, "row {i}: {:?}", g[i]);
        }
        let yr = [0.5f32, -1.0, 3.0, 7.0, 0.1];
        let mr = [0.0f32, 1.0, -2.0, 1.0, 0.3];
        let w = [1.0f32, 0.5, 2.0, 0.25, 1.0];
        let g = grads(&*obj("reg:pseudohubererror", &[("huber_slope", "1.5")]), &mr, &info(&yr, &w));
        let want = [
            (-0.47434165, 0.85381502),
            (0.6, 0.108),
            (-2.8734789, 0.047451947),
            (-0.36380345, 0.0035667005),
            (0.19824560, 0.97391391),
        ];
        for (i, &(wg, wh)) in want.iter().enumerate() {
            assert!((g[i].grad - wg).abs() < 2e-6 && (g[i].hess - wh).abs() < 2e-6, "row {i}: {:?}", g[i]);
        }
        let yp = [0.0f32, 1.0, 3.0, 5.0];
        let mp = [0.1f32, -0.5, 1.2, 1.5];
        let g = grads(&*obj("count:poisson", &[]), &mp, &info(&yp, &[1.0, 0.5, 2.0, 0.25]));
        let want =
            [(1.10517097, 2.22554088), (-0.19673466, 0.61070138), (0.64023398, 13.3717899), (-0.12957775, 2.25625348)];
        for (i, &(wg, wh)) in want.iter().enumerate() {
            assert!((g[i].grad - wg).abs() < 2e-6 * (1.0 + wg.abs()), "row {i}: {:?}", g[i]);
            assert!((g[i].hess - wh).abs() < 2e-6 * (1.0 + wh), "row {i}: {:?}", g[i]);
        }
    }

    #[test]
    fn transforms() {
        assert_eq!(obj("binary:logistic", &[]).transform(&[0.0, 2.0]), vec![0.5, sigmoid(2.0)]);
        assert_eq!(obj("reg:logistic", &[]).transform(&[-1.0]), vec![sigmoid(-1.0)]);
        assert_eq!(obj("binary:logitraw", &[]).transform(&[-1.0]), vec![-1.0]);
        assert_eq!(obj("binary:logitraw", &[]).eval_transform(&[-1.0]), vec![-1.0]);
        assert_eq!(obj("count:poisson", &[]).transform(&[0.0, 1.0]), vec![1.0, boost_kernels::exp::expf(1.0)]);
        assert_eq!(obj("reg:squarederror", &[]).transform(&[1.5]), vec![1.5]);
        assert_eq!(obj("reg:absoluteerror", &[]).transform(&[1.5]), vec![1.5]);
        assert_eq!(obj("reg:pseudohubererror", &[]).transform(&[1.5]), vec![1.5]);
        assert_eq!(obj("binary:hinge", &[]).transform(&[-0.5, 0.0, 0.25]), vec![0.0, 0.0, 1.0]);
        assert_eq!(obj("reg:gamma", &[]).transform(&[1.0]), vec![boost_kernels::exp::expf(1.0)]);
        assert_eq!(obj("reg:tweedie", &[]).eval_transform(&[1.0]), vec![boost_kernels::exp::expf(1.0)]);
        assert_eq!(obj("reg:squaredlogerror", &[]).transform(&[1.5]), vec![1.5]);
    }

    #[test]
    fn device_eval_transforms_are_the_host_transforms() {
        let margins = [-100.0f32, -3.5, -0.25, 0.0, 0.7, 4.0, 90.0];
        for name in [
            "reg:squarederror",
            "reg:logistic",
            "binary:logistic",
            "binary:logitraw",
            "reg:pseudohubererror",
            "reg:absoluteerror",
            "count:poisson",
            "reg:gamma",
            "reg:tweedie",
            "reg:squaredlogerror",
            "binary:hinge",
        ] {
            let o = obj(name, &[]);
            let transform = o.device_eval_transform().unwrap_or_else(|| panic!("{name}: no device transform"));
            let device: Vec<u32> = margins.iter().map(|&m| transform.apply(m).to_bits()).collect();
            let host: Vec<u32> = o.eval_transform(&margins).iter().map(|p| p.to_bits()).collect();
            assert_eq!(device, host, "{name}");
        }
    }

    #[test]
    fn prob_to_margin_matches_xgboost() {
        // xgboost 3.2.0: base_score 1.0 -> margin 13.74516, 0.0 -> -13.81551 (clamped to 1e-6).
        let o = obj("binary:logistic", &[]);
        assert!((o.prob_to_margin(1.0) - 13.74516).abs() < 1e-4);
        assert!((o.prob_to_margin(0.0) + 13.81551).abs() < 1e-4);
        assert!((o.prob_to_margin(0.25) - libm::logf(1.0 / 3.0)).abs() < 1e-6);
        assert_eq!(obj("binary:logitraw", &[]).prob_to_margin(0.25), 0.25);
        assert_eq!(obj("count:poisson", &[]).prob_to_margin(1.0), 0.0);
        assert_eq!(obj("count:poisson", &[]).prob_to_margin(0.0), f32::NEG_INFINITY);
        assert!(obj("binary:logistic", &[]).check_base_score(1.5).is_err());
        assert!(obj("binary:logistic", &[]).check_base_score(1.0).is_ok());
        assert!(obj("binary:logitraw", &[]).check_base_score(1.5).is_ok());
        assert!(obj("count:poisson", &[]).check_base_score(-1.0).is_err());
        assert!(obj("reg:gamma", &[]).check_base_score(0.0).is_err());
        assert!(obj("reg:tweedie", &[]).check_base_score(0.0).is_ok());
        assert_eq!(obj("reg:gamma", &[]).prob_to_margin(1.0), 0.0);
        assert_eq!(obj("binary:hinge", &[]).prob_to_margin(1.0), 1.0);
        assert!(obj("reg:squarederror", &[]).check_base_score(f32::NAN).is_err());
    }

    /// A fixed 13-row dataset; the expected values are `learner_model_param.base_score` of models
    /// trained on it by xgboost 3.2.0 (one round, defaults otherwise).
    fn base_score_data() -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
        let yb = [0., 0., 0., 1., 0., 0., 0., 0., 1., 0., 0., 0., 1.];
        let yr = [
            0.0665008, 1.4710113, 2.5190392, -2.2975748, 1.5087762, 3.4492939, 0.4049463, -0.6216292, 2.5044878,
            1.5068930, 2.7917662, 0.3095686, -1.9636365,
        ];
        let w = [
            1.6047283, 0.3826478, 0.1631052, 1.7104540, 1.7225670, 1.7530742, 0.9438195, 0.5480968, 0.0141837,
            1.2914418, 1.4398187, 1.6711384, 0.5637556,
        ];
        let yp = [3., 2., 2., 2., 1., 1., 0., 3., 4., 1., 2., 0., 3.];
        (yb.to_vec(), yr.to_vec(), w.to_vec(), yp.to_vec())
    }

    #[test]
    fn base_scores_match_xgboost() {
        let (yb, yr, w, yp) = base_score_data();
        let close = |a: f32, b: f32| (a - b).abs() <= 2e-6 * (1.0 + b.abs());
        let bs = |name: &str, p: &[(&str, &str)], y: &[f32], w: &[f32]| obj(name, p).initial_base_score(&info(y, w));
        // Logistic: the (weighted) mean label; with scale_pos_weight a Newton step through σ.
        for name in ["binary:logistic", "reg:logistic", "binary:logitraw"] {
            assert!(close(bs(name, &[], &yb, &[]), 3.0 / 13.0));
            assert!(close(bs(name, &[], &yb, &w), 0.16571955));
        }
        assert!(close(bs("binary:logistic", &[("scale_pos_weight", "3")], &yb, &[]), 0.47370848));
        assert!(close(bs("binary:logitraw", &[("scale_pos_weight", "3")], &yb, &[]), -0.10526316));
        assert!(close(bs("reg:squarederror", &[], &yr, &[]), 0.89611095));
        assert!(close(bs("reg:squarederror", &[], &yr, &w), 0.81465495));
        // Absolute error: median (13 rows: the 7th), weighted median.
        // Poisson: weighted mean, not a Newton step.
        assert!(close(bs("count:poisson", &[], &yp, &[]), 24.0 / 13.0));
        assert!(close(bs("count:poisson", &[], &yp, &w), 1.4748251));
        // Pseudo-Huber: a Newton step from 0.
        assert!(close(bs("reg:pseudohubererror", &[], &yr, &[]), 1.1333389));
        assert!(close(bs("reg:pseudohubererror", &[], &yr, &w), 0.9294529));
        assert!(close(bs("reg:pseudohubererror", &[("huber_slope", "3")], &yr, &[]), 1.0190116));
        // XGBoost 3.4.1: gamma and Tweedie the weighted label mean, squared log error a Newton
        // step, hinge its sign.
        let ypos: Vec<f32> = yp.iter().map(|y| y + 0.5).collect();
        assert!(close(bs("reg:gamma", &[], &ypos, &[]), 2.3461537));
        assert!(close(bs("reg:gamma", &[], &ypos, &w), 1.9748251));
        assert!(close(bs("reg:gamma", &[("scale_pos_weight", "3")], &ypos, &[]), 1.7749468));
        assert!(close(bs("reg:tweedie", &[], &yp, &[]), 1.8461539));
        assert!(close(bs("reg:tweedie", &[], &yp, &w), 1.4748251));
        let yabs: Vec<f32> = yr.iter().map(|y| y.abs()).collect();
        assert!(close(bs("reg:squaredlogerror", &[], &yabs, &[]), 0.46978578));
        assert!(close(bs("reg:squaredlogerror", &[], &yabs, &w), 0.45801958));
        assert_eq!(bs("binary:hinge", &[], &yb, &[]), 0.0);
        assert_eq!(bs("binary:hinge", &[], &yb, &w), 0.0);
        let flipped: Vec<f32> = yb.iter().map(|y| 1.0 - y).collect();
        assert_eq!(bs("binary:hinge", &[], &flipped, &[]), 1.0);
        // Degenerate: no rows.
        assert_eq!(bs("reg:squarederror", &[], &[], &[]), 0.0);
        assert_eq!(obj("reg:squarederror", &[]).initial_base_scores(&info(&yr, &[])).len(), 1);
    }

    #[test]
    fn validation_names_the_row() {
        let msg = |name: &str, y: &[f32], w: &[f32]| match obj(name, &[]).validate(&info(y, w)) {
            Err(Error::InvalidData(m)) => m,
            other => panic!("{name} {y:?}: {other:?}"),
        };
        assert!(msg("reg:squarederror", &[0.0, f32::NAN], &[]).starts_with("row 1:"));
        assert!(msg("reg:squarederror", &[0.0, f32::INFINITY], &[]).starts_with("row 1:"));
        assert!(msg("binary:logistic", &[0.0, 1.0, 2.0], &[]).starts_with("row 2:"));
        assert!(msg("reg:logistic", &[-0.5], &[]).starts_with("row 0:"));
        assert!(msg("count:poisson", &[1.0, -2.0], &[]).starts_with("row 1:"));
        assert!(msg("reg:gamma", &[1.0, 0.0], &[]).starts_with("row 1:"));
        assert!(msg("reg:tweedie", &[0.0, -0.5], &[]).starts_with("row 1:"));
        assert!(msg("reg:squaredlogerror", &[0.0, -1.0], &[]).starts_with("row 1:"));
        assert!(obj("reg:tweedie", &[]).validate(&info(&[0.0, 3.0], &[])).is_ok());
        assert!(obj("reg:squaredlogerror", &[]).validate(&info(&[-0.5, 3.0], &[])).is_ok());
        assert!(msg("reg:absoluteerror", &[1.0, 2.0], &[1.0, -1.0]).starts_with("row 1:"));
        assert!(msg("reg:pseudohubererror", &[1.0, 2.0], &[1.0, f32::NAN]).starts_with("row 1:"));
        assert!(msg("reg:squarederror", &[1.0, 2.0], &[1.0]).contains("1 weights for 2 rows"));
        let bad_margin = MetaInfo { labels: vec![1.0], base_margin: vec![0.0, 0.0], ..Default::default() };
        assert!(obj("reg:squarederror", &[]).validate(&bad_margin).is_err());
        assert!(obj("binary:logistic", &[]).validate(&info(&[0.0, 0.5, 1.0], &[0.0, 1.0, 2.0])).is_ok());
        assert!(obj("count:poisson", &[]).validate(&info(&[0.0, 7.0], &[])).is_ok());
    }

    #[test]
    fn parallel_blocks_cover_every_row() {
        let n = 3 * ROWS_PER_TASK + 5;
        let labels: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
        let margins: Vec<f32> = (0..n).map(|i| (i % 11) as f32 * 0.5).collect();
        let g = grads(&*obj("reg:squarederror", &[]), &margins, &info(&labels, &[]));
        assert!((0..n).all(|i| g[i] == GradientPair::new(margins[i] - labels[i], 1.0)));
    }

    #[test]
    fn short_inputs_do_not_panic() {
        let o = obj("reg:squarederror", &[]);
        let mut out = vec![GradientPair::new(9.0, 9.0); 3];
        o.gradients(&[1.0], &info(&[], &[]), 0, &mut out);
        assert_eq!(out[0], GradientPair::new(1.0, 1.0));
        assert_eq!(out[2], GradientPair::new(0.0, 0.0));
    }
}
