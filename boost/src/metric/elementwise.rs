//! Row-wise metrics: `rmse`, `rmsle`, `mae`, `mape`, `mphe`, `logloss`, `error[@t]`,
//! `poisson-nloglik`, `gamma-nloglik`, `gamma-deviance`, `tweedie-nloglik@ρ` (formulas in the parent
//! module). Each row's loss is XGBoost's `EvalRow`, in
//! `f32`, times the row weight (also in `f32`); the weighted losses and the weights are summed in
//! `f64`, and the result is `Σ loss / Σ w` (`√` of it for the two root metrics). The arithmetic is
//! `boost_kernels::metric`'s, which the GPU backend runs on the device over the training margins.

use boost_kernels::metric::ElementwiseMetric;

use super::{check_prediction_count, check_row_weights, fixed_order_sum, format_threshold, DeviceMetric, Metric};
use crate::data::MetaInfo;
use crate::objective::weight_of;
use crate::{Error, Result};

/// Which row-wise metric.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ElementwiseKind {
    /// Root mean squared error (`rmse`).
    Rmse,
    /// Root mean squared log error (`rmsle`).
    Rmsle,
    /// Mean absolute error (`mae`).
    Mae,
    /// Mean absolute percentage error (`mape`).
    Mape,
    /// Mean pseudo-Huber error with `huber_slope`.
    Mphe {
        /// The Huber slope.
        slope: f32,
    },
    /// Binary log loss (`logloss`).
    LogLoss,
    /// Classification error at `threshold` (`None`: 0.5, printed `error`).
    Error {
        /// The decision threshold (`error@t`; `None`: 0.5).
        threshold: Option<f32>,
    },
    /// Poisson negative log likelihood (`poisson-nloglik`).
    PoissonNegLogLik,
    /// Gamma negative log likelihood with dispersion 1 (`gamma-nloglik`).
    GammaNegLogLik,
    /// Twice the mean gamma deviance (`gamma-deviance`).
    GammaDeviance,
    /// Tweedie negative log likelihood (`tweedie-nloglik@ρ`).
    TweedieNegLogLik {
        /// The variance power `ρ`, in `[1, 2)`.
        rho: f32,
    },
}

/// A row-wise metric.
#[derive(Clone, Debug)]
pub struct Elementwise {
    kind: ElementwiseKind,
}

impl Elementwise {
    /// The metric of `kind`.
    pub fn new(kind: ElementwiseKind) -> Self {
        Self { kind }
    }

    /// The metric as the device computes it (the same row loss, one source for both).
    pub fn kernel_metric(&self) -> ElementwiseMetric {
        let (kind, parameter) = match self.kind {
            ElementwiseKind::Rmse => (ElementwiseMetric::RMSE, 0.0),
            ElementwiseKind::Rmsle => (ElementwiseMetric::RMSLE, 0.0),
            ElementwiseKind::Mae => (ElementwiseMetric::MAE, 0.0),
            ElementwiseKind::Mape => (ElementwiseMetric::MAPE, 0.0),
            ElementwiseKind::Mphe { slope } => (ElementwiseMetric::MPHE, slope),
            ElementwiseKind::LogLoss => (ElementwiseMetric::LOGLOSS, 0.0),
            ElementwiseKind::Error { threshold } => (ElementwiseMetric::ERROR, threshold.unwrap_or(0.5)),
            ElementwiseKind::PoissonNegLogLik => (ElementwiseMetric::POISSON_NLOGLIK, 0.0),
            ElementwiseKind::GammaNegLogLik => (ElementwiseMetric::GAMMA_NLOGLIK, 0.0),
            ElementwiseKind::GammaDeviance => (ElementwiseMetric::GAMMA_DEVIANCE, 0.0),
            ElementwiseKind::TweedieNegLogLik { rho } => (ElementwiseMetric::TWEEDIE_NLOGLIK, rho),
        };
        ElementwiseMetric { kind, parameter }
    }
}

