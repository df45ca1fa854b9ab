//! Learning to rank: `rank:pairwise` (RankNet), `rank:ndcg` and `rank:map` (LambdaMART), with the
//! `lambdarank_*` parameters and defaults of XGBoost 3.2.
//!
//! Within a query group, rank the documents by margin (descending, ties in input order). For a pair
//! whose labels differ, `h` the higher label at rank `r_h` with score `s_h`, `l` the lower one:
//!
//! ```text
//! σ       = sigmoid(s_h - s_l)                          (f32, XGBoost's Sigmoid)
//! Δ       = |ΔZ|                                        1 (pairwise), |ΔNDCG|, |ΔMAP| of swapping h and l
//! Δ      /= |s_h - s_l| + 0.01                          lambdarank_score_normalization, unless all scores tie
//! λ       = (σ - 1) Δ,    η = max(σ (1 - σ), 1e-16) Δ · 2
//! g_h += λ, h_h += η;     g_l -= λ, h_l += η            (accumulated in f32, pair by pair)
//! ```
//!
//! `Δ`, `λ` and `η` are computed in `f64` (with `libm`), as XGBoost does, and rounded to `f32` per
//! pair; `ΔNDCG = (G_h - G_l)(D(r_h) - D(r_l)) / IDCG`, gain `G = 2^y - 1` (`y` with
//! `ndcg_exp_gain = false`), discount `D(r) = 1 / log2(r + 2)`, and IDCG over the ideal order's first
//! `k` positions (`k` = the pair truncation below; the whole list for `mean`).
//!
//! **Pairs.** `lambdarank_pair_method = topk` (the default for all three objectives in 3.x) pairs
//! each of the first `k = lambdarank_num_pair_per_sample` (default 32) ranked documents with every
//! document ranked below it: exact and deterministic. `mean` samples, for every document, `k`
//! (default 1) partners with a different label, uniformly among those: XGBoost draws them with
//! `std::minstd_rand` seeded per group and libstdc++'s `uniform_int_distribution`; both are fully
//! specified, and we replay them (the seed that xgboost 3.2.0 was observed to use is
//! `(iteration + 1) · groups + group`), so the sampled pairs, and the gradients, are XGBoost's.
//!
//! **Normalisation** (`lambdarank_normalization`, default true): with `topk`, a group's gradients
//! are scaled by `log2(1 + S) / S`, `S = Σ -2λ` over its pairs (LightGBM's); with `mean`, by
//! `1 / k`. Then everything is multiplied by the group's weight and by `groups / Σ weights`.
//!
//! `lambdarank_unbiased` (position-debiasing from click data) is not supported: `true` is an error.

use boost_kernels::rank::ndcg_discount;
use boost_kernels::rank::{self, LambdaRankParams, QueryGroup, MAX_REL};
use primitives::ops::GradientPair;
use rayon::prelude::*;

use super::{
    argsort_desc, check_weights, cmp_desc, format_g, newton_intercept, DeviceObjective, Objective, OutputTransform,
    Params,
};
use crate::data::MetaInfo;
use crate::{Error, Result};

/// XGBoost's `LambdaRankParam::NotSet()`: `lambdarank_num_pair_per_sample` left to its default.
const NOT_SET: u32 = u32::MAX;
/// Default truncation of `topk`.
const DEFAULT_TOP_K: u32 = 32;
/// Default partners per document of `mean`.
const DEFAULT_SAMPLE_PAIRS: u32 = 1;
/// XGBoost's `kRtEps`, the tolerance of its label checks.
const RT_EPS: f32 = 1e-6;

/// Which ranking objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankKind {
    /// `rank:pairwise`: `Δ = 1`.
    Pairwise,
    /// `rank:ndcg`.
    Ndcg,
    /// `rank:map`: binary labels.
    Map,
}

/// `lambdarank_pair_method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairMethod {
    /// Every pair with one of the top `k` ranked documents.
    TopK,
    /// `k` random partners per document.
    Mean,
}

/// `rank:pairwise`, `rank:ndcg`, `rank:map`.
#[derive(Clone, Debug)]
pub struct LambdaRank {
    kind: RankKind,
    pair_method: PairMethod,
    /// `None` when not set (XGBoost writes `4294967295`).
    num_pair_per_sample: Option<u32>,
    normalization: bool,
    score_normalization: bool,
    /// Only written back (it regularises the unbiased variant).
    bias_norm: f64,
    ndcg_exp_gain: bool,
}

