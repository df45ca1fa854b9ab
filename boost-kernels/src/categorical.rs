//! Categorical splits, as XGBoost 3.4's `hist` evaluator makes them for features of type `c`.
//! A categorical feature's bins are its codes `0..=max` (bin `c` of the feature is category `c`).
//!
//! * Fewer bins than `max_cat_to_onehot`: **one-hot** splits. One category goes right, all others
//!   left; each category is tried with missing values left, then with them right.
//! * Otherwise **partition** splits. The node's categories are sorted by their weight
//!   ([`sort_key`]: XGBoost's `CalcWeightCat`, a stable sort), and the categories going right are a
//!   prefix of that order: a forward scan (missing values left) grows the right side from the
//!   start, a backward one (missing values right) the left side from the end, each over at most
//!   `max_cat_threshold - 1` candidates.
//!
//! A candidate replaces the best so far only with a strictly larger loss change, as in
//! [`crate::split`]. The set a split sends right is a bitset over the feature's bins
//! ([`CategorySet`]); rows whose category is in it go right, missing values to the default side.
//! The CPU backend sorts with the standard library, the GPU with the primitives' segmented radix
//! sort; both sort by these keys, so both choose, and write, the same categories.

use crate::fixed_point::GradientQuantiser;
use crate::predict::MAX_CATEGORY;
use crate::split::{calc_weight, candidate_loss, FeatureBins, GradientSum, Parent, Split, SplitKind, SplitParams};

/// The split condition XGBoost writes for a categorical split (its `DftBadValue`, the smallest
/// positive `f32`); prediction does not read it.
pub const CATEGORICAL_CONDITION: f32 = f32::from_bits(1);

/// XGBoost's categorical parameters. `repr(C)` and `Pod` for the kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CategoricalParams {
    /// Features with fewer categories (bins) than this get one-hot splits.
    pub max_cat_to_onehot: u32,
    /// The most categories a partition scan considers on either side.
    pub max_cat_threshold: u32,
}

impl Default for CategoricalParams {
    /// XGBoost's defaults: 4 and 64.
    fn default() -> Self {
        CategoricalParams { max_cat_to_onehot: 4, max_cat_threshold: 64 }
    }
}

/// Whether `v` is a category code: a whole number from 0 below [`MAX_CATEGORY`] (XGBoost's limit,
/// the integers an `f32` holds exactly).
#[inline]
pub fn is_category(v: f32) -> bool {
    v >= 0.0 && v < MAX_CATEGORY as f32 && (v as u32) as f32 == v
}

/// Whether a categorical feature of `bins` categories gets one-hot splits (XGBoost's `UseOneHot`).
#[inline]
pub fn use_one_hot(bins: usize, p: &CategoricalParams) -> bool {
    bins < p.max_cat_to_onehot as usize
}

/// The key a partition split sorts a node's categories by: the category's weight rounded to `f32`
/// (XGBoost's `CalcWeightCat`: `tree::CalcWeight`, which, unlike the evaluator's weight, has no
/// `min_child_weight` cut-off), with `-0` taken as `0` so that a radix sort of the keys' bits
/// orders them as `<` does.
#[inline]
pub fn sort_key<S: GradientSum>(sum: S, p: &SplitParams, q: &GradientQuantiser) -> f32 {
    let s = sum.to_float(q);
    let p = SplitParams { min_child_weight: 0.0, ..*p };
    let key = calc_weight(&p, s.grad, s.hess) as f32;
    if key == 0.0 {
        0.0
    } else {
        key
    }
}

/// The best one-hot split of a categorical feature of a node with sums `total` (`parent`: its
/// gain and constraints): each category against the others, missing values left, then right.
pub fn best_one_hot_split<S: GradientSum>(
    bins: &impl FeatureBins<S>,
    total: S,
    parent: &Parent,
    p: &SplitParams,
    q: &GradientQuantiser,
) -> Option<Split<S>> {
    let n = bins.bin_count();
    let mut present = S::ZERO;
    for b in 0..n {
        present = S::add(present, bins.hist(b));
    }
    let missing = S::sub(total, present);
    let mut best: Option<Split<S>> = None;
    for b in 0..n {
        let category = bins.hist(b);
        for (right, default_left) in [(category, true), (S::add(category, missing), false)] {
            let left = S::sub(total, right);
            let kind = SplitKind::OneHot { bin: b as u32 };
            consider(&mut best, bins.feature(), kind, left, right, default_left, parent, p, q);
        }
    }
    best
}

