//! `ndcg` and `map` with XGBoost 3.x's truncation, gains, tie order and conventions.
//!
//! In each query group (the whole dataset when no groups are set) the documents are ranked by
//! prediction, descending, ties in input order (a stable sort: tied predictions are not averaged).
//! With truncation `k` (`@k`; 32 when the name has none, XGBoost's default; the whole list for the
//! default metric of a `mean`-pairs ranking objective):
//!
//! - `NDCG@k = Σ_{i<k} G(y_(i)) D(i) / IDCG@k`, `G(y) = 2^y - 1` (or `y` with
//!   `ndcg_exp_gain = false`), `D(i) = 1 / log2(i + 2)`, IDCG the same sum over the labels sorted
//!   descending. A group without any gain (IDCG = 0) scores 1, or 0 for the `-` variants; XGBoost
//!   adds that 1 to the weighted sum without the group's weight (its weight still counts in the
//!   denominator), and so do we.
//! - `AP@k = Σ_{i<k} y_(i) · hits(i) / (i + 1) / min(hits, k)` with binary labels, `hits(i)` the
//!   relevant documents among the first `i + 1`, `hits` those of the whole group. No relevant
//!   document: 1, or 0 for the `-` variants.
//!
//! The result is the mean over groups weighted by the group weights (one per group), capped at 1.
//! A group's term is `boost_kernels::rank_metric::group_term`, which the device runs too, and the
//! terms are summed in the fixed order of `boost_kernels::reduce`, so the device's value is this one.

use boost_kernels::metric::LossSum;
use boost_kernels::rank_metric::{finish, group_term, RankMetricParams};

use super::{check_prediction_count, fixed_order_sum, DeviceMetric, Metric};
use crate::data::MetaInfo;
use crate::objective::{argsort_desc, check_weights, cmp_desc};
use crate::{Error, Result};

/// Truncation of a bare `ndcg`/`map` (XGBoost's `LambdaRankParam` default for `topk`).
pub(crate) const DEFAULT_TOP_K: u32 = 32;

/// NDCG or MAP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankMetricKind {
    /// Normalised discounted cumulative gain (`ndcg`).
    Ndcg,
    /// Mean average precision (`map`).
    Map,
}

/// `ndcg[@k][-]` or `map[@k][-]`.
#[derive(Clone, Debug)]
pub struct RankMetric {
    kind: RankMetricKind,
    /// Documents evaluated per group; `None`: all.
    truncation: Option<u32>,
    /// The `k` of the printed name (`None` for a bare `ndcg`, which still truncates at 32).
    name_k: Option<u32>,
    minus: bool,
    exp_gain: bool,
}

impl RankMetric {
    /// `truncation` is what is evaluated, `name_k` what the name shows.
    pub fn new(
        kind: RankMetricKind,
        truncation: Option<u32>,
        name_k: Option<u32>,
        minus: bool,
        exp_gain: bool,
    ) -> Self {
        Self { kind, truncation, name_k, minus, exp_gain }
    }

    /// The group offsets (one group of all rows without groups).
    fn groups(info: &MetaInfo) -> Vec<usize> {
        if info.group_ptr.is_empty() {
            vec![0, info.labels.len()]
        } else {
            info.group_ptr.clone()
        }
    }

    /// The metric as the device takes it.
    pub(crate) fn kernel_params(&self) -> RankMetricParams {
        RankMetricParams {
            kind: match self.kind {
                RankMetricKind::Ndcg => RankMetricParams::NDCG,
                RankMetricKind::Map => RankMetricParams::MAP,
            },
            truncation: self.truncation.unwrap_or(RankMetricParams::WHOLE),
            minus: self.minus as u32,
            exp_gain: self.exp_gain as u32,
        }
    }

    /// The group's term of the sums ([`group_term`]: the device's arithmetic), its documents ranked
    /// by prediction and its labels sorted, both descending and stable.
    fn group_term(&self, predictions: &[f32], labels: &[f32], weight: f32) -> LossSum {
        let rank = argsort_desc(predictions);
        let mut ideal = labels.to_vec();
        ideal.sort_by(|a, b| cmp_desc(*a, *b));
        group_term(&self.kernel_params(), labels.len(), |i| labels[rank[i]], |i| ideal[i], weight)
    }
}

