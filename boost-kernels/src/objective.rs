//! The per-row gradients of the element-wise objectives (squared error, squared log error, the
//! logistic family, pseudo-Huber, Poisson, gamma, Tweedie, hinge) and of the softmax cross-entropy
//! (absolute error and quantiles, whose scale changes each round, are [`crate::residual`]'s),
//! written once: `boost`'s
//! objectives call these functions on the CPU, and [`gradients_kernel`] and
//! [`softmax_gradients_kernel`] run them on the device, so both give the same bits
//! (plain `f32` arithmetic and `libm`, no fused multiply-adds on either side). Also the margin
//! update after a tree ([`add_leaves_kernel`]): each row's leaf value added to its margin; and the
//! margins before the first tree ([`fill_margins_kernel`]).
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::sampling::RowSampler;

/// `1 / (1 + e^-x)`, with the exponent capped at 88.7 as XGBoost does (so it never overflows).
#[inline]
pub fn sigmoid(x: f32) -> f32 {
    let e = crate::exp::expf(if -x < 88.7 { -x } else { 88.7 });
    1.0 / (e + 1.0)
}

/// `scale_pos_weight` applies to rows labelled exactly 1.
#[inline]
pub fn scaled_weight(label: f32, weight: f32, scale_pos_weight: f32) -> f32 {
    if label == 1.0 {
        weight * scale_pos_weight
    } else {
        weight
    }
}

/// Squared error `½(m - y)²` for one row.
#[inline]
pub fn squared_error_gradient(margin: f32, label: f32, weight: f32, scale_pos_weight: f32) -> GradientPair<f32> {
    let w = scaled_weight(label, weight, scale_pos_weight);
    GradientPair::new((margin - label) * w, w)
}

/// Logistic loss for one row (margin space); hessian floored at 1e-16 as XGBoost.
#[inline]
pub fn logistic_gradient(margin: f32, label: f32, weight: f32, scale_pos_weight: f32) -> GradientPair<f32> {
    let p = sigmoid(margin);
    let w = scaled_weight(label, weight, scale_pos_weight);
    let h = p * (1.0 - p);
    GradientPair::new((p - label) * w, if h > 1e-16 { h } else { 1e-16 } * w)
}

/// Pseudo-Huber loss `δ²(√(1 + (z/δ)²) - 1)` with `z = m - y`, for one row.
#[inline]
pub fn pseudo_huber_gradient(margin: f32, label: f32, weight: f32, slope: f32) -> GradientPair<f32> {
    let z = margin - label;
    let slope2 = slope * slope;
    let scale_sqrt = libm::sqrtf(1.0 + (z * z) / slope2);
    let grad = z / scale_sqrt;
    let hess = slope2 / ((slope2 + z * z) * scale_sqrt);
    GradientPair::new(grad * weight, hess * weight)
}

/// Poisson negative log-likelihood `e^m - y m` for one row; the hessian is inflated by
/// `e^max_delta_step`, XGBoost's safeguard against huge first steps.
#[inline]
pub fn poisson_gradient(margin: f32, label: f32, weight: f32, max_delta_step: f32) -> GradientPair<f32> {
    GradientPair::new((crate::exp::expf(margin) - label) * weight, crate::exp::expf(margin + max_delta_step) * weight)
}

/// Squared log error `½(log1p(m) - log1p(y))²` for one row (the margin floored just above -1), as
/// XGBoost's `SquaredLogError`: its hessian divides by `(m + 1)²` in `f64` (C++'s `pow(float, int)`)
/// and is floored at 1e-6.
#[inline]
pub fn squared_log_error_gradient(margin: f32, label: f32, weight: f32) -> GradientPair<f32> {
    // `fmaxf(predt, -1 + 1e-6)`: the double constant rounded to `f32`.
    const FLOOR: f32 = (-1.0 + 1e-6) as f32;
    let m = if margin > FLOOR { margin } else { FLOOR };
    let (log_m, log_y) = (libm::log1pf(m), libm::log1pf(label));
    let grad = (log_m - log_y) / (m + 1.0);
    let square = (m + 1.0) as f64 * (m + 1.0) as f64;
    let hess = ((-log_m + log_y + 1.0) as f64 / square) as f32;
    GradientPair::new(grad * weight, if hess > 1e-6 { hess } else { 1e-6 } * weight)
}

/// Gamma deviance with a log link for one row: with `p = e^m`, gradient `1 - y/p`, hessian `y/p`
/// (XGBoost's `GammaDeviance`, `scale_pos_weight` on rows labelled 1 as in every `RegLossObj`).
#[inline]
pub fn gamma_gradient(margin: f32, label: f32, weight: f32, scale_pos_weight: f32) -> GradientPair<f32> {
    let p = crate::exp::expf(margin);
    let w = scaled_weight(label, weight, scale_pos_weight);
    GradientPair::new((1.0 - label / p) * w, (label / p) * w)
}

