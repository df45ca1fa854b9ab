//! `quantile`: XGBoost's pinball loss over every (row, alpha) of a quantile model's sorted
//! predictions, `Σ w ρ_α(y - p) / Σ w` with the weight counted once a (row, alpha), where
//! `ρ_α(d) = α d` for `d >= 0`, else `(α - 1) d`; and `expectile`, the same sum of an expectile
//! model's asymmetric squared errors `s_α (p - y)²` (`s_α = 1 - α` above the label, else `α`).
//! Each term in `f32` (`boost_kernels::metric`'s `QUANTILE` and `EXPECTILE` row losses), summed in
//! `f64` in the fixed order of `boost_kernels::reduce` (a row's alphas in order). One alpha's is a
//! row-wise metric, which the device computes; several alphas' the host (the device objective's
//! predictions come back for it).

use boost_kernels::metric::{ElementwiseMetric, LossSum};

use super::{check_prediction_count, check_row_weights, fixed_order_sum, DeviceMetric, Metric};
use crate::data::MetaInfo;
use crate::objective::weight_of;
use crate::Result;

/// The pinball loss of `quantile_alpha`'s alphas, or the expectile loss of `expectile_alpha`'s.
#[derive(Clone, Debug)]
pub struct QuantileLoss {
    alphas: Vec<f32>,
    /// `ElementwiseMetric::QUANTILE` or `EXPECTILE`.
    kind: u32,
}

impl QuantileLoss {
    /// `quantile` of these alphas (one prediction each a row).
    pub fn new(alphas: Vec<f32>) -> Self {
        Self { alphas, kind: ElementwiseMetric::QUANTILE }
    }

    /// `expectile` of these alphas (one prediction each a row).
    pub fn expectiles(alphas: Vec<f32>) -> Self {
        Self { alphas, kind: ElementwiseMetric::EXPECTILE }
    }

    /// The row arithmetic of one alpha, shared with the device.
    fn row(&self, alpha: f32) -> ElementwiseMetric {
        ElementwiseMetric { kind: self.kind, parameter: alpha }
    }
}

impl Metric for QuantileLoss {
    fn name(&self) -> String {
        if self.kind == ElementwiseMetric::EXPECTILE { "expectile" } else { "quantile" }.into()
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn check(&self, predictions: usize, info: &MetaInfo, _outputs: usize) -> Result<()> {
        check_prediction_count(predictions, info, self.alphas.len())?;
        check_row_weights(info)
    }

    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, outputs: usize) -> f64 {
        if self.check(predictions.len(), info, outputs).is_err() {
            return f64::NAN;
        }
        let k = self.alphas.len();
        let sums = fixed_order_sum(info.labels.len(), |i| {
            let w = weight_of(info, i);
            let mut sum = LossSum::default();
            for (q, &alpha) in self.alphas.iter().enumerate() {
                let term = self.row(alpha).row_term(info.labels[i], predictions[i * k + q], w);
                (sum.loss, sum.weight) = (sum.loss + term.loss, sum.weight + term.weight);
            }
            sum
        });
        sums.loss / sums.weight
    }

    fn device_metric(&self) -> Option<DeviceMetric> {
        match self.alphas[..] {
            [alpha] => Some(DeviceMetric::Elementwise(self.row(alpha))),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::from_name_with_params;

    #[test]
    fn pinball_losses_match_xgboost_3_4() {
        // `bst.eval` of xgboost 3.4.1 on these predictions (a quantile model's base margins, eta 0;
        // sorted rows), with and without weights.
        let labels = [0.5f32, 2.0, 3.0, -1.0, 7.0];
        let predictions = [0.0f32, 1.0, 1.5, 2.5, 2.0, 4.0, -2.0, 0.5, 3.0, 6.0];
        let weights = [1.0f32, 0.5, 1.0, 3.0, 1.0];
        let params = vec![("quantile_alpha".to_string(), "[0.2, 0.7]".to_string())];
        let metric = from_name_with_params("quantile", &params).unwrap();
        let info = |w: &[f32]| crate::data::MetaInfo {
            labels: labels.to_vec(),
            weights: w.to_vec(),
            ..Default::default()
        };
        let (a, b) = (metric.evaluate(&predictions, &info(&[]), 2), metric.evaluate(&predictions, &info(&weights), 2));
        assert!((a - QUANTILE_UNWEIGHTED).abs() < 1e-6 && (b - QUANTILE_WEIGHTED).abs() < 1e-6, "{a} {b}");
        assert!(super::super::from_name("quantile").is_err());
        assert!(metric.evaluate(&predictions[1..], &info(&[]), 2).is_nan());
    }

    const QUANTILE_UNWEIGHTED: f64 = 0.3150000050663948;
    const QUANTILE_WEIGHTED: f64 = 0.33269231336621136;
}