impl Metric for Elementwise {
    fn name(&self) -> String {
        match self.kind {
            ElementwiseKind::Rmse => "rmse".into(),
            ElementwiseKind::Rmsle => "rmsle".into(),
            ElementwiseKind::Mae => "mae".into(),
            ElementwiseKind::Mape => "mape".into(),
            ElementwiseKind::Mphe { .. } => "mphe".into(),
            ElementwiseKind::LogLoss => "logloss".into(),
            // XGBoost prints a threshold of exactly 0.5 as plain `error`.
            ElementwiseKind::Error { threshold: Some(t) } if t != 0.5 => format!("error@{}", format_threshold(t)),
            ElementwiseKind::Error { .. } => "error".into(),
            ElementwiseKind::PoissonNegLogLik => "poisson-nloglik".into(),
            ElementwiseKind::GammaNegLogLik => "gamma-nloglik".into(),
            ElementwiseKind::GammaDeviance => "gamma-deviance".into(),
            ElementwiseKind::TweedieNegLogLik { rho } => format!("tweedie-nloglik@{}", format_threshold(rho)),
        }
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn check(&self, predictions: usize, info: &MetaInfo, outputs: usize) -> Result<()> {
        if outputs > 1 {
            return Err(Error::InvalidData(format!(
                "{} takes one prediction per row, not {outputs} (use merror or mlogloss for multi-class)",
                self.name()
            )));
        }
        check_prediction_count(predictions, info, 1)?;
        check_row_weights(info)
    }

    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, outputs: usize) -> f64 {
        if self.check(predictions.len(), info, outputs).is_err() {
            return f64::NAN;
        }
        let metric = self.kernel_metric();
        let sums =
            fixed_order_sum(predictions.len(), |i| metric.row_term(info.labels[i], predictions[i], weight_of(info, i)));
        metric.finish(sums)
    }

    fn device_metric(&self) -> Option<DeviceMetric> {
        Some(DeviceMetric::Elementwise(self.kernel_metric()))
    }
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::super::from_name;
    use super::super::from_name_with_params;
    use super::*;

    fn info(labels: &[f32], weights: &[f32]) -> MetaInfo {
        MetaInfo { labels: labels.to_vec(), weights: weights.to_vec(), ..Default::default() }
    }

    fn eval(name: &str, p: &[f32], y: &[f32], w: &[f32]) -> f64 {
        from_name(name).unwrap().evaluate(p, &info(y, w), 1)
    }

    #[test]
    fn hand_computed() {
        let y = [1.0f32, 0.0, 3.0];
        let p = [0.5f32, 0.0, 1.0];
        let w = [2.0f32, 1.0, 1.0];
        assert!((eval("rmse", &p, &y, &[]) - ((0.25 + 4.0) / 3.0f64).sqrt()).abs() < 1e-12);
        assert!((eval("rmse", &p, &y, &w) - ((0.5 + 4.0) / 4.0f64).sqrt()).abs() < 1e-12);
        assert!((eval("mae", &p, &y, &w) - (1.0 + 2.0) / 4.0).abs() < 1e-12);
        assert!((eval("mape", &[0.5, 2.0], &[1.0, 4.0], &[]) - 0.5).abs() < 1e-12);
        let rmsle = (((2f64.ln() - 1.5f64.ln()).powi(2) + (4f64.ln() - 2f64.ln()).powi(2)) / 3.0).sqrt();
        assert!((eval("rmsle", &p, &y, &[]) - rmsle).abs() < 1e-6);
        // logloss: -log 0.8 - log 0.9, and the clipped terms.
        let ll = eval("logloss", &[0.8, 0.1], &[1.0, 0.0], &[]);
        assert!((ll - (-(0.8f64).ln() - (0.9f64).ln()) / 2.0).abs() < 1e-6);
        assert!((eval("logloss", &[0.0], &[1.0], &[]) - 16.0 * 10f64.ln()).abs() < 1e-4);
        assert_eq!(eval("logloss", &[0.0], &[0.0], &[]), 0.0);
        // error: p > t counts 1 - y; p == t counts y.
        assert_eq!(eval("error", &[0.5, 0.6, 0.2, 0.9], &[1.0, 0.0, 1.0, 1.0], &[]), 0.75);
        assert_eq!(eval("error@0.7", &[0.5, 0.6, 0.2, 0.9], &[1.0, 0.0, 1.0, 1.0], &[]), 0.5);
        assert_eq!(eval("error", &[0.9, 0.1], &[0.0, 0.0], &[1.0, 3.0]), 0.25);
        // poisson: lgamma(y + 1) + p - y log p.
        let pn = eval("poisson-nloglik", &[2.0, 0.0], &[3.0, 0.0], &[]);
        let want = ((6f64).ln() + 2.0 - 3.0 * 2f64.ln() + 1e-16) / 2.0;
        assert!((pn - want).abs() < 1e-6);
        // mphe with slope 1 and 2.
        let m1 = eval("mphe", &[0.0], &[2.0], &[]);
        assert!((m1 - (5f64.sqrt() - 1.0)).abs() < 1e-6);
        let p2 = vec![("huber_slope".to_string(), "2".to_string())];
        let m2 = from_name_with_params("mphe", &p2).unwrap().evaluate(&[0.0], &info(&[2.0], &[]), 1);
        assert!((m2 - 4.0 * (2f64.sqrt() - 1.0)).abs() < 1e-6);
        // No rows: 0, as XGBoost; zero total weight: the undivided sum.
        assert_eq!(eval("rmse", &[], &[], &[]), 0.0);
        assert_eq!(eval("mae", &[1.0], &[0.0], &[0.0]), 0.0);
    }

