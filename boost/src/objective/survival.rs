//! The survival objectives: `survival:aft` ([`Aft`], its arithmetic `boost_kernels::survival`'s)
//! and `survival:cox` ([`Cox`]).
//!
//! `survival:cox`: the Cox proportional hazards model's negative log partial likelihood (Breslow's
//! method for ties), as XGBoost 3.4.1 computes it. A label is a survival time, negative for a
//! censored row; predictions are hazard ratios `e^m`.
//!
//! Rows are taken in increasing `|label|` (a stable sort, ties in row order); with `S` the sum of
//! `e^m` over the rows still at risk (every row whose time is not below the current one),
//! `r = Σ 1/S` and `s = Σ 1/S²` over the events so far, a row's pair is
//! `(e^m r - [y > 0], e^m r - e^(2m) s)` times its weight, in `f64` in that order. Every row's pair
//! depends on the sums before it, a scan in one fixed order, so the gradients are the host's on
//! both backends (as in XGBoost, whose Cox objective has no GPU kernel); the trees are the
//! device's. The metric `cox-nloglik` is `metric::survival`'s.

use primitives::ops::GradientPair;
use rayon::prelude::*;

use super::{format_f32, newton_intercept, validate_rows, weight_of, DeviceObjective, Objective, OutputTransform, Params};
use crate::data::MetaInfo;
use crate::{Error, Result};
use boost_kernels::metric::Transform;
use boost_kernels::survival::Aft as AftLoss;

/// `survival:aft`: the accelerated failure time model of interval labels
/// (`label_lower_bound`, `label_upper_bound`), with `aft_loss_distribution` (`normal`, `logistic`,
/// `extreme`) and `aft_loss_distribution_scale` `σ`. Predictions are times `e^m`; its metrics
/// (`aft-nloglik`, `interval-regression-accuracy`) read the margins, as XGBoost's. Element-wise:
/// the device computes the gradients with the same functions.
#[derive(Clone, Debug)]
pub struct Aft {
    loss: AftLoss,
}

/// XGBoost's names of the distributions, by `boost_kernels::survival::Aft`'s codes.
const DISTRIBUTIONS: [&str; 3] = ["normal", "logistic", "extreme"];

impl Aft {
    /// From `aft_loss_distribution` and `aft_loss_distribution_scale` (defaults `normal`, 1).
    pub(crate) fn from_params(p: &Params<'_>) -> Result<Self> {
        let name = p.get("aft_loss_distribution").unwrap_or("normal");
        let distribution = DISTRIBUTIONS.iter().position(|d| *d == name).ok_or_else(|| {
            Error::param("aft_loss_distribution", format!("`{name}` is not one of {}", DISTRIBUTIONS.join(", ")))
        })? as u32;
        let sigma = p.f32("aft_loss_distribution_scale")?.unwrap_or(1.0);
        if sigma <= 0.0 {
            return Err(Error::param("aft_loss_distribution_scale", format!("must be > 0, got {sigma}")));
        }
        Ok(Self { loss: AftLoss { distribution, sigma } })
    }

    /// The loss's arithmetic, shared with the device and the metric.
    pub fn loss(&self) -> AftLoss {
        self.loss
    }

    /// The parameters as XGBoost writes them (the objective's and `aft-nloglik`'s `aft_loss_param`).
    pub(crate) fn param_json(loss: AftLoss) -> serde_json::Value {
        serde_json::json!({
            "aft_loss_distribution": DISTRIBUTIONS[loss.distribution as usize],
            "aft_loss_distribution_scale": format_f32(loss.sigma),
        })
    }
}