impl Metric for RankMetric {
    fn name(&self) -> String {
        let mut name = String::from(match self.kind {
            RankMetricKind::Ndcg => "ndcg",
            RankMetricKind::Map => "map",
        });
        if let Some(k) = self.name_k {
            name.push_str(&format!("@{k}"));
        }
        if self.minus {
            name.push('-');
        }
        name
    }

    fn higher_is_better(&self) -> bool {
        true
    }

    /// One prediction per row; groups partitioning the rows; one weight per group; NDCG with the
    /// exponential gain: relevance degrees, integers in `[0, 31]`; MAP: labels 0 or 1.
    fn check(&self, predictions: usize, info: &MetaInfo, outputs: usize) -> Result<()> {
        let labels = match self.kind {
            RankMetricKind::Ndcg if self.exp_gain => Labels::Degrees,
            RankMetricKind::Map => Labels::Binary,
            _ => Labels::Any,
        };
        check_ranking(&self.name(), labels, predictions, info, outputs)
    }

    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, outputs: usize) -> f64 {
        if self.check(predictions.len(), info, outputs).is_err() {
            return f64::NAN;
        }
        let g = Self::groups(info);
        let weight = |i: usize| info.weights.get(i).copied().unwrap_or(1.0);
        let sums = fixed_order_sum(g.len() - 1, |i| {
            let rows = g[i]..g[i + 1];
            self.group_term(&predictions[rows.clone()], &info.labels[rows], weight(i))
        });
        finish(sums)
    }

    fn device_metric(&self) -> Option<DeviceMetric> {
        Some(DeviceMetric::Rank(self.kernel_params()))
    }
}

/// The labels a ranking metric takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Labels {
    Any,
    /// Relevance degrees, integers in `[0, 31]` (NDCG's exponential gain).
    Degrees,
    /// 0 or 1.
    Binary,
}

/// The checks of metric `name` on ranked rows: one prediction per row; groups partitioning the
/// rows; one weight per group; `labels`.
fn check_ranking(name: &str, labels: Labels, predictions: usize, info: &MetaInfo, outputs: usize) -> Result<()> {
    if outputs > 1 {
        return Err(Error::InvalidData(format!("{name} takes one prediction per row, not {outputs}")));
    }
    check_prediction_count(predictions, info, 1)?;
    let rows = info.labels.len();
    let g = RankMetric::groups(info);
    if g[0] != 0 || g[g.len() - 1] != rows || g.windows(2).any(|w| w[1] < w[0]) {
        return Err(Error::InvalidData(format!("the query groups do not partition the {rows} rows")));
    }
    let groups = g.len() - 1;
    if !info.weights.is_empty() && info.weights.len() != groups {
        return Err(Error::InvalidData(format!(
            "{} weights for {groups} query groups ({name} takes one weight per group)",
            info.weights.len()
        )));
    }
    check_weights(&info.weights, "group")?;
    let eps = 1e-6f32;
    match labels {
        Labels::Degrees => {
            let bad = |y: f32| (libm::floorf(y) - y).abs() > eps || !(0.0..=31.0).contains(&libm::floorf(y));
            if let Some(i) = info.labels.iter().position(|&y| bad(y)) {
                return Err(Error::InvalidData(format!(
                    "row {i}: label {} is not a relevance degree in [0, 31] (set ndcg_exp_gain = false for other \
                     gains)",
                    info.labels[i]
                )));
            }
        }
        Labels::Binary => {
            if let Some(i) = info.labels.iter().position(|&y| !((y - 1.0).abs() < eps || y.abs() < eps)) {
                return Err(Error::InvalidData(format!("row {i}: label {} is not 0 or 1, which {name} requires", info.labels[i])));
            }
        }
        Labels::Any => {}
    }
    Ok(())
}

