//! Evaluation metrics with XGBoost's names, defaults and tie handling.

use crate::data::MetaInfo;
use crate::{Error, Result};

/// An evaluation metric.
pub trait Metric: Send + Sync {
    /// The name as XGBoost prints it in the eval log (`auc`, `ndcg@10`, ...).
    fn name(&self) -> String;
    /// Whether larger values are better (for early stopping).
    fn higher_is_better(&self) -> bool;
    /// The metric of `predictions` (the objective's eval transform of the margins, `rows * outputs`
    /// row-major) against `info`'s labels, weights and groups.
    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, outputs: usize) -> f64;
}

/// The metric called `name` (`ndcg@10`, `map@5`, `error@0.7`, ... included).
pub fn from_name(name: &str) -> Result<Box<dyn Metric>> {
    Err(Error::param("eval_metric", format!("unknown metric `{name}`")))
}
