//! The exact method's split arithmetic (XGBoost's `ColMaker`): every boundary between two distinct
//! values of a feature is a candidate, not only a quantile cut. Written once for the CPU backend
//! (which walks each feature's sorted values once a level for all nodes, as XGBoost does) and the
//! kernels (which evaluate every boundary at once from prefix sums and keep the first best), so both
//! choose the same splits.
//!
//! A node's present values of a feature, sorted, are enumerated in up to two directions, each
//! accumulating the values taken so far (`taken`):
//! - *forward* (ascending; taken only when the feature has missing values and is not constant,
//!   XGBoost's `NeedForwardSearch`): the taken values go left, the rest and the missing right;
//! - *backward* (descending): the taken values go right, the rest and the missing left.
//!
//! Between two consecutive values `prev != value` a [`step`] candidate splits halfway between them,
//! when something with hessian has been taken (XGBoost's `GradStats::Empty` test); after the last
//! value an [`end`] candidate sends every present value to the taken side, the missing ones to the
//! other, its threshold past the last value by `|last| + kRtEps`. Candidates are compared by
//! [`candidate_loss`] (both children at `min_child_weight`, a finite change); within a feature the
//! first of the largest wins (forward before backward, each in its enumeration order), between
//! features the lower index ([`crate::split::replaces`]).
//!
//! One deviation from XGBoost: where `(lo + hi) / 2` rounds to `lo` (adjacent floats) or overflows,
//! the threshold is `hi`, so that a row's side under the stored threshold is always the side its
//! gradient was summed on (XGBoost falls back to the enumeration's previous value, which is right
//! for the backward direction only).

use crate::fixed_point::GradientQuantiser;
use crate::split::{candidate_loss, GradientSum, Split, SplitParams};

/// XGBoost's `kRtEps` as the `f32` it adds to `|last|` for an end candidate's gap.
pub const END_GAP: f32 = 1e-6;

/// The threshold between two adjacent distinct values `lo < hi`: their midpoint in `f32`, as
/// XGBoost computes it, or `hi` where that is not above `lo` or above `hi`.
#[inline(always)]
pub fn midpoint(lo: f32, hi: f32) -> f32 {
    let mid = (lo + hi) * 0.5;
    if lo < mid && mid <= hi {
        mid
    } else {
        hi
    }
}

/// The threshold of an end candidate after value `last`: above it for the forward direction
/// (every present value goes left), below it for the backward one (every present value right).
#[inline(always)]
pub fn past(last: f32, missing_left: bool) -> f32 {
    let gap = f32::from_bits(last.to_bits() & 0x7fff_ffff) + END_GAP;
    if missing_left {
        last - gap
    } else {
        last + gap
    }
}

/// The children of a candidate: the taken side is left going forward (`missing_left` false),
/// right going backward.
#[inline(always)]
pub fn sides<S: GradientSum>(taken: S, node: S, missing_left: bool) -> (S, S) {
    let rest = S::sub(node, taken);
    if missing_left {
        (rest, taken)
    } else {
        (taken, rest)
    }
}

/// The candidate between the last value taken, `prev`, and the next one, `value`, `taken` the sums
/// of the values taken so far: its loss change and children, or `None` when there is none (nothing
/// with hessian taken yet, equal values, a child below `min_child_weight`, an infinite change).
#[inline(always)]
pub fn step<S: GradientSum>(taken: S, prev: f32, value: f32, n: &NodeFeature<'_, S>) -> Option<(f32, S, S)> {
    if !taken.has_hessian() || value == prev {
        return None;
    }
    let (left, right) = sides(taken, n.node, n.missing_left);
    candidate_loss(left, right, n.parent_gain, n.params, n.quantiser).map(|loss| (loss, left, right))
}

/// The end candidate of a direction, `taken` every present value's sums: its loss change and
/// children, or `None` (a child below `min_child_weight`, an infinite change). XGBoost makes no
/// `Empty` test here.
#[inline(always)]
pub fn end<S: GradientSum>(taken: S, n: &NodeFeature<'_, S>) -> Option<(f32, S, S)> {
    let (left, right) = sides(taken, n.node, n.missing_left);
    candidate_loss(left, right, n.parent_gain, n.params, n.quantiser).map(|loss| (loss, left, right))
}

/// A candidate as a split of `feature` (the exact method has no bins: `last_left_bin` is 0).
#[inline(always)]
pub fn split_of<S>(feature: u32, (loss_chg, left, right): (f32, S, S), threshold: f32, missing_left: bool) -> Split<S> {
    Split { loss_chg, feature, last_left_bin: 0, threshold, default_left: missing_left, left, right }
}

/// One node's walk over one feature's values in one direction (the CPU's enumeration): the sums
/// taken, the last value and the best candidate so far.
#[derive(Clone, Copy, Debug)]
pub struct Enumeration<S> {
    pub taken: S,
    pub last: f32,
    pub best: Option<Split<S>>,
}

/// What a node's candidates need: its sums and gain, the feature, the direction (missing values
/// left: backward) and the parameters.
#[derive(Clone, Copy)]
pub struct NodeFeature<'a, S> {
    pub node: S,
    pub parent_gain: f32,
    pub feature: u32,
    pub missing_left: bool,
    pub params: &'a SplitParams,
    pub quantiser: &'a GradientQuantiser,
}