    #[test]
    fn known_answers_from_xgboost() {
        // A fixed 12-row dataset; the values are `bst.eval` of xgboost 3.2.0 on a DMatrix with these
        // predictions as base_margin (eta 0, objective reg:squarederror so the margin is the
        // prediction), with and without the weights.
        let y = [0.0f32, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0];
        let p = [0.12f32, 0.93, 0.47, 0.51, 0.66, 0.05, 0.38, 0.71, 0.29, 0.84, 0.5, 0.5];
        let w = [1.0f32, 0.5, 2.0, 1.5, 0.25, 3.0, 1.0, 0.75, 1.25, 2.0, 0.5, 1.0];
        let cases: &[(&str, f64, f64)] = &[
            ("rmse", 0.46695823643324025, 0.49601803389780835),
            ("mae", 0.4033333295956254, 0.41559321546958666),
            ("logloss", 0.6177384511878093, 0.677225588236825),
            ("error", 0.4166666666666667, 0.4915254237288136),
            ("error@0.3", 0.4166666666666667, 0.4576271186440678),
            ("mphe", 0.10006998976071675, 0.1116110389515505),
            ("rmsle", 0.32344255338639955, 0.34792835698854574),
        ];
        for &(name, unweighted, weighted) in cases {
            let a = eval(name, &p, &y, &[]);
            let b = eval(name, &p, &y, &w);
            assert!((a - unweighted).abs() < 1e-6, "{name}: {a} vs {unweighted}");
            assert!((b - weighted).abs() < 1e-6, "{name} weighted: {b} vs {weighted}");
        }
    }

    #[test]
    fn log_link_metrics_match_xgboost_3_4() {
        // `bst.eval` of xgboost 3.4.1 with these predictions as base margins (squared error, eta 0).
        let y = [0.5f32, 1.0, 2.0, 0.3, 4.0, 1.5, 0.7, 3.0, 2.2, 0.9, 1.1, 6.0];
        let p = [0.6f32, 0.9, 2.5, 0.2, 3.0, 1.0, 1.2, 2.8, 2.0, 1.4, 0.5, 4.5];
        let w = [1.0f32, 0.5, 2.0, 1.5, 0.25, 3.0, 1.0, 0.75, 1.25, 2.0, 0.5, 1.0];
        let cases: &[(&str, f64, f64)] = &[
            ("gamma-nloglik", 1.404208352168401, 1.3107908539852853),
            ("gamma-deviance", 0.15843435128529867, 0.14270578804662673),
            ("tweedie-nloglik@1.5", 5.209202627340953, 4.924232030318955),
            ("tweedie-nloglik@1.2", 10.157626211643219, 9.193131382182493),
            ("rmsle", 0.19056326875980423, 0.18812485280268257),
        ];
        for &(name, unweighted, weighted) in cases {
            let (a, b) = (eval(name, &p, &y, &[]), eval(name, &p, &y, &w));
            assert!((a - unweighted).abs() < 1e-6 * unweighted, "{name}: {a} vs {unweighted}");
            assert!((b - weighted).abs() < 1e-6 * weighted, "{name} weighted: {b} vs {weighted}");
        }
        assert_eq!(from_name("tweedie-nloglik@1.50").unwrap().name(), "tweedie-nloglik@1.5");
        for bad in ["tweedie-nloglik", "tweedie-nloglik@2", "tweedie-nloglik@0.5", "tweedie-nloglik@x", "gamma-deviance@1"] {
            assert!(matches!(from_name(bad), Err(Error::InvalidParameter { .. })), "{bad}");
        }
        // Zero total weight: gamma-deviance divides by XGBoost's kRtEps.
        let d = eval("gamma-deviance", &[2.0], &[1.0], &[0.0]);
        assert_eq!(d, 0.0);
    }

    #[test]
    fn bad_shapes_are_reported_and_give_nan() {
        let m = from_name("rmse").unwrap();
        assert!(m.evaluate(&[1.0], &info(&[1.0, 2.0], &[]), 1).is_nan());
        assert!(m.check(1, &info(&[1.0, 2.0], &[]), 1).is_err());
        assert!(m.check(2, &info(&[1.0, 2.0], &[1.0]), 1).is_err());
        assert!(m.check(4, &info(&[1.0, 2.0], &[]), 2).is_err());
        assert!(m.check(2, &info(&[1.0, 2.0], &[1.0, -1.0]), 1).is_err());
        assert!(m.check(2, &info(&[1.0, 2.0], &[1.0, 1.0]), 1).is_ok());
    }
}
