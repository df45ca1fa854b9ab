//! Gradients in 64-bit fixed point (XGBoost's rounding-factor scheme), so that histogram and node
//! sums are exact integers whose value does not depend on the order of summation: the CPU and GPU
//! backends, and any thread count, build the same trees.
//!
//! For `n` gradients whose positive parts sum to `P` and negative parts to `N`, every partial sum lies
//! within `max(P, N)`. The rounding factor is the power of two at or above `max(P, N) / (1 - 2 n eps)`;
//! a gradient `g` becomes `trunc(g * 2^62 / factor)`, so no sum of them can overflow 63 bits. Gradients
//! and hessians get one factor each.
//!
//! The arithmetic is `boost_kernels::fixed_point`, shared with the kernels; this module re-exports it.

pub use boost_kernels::fixed_point::{add, rounding_factor, sub, GradientQuantiser};

use boost_kernels::fixed_point::{is_kept, QuantiserSums};
use boost_kernels::reduce::{self, BlockSum, SUM_BLOCK};
use primitives::ops::GradientPair;
use rayon::prelude::*;

/// [`GradientQuantiser::new`] with the blocks of its sums taken in parallel (the same blocks in the
/// same order, so the same quantiser), and the gradients converted by it.
pub fn quantise(gradients: &[GradientPair<f32>]) -> (GradientQuantiser, Vec<GradientPair<i64>>) {
    let quantiser = quantiser(gradients);
    let fixed = gradients.par_iter().map(|&g| quantiser.to_fixed(g)).collect();
    (quantiser, fixed)
}

/// The quantiser of [`quantise`], without converting the gradients (for a caller that converts
/// only some).
pub fn quantiser(gradients: &[GradientPair<f32>]) -> GradientQuantiser {
    let sums = crate::metric::fixed_order_sum(gradients.len(), |i| QuantiserSums::of(gradients[i]));
    GradientQuantiser::from_sums(sums.positive, sums.negative, gradients.len())
}

/// [`quantiser`] and the rows whose gradient is not zero ([`is_kept`]: those sampling kept), in one pass over
/// the gradients (the same blocks of sums in the same order, so the same quantiser). The rows come
/// increasing in runs, a run a task: concatenated, every such row.
pub fn quantiser_and_kept_rows(gradients: &[GradientPair<f32>]) -> (GradientQuantiser, Vec<Vec<u32>>) {
    let n = gradients.len();
    let term = |i: usize| QuantiserSums::of(gradients[i]);
    let tasks: Vec<(Vec<QuantiserSums>, Vec<u32>)> = (0..n.div_ceil(TASK_ROWS))
        .into_par_iter()
        .map(|task| {
            let blocks = task * TASK_ROWS / SUM_BLOCK..((task + 1) * TASK_ROWS).min(n).div_ceil(SUM_BLOCK);
            let sums = blocks.map(|b| reduce::block_sum(n, b, term)).collect();
            let rows = task * TASK_ROWS..((task + 1) * TASK_ROWS).min(n);
            (sums, rows.filter(|&i| is_kept(gradients[i])).map(|i| i as u32).collect())
        })
        .collect();
    let sums = tasks.iter().flat_map(|(sums, _)| sums).fold(QuantiserSums::zero(), |a, &b| a.plus(b));
    let quantiser = GradientQuantiser::from_sums(sums.positive, sums.negative, n);
    (quantiser, tasks.into_iter().map(|(_, rows)| rows).collect())
}

/// Rows a task of [`quantiser_and_kept_rows`]: whole blocks of the sums.
const TASK_ROWS: usize = 64 * SUM_BLOCK;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_gives_the_quantiser_and_the_kept_rows() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        for n in [0, 1, 1000, SUM_BLOCK, TASK_ROWS - 1, 3 * TASK_ROWS + 17] {
            let gradients: Vec<GradientPair<f32>> = (0..n)
                .map(|_| match rng.gen_bool(0.2) {
                    true => GradientPair::new(rng.gen_range(-3.0..3.0), rng.gen_range(0.0..1.0)),
                    false => GradientPair::new(0.0, 0.0),
                })
                .collect();
            let (quantiser_once, runs) = quantiser_and_kept_rows(&gradients);
            let want: Vec<u32> = (0..n as u32).filter(|&i| gradients[i as usize] != GradientPair::new(0.0, 0.0)).collect();
            assert_eq!(runs.concat(), want, "{n} rows");
            assert_eq!(quantiser_once, quantiser(&gradients), "{n} rows");
        }
    }
    use rand::{Rng, SeedableRng};

    /// The factor as this module computed it before it moved to `boost-kernels` (with `log2`),
    /// which the models of the accuracy tests were built with.
    fn rounding_factor_by_log2(max_abs_sum: f64, n: usize) -> f64 {
        let bound = max_abs_sum / (1.0 - 2.0 * n as f64 * f64::EPSILON);
        if bound <= 0.0 || !bound.is_finite() {
            return 1.0;
        }
        let e = bound.log2().floor() as i32 + 1;
        let mut factor = 2f64.powi(e);
        while factor / 2.0 >= bound {
            factor /= 2.0;
        }
        factor
    }

    #[test]
    fn rounding_factor_from_bits_is_the_one_from_log2() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        for k in -60..60 {
            let power = 2f64.powi(k);
            for x in [power, power * (1.0 + f64::EPSILON), power * (1.0 - f64::EPSILON / 2.0), power * 1.5] {
                for n in [1, 1000, 10_000_000] {
                    assert_eq!(rounding_factor(x, n), rounding_factor_by_log2(x, n), "{x} {n}");
                }
            }
        }
        for _ in 0..100_000 {
            // Normal numbers: for a subnormal sum the old code's `powi` gave 0 (no factor at all).
            let x = f64::from_bits(rng.gen_range(0x0010_0000_0000_0000u64..0x7fe0_0000_0000_0000));
            let n = rng.gen_range(0..1usize << 30);
            assert_eq!(rounding_factor(x, n), rounding_factor_by_log2(x, n), "{x} {n}");
        }
        for x in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(rounding_factor(x, 10), rounding_factor_by_log2(x, 10), "{x}");
        }
        assert_eq!(rounding_factor(5e-324, 1), 5e-324);
    }

    /// The parallel quantiser is the sequential one, for sizes around the reduction's blocks.
    #[test]
    fn the_parallel_quantiser_is_the_sequential_one() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(8);
        for n in [0, 1, 1000, 65_537, 300_001] {
            let gradients: Vec<GradientPair<f32>> =
                (0..n).map(|_| GradientPair::new(rng.gen_range(-3.0..1.0), rng.gen_range(0.0..0.5))).collect();
            let (q, fixed) = quantise(&gradients);
            let sequential = GradientQuantiser::new(&gradients);
            assert_eq!(q, sequential, "{n}");
            assert!(fixed.iter().zip(&gradients).all(|(&f, &g)| f == sequential.to_fixed(g)));
        }
    }

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