impl<S: GradientSum> Enumeration<S> {
    /// Nothing taken (the last value is not read before something is taken).
    pub const START: Self = Enumeration { taken: S::ZERO, last: 0.0, best: None };

    #[inline(always)]
    fn offer(&mut self, candidate: Split<S>) {
        if self.best.is_none_or(|b| candidate.loss_chg > b.loss_chg) {
            self.best = Some(candidate);
        }
    }

    /// Takes the next value (in the direction's order) with gradient `g`, first considering the
    /// candidate before it.
    #[inline(always)]
    pub fn take(&mut self, value: f32, g: S, n: &NodeFeature<'_, S>) {
        if let Some(c) = step(self.taken, self.last, value, n) {
            let (lo, hi) = if n.missing_left { (value, self.last) } else { (self.last, value) };
            self.offer(split_of(n.feature, c, midpoint(lo, hi), n.missing_left));
        }
        self.taken = S::add(self.taken, g);
        self.last = value;
    }

    /// Considers the end candidate and starts the next direction (the best kept).
    #[inline(always)]
    pub fn finish(&mut self, n: &NodeFeature<'_, S>) {
        if let Some(c) = end(self.taken, n) {
            self.offer(split_of(n.feature, c, past(self.last, n.missing_left), n.missing_left));
        }
        self.taken = S::ZERO;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use primitives_kernels::ops::GradientPair;

    #[test]
    fn midpoint_stays_between_the_values() {
        assert_eq!(midpoint(1.0, 2.0), 1.5);
        assert_eq!(midpoint(-3.0, -1.0), -2.0);
        let lo = 1.0f32;
        let hi = f32::from_bits(lo.to_bits() + 1);
        let mid = midpoint(lo, hi);
        assert!(lo < mid && mid <= hi, "adjacent floats: {mid}");
        assert_eq!(midpoint(f32::MAX / 1.5, f32::MAX), f32::MAX, "an overflowing sum takes hi");
    }

    #[test]
    fn end_thresholds_lie_past_every_value() {
        for last in [-1e30f32, -2.5, -0.0, 0.0, 1e-40, 3.0, 1e30] {
            assert!(past(last, false) > last, "{last}");
            assert!(past(last, true) < last, "{last}");
        }
    }

    #[test]
    fn an_enumeration_finds_the_first_best_boundary_in_each_direction() {
        let p =
            SplitParams { eta: 1.0, gamma: 0.0, min_child_weight: 0.5, max_delta_step: 0.0, lambda: 1.0, alpha: 0.0 };
        let values = [1.0f32, 2.0, 2.0, 3.0];
        let floats = [(-1.0f32, 1.0f32), (-1.0, 1.0), (1.0, 1.0), (1.0, 1.0)].map(|(g, h)| GradientPair::new(g, h));
        let q = GradientQuantiser::new(&floats);
        let grads = floats.map(|g| q.to_fixed(g));
        let node = grads.iter().fold(<GradientPair<i64> as GradientSum>::ZERO, |a, &g| GradientSum::add(a, g));
        let parent_gain = crate::split::calc_gain(&p, 0.0, 4.0);
        // Two boundaries, 1 | 2 2 3 and 1 2 2 | 3: gradients -1 | 1 with hessians 1 | 3, then
        // 3 | 1, both 1/2 + 1/4 = 0.75. The first found wins: 1.5 forward, 2.5 backward.
        let forward = NodeFeature { node, parent_gain, feature: 3, missing_left: false, params: &p, quantiser: &q };
        let mut e = Enumeration::START;
        for (v, g) in values.iter().zip(grads) {
            e.take(*v, g, &forward);
        }
        e.finish(&forward);
        let best = e.best.unwrap();
        assert_eq!((best.threshold, best.default_left, best.feature, best.loss_chg), (1.5, false, 3, 0.75));
        assert_eq!(best.left, grads[0]);
        let backward = NodeFeature { missing_left: true, ..forward };
        let mut b = Enumeration::START;
        for (v, g) in values.iter().zip(grads).rev() {
            b.take(*v, g, &backward);
        }
        b.finish(&backward);
        let best = b.best.unwrap();
        assert_eq!((best.threshold, best.default_left, best.loss_chg), (2.5, true, 0.75));
        assert_eq!(best.right, grads[3]);
    }

    #[test]
    fn an_end_candidate_splits_missing_from_present() {
        let p =
            SplitParams { eta: 1.0, gamma: 0.0, min_child_weight: 0.0, max_delta_step: 0.0, lambda: 1.0, alpha: 0.0 };
        let floats = [GradientPair::new(-2.0f32, 1.0), GradientPair::new(3.0, 1.0)];
        let q = GradientQuantiser::new(&floats);
        let (present, missing) = (q.to_fixed(floats[0]), q.to_fixed(floats[1]));
        let node = GradientSum::add(present, missing);
        let parent_gain = crate::split::calc_gain(&p, 1.0, 2.0);
        // One present value (5.0): no boundary, only the end candidate.
        let n = NodeFeature { node, parent_gain, feature: 0, missing_left: false, params: &p, quantiser: &q };
        let mut e = Enumeration::START;
        e.take(5.0, present, &n);
        e.finish(&n);
        let best = e.best.unwrap();
        assert_eq!((best.left, best.right, best.default_left), (present, missing, false));
        assert!(best.threshold > 5.0);
        assert_eq!(best.loss_chg, 2.0 + 4.5 - parent_gain);
    }
}
