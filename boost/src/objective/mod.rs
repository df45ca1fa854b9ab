//! Objectives with XGBoost's names and semantics: gradients and hessians of the loss at the current
//! margins, the transformation of margins to predictions, the initial estimate of `base_score`, and
//! the default metric.
//!
//! With margin `m`, label `y`, row weight `w` (1 when none) and prediction `p = transform(m)`:
//!
//! | objective | gradient | hessian | transform |
//! |---|---|---|---|
//! | `reg:squarederror` | `(m - y) w'` | `w'` | identity |
//! | `reg:logistic`, `binary:logistic` | `(σ(m) - y) w'` | `max(σ(m)(1 - σ(m)), 1e-16) w'` | `σ` |
//! | `binary:logitraw` | as `binary:logistic` | | identity |
//! | `reg:pseudohubererror` | `z / √(1 + z²/δ²) w` | `δ² / ((δ² + z²) √(1 + z²/δ²)) w` | identity |
//! | `reg:absoluteerror` | `z c w`, `c = S / hypot(S, z)` | `c w` | identity |
//! | `reg:quantileerror` | `S (tanh x + 1 - 2α) w / 2`, `x = z / 0.04S` | `max(tanh x / x, 3e-4) w / 0.08` | row sorted |
//! | `reg:expectileerror` | output `j`: `σ(m_j) Σ_{k>=j} s_k (p_k - y) w`, `s_k = α_k` below `y`, `1 - α_k` above | `σ(m_j)² Σ_{k>=j} s_k w` | `p_k = p_{k-1} + 1e-6 + softplus(m_k)` |
//! | `reg:squaredlogerror` | `(l(m) - l(y)) / (m + 1) w` | `max((1 - l(m) + l(y)) / (m + 1)², 1e-6) w` | identity |
//! | `binary:hinge` | `-y± w` if `m y± < 1`, else 0 | `w`, else the least normal `f32` | `[m > 0]` |
//! | `count:poisson` | `(e^m - y) w` | `e^(m + max_delta_step) w` | `e^m` |
//! | `reg:gamma` | `(1 - y e^-m) w'` | `y e^-m w'` | `e^m` |
//! | `reg:tweedie` | `(-y e^((1-ρ)m) + e^((2-ρ)m)) w` | `(-y (1-ρ) e^((1-ρ)m) + (2-ρ) e^((2-ρ)m)) w` | `e^m` |
//! | `multi:softmax`, `multi:softprob` | `(p_k - [y = k]) w` | `max(2 p_k (1 - p_k) w, 1e-16)` | class id / `p` |
//! | `survival:cox` | Breslow's partial likelihood in `|y|` order, see `survival.rs` | | `e^m` |
//! | `survival:aft` | `-log` likelihood of `[y_lo, y_hi]` with `log T = m + σZ`, see `boost_kernels::survival` | | `e^m` |
//! | `rank:pairwise`, `rank:ndcg`, `rank:map` | LambdaMART, see `ranking.rs` | | identity |
//!
//! where `σ(x) = 1 / (1 + e^-x)`, `z = m - y`, `δ = huber_slope`, `p_k = softmax(m)_k`,
//! `l = log1p` (`m` floored at `-1 + 1e-6`), `y± = 2y - 1`, `ρ = tweedie_variance_power`, and
//! `w' = w * scale_pos_weight` on rows whose label is exactly 1 (XGBoost applies `scale_pos_weight`
//! in every `reg_loss_param` objective, squared error included), and `S` the round's scale of the
//! output, `(Σ w √|z| / Σ w)²` over every row (XGBoost 3.4; `scaled_residual.rs`), one output per
//! `quantile_alpha` `α`.
//!
//! **Numerics.** Gradients are computed in `f32` with plain IEEE arithmetic and one implementation
//! of each function, so the GPU backend, running this same code, gets bit-identical values: `e^x`
//! is [`boost_kernels::exp::expf`], glibc's algorithm, which XGBoost's CPU build calls (so sigmoid
//! and softmax outputs are XGBoost's bit for bit); `logf` and `sqrtf` are `libm`'s, which may differ
//! from the C library's in the last bit. Ranking follows XGBoost and works in `f64` before rounding
//! each pair's lambda to `f32`.
//!
//! **`base_score` estimation** (XGBoost 3.2's `InitEstimation`, each checked against
//! `learner_model_param.base_score` of a model trained by xgboost 3.2.0):
//! - squared error, logistic (all three), Poisson: the weighted mean of the labels (for
//!   `binary:logitraw` that mean is used as the margin itself, as XGBoost does). When
//!   `scale_pos_weight != 1` XGBoost instead takes one Newton step from margin 0 (`-ΣG/ΣH`) and
//!   transforms it (`σ` for the logistic ones): so do we.
//! - gamma and Tweedie: the weighted mean of the labels (gamma with `scale_pos_weight`: a Newton
//!   step through `e^m`).
//! - pseudo-Huber, squared log error and ranking: one Newton step from margin 0 (ranking gives
//!   ≈0); hinge: that step's sign, 1 or 0 (XGBoost transforms it as a prediction); Cox: `e^` of it.
//! - AFT: none, XGBoost's default 0.5.
//! - absolute error: the weighted label mean plus one Newton step from it (XGBoost 3.4).
//! - expectiles: the weighted label mean plus each alpha's Newton step from it, each at least the
//!   one below (XGBoost's `FitStump`).
//! - quantiles: each alpha's quantile of the labels (XGBoost's `Quantile`/`WeightedQuantile`, see
//!   [`weighted_quantile`]).
//! - multi-class: XGBoost 3.2 writes one value per class, `log(f_k + 1e-6)` of the weighted class
//!   frequencies `f_k`, centred to mean 0 (margins; `prob_to_margin` is the identity). That vector is
//!   [`Objective::initial_base_scores`]; the scalar `initial_base_score` of a multi-class objective
//!   is XGBoost's old constant 0.5.