impl LambdaRank {
    /// Reads the `lambdarank_*` parameters and `ndcg_exp_gain`.
    pub(crate) fn from_params(kind: RankKind, p: &Params<'_>) -> Result<Self> {
        let pair_method = match p.get("lambdarank_pair_method") {
            None | Some("topk") => PairMethod::TopK,
            Some("mean") => PairMethod::Mean,
            Some(other) => {
                return Err(Error::param("lambdarank_pair_method", format!("expected `topk` or `mean`, got `{other}`")))
            }
        };
        let num_pair_per_sample = match p.u32("lambdarank_num_pair_per_sample")? {
            Some(0) => return Err(Error::param("lambdarank_num_pair_per_sample", "must be >= 1")),
            Some(NOT_SET) | None => None,
            Some(k) => Some(k),
        };
        if p.bool("lambdarank_unbiased")?.unwrap_or(false) {
            return Err(Error::param(
                "lambdarank_unbiased",
                "the unbiased (position-debiased) LambdaMART is not supported",
            ));
        }
        let bias_norm = p.f64("lambdarank_bias_norm")?.unwrap_or(1.0);
        if bias_norm < 0.0 {
            return Err(Error::param("lambdarank_bias_norm", format!("must be >= 0, got {bias_norm}")));
        }
        Ok(Self {
            kind,
            pair_method,
            num_pair_per_sample,
            normalization: p.bool("lambdarank_normalization")?.unwrap_or(true),
            score_normalization: p.bool("lambdarank_score_normalization")?.unwrap_or(true),
            bias_norm,
            ndcg_exp_gain: p.bool("ndcg_exp_gain")?.unwrap_or(true),
        })
    }

    /// Pairs per document: `lambdarank_num_pair_per_sample`, by default 32 for `topk`, 1 for `mean`.
    pub fn num_pair(&self) -> u32 {
        self.num_pair_per_sample.unwrap_or(match self.pair_method {
            PairMethod::TopK => DEFAULT_TOP_K,
            PairMethod::Mean => DEFAULT_SAMPLE_PAIRS,
        })
    }

    /// The truncation of the list (IDCG, the default metric): `Some(k)` for `topk`, `None` for
    /// `mean` (the whole list).
    pub fn top_k(&self) -> Option<u32> {
        match self.pair_method {
            PairMethod::TopK => Some(self.num_pair()),
            PairMethod::Mean => None,
        }
    }

    /// The ranking objective: pairwise (every pair weighs 1), NDCG or MAP.
    pub fn kind(&self) -> RankKind {
        self.kind
    }

    /// How pairs are drawn within a group.
    pub fn pair_method(&self) -> PairMethod {
        self.pair_method
    }

    /// Whether NDCG's gain is `2^relevance - 1` (else the relevance).
    pub fn ndcg_exp_gain(&self) -> bool {
        self.ndcg_exp_gain
    }

    /// The parameters as the shared gradient code (`boost_kernels::rank`) takes them.
    pub fn device_params(&self) -> LambdaRankParams {
        LambdaRankParams {
            kind: match self.kind {
                RankKind::Pairwise => LambdaRankParams::PAIRWISE,
                RankKind::Ndcg => LambdaRankParams::NDCG,
                RankKind::Map => LambdaRankParams::MAP,
            },
            mean: (self.pair_method == PairMethod::Mean) as u32,
            num_pair: self.num_pair(),
            normalization: self.normalization as u32,
            score_normalization: self.score_normalization as u32,
            exp_gain: self.ndcg_exp_gain as u32,
        }
    }

    /// Gradients of one query group into `out` (same length as `predt` and `labels`), times the
    /// group's `weight` and `weight_norm`: `boost_kernels::rank::group_gradients`, the device's code,
    /// over the group ranked here.
    #[allow(clippy::too_many_arguments)]
    fn group_gradients(
        &self,
        seed: u32,
        predt: &[f32],
        labels: &[f32],
        discount: &[f64],
        weight: f32,
        weight_norm: f64,
        out: &mut [GradientPair<f32>],
    ) {
        let cnt = predt.len();
        let rank = argsort_desc(predt);
        let by_label = match self.pair_method {
            PairMethod::Mean => {
                let mut by_label: Vec<usize> = (0..cnt).collect();
                by_label.sort_by(|&a, &b| cmp_desc(labels[rank[a]], labels[rank[b]]));
                by_label
            }
            PairMethod::TopK => Vec::new(),
        };
        let map_stats = vec![(0.0, 0.0); if self.kind == RankKind::Map { cnt } else { 0 }];
        let mut group = HostGroup { margins: predt, labels, rank, by_label, discount, map_stats, out };
        let params = self.device_params();
        rank::group_gradients(&params, seed, inv_idcg(&params, labels), weight, weight_norm, &mut group);
    }

    /// Query groups as offsets: `info.group_ptr` when it is a valid partition of `rows`, else one
    /// group of everything (XGBoost's behaviour without groups; `validate` rejects that case).
    pub(crate) fn groups(info: &MetaInfo, rows: usize) -> Vec<usize> {
        let g = &info.group_ptr;
        let valid = g.len() >= 2 && g[0] == 0 && g[g.len() - 1] == rows && g.windows(2).all(|w| w[0] <= w[1]);
        if valid {
            g.clone()
        } else {
            vec![0, rows]
        }
    }
}

/// `1 / IDCG` of a group with labels `labels`, over the truncation of the list (the whole list for
/// `mean`); 0 unless `rank:ndcg`, the only objective that reads it.
pub(crate) fn inv_idcg(params: &LambdaRankParams, labels: &[f32]) -> f64 {
    if params.kind != LambdaRankParams::NDCG {
        return 0.0;
    }
    let mut sorted = labels.to_vec();
    sorted.sort_by(|a, b| cmp_desc(*a, *b));
    let k = if params.mean != 0 { sorted.len() } else { params.num_pair as usize };
    rank::inv_idcg(sorted.len(), k, |i| sorted[i], params.exp_gain != 0)
}

