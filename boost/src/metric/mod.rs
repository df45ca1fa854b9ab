//! Evaluation metrics with XGBoost's names, defaults and tie handling.
//!
//! With prediction `p` (the objective's eval transform), label `y` and weight `w` (one per row; one
//! per query group for `ndcg`, `map` and ranking AUC):
//!
//! | name | value |
//! |---|---|
//! | `rmse`, `rmsle` | `√(Σ w e² / Σ w)`, `e = y - p` or `log1p(y) - log1p(p)` |
//! | `mae`, `mape` | `Σ w |e| / Σ w`, `e = y - p` or `(y - p) / y` |
//! | `mphe` | `Σ w δ² (√(1 + ((y - p)/δ)²) - 1) / Σ w`, `δ = huber_slope` (default 1) |
//! | `logloss` | `-Σ w (y log p + (1 - y) log(1 - p)) / Σ w`, logs of `max(·, 1e-16)`, `0 log 0 = 0` |
//! | `error`, `error@t` | weighted fraction with `p > t` (`t` = 0.5) counted as `1 - y`, else `y` |
//! | `poisson-nloglik` | `Σ w (lgamma(y + 1) + p - y log p) / Σ w`, `p >= 1e-16` |
//! | `gamma-nloglik` | `Σ w (y/p + log p) / Σ w`, `p >= 1e-6` |
//! | `gamma-deviance` | `2 Σ w (log(p'/y') + y'/p' - 1) / Σ w`, `p' = p + 1e-6`, `y' = y + 1e-6` |
//! | `tweedie-nloglik@ρ` | `Σ w (-y p^(1-ρ)/(1-ρ) + p^(2-ρ)/(2-ρ)) / Σ w`, `1 <= ρ < 2` |
//! | `quantile` | `Σ w ρ_α(y - p) / Σ w` over every (row, `quantile_alpha`), the pinball loss `ρ` |
//! | `expectile` | `Σ w s_α (p - y)² / Σ w` over every (row, `expectile_alpha`), `s_α = 1 - α` above `y`, else `α` |
//! | `cox-nloglik` | the Cox model's negative log partial likelihood per event, see `survival.rs` |
//! | `aft-nloglik` | `Σ w loss(y_lo, y_hi, m) / Σ w` of the margins, `boost_kernels::survival`'s loss |
//! | `interval-regression-accuracy` | weighted fraction with `y_lo <= e^m <= y_hi` |
//! | `merror`, `mlogloss` | argmax (first of equal maxima) `!= y`; `-log(max(p_y, 1e-16))` |
//! | `auc`, `aucpr` | see `auc.rs`: binary, one-vs-rest for multi-class, per group for ranking |
//! | `ndcg[@k][-]`, `map[@k][-]` | see `rank.rs`: mean over groups, weighted by group |
//!
//! Like XGBoost, the per-row loss is computed in `f32` (with `libm`) and summed in `f64`; a zero
//! total weight leaves the sum undivided. Sums are `boost_kernels::reduce`'s fixed-order blocked
//! sums (blocks in parallel, combined in order), so results depend neither on the number of threads
//! nor on the backend: the GPU computes the row-wise metrics (multi-class ones included) and the
//! binary `auc`/`aucpr` (sorted with our radix sort, see `auc.rs`) and a ranking objective's `ndcg`
//! and `map` (each query group ranked by our segmented sort, see `rank.rs`) of the training and
//! evaluation sets on the device ([`Metric::device_metric`]) with the same arithmetic and gets the
//! same value.
//!
//! XGBoost parameters reach metrics from the training parameters: `huber_slope` (`mphe`),
//! `ndcg_exp_gain` (`ndcg`), `quantile_alpha` (`quantile`), `expectile_alpha` (`expectile`),
//! `aft_loss_distribution` and
//! `aft_loss_distribution_scale` (`aft-nloglik`), see [`METRIC_PARAMETERS`] and [`from_name_with_params`]. The default
//! metric of an objective also inherits the objective's ranking truncation: use
//! [`default_metric_for`].