mod expectile;
mod log_link;
mod multiclass;
pub(crate) mod ranking;
mod regression;
mod scaled_residual;
mod survival;

use boost_kernels::order;
pub use boost_kernels::predict::OutputTransform;
use primitives::ops::GradientPair;
use rayon::prelude::*;

pub use expectile::Expectile;
pub use log_link::{Gamma, Tweedie};
pub use multiclass::Softmax;
pub use ranking::{LambdaRank, PairMethod, RankKind};
pub use scaled_residual::{AbsoluteError, Quantile};
pub use survival::{Aft, Cox};
pub(crate) use survival::{check_bounds, check_label_bounds, with_bound_labels};
pub(crate) use survival::label_abs_order;
pub(crate) use scaled_residual::parse_alphas;
pub use regression::{
    Hinge, Logistic, LogisticKind, Poisson, PseudoHuber, SquaredError, SquaredLogError,
};

use crate::data::MetaInfo;
use crate::{Error, Result};

/// Every parameter name some objective reads from [`from_name`]'s `params` (XGBoost's names). Other
/// names are ignored by `from_name`; the caller checks unknown names against all its lists.
pub const OBJECTIVE_PARAMETERS: &[&str] = &[
    "scale_pos_weight",
    "huber_slope",
    "max_delta_step",
    "tweedie_variance_power",
    "quantile_alpha",
    "expectile_alpha",
    "aft_loss_distribution",
    "aft_loss_distribution_scale",
    "num_class",
    "lambdarank_pair_method",
    "lambdarank_num_pair_per_sample",
    "lambdarank_normalization",
    "lambdarank_score_normalization",
    "lambdarank_unbiased",
    "lambdarank_bias_norm",
    "ndcg_exp_gain",
];

/// The objective names the `objective` parameter takes.
pub const OBJECTIVE_NAMES: &[&str] = &[
    "reg:squarederror",
    "reg:squaredlogerror",
    "reg:logistic",
    "binary:logistic",
    "binary:logitraw",
    "binary:hinge",
    "reg:pseudohubererror",
    "reg:absoluteerror",
    "reg:quantileerror",
    "reg:expectileerror",
    "count:poisson",
    "reg:gamma",
    "reg:tweedie",
    "survival:cox",
    "survival:aft",
    "multi:softmax",
    "multi:softprob",
    "rank:pairwise",
    "rank:ndcg",
    "rank:map",
];

/// An objective whose gradients the device computes with the host's arithmetic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DeviceObjective {
    /// One margin a row: `boost_kernels::objective::gradients_kernel`.
    Elementwise(boost_kernels::objective::ElementwiseObjective),
    /// The softmax cross-entropy of `classes` margins a row:
    /// `boost_kernels::objective::softmax_gradients_kernel`.
    Softmax {
        /// Classes: margins a row.
        classes: usize,
    },
    /// LambdaMART over query groups: `boost_kernels::rank`'s `lambdarank_topk_kernel` (a warp per
    /// group) or, for `mean` pairs, `lambdarank_kernel` (a thread per group).
    LambdaRank(boost_kernels::rank::LambdaRankParams),
    /// Absolute error or quantiles, each output's scale summed first:
    /// `boost_kernels::residual::gradients_kernel`.
    ScaledResidual(boost_kernels::residual::ScaledResidual),
    /// `survival:aft` of the label bounds: `boost_kernels::survival::aft_gradients_kernel`.
    Aft(boost_kernels::survival::Aft),
    /// Expectiles, each output's pair from the row's every margin:
    /// `boost_kernels::expectile::gradients_kernel`.
    Expectile(boost_kernels::expectile::Expectiles),
}