/// [`ndcg_discount`] of every position of the largest of the groups `gptr` (offsets).
pub(crate) fn discount_table(gptr: &[usize]) -> Vec<f64> {
    let max_group = gptr.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    (0..max_group).map(ndcg_discount).collect()
}

/// The factor of every gradient that keeps the total scale of an unweighted dataset: `groups / Σ w`
/// when the weights are per group (and sum above 0), else 1.
pub(crate) fn weight_norm(info: &MetaInfo, groups: usize) -> f64 {
    if info.weights.len() != groups {
        return 1.0;
    }
    let sum: f64 = info.weights.iter().map(|&w| w as f64).sum();
    if sum > 0.0 {
        groups as f64 / sum
    } else {
        1.0
    }
}

/// The seed of group 0's `mean` draws in round `iteration` (group `g`'s is this plus `g`, wrapping):
/// `(iteration + 1) · groups`, as xgboost 3.2.0 was observed to seed them.
pub(crate) fn seed_base(iteration: usize, groups: usize) -> u32 {
    (iteration as u32).wrapping_add(1).wrapping_mul(groups as u32)
}

/// One query group as the shared gradient code reads it, ranked on the host.
struct HostGroup<'a> {
    margins: &'a [f32],
    labels: &'a [f32],
    rank: Vec<usize>,
    by_label: Vec<usize>,
    discount: &'a [f64],
    map_stats: Vec<(f64, f64)>,
    out: &'a mut [GradientPair<f32>],
}

impl QueryGroup for HostGroup<'_> {
    fn documents(&self) -> usize {
        self.margins.len()
    }
    fn margin(&self, doc: usize) -> f32 {
        self.margins[doc]
    }
    fn label(&self, doc: usize) -> f32 {
        self.labels[doc]
    }
    fn ranked(&self, pos: usize) -> usize {
        self.rank[pos]
    }
    fn by_label(&self, i: usize) -> usize {
        self.by_label[i]
    }
    fn discount(&self, pos: usize) -> f64 {
        self.discount[pos]
    }
    fn map_stats(&self, pos: usize) -> (f64, f64) {
        self.map_stats[pos]
    }
    fn set_map_stats(&mut self, pos: usize, hits: f64, sum: f64) {
        self.map_stats[pos] = (hits, sum);
    }
    fn gradient(&self, doc: usize) -> GradientPair<f32> {
        self.out[doc]
    }
    fn set_gradient(&mut self, doc: usize, gradient: GradientPair<f32>) {
        self.out[doc] = gradient;
    }
}

