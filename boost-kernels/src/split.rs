//! The arithmetic that decides a split: XGBoost 3.4's hist evaluator (`TreeEvaluator::SplitEvaluator`)
//! with its precision, and the scan over one feature's bins in both missing directions with its
//! tie-breaking. Written once for the CPU backend and the kernels, so both choose the same splits.
//!
//! With `T(G)` the gradient sum soft-thresholded by `alpha`, a node's weight is
//! `w = -T(G) / (H + lambda)` in double precision (0 without hessian, clipped to `max_delta_step`
//! when set), rounded to `f32`, then clipped to the node's [`Bounds`] (monotone constraints); a
//! leaf's value is that `f32` weight times `eta` in `f32`. A node's gain is XGBoost 3.4's
//! `CalcGainGivenWeight` of that weight, `-(2 G w + (H + lambda) w^2 + 2 alpha |w|)` in double
//! precision (`w^2` in `f32`) rounded to `f32`; a split's loss change is the children's gains minus
//! the parent's, in `f32`. A candidate needs hessian and `min_child_weight` in both children and,
//! on a feature with a monotone constraint, children's weights in its order. A split is kept when
//! its loss change is above 1e-6 (`kRtEps`) and at least `gamma`. Ties between features go to the
//! lower index, within a feature to the first candidate found (missing values right, then left);
//! XGBoost's `f32` rounding decides which candidates tie.

use primitives_kernels::ops::GradientPair;

use crate::fixed_point::{self, GradientQuantiser};

/// XGBoost's `kRtEps`: loss changes at or below it are no split.
pub const RT_EPS: f64 = 1e-6;

/// The parameters of gains and leaf weights, by XGBoost's names. `repr(C)` and `Pod` for the kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SplitParams {
    pub eta: f32,
    pub gamma: f32,
    pub min_child_weight: f32,
    pub max_delta_step: f32,
    pub lambda: f32,
    pub alpha: f32,
}

/// `g` moved toward zero by `alpha` (XGBoost's `ThresholdL1`).
#[inline]
pub fn threshold_l1(g: f64, alpha: f64) -> f64 {
    if g > alpha {
        g - alpha
    } else if g < -alpha {
        g + alpha
    } else {
        0.0
    }
}

/// XGBoost 3.4's `CalcWeight` (in double precision; the evaluator rounds it to `f32`).
#[inline]
pub fn calc_weight(p: &SplitParams, g: f64, h: f64) -> f64 {
    if h <= 0.0 {
        return 0.0;
    }
    let w = -threshold_l1(g, p.alpha as f64) / (h + p.lambda as f64);
    let mds = p.max_delta_step as f64;
    if mds != 0.0 && w.abs() > mds {
        mds.copysign(w)
    } else {
        w
    }
}

/// A leaf's value: XGBoost's `f32` weight times `eta` (in `f32`).
#[inline]
pub fn leaf_value(p: &SplitParams, g: f64, h: f64) -> f32 {
    calc_weight(p, g, h) as f32 * p.eta
}

/// XGBoost 3.4's `CalcGainGivenWeight`: the loss reduction of giving a node with sums `g`, `h`
/// the weight `w`, in double precision with `w^2` in `f32`, rounded to `f32`; 0 without hessian.
#[inline]
pub fn gain_given_weight(p: &SplitParams, g: f64, h: f64, w: f32) -> f32 {
    if h <= 0.0 {
        return 0.0;
    }
    let (w64, alpha) = (w as f64, p.alpha as f64);
    (-(2.0 * g * w64 + (h + p.lambda as f64) * (w * w) as f64 + 2.0 * alpha * w.abs() as f64)) as f32
}

/// The gain of a node with gradient sums `g`, `h` and no bounds: [`gain_given_weight`] of its own
/// `f32` weight (XGBoost 3.4's `CalcGain` in the evaluator).
#[inline]
pub fn calc_gain(p: &SplitParams, g: f64, h: f64) -> f32 {
    gain_given_weight(p, g, h, calc_weight(p, g, h) as f32)
}

/// The interval a node's children's weights are clipped to (XGBoost's monotone-constraint bounds):
/// unbounded at the root; a split on a constrained feature bounds its children at the mean of their
/// weights ([`Bounds::children`]). `repr(C)` and `Pod` for the kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Bounds {
    pub lower: f32,
    pub upper: f32,
}

impl Bounds {
    /// No bounds (XGBoost's `-FLT_MAX`, `FLT_MAX`).
    pub const NONE: Bounds = Bounds { lower: -f32::MAX, upper: f32::MAX };

    /// `w` clipped to the bounds (XGBoost's `ApplyBounds`).
    #[inline]
    pub fn clip(self, w: f32) -> f32 {
        if w < self.lower {
            self.lower
        } else if w > self.upper {
            self.upper
        } else {
            w
        }
    }