impl DeviceObjective {
    /// Margins a row.
    pub fn outputs(&self) -> usize {
        match self {
            DeviceObjective::Softmax { classes } => *classes,
            DeviceObjective::ScaledResidual(o) => o.outputs as usize,
            DeviceObjective::Expectile(o) => o.outputs as usize,
            _ => 1,
        }
    }
}

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
    /// What `predict` makes of a row's margins (probabilities, class ids, counts, ...): one
    /// source for the host's [`Objective::transform`] and the device's.
    fn output_transform(&self) -> OutputTransform;
    /// Margins (`rows * outputs`, row-major) to what `predict` returns, by
    /// [`Objective::output_transform`].
    fn transform(&self, margins: &[f32]) -> Vec<f32> {
        let (transform, outputs) = (self.output_transform(), self.outputs().max(1));
        let per_row = transform.values_per_row(outputs);
        let mut out = vec![0f32; margins.len() / outputs * per_row];
        out.par_chunks_mut(per_row.max(1)).zip(margins.par_chunks(outputs)).for_each(|(out, row)| {
            transform.row(outputs, |c| row[c], |c, value| out[c] = value);
        });
        out
    }
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
    /// Whether the outputs are several targets of one label (`reg:quantileerror`'s quantiles:
    /// XGBoost's `num_target`) rather than classes (`num_class`).
    fn multi_target(&self) -> bool {
        false
    }
    /// The objective as the GPU backend's gradient kernels take it, for the objectives whose
    /// [`Objective::gradients`] is a kernel's arithmetic row by row (`None`: the gradients are
    /// computed on the host).
    fn device_objective(&self) -> Option<DeviceObjective> {
        None
    }
    /// [`Objective::eval_transform`] as the device applies it to each margin, for the objectives
    /// whose eval transform is that function row by row (`None`: the metrics run on the host).
    fn device_eval_transform(&self) -> Option<boost_kernels::metric::Transform> {
        None
    }
    /// The objective's parameters as XGBoost writes them in a model's `learner.objective`.
    fn to_json(&self) -> serde_json::Value;

    /// The estimated `base_score` as XGBoost 3.2 writes it in `learner_model_param.base_score`: one
    /// value per output for `multi:*` (the centred log class frequencies), else
    /// `[initial_base_score]`.
    fn initial_base_scores(&self, info: &MetaInfo) -> Vec<f32> {
        vec![self.initial_base_score(info)]
    }
    /// Checks a user-given `base_score` (prediction space): finite, and in the objective's range
    /// (`[0, 1]` for the logistic objectives, `>= 0` for Poisson). The error names `base_score`.
    fn check_base_score(&self, base_score: f32) -> Result<()> {
        if base_score.is_finite() {
            Ok(())
        } else {
            Err(Error::param("base_score", format!("must be finite, got {base_score}")))
        }
    }
    /// The default metric's full name as XGBoost prints it: `ndcg@32` for `rank:ndcg` with the
    /// default `topk` pairs (`default_metric` returns the bare `ndcg`). Build the metric itself with
    /// `metric::default_metric_for`, which also carries the objective's parameters over
    /// (truncation, `ndcg_exp_gain`, `huber_slope`) as XGBoost does.
    fn default_metric_name(&self) -> String {
        self.default_metric().to_string()
    }
}

