//! CatBoost's ordered target statistics (Prokhorenkova et al. 2018, "CatBoost: unbiased boosting
//! with categorical features"): a categorical value becomes a number, the mean label of the rows of
//! its category, pulled toward a prior. Taken over all training rows, a row's own label leaks into
//! its encoding (target leakage); the ordered scheme instead draws one random permutation of the
//! rows, and a row's value is the statistic of the rows of its category that come *before* it:
//!
//! ```text
//! value(row) = (sum of earlier labels + prior_weight * prior) / (earlier rows + prior_weight)
//! ```
//!
//! with `prior` the mean label. Prediction uses the statistic of all training rows of the category
//! (the prior for a category training never saw). Both backends order the rows by [`sort_key`]
//! (the category, then a hash of the row: a permutation drawn from the seed, ties by row) and sum
//! labels in 64-bit fixed point, exact in any order, so the CPU's sequential running sums and the
//! GPU's segmented scan give the same integers, and [`OrderedStatistics::value`] the same bits.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::fixed_point::rounding_factor;
use crate::sampling::split_mix;

/// The category of a missing value in [`sort_key`] (above every category code).
pub const MISSING: u32 = u32::MAX;

/// The run's constants. `repr(C)` and `Pod` for the kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct OrderedStatistics {
    /// The permutation's seed.
    pub seed: u64,
    /// A label in fixed point is `trunc(label * to_fixed)`.
    pub to_fixed: f64,
    /// A fixed-point sum times this is the sum of labels.
    pub to_float: f64,
    /// `prior_weight * prior`: the prior's pseudo-sum.
    pub prior_mass: f64,
    /// The prior's weight in rows.
    pub prior_weight: f64,
}

impl OrderedStatistics {
    /// The constants for `labels` (the prior is their mean, in fixed point), `prior_weight > 0`.
    pub fn new(seed: u64, labels: &[f32], prior_weight: f64) -> Self {
        let abs_sum: f64 = labels.iter().map(|&y| if y < 0.0 { -(y as f64) } else { y as f64 }).sum();
        let factor = rounding_factor(abs_sum, labels.len());
        let one = (1u64 << 62) as f64;
        let to_float = factor / one;
        let mut stats = OrderedStatistics { seed, to_fixed: 1.0 / to_float, to_float, prior_mass: 0.0, prior_weight };
        let sum: i64 = labels.iter().map(|&y| stats.label(y)).sum();
        let prior = if labels.is_empty() { 0.0 } else { sum as f64 * to_float / labels.len() as f64 };
        stats.prior_mass = prior_weight * prior;
        stats
    }

    /// A label in fixed point (truncated toward zero).
    #[inline(always)]
    pub fn label(&self, y: f32) -> i64 {
        (y as f64 * self.to_fixed) as i64
    }

    /// The encoding of a category whose rows counted (so far) have labels summing to `sum` (fixed
    /// point) over `count` rows.
    #[inline(always)]
    pub fn value(&self, sum: i64, count: i64) -> f32 {
        ((sum as f64 * self.to_float + self.prior_mass) / (count as f64 + self.prior_weight)) as f32
    }

    /// The encoding of a category without rows: the prior.
    pub fn prior_value(&self) -> f32 {
        self.value(0, 0)
    }
}

/// The order key of `row` holding category code `code` (`NaN`: missing): its category in the high
/// half, so that a category's rows are adjacent, and the row's place in the permutation in the low
/// half. A stable sort of the rows by it (rows in index order) is the order both backends count in.
#[inline(always)]
pub fn sort_key(code: f32, seed: u64, row: u64) -> u64 {
    let category = if code.is_nan() { MISSING } else { code as u32 };
    ((category as u64) << 32) | (split_mix(seed, row) >> 32)
}

/// The category of a [`sort_key`].
#[inline(always)]
pub fn key_category(key: u64) -> u32 {
    (key >> 32) as u32
}