mod auc;
mod elementwise;
mod multiclass;
mod quantile;
mod rank;
mod survival;

use boost_kernels::auc::AucCurve;
use boost_kernels::metric::{ElementwiseMetric, MultiClassMetric};
use boost_kernels::rank_metric::RankMetricParams;
use boost_kernels::reduce::{self, BlockSum};
use rayon::prelude::*;

use crate::data::MetaInfo;
use crate::objective::{format_g, parse_alphas, Objective, Params};
use crate::{Error, Result};

pub(crate) use auc::{auc_scales, one_vs_rest};
pub use auc::{Auc, AucKind};
pub use elementwise::{Elementwise, ElementwiseKind};
pub use multiclass::{MultiClass, MultiClassKind};
pub use quantile::QuantileLoss;
pub use survival::{AftMetric, CoxNegLogLik};
pub use rank::{RankMetric, RankMetricKind};

/// Training parameters (XGBoost names) that [`from_name_with_params`] reads (`quantile_alpha`:
/// the `quantile` metric's alphas, which it needs).
pub const METRIC_PARAMETERS: &[&str] =
    &["huber_slope", "ndcg_exp_gain", "quantile_alpha", "expectile_alpha", "aft_loss_distribution", "aft_loss_distribution_scale"];

/// What a metric is computed from: XGBoost's built-in metrics take the objective's evaluation
/// transform of the margins; its Python `custom_metric` takes what `predict` gives, or the margins
/// when the objective is custom too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetricInput {
    /// The objective's evaluation transform (`Objective::eval_transform`: probabilities).
    #[default]
    EvalTransform,
    /// The objective's prediction transform (`Objective::transform`: what `predict` gives, a
    /// class index for `multi:softmax`).
    Prediction,
    /// The raw margins.
    Margins,
}

/// An evaluation metric.
pub trait Metric: Send + Sync {
    /// The name as XGBoost prints it in the eval log (`auc`, `ndcg@10`, ...).
    fn name(&self) -> String;
    /// Whether larger values are better (for early stopping).
    fn higher_is_better(&self) -> bool;
    /// The metric of `predictions` (the objective's eval transform of the margins, `rows * outputs`
    /// row-major) against `info`'s labels, weights and groups.
    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, outputs: usize) -> f64;
    /// Checks that `evaluate` can take this data (prediction count, label range, weights per row or
    /// per group), naming the row or group at fault. `evaluate` on data that fails here returns NaN
    /// where XGBoost would stop with an error.
    fn check(&self, _predictions: usize, _info: &MetaInfo, _outputs: usize) -> Result<()> {
        Ok(())
    }
    /// What `evaluate`'s `predictions` are.
    fn input(&self) -> MetricInput {
        MetricInput::EvalTransform
    }
    /// The metric as the device computes it from the margins (the same arithmetic and summation
    /// order as `evaluate`, so the same value); `None` for those the host computes.
    fn device_metric(&self) -> Option<DeviceMetric> {
        None
    }
}

/// A metric the device computes from the margins, row by row, with the host's arithmetic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DeviceMetric {
    /// One prediction a row, the objective's element-wise eval transform of the margin.
    Elementwise(ElementwiseMetric),
    /// The softmax probabilities of a row's margins (`merror`, `mlogloss`).
    MultiClass(MultiClassMetric),
    /// `auc` or `aucpr` without query groups: binary, or one-vs-rest over a softmax's classes.
    Auc(AucCurve),
    /// `ndcg` or `map` of a ranking objective's margins, per query group.
    Rank(RankMetricParams),
}

/// The metric called `name` (`ndcg@10`, `map@5-`, `error@0.7`, ... included), with XGBoost's
/// defaults for the parameters of [`from_name_with_params`].
pub fn from_name(name: &str) -> Result<Box<dyn Metric>> {
    from_name_with_params(name, &[])
}

