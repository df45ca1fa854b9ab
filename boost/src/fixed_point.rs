//! Gradients in 64-bit fixed point (XGBoost's rounding-factor scheme), so that histogram and node
//! sums are exact integers whose value does not depend on the order of summation: the CPU and GPU
//! backends, and any thread count, build the same trees.
//!
//! For `n` gradients whose positive parts sum to `P` and negative parts to `N`, every partial sum lies
//! within `max(P, N)`. The rounding factor is the power of two at or above `max(P, N) / (1 - 2 n eps)`;
//! a gradient `g` becomes `trunc(g * 2^62 / factor)`, so no sum of them can overflow 63 bits. Gradients
//! and hessians get one factor each.

use primitives::ops::GradientPair;

/// Converts gradient pairs to and from fixed point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradientQuantiser {
    to_fixed: GradientPair<f64>,
    to_float: GradientPair<f64>,
}

fn rounding_factor(max_abs_sum: f64, n: usize) -> f64 {
    let bound = max_abs_sum / (1.0 - 2.0 * n as f64 * f64::EPSILON);
    if bound <= 0.0 || !bound.is_finite() {
        return 1.0;
    }
    // The power of two at or above the bound (frexp: bound = m 2^e with 0.5 <= m < 1).
    let e = bound.log2().floor() as i32 + 1;
    let mut factor = 2f64.powi(e);
    while factor / 2.0 >= bound {
        factor /= 2.0;
    }
    factor
}

impl GradientQuantiser {
    /// The quantiser for this set of gradients.
    pub fn new(gradients: &[GradientPair<f32>]) -> Self {
        let (mut pos, mut neg) = (GradientPair::new(0f64, 0f64), GradientPair::new(0f64, 0f64));
        for g in gradients {
            let (gg, hh) = (g.grad as f64, g.hess as f64);
            if gg > 0.0 {
                pos.grad += gg;
            } else {
                neg.grad -= gg;
            }
            if hh > 0.0 {
                pos.hess += hh;
            } else {
                neg.hess -= hh;
            }
        }
        let n = gradients.len();
        let one = (1u64 << 62) as f64;
        let factor =
            GradientPair::new(rounding_factor(pos.grad.max(neg.grad), n), rounding_factor(pos.hess.max(neg.hess), n));
        let to_float = GradientPair::new(factor.grad / one, factor.hess / one);
        Self { to_fixed: GradientPair::new(1.0 / to_float.grad, 1.0 / to_float.hess), to_float }
    }

    /// One gradient pair in fixed point (truncated toward zero, as XGBoost's conversion).
    #[inline(always)]
    pub fn to_fixed(&self, g: GradientPair<f32>) -> GradientPair<i64> {
        GradientPair::new((g.grad as f64 * self.to_fixed.grad) as i64, (g.hess as f64 * self.to_fixed.hess) as i64)
    }

    /// A fixed-point sum back in floating point.
    #[inline(always)]
    pub fn to_float(&self, g: GradientPair<i64>) -> GradientPair<f64> {
        GradientPair::new(g.grad as f64 * self.to_float.grad, g.hess as f64 * self.to_float.hess)
    }
}

/// Component-wise fixed-point addition and subtraction (exact; wrapping never happens within the
/// quantiser's bound).
#[inline(always)]
pub fn add(a: GradientPair<i64>, b: GradientPair<i64>) -> GradientPair<i64> {
    GradientPair::new(a.grad.wrapping_add(b.grad), a.hess.wrapping_add(b.hess))
}

#[inline(always)]
pub fn sub(a: GradientPair<i64>, b: GradientPair<i64>) -> GradientPair<i64> {
    GradientPair::new(a.grad.wrapping_sub(b.grad), a.hess.wrapping_sub(b.hess))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn rounding_factor_is_the_power_of_two_above_the_bound() {
        assert_eq!(rounding_factor(3.0, 10), 4.0);
        assert_eq!(rounding_factor(0.3, 10), 0.5);
        assert_eq!(rounding_factor(0.0, 10), 1.0);
        // Exactly a power of two: the (1 - 2 n eps) margin pushes it to the next one.
        assert_eq!(rounding_factor(4.0, 10), 8.0);
    }

    #[test]
    fn sums_are_exact_in_any_order_and_close_to_the_float_sum() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        let gradients: Vec<GradientPair<f32>> =
            (0..100_000).map(|_| GradientPair::new(rng.gen_range(-1.0..1.0), rng.gen_range(0.0..0.25))).collect();
        let q = GradientQuantiser::new(&gradients);
        let fixed: Vec<_> = gradients.iter().map(|&g| q.to_fixed(g)).collect();
        let forward = fixed.iter().fold(GradientPair::new(0, 0), |a, &b| add(a, b));
        let backward = fixed.iter().rev().fold(GradientPair::new(0, 0), |a, &b| add(a, b));
        assert_eq!(forward, backward);
        let exact_grad: f64 = gradients.iter().map(|g| g.grad as f64).sum();
        let exact_hess: f64 = gradients.iter().map(|g| g.hess as f64).sum();
        let back = q.to_float(forward);
        // Each conversion truncates less than one unit of 2^-62 * factor.
        let unit = q.to_float(GradientPair::new(1, 1));
        assert!((back.grad - exact_grad).abs() <= 1e5 * unit.grad, "{} vs {exact_grad}", back.grad);
        assert!((back.hess - exact_hess).abs() <= 1e5 * unit.hess);
        assert_eq!(sub(forward, fixed[0]), fixed[1..].iter().fold(GradientPair::new(0, 0), |a, &b| add(a, b)));
    }
}
