//! Objectives of the residual `r = m - y` with a scale set each round, as XGBoost 3.4 computes
//! them: `reg:absoluteerror` (a smooth majorisation of `|r|`) and `reg:quantileerror` (a
//! logistic smoothing of the pinball loss, one output per `quantile_alpha`). Output `j`'s scale is
//! `S_j = (Σ w √|r_j| / Σ w)²` over every row ([`root_residual_term`] summed in the fixed order of
//! [`crate::reduce`], then [`scale`]); with it a row's pair is
//!
//! - absolute error: `δ = S`, `c = δ / hypot(δ, r)` (1 when both are 0): `(w r c, w c)`;
//! - quantile `α`: `x = r / (0.04 S)`: `(w S (tanh x + 1 - 2α) / 2, w max(tanh x / x, 3e-4) / 0.08)`,
//!   both 0 when `S` is not positive or `w = 0`.
//!
//! Written once: the CPU's objectives call [`ScaledResidual::gradient`] and sum the terms with the
//! same blocks; on the device [`root_residual_sums_kernel`] sums an output's terms by block (the
//! host adds the blocks in order) and [`gradients_kernel`] writes every output's pairs.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::metric::LossSum;
use crate::reduce;

/// The most `quantile_alpha` values an objective on the device takes (its parameters are one
/// kernel argument); more take the host's gradients.
pub const MAX_QUANTILES: usize = 16;

/// XGBoost's smoothing bandwidth of the quantile loss, relative to the scale.
const SMOOTHING: f32 = 0.04;
/// XGBoost's floor of the quantile loss's curvature ratio `tanh x / x`.
const MIN_RATIO: f32 = 3.0e-4;

/// One row's term of output `j`'s scale: `w √|m - y|` (in `f32`, as XGBoost) and the weight.
#[inline]
pub fn root_residual_term(margin: f32, label: f32, weight: f32) -> LossSum {
    LossSum { loss: (weight * libm::sqrtf(libm::fabsf(margin - label))) as f64, weight: weight as f64 }
}

/// The round's scale from an output's summed terms: `(Σ w √|r| / Σ w)²` in `f64`, rounded to `f32`;
/// 0 when the weights sum to (nearly) nothing (XGBoost's `CloseTo(Σ w, 0)`).
#[inline]
pub fn scale(sums: LossSum) -> f32 {
    if libm::fabs(sums.weight) < 1e-6 {
        return 0.0;
    }
    let root_mean = sums.loss / sums.weight;
    (root_mean * root_mean) as f32
}

/// `reg:absoluteerror`'s pair of a row at scale `delta`.
#[inline]
pub fn absolute_error_gradient(margin: f32, label: f32, weight: f32, delta: f32) -> GradientPair<f32> {
    let residual = margin - label;
    let norm = libm::hypotf(delta, residual);
    let curvature = if norm > 0.0 { delta / norm } else { 1.0 };
    GradientPair::new(weight * residual * curvature, weight * curvature)
}

/// `reg:quantileerror`'s pair of a row for quantile `alpha` at scale `scale`.
#[inline]
pub fn quantile_gradient(margin: f32, label: f32, weight: f32, scale: f32, alpha: f32) -> GradientPair<f32> {
    // XGBoost's `!(S > 0)`, which a NaN scale fails too.
    if scale.partial_cmp(&0.0) != Some(core::cmp::Ordering::Greater) || weight == 0.0 {
        return GradientPair::new(0.0, 0.0);
    }
    let residual = margin - label;
    let x = residual / (SMOOTHING * scale);
    let tanh_x = libm::tanhf(x);
    let ratio = if x == 0.0 { 1.0 } else { tanh_x / x };
    let ratio = if ratio > MIN_RATIO { ratio } else { MIN_RATIO };
    let grad = 0.5 * scale * (tanh_x + 1.0 - 2.0 * alpha);
    let hess = 0.5 / SMOOTHING * ratio;
    GradientPair::new(weight * grad, weight * hess)
}

/// A scaled-residual objective as the device takes it: which one, its outputs (the alphas'
/// count; 1 for absolute error) and the alphas.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ScaledResidual {
    pub kind: u32,
    pub outputs: u32,
    pub alphas: [f32; MAX_QUANTILES],
}

impl ScaledResidual {
    pub const ABSOLUTE_ERROR: u32 = 0;
    pub const QUANTILE: u32 = 1;

