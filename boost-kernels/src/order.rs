//! Orders and order statistics written once for the host and the device: the ascending order of
//! `f32` as radix-sort keys ([`ascending_key`], which ranking and the quantile objective's
//! `base_score` sort by) and XGBoost's quantiles of sorted values ([`sorted_quantile`],
//! [`sorted_weighted_quantile`]: `common::Quantile` and `WeightedQuantile`).

use primitives_kernels::radix_key::RadixKey;

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

/// The ascending order of `f32` as `u32` keys: `-0.0` equal to `+0.0`, every NaN after `+inf` (equal
/// to each other), the order [`sorted_quantile`]'s callers sort values in: the radix sorts'
/// order-preserving image of the key.
#[inline]
pub fn ascending_key(x: f32) -> u32 {
    x.image()
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
    }
}
