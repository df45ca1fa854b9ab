//! `cox-nloglik`: the Cox model's negative log partial likelihood of the predicted hazard ratios
//! `p`, per event, as XGBoost 3.4.1 computes it: rows in increasing `|label|` (ties in row order),
//! `S` the sum of `p` over the rows still at risk (a time's rows leave it together, after it), and
//! `Σ_{y > 0} -(log p - log S) / events`, in `f64` in that order (`log p` in `f32`, as XGBoost's
//! `log` of a float). A scan in one order: the host's.

use super::{check_prediction_count, check_row_weights, Metric};
use crate::data::MetaInfo;
use crate::objective::label_abs_order;
use crate::Result;

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