/// The best partition split of a categorical feature: `sorted(i)` is the feature's bin at place
/// `i` of the node's order (increasing [`sort_key`], ties in bin order). The forward scan's best
/// first; the backward scan's replaces it only when strictly better.
pub fn best_partition_split<S: GradientSum>(
    bins: &impl FeatureBins<S>,
    sorted: impl Fn(usize) -> usize,
    total: S,
    parent: &Parent,
    p: &SplitParams,
    c: &CategoricalParams,
    q: &GradientQuantiser,
) -> Option<Split<S>> {
    let n = bins.bin_count();
    let steps = (c.max_cat_threshold as usize).min(n).saturating_sub(1);
    let feature = bins.feature();
    let mut best: Option<Split<S>> = None;
    let mut right = S::ZERO;
    for i in 0..steps {
        right = S::add(right, bins.hist(sorted(i)));
        let kind = SplitKind::Partition { count: i as u32 + 1 };
        consider(&mut best, feature, kind, S::sub(total, right), right, true, parent, p, q);
    }
    let mut backward: Option<Split<S>> = None;
    let mut left = S::ZERO;
    for i in (n - steps..n).rev() {
        left = S::add(left, bins.hist(sorted(i)));
        let kind = SplitKind::Partition { count: i as u32 };
        consider(&mut backward, feature, kind, left, S::sub(total, left), false, parent, p, q);
    }
    match (best, backward) {
        (Some(f), Some(b)) if b.loss_chg > f.loss_chg => Some(b),
        (None, b) => b,
        (f, _) => f,
    }
}

/// Keeps a candidate in `best` when it may be chosen and is strictly better.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn consider<S: GradientSum>(
    best: &mut Option<Split<S>>,
    feature: u32,
    kind: SplitKind,
    left: S,
    right: S,
    default_left: bool,
    parent: &Parent,
    p: &SplitParams,
    q: &GradientQuantiser,
) {
    if let Some(loss_chg) = candidate_loss(left, right, parent, p, q) {
        if best.is_none_or(|b| loss_chg > b.loss_chg) {
            let threshold = CATEGORICAL_CONDITION;
            *best = Some(Split { loss_chg, feature, last_left_bin: -1, threshold, default_left, left, right, kind });
        }
    }
}

/// The categories a split sends right, as a bitset over its feature's bins: bit `b % 32` of word
/// `b / 32` is bin (category) `b`.
pub struct CategorySet<'a> {
    pub words: &'a [u32],
}

/// Words of a bitset over `bins` bins.
#[inline]
pub const fn words_for(bins: usize) -> usize {
    bins.div_ceil(32)
}

/// Adds bin `b` to a bitset.
#[inline]
pub fn insert(words: &mut [u32], b: usize) {
    words[b / 32] |= 1 << (b % 32);
}

/// Fills `words` (zeroed, over `bins` bins) with the categories a partition split of `count`
/// sends right: the first `count` of the node's order. `edge` is the end of the order that
/// decides them, at most `max_cat_threshold - 1` bins: those first `count` when missing values go
/// left (the forward scan's splits), else the last `bins - count`, which stay left (the backward
/// scan's). The device copies only that end back to the host.
pub fn partition_set(words: &mut [u32], bins: usize, count: usize, default_left: bool, edge: &[u32]) {
    if default_left {
        edge.iter().take(count).for_each(|&b| insert(words, b as usize));
        return;
    }
    (0..bins).for_each(|b| insert(words, b));
    for &b in edge.iter().take(bins.saturating_sub(count)) {
        words[b as usize / 32] &= !(1 << (b % 32));
    }
}

/// The end of a partition split's order that [`partition_set`] reads: its first `count` bins
/// when missing values go left, else the bins from `count` on.
#[inline]
pub fn partition_edge(order_len: usize, count: usize, default_left: bool) -> core::ops::Range<usize> {
    if default_left {
        0..count.min(order_len)
    } else {
        count.min(order_len)..order_len
    }
}