impl Objective for LambdaRank {
    fn name(&self) -> &'static str {
        match self.kind {
            RankKind::Pairwise => "rank:pairwise",
            RankKind::Ndcg => "rank:ndcg",
            RankKind::Map => "rank:map",
        }
    }

    /// Labels finite; groups present and a partition of the rows; one weight per group; for
    /// `rank:ndcg` with the exponential gain, integer relevance degrees in `[0, 31]`; for `rank:map`,
    /// labels 0 or 1 (both within XGBoost's 1e-6).
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        let rows = info.labels.len();
        if let Some(i) = info.labels.iter().position(|y| !y.is_finite()) {
            return Err(Error::InvalidData(format!("row {i}: label {} is not finite", info.labels[i])));
        }
        let g = &info.group_ptr;
        if g.is_empty() {
            return Err(Error::InvalidData(format!("{} needs query groups, and none are set", self.name())));
        }
        if g[0] != 0 {
            return Err(Error::InvalidData(format!("group offsets must start at 0, not {}", g[0])));
        }
        if let Some(i) = g.windows(2).position(|w| w[1] < w[0]) {
            return Err(Error::InvalidData(format!("group {i}: offsets decrease ({} then {})", g[i], g[i + 1])));
        }
        if g[g.len() - 1] != rows {
            return Err(Error::InvalidData(format!("groups cover {} rows, the labels {rows}", g[g.len() - 1])));
        }
        let groups = g.len() - 1;
        if !info.weights.is_empty() {
            if info.weights.len() != groups {
                return Err(Error::InvalidData(format!(
                    "{} weights for {groups} query groups (ranking takes one weight per group)",
                    info.weights.len()
                )));
            }
            check_weights(&info.weights, "group")?;
        }
        if !info.base_margin.is_empty() && info.base_margin.len() != rows {
            return Err(Error::InvalidData(format!("{} base margins for {rows} rows", info.base_margin.len())));
        }
        match self.kind {
            RankKind::Ndcg if self.ndcg_exp_gain => {
                let bad = |y: f32| (libm::floorf(y) - y).abs() > RT_EPS || y < 0.0;
                if let Some(i) = info.labels.iter().position(|&y| bad(y)) {
                    return Err(Error::InvalidData(format!(
                        "row {i}: label {} is not a relevance degree (a non-negative integer)",
                        info.labels[i]
                    )));
                }
                if let Some(i) = info.labels.iter().position(|&y| y as u32 > MAX_REL) {
                    return Err(Error::InvalidData(format!(
                        "row {i}: relevance degree {} is above {MAX_REL}, the largest the exponential gain \
                         takes (set ndcg_exp_gain = false for other gains)",
                        info.labels[i]
                    )));
                }
            }
            RankKind::Map => {
                let binary = |y: f32| (y - 1.0).abs() < RT_EPS || y.abs() < RT_EPS;
                if let Some(i) = info.labels.iter().position(|&y| !binary(y)) {
                    return Err(Error::InvalidData(format!(
                        "row {i}: label {} is not 0 or 1, which rank:map requires",
                        info.labels[i]
                    )));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn gradients(&self, margins: &[f32], info: &MetaInfo, iteration: usize, out: &mut [GradientPair<f32>]) {
        let rows = info.labels.len().min(margins.len()).min(out.len());
        for o in out.iter_mut().skip(rows) {
            *o = GradientPair::new(0.0, 0.0);
        }
        let gptr = Self::groups(info, rows);
        let n_groups = gptr.len() - 1;
        let discount = discount_table(&gptr);
        let per_group_weights = info.weights.len() == n_groups;
        let w_norm = weight_norm(info, n_groups);
        let mut slices = Vec::with_capacity(n_groups);
        let mut rest = &mut out[..rows];
        for w in gptr.windows(2) {
            let (head, tail) = rest.split_at_mut(w[1] - w[0]);
            slices.push(head);
            rest = tail;
        }
        let seed_base = seed_base(iteration, n_groups);
        slices.into_par_iter().enumerate().for_each(|(g, slice)| {
            let (b, e) = (gptr[g], gptr[g + 1]);
            let seed = seed_base.wrapping_add(g as u32);
            let w = if per_group_weights { info.weights[g] } else { 1.0 };
            self.group_gradients(seed, &margins[b..e], &info.labels[b..e], &discount, w, w_norm, slice);
        });
    }

    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::LambdaRank(self.device_params()))
    }

    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Identity
    }

    /// A Newton step from margin 0, as XGBoost's `FitIntercept`: pairs cancel, so it is 0 up to
    /// rounding (xgboost 3.2.0 wrote `-1.2554517E-8` and `-0E0` on small datasets).
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        newton_intercept(self, info)
    }

    fn default_metric(&self) -> &'static str {
        match self.kind {
            RankKind::Map => "map",
            _ => "ndcg",
        }
    }

    /// `ndcg@32`/`map@32` with the default `topk`, `ndcg@k` with another `k`, the bare name for
    /// `mean` (which XGBoost evaluates over the whole list).
    fn default_metric_name(&self) -> String {
        match self.top_k() {
            Some(k) => format!("{}@{k}", self.default_metric()),
            None => self.default_metric().to_string(),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        let flag = |b: bool| if b { "1" } else { "0" };
        serde_json::json!({
            "name": self.name(),
            "lambdarank_param": {
                "lambdarank_bias_norm": format_g(self.bias_norm, 17),
                "lambdarank_normalization": flag(self.normalization),
                "lambdarank_num_pair_per_sample": self.num_pair_per_sample.unwrap_or(NOT_SET).to_string(),
                "lambdarank_pair_method": match self.pair_method { PairMethod::TopK => "topk", PairMethod::Mean => "mean" },
                "lambdarank_score_normalization": flag(self.score_normalization),
                "lambdarank_unbiased": "0",
                "ndcg_exp_gain": flag(self.ndcg_exp_gain),
            }
        })
    }
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::objective::from_name;

    fn obj(name: &str, params: &[(&str, &str)]) -> Box<dyn Objective> {
        let p: Vec<(String, String)> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        from_name(name, &p).unwrap()
    }

    fn info(labels: &[f32], group_ptr: &[usize], weights: &[f32]) -> MetaInfo {
        MetaInfo {
            labels: labels.to_vec(),
            weights: weights.to_vec(),
            group_ptr: group_ptr.to_vec(),
            ..Default::default()
        }
    }

    fn grads(o: &dyn Objective, margins: &[f32], info: &MetaInfo, iteration: usize) -> Vec<GradientPair<f32>> {
        let mut out = vec![GradientPair::new(0.0, 0.0); margins.len()];
        o.gradients(margins, info, iteration, &mut out);
        out
    }

    #[test]
    fn minstd_and_uniform_follow_the_standard_library() {
        use boost_kernels::rank::MinStd;
        // minstd_rand: x1 = 48271 for seed 1 (and seed 0 behaves as 1); the 10000th value of a
        // default-seeded generator is 399268537 (C++11, [rand.predef]).
        let mut r = MinStd::new(0);
        assert_eq!(r.draw(), 48_271);
        let mut r = MinStd::new(1);
        let mut last = 0;
        for _ in 0..10_000 {
            last = r.draw();
        }
        assert_eq!(last, 399_268_537);
        // uniform over [0, 0] consumes one draw and returns 0.
        let mut r = MinStd::new(5);
        assert_eq!(r.uniform(1), 0);
        assert_eq!(r.draw(), 5 * 48_271 * 48_271 % 2_147_483_647);
        // [0, 2]: (48271 - 1) / (2147483645 / 3) = 0.
        let mut r = MinStd::new(1);
        assert_eq!(r.uniform(3), 0);
    }

    /// Two documents with different labels and the pairwise loss: the gradient is `σ(s_h - s_l) - 1`
    /// times the normalisation, by hand.
    #[test]
    fn pairwise_pair_by_hand() {
        let o = obj("rank:pairwise", &[("lambdarank_normalization", "false"), ("lambdarank_score_normalization", "0")]);
        let g = grads(&*o, &[0.5, 0.0], &info(&[0.0, 1.0], &[0, 2], &[]), 0);
        let s = super::super::sigmoid(0.0 - 0.5) as f64;
        assert!((g[1].grad as f64 - (s - 1.0)).abs() < 1e-7);
        assert!((g[0].grad as f64 + (s - 1.0)).abs() < 1e-7);
        assert!((g[0].hess as f64 - 2.0 * s * (1.0 - s)).abs() < 1e-7);
        assert_eq!(g[0].hess, g[1].hess);
        // Equal labels: no pair.
        let g = grads(&*o, &[0.5, 0.0], &info(&[1.0, 1.0], &[0, 2], &[]), 0);
        assert!(g.iter().all(|p| p.grad == 0.0 && p.hess == 0.0));
    }

    /// Without normalisations and with every pair (`k` >= group size), `rank:pairwise` is the
    /// RankNet loss `Σ_{y_h > y_l} log(1 + e^-(s_h - s_l))`: the gradient is its derivative and the
    /// hessian twice its second derivative (XGBoost's factor 2), checked by finite differences.
    #[test]
    fn pairwise_is_the_derivative_of_ranknet() {
        let labels = [2.0f32, 0.0, 1.0, 1.0, 3.0, 0.0];
        let margins = [0.3f32, -0.4, 1.1, 0.2, -0.9, 0.6];
        let params = [("lambdarank_normalization", "0"), ("lambdarank_score_normalization", "0")];
        let g = grads(&*obj("rank:pairwise", &params), &margins, &info(&labels, &[0, 6], &[]), 0);
        let loss = |s: &[f64]| {
            let mut l = 0.0;
            for h in 0..6 {
                for j in 0..6 {
                    if labels[h] > labels[j] {
                        l += (1.0 + (-(s[h] - s[j])).exp()).ln();
                    }
                }
            }
            l
        };
        let s: Vec<f64> = margins.iter().map(|&m| m as f64).collect();
        let eps = 1e-4;
        for i in 0..6 {
            let mut plus = s.clone();
            plus[i] += eps;
            let mut minus = s.clone();
            minus[i] -= eps;
            let d1 = (loss(&plus) - loss(&minus)) / (2.0 * eps);
            let d2 = (loss(&plus) - 2.0 * loss(&s) + loss(&minus)) / (eps * eps);
            assert!((g[i].grad as f64 - d1).abs() < 1e-4, "doc {i}: {} vs {d1}", g[i].grad);
            assert!((g[i].hess as f64 - 2.0 * d2).abs() < 1e-3, "doc {i}: {} vs {}", g[i].hess, 2.0 * d2);
        }
    }

    #[test]
    fn mean_sampling_depends_on_the_iteration_only() {
        let labels = [0.0f32, 3.0, 1.0, 2.0, 0.0, 1.0, 4.0, 2.0, 1.0];
        let margins = [0.9f32, -0.2, 0.4, 0.1, 0.5, -1.0, 0.0, 0.3, 0.2];
        let o = obj("rank:pairwise", &[("lambdarank_pair_method", "mean")]);
        let i = info(&labels, &[0, 9], &[]);
        assert_eq!(grads(&*o, &margins, &i, 4), grads(&*o, &margins, &i, 4));
        assert_ne!(grads(&*o, &margins, &i, 4), grads(&*o, &margins, &i, 5));
        let topk = obj("rank:pairwise", &[]);
        assert_eq!(grads(&*topk, &margins, &i, 4), grads(&*topk, &margins, &i, 5));
    }

    #[test]
    fn ndcg_delta_by_hand() {
        // Labels 2, 0, 1 at scores 0.3, 0.2, 0.1 (already in rank order). Pair (0, 2): gains 3 and 1,
        // discounts 1 and 1/2; IDCG = 3 + 1/log2(3).
        let o = obj("rank:ndcg", &[("lambdarank_normalization", "0"), ("lambdarank_score_normalization", "0")]);
        let g = grads(&*o, &[0.3, 0.2, 0.1], &info(&[2.0, 0.0, 1.0], &[0, 3], &[]), 0);
        let idcg = 3.0 + 1.0 / 3f64.log2();
        let d = |r: f64| 1.0 / (r + 2.0).log2();
        let sig = |x: f32| super::super::sigmoid(x) as f64;
        // Doc 0 pairs with doc 1 (gain 3 vs 0) and doc 2 (3 vs 1).
        let l01 = (sig(0.1) - 1.0) * (3.0 * (d(0.0) - d(1.0))) / idcg;
        let l02 = (sig(0.2) - 1.0) * (2.0 * (d(0.0) - d(2.0))) / idcg;
        let l21 = (sig(-0.1) - 1.0) * (1.0 * (d(1.0) - d(2.0))) / idcg;
        assert!((g[0].grad as f64 - (l01 + l02)).abs() < 1e-6);
        assert!((g[1].grad as f64 - (-l01 - l21)).abs() < 1e-6);
        assert!((g[2].grad as f64 - (l21 - l02)).abs() < 1e-6);
    }

    #[test]
    fn gradients_sum_to_zero_and_point_the_right_way() {
        let labels = [0.0f32, 3.0, 1.0, 2.0, 0.0, 1.0, 4.0];
        let margins = [0.9f32, -0.2, 0.4, 0.1, 0.5, -1.0, 0.0];
        for name in ["rank:pairwise", "rank:ndcg"] {
            for method in ["topk", "mean"] {
                let o = obj(name, &[("lambdarank_pair_method", method)]);
                let g = grads(&*o, &margins, &info(&labels, &[0, 7], &[]), 3);
                let sum: f32 = g.iter().map(|p| p.grad).sum();
                assert!(sum.abs() < 1e-5, "{name} {method}: {sum}");
                assert!(g.iter().all(|p| p.hess >= 0.0));
                // The best document (label 4) must be pushed up, the worst ranked first (label 0,
                // margin 0.9) down.
                assert!(g[6].grad < 0.0 && g[0].grad > 0.0, "{name} {method}");
            }
        }
    }

    #[test]
    fn topk_truncates_pairs_to_the_first_k_ranks() {
        // With k = 1 only pairs involving the top-ranked document exist.
        let o = obj("rank:pairwise", &[("lambdarank_num_pair_per_sample", "1")]);
        let g = grads(&*o, &[3.0, 2.0, 1.0, 0.0], &info(&[0.0, 1.0, 2.0, 1.0], &[0, 4], &[]), 0);
        assert!(g.iter().all(|p| p.hess > 0.0));
        let o = obj("rank:pairwise", &[("lambdarank_num_pair_per_sample", "1")]);
        let g2 = grads(&*o, &[0.0, 3.0, 2.0, 1.0], &info(&[1.0, 1.0, 2.0, 1.0], &[0, 4], &[]), 0);
        // Top is doc 1 (label 1): only doc 2 differs from it.
        assert_eq!((g2[0].hess, g2[3].hess), (0.0, 0.0));
        assert!(g2[1].hess > 0.0 && g2[2].hess > 0.0);
    }

    /// Margins and labels of 5 query groups (sizes 5, 8, 40, 3, 12, a tie at rows 6 and 7) with
    /// group weights. The expected gradients below are from xgboost 3.2.0: margins as base_margin,
    /// one exact tree (lambda 0, eta 1, min_child_weight 0) on a feature equal to the row index, so
    /// most documents get a leaf of their own, whose `-leaf * cover` and `cover` are that document's
    /// gradient and hessian (the round is iteration 0).
    fn xgb_case() -> (Vec<f32>, Vec<f32>, Vec<usize>, Vec<f32>) {
        let margins = vec![
            0.35877, 1.51068, -1.78633, 1.68661, -0.04732, -0.79998, -1.08282, -1.08282, -0.22365, 0.83388, 0.58406,
            0.63829, -1.69481, -1.57096, 1.55380, 0.96889, 2.18321, 1.20982, -1.02439, 1.28527, 0.62839, 0.21482,
            -0.81987, 0.00278, -0.14700, 0.89254, 0.12450, 1.58475, -0.77449, 0.47110, 0.49884, -0.86434, -1.18127,
            1.01358, 0.51744, -0.16251, 0.39437, -0.67534, 0.23835, -0.60513, 0.18879, 0.98609, -0.33963, 0.84977,
            -1.03420, -0.28849, -1.36474, -0.10059, 0.07865, -0.19726, -0.26768, 1.34019, 1.42379, -1.21563, 1.17411,
            -1.72307, -0.73448, -0.17345, 0.11106, -1.04742, -0.72247, 0.07665, -0.69342, -0.64120, 0.66626, 0.93172,
            -0.06006, 0.01820,
        ];
        let labels = vec![
            3., 3., 1., 2., 1., 1., 2., 0., 1., 1., 2., 1., 0., 3., 1., 3., 1., 3., 3., 0., //
            3., 3., 2., 0., 3., 0., 3., 2., 1., 1., 2., 3., 1., 2., 1., 2., 2., 2., 0., 3., //
            2., 3., 1., 0., 3., 3., 2., 1., 2., 1., 0., 3., 0., 3., 2., 3., 0., 2., 2., 0., //
            3., 1., 2., 3., 1., 3., 1., 1.,
        ];
        (margins, labels, vec![0, 5, 13, 53, 56, 68], vec![0.5, 1.25, 2.0, 0.75, 1.5])
    }

    fn check_against_xgboost(name: &str, params: &[(&str, &str)], binary: bool, want: &[(usize, f32, f32)]) {
        let (m, mut y, gptr, w) = xgb_case();
        if binary {
            y.iter_mut().for_each(|v| *v = if *v >= 2.0 { 1.0 } else { 0.0 });
        }
        let o = obj(name, params);
        o.validate(&info(&y, &gptr, &w)).unwrap();
        let g = grads(&*o, &m, &info(&y, &gptr, &w), 0);
        for &(i, wg, wh) in want {
            let close = |a: f32, b: f32| (a - b).abs() <= 1e-5 * (1.0 + b.abs());
            assert!(
                close(g[i].grad, wg) && close(g[i].hess, wh),
                "{name} {params:?} row {i}: {:?} vs ({wg}, {wh})",
                g[i]
            );
        }
    }

    #[test]
    fn ndcg_topk_matches_xgboost() {
        check_against_xgboost(
            "rank:ndcg",
            &[],
            false,
            &[
                (0, -0.050372845, 0.032263849),
                (1, -0.13938842, 0.13073643),
                (2, 0.0018534444, 0.0034359668),
                (3, 0.16822038, 0.14420427),
                (4, 0.019687444, 0.027037125),
                (5, 0.0054877439, 0.030098787),
                (6, -0.49952465, 0.42710173),
                (7, 0.39824615, 0.4099955),
                (8, 0.013578465, 0.023323638),
                (9, 0.29175277, 0.23480345),
                (10, -0.47996126, 0.4543449),
                (11, 0.2529277, 0.23765944),
                (12, 0.017493108, 0.026662132),
                (13, -0.08263091, 0.011876812),
                (14, 0.29695694, 0.19303188),
                (15, -0.17417321, 0.14351583),
                (16, 0.53516245, 0.18699656),
                (17, -0.18951993, 0.17343165),
                (18, -0.094590156, 0.021545444),
                (19, 0.21217242, 0.13788758),
                (20, -0.13982144, 0.098928489),
                (21, -0.13542384, 0.080026992),
                (22, -0.023716392, 0.015407757),
                (23, 0.047260391, 0.05021261),
                (63, -0.22315914, 0.17072912),
                (64, 0.29853944, 0.24733284),
                (65, -0.40156805, 0.54208565),
                (66, 0.11614549, 0.13524187),
                (67, 0.15265449, 0.16602695),
            ],
        );
    }

    #[test]
    fn ndcg_top3_linear_gain_matches_xgboost() {
        let params = [("lambdarank_num_pair_per_sample", "3"), ("ndcg_exp_gain", "false")];
        check_against_xgboost(
            "rank:ndcg",
            &params,
            false,
            &[
                (0, -0.035726962, 0.024655353),
                (2, 0.0017524785, 0.0032611319),
                (4, 0.018417967, 0.025727056),
                (6, -0.1049085, 0.028463164),
                (8, 0.0064395278, 0.008907428),
                (10, -0.54622208, 0.51929998),
                (12, 0.011527683, 0.021126609),
                (14, 0.65819396, 0.52887058),
                (16, 1.1611871, 0.49375954),
                (18, -0.083002715, 0.0087010162),
                (20, -0.13672748, 0.060851168),
                (22, -0.035862722, 0.004248389),
                (24, -0.1062644, 0.024872331),
                (26, -0.11568487, 0.034221385),
                (28, 0.001527498, 0.0027912457),
                (30, -0.052834669, 0.019958835),
                (32, 0.00090890505, 0.0017102173),
                (34, 0.008596126, 0.012792499),
                (36, -0.05128684, 0.017813753),
                (38, 0.020418174, 0.033131883),
                (40, -0.047955514, 0.014035979),
                (42, 0.0027266339, 0.0047586644),
                (44, -0.082992931, 0.0086221928),
                (46, -0.031168472, 0.0021981287),
            ],
        );
    }

    /// The `mean` method draws random pairs: matching xgboost here checks the replayed generator.
    #[test]
    fn pairwise_mean_sampling_matches_xgboost() {
        let params = [("lambdarank_pair_method", "mean"), ("lambdarank_num_pair_per_sample", "2")];
        check_against_xgboost(
            "rank:pairwise",
            &params,
            false,
            &[
                (0, -0.60060625, 0.72090763),
                (2, 0.007199856, 0.013966395),
                (4, 0.62371612, 0.75908816),
                (6, -3.7187972, 2.9431105),
                (8, 0.43909231, 0.77264953),
                (10, -5.5836108, 5.4680419),
                (12, 0.2032859, 0.3035115),
                (14, 10.972625, 10.334578),
                (16, 0.21419192, 0.41181111),
                (18, -3.7026409, 3.0607686),
                (20, -5.3317745, 5.259613),
                (22, 7.3576481, 8.0850716),
                (24, -4.7627734, 4.1098909),
                (26, -2.605468, 2.6479273),
                (28, 1.2033889, 1.1491443),
                (30, -9.8707244, 19.291775),
                (32, 2.4181199, 2.6826248),
                (34, 15.540801, 16.50905),
                (36, -3.5771996, 6.621273),
                (38, 7.8433682, 7.7471819),
                (40, 10.709444, 13.643599),
                (42, 2.4968472, 2.1401787),
                (44, -2.1561251, 1.3566603),
                (46, 0.043130341, 0.83843714),
            ],
        );
    }

    #[test]
    fn ndcg_mean_matches_xgboost() {
        check_against_xgboost(
            "rank:ndcg",
            &[("lambdarank_pair_method", "mean")],
            false,
            &[
                (0, -0.024252794, 0.029110622),
                (1, -0.26202011, 0.23903079),
                (2, 0.00032143292, 0.0006235207),
                (3, 0.2616987, 0.2396543),
                (4, 0.024252794, 0.029110622),
                (5, 0.02409251, 0.024524665),
                (6, -0.061642866, 0.029233815),
                (7, 0.014551611, 0.024911353),
                (8, -0.002304551, 0.0037482767),
                (9, 0.33301109, 0.31868505),
                (10, -0.35588192, 0.32145155),
                (11, 0.042709819, 0.012960571),
                (12, 0.0054643123, 0.009600969),
                (13, -0.0017628165, 0.0010957002),
                (14, 0.00036282699, 0.010180027),
                (15, -0.0023354146, 0.0035316008),
                (16, 0.056060724, 0.0064982823),
                (17, -0.0072417527, 0.011634671),
                (18, -0.0064626726, 0.002850072),
                (19, 0.049697912, 0.031635124),
                (20, -0.079077752, 0.058298022),
                (21, -0.0012683614, 0.0018716551),
                (22, -0.0060161196, 0.0043120086),
                (23, 0.0082007453, 0.01043663),
            ],
        );
    }

    #[test]
    fn map_matches_xgboost() {
        // Labels: 1 where the graded label above is >= 2.
        check_against_xgboost(
            "rank:map",
            &[],
            true,
            &[
                (0, -0.045676524, 0.056844298),
                (1, -0.012772618, 0.021486806),
                (2, 0.0066865611, 0.01244409),
                (3, -0.018272793, 0.031510409),
                (4, 0.07003537, 0.097397424),
                (5, 0.035495081, 0.03388612),
                (6, -0.8076822, 0.67285752),
                (7, 0.57209824, 0.57539797),
                (8, 0.039580895, 0.029453423),
                (9, 0.45144382, 0.32858715),
                (10, -0.68044004, 0.64000428),
                (11, 0.3758635, 0.32659739),
                (12, 0.013640589, 0.018939709),
                (13, -0.094642891, 0.017003363),
                (14, 0.38819814, 0.19366859),
                (15, -0.11339128, 0.10255516),
                (16, 0.47037408, 0.12906176),
                (17, -0.11016628, 0.10977992),
                (18, -0.10459834, 0.029260304),
                (19, 0.26357189, 0.13636811),
                (56, 0.35411342, 0.38114563),
                (57, -0.24503871, 0.2079498),
                (58, -0.46638043, 0.48774758),
                (59, 0.080878824, 0.10676464),
            ],
        );
    }

    #[test]
    fn validation() {
        let o = obj("rank:ndcg", &[]);
        let msg = |o: &dyn Objective, i: &MetaInfo| match o.validate(i) {
            Err(Error::InvalidData(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(msg(&*o, &info(&[1.0, 0.0], &[], &[])).contains("query groups"));
        assert!(msg(&*o, &info(&[1.0, 0.0], &[0, 1], &[])).contains("cover 1 rows"));
        assert!(msg(&*o, &info(&[1.0, 0.0], &[0, 2, 1, 2], &[])).starts_with("group 1"));
        assert!(msg(&*o, &info(&[1.0, 0.0], &[0, 2], &[1.0, 1.0])).contains("one weight per group"));
        assert!(msg(&*o, &info(&[1.0, 0.0], &[0, 2], &[-1.0])).starts_with("group 0"));
        assert!(msg(&*o, &info(&[1.0, 0.5], &[0, 2], &[])).starts_with("row 1"));
        assert!(msg(&*o, &info(&[32.0, 0.0], &[0, 2], &[])).starts_with("row 0"));
        assert!(msg(&*o, &info(&[-1.0, 0.0], &[0, 2], &[])).starts_with("row 0"));
        assert!(msg(&*o, &info(&[f32::NAN, 0.0], &[0, 2], &[])).starts_with("row 0"));
        assert!(o.validate(&info(&[31.0, 0.0, 2.0000001], &[0, 2, 3], &[1.0, 0.0])).is_ok());
        assert!(obj("rank:ndcg", &[("ndcg_exp_gain", "0")]).validate(&info(&[40.5, 0.0], &[0, 2], &[])).is_ok());
        let map = obj("rank:map", &[]);
        assert!(msg(&*map, &info(&[1.0, 2.0], &[0, 2], &[])).starts_with("row 1"));
        assert!(map.validate(&info(&[1.0, 0.0], &[0, 2], &[])).is_ok());
        assert!(obj("rank:pairwise", &[]).validate(&info(&[7.5, 0.0], &[0, 2], &[])).is_ok());
    }

    #[test]
    fn missing_groups_do_not_panic() {
        let o = obj("rank:ndcg", &[]);
        let g = grads(&*o, &[0.1, 0.2, 0.3], &info(&[1.0, 0.0, 2.0], &[], &[]), 0);
        assert!(g.iter().any(|p| p.hess > 0.0));
        let g = grads(&*o, &[0.1, 0.2, 0.3], &info(&[1.0, 0.0, 2.0], &[0, 5], &[1.0]), 0);
        assert!(g.iter().all(|p| p.grad.is_finite()));
    }

    #[test]
    fn defaults_and_names() {
        let o = obj("rank:ndcg", &[]);
        assert_eq!((o.default_metric(), o.default_metric_name()), ("ndcg", "ndcg@32".to_string()));
        let o = obj("rank:map", &[("lambdarank_num_pair_per_sample", "5")]);
        assert_eq!(o.default_metric_name(), "map@5");
        let o = obj("rank:pairwise", &[("lambdarank_pair_method", "mean")]);
        assert_eq!(o.default_metric_name(), "ndcg");
        let base = o.initial_base_score(&info(&[1.0, 0.0, 2.0, 1.0], &[0, 2, 4], &[]));
        assert!(base.abs() < 1e-6);
    }
}