/// The metrics `eval_metric` takes, by XGBoost's names (`error@t`, `ndcg@k`, `ndcg@k-`, `map@k`
/// take an argument; `tweedie-nloglik@ρ` needs one).
pub const METRIC_NAMES: [&str; 23] = [
    "rmse",
    "rmsle",
    "mae",
    "mape",
    "mphe",
    "logloss",
    "error",
    "poisson-nloglik",
    "gamma-nloglik",
    "gamma-deviance",
    "tweedie-nloglik",
    "quantile",
    "expectile",
    "cox-nloglik",
    "aft-nloglik",
    "interval-regression-accuracy",
    "merror",
    "mlogloss",
    "auc",
    "aucpr",
    "ndcg",
    "map",
    "pre",
];

/// The metric called `name`, reading `huber_slope` and `ndcg_exp_gain` from `params` (other names
/// are ignored) as XGBoost configures metrics from the training parameters. Names:
/// `rmse`, `rmsle`, `mae`, `mape`, `mphe`, `logloss`, `error`, `error@t`, `poisson-nloglik`,
/// `gamma-nloglik`, `gamma-deviance`, `tweedie-nloglik@ρ`,
/// `merror`, `mlogloss`, `auc`, `aucpr`, and `ndcg`/`map` with optional `@k` and trailing `-`
/// (`ndcg`, `ndcg-`, `ndcg@5`, `ndcg@5-`, `ndcg@-`). A bare `ndcg` or `map` is truncated at 32
/// documents, as in XGBoost 3.x.
pub fn from_name_with_params(name: &str, params: &[(String, String)]) -> Result<Box<dyn Metric>> {
    let p = Params(params);
    let bad = |reason: String| Error::param("eval_metric", reason);
    let (base, arg) = match name.split_once('@') {
        Some((b, a)) => (b, Some(a)),
        // XGBoost 3.x takes `ndcg-` for `ndcg@-`.
        None => match name.strip_suffix('-') {
            Some(b) if b == "ndcg" || b == "map" || b == "pre" => (b, Some("-")),
            _ => (name, None),
        },
    };
    let no_arg = |m: Box<dyn Metric>| -> Result<Box<dyn Metric>> {
        match arg {
            None => Ok(m),
            Some(a) => Err(bad(format!("metric `{base}` takes no `@{a}`"))),
        }
    };
    match base {
        "rmse" => no_arg(Box::new(Elementwise::new(ElementwiseKind::Rmse))),
        "rmsle" => no_arg(Box::new(Elementwise::new(ElementwiseKind::Rmsle))),
        "mae" => no_arg(Box::new(Elementwise::new(ElementwiseKind::Mae))),
        "mape" => no_arg(Box::new(Elementwise::new(ElementwiseKind::Mape))),
        "mphe" => {
            let slope = p.f32("huber_slope")?.unwrap_or(1.0);
            if slope == 0.0 {
                return Err(Error::param("huber_slope", "must not be 0"));
            }
            no_arg(Box::new(Elementwise::new(ElementwiseKind::Mphe { slope })))
        }
        "logloss" => no_arg(Box::new(Elementwise::new(ElementwiseKind::LogLoss))),
        "poisson-nloglik" => no_arg(Box::new(Elementwise::new(ElementwiseKind::PoissonNegLogLik))),
        "gamma-nloglik" => no_arg(Box::new(Elementwise::new(ElementwiseKind::GammaNegLogLik))),
        "gamma-deviance" => no_arg(Box::new(Elementwise::new(ElementwiseKind::GammaDeviance))),
        "tweedie-nloglik" => {
            // XGBoost reads the power with `atof` into an `f32` and requires `1 <= ρ < 2`.
            let rho = arg.and_then(|a| a.trim().parse::<f64>().ok()).map(|r| r as f32);
            match rho {
                Some(rho) if (1.0..2.0).contains(&rho) => {
                    Ok(Box::new(Elementwise::new(ElementwiseKind::TweedieNegLogLik { rho })))
                }
                _ => Err(bad(format!("`{name}`: write tweedie-nloglik@ρ with a variance power 1 <= ρ < 2"))),
            }
        }
        "error" => {
            let threshold = match arg {
                None => None,
                Some(a) => match a.trim().parse::<f32>() {
                    Ok(t) if t.is_finite() => Some(t),
                    _ => return Err(bad(format!("`{name}`: the threshold `{a}` is not a number"))),
                },
            };
            Ok(Box::new(Elementwise::new(ElementwiseKind::Error { threshold })))
        }
        "quantile" => {
            let alphas = p.get("quantile_alpha").ok_or_else(|| Error::param("quantile_alpha", "required by the quantile metric"))?;
            no_arg(Box::new(QuantileLoss::new(crate::objective::Quantile::new(parse_alphas("quantile_alpha", alphas)?)?.alphas().to_vec())))
        }
        "expectile" => {
            let alphas =
                p.get("expectile_alpha").ok_or_else(|| Error::param("expectile_alpha", "required by the expectile metric"))?;
            let objective = crate::objective::Expectile::new(parse_alphas("expectile_alpha", alphas)?)?;
            no_arg(Box::new(QuantileLoss::expectiles(objective.alphas().to_vec())))
        }
        "cox-nloglik" => no_arg(Box::new(CoxNegLogLik)),
        "aft-nloglik" => no_arg(Box::new(AftMetric::negative_log_likelihood(crate::objective::Aft::from_params(&p)?.loss()))),
        "interval-regression-accuracy" => no_arg(Box::new(AftMetric::interval_accuracy())),
        "merror" => no_arg(Box::new(MultiClass::new(MultiClassKind::Error))),
        "mlogloss" => no_arg(Box::new(MultiClass::new(MultiClassKind::LogLoss))),
        "auc" => no_arg(Box::new(Auc::new(AucKind::Roc))),
        "aucpr" => no_arg(Box::new(Auc::new(AucKind::Pr))),
        "ndcg" | "map" => {
            let kind = if base == "ndcg" { RankMetricKind::Ndcg } else { RankMetricKind::Map };
            let (top_k, minus) = parse_rank_arg(arg).map_err(|r| bad(format!("`{name}`: {r}")))?;
            let exp_gain = p.bool("ndcg_exp_gain")?.unwrap_or(true);
            Ok(Box::new(RankMetric::new(kind, top_k.or(Some(rank::DEFAULT_TOP_K)), top_k, minus, exp_gain)))
        }
        "pre" => {
            let (top_k, minus) = parse_rank_arg(arg).map_err(|r| bad(format!("`{name}`: {r}")))?;
            Ok(Box::new(rank::Precision::new(top_k.unwrap_or(rank::DEFAULT_TOP_K), top_k, minus)))
        }
        _ => Err(bad(format!("unknown metric `{name}`; supported: {}", METRIC_NAMES.join(", ")))),
    }
}

