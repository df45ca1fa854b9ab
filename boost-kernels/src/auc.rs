//! The area under the ROC and precision-recall curves of one prediction a row (XGBoost's
//! `BinaryAUC`), written once so that the CPU's walk and the device's sort-and-scan give the same
//! bits.
//!
//! XGBoost walks the rows sorted by prediction, descending, summing the weighted false and true
//! positives in `f64` one row after the other, and adds a segment's area at each change of
//! prediction: the order of those sums is the sort's. Here the positives are fixed-point integers
//! (one scale for the whole walk, [`fixed_scale`]), so every prefix is exact whatever the order of
//! the rows within a tie group and whatever the scan; each tie group's segment is a function of the
//! prefixes at its ends ([`group_area`]); and the areas are summed by position in `reduce`'s fixed
//! order (zero at positions that do not end a group). The CPU does the walk in one loop, the device
//! with our radix sort, two scans and [`area_kernel`].
//!
//! A prefix is a `GradientPair<i64>` (the scans of fixed-point gradient pairs serve): `grad` the
//! false positives `Σ (1 - y) w`, `hess` the true positives `Σ y w`.
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::metric::{LossSum, Transform};
use crate::objective::{softmax_normaliser, softmax_probability};
use crate::reduce;

/// Weighted false and true positives in fixed point (`grad`: false, `hess`: true).
pub type Positives = GradientPair<i64>;

/// Which curve.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AucCurve(pub u32);

impl AucCurve {
    /// ROC: the trapezoid under each segment, normalised by `FP · TP` at the end.
    pub const ROC: AucCurve = AucCurve(0);
    /// Precision-recall: the exact area under Davis & Goadrich's interpolation, already normalised.
    pub const PR: AucCurve = AucCurve(1);
}

/// The largest a row's term can be, `max(|(1 - y) w|, |y w|)`: [`fixed_scale`] takes the row count
/// times the largest of these as the bound of every prefix.
#[inline]
pub fn term_bound(label: f32, weight: f32) -> f64 {
    let (negative, positive) = (((1.0 - label) * weight) as f64, (label * weight) as f64);
    let (negative, positive) = (libm::fabs(negative), libm::fabs(positive));
    if negative > positive {
        negative
    } else {
        positive
    }
}

/// The power of two that turns the walk's terms into integers with prefixes below `2^62`, for
/// prefixes at most `bound` in magnitude.
pub fn fixed_scale(bound: f64) -> f64 {
    const LIMIT: f64 = (1u64 << 62) as f64;
    // Powers of two keep `t * scale` exact; the cap keeps a zero bound finite.
    let mut scale = 1.0f64;
    while bound * scale >= LIMIT {
        scale *= 0.5;
    }
    let mut doublings = 0;
    while bound * scale * 2.0 < LIMIT && doublings < 900 {
        scale *= 2.0;
        doublings += 1;
    }
    scale
}

/// A row's terms in fixed point: `(1 - y) w` false positives and `y w` true positives (products in
/// `f32`, as XGBoost).
#[inline]
pub fn row_positives(label: f32, weight: f32, scale: f64) -> Positives {
    let fixed = |t: f32| libm::round(t as f64 * scale) as i64;
    GradientPair::new(fixed((1.0 - label) * weight), fixed(label * weight))
}

/// A prefix as `f64` values: `(FP, TP)`.
#[inline]
pub fn to_f64(p: Positives, scale: f64) -> (f64, f64) {
    (p.grad as f64 / scale, p.hess as f64 / scale)
}

/// The area of a tie group's segment, from the prefix before the group (`before`; zero for the
/// first group) to the prefix at its end (`end`); `total` is the whole walk's prefix (PR divides by
/// its true positives).
#[inline]
pub fn group_area(curve: AucCurve, before: Positives, end: Positives, total: Positives, scale: f64) -> f64 {
    let (fp_prev, tp_prev) = to_f64(before, scale);
    let (fp, tp) = to_f64(end, scale);
    if curve == AucCurve::PR {
        pr_segment(fp_prev, fp, tp_prev, tp, to_f64(total, scale).1)
    } else {
        libm::fabs(fp_prev - fp) * (tp_prev + tp) / 2.0
    }
}