/// The objective called `name`, configured from XGBoost-named parameters. Parameters the objective
/// does not read are ignored (see [`OBJECTIVE_PARAMETERS`]); a later duplicate overrides an earlier
/// one. Bad values are [`Error::InvalidParameter`] naming the parameter.
///
/// The supported names are [`OBJECTIVE_NAMES`].
pub fn from_name(name: &str, params: &[(String, String)]) -> Result<Box<dyn Objective>> {
    let p = Params(params);
    Ok(match name {
        "reg:squarederror" => Box::new(SquaredError::new(p.scale_pos_weight()?)),
        "reg:logistic" => Box::new(Logistic::new(LogisticKind::Regression, p.scale_pos_weight()?)),
        "binary:logistic" => Box::new(Logistic::new(LogisticKind::Binary, p.scale_pos_weight()?)),
        "binary:logitraw" => Box::new(Logistic::new(LogisticKind::Raw, p.scale_pos_weight()?)),
        "reg:pseudohubererror" => {
            let slope = p.f32("huber_slope")?.unwrap_or(1.0);
            if slope == 0.0 {
                return Err(Error::param("huber_slope", "must not be 0"));
            }
            Box::new(PseudoHuber::new(slope))
        }
        "reg:squaredlogerror" => Box::new(SquaredLogError),
        "binary:hinge" => Box::new(Hinge),
        "reg:gamma" => Box::new(Gamma::new(p.scale_pos_weight()?)),
        "reg:tweedie" => Box::new(Tweedie::new(p.f32("tweedie_variance_power")?.unwrap_or(1.5))?),
        "reg:absoluteerror" => Box::new(AbsoluteError),
        "survival:cox" => Box::new(Cox),
        "survival:aft" => Box::new(Aft::from_params(&p)?),
        "reg:expectileerror" => {
            let alphas =
                p.get("expectile_alpha").ok_or_else(|| Error::param("expectile_alpha", "required by reg:expectileerror"))?;
            Box::new(Expectile::new(parse_alphas("expectile_alpha", alphas)?)?)
        }
        "reg:quantileerror" => {
            let alphas = p.get("quantile_alpha").ok_or_else(|| Error::param("quantile_alpha", "required by reg:quantileerror"))?;
            Box::new(Quantile::new(parse_alphas("quantile_alpha", alphas)?)?)
        }
        "count:poisson" => {
            let step = p.f32("max_delta_step")?.unwrap_or(0.7);
            if step < 0.0 {
                return Err(Error::param("max_delta_step", format!("must be >= 0, got {step}")));
            }
            Box::new(Poisson::new(step))
        }
        "multi:softmax" | "multi:softprob" => {
            let classes = p.u32("num_class")?.ok_or_else(|| Error::param("num_class", "required by multi:*"))?;
            if classes < 1 {
                return Err(Error::param("num_class", "must be >= 1"));
            }
            Box::new(Softmax::new(classes as usize, name == "multi:softprob"))
        }
        "rank:pairwise" => Box::new(LambdaRank::from_params(RankKind::Pairwise, &p)?),
        "rank:ndcg" => Box::new(LambdaRank::from_params(RankKind::Ndcg, &p)?),
        "rank:map" => Box::new(LambdaRank::from_params(RankKind::Map, &p)?),
        _ => {
            return Err(Error::param(
                "objective",
                format!("unknown objective `{name}`; supported: {}", OBJECTIVE_NAMES.join(", ")),
            ))
        }
    })
}

/// Rebuilds an objective from a model's `learner.objective` (what [`Objective::to_json`] writes):
/// `{"name": ..., "<param_group>": {"<param>": "<value>", ...}}`. Errors are [`Error::Model`].
pub fn from_json(value: &serde_json::Value) -> Result<Box<dyn Objective>> {
    let object = value.as_object().ok_or_else(|| Error::Model("learner.objective: not an object".into()))?;
    let name = object
        .get("name")
        .and_then(|n| n.as_str())
        .ok_or_else(|| Error::Model("learner.objective.name: missing or not a string".into()))?;
    let mut params = Vec::new();
    for (group, entries) in object {
        if group == "name" {
            continue;
        }
        // Parameter groups are objects of strings; anything else (XGBoost's `ti+`/`tj-` arrays of the
        // unbiased ranking, which we do not support) is rejected by the parameters it comes with.
        let Some(entries) = entries.as_object() else { continue };
        for (key, v) in entries {
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => (if *b { "1" } else { "0" }).to_string(),
                _ => return Err(Error::Model(format!("learner.objective.{group}.{key}: not a string"))),
            };
            params.push((key.clone(), text));
        }
    }
    from_name(name, &params).map_err(|e| Error::Model(format!("learner.objective: {e}")))
}

/// XGBoost-named parameters, read with XGBoost's value syntax.
pub(crate) struct Params<'a>(pub(crate) &'a [(String, String)]);