/// `info` as `objective`'s steps read it: a `survival:aft` set given only label bounds (as XGBoost
/// allows) takes its lower bounds as labels, which count its rows everywhere else (the AFT
/// gradients and metrics read the bounds alone).
pub(crate) fn with_bound_labels<'a>(objective: &str, info: &'a MetaInfo) -> std::borrow::Cow<'a, MetaInfo> {
    if objective == "survival:aft" && info.labels.is_empty() && !info.label_lower_bound.is_empty() {
        std::borrow::Cow::Owned(MetaInfo { labels: info.label_lower_bound.clone(), ..info.clone() })
    } else {
        std::borrow::Cow::Borrowed(info)
    }
}

/// Checks the label bounds of `info`'s rows (counted by its labels); see [`check_bounds`].
pub(crate) fn check_label_bounds(info: &MetaInfo) -> Result<()> {
    check_bounds(&info.label_lower_bound, &info.label_upper_bound, info.labels.len())
}

/// Checks label bounds for `rows` rows: both given, one a row, no NaN, a finite lower bound, the
/// lower at most the upper. Errors name the row and the bound.
pub(crate) fn check_bounds(lower: &[f32], upper: &[f32], rows: usize) -> Result<()> {
    for (name, bounds) in [("label_lower_bound", lower), ("label_upper_bound", upper)] {
        if bounds.len() != rows {
            return Err(Error::InvalidData(format!(
                "survival:aft needs {name}, one a row: {} for {rows} rows",
                bounds.len()
            )));
        }
    }
    for (i, (&lo, &hi)) in lower.iter().zip(upper).enumerate() {
        let why = if lo.is_nan() || hi.is_nan() {
            "a bound is NaN"
        } else if lo == f32::INFINITY {
            "the lower bound is infinite"
        } else if lo > hi {
            "the lower bound is above the upper"
        } else {
            continue;
        };
        return Err(Error::InvalidData(format!("row {i}: label_lower_bound {lo}, label_upper_bound {hi}: {why}")));
    }
    Ok(())
}

impl Objective for Aft {
    fn name(&self) -> &'static str {
        "survival:aft"
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)?;
        check_label_bounds(info)
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        let (lower, upper) = (&info.label_lower_bound, &info.label_upper_bound);
        out.par_iter_mut().enumerate().for_each(|(i, g)| {
            *g = match (lower.get(i), upper.get(i), margins.get(i)) {
                (Some(&l), Some(&u), Some(&m)) => self.loss.gradient(l, u, m, weight_of(info, i)),
                _ => GradientPair::new(0.0, 0.0),
            };
        });
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::Aft(self.loss))
    }
    /// The metrics read margins (`log` times), as XGBoost's `EvalTransform` leaves them.
    fn eval_transform(&self, margins: &[f32]) -> Vec<f32> {
        margins.to_vec()
    }
    fn device_eval_transform(&self) -> Option<Transform> {
        Some(Transform::IDENTITY)
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Exp
    }
    fn prob_to_margin(&self, base_score: f32) -> f32 {
        libm::logf(base_score)
    }
    /// XGBoost estimates nothing for AFT: its default 0.5.
    fn initial_base_score(&self, _info: &MetaInfo) -> f32 {
        0.5
    }
    fn check_base_score(&self, base_score: f32) -> Result<()> {
        if !(base_score.is_finite() && base_score > 0.0) {
            return Err(Error::param("base_score", format!("must be > 0 for survival:aft, got {base_score}")));
        }
        Ok(())
    }
    fn default_metric(&self) -> &'static str {
        "aft-nloglik"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name(), "aft_loss_param": Self::param_json(self.loss)})
    }
}

/// The rows in increasing `|label|`, ties in row order (XGBoost's `LabelAbsSort`).
pub(crate) fn label_abs_order(labels: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by(|&a, &b| labels[a].abs().total_cmp(&labels[b].abs()));
    order
}

/// `survival:cox`.
#[derive(Clone, Debug)]
pub struct Cox;

