//! The split of a level of an oblivious tree (CatBoost's symmetric trees): every node of the level
//! splits on one feature at one threshold with one missing direction, the candidate whose loss
//! changes, summed over the level's nodes, are largest. Written once for the CPU backend and the
//! kernels, so both choose the same split.
//!
//! A feature of `n` bins has `2 n` candidates, taken in the order of the per-node scan
//! ([`crate::split::best_split_of_feature`]): candidate `c < n` sends bins `..=c` left and missing
//! values right; candidate `n + k` sends bins `..n - 1 - k` left (none for the last) and missing
//! values left. The missing-left candidates are considered when some node of the level has rows
//! missing the feature (otherwise each equals a missing-right one). A node's share of a candidate
//! is its loss change ([`crate::split::candidate_loss`]), or 0 where that split could not be
//! chosen for it (a child below `min_child_weight`): the node still splits, as every node of the
//! level does. Shares are summed in `f64` in node order; a candidate replaces the best so far only
//! with a strictly larger sum (ties keep the lower feature, then the earlier candidate), and the
//! level splits when the sum, in `f32`, is above `kRtEps` and at least `gamma` times the level's
//! nodes (a leaf's price, as for XGBoost's splits, for each leaf the level adds).

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::{self, global_thread, SplitContext};
use crate::fixed_point::GradientQuantiser;
use crate::split::{candidate_loss, GradientSum, Parent, Split, SplitKind, SplitParams, NO_VALUE_LEFT, RT_EPS};

/// Candidate `c` of a feature of `n` bins: the last bin (counted from the feature's first) that
/// goes left (-1 when none does), and whether missing values go left.
#[inline(always)]
pub fn candidate(c: usize, n: usize) -> (i64, bool) {
    if c < n {
        (c as i64, false)
    } else {
        ((2 * n - c) as i64 - 2, true)
    }
}

/// The children's sums of candidate `c` of a node with sums `total`, from the inclusive prefix
/// sums of its bins (`prefix(b)`: bins `0..=b`; `n >= 1` bins).
#[inline(always)]
pub fn candidate_sums<S: GradientSum>(c: usize, n: usize, total: S, prefix: impl Fn(usize) -> S) -> (S, S) {
    let (last_left, missing_left) = candidate(c, n);
    if !missing_left {
        let left = prefix(last_left as usize);
        (left, S::sub(total, left))
    } else {
        let before = if last_left < 0 { S::ZERO } else { prefix(last_left as usize) };
        let right = S::sub(prefix(n - 1), before);
        (S::sub(total, right), right)
    }
}

/// A node's share of a candidate with children `left` and `right`: its loss change, or 0 when the
/// split could not be chosen for it alone.
#[inline(always)]
pub fn share<S: GradientSum>(left: S, right: S, parent_gain: f32, p: &SplitParams, q: &GradientQuantiser) -> f32 {
    candidate_loss(left, right, &Parent::unconstrained(parent_gain), p, q).unwrap_or(0.0)
}

/// The threshold stored in the tree for candidate `c` of a feature of `n` bins with upper bounds
/// `cut_value(b)`: rows with a value below it go left.
#[inline(always)]
pub fn threshold(c: usize, n: usize, cut_value: impl Fn(usize) -> f32) -> f32 {
    match candidate(c, n) {
        (last_left, _) if last_left < 0 => NO_VALUE_LEFT,
        (last_left, _) => cut_value(last_left as usize),
    }
}

/// The best candidate so far: its summed loss change, feature and candidate index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelBest {
    pub loss_chg: f64,
    pub feature: u32,
    pub candidate: u32,
}

impl LevelBest {
    /// Whether `self` (a later candidate, features and candidates taken in increasing order)
    /// replaces `best`: only with a strictly larger sum.
    #[inline(always)]
    pub fn replaces(&self, best: Option<&LevelBest>) -> bool {
        best.is_none_or(|b| self.loss_chg > b.loss_chg)
    }

    /// A node's split on this candidate (of a feature of `n` bins, global bins from `first_bin`
    /// with upper bounds `cut_value(b)`), its children's sums `left` and `right`, its gain
    /// `parent_gain`: the level's feature, threshold and direction, the node's own loss change.
    #[allow(clippy::too_many_arguments)]
    pub fn node_split<S: GradientSum>(
        &self,
        n: usize,
        first_bin: usize,
        cut_value: impl Fn(usize) -> f32,
        (left, right): (S, S),
        parent_gain: f32,
        p: &SplitParams,
        q: &GradientQuantiser,
    ) -> Split<S> {
        let c = self.candidate as usize;
        let (last_left, default_left) = candidate(c, n);
        Split {
            loss_chg: share(left, right, parent_gain, p, q),
            feature: self.feature,
            last_left_bin: first_bin as i64 + last_left,
            threshold: threshold(c, n, cut_value),
            default_left,
            left,
            right,
            kind: SplitKind::Numeric,
        }
    }