impl Params<'_> {
    /// The last value given for `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.trim())
    }

    pub(crate) fn f32(&self, name: &str) -> Result<Option<f32>> {
        let Some(text) = self.get(name) else { return Ok(None) };
        match text.parse::<f32>() {
            Ok(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(Error::param(name, format!("expected a finite number, got `{text}`"))),
        }
    }

    pub(crate) fn f64(&self, name: &str) -> Result<Option<f64>> {
        let Some(text) = self.get(name) else { return Ok(None) };
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(Error::param(name, format!("expected a finite number, got `{text}`"))),
        }
    }

    pub(crate) fn u32(&self, name: &str) -> Result<Option<u32>> {
        let Some(text) = self.get(name) else { return Ok(None) };
        text.parse::<u32>()
            .map(Some)
            .map_err(|_| Error::param(name, format!("expected a non-negative integer, got `{text}`")))
    }

    /// dmlc's booleans: `true`/`false`/`1`/`0`, any case.
    pub(crate) fn bool(&self, name: &str) -> Result<Option<bool>> {
        let Some(text) = self.get(name) else { return Ok(None) };
        match text.to_ascii_lowercase().as_str() {
            "1" | "true" => Ok(Some(true)),
            "0" | "false" => Ok(Some(false)),
            _ => Err(Error::param(name, format!("expected true/false/1/0, got `{text}`"))),
        }
    }

    fn scale_pos_weight(&self) -> Result<f32> {
        let v = self.f32("scale_pos_weight")?.unwrap_or(1.0);
        if v < 0.0 {
            return Err(Error::param("scale_pos_weight", format!("must be >= 0, got {v}")));
        }
        Ok(v)
    }
}

pub use boost_kernels::objective::sigmoid;

/// The order XGBoost ranks scores in (`std::greater` under a stable sort): descending, `-0 == +0`,
/// and NaN (which XGBoost leaves undefined) after every number, so the order is total.
#[inline]
pub(crate) fn cmp_desc(a: f32, b: f32) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ => b.partial_cmp(&a).unwrap_or(std::cmp::Ordering::Equal),
    }
}

/// Indices of `values` in descending order, ties in their original order (XGBoost's
/// `ArgSort(..., std::greater<>)`, which is a stable sort).
pub(crate) fn argsort_desc(values: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| cmp_desc(values[a], values[b]));
    idx
}

/// XGBoost's quantile of `values` (`common::Quantile` without weights, `WeightedQuantile` with):
///
/// - unweighted: with `n` values sorted, `x = α (n + 1)`; `α <= 1/(n+1)` gives the smallest,
///   `α >= n/(n+1)` the largest, otherwise `v[⌊x⌋-1] + (x - ⌊x⌋)(v[⌊x⌋] - v[⌊x⌋-1])` (R's type 6);
///   the median of an even count is the mean of the middle two.
/// - weighted: no interpolation: the first sorted value whose cumulative weight (summed in `f32`) is
///   at least `α` times the total.
///
/// Values sort ascending, `-0 == +0`, NaN last, ties in their order here (the device's order, see
/// `boost_kernels::order`, whose functions compute the quantile of the sorted values). NaN for
/// no values. `weights`, when given, has one weight per value.
pub fn weighted_quantile(alpha: f64, values: &[f32], weights: Option<&[f32]>) -> f32 {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by_key(|&i| order::ascending_key(values[i]));
    let value = |i: usize| values[idx[i]];
    match weights {
        None => order::sorted_quantile(alpha, idx.len(), value),
        Some(w) => {
            order::sorted_weighted_quantile(alpha, idx.len(), value, |i| w.get(idx[i]).copied().unwrap_or(1.0))
        }
    }
}

/// One Newton step from margin 0, XGBoost's `FitIntercept`: `-ΣG / max(ΣH, 1e-6)` over all
/// outputs' gradients at zero margins (sums in `f64`, in row order), then averaged over outputs.
pub(crate) fn newton_intercept(objective: &dyn Objective, info: &MetaInfo) -> f32 {
    newton_step(objective, info, 0.0)
}

/// [`newton_intercept`] from margin `margin` instead of 0: the step, averaged over outputs.
pub(crate) fn newton_step(objective: &dyn Objective, info: &MetaInfo, margin: f32) -> f32 {
    let outputs = objective.outputs().max(1);
    let n = info.labels.len() * outputs;
    let margins = vec![margin; n];
    let mut gpair = vec![GradientPair::new(0.0f32, 0.0f32); n];
    objective.gradients(&margins, info, 0, &mut gpair);
    let mut mean = 0.0f64;
    for k in 0..outputs {
        let (mut g, mut h) = (0.0f64, 0.0f64);
        for p in gpair.iter().skip(k).step_by(outputs) {
            g += p.grad as f64;
            h += p.hess as f64;
        }
        mean += (-g / h.max(1e-6)) as f32 as f64;
    }
    (mean / outputs as f64) as f32
}

