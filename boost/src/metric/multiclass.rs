//! Multi-class metrics on `rows * K` probabilities: `merror` (the weighted fraction of rows whose
//! first largest probability is not the label's) and `mlogloss` (`-log(max(p_y, 1e-16))`, weighted
//! mean).

use boost_kernels::metric::MultiClassMetric;

use super::{check_prediction_count, check_row_weights, fixed_order_sum, DeviceMetric, Metric};
use crate::data::MetaInfo;
use crate::objective::weight_of;
use crate::{Error, Result};

/// Which multi-class metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiClassKind {
    /// The share of rows whose most likely class is wrong (`merror`).
    Error,
    /// Multiclass log loss (`mlogloss`).
    LogLoss,
}

/// `merror` or `mlogloss`.
#[derive(Clone, Debug)]
pub struct MultiClass {
    kind: MultiClassKind,
}

impl MultiClass {
    /// The metric of `kind`.
    pub fn new(kind: MultiClassKind) -> Self {
        Self { kind }
    }

    /// The row arithmetic, shared with the device.
    fn kernel_metric(&self) -> MultiClassMetric {
        match self.kind {
            MultiClassKind::Error => MultiClassMetric::ERROR,
            MultiClassKind::LogLoss => MultiClassMetric::LOG_LOSS,
        }
    }
}

impl Metric for MultiClass {
    fn name(&self) -> String {
        match self.kind {
            MultiClassKind::Error => "merror".into(),
            MultiClassKind::LogLoss => "mlogloss".into(),
        }
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn check(&self, predictions: usize, info: &MetaInfo, outputs: usize) -> Result<()> {
        check_prediction_count(predictions, info, outputs)?;
        check_row_weights(info)?;
        let k = outputs.max(1) as f32;
        if let Some(i) = info.labels.iter().position(|&y| !(y >= 0.0 && y < k && libm::floorf(y) == y)) {
            return Err(Error::InvalidData(format!(
                "row {i}: label {} is not a class id in [0, {})",
                info.labels[i],
                outputs.max(1)
            )));
        }
        Ok(())
    }

    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, outputs: usize) -> f64 {
        if self.check(predictions.len(), info, outputs).is_err() {
            return f64::NAN;
        }
        let k = outputs.max(1);
        let metric = self.kernel_metric();
        metric.finish(fixed_order_sum(info.labels.len(), |i| {
            let row = &predictions[i * k..(i + 1) * k];
            metric.row_term(info.labels[i] as usize, k, weight_of(info, i), |c| row[c])
        }))
    }

    fn device_metric(&self) -> Option<DeviceMetric> {
        Some(DeviceMetric::MultiClass(self.kernel_metric()))
    }
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::super::from_name;
    use super::*;

    fn info(labels: &[f32], weights: &[f32]) -> MetaInfo {
        MetaInfo { labels: labels.to_vec(), weights: weights.to_vec(), ..Default::default() }
    }

    #[test]
    fn hand_computed() {
        let p = [0.2f32, 0.5, 0.3, 0.4, 0.4, 0.2, 0.1, 0.1, 0.8];
        let y = [1.0f32, 1.0, 0.0];
        let merror = from_name("merror").unwrap();
        // Row 1 ties 0.4/0.4: the first maximum (class 0) is predicted.
        assert!((merror.evaluate(&p, &info(&y, &[]), 3) - 2.0 / 3.0).abs() < 1e-12);
        assert!((merror.evaluate(&p, &info(&y, &[2.0, 1.0, 1.0]), 3) - 0.5).abs() < 1e-12);
        let mlogloss = from_name("mlogloss").unwrap();
        let want = -(0.5f64.ln() + 0.4f64.ln() + 0.1f64.ln()) / 3.0;
        assert!((mlogloss.evaluate(&p, &info(&y, &[]), 3) - want).abs() < 1e-6);
        assert!((mlogloss.evaluate(&[0.0, 1.0], &info(&[0.0], &[]), 2) - 16.0 * 10f64.ln()).abs() < 1e-4);
    }

    #[test]
    fn known_answers_from_xgboost() {
        // `bst.eval` of xgboost 3.2.0 (multi:softprob, num_class 3, eta 0) with base margins whose
        // softmax is `probs` below (the margins are the logs of these probabilities).
        // Row 5 ties 0.4/0.4: the first (class 0) is predicted, so its label 1 counts as an error.
        let probs = [0.2f32, 0.5, 0.3, 0.6, 0.3, 0.1, 0.1, 0.1, 0.8, 0.3, 0.3, 0.4, 0.05, 0.9, 0.05, 0.4, 0.4, 0.2];
        let y = [1.0f32, 0.0, 1.0, 2.0, 1.0, 1.0];
        let w = [1.0f32, 2.0, 0.5, 1.0, 3.0, 1.5];
        let m = |name: &str, w: &[f32]| from_name(name).unwrap().evaluate(&probs, &info(&y, w), 3);
        assert!((m("merror", &[]) - 0.3333333333333333).abs() < 1e-6);
        assert!((m("merror", &w) - 0.2222222222222222).abs() < 1e-6);
        assert!((m("mlogloss", &[]) - 0.9074166379868984).abs() < 1e-6);
        assert!((m("mlogloss", &w) - 0.6080999175707499).abs() < 1e-6);
    }

    #[test]
    fn invalid_labels_are_reported() {
        let m = from_name("mlogloss").unwrap();
        assert!(m.check(6, &info(&[0.0, 3.0], &[]), 3).is_err());
        assert!(m.check(6, &info(&[0.0, 1.5], &[]), 3).is_err());
        assert!(m.check(5, &info(&[0.0, 1.0], &[]), 3).is_err());
        assert!(m.evaluate(&[0.5; 6], &info(&[0.0, 3.0], &[]), 3).is_nan());
        assert!(m.check(6, &info(&[0.0, 2.0], &[]), 3).is_ok());
    }
}