    /// Whether a level of `nodes` nodes splits on it: the summed change above `kRtEps` and at least
    /// `gamma` a node (each node's split adds a leaf, and `gamma` is the price of a leaf).
    #[inline(always)]
    pub fn is_valid(&self, p: &SplitParams, nodes: usize) -> bool {
        let loss_chg = self.loss_chg as f32;
        loss_chg as f64 > RT_EPS && loss_chg >= p.gamma * nodes as f32
    }
}

/// The best candidate of feature `feature` (`n` bins) for a level: `shares(c)` sums the nodes'
/// shares of candidate `c` in node order; `missing` says whether some node has rows missing the
/// feature.
pub fn best_of_feature(
    feature: u32,
    n: usize,
    missing: bool,
    mut shares: impl FnMut(usize) -> f64,
) -> Option<LevelBest> {
    let candidates = if missing { 2 * n } else { n };
    first_best((0..candidates).map(|c| LevelBest { loss_chg: shares(c), feature, candidate: c as u32 }))
}

/// The candidate that the order of `candidates` keeps: the first of the strictly largest sums.
pub fn first_best(candidates: impl IntoIterator<Item = LevelBest>) -> Option<LevelBest> {
    let mut best: Option<LevelBest> = None;
    for candidate in candidates {
        if candidate.replaces(best.as_ref()) {
            best = Some(candidate);
        }
    }
    best
}

/// The buffers of the level kernels ([`prefix_kernel`], [`candidates_kernel`], [`node_sums_kernel`];
/// one entry point, `boost_split_level`, runs each).
/// Histograms lie by slot (`slot_len` sums each), feature `f`'s bins from `f * bins_per_feature`
/// (the padded layout); the level's nodes are slots `0..nodes`.
#[repr(C)]
pub struct LevelArgs {
    pub histograms: *const Fixed,
    /// The histograms' inclusive prefix sums, bin by bin within each (slot, feature).
    pub prefix: *mut Fixed,
    pub nodes: u64,
    pub slot_len: u64,
    pub bins_per_feature: u64,
    /// Per node: its gradient sum and its gain (`calc_gain` of the sum).
    pub totals: *const Fixed,
    pub parent_gains: *const f32,
    /// The level's features, increasing.
    pub features: *const u32,
    pub num_features: u64,
    pub cut_ptrs: *const u32,
    pub context: *const SplitContext,
}

type Fixed = GradientPair<i64>;

impl LevelArgs {
    /// Node `node`'s inclusive prefix sum of feature `f`'s bins `..=b`.
    ///
    /// # Safety
    /// `node < nodes`, `f` a feature of the histograms and `b < bins_per_feature`.
    #[inline(always)]
    unsafe fn prefix(&self, node: usize, f: usize, b: usize) -> Fixed {
        let at = node * self.slot_len as usize + f * self.bins_per_feature as usize + b;
        // SAFETY: within the node's slot (caller).
        unsafe { arch::load(self.prefix.add(at)) }
    }

    /// Feature `f`'s bin count.
    ///
    /// # Safety
    /// `f` is a feature of the cuts.
    #[inline(always)]
    unsafe fn bins(&self, f: usize) -> usize {
        // SAFETY: `f + 1 <= features` offsets (caller).
        unsafe { (arch::load(self.cut_ptrs.add(f + 1)) - arch::load(self.cut_ptrs.add(f))) as usize }
    }
}

/// The inclusive prefix sums of every (node, level feature) row of bins, one warp each (exact
/// fixed point, so the sequential sums).
///
/// # Safety
/// The buffers hold what [`LevelArgs`] says; `prefix` has room for the level's slots; the grid has
/// whole warps.
pub unsafe fn prefix_kernel(a: &LevelArgs) {
    let pair = global_thread() / arch::WARP_SIZE as u64;
    if pair >= a.nodes * a.num_features {
        return;
    }
    let lane = arch::lane_id();
    let (node, i) = ((pair / a.num_features) as usize, (pair % a.num_features) as usize);
    // SAFETY: `i < num_features`, a feature of the cuts; the node's slot holds its bins.
    unsafe {
        let f = arch::load(a.features.add(i)) as usize;
        let at = node * a.slot_len as usize + f * a.bins_per_feature as usize;
        let n = a.bins(f) as u32;
        evaluate::scan_bins(a.histograms.add(at), n, lane, |b, _, prefix| {
            arch::store(a.prefix.add(at + b as usize), prefix)
        });
    }
}

