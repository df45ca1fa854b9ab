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

use super::{newton_intercept, validate_rows, weight_of, Objective, OutputTransform};
use crate::data::MetaInfo;
use crate::{Error, Result};
use boost_kernels::metric::Transform;

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
    use crate::objective::from_name;

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
}
