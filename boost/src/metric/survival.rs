//! The survival metrics: `aft-nloglik` and `interval-regression-accuracy` of an AFT model's
//! margins against the label bounds (each row's term in `f64`, XGBoost's, summed with weights in
//! the fixed order of `boost_kernels::reduce`), and `cox-nloglik`. `aft-nloglik` takes the run's
//! `aft_loss_distribution_scale`, as XGBoost 3.4.1's does when `eval_metric` names it; XGBoost's
//! default metric (no `eval_metric`) and its `Booster.eval` after training were seen to take scale
//! 1 whatever the parameter, so those values differ from ours when the scale is not 1.
//!
//! `cox-nloglik`: the Cox model's negative log partial likelihood of the predicted hazard ratios
//! `p`, per event, as XGBoost 3.4.1 computes it: rows in increasing `|label|` (ties in row order),
//! `S` the sum of `p` over the rows still at risk (a time's rows leave it together, after it), and
//! `Σ_{y > 0} -(log p - log S) / events`, in `f64` in that order (`log p` in `f32`, as XGBoost's
//! `log` of a float). A scan in one order: the host's.

use boost_kernels::metric::LossSum;
use boost_kernels::survival::Aft;

use super::{check_prediction_count, check_row_weights, fixed_order_sum, Metric};
use crate::data::MetaInfo;
use crate::objective::{check_label_bounds, label_abs_order, weight_of};
use crate::Result;

/// An AFT metric: which, and the loss it reads (`aft-nloglik`'s distribution and scale).
#[derive(Clone, Debug)]
pub struct AftMetric {
    loss: Option<Aft>,
}

impl AftMetric {
    /// `aft-nloglik` of `loss`'s distribution and scale.
    pub fn negative_log_likelihood(loss: Aft) -> Self {
        Self { loss: Some(loss) }
    }

    /// `interval-regression-accuracy`: the weighted fraction of rows whose predicted time `e^m`
    /// lies within its bounds.
    pub fn interval_accuracy() -> Self {
        Self { loss: None }
    }

    fn row(&self, lower: f64, upper: f64, margin: f64) -> f64 {
        match self.loss {
            Some(loss) => loss.loss(lower, upper, margin),
            None => {
                let time = libm::exp(margin);
                if time >= lower && time <= upper {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }
}

impl Metric for AftMetric {
    fn name(&self) -> String {
        if self.loss.is_some() { "aft-nloglik" } else { "interval-regression-accuracy" }.into()
    }

    fn higher_is_better(&self) -> bool {
        self.loss.is_none()
    }

    fn check(&self, predictions: usize, info: &MetaInfo, outputs: usize) -> Result<()> {
        check_prediction_count(predictions, info, outputs)?;
        check_row_weights(info)?;
        check_label_bounds(info)
    }

    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, outputs: usize) -> f64 {
        if self.check(predictions.len(), info, outputs).is_err() {
            return f64::NAN;
        }
        let (lower, upper) = (&info.label_lower_bound, &info.label_upper_bound);
        let sums = fixed_order_sum(predictions.len(), |i| {
            let w = weight_of(info, i) as f64;
            LossSum { loss: self.row(lower[i] as f64, upper[i] as f64, predictions[i] as f64) * w, weight: w }
        });
        if sums.weight == 0.0 {
            sums.loss
        } else {
            sums.loss / sums.weight
        }
    }
}

/// `cox-nloglik`.
#[derive(Clone, Debug)]
pub struct CoxNegLogLik;

impl Metric for CoxNegLogLik {
    fn name(&self) -> String {
        "cox-nloglik".into()
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn check(&self, predictions: usize, info: &MetaInfo, outputs: usize) -> Result<()> {
        check_prediction_count(predictions, info, outputs)?;
        check_row_weights(info)
    }

    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, outputs: usize) -> f64 {
        if self.check(predictions.len(), info, outputs).is_err() {
            return f64::NAN;
        }
        let labels = &info.labels;
        let order = label_abs_order(labels);
        let mut at_risk: f64 = predictions.iter().map(|&p| p as f64).sum();
        let (mut out, mut pending, mut events) = (0.0f64, 0.0f64, 0u64);
        for (k, &i) in order.iter().enumerate() {
            let p = predictions[i];
            if labels[i] > 0.0 {
                // XGBoost's `log` of the float prediction is `logf`.
                out -= p.ln() as f64 - at_risk.ln();
                events += 1;
            }
            pending += p as f64;
            if k + 1 == order.len() || labels[i].abs() < labels[order[k + 1]].abs() {
                at_risk -= pending;
                pending = 0.0;
            }
        }
        out / events as f64
    }
}
