//! Leaf values recomputed from the rows' residuals after a tree is built (XGBoost's adaptive trees,
//! `src/objective/adaptive.cc`), for `reg:absoluteerror`: a leaf's value becomes the α-quantile of
//! `label - margin` over its rows (α = 0.5, the median), the exact minimiser of its loss, where the
//! Newton step of the tree builder is only an approximation.
//!
//! Written once: the CPU backend sorts each leaf's residuals and calls [`sorted_quantile`] or
//! [`sorted_weighted_quantile`]; on the device [`residual_keys_kernel`] makes a sort key per
//! position of the row order, our segmented radix sort orders each leaf's keys, and
//! [`leaf_quantiles_kernel`] runs the same two functions, a thread per leaf. Rows whose gradient has
//! a zero hessian (left out by row sampling, or of weight 0) take no part, as in XGBoost, and a leaf
//! left without rows keeps its value scaled by `eta` once more ([`refreshed_leaf`]), as XGBoost's
//! `UpdateLeafValues` does.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;
use primitives_kernels::radix_key::RadixKey;

use crate::evaluate::global_thread;

/// The sort key of a row that takes no part (a zero hessian): after every residual.
pub const EXCLUDED: u64 = 1 << 32;

/// Bits of [`residual_key`] the sort must order (the residual's 32 and the exclusion bit).
pub const KEY_BITS: u32 = 33;

/// XGBoost's `common::Quantile` of the `n` values `value(0) <= ... <= value(n - 1)` (R's type 6):
/// with `x = α (n + 1)`, `α <= 1/(n+1)` gives the smallest, `α >= n/(n+1)` the largest, otherwise
/// `v[⌊x⌋-1] + (x - ⌊x⌋)(v[⌊x⌋] - v[⌊x⌋-1])`; NaN for no values.
#[inline]
pub fn sorted_quantile(alpha: f64, n: usize, value: impl Fn(usize) -> f32) -> f32 {
    if n == 0 {
        return f32::NAN;
    }
    let nf = n as f64;
    if alpha <= 1.0 / (nf + 1.0) {
        return value(0);
    }
    if alpha >= nf / (nf + 1.0) {
        return value(n - 1);
    }
    let x = alpha * (nf + 1.0);
    let k = libm::floor(x) - 1.0;
    let d = (x - 1.0) - k;
    let k = k as usize;
    let v0 = value(k);
    let v1 = value(if k + 1 < n { k + 1 } else { n - 1 });
    (v0 as f64 + d * (v1 - v0) as f64) as f32
}

/// XGBoost's `common::WeightedQuantile` of `n` sorted values with weights: the first value whose
/// cumulative weight (summed in `f32`, in order) is at least `α` times the total, the last when none
/// is; no interpolation. NaN for no values.
#[inline]
pub fn sorted_weighted_quantile(
    alpha: f64,
    n: usize,
    value: impl Fn(usize) -> f32,
    weight: impl Fn(usize) -> f32,
) -> f32 {
    if n == 0 {
        return f32::NAN;
    }
    let mut total = 0.0f32;
    for i in 0..n {
        total += weight(i);
    }
    let threshold = (total as f64 * alpha) as f32;
    // The same additions as the total's, so the running sum is the cumulative weight bit for bit.
    let mut cumulative = 0.0f32;
    for i in 0..n {
        cumulative += weight(i);
        // Not below the threshold (a NaN one included, as the host's `partition_point(c < t)`).
        if cumulative.partial_cmp(&threshold) != Some(core::cmp::Ordering::Less) {
            return value(i);
        }
    }
    value(n - 1)
}

/// A leaf's new value from its quantile (NaN when the leaf has no rows that take part): the quantile
/// times `eta`, or, without one, the leaf's `current` value (already scaled) times `eta` again, as
/// XGBoost 3.x's `UpdateLeafValues` gives.
#[inline]
pub fn refreshed_leaf(quantile: f32, current: f32, eta: f32) -> f32 {
    if quantile.is_nan() {
        current * eta
    } else {
        quantile * eta
    }
}

/// The ascending order of `f32` as `u32` keys: `-0.0` equal to `+0.0`, every NaN after `+inf` (equal
/// to each other), the order [`sorted_quantile`]'s callers sort residuals in: the radix sorts'
/// order-preserving image of the key.
#[inline]
pub fn ascending_key(x: f32) -> u32 {
    x.image()
}

/// The sort key of a row of residual `residual` and gradient `gradient`: [`ascending_key`], or
/// [`EXCLUDED`] for a zero hessian.
#[inline]
pub fn residual_key(residual: f32, gradient: GradientPair<f32>) -> u64 {
    if gradient.hess == 0.0 {
        EXCLUDED
    } else {
        ascending_key(residual) as u64
    }
}

/// The residuals of one output as a kernel reads them.
#[derive(Clone, Copy)]
pub struct Residuals {
    pub labels: *const f32,
    /// `outputs` margins a row; the residual is of margin `output`.
    pub margins: *const f32,
    pub outputs: u64,
    pub output: u64,
}