/// The PR segment between two points of the walk, integrated exactly along the interpolation of
/// Davis & Goadrich (precision as a function of recall when TP and FP grow linearly together).
#[inline]
fn pr_segment(fp_prev: f64, fp: f64, tp_prev: f64, tp: f64, total_pos: f64) -> f64 {
    let pr_prev = tp_prev / total_pos;
    let pr = tp / total_pos;
    let (a, b) = if tp == tp_prev {
        (1.0, 0.0)
    } else {
        let h = (fp - fp_prev) / (tp - tp_prev);
        (1.0 + h, (fp_prev - h * tp_prev) / total_pos)
    };
    if b != 0.0 {
        (pr - pr_prev - b / a * (libm::log(a * pr + b) - libm::log(a * pr_prev + b))) / a
    } else {
        (pr - pr_prev) / a
    }
}

/// The metric from the walk's total prefix and its summed area: ROC's area over `FP · TP`, PR's
/// area as it is; NaN without positives or without negatives (XGBoost's "only positive or negative
/// samples").
pub fn finish(curve: AucCurve, total: Positives, area: f64, scale: f64) -> f64 {
    let (fp, tp) = to_f64(total, scale);
    if fp <= 0.0 || tp <= 0.0 {
        return f64::NAN;
    }
    if curve == AucCurve::PR {
        area
    } else {
        area / (fp * tp)
    }
}

/// `keys[i]`: row `i`'s prediction, `rows[i] = i`: the pairs the radix sort orders, largest
/// prediction first. With one margin a row (`classes = 1`) the prediction is `transform` of it; with
/// `classes > 1` margins a row (row-major) it is the softmax probability of class `class` (one walk
/// of the one-vs-rest AUC). One thread per row.
///
/// # Safety
/// `margins` holds `n * classes` values, `keys` and `rows` `n`; `class < classes`.
pub unsafe fn keys_kernel(
    margins: *const f32,
    n: u64,
    classes: u64,
    class: u64,
    transform: Transform,
    keys: *mut f32,
    rows: *mut u32,
) {
    let i = global_thread();
    if i >= n {
        return;
    }
    let (i, classes) = (i as usize, classes as usize);
    // SAFETY: `i < n`; row `i`'s margins are `i * classes..(i + 1) * classes`.
    unsafe {
        let key = if classes > 1 {
            let row = margins.add(i * classes);
            let normaliser = softmax_normaliser(|c| arch::load(row.add(c)), classes);
            softmax_probability(arch::load(row.add(class as usize)), normaliser)
        } else {
            transform.apply(arch::load(margins.add(i)))
        };
        arch::store(keys.add(i), key);
        arch::store(rows.add(i), i as u32);
    }
}

/// A row's label in the walk: the label itself for one output, `[y = class]` for a class's
/// one-vs-rest walk (`classes > 1`).
#[inline]
pub fn walk_label(label: f32, classes: u64, class: u64) -> f32 {
    if classes <= 1 {
        label
    } else if label == class as f32 {
        1.0
    } else {
        0.0
    }
}