/// The weighted mean of the labels (XGBoost's `FitInterceptGlmLike`); 0 for no rows or zero weight.
pub(crate) fn weighted_label_mean(info: &MetaInfo) -> f32 {
    let (mut sy, mut sw) = (0.0f64, 0.0f64);
    for (i, &y) in info.labels.iter().enumerate() {
        let w = weight_of(info, i) as f64;
        sy += y as f64 * w;
        sw += w;
    }
    if sw > 0.0 {
        (sy / sw) as f32
    } else {
        0.0
    }
}

/// The weight of row `i`, 1 when weights are absent or too short (validation reports that).
#[inline]
pub(crate) fn weight_of(info: &MetaInfo, i: usize) -> f32 {
    if info.weights.is_empty() {
        1.0
    } else {
        info.weights.get(i).copied().unwrap_or(1.0)
    }
}

/// Labels finite; weights (one per row) finite and non-negative; base margins `rows * outputs`.
pub(crate) fn validate_rows(info: &MetaInfo, outputs: usize) -> Result<()> {
    let rows = info.labels.len();
    if let Some(i) = info.labels.iter().position(|y| !y.is_finite()) {
        return Err(Error::InvalidData(format!("row {i}: label {} is not finite", info.labels[i])));
    }
    if !info.weights.is_empty() {
        if info.weights.len() != rows {
            return Err(Error::InvalidData(format!("{} weights for {rows} rows", info.weights.len())));
        }
        check_weights(&info.weights, "row")?;
    }
    if !info.base_margin.is_empty() && info.base_margin.len() != rows * outputs {
        return Err(Error::InvalidData(format!(
            "{} base margins for {rows} rows with {outputs} outputs each",
            info.base_margin.len()
        )));
    }
    Ok(())
}

/// Weights must be finite and non-negative (XGBoost: "Weights must be positive values").
pub(crate) fn check_weights(weights: &[f32], unit: &str) -> Result<()> {
    if let Some(i) = weights.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
        return Err(Error::InvalidData(format!(
            "{unit} {i}: weight {} is not a finite non-negative number",
            weights[i]
        )));
    }
    Ok(())
}

/// C's `printf("%.*g", precision, v)`, which is how XGBoost (C++ streams with `precision`) writes
/// numbers: 9 significant digits for `f32` parameters (`0.7` -> `0.699999988`), 17 for `f64`, 6 for
/// metric names (`error@0.7`).
pub(crate) fn format_g(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let p = precision.max(1);
    // Rust's `{:e}` rounds the exact binary value correctly, as glibc's printf does.
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= p as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", strip(mantissa), sign, exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip(&format!("{:.*}", decimals, v))
    }
}

