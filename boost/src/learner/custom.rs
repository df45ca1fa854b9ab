//! A caller's objective and metric in place of (or beside) the named ones: XGBoost's `obj=` and
//! `custom_metric=`.

use std::sync::{Arc, Mutex};

use primitives::ops::GradientPair;

use crate::data::MetaInfo;
use crate::metric::{Metric, MetricInput};
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

/// A metric from the predictions (`rows * outputs` row-major, as [`CustomMetric::input`] says:
/// by default the objective's evaluation transform of the margins, probabilities for
/// `binary:logistic`) and the evaluated rows' [`MetaInfo`]: its value, and its name when the
/// function names it as it computes it (XGBoost's Python `custom_metric` returns both).
type MetricFn = dyn Fn(&[f32], &MetaInfo) -> (Option<String>, f64) + Send + Sync;

/// A custom metric: its name in the evaluation log, whether larger is better (for early stopping)
/// and the function computing it (XGBoost's `custom_metric`).
#[derive(Clone)]
pub struct CustomMetric {
    /// The name, as given or as the function last gave it.
    name: Arc<Mutex<String>>,
    higher_is_better: bool,
    input: MetricInput,
    evaluate: Arc<MetricFn>,
}

impl CustomMetric {
    /// A custom metric named `name` in the evaluation log.
    pub fn new(
        name: impl Into<String>,
        higher_is_better: bool,
        evaluate: impl Fn(&[f32], &MetaInfo) -> f64 + Send + Sync + 'static,
    ) -> Self {
        Self::naming(name, higher_is_better, move |predictions, info| (None, evaluate(predictions, info)))
    }

    /// A custom metric whose function may give its name with each value (`name` until it does),
    /// as XGBoost's Python `custom_metric` returns `(name, value)`.
    pub fn naming(
        name: impl Into<String>,
        higher_is_better: bool,
        evaluate: impl Fn(&[f32], &MetaInfo) -> (Option<String>, f64) + Send + Sync + 'static,
    ) -> Self {
        let name = Arc::new(Mutex::new(name.into()));
        CustomMetric { name, higher_is_better, input: MetricInput::EvalTransform, evaluate: Arc::new(evaluate) }
    }

    /// The same metric computed from `input` (XGBoost's Python `custom_metric` takes
    /// [`MetricInput::Prediction`], or [`MetricInput::Margins`] with a custom objective).
    pub fn input(mut self, input: MetricInput) -> Self {
        self.input = input;
        self
    }
}

impl Metric for CustomMetric {
    fn name(&self) -> String {
        self.name.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    fn higher_is_better(&self) -> bool {
        self.higher_is_better
    }
    fn input(&self) -> MetricInput {
        self.input
    }
    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, _outputs: usize) -> f64 {
        let (name, value) = (self.evaluate)(predictions, info);
        if let Some(name) = name {
            *self.name.lock().unwrap_or_else(|p| p.into_inner()) = name;
        }
        value
    }
}

impl std::fmt::Debug for CustomMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CustomMetric({})", self.name())
    }
}

impl std::fmt::Debug for CustomObjective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CustomObjective")
    }
}