/// At sorted position `p`: `positives[p]`, the terms of row `rows[p]` (its [`walk_label`]), and
/// `heads[p]`, `p` where a tie group starts (`p = 0` or another prediction than at `p - 1`), else 0;
/// an inclusive max-scan of `heads` gives each position its group's start. `weights` may be null
/// (every weight 1). One thread per position.
///
/// # Safety
/// `keys`, `rows` (row indices below `n`), `labels`, `positives` and `heads` hold `n` values, and
/// `weights` too when not null.
#[allow(clippy::too_many_arguments)]
pub unsafe fn positives_kernel(
    keys: *const f32,
    rows: *const u32,
    labels: *const f32,
    weights: *const f32,
    n: u64,
    classes: u64,
    class: u64,
    scale: f64,
    positives: *mut Positives,
    heads: *mut u32,
) {
    let p = global_thread();
    if p >= n {
        return;
    }
    let p = p as usize;
    // SAFETY: `p < n`, `p - 1` too when `p > 0`; the row index is below `n`.
    unsafe {
        let row = arch::load(rows.add(p)) as usize;
        let weight = if weights.is_null() { 1.0 } else { arch::load(weights.add(row)) };
        let label = walk_label(arch::load(labels.add(row)), classes, class);
        arch::store(positives.add(p), row_positives(label, weight, scale));
        let head = p == 0 || arch::load(keys.add(p)) != arch::load(keys.add(p - 1));
        arch::store(heads.add(p), if head { p as u32 } else { 0 });
    }
}

/// The area term at sorted position `p`: [`group_area`] where `p` ends a tie group, else 0.
/// `prefix(q)` is the inclusive prefix at position `q`.
#[inline]
pub fn position_area(
    curve: AucCurve,
    p: usize,
    ends_group: bool,
    group_start: usize,
    prefix: impl Fn(usize) -> Positives,
    total: Positives,
    scale: f64,
) -> f64 {
    if !ends_group {
        return 0.0;
    }
    let before = if group_start == 0 { GradientPair::new(0, 0) } else { prefix(group_start - 1) };
    group_area(curve, before, prefix(p), total, scale)
}

/// `block_sums[b].loss`: block `b`'s sum of [`position_area`] over the `n` sorted positions (the
/// metrics' [`LossSum`] carries it, weight 0, so that their blocked sums serve), from
/// the sorted `keys`, the inclusive `prefixes` of the positives and each position's `group_starts`.
/// One warp per block of [`reduce::SUM_BLOCK`] positions.
///
/// # Safety
/// `keys`, `prefixes` and `group_starts` (positions at most their own) hold `n >= 1` values,
/// `block_sums` room for a sum per block; the grid has whole warps.
pub unsafe fn area_kernel(
    keys: *const f32,
    prefixes: *const Positives,
    group_starts: *const u32,
    n: u64,
    curve: AucCurve,
    scale: f64,
    block_sums: *mut LossSum,
) {
    let block = (global_thread() / arch::WARP_SIZE as u64) as usize;
    let n = n as usize;
    if block >= reduce::blocks(n) {
        return;
    }
    // SAFETY: `n >= 1`.
    let total = unsafe { arch::load(prefixes.add(n - 1)) };
    let sum = reduce::warp_block_sum(n, block, |p| {
        // SAFETY: `p < n`, and `p + 1 < n` where it is read; group starts are positions below `n`.
        unsafe {
            let ends_group = p + 1 == n || arch::load(keys.add(p)) != arch::load(keys.add(p + 1));
            let start = arch::load(group_starts.add(p)) as usize;
            let area = position_area(curve, p, ends_group, start, |q| arch::load(prefixes.add(q)), total, scale);
            LossSum { loss: area, weight: 0.0 }
        }
    });
    if arch::lane_id() == 0 {
        // SAFETY: `block` is below the block count.
        unsafe { arch::store(block_sums.add(block), sum) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_is_the_largest_power_of_two_under_the_limit() {
        let limit = (1u64 << 62) as f64;
        for bound in [1.0, 3.0, 1e7, 2.5e-3, 1e30] {
            let s = fixed_scale(bound);
            assert!(bound * s < limit && bound * s * 2.0 >= limit, "{bound}: {s}");
            assert_eq!(s.log2().fract(), 0.0, "{bound}: a power of two");
        }
        assert!(fixed_scale(0.0).is_finite());
    }

    #[test]
    fn unit_terms_are_exact_integers() {
        let scale = fixed_scale(1000.0);
        let p = row_positives(1.0, 1.0, scale);
        assert_eq!(to_f64(p, scale), (0.0, 1.0));
        let q = row_positives(0.25, 2.0, scale);
        assert_eq!(to_f64(q, scale), (1.5, 0.5));
    }
}