/// Thread `i` < `rows`: the key of row `i` ([`sort_key`]) and `i` itself, the value the sort moves.
///
/// # Safety
/// `codes`, `keys` and `order` hold `rows` items each.
pub unsafe fn keys_kernel(codes: *const f32, rows: u64, seed: u64, keys: *mut u64, order: *mut u32) {
    let i = global_thread();
    if i >= rows {
        return;
    }
    // SAFETY: `i < rows`, as the contract's buffers hold.
    unsafe {
        arch::store(keys.add(i as usize), sort_key(arch::load(codes.add(i as usize)), seed, i));
        arch::store(order.add(i as usize), i as u32);
    }
}

/// Thread `i` < `rows`, over the rows sorted by key: the category of place `i` (the scan's segment
/// key) and its row's label in fixed point with a count of 1.
///
/// # Safety
/// `keys`, `order`, `categories` and `pairs` hold `rows` items; `order` holds row indices of
/// `labels`; `stats` points to one [`OrderedStatistics`].
pub unsafe fn pairs_kernel(
    keys: *const u64,
    order: *const u32,
    labels: *const f32,
    rows: u64,
    stats: *const OrderedStatistics,
    categories: *mut u32,
    pairs: *mut GradientPair<i64>,
) {
    let i = global_thread() as usize;
    if i as u64 >= rows {
        return;
    }
    // SAFETY: `i < rows` and `order[i]` a row of `labels`, as the contract says.
    unsafe {
        let stats = arch::load(stats);
        let label = arch::load(labels.add(arch::load(order.add(i)) as usize));
        arch::store(categories.add(i), key_category(arch::load(keys.add(i))));
        arch::store(pairs.add(i), GradientPair::new(stats.label(label), 1));
    }
}

/// Thread `i` < `rows`, over the sorted rows with `before` the exclusive segmented scan of `pairs`
/// by category: row `order[i]`'s encoding (`NaN` for a missing value); the last place of a category
/// also writes the category's statistic over all its rows to `table` (which starts at the prior).
///
/// # Safety
/// `categories`, `order`, `before` and `pairs` hold `rows` items; `values` holds a value for every
/// row in `order`; `table` holds `table_len` values; `stats` points to one [`OrderedStatistics`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn values_kernel(
    categories: *const u32,
    order: *const u32,
    before: *const GradientPair<i64>,
    pairs: *const GradientPair<i64>,
    rows: u64,
    stats: *const OrderedStatistics,
    values: *mut f32,
    table: *mut f32,
    table_len: u64,
) {
    let i = global_thread() as usize;
    if i as u64 >= rows {
        return;
    }
    // SAFETY: every index is below `rows` or `table_len`, as the contract's buffers hold.
    unsafe {
        let stats = arch::load(stats);
        let category = arch::load(categories.add(i));
        let row = arch::load(order.add(i)) as usize;
        if category == MISSING {
            arch::store(values.add(row), f32::NAN);
            return;
        }
        let b = arch::load(before.add(i));
        arch::store(values.add(row), stats.value(b.grad, b.hess));
        let last = i as u64 + 1 == rows || arch::load(categories.add(i + 1)) != category;
        if last && (category as u64) < table_len {
            let p = arch::load(pairs.add(i));
            arch::store(table.add(category as usize), stats.value(b.grad + p.grad, b.hess + p.hess));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_labels_are_exact_and_the_prior_is_their_mean() {
        let labels = [1.0f32, 0.0, 1.0, 1.0];
        let stats = OrderedStatistics::new(7, &labels, 1.0);
        let sum: i64 = labels.iter().map(|&y| stats.label(y)).sum();
        assert_eq!(sum as f64 * stats.to_float, 3.0);
        assert_eq!(stats.prior_value(), 0.75);
        // Two earlier rows, one positive: (1 + 0.75) / 3.
        assert_eq!(stats.value(stats.label(1.0), 2), (1.75f64 / 3.0) as f32);
    }

    #[test]
    fn keys_group_categories_and_put_missing_last() {
        let k = |code, row| sort_key(code, 3, row);
        assert!(k(2.0, 9) > k(1.0, 0));
        assert!(k(f32::NAN, 0) > k(16_777_215.0, 5));
        assert_eq!(key_category(k(5.0, 1)), 5);
        assert_eq!(key_category(k(f32::NAN, 1)), MISSING);
    }
}