/// `k`, `k-`, `-` or nothing: the truncation (if given) and the minus flag.
fn parse_rank_arg(arg: Option<&str>) -> std::result::Result<(Option<u32>, bool), String> {
    let Some(arg) = arg else { return Ok((None, false)) };
    let (digits, minus) = match arg.strip_suffix('-') {
        Some(d) => (d, true),
        None => (arg, false),
    };
    if digits.is_empty() {
        return Ok((None, minus));
    }
    match digits.parse::<u32>() {
        Ok(k) if k >= 1 && k != u32::MAX => Ok((Some(k), minus)),
        _ => Err(format!("`{digits}` is not a truncation (an integer >= 1)")),
    }
}

/// The metric XGBoost evaluates when no `eval_metric` is given: the objective's
/// [`Objective::default_metric_name`], configured with the objective's parameters (its `huber_slope`
/// for `mphe`; for the ranking objectives its `ndcg_exp_gain` and its truncation, so that with
/// `lambdarank_pair_method = mean` the default `ndcg` covers the whole list, unlike a bare `ndcg`
/// given by name).
pub fn default_metric_for(objective: &dyn Objective) -> Result<Box<dyn Metric>> {
    let json = objective.to_json();
    let name = objective.default_metric_name();
    if let Some(lp) = json.get("lambdarank_param") {
        let field = |k: &str| lp.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let exp_gain = field("ndcg_exp_gain") != "0";
        let top_k = match field("lambdarank_pair_method") {
            "mean" => None,
            _ => match field("lambdarank_num_pair_per_sample").parse::<u32>() {
                Ok(k) if k != u32::MAX => Some(k),
                _ => Some(rank::DEFAULT_TOP_K),
            },
        };
        let kind = if objective.default_metric() == "map" { RankMetricKind::Map } else { RankMetricKind::Ndcg };
        return Ok(Box::new(RankMetric::new(kind, top_k, top_k, false, exp_gain)));
    }
    from_name_with_params(&name, &objective_metric_params(objective))
}