impl Objective for Cox {
    fn name(&self) -> &'static str {
        "survival:cox"
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)?;
        if info.labels.is_empty() {
            return Err(Error::InvalidData("survival:cox needs at least one row".into()));
        }
        Ok(())
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        let n = info.labels.len().min(margins.len()).min(out.len());
        let order = label_abs_order(&info.labels[..n]);
        // XGBoost sums `expf` of the float margins, then takes `exp` of them as doubles.
        let mut at_risk: f64 = order.iter().map(|&i| boost_kernels::exp::expf(margins[i]) as f64).sum();
        let (mut r, mut s, mut last_exp, mut last_time, mut pending) = (0.0f64, 0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for &i in &order {
            let exp_p = (margins[i] as f64).exp();
            let (y, w) = (info.labels[i] as f64, weight_of(info, i) as f64);
            // The denominator drops the rows of earlier times once time moves on (Breslow).
            pending += last_exp;
            if last_time < y.abs() {
                at_risk -= pending;
                pending = 0.0;
            }
            if y > 0.0 {
                r += 1.0 / at_risk;
                s += 1.0 / (at_risk * at_risk);
            }
            let grad = exp_p * r - if y > 0.0 { 1.0 } else { 0.0 };
            let hess = exp_p * r - exp_p * exp_p * s;
            out[i] = GradientPair::new((grad * w) as f32, (hess * w) as f32);
            (last_time, last_exp) = (y.abs(), exp_p);
        }
        out[n..].fill(GradientPair::new(0.0, 0.0));
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
    /// XGBoost's `FitIntercept`: a Newton step from 0, as a hazard ratio.
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        boost_kernels::exp::expf(newton_intercept(self, info))
    }
    fn check_base_score(&self, base_score: f32) -> Result<()> {
        if !(base_score.is_finite() && base_score > 0.0) {
            return Err(Error::param("base_score", format!("must be > 0 for survival:cox, got {base_score}")));
        }
        Ok(())
    }
    fn default_metric(&self) -> &'static str {
        "cox-nloglik"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name()})
    }
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::objective::{from_json, from_name};

    fn info(labels: &[f32], weights: &[f32]) -> MetaInfo {
        MetaInfo { labels: labels.to_vec(), weights: weights.to_vec(), ..Default::default() }
    }

    /// From xgboost 3.4.1: the margins as base margins, one exact tree with a row a leaf where it
    /// could split them (lambda 0, eta 1, min_child_weight 0): G = -leaf * cover, H = cover; rows 3
    /// and 4 share a leaf, so their sum. Censored rows (negative labels) and a tie at time 2.
    #[test]
    fn gradients_match_xgboost_3_4() {
        let margins = [0.3f32, -1.2, 2.5, -0.7, 1.1, 0.0];
        let labels = [2.0f32, -3.0, 2.0, 5.0, -1.0, 4.0];
        let weights = [1.0f32, 0.5, 1.0, 3.0, 1.0, 2.0];
        type Leaves = [(f32, f32); 5];
        let cases: [(&[f32], Leaves); 2] = [
            (
                &[],
                [
                    (-0.91194737, 0.080299385),
                    (0.039294407, 0.038522378),
                    (0.58935273, 0.32633168),
                    (0.39659712, 0.28440037),
                    (-0.20135033, 0.34366477),
                ],
            ),
            (
                &weights,
                [
                    (-0.91194737, 0.080299385),
                    (0.019647203, 0.019261189),
                    (0.58935273, 0.32633168),
                    (1.1897913, 0.85320109),
                    (-0.40270066, 0.68732953),
                ],
            ),
        ];
        for (w, want) in cases {
            let mut g = vec![GradientPair::new(0.0, 0.0); 6];
            Cox.gradients(&margins, &info(&labels, w), 0, &mut g);
            let merged = GradientPair::new(g[3].grad + g[4].grad, g[3].hess + g[4].hess);
            let got = [g[0], g[1], g[2], merged, g[5]];
            for (k, (p, (wg, wh))) in got.iter().zip(want).enumerate() {
                let close = |a: f32, b: f32| (a - b).abs() <= 2e-6 * (1.0 + b.abs());
                assert!(close(p.grad, wg) && close(p.hess, wh), "weights {w:?} leaf {k}: {p:?} vs {wg}, {wh}");
            }
        }
        let close = |a: f32, b: f32| (a - b).abs() <= 2e-6 * (1.0 + b.abs());
        assert!(close(Cox.initial_base_score(&info(&labels, &[])), 1.1085943));
        assert!(close(Cox.initial_base_score(&info(&labels, &weights)), 0.68901455));
        assert!(Cox.validate(&info(&[], &[])).is_err());
        assert_eq!(from_name("survival:cox", &[]).unwrap().to_json(), serde_json::json!({"name": "survival:cox"}));
        // `cox-nloglik` of these margins' hazard ratios, by xgboost 3.4.1's `eval`.
        let metric = crate::metric::from_name("cox-nloglik").unwrap();
        let value = metric.evaluate(&Cox.eval_transform(&margins), &info(&labels, &[]), 1);
        assert!((value - 0.7657066720927517).abs() < 1e-9, "{value}");
    }
    /// From xgboost 3.4.1 (`survival:aft`, the margins as base margins, one exact tree of a leaf a
    /// row where it splits them: lambda 0, eta 1, min_child_weight 0): each leaf's weight and
    /// cover, so `G = -weight * cover`, `H = cover` summed over the leaf's rows (rows 5 and 6, both
    /// at a limit, share one). An event, right-, left- and interval-censored rows, and margins far
    /// enough out for each distribution's limits; the metrics at the margins, logged by xgboost's
    /// training with an explicit `eval_metric` (eta 0).
    #[test]
    fn aft_matches_xgboost_3_4() {
        let lower = [2.0f32, 3.0, 0.0, 1.0, 2.0, 3.0, 1.0, 0.5];
        let upper = [2.0f32, f32::INFINITY, 4.0, 5.0, 2.0, f32::INFINITY, 1.5, 0.5];
        let margins = [0.3f32, -1.2, 2.5, 0.1, 40.0, -40.0, -35.0, 1.1];
        let weights = [1.0f32, 0.5, 1.0, 3.0, 1.0, 2.0, 1.5, 0.25];
        type Case = (&'static str, f32, bool, [usize; 8], [(f32, f32); 8], f64, f64);
        let cases: [Case; 12] = [
            ("normal", 1.0, false, [9, 10, 11, 12, 4, 5, 5, 6], [(0.39314717, 1.0), (2.9276488, 0.90181017), (-1.9871488, 0.8136981), (0.6988014, 0.812507), (-15.0, 1.0), (15.0, 2.0), (15.0, 2.0), (-1.7931472, 1.0)], 11.714150588920463, 0.125),
            ("normal", 1.0, true, [9, 10, 11, 12, 4, 5, 5, 6], [(0.39314717, 1.0), (2.9276488, 0.45090508), (-1.9871488, 0.8136981), (0.69880146, 2.437521), (-15.0, 1.0), (15.0, 3.5), (15.0, 3.5), (-1.7931472, 0.25)], 12.976676645480364, 0.2926829268292683),
            ("normal", 0.7, false, [9, 10, 11, 12, 4, 5, 5, 6], [(0.39314717, 2.0408163), (2.6487365, 1.9135858), (-1.6454923, 1.7505943), (0.66514724, 1.4121207), (-7.35, 2.0408163), (7.35, 4.0816326), (7.35, 4.0816326), (-1.7931472, 2.0408163)], 12.316603565295583, 0.125),
            ("normal", 0.7, true, [9, 10, 11, 12, 4, 5, 5, 6], [(0.39314717, 2.0408163), (2.6487365, 0.9567929), (-1.6454923, 1.7505943), (0.66514724, 4.236362), (-7.35, 2.0408163), (7.35, 7.142857), (7.35, 7.142857), (-1.7931472, 0.5102041)], 13.176201276295892, 0.2926829268292683),
            ("logistic", 1.0, false, [11, 12, 13, 14, 4, 9, 10, 6], [(0.4033535, 0.48116645), (10.960352, 0.082913585), (-4.0456233, 0.1860824), (0.7393791, 0.39762914), (-1e+16, 1e-16), (1e+16, 1e-16), (9465240000000000.0, 1e-16), (-2.9209485, 0.24465527)], 11.409745409100752, 0.125),
            ("logistic", 1.0, true, [11, 12, 13, 14, 4, 9, 10, 6], [(0.4033535, 0.48116645), (10.960352, 0.041456793), (-4.0456233, 0.1860824), (0.7393791, 1.1928874), (-1e+16, 1e-16), (1e+16, 2e-16), (9465239000000000.0, 1.5e-16), (-2.9209485, 0.061163817)], 12.937161048187166, 0.2926829268292683),
            ("logistic", 0.7, false, [9, 10, 11, 12, 4, 5, 5, 6], [(0.41414458, 0.9439882), (19.372597, 0.07107732), (-4.136086, 0.2869372), (0.7387153, 0.69736135), (-1.4285714e+16, 1e-16), (1.4285714e+16, 2e-16), (1.4285714e+16, 2e-16), (-4.50795, 0.27148962)], 11.536333778599001, 0.125),
            ("logistic", 0.7, true, [11, 12, 13, 14, 4, 9, 10, 6], [(0.41414458, 0.9439882), (19.372597, 0.03553866), (-4.136086, 0.2869372), (0.73871535, 2.092084), (-1.4285714e+16, 1e-16), (1.4285714e+16, 2e-16), (1.4285713e+16, 1.5e-16), (-4.50795, 0.067872405)], 12.927864900293235, 0.2926829268292683),
            ("extreme", 1.0, false, [9, 10, 11, 12, 6, 4, 4, 2], [(0.3250706, 1.4816364), (1.0, 9.960351), (-5.7757454, 0.14626646), (0.6847578, 1.1758424), (-1e+16, 1e-16), (1.0, 30.0), (1.0, 30.0), (-5.0083323, 0.16643554)], 12.263359684467183, 0.125),
            ("extreme", 1.0, true, [9, 10, 11, 12, 6, 4, 4, 2], [(0.3250706, 1.4816364), (1.0, 4.9801755), (-5.7757454, 0.14626646), (0.6847579, 3.5275273), (-1e+16, 1e-16), (1.0, 52.5), (1.0, 52.5), (-5.0083323, 0.041608885)], 13.218284217699903, 0.2926829268292683),
            ("extreme", 0.7, false, [3, 9, 11, 12, 8, 6, 6, 2], [(0.30080837, 3.5786612), (1.0, 15.0), (-6.646652, 0.19378091), (0.67995197, 1.8144208), (-1.4285714e+16, 1e-16), (1.0, 30.0), (1.0, 30.0), (-8.369925, 0.15750644)], 14.405503781895673, 0.125),
            ("extreme", 0.7, true, [7, 9, 11, 12, 6, 4, 4, 2], [(0.30080837, 3.5786612), (1.0, 7.5), (-6.646652, 0.19378091), (0.67995197, 5.4432626), (-1.4285714e+16, 1e-16), (1.0, 52.5), (1.0, 52.5), (-8.369925, 0.03937661)], 14.038618138412804, 0.2926829268292683),
        ];
        for (distribution, sigma, weighted, leaves, want, nloglik, accuracy) in cases {
            let params = [
                ("aft_loss_distribution".to_string(), distribution.to_string()),
                ("aft_loss_distribution_scale".to_string(), sigma.to_string()),
            ];
            let objective = from_name("survival:aft", &params).unwrap();
            let info = MetaInfo {
                labels: lower.to_vec(),
                weights: if weighted { weights.to_vec() } else { Vec::new() },
                label_lower_bound: lower.to_vec(),
                label_upper_bound: upper.to_vec(),
                ..Default::default()
            };
            objective.validate(&info).unwrap();
            let mut g = vec![GradientPair::new(0.0, 0.0); 8];
            objective.gradients(&margins, &info, 0, &mut g);
            for (i, &(weight, cover)) in want.iter().enumerate() {
                let rows = (0..8).filter(|&j| leaves[j] == leaves[i]);
                let (grad, hess) = rows.fold((0.0f64, 0.0f64), |(a, b), j| (a + g[j].grad as f64, b + g[j].hess as f64));
                let (want_grad, want_hess) = (-(weight as f64) * cover as f64, cover as f64);
                let close = |a: f64, b: f64| (a - b).abs() <= 2e-6 * (1e-9 + b.abs());
                assert!(
                    close(grad, want_grad) && close(hess, want_hess),
                    "{distribution} {sigma} weighted {weighted} row {i}: ({grad}, {hess}) vs ({want_grad}, {want_hess})"
                );
            }
            let metric_params: Vec<(String, String)> = params.to_vec();
            for (name, want) in [("aft-nloglik", nloglik), ("interval-regression-accuracy", accuracy)] {
                let metric = crate::metric::from_name_with_params(name, &metric_params).unwrap();
                let value = metric.evaluate(&objective.eval_transform(&margins), &info, 1);
                assert!((value - want).abs() <= 1e-12 * want.abs().max(1.0), "{distribution} {sigma} {name}: {value} vs {want}");
            }
        }
    }

    #[test]
    fn aft_checks_its_parameters_and_bounds() {
        let p = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        let err = |params: Vec<(String, String)>| from_name("survival:aft", &params).err().unwrap().to_string();
        assert!(err(p("aft_loss_distribution", "gumbel")).contains("aft_loss_distribution"));
        assert!(err(p("aft_loss_distribution_scale", "0")).contains("aft_loss_distribution_scale"));
        let aft = from_name("survival:aft", &p("aft_loss_distribution_scale", "0.7")).unwrap();
        assert_eq!(
            aft.to_json(),
            serde_json::json!({"name": "survival:aft", "aft_loss_param": {"aft_loss_distribution": "normal", "aft_loss_distribution_scale": "0.699999988"}})
        );
        assert_eq!(from_json(&aft.to_json()).unwrap().to_json(), aft.to_json());
        let info = |lower: &[f32], upper: &[f32]| MetaInfo {
            labels: vec![1.0; 2],
            label_lower_bound: lower.to_vec(),
            label_upper_bound: upper.to_vec(),
            ..Default::default()
        };
        let invalid = |lower: &[f32], upper: &[f32]| aft.validate(&info(lower, upper)).err().unwrap().to_string();
        assert!(invalid(&[1.0, 3.0], &[2.0, 2.0]).contains("row 1: label_lower_bound 3, label_upper_bound 2"));
        assert!(invalid(&[1.0, f32::NAN], &[2.0, 2.0]).contains("row 1"));
        assert!(invalid(&[1.0], &[2.0]).contains("label_lower_bound, one a row: 1 for 2 rows"));
        assert!(invalid(&[], &[]).contains("label_lower_bound"));
        assert!(aft.validate(&info(&[0.0, 2.0], &[1.0, f32::INFINITY])).is_ok());
        // A set of bounds alone counts its rows by them.
        let bounds_only = MetaInfo { labels: Vec::new(), ..info(&[0.0, 2.0], &[1.0, 2.0]) };
        assert_eq!(with_bound_labels("survival:aft", &bounds_only).labels, vec![0.0, 2.0]);
        assert!(with_bound_labels("reg:squarederror", &bounds_only).labels.is_empty());
    }

}
