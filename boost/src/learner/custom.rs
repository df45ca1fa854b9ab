//! A caller's objective and metric in place of (or beside) the named ones: XGBoost's `obj=` and
//! `custom_metric=`.

use std::sync::Arc;

use primitives::ops::GradientPair;

use crate::data::MetaInfo;
use crate::metric::Metric;
use crate::{Error, Result};

/// The gradient and hessian of each row and output from the margins (`rows * outputs`,
/// row-major, before any transform) and the training rows' labels, weights and groups.
/// An error ends training (a binding's callable raised, say).
type GradientFn = dyn Fn(&[f32], &MetaInfo) -> Result<Vec<GradientPair<f32>>> + Send + Sync;

/// A custom objective: a function from the margins and the training rows' [`MetaInfo`] to a
/// [`GradientPair`] (gradient, hessian) a row and output, as XGBoost's `obj(predt, dtrain)`. The
/// gradients are computed on the host each round, also when the trees are built on a GPU.
#[derive(Clone)]
pub struct CustomObjective(Arc<GradientFn>);

impl CustomObjective {
    /// A custom objective computing its gradients with `gradients`.
    pub fn new(gradients: impl Fn(&[f32], &MetaInfo) -> Vec<GradientPair<f32>> + Send + Sync + 'static) -> Self {
        Self::fallible(move |margins, info| Ok(gradients(margins, info)))
    }

    /// A custom objective whose gradients may fail: an error ends training with it.
    pub fn fallible(
        gradients: impl Fn(&[f32], &MetaInfo) -> Result<Vec<GradientPair<f32>>> + Send + Sync + 'static,
    ) -> Self {
        CustomObjective(Arc::new(gradients))
    }

    /// Its gradients of `margins` into `out`, or an error when it gives another count.
    pub(super) fn gradients_into(&self, margins: &[f32], info: &MetaInfo, out: &mut [GradientPair<f32>]) -> Result<()> {
        let gradients = (self.0)(margins, info)?;
        if gradients.len() != out.len() {
            return Err(Error::InvalidData(format!(
                "the custom objective gave {} gradient pairs for {} margins",
                gradients.len(),
                out.len()
            )));
        }
        out.copy_from_slice(&gradients);
        Ok(())
    }
}

/// A metric from the predictions (the objective's evaluation transform of the margins, `rows *
/// outputs` row-major: probabilities for `binary:logistic`) and the evaluated rows' [`MetaInfo`].
type MetricFn = dyn Fn(&[f32], &MetaInfo) -> f64 + Send + Sync;

/// A custom metric: its name in the evaluation log, whether larger is better (for early stopping)
/// and the function computing it (XGBoost's `custom_metric`).
#[derive(Clone)]
pub struct CustomMetric {
    name: String,
    higher_is_better: bool,
    evaluate: Arc<MetricFn>,
}

impl CustomMetric {
    /// A custom metric named `name` in the evaluation log.
    pub fn new(
        name: impl Into<String>,
        higher_is_better: bool,
        evaluate: impl Fn(&[f32], &MetaInfo) -> f64 + Send + Sync + 'static,
    ) -> Self {
        CustomMetric { name: name.into(), higher_is_better, evaluate: Arc::new(evaluate) }
    }
}

impl Metric for CustomMetric {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn higher_is_better(&self) -> bool {
        self.higher_is_better
    }
    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, _outputs: usize) -> f64 {
        (self.evaluate)(predictions, info)
    }
}

impl std::fmt::Debug for CustomMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CustomMetric({})", self.name)
    }
}

impl std::fmt::Debug for CustomObjective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CustomObjective")
    }
}