impl CategorySet<'_> {
    /// Whether bin `b` of the feature is in the set (bins past the words are not).
    #[inline(always)]
    pub fn contains(&self, b: u32) -> bool {
        match self.words.get((b / 32) as usize) {
            Some(w) => w >> (b % 32) & 1 != 0,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use primitives_kernels::ops::GradientPair;

    use super::*;
    use crate::split::SliceBins;

    type F = GradientPair<f64>;

    fn params() -> SplitParams {
        SplitParams { eta: 0.3, gamma: 0.0, min_child_weight: 1.0, max_delta_step: 0.0, lambda: 1.0, alpha: 0.0 }
    }

    /// The best loss over every set of categories going right (`subsets`: any subset; otherwise
    /// the prefixes of `order`), with missing values on either side.
    fn brute_force(hist: &[F], missing: F, order: &[usize], subsets: bool, p: &SplitParams) -> f32 {
        let q = GradientQuantiser::new(&[GradientPair::new(1.0, 1.0)]);
        let total = hist.iter().fold(missing, |a, &b| F::add(a, b));
        let parent = Parent::unconstrained(crate::split::calc_gain(p, total.grad, total.hess));
        let n = hist.len();
        let sets: Vec<Vec<usize>> = if subsets {
            (1..(1u32 << n) - 1).map(|m| (0..n).filter(|&b| m >> b & 1 == 1).collect()).collect()
        } else {
            (1..n).map(|k| order[..k].to_vec()).collect()
        };
        let mut best = f32::NEG_INFINITY;
        for set in sets {
            let right = set.iter().fold(F::ZERO, |a, &b| F::add(a, hist[b]));
            for r in [right, F::add(right, missing)] {
                if let Some(l) = candidate_loss(F::sub(total, r), r, &parent, p, &q) {
                    best = best.max(l);
                }
            }
        }
        best
    }

    #[test]
    fn one_hot_tries_each_category_with_missing_values_on_both_sides() {
        let (p, q) = (params(), GradientQuantiser::new(&[GradientPair::new(1.0, 1.0)]));
        let hist = [F::new(-4.0, 3.0), F::new(1.0, 2.0), F::new(2.0, 4.0)];
        let missing = F::new(-6.0, 2.0);
        let total = hist.iter().fold(missing, |a, &b| F::add(a, b));
        let bins = SliceBins { feature: 3, first_bin: 10, hist: &hist, cut_values: &[0.5, 1.5, 2.5] };
        let parent = &Parent::unconstrained(crate::split::calc_gain(&p, total.grad, total.hess));
        let best = best_one_hot_split(&bins, total, parent, &p, &q).unwrap();
        // By hand: category 0 with the missing rows right ((-10, 5) against (3, 6)) is the best.
        assert_eq!((best.kind, best.default_left, best.feature), (SplitKind::OneHot { bin: 0 }, false, 3));
        assert_eq!(best.right, F::new(-10.0, 5.0));
        assert_eq!(best.threshold.to_bits(), 1);
    }

    #[test]
    fn partition_finds_the_best_subset_of_sorted_categories() {
        let (p, q) = (params(), GradientQuantiser::new(&[GradientPair::new(1.0, 1.0)]));
        // Categories whose weights interleave with their codes: the best subset is not a range of codes.
        let hist: Vec<F> = [(3.0, 2.0), (-5.0, 3.0), (4.0, 2.0), (-1.0, 4.0), (-6.0, 2.0), (2.0, 5.0)]
            .iter()
            .map(|&(g, h)| F::new(g, h))
            .collect();
        let missing = F::new(1.5, 1.0);
        let total = hist.iter().fold(missing, |a, &b| F::add(a, b));
        let cuts: Vec<f32> = (0..hist.len()).map(|c| c as f32 + 0.5).collect();
        let bins = SliceBins { feature: 0, first_bin: 0, hist: &hist, cut_values: &cuts };
        let mut order: Vec<usize> = (0..hist.len()).collect();
        order.sort_by(|&a, &b| sort_key(hist[a], &p, &q).total_cmp(&sort_key(hist[b], &p, &q)));
        let parent = &Parent::unconstrained(crate::split::calc_gain(&p, total.grad, total.hess));
        let c = CategoricalParams::default();
        let best = best_partition_split(&bins, |i| order[i], total, parent, &p, &c, &q).unwrap();
        // The best of the prefixes of the weight order, either side; no subset does better here.
        assert_eq!(best.loss_chg, brute_force(&hist, missing, &order, false, &p), "{best:?}");
        assert!(best.loss_chg >= brute_force(&hist, missing, &order, true, &p) - 1e-4);
        let SplitKind::Partition { count } = best.kind else { panic!("{best:?}") };
        let right = order[..count as usize]
            .iter()
            .fold(if best.default_left { F::ZERO } else { missing }, |a, &b| F::add(a, hist[b]));
        assert_eq!(best.right, right);
        // A threshold of 2 leaves one candidate each way: the first category alone right (missing
        // left), or the last alone left (missing right).
        let c = CategoricalParams { max_cat_threshold: 2, ..c };
        let narrow = best_partition_split(&bins, |i| order[i], total, parent, &p, &c, &q).unwrap();
        let count = match narrow.kind {
            SplitKind::Partition { count } => count as usize,
            _ => unreachable!(),
        };
        assert!(count == 1 || count == hist.len() - 1, "{narrow:?}");
    }

    #[test]
    fn a_partition_set_is_the_orders_prefix_from_either_end() {
        let order = [5u32, 2, 7, 0, 3, 6, 1, 4];
        for count in 1..order.len() {
            let mut want = [0u32; 1];
            order[..count].iter().for_each(|&b| insert(&mut want, b as usize));
            for default_left in [true, false] {
                let mut words = [0u32; 1];
                let edge = &order[partition_edge(order.len(), count, default_left)];
                partition_set(&mut words, order.len(), count, default_left, edge);
                assert_eq!(words, want, "count {count}, default left {default_left}");
            }
        }
    }

    #[test]
    fn bitsets_hold_their_bins_only() {
        let mut words = [0u32; words_for(40)];
        insert(&mut words, 0);
        insert(&mut words, 33);
        let set = CategorySet { words: &words };
        assert!(set.contains(0) && set.contains(33) && !set.contains(1) && !set.contains(32));
        assert!(!set.contains(64) && !set.contains(u32::MAX));
    }
}