/// The objective's parameters that metrics read (its `huber_slope`, its `quantile_alpha`), as
/// XGBoost configures a model's metrics with them.
pub fn objective_metric_params(objective: &dyn Objective) -> Vec<(String, String)> {
    let json = objective.to_json();
    let field = |group: &str, name: &str| {
        let value = json.get(group).and_then(|p| p.get(name)).and_then(|v| v.as_str())?;
        Some((name.to_string(), value.to_string()))
    };
    [
        field("pseudo_huber_param", "huber_slope"),
        field("quantile_loss_param", "quantile_alpha"),
        field("expectile_loss_param", "expectile_alpha"),
        field("aft_loss_param", "aft_loss_distribution"),
        field("aft_loss_param", "aft_loss_distribution_scale"),
    ]
    .into_iter()
        .flatten()
        .collect()
}

/// `Σ f(i)` over `i < n` with the fixed-order blocked sums of [`boost_kernels::reduce`] (the order
/// the device adds in): the blocks in parallel, then their sums in block order, so the result is the
/// same on any thread count and on the GPU.
pub(crate) fn fixed_order_sum<T: BlockSum + Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> T {
    let blocks: Vec<T> = (0..reduce::blocks(n)).into_par_iter().map(|b| reduce::block_sum(n, b, &f)).collect();
    blocks.into_iter().fold(T::zero(), BlockSum::plus)
}

/// Weights per row must match the rows and be finite and non-negative.
pub(crate) fn check_row_weights(info: &MetaInfo) -> Result<()> {
    let rows = info.labels.len();
    if !info.weights.is_empty() && info.weights.len() != rows {
        return Err(Error::InvalidData(format!("{} weights for {rows} rows", info.weights.len())));
    }
    crate::objective::check_weights(&info.weights, "row")
}

/// The prediction count must be `rows * outputs`.
pub(crate) fn check_prediction_count(predictions: usize, info: &MetaInfo, outputs: usize) -> Result<()> {
    let want = info.labels.len() * outputs.max(1);
    if predictions != want {
        return Err(Error::InvalidData(format!(
            "{predictions} predictions for {} rows with {} outputs each",
            info.labels.len(),
            outputs.max(1)
        )));
    }
    Ok(())
}