/// `out[i * 2 * bins_per_feature + c]`: the level's summed shares of candidate `c` of level feature
/// `i` (NaN for a candidate the feature does not have, or a missing-left one when no node misses
/// the feature), summed in node order as [`best_of_feature`]'s caller on the CPU sums them. One
/// thread per (feature, candidate); after [`prefix_kernel`].
///
/// # Safety
/// As for [`prefix_kernel`]; `out` holds `num_features * 2 * bins_per_feature` values.
pub unsafe fn candidates_kernel(a: &LevelArgs, out: *mut f64) {
    let t = global_thread();
    let per_feature = 2 * a.bins_per_feature;
    if t >= a.num_features * per_feature {
        return;
    }
    let (i, c) = ((t / per_feature) as usize, (t % per_feature) as usize);
    // SAFETY: `i < num_features`; every node below `nodes`, every bin below the feature's count.
    unsafe {
        let f = arch::load(a.features.add(i)) as usize;
        let n = a.bins(f);
        let context = arch::load(a.context);
        let (p, q) = (&context.params, &context.quantiser);
        let nodes = a.nodes as usize;
        let mut value = f64::NAN;
        if c < 2 * n {
            let mut missing = false;
            for node in 0..nodes {
                missing |= a.prefix(node, f, n - 1) != arch::load(a.totals.add(node));
            }
            if c < n || missing {
                let mut sum = 0.0f64;
                for node in 0..nodes {
                    let total = arch::load(a.totals.add(node));
                    let (left, right) = candidate_sums(c, n, total, |b| a.prefix(node, f, b));
                    sum += share(left, right, arch::load(a.parent_gains.add(node)), p, q) as f64;
                }
                value = sum;
            }
        }
        arch::store(out.add(t as usize), value);
    }
}

/// `out[node]`: each node's children's sums for candidate `candidate` of feature `feature` (two
/// pairs a node). One thread per node; after [`prefix_kernel`].
///
/// # Safety
/// As for [`prefix_kernel`], `feature` one of the level's features; `out` holds `2 * nodes` pairs.
pub unsafe fn node_sums_kernel(a: &LevelArgs, feature: u32, candidate: u32, out: *mut Fixed) {
    let node = global_thread() as usize;
    if node >= a.nodes as usize {
        return;
    }
    // SAFETY: `node < nodes`; the feature's bins lie in the node's slot.
    unsafe {
        let (f, total) = (feature as usize, arch::load(a.totals.add(node)));
        let (left, right) = candidate_sums(candidate as usize, a.bins(f), total, |b| a.prefix(node, f, b));
        arch::store(out.add(2 * node), left);
        arch::store(out.add(2 * node + 1), right);
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::split::{best_split_of_feature, calc_gain, SliceBins};
    use std::vec::Vec;

    #[test]
    fn candidates_walk_the_bins_as_the_node_scan_does() {
        let n = 4;
        let all: Vec<(i64, bool)> = (0..2 * n).map(|c| candidate(c, n)).collect();
        assert_eq!(all, [(0, false), (1, false), (2, false), (3, false), (2, true), (1, true), (0, true), (-1, true)]);
        let cuts = [1.0f32, 2.0, 3.0, 4.0];
        let thresholds: Vec<f32> = (0..2 * n).map(|c| threshold(c, n, |b| cuts[b])).collect();
        assert_eq!(thresholds, [1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0, NO_VALUE_LEFT]);
    }

    /// On a level of one node, the best candidate is the node's own best split.
    #[test]
    fn one_node_chooses_the_node_scans_split() {
        use primitives_kernels::ops::GradientPair;
        let p =
            SplitParams { eta: 0.3, gamma: 0.0, min_child_weight: 1.0, max_delta_step: 0.0, lambda: 1.0, alpha: 0.0 };
        let pairs = [(1.0f32, 2.0f32), (-3.0, 3.0), (2.5, 1.5), (-0.5, 2.0), (1.0, 1.0), (2.0, 2.0)];
        let gradients: Vec<GradientPair<f32>> = pairs.iter().map(|&(g, h)| GradientPair::new(g, h)).collect();
        let q = GradientQuantiser::new(&gradients);
        // Five bins and the missing values (the last pair).
        let fixed: Vec<GradientPair<i64>> = gradients.iter().map(|&g| q.to_fixed(g)).collect();
        let hist = &fixed[..5];
        let total = fixed.iter().fold(GradientPair::new(0, 0), |a, &b| GradientSum::add(a, b));
        let cuts = [0.5f32, 1.5, 2.5, 3.5, 4.5];
        let t = total.to_float(&q);
        let parent_gain = calc_gain(&p, t.grad, t.hess);
        let node = best_split_of_feature(
            &SliceBins { feature: 3, first_bin: 10, hist, cut_values: &cuts },
            total,
            &Parent::unconstrained(parent_gain),
            &p,
            &q,
        )
        .unwrap();
        let n = hist.len();
        let prefix = |b: usize| hist[..=b].iter().fold(GradientSum::ZERO, |a, &x| GradientSum::add(a, x));
        let best = best_of_feature(3, n, true, |c| {
            let (left, right) = candidate_sums(c, n, total, prefix);
            share(left, right, parent_gain, &p, &q) as f64
        })
        .unwrap();
        let (last_left, default_left) = candidate(best.candidate as usize, n);
        assert_eq!((10 + last_left, default_left), (node.last_left_bin, node.default_left));
        assert_eq!(best.loss_chg as f32, node.loss_chg);
        assert_eq!(threshold(best.candidate as usize, n, |b| cuts[b]), node.threshold);
    }
}
