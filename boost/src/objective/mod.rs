//! Objectives with XGBoost's names and semantics: gradients and hessians of the loss at the current
//! margins, the transformation of margins to predictions, the initial estimate of `base_score`, and
//! the default metric.

use primitives::ops::GradientPair;

use crate::data::MetaInfo;
use crate::{Error, Result};

/// A learning objective.
pub trait Objective: Send + Sync {
    /// XGBoost's name (`binary:logistic`, ...).
    fn name(&self) -> &'static str;
    /// Margins per row: the class count for `multi:*`, else 1.
    fn outputs(&self) -> usize {
        1
    }
    /// Checks labels (and weights, groups) against the objective's range; the error names the row.
    fn validate(&self, info: &MetaInfo) -> Result<()>;
    /// Gradient and hessian of the loss for every margin (`rows * outputs`, row-major) into `out`.
    fn gradients(&self, margins: &[f32], info: &MetaInfo, iteration: usize, out: &mut [GradientPair<f32>]);
    /// Margins to what `predict` returns (probabilities, class ids, counts, ...).
    fn transform(&self, margins: &[f32]) -> Vec<f32>;
    /// Margins to what the metrics see (for `multi:softmax`: probabilities, not class ids).
    fn eval_transform(&self, margins: &[f32]) -> Vec<f32> {
        self.transform(margins)
    }
    /// `base_score` (in prediction space) to a margin.
    fn prob_to_margin(&self, base_score: f32) -> f32 {
        base_score
    }
    /// The `base_score` XGBoost estimates from the labels when none is given (prediction space).
    fn initial_base_score(&self, info: &MetaInfo) -> f32;
    /// XGBoost's default metric for this objective.
    fn default_metric(&self) -> &'static str;
    /// For objectives whose leaf values XGBoost recomputes after each tree (`reg:absoluteerror`):
    /// the new raw leaf value (before `eta`) of the leaf holding `rows`, given the margins before the
    /// tree. `None` keeps the tree builder's value.
    fn refresh_leaf(&self, _rows: &[u32], _margins: &[f32], _info: &MetaInfo) -> Option<f32> {
        None
    }
    /// The objective's parameters as XGBoost writes them in a model's `learner.objective`.
    fn to_json(&self) -> serde_json::Value;
}

/// The objective called `name`, configured from XGBoost-named parameters.
pub fn from_name(name: &str, _params: &[(String, String)]) -> Result<Box<dyn Objective>> {
    Err(Error::param("objective", format!("unknown objective `{name}`")))
}