/// Metric names format thresholds as C++ streams do (6 significant digits).
pub(crate) fn format_threshold(t: f32) -> String {
    format_g(t as f64, 6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective;

    #[test]
    fn names_parse_and_print_as_xgboost() {
        // Printed names as in xgboost 3.2.0's eval log.
        let cases = [
            ("rmse", "rmse"),
            ("rmsle", "rmsle"),
            ("mae", "mae"),
            ("mape", "mape"),
            ("mphe", "mphe"),
            ("logloss", "logloss"),
            ("error", "error"),
            ("error@0.5", "error"),
            ("error@0.7", "error@0.7"),
            ("error@0.30000001", "error@0.3"),
            ("error@1e-7", "error@1e-07"),
            ("poisson-nloglik", "poisson-nloglik"),
            ("merror", "merror"),
            ("mlogloss", "mlogloss"),
            ("auc", "auc"),
            ("aucpr", "aucpr"),
            ("ndcg", "ndcg"),
            ("ndcg-", "ndcg-"),
            ("ndcg@-", "ndcg-"),
            ("ndcg@3", "ndcg@3"),
            ("ndcg@3-", "ndcg@3-"),
            ("map", "map"),
            ("map-", "map-"),
            ("map@5", "map@5"),
        ];
        for (name, printed) in cases {
            assert_eq!(from_name(name).unwrap().name(), printed, "{name}");
        }
        for bad in ["rmse@2", "nope", "ndcg@0", "ndcg@x", "ndcg@3x", "error@abc", "map@-1", "auc-", ""] {
            assert!(matches!(from_name(bad), Err(Error::InvalidParameter { .. })), "{bad}");
        }
        let higher = ["auc", "aucpr", "ndcg", "map@3"];
        for name in [
            "rmse",
            "mae",
            "logloss",
            "error",
            "merror",
            "mlogloss",
            "poisson-nloglik",
            "auc",
            "aucpr",
            "ndcg",
            "map@3",
        ] {
            assert_eq!(from_name(name).unwrap().higher_is_better(), higher.contains(&name), "{name}");
        }
        let p = vec![("huber_slope".to_string(), "0".to_string())];
        assert!(matches!(from_name_with_params("mphe", &p), Err(Error::InvalidParameter { .. })));
    }

    #[test]
    fn default_metrics_follow_the_objective() {
        let obj = |name: &str, p: &[(&str, &str)]| {
            let p: Vec<(String, String)> = p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            objective::from_name(name, &p).unwrap()
        };
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            ("reg:squarederror", &[], "rmse"),
            ("reg:logistic", &[], "rmse"),
            ("binary:logistic", &[], "logloss"),
            ("binary:logitraw", &[], "logloss"),
            ("reg:pseudohubererror", &[], "mphe"),
            ("reg:absoluteerror", &[], "mae"),
            ("count:poisson", &[], "poisson-nloglik"),
            ("multi:softmax", &[("num_class", "3")], "mlogloss"),
            ("multi:softprob", &[("num_class", "3")], "mlogloss"),
            ("rank:pairwise", &[], "ndcg@32"),
            ("rank:ndcg", &[], "ndcg@32"),
            ("rank:ndcg", &[("lambdarank_num_pair_per_sample", "3")], "ndcg@3"),
            ("rank:ndcg", &[("lambdarank_pair_method", "mean")], "ndcg"),
            ("rank:map", &[], "map@32"),
        ];
        for (name, p, metric) in cases {
            let o = obj(name, p);
            assert_eq!(default_metric_for(&*o).unwrap().name(), *metric, "{name}");
            assert_eq!(o.default_metric_name(), *metric, "{name}");
        }
    }

    #[test]
    fn fixed_order_sum_is_exact_for_integers_and_ordered() {
        use boost_kernels::metric::LossSum;
        let n = 3 * reduce::SUM_BLOCK + 17;
        let sums = fixed_order_sum(n, |i| LossSum { loss: i as f64, weight: 1.0 });
        assert_eq!(sums.loss, (n * (n - 1) / 2) as f64);
        assert_eq!(sums.weight, n as f64);
        assert_eq!(fixed_order_sum(0, |_| LossSum { loss: 1.0, weight: 1.0 }), LossSum::default());
    }
}