impl Residuals {
    /// `label - margin` of `row`.
    ///
    /// # Safety
    /// `row` is a row of `labels` and `margins`.
    #[inline]
    unsafe fn of(&self, row: usize) -> f32 {
        // SAFETY: the caller's contract.
        unsafe {
            arch::load(self.labels.add(row))
                - arch::load(self.margins.add(row * self.outputs as usize + self.output as usize))
        }
    }
}

/// `keys[p]`: [`residual_key`] of row `rows[p]`. One thread per position.
///
/// # Safety
/// `rows` and `keys` hold `n` values, every row within `residuals`' buffers and `gradients`.
pub unsafe fn residual_keys_kernel(
    rows: *const u32,
    n: u64,
    residuals: Residuals,
    gradients: *const GradientPair<f32>,
    keys: *mut u64,
) {
    let p = global_thread();
    if p >= n {
        return;
    }
    // SAFETY: `p < n`; the contract covers the row's values.
    unsafe {
        let row = arch::load(rows.add(p as usize)) as usize;
        let key = residual_key(residuals.of(row), arch::load(gradients.add(row)));
        arch::store(keys.add(p as usize), key);
    }
}

/// `out[l]`: the `alpha`-quantile of leaf `l`'s residuals, from its segment `offsets[l]..offsets[l +
/// 1]` of `keys` and `rows` sorted by [`residual_key`] (the rows that take part first, by residual),
/// weighted by `weights` unless null; NaN for a leaf without rows that take part. One thread per
/// leaf.
///
/// # Safety
/// `offsets` holds `num_leaves + 1` non-decreasing positions within `keys` and `rows`; every row
/// within `residuals`' buffers (and `weights` when not null); `out` holds `num_leaves` values.
#[allow(clippy::too_many_arguments)]
pub unsafe fn leaf_quantiles_kernel(
    keys: *const u64,
    rows: *const u32,
    offsets: *const u32,
    num_leaves: u64,
    residuals: Residuals,
    weights: *const f32,
    alpha: f64,
    out: *mut f32,
) {
    let l = global_thread();
    if l >= num_leaves {
        return;
    }
    // SAFETY: `l < num_leaves`; positions `begin..end` are within `keys` and `rows` and their rows
    // within the other buffers (the contract).
    unsafe {
        let begin = arch::load(offsets.add(l as usize)) as usize;
        let end = arch::load(offsets.add(l as usize + 1)) as usize;
        // The rows that take part are the segment's head: its keys below `EXCLUDED`.
        let (mut lo, mut hi) = (begin, end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if arch::load(keys.add(mid)) < EXCLUDED {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let n = lo - begin;
        let row = |i: usize| arch::load(rows.add(begin + i)) as usize;
        let value = |i: usize| residuals.of(row(i));
        let q = if weights.is_null() {
            sorted_quantile(alpha, n, value)
        } else {
            sorted_weighted_quantile(alpha, n, value, |i| arch::load(weights.add(row(i))))
        };
        arch::store(out.add(l as usize), q);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascending_keys_order_as_numbers_with_zeros_equal_and_nan_last() {
        let xs = [f32::NEG_INFINITY, -3.5, -1e-30, -0.0, 0.0, 1e-30, 2.0, f32::INFINITY, f32::NAN];
        for pair in xs.windows(2) {
            let (a, b) = (ascending_key(pair[0]), ascending_key(pair[1]));
            if pair[0] == 0.0 && pair[1] == 0.0 {
                assert_eq!(a, b);
            } else {
                assert!(a < b, "{} before {}", pair[0], pair[1]);
            }
        }
        assert_eq!(ascending_key(-f32::NAN), ascending_key(f32::NAN));
        assert!((ascending_key(f32::NAN) as u64) < EXCLUDED);
        assert_eq!(residual_key(1.0, GradientPair::new(1.0, 0.0)), EXCLUDED);
    }

    #[test]
    fn quantiles_of_sorted_values() {
        let v = [1.0f32, 2.0, 3.0, 4.0];
        assert_eq!(sorted_quantile(0.5, 4, |i| v[i]), 2.5);
        assert_eq!(sorted_quantile(0.5, 3, |i| v[i]), 2.0);
        assert_eq!(sorted_quantile(0.1, 4, |i| v[i]), 1.0);
        assert_eq!(sorted_quantile(0.9, 4, |i| v[i]), 4.0);
        assert!(sorted_quantile(0.5, 0, |i| v[i]).is_nan());
        let w = [0.5f32, 1.0, 1.5, 2.0];
        // Total 5, threshold 2.5: cumulative 0.5, 1.5, 3.0 reaches it at the third value.
        assert_eq!(sorted_weighted_quantile(0.5, 4, |i| v[i], |i| w[i]), 3.0);
        // All weights zero: the first value reaches a zero threshold.
        assert_eq!(sorted_weighted_quantile(0.5, 2, |i| v[i], |_| 0.0), 1.0);
        assert_eq!(refreshed_leaf(f32::NAN, 0.5, 0.1), 0.5 * 0.1);
        assert_eq!(refreshed_leaf(2.0, 0.5, 0.1), 2.0 * 0.1);
    }
}