/// `f32` parameter as XGBoost writes it (`%.9g`).
pub(crate) fn format_f32(v: f32) -> String {
    format_g(v as f64, 9)
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;

    fn params(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn every_name_parses_and_round_trips_through_json() {
        for &name in OBJECTIVE_NAMES {
            let p = params(&[("num_class", "3"), ("quantile_alpha", "[0.25,0.75]"), ("expectile_alpha", "[0.2,0.6]")]);
            let obj = from_name(name, &p).unwrap();
            assert_eq!(obj.name(), name);
            let json = obj.to_json();
            let back = from_json(&json).unwrap();
            assert_eq!(back.name(), name);
            assert_eq!(back.to_json(), json, "{name}");
            // The default metric, with the objective's parameters, parses.
            crate::metric::default_metric_for(&*obj).unwrap();
        }
    }

    #[test]
    fn unknown_objective_and_bad_values_name_the_parameter() {
        let err = |name: &str, p: &[(&str, &str)]| match from_name(name, &params(p)) {
            Err(Error::InvalidParameter { name, .. }) => name,
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("accepted {p:?}"),
        };
        assert_eq!(err("reg:nope", &[]), "objective");
        assert_eq!(err("binary:logistic", &[("scale_pos_weight", "-1")]), "scale_pos_weight");
        assert_eq!(err("binary:logistic", &[("scale_pos_weight", "abc")]), "scale_pos_weight");
        assert_eq!(err("reg:squarederror", &[("scale_pos_weight", "nan")]), "scale_pos_weight");
        assert_eq!(err("reg:pseudohubererror", &[("huber_slope", "0")]), "huber_slope");
        assert_eq!(err("count:poisson", &[("max_delta_step", "-0.5")]), "max_delta_step");
        assert_eq!(err("reg:tweedie", &[("tweedie_variance_power", "2")]), "tweedie_variance_power");
        assert_eq!(err("reg:tweedie", &[("tweedie_variance_power", "0.9")]), "tweedie_variance_power");
        assert_eq!(err("reg:gamma", &[("scale_pos_weight", "-1")]), "scale_pos_weight");
        assert_eq!(err("multi:softmax", &[]), "num_class");
        assert_eq!(err("multi:softprob", &[("num_class", "0")]), "num_class");
        assert_eq!(err("multi:softprob", &[("num_class", "2.5")]), "num_class");
        assert_eq!(err("rank:ndcg", &[("lambdarank_pair_method", "all")]), "lambdarank_pair_method");
        assert_eq!(err("rank:ndcg", &[("lambdarank_num_pair_per_sample", "0")]), "lambdarank_num_pair_per_sample");
        assert_eq!(err("rank:ndcg", &[("lambdarank_unbiased", "true")]), "lambdarank_unbiased");
        assert_eq!(err("rank:map", &[("ndcg_exp_gain", "maybe")]), "ndcg_exp_gain");
        assert_eq!(err("rank:map", &[("lambdarank_bias_norm", "-1")]), "lambdarank_bias_norm");
    }

    #[test]
    fn foreign_parameters_are_ignored_and_the_last_duplicate_wins() {
        let p =
            params(&[("num_class", "x"), ("huber_slope", "0"), ("scale_pos_weight", "2"), ("scale_pos_weight", "3")]);
        let obj = from_name("binary:logistic", &p).unwrap();
        assert_eq!(obj.to_json()["reg_loss_param"]["scale_pos_weight"], "3");
    }

    #[test]
    fn json_shapes_match_xgboost() {
        // Shapes and values as xgboost 3.2.0 writes them in `save_config()["learner"]["objective"]`.
        let obj = |name: &str, p: &[(&str, &str)]| from_name(name, &params(p)).unwrap().to_json();
        assert_eq!(
            obj("binary:logistic", &[]),
            serde_json::json!({"name": "binary:logistic", "reg_loss_param": {"scale_pos_weight": "1"}})
        );
        assert_eq!(
            obj("reg:logistic", &[("scale_pos_weight", "0.1")])["reg_loss_param"]["scale_pos_weight"],
            "0.100000001"
        );
        assert_eq!(
            obj("reg:pseudohubererror", &[]),
            serde_json::json!({"name": "reg:pseudohubererror", "pseudo_huber_param": {"huber_slope": "1"}})
        );
        assert_eq!(obj("reg:absoluteerror", &[]), serde_json::json!({"name": "reg:absoluteerror"}));
        // xgboost 3.4.1's shapes of the objectives added for it.
        assert_eq!(obj("reg:squaredlogerror", &[]), serde_json::json!({"name": "reg:squaredlogerror"}));
        assert_eq!(obj("binary:hinge", &[]), serde_json::json!({"name": "binary:hinge"}));
        assert_eq!(
            obj("reg:gamma", &[]),
            serde_json::json!({"name": "reg:gamma", "reg_loss_param": {"scale_pos_weight": "1"}})
        );
        assert_eq!(
            obj("reg:tweedie", &[("tweedie_variance_power", "1.3")]),
            serde_json::json!({"name": "reg:tweedie", "tweedie_regression_param": {"tweedie_variance_power": "1.29999995"}})
        );
        assert_eq!(
            obj("count:poisson", &[]),
            serde_json::json!({"name": "count:poisson", "poisson_regression_param": {"max_delta_step": "0.699999988"}})
        );
        assert_eq!(
            obj("multi:softmax", &[("num_class", "3")]),
            serde_json::json!({"name": "multi:softmax", "softmax_multiclass_param": {"num_class": "3"}})
        );
        assert_eq!(
            obj("rank:ndcg", &[]),
            serde_json::json!({"name": "rank:ndcg", "lambdarank_param": {
                "lambdarank_bias_norm": "1", "lambdarank_normalization": "1",
                "lambdarank_num_pair_per_sample": "4294967295", "lambdarank_pair_method": "topk",
                "lambdarank_score_normalization": "1", "lambdarank_unbiased": "0", "ndcg_exp_gain": "1"}})
        );
        let j = obj("rank:pairwise", &[("lambdarank_bias_norm", "1e-9"), ("lambdarank_normalization", "False")]);
        assert_eq!(j["lambdarank_param"]["lambdarank_bias_norm"], "1.0000000000000001e-09");
        assert_eq!(j["lambdarank_param"]["lambdarank_normalization"], "0");
    }

    #[test]
    fn from_json_rejects_malformed_models() {
        assert!(matches!(from_json(&serde_json::json!([])), Err(Error::Model(_))));
        assert!(matches!(from_json(&serde_json::json!({"reg_loss_param": {}})), Err(Error::Model(_))));
        assert!(matches!(from_json(&serde_json::json!({"name": "reg:what"})), Err(Error::Model(_))));
        let bad = serde_json::json!({"name": "binary:logistic", "reg_loss_param": {"scale_pos_weight": [1]}});
        assert!(matches!(from_json(&bad), Err(Error::Model(_))));
        let bad = serde_json::json!({"name": "multi:softprob", "softmax_multiclass_param": {"num_class": "-2"}});
        assert!(matches!(from_json(&bad), Err(Error::Model(_))));
    }

    #[test]
    fn format_g_matches_printf() {
        // Values from xgboost 3.2.0's saved configs (scale_pos_weight as f32) and from C's printf.
        let cases32: &[(f32, &str)] = &[
            (0.1, "0.100000001"),
            (1e-7, "1.00000001e-07"),
            (1e10, "1e+10"),
            (123456789.0, "123456792"),
            (2.5, "2.5"),
            (3.0, "3"),
            (1e-5, "9.99999975e-06"),
            (1e-4, "9.99999975e-05"),
            (100000.0, "100000"),
            (1e16, "1.00000003e+16"),
            (0.7, "0.699999988"),
        ];
        for &(v, s) in cases32 {
            assert_eq!(format_f32(v), s, "{v}");
        }
        assert_eq!(format_g(0.5, 17), "0.5");
        assert_eq!(format_g(1e-9, 17), "1.0000000000000001e-09");
        assert_eq!(format_g(0.7f32 as f64, 6), "0.7");
        assert_eq!(format_g(1e-7f32 as f64, 6), "1e-07");
        assert_eq!(format_g(0.30000001f32 as f64, 6), "0.3");
        assert_eq!(format_g(-2.0, 6), "-2");
        assert_eq!(format_g(0.0001, 6), "0.0001");
        assert_eq!(format_g(999999.5, 6), "1e+06");
    }

    #[test]
    fn quantiles_follow_xgboost() {
        // Unweighted: R type 6 interpolation; weighted: first cumulative weight >= alpha * total.
        assert_eq!(weighted_quantile(0.5, &[3.0, 1.0, 2.0], None), 2.0);
        assert_eq!(weighted_quantile(0.5, &[4.0, 1.0, 3.0, 2.0], None), 2.5);
        assert_eq!(weighted_quantile(0.5, &[7.0], None), 7.0);
        assert_eq!(weighted_quantile(0.1, &[4.0, 1.0, 3.0, 2.0], None), 1.0);
        assert_eq!(weighted_quantile(0.9, &[4.0, 1.0, 3.0, 2.0], None), 4.0);
        assert!(weighted_quantile(0.5, &[], None).is_nan());
        // cdf 0.5, 2.0, 3.0, 5.0; threshold 2.5 -> third value (0.5).
        assert_eq!(weighted_quantile(0.5, &[5.0, -2.0, 0.5, 0.0], Some(&[2.0, 0.5, 1.0, 1.5])), 0.5);
        // All weights zero: threshold 0, the smallest value.
        assert_eq!(weighted_quantile(0.5, &[5.0, -2.0], Some(&[0.0, 0.0])), -2.0);
    }

    #[test]
    fn sigmoid_is_bounded_and_symmetric() {
        assert_eq!(sigmoid(0.0), 0.5);
        assert_eq!(sigmoid(-1000.0), 1.0 / (boost_kernels::exp::expf(88.7) + 1.0));
        assert_eq!(sigmoid(1000.0), 1.0);
        for &x in &[0.3f32, 1.7, 5.0] {
            assert!((sigmoid(x) + sigmoid(-x) - 1.0).abs() < 1e-6);
        }
    }

    #[test]
    fn argsort_is_stable_descending() {
        assert_eq!(argsort_desc(&[1.0, 3.0, 1.0, -0.0, 0.0, f32::NAN, 3.0]), vec![1, 6, 0, 2, 3, 4, 5]);
    }
}