    /// The children's bounds after a split of a node with these bounds on a feature with monotone
    /// direction `monotone` (1 increasing, -1 decreasing, 0 none) whose children's weights are
    /// `left` and `right` (clipped, without `eta`): XGBoost's `TreeEvaluator::AddSplit`.
    #[inline]
    pub fn children(self, monotone: i32, left: f32, right: f32) -> (Bounds, Bounds) {
        let mid = (left + right) / 2.0;
        match monotone {
            m if m > 0 => (Bounds { upper: mid, ..self }, Bounds { lower: mid, ..self }),
            m if m < 0 => (Bounds { lower: mid, ..self }, Bounds { upper: mid, ..self }),
            _ => (self, self),
        }
    }
}

/// What a candidate split of a node is measured against: the node's gain, the bounds of its
/// children's weights, and the monotone direction of the feature being scanned (1 increasing, -1
/// decreasing, 0 none). Without monotone constraints the bounds are [`Bounds::NONE`], which no
/// finite weight reaches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parent {
    pub gain: f32,
    pub bounds: Bounds,
    pub monotone: i32,
}

impl Parent {
    /// A node of gain `gain` without constraints.
    #[inline]
    pub fn unconstrained(gain: f32) -> Parent {
        Parent { gain, bounds: Bounds::NONE, monotone: 0 }
    }

    /// The same node, scanning a feature of monotone direction `monotone`.
    #[inline]
    pub fn with_monotone(self, monotone: i32) -> Parent {
        Parent { monotone, ..self }
    }
}

/// A gradient-pair sum type of split finding: fixed point (`GradientPair<i64>`, what training
/// uses) or `GradientPair<f64>`/`GradientPair<f32>` (the precision experiment). Float sums are
/// rounded at every addition, so they depend on the order of summation.
pub trait GradientSum: Copy + PartialEq + Send + Sync + 'static {
    const ZERO: Self;
    fn add(a: Self, b: Self) -> Self;
    fn sub(a: Self, b: Self) -> Self;
    /// The sum as `f64`s (fixed point through the quantiser, floats widened).
    fn to_float(self, quantiser: &GradientQuantiser) -> GradientPair<f64>;
    /// Whether the hessian sum is non-zero (a child without hessian is no split).
    fn has_hessian(self) -> bool;
}

impl GradientSum for GradientPair<i64> {
    const ZERO: Self = GradientPair { grad: 0, hess: 0 };
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        fixed_point::add(a, b)
    }
    #[inline(always)]
    fn sub(a: Self, b: Self) -> Self {
        fixed_point::sub(a, b)
    }
    #[inline(always)]
    fn to_float(self, quantiser: &GradientQuantiser) -> GradientPair<f64> {
        quantiser.to_float(self)
    }
    #[inline(always)]
    fn has_hessian(self) -> bool {
        self.hess != 0
    }
}

macro_rules! float_sums {
    ($($t:ty),*) => {$(
        impl GradientSum for GradientPair<$t> {
            const ZERO: Self = GradientPair { grad: 0.0, hess: 0.0 };
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                GradientPair::new(a.grad + b.grad, a.hess + b.hess)
            }
            #[inline(always)]
            fn sub(a: Self, b: Self) -> Self {
                GradientPair::new(a.grad - b.grad, a.hess - b.hess)
            }
            #[inline(always)]
            fn to_float(self, _quantiser: &GradientQuantiser) -> GradientPair<f64> {
                GradientPair::new(self.grad as f64, self.hess as f64)
            }
            #[inline(always)]
            fn has_hessian(self) -> bool {
                self.hess != 0.0
            }
        }
    )*};
}

float_sums!(f32, f64);

/// A split of a node: for a numeric split, rows whose bin of `feature` is at most `last_left_bin`
/// (a global bin id; below the feature's first bin when no present value goes left) go left; for
/// a categorical one, rows whose category is in the set [`SplitKind`] names go right. Missing
/// values go to `default_left`; `left` and `right` are the children's sums.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split<S> {
    pub loss_chg: f32,
    pub feature: u32,
    pub last_left_bin: i64,
    pub threshold: f32,
    pub default_left: bool,
    pub left: S,
    pub right: S,
    pub kind: SplitKind,
}

/// What a split compares ([`crate::categorical`] for the categorical kinds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SplitKind {
    /// A threshold on the feature's bins (`last_left_bin`).
    #[default]
    Numeric,
    /// One category (the feature's bin `bin`) goes right, the others left.
    OneHot { bin: u32 },
    /// The first `count` categories of the node's order ([`crate::categorical::sort_key`]) go right.
    Partition { count: u32 },
}

impl SplitKind {
    /// Whether the split is on categories.
    #[inline]
    pub fn is_categorical(self) -> bool {
        self != SplitKind::Numeric
    }
}

/// One feature's histogram and cuts, as the scan reads them: its bins are the global bins
/// `first_bin()..first_bin() + bin_count()`, bin `b` with sum `hist(b)` and upper bound `cut_value(b)`. Slices on the CPU ([`SliceBins`]); device memory read through
/// `arch` in the kernels.
pub trait FeatureBins<S> {
    fn feature(&self) -> u32;
    fn first_bin(&self) -> u32;
    fn bin_count(&self) -> usize;
    fn hist(&self, b: usize) -> S;
    fn cut_value(&self, b: usize) -> f32;
}