/// `pre[@k][-]`: precision at `k` (XGBoost's `EvalPrecision`): in each query group (all rows
/// without groups), the share of the `min(k, size)` best-ranked documents whose label is 1, the
/// groups averaged by weight; a bare `pre` takes 32. Labels must be 0 or 1. A host metric.
#[derive(Clone, Debug)]
pub struct Precision {
    truncation: u32,
    name_k: Option<u32>,
    minus: bool,
}

impl Precision {
    /// Precision at `truncation` documents; `name_k` and `minus` are what the name shows.
    pub fn new(truncation: u32, name_k: Option<u32>, minus: bool) -> Self {
        Self { truncation, name_k, minus }
    }
}

impl Metric for Precision {
    fn name(&self) -> String {
        let k = self.name_k.map(|k| format!("@{k}")).unwrap_or_default();
        format!("pre{k}{}", if self.minus { "-" } else { "" })
    }

    fn higher_is_better(&self) -> bool {
        true
    }

    /// As [`RankMetric`]'s for `map`: groups partitioning the rows, a weight a group, labels 0 or 1.
    fn check(&self, predictions: usize, info: &MetaInfo, outputs: usize) -> Result<()> {
        check_ranking(&self.name(), Labels::Binary, predictions, info, outputs)
    }

    /// XGBoost's sums: each group's hits times its weight over `min(k, size)`, in `f64`, added in
    /// group order, over the sum of the weights.
    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, outputs: usize) -> f64 {
        if self.check(predictions.len(), info, outputs).is_err() {
            return f64::NAN;
        }
        let g = RankMetric::groups(info);
        let weight = |i: usize| info.weights.get(i).copied().unwrap_or(1.0);
        let (mut sum, mut weights) = (0.0f64, 0.0f64);
        for i in 0..g.len() - 1 {
            let (labels, rank) = (&info.labels[g[i]..g[i + 1]], argsort_desc(&predictions[g[i]..g[i + 1]]));
            let n = (self.truncation as usize).min(labels.len());
            let hits: f64 = rank[..n].iter().map(|&r| (labels[r] * weight(i)) as f64).sum();
            sum += hits / n as f64;
            weights += weight(i) as f64;
        }
        sum / weights
    }
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::super::{from_name, from_name_with_params};
    use super::*;

    fn info(labels: &[f32], weights: &[f32], group_ptr: &[usize]) -> MetaInfo {
        MetaInfo {
            labels: labels.to_vec(),
            weights: weights.to_vec(),
            group_ptr: group_ptr.to_vec(),
            ..Default::default()
        }
    }

    fn eval(name: &str, p: &[f32], i: &MetaInfo) -> f64 {
        from_name(name).unwrap().evaluate(p, i, 1)
    }

    #[test]
    fn ndcg_by_hand() {
        // Ranked labels 0, 2, 1 (predictions 0.9, 0.5, 0.1): DCG = 3/log2(3) + 1/2; ideal 3 + 1/log2(3).
        let i = info(&[0.0, 2.0, 1.0], &[], &[0, 3]);
        let p = [0.9f32, 0.5, 0.1];
        let l3 = 3f64.log2();
        let full = (3.0 / l3 + 0.5) / (3.0 + 1.0 / l3);
        assert!((eval("ndcg", &p, &i) - full).abs() < 1e-12);
        // @1: top document has gain 0.
        assert_eq!(eval("ndcg@1", &p, &i), 0.0);
        // @2: (3 / log2(3)) / (3 + 1 / log2(3)).
        assert!((eval("ndcg@2", &p, &i) - (3.0 / l3) / (3.0 + 1.0 / l3)).abs() < 1e-12);
        // Linear gain.
        let lin = from_name_with_params("ndcg", &[("ndcg_exp_gain".into(), "false".into())]).unwrap();
        let want = (2.0 / l3 + 0.5) / (2.0 + 1.0 / l3);
        assert!((lin.evaluate(&p, &i, 1) - want).abs() < 1e-12);
    }

    #[test]
    fn ndcg_ties_keep_input_order_and_empty_groups_follow_the_minus_convention() {
        // Tied predictions: the stable order puts row 0 (label 0) before row 1 (label 1).
        let i = info(&[0.0, 1.0], &[], &[0, 2]);
        assert!((eval("ndcg", &[0.5, 0.5], &i) - 1.0 / 3f64.log2()).abs() < 1e-12);
        let i = info(&[1.0, 0.0], &[], &[0, 2]);
        assert_eq!(eval("ndcg", &[0.5, 0.5], &i), 1.0);
        // A group without relevant documents.
        let i = info(&[0.0, 0.0, 1.0, 0.0], &[], &[0, 2, 4]);
        let p = [0.1f32, 0.2, 0.9, 0.3];
        assert_eq!(eval("ndcg", &p, &i), 1.0);
        assert_eq!(eval("ndcg-", &p, &i), 0.5);
        assert_eq!(eval("ndcg@1-", &p, &i), 0.5);
        // Group weights: the gainless group's 1 enters unweighted, its weight 3 still divides
        // (XGBoost's quirk): (1 + 1 · top) / 4.
        let i = info(&[0.0, 0.0, 0.0, 1.0], &[3.0, 1.0], &[0, 2, 4]);
        let top = 1.0 / 3f64.log2();
        assert!((eval("ndcg-", &[0.1, 0.2, 0.9, 0.3], &i) - top / 4.0).abs() < 1e-12);
        assert!((eval("ndcg", &[0.1, 0.2, 0.9, 0.3], &i) - (1.0 + top) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn bare_ndcg_truncates_at_32() {
        // 40 documents, the only relevant one ranked 35th: a bare ndcg (k = 32) sees no gain.
        let mut y = vec![0.0f32; 40];
        y[0] = 1.0;
        let p: Vec<f32> = (0..40).map(|i| if i == 0 { -1.0 } else { i as f32 }).collect();
        let i = info(&y, &[], &[0, 40]);
        assert_eq!(eval("ndcg", &p, &i), 0.0);
        assert!(eval("ndcg@40", &p, &i) > 0.0);
        let whole = RankMetric::new(RankMetricKind::Ndcg, None, None, false, true);
        assert_eq!(whole.evaluate(&p, &i, 1), eval("ndcg@40", &p, &i));
    }

    #[test]
    fn precision_by_hand() {
        // Two groups: ranks by prediction (ties in input order) 1,0,2 | 4,3.
        let (p, labels) = ([0.5, 0.9, 0.1, 0.2, 0.3], [0.0, 1.0, 1.0, 1.0, 0.0]);
        let i = info(&labels, &[], &[0, 3, 5]);
        assert!((eval("pre@2", &p, &i) - (0.5 + 0.5) / 2.0).abs() < 1e-12);
        assert!((eval("pre", &p, &i) - (2.0 / 3.0 + 0.5) / 2.0).abs() < 1e-12);
        assert_eq!(eval("pre@1", &p, &i), 0.5);
        let weighted = info(&labels, &[1.0, 3.0], &[0, 3, 5]);
        // Each group's hits times its weight, over the sum of the weights.
        assert!((eval("pre@1", &p, &weighted) - 1.0 / 4.0).abs() < 1e-12);
        assert_eq!(from_name("pre@3-").unwrap().name(), "pre@3-");
        let error = from_name("pre").unwrap().check(2, &info(&[2.0, 1.0], &[], &[0, 2]), 1).unwrap_err();
        assert!(error.to_string().contains("which pre requires"), "{error}");
    }

    #[test]
    fn map_by_hand() {
        // Ranked labels 1, 0, 1, 0: AP = (1/1 + 2/3) / 2.
        let i = info(&[0.0, 1.0, 0.0, 1.0], &[], &[0, 4]);
        let p = [0.1f32, 0.9, 0.8, 0.7];
        assert!((eval("map", &p, &i) - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-12);
        // @2 normalises by min(hits, 2) = 2: (1/1) / 2.
        assert!((eval("map@2", &p, &i) - 0.5).abs() < 1e-12);
        // @1: 1 / min(2, 1).
        assert_eq!(eval("map@1", &p, &i), 1.0);
        let none = info(&[0.0, 0.0], &[], &[0, 2]);
        assert_eq!(eval("map", &[0.1, 0.2], &none), 1.0);
        assert_eq!(eval("map-", &[0.1, 0.2], &none), 0.0);
    }

    #[test]
    fn known_answers_from_xgboost() {
        // `bst.eval` of xgboost 3.2.0 with these predictions as base_margin (eta 0), query groups of
        // 5, 12, 40 and 3 documents (the last without relevant documents), with and without group
        // weights (0.5, 2, 1, 1.5).
        let (p, y) = known_data();
        let gptr = [0usize, 5, 17, 57, 60];
        let w = [0.5f32, 2.0, 1.0, 1.5];
        let yb: Vec<f32> = y.iter().map(|&v| if v >= 2.0 { 1.0 } else { 0.0 }).collect();
        let cases: &[(&str, bool, f64, f64)] = &[
            ("ndcg", false, 0.8306472103546162, 0.7089463515914864),
            ("ndcg@3", false, 0.602356574117302, 0.45914006183767403),
            ("ndcg@3-", false, 0.35235657411730203, 0.2591400618376741),
            ("ndcg-", false, 0.5806472103546162, 0.5089463515914864),
            ("ndcg@50", false, 0.8561231923739242, 0.7293271372069328),
            ("map", true, 0.770598592518066, 0.7481320125425913),
            ("map@5", true, 0.655, 0.5906666666666667),
            ("map@5-", true, 0.40499999999999997, 0.29066666666666663),
        ];
        for &(name, binary, unweighted, weighted) in cases {
            let labels = if binary { &yb } else { &y };
            let a = eval(name, &p, &info(labels, &[], &gptr));
            let b = eval(name, &p, &info(labels, &w, &gptr));
            assert!((a - unweighted).abs() < 1e-9, "{name}: {a} vs {unweighted}");
            assert!((b - weighted).abs() < 1e-9, "{name} weighted: {b} vs {weighted}");
        }
    }

    fn known_data() -> (Vec<f32>, Vec<f32>) {
        let p = vec![
            0.4, -0.6, 2.7, -1.6, 0.7, -0.1, -0.4, 1.1, -1.8, -1.0, -0.1, 1.7, 0.1, 0.9, -1.9, -1.2, 1.0, -0.6, -0.1,
            0.7, -2.2, -1.2, -0.1, -1.5, -0.7, -0.0, -0.7, -0.3, 0.0, 1.3, 1.6, -0.4, -0.8, 0.9, 0.5, 0.2, -0.9, 0.6,
            0.9, -1.8, 1.0, -0.1, -0.7, -1.6, -0.3, -0.1, -0.4, -1.2, -1.2, 0.7, 0.0, 0.3, 0.6, 0.7, 1.7, -0.1, -0.3,
            -1.0, 0.2, 0.3,
        ];
        let y = vec![
            3., 3., 3., 1., 2., 3., 2., 0., 2., 0., 3., 2., 1., 1., 3., 3., 2., 3., 0., 3., //
            3., 3., 0., 2., 0., 3., 3., 1., 3., 3., 1., 3., 3., 3., 3., 0., 0., 0., 3., 1., //
            3., 3., 2., 2., 1., 2., 0., 2., 2., 1., 3., 1., 1., 2., 0., 3., 0., 0., 0., 0.,
        ];
        (p, y)
    }

    #[test]
    fn invalid_labels_are_reported() {
        let m = from_name("ndcg").unwrap();
        assert!(m.check(2, &info(&[0.5, 1.0], &[], &[0, 2]), 1).is_err());
        assert!(m.check(2, &info(&[32.0, 1.0], &[], &[0, 2]), 1).is_err());
        assert!(m.check(2, &info(&[1.0, 1.0], &[1.0, 1.0], &[0, 2]), 1).is_err());
        assert!(m.check(2, &info(&[1.0, 1.0], &[], &[0, 3]), 1).is_err());
        assert!(m.evaluate(&[0.1, 0.2], &info(&[0.5, 1.0], &[], &[0, 2]), 1).is_nan());
        assert!(from_name("map").unwrap().check(2, &info(&[2.0, 1.0], &[], &[0, 2]), 1).is_err());
        assert!(m.check(2, &info(&[3.0, 1.0], &[2.0], &[0, 2]), 1).is_ok());
    }
}