/// Tweedie negative log-likelihood with a log link and variance power `rho` in `[1, 2)`, for one
/// row: gradient `-y e^((1-ρ)m) + e^((2-ρ)m)`, hessian `-y (1-ρ) e^((1-ρ)m) + (2-ρ) e^((2-ρ)m)`.
#[inline]
pub fn tweedie_gradient(margin: f32, label: f32, weight: f32, rho: f32) -> GradientPair<f32> {
    let (a, b) = (crate::exp::expf((1.0 - rho) * margin), crate::exp::expf((2.0 - rho) * margin));
    let grad = -label * a + b;
    let hess = -label * (1.0 - rho) * a + (2.0 - rho) * b;
    GradientPair::new(grad * weight, hess * weight)
}

/// Hinge loss `max(0, 1 - m y)` with `y = 2 label - 1`, for one row: gradient `-y w` and hessian `w`
/// inside the margin, else 0 and the smallest normal `f32` (XGBoost's `HingeObj`, which forms `y`
/// and the product in `f64`).
#[inline]
pub fn hinge_gradient(margin: f32, label: f32, weight: f32) -> GradientPair<f32> {
    let y = label as f64 * 2.0 - 1.0;
    if (margin as f64) * y < 1.0 {
        GradientPair::new((-y * weight as f64) as f32, weight)
    } else {
        GradientPair::new(0.0, f32::MIN_POSITIVE)
    }
}

/// An element-wise objective as the device takes it: which gradient function, and its parameter
/// (`scale_pos_weight`, the Huber slope, Poisson's `max_delta_step` or Tweedie's variance power;
/// unused by squared log error and hinge). Kind 3 was absolute error's before XGBoost 3.4 scaled it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ElementwiseObjective {
    pub kind: u32,
    pub parameter: f32,
}

impl ElementwiseObjective {
    pub const SQUARED_ERROR: u32 = 0;
    pub const LOGISTIC: u32 = 1;
    pub const PSEUDO_HUBER: u32 = 2;
    pub const POISSON: u32 = 4;
    pub const SQUARED_LOG_ERROR: u32 = 5;
    pub const GAMMA: u32 = 6;
    pub const TWEEDIE: u32 = 7;
    pub const HINGE: u32 = 8;

    /// One row's gradient pair.
    #[inline]
    pub fn gradient(&self, margin: f32, label: f32, weight: f32) -> GradientPair<f32> {
        let p = self.parameter;
        match self.kind {
            Self::SQUARED_ERROR => squared_error_gradient(margin, label, weight, p),
            Self::LOGISTIC => logistic_gradient(margin, label, weight, p),
            Self::PSEUDO_HUBER => pseudo_huber_gradient(margin, label, weight, p),
            Self::POISSON => poisson_gradient(margin, label, weight, p),
            Self::SQUARED_LOG_ERROR => squared_log_error_gradient(margin, label, weight),
            Self::GAMMA => gamma_gradient(margin, label, weight, p),
            Self::TWEEDIE => tweedie_gradient(margin, label, weight, p),
            _ => hinge_gradient(margin, label, weight),
        }
    }
}

/// `out[i]`: row `i`'s gradient pair, zero where `sampler` leaves the row out (row sampling).
/// `weights` may be null (every weight 1). One thread per row.
///
/// # Safety
/// `margins`, `labels`, `out` (and `weights` when not null) hold `n` elements; `objective` one.
pub unsafe fn gradients_kernel(
    margins: *const f32,
    labels: *const f32,
    weights: *const f32,
    sampler: RowSampler,
    n: u64,
    objective: *const ElementwiseObjective,
    out: *mut GradientPair<f32>,
) {
    let i = global_thread();
    if i >= n {
        return;
    }
    let i = i as usize;
    // SAFETY: `i < n`; the contract covers the buffers.
    unsafe {
        let g = if sampler.keeps(i as u64) {
            let weight = if weights.is_null() { 1.0 } else { arch::load(weights.add(i)) };
            arch::load(objective).gradient(arch::load(margins.add(i)), arch::load(labels.add(i)), weight)
        } else {
            GradientPair::new(0.0, 0.0)
        };
        arch::store(out.add(i), g);
    }
}

/// A row's softmax normaliser, as XGBoost's `common::Softmax` computes it: the row's largest margin
/// (which the exponentials are shifted by) and the sum of the shifted exponentials (accumulated in
/// `f64`, then rounded to `f32`). `margin(c)` is the row's margin of class `c < classes`.
#[inline]
pub fn softmax_normaliser(margin: impl Fn(usize) -> f32, classes: usize) -> (f32, f32) {
    let mut largest = f32::NEG_INFINITY;
    for c in 0..classes {
        largest = largest.max(margin(c));
    }
    let mut sum = 0.0f64;
    for c in 0..classes {
        sum += crate::exp::expf(margin(c) - largest) as f64;
    }
    (largest, sum as f32)
}

/// The softmax probability of a class with margin `margin` in a row of normaliser `normaliser`
/// ([`softmax_normaliser`]).
#[inline]
pub fn softmax_probability(margin: f32, (largest, sum): (f32, f32)) -> f32 {
    crate::exp::expf(margin - largest) / sum
}