/// The threshold of a split that sends no present value left (missing values left, every bin
/// right): XGBoost 3.4's lower bound of a feature's first bin, `-inf`.
pub const NO_VALUE_LEFT: f32 = f32::NEG_INFINITY;

/// [`FeatureBins`] over slices of the node's histogram and the cuts.
pub struct SliceBins<'a, S> {
    pub feature: u32,
    pub first_bin: u32,
    pub hist: &'a [S],
    pub cut_values: &'a [f32],
}

impl<S: Copy> FeatureBins<S> for SliceBins<'_, S> {
    fn feature(&self) -> u32 {
        self.feature
    }
    fn first_bin(&self) -> u32 {
        self.first_bin
    }
    fn bin_count(&self) -> usize {
        self.hist.len()
    }
    #[inline(always)]
    fn hist(&self, b: usize) -> S {
        self.hist[b]
    }
    #[inline(always)]
    fn cut_value(&self, b: usize) -> f32 {
        self.cut_values[b]
    }
}

/// The loss change of splitting `parent` into children with sums `left` and `right`, when that
/// split may be chosen (XGBoost 3.4's `CalcSplitGain`): both children have hessian and
/// `min_child_weight`, their weights (clipped to the parent's bounds) are in the order of the
/// feature's monotone constraint, and the change is finite (XGBoost's `SplitEntry::NeedReplace`
/// skips infinite changes).
#[inline(always)]
pub fn candidate_loss<S: GradientSum>(
    left: S,
    right: S,
    parent: &Parent,
    p: &SplitParams,
    q: &GradientQuantiser,
) -> Option<f32> {
    let mcw = p.min_child_weight as f64;
    let (l, r) = (left.to_float(q), right.to_float(q));
    if !(l.hess > 0.0 && r.hess > 0.0 && l.hess >= mcw && r.hess >= mcw) {
        return None;
    }
    let wl = parent.bounds.clip(calc_weight(p, l.grad, l.hess) as f32);
    let wr = parent.bounds.clip(calc_weight(p, r.grad, r.hess) as f32);
    let ordered = parent.monotone == 0 || (parent.monotone > 0 && wl <= wr) || (parent.monotone < 0 && wl >= wr);
    if !ordered {
        return None;
    }
    let gain = gain_given_weight(p, l.grad, l.hess, wl) + gain_given_weight(p, r.grad, r.hess, wr);
    let loss_chg = gain - parent.gain;
    loss_chg.is_finite().then_some(loss_chg)
}

/// The best split of one feature of a node with sums `total` (`parent`: its gain and constraints): a scan over
/// its bins with missing values going right (bins from the first on go left), then, when some rows
/// miss the feature, with them going left (bins from the last down go right). A candidate replaces
/// the best so far only with a strictly larger, finite loss change (XGBoost's `NeedReplace`), and
/// needs `min_child_weight` on both sides.
pub fn best_split_of_feature<S: GradientSum>(
    bins: &impl FeatureBins<S>,
    total: S,
    parent: &Parent,
    p: &SplitParams,
    q: &GradientQuantiser,
) -> Option<Split<S>> {
    let begin = bins.first_bin() as i64;
    let feature = bins.feature();
    let mut best: Option<Split<S>> = None;
    let mut consider = |left: S, right: S, last_left_bin: i64, threshold: f32, default_left: bool| {
        if let Some(loss_chg) = candidate_loss(left, right, parent, p, q) {
            if best.is_none_or(|b| loss_chg > b.loss_chg) {
                let kind = SplitKind::Numeric;
                best = Some(Split { loss_chg, feature, last_left_bin, threshold, default_left, left, right, kind });
            }
        }
    };
    let n = bins.bin_count();
    let mut left = S::ZERO;
    for b in 0..n {
        left = S::add(left, bins.hist(b));
        consider(left, S::sub(total, left), begin + b as i64, bins.cut_value(b), false);
    }
    // Exact for fixed point; float sums almost never compare equal, so they always try both
    // directions (as XGBoost's float evaluators did).
    if left != total {
        let mut right = S::ZERO;
        for b in (0..n).rev() {
            right = S::add(right, bins.hist(b));
            let threshold = if b == 0 { NO_VALUE_LEFT } else { bins.cut_value(b - 1) };
            consider(S::sub(total, right), right, begin + b as i64 - 1, threshold, true);
        }
    }
    best
}

/// Whether `candidate` (a split of a later feature) replaces `best` among a node's features, which
/// are taken in increasing order: only with a strictly larger loss change, so ties keep the lower
/// feature index.
#[inline]
pub fn replaces<S>(candidate: &Split<S>, best: Option<&Split<S>>) -> bool {
    best.is_none_or(|b| candidate.loss_chg > b.loss_chg)
}

/// Whether a node's best split is made (XGBoost's `ExpandEntry::IsValid`).
#[inline]
pub fn is_valid<S: GradientSum>(split: &Split<S>, p: &SplitParams) -> bool {
    split.loss_chg as f64 > RT_EPS && split.loss_chg >= p.gamma && split.left.has_hessian() && split.right.has_hessian()
}