    /// Output `output`'s pair of a row at that output's scale.
    #[inline]
    pub fn gradient(&self, output: usize, margin: f32, label: f32, weight: f32, scale: f32) -> GradientPair<f32> {
        if self.kind == Self::ABSOLUTE_ERROR {
            absolute_error_gradient(margin, label, weight, scale)
        } else {
            quantile_gradient(margin, label, weight, scale, self.alphas[output])
        }
    }
}

/// `block_sums[b]`: block `b`'s sum of [`root_residual_term`] of output `output` over the `n` rows
/// (margins row-major, `outputs` a row). `weights` may be null (every weight 1). One warp per
/// block of [`reduce::SUM_BLOCK`] rows.
///
/// # Safety
/// `margins` holds `n * outputs` values, `labels` (and `weights` when not null) `n`, `block_sums`
/// room for a sum per block; `output < outputs`; the grid has whole warps.
pub unsafe fn root_residual_sums_kernel(
    margins: *const f32,
    labels: *const f32,
    weights: *const f32,
    n: u64,
    outputs: u64,
    output: u64,
    block_sums: *mut LossSum,
) {
    let block = (global_thread() / arch::WARP_SIZE as u64) as usize;
    if block >= reduce::blocks(n as usize) {
        return;
    }
    let (outputs, output) = (outputs as usize, output as usize);
    let sum = reduce::warp_block_sum(n as usize, block, |i| {
        // SAFETY: `warp_block_sum` passes only rows below `n`; `output < outputs`.
        unsafe {
            let w = if weights.is_null() { 1.0 } else { arch::load(weights.add(i)) };
            root_residual_term(arch::load(margins.add(i * outputs + output)), arch::load(labels.add(i)), w)
        }
    });
    if arch::lane_id() == 0 {
        // SAFETY: `block` is below the block count.
        unsafe { arch::store(block_sums.add(block), sum) };
    }
}

/// `out[j * n + i]`: row `i`'s pair of output `j` (class-major, each output's tree reading its
/// pairs contiguously), from the row-major margins and the round's `scales` (one an output).
/// `weights` may be null. One thread per row.
///
/// # Safety
/// `margins` and `out` hold `n * outputs` values (`objective.outputs`), `labels` (and `weights`
/// when not null) `n`, `scales` one an output, `objective` one.
pub unsafe fn gradients_kernel(
    margins: *const f32,
    labels: *const f32,
    weights: *const f32,
    n: u64,
    objective: *const ScaledResidual,
    scales: *const f32,
    out: *mut GradientPair<f32>,
) {
    let i = global_thread();
    if i >= n {
        return;
    }
    let (i, n) = (i as usize, n as usize);
    // SAFETY: `i < n`; the row's margins are `i * outputs..(i + 1) * outputs`.
    unsafe {
        let objective = arch::load(objective);
        let outputs = objective.outputs as usize;
        let label = arch::load(labels.add(i));
        let weight = if weights.is_null() { 1.0 } else { arch::load(weights.add(i)) };
        for j in 0..outputs {
            let margin = arch::load(margins.add(i * outputs + j));
            let pair = objective.gradient(j, margin, label, weight, arch::load(scales.add(j)));
            arch::store(out.add(j * n + i), pair);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_and_pairs_follow_xgboost_formulas() {
        assert_eq!(scale(LossSum { loss: 3.0, weight: 2.0 }), 2.25);
        assert_eq!(scale(LossSum { loss: 3.0, weight: 1e-7 }), 0.0);
        // Both zero: curvature 1.
        assert_eq!(absolute_error_gradient(1.0, 1.0, 2.0, 0.0), GradientPair::new(0.0, 2.0));
        let g = absolute_error_gradient(3.0, 0.0, 1.0, 4.0);
        assert_eq!((g.grad, g.hess), (3.0 * 0.8, 0.8));
        assert_eq!(quantile_gradient(1.0, 0.0, 1.0, 0.0, 0.5), GradientPair::new(0.0, 0.0));
        assert_eq!(quantile_gradient(1.0, 0.0, 0.0, 1.0, 0.5), GradientPair::new(0.0, 0.0));
        // At r = 0: tanh 0 = 0, ratio 1.
        let g = quantile_gradient(2.0, 2.0, 1.0, 2.0, 0.25);
        assert_eq!((g.grad, g.hess), (0.5 * 2.0 * 0.5, 12.5));
        // Far above the label: tanh -> 1, the ratio floored.
        let g = quantile_gradient(1e6, 0.0, 1.0, 1.0, 0.9);
        assert!((g.grad - 0.5 * (2.0 - 1.8)).abs() < 1e-6 && g.hess == 0.5 / SMOOTHING * MIN_RATIO);
    }
}