/// The softmax cross-entropy's gradient pair for a class of probability `p` (`is_label`: the row's
/// label is that class), weight `weight`: `(p - [y = k]) w` and XGBoost's diagonal bound
/// `max(2 p (1 - p) w, 1e-16)`.
#[inline]
pub fn softmax_gradient(p: f32, is_label: bool, weight: f32) -> GradientPair<f32> {
    let h = 2.0 * p * (1.0 - p) * weight;
    let g = if is_label { p - 1.0 } else { p };
    GradientPair::new(g * weight, if h > 1e-16 { h } else { 1e-16 })
}

/// `out[c * n + i]`: row `i`'s softmax gradient pair of class `c` (class-major, so that each class's
/// tree reads its gradients contiguously), from the row-major `margins` (`classes` a row). `weights`
/// may be null (every weight 1). One thread per row.
///
/// # Safety
/// `margins` and `out` hold `n * classes` values, `labels` (and `weights` when not null) `n`.
pub unsafe fn softmax_gradients_kernel(
    margins: *const f32,
    labels: *const f32,
    weights: *const f32,
    n: u64,
    classes: u64,
    out: *mut GradientPair<f32>,
) {
    let i = global_thread();
    if i >= n {
        return;
    }
    let (i, n, classes) = (i as usize, n as usize, classes as usize);
    // SAFETY: `i < n`; the row's margins are `i * classes..(i + 1) * classes`; the contract covers the
    // buffers.
    unsafe {
        let row = margins.add(i * classes);
        let normaliser = softmax_normaliser(|c| arch::load(row.add(c)), classes);
        let label = arch::load(labels.add(i));
        let weight = if weights.is_null() { 1.0 } else { arch::load(weights.add(i)) };
        for c in 0..classes {
            let p = softmax_probability(arch::load(row.add(c)), normaliser);
            arch::store(out.add(c * n + i), softmax_gradient(p, label == c as f32, weight));
        }
    }
}

/// `out[i] = gradients[i]` for the rows `sampler` keeps, zero for the others: one output's column of
/// a multi-output objective's gradients, sampled for its tree. One thread per row.
///
/// # Safety
/// `gradients` and `out` hold `n` values.
pub unsafe fn sample_kernel(
    gradients: *const GradientPair<f32>,
    sampler: RowSampler,
    n: u64,
    out: *mut GradientPair<f32>,
) {
    let i = global_thread();
    if i >= n {
        return;
    }
    // SAFETY: `i < n`.
    unsafe {
        let g = if sampler.keeps(i) { arch::load(gradients.add(i as usize)) } else { GradientPair::new(0.0, 0.0) };
        arch::store(out.add(i as usize), g);
    }
}

/// `margins[i] = base[i % outputs]` for `i < count`: every row's margins at the model's base margins
/// (before the first tree), without sending them from the host. One thread per margin.
///
/// # Safety
/// `base` holds `outputs >= 1` values, `margins` `count`.
pub unsafe fn fill_margins_kernel(base: *const f32, outputs: u64, count: u64, margins: *mut f32) {
    let i = global_thread();
    if i >= count {
        return;
    }
    // SAFETY: `i < count` and `i % outputs < outputs`.
    unsafe { arch::store(margins.add(i as usize), arch::load(base.add((i % outputs) as usize))) }
}

/// A leaf of a grown tree: its rows are positions `begin..end` of the row order; `value` is added to
/// their margins. Leaves are listed by increasing `begin`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LeafRange {
    pub begin: u32,
    pub end: u32,
    pub value: f32,
    pub padding: u32,
}

/// `margins[rows[p] * outputs + output] += value` of the leaf whose range holds position `p`. One
/// thread per position.
///
/// # Safety
/// `rows` holds `n` distinct row indices, `margins` `outputs` values for each, `leaves` `num_leaves`
/// ranges sorted by `begin` that cover `0..n`.
pub unsafe fn add_leaves_kernel(
    rows: *const u32,
    n: u64,
    leaves: *const LeafRange,
    num_leaves: u64,
    margins: *mut f32,
    outputs: u64,
    output: u64,
) {
    let p = global_thread();
    if p >= n {
        return;
    }
    let (mut lo, mut hi) = (0usize, num_leaves as usize);
    while lo < hi {
        let mid = (lo + hi) / 2;
        // SAFETY: `mid < num_leaves`.
        if unsafe { arch::load(leaves.add(mid)) }.begin <= p as u32 {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo == 0 {
        return;
    }
    // SAFETY: `lo - 1 < num_leaves`, `p < n`, each row's margins within `margins`.
    unsafe {
        let leaf = arch::load(leaves.add(lo - 1));
        if (p as u32) < leaf.end {
            let row = arch::load(rows.add(p as usize)) as usize;
            let at = margins.add(row * outputs as usize + output as usize);
            arch::store(at, arch::load(at) + leaf.value);
        }
    }
}
