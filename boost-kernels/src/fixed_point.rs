//! Gradients in 64-bit fixed point (XGBoost's rounding-factor scheme), so that histogram and node
//! sums are exact integers whose value does not depend on the order of summation: the CPU and GPU
//! backends, and any thread count, build the same trees.
//!
//! For `n` gradients whose positive parts sum to `P` and negative parts to `N`, every partial sum lies
//! within `max(P, N)`. The rounding factor is the power of two at or above `max(P, N) / (1 - 2 n eps)`;
//! a gradient `g` becomes `trunc(g * 2^62 / factor)`, so no sum of them can overflow 63 bits. Gradients
//! and hessians get one factor each.

use primitives_kernels::ops::GradientPair;

/// Converts gradient pairs to and from fixed point. `repr(C)` and `Pod`, so a kernel can take it
/// from device memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GradientQuantiser {
    to_fixed: GradientPair<f64>,
    to_float: GradientPair<f64>,
}

/// The smallest power of two at or above `max_abs_sum / (1 - 2 n eps)` (1 when that is not a
/// positive finite number). Found from the bits, so it needs no `log2` and is the same everywhere.
pub fn rounding_factor(max_abs_sum: f64, n: usize) -> f64 {
    let bound = max_abs_sum / (1.0 - 2.0 * n as f64 * f64::EPSILON);
    if bound.is_nan() || bound <= 0.0 || bound == f64::INFINITY {
        return 1.0;
    }
    let mut factor = f64::from_bits(bound.to_bits() & !((1u64 << 52) - 1));
    if factor == 0.0 {
        // A subnormal bound: count up from the smallest subnormal.
        factor = f64::from_bits(1);
    }
    while factor < bound {
        factor *= 2.0;
    }
    factor
}

impl GradientQuantiser {
    /// The quantiser for gradients whose positive and negative parts (as positive numbers) sum to
    /// `positive` and `negative`, `n` of them.
    pub fn from_sums(positive: GradientPair<f64>, negative: GradientPair<f64>, n: usize) -> Self {
        let one = (1u64 << 62) as f64;
        let grad = if positive.grad > negative.grad { positive.grad } else { negative.grad };
        let hess = if positive.hess > negative.hess { positive.hess } else { negative.hess };
        let factor = GradientPair::new(rounding_factor(grad, n), rounding_factor(hess, n));
        let to_float = GradientPair::new(factor.grad / one, factor.hess / one);
        Self { to_fixed: GradientPair::new(1.0 / to_float.grad, 1.0 / to_float.hess), to_float }
    }

    /// The quantiser for this set of gradients, its sums taken in the blocked order of
    /// [`crate::reduce`] (the GPU takes the same sums, warp by warp).
    pub fn new(gradients: &[GradientPair<f32>]) -> Self {
        let sums = crate::reduce::sum(gradients.len(), |i| QuantiserSums::of(gradients[i]));
        Self::from_sums(sums.positive, sums.negative, gradients.len())
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

/// The sums a quantiser is made from: the positive parts and the negated negative parts of the
/// gradients and hessians, in `f64`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct QuantiserSums {
    pub positive: GradientPair<f64>,
    pub negative: GradientPair<f64>,
}

impl QuantiserSums {
    /// One gradient's term.
    #[inline(always)]
    pub fn of(g: GradientPair<f32>) -> Self {
        let (grad, hess) = (g.grad as f64, g.hess as f64);
        let (pg, ng) = if grad > 0.0 { (grad, 0.0) } else { (0.0, -grad) };
        let (ph, nh) = if hess > 0.0 { (hess, 0.0) } else { (0.0, -hess) };
        QuantiserSums { positive: GradientPair::new(pg, ph), negative: GradientPair::new(ng, nh) }
    }
}

impl crate::reduce::BlockSum for QuantiserSums {
    fn zero() -> Self {
        Self::default()
    }
    #[inline(always)]
    fn plus(self, o: Self) -> Self {
        QuantiserSums {
            positive: GradientPair::new(self.positive.grad + o.positive.grad, self.positive.hess + o.positive.hess),
            negative: GradientPair::new(self.negative.grad + o.negative.grad, self.negative.hess + o.negative.hess),
        }
    }
}

/// Whether a row's gradient puts it in a tree's rows: any pair but zero (rows sampling left out
/// have zero; `-0.0` is zero). External-memory training gathers only these rows.
#[inline(always)]
pub fn is_kept(g: GradientPair<f32>) -> bool {
    g != GradientPair::new(0.0, 0.0)
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
