//! The row-wise evaluation metrics (`rmse`, `rmsle`, `mae`, `mape`, `mphe`, `logloss`, `error[@t]`,
//! `poisson-nloglik`, `gamma-nloglik`, `gamma-deviance`, `tweedie-nloglik@ρ`, one alpha's
//! `quantile` or `expectile`) and the multi-class ones (`merror`, `mlogloss`), written once: `boost`'s metrics
//! call [`ElementwiseMetric::row_term`] on the CPU over the predictions, and [`elementwise_kernel`]
//! runs it on the device over the margins (applying the objective's [`Transform`] first, the same
//! function the host's transform calls).
//! The weighted losses and weights are summed with the fixed-order blocked sums of [`reduce`], so the
//! evaluation log has the same digits whichever backend trained.
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;

use crate::evaluate::global_thread;
use crate::objective::{sigmoid, softmax_normaliser, softmax_probability};
use crate::reduce::{self, BlockSum};

/// A margin-to-prediction transform of an element-wise objective.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Transform(pub u32);

impl Transform {
    /// The margin itself (regression, `binary:logitraw`).
    pub const IDENTITY: Transform = Transform(0);
    /// [`sigmoid`] (the logistic family).
    pub const SIGMOID: Transform = Transform(1);
    /// `e^m` (`count:poisson`, `reg:gamma`, `reg:tweedie`).
    pub const EXP: Transform = Transform(2);
    /// 1 for a positive margin, else 0 (`binary:hinge`).
    pub const STEP: Transform = Transform(3);

    #[inline]
    pub fn apply(self, margin: f32) -> f32 {
        match self {
            Self::SIGMOID => sigmoid(margin),
            Self::EXP => crate::exp::expf(margin),
            Self::STEP => step(margin),
            _ => margin,
        }
    }
}

/// `binary:hinge`'s prediction: 1 for a positive margin, else 0.
#[inline]
pub fn step(margin: f32) -> f32 {
    if margin > 0.0 {
        1.0
    } else {
        0.0
    }
}

/// A metric's weighted loss sum and weight sum.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LossSum {
    pub loss: f64,
    pub weight: f64,
}

impl BlockSum for LossSum {
    fn zero() -> Self {
        Self::default()
    }
    #[inline(always)]
    fn plus(self, o: Self) -> Self {
        LossSum { loss: self.loss + o.loss, weight: self.weight + o.weight }
    }
}

/// Which row-wise metric, with its parameter (the threshold of `error`, the slope of `mphe`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ElementwiseMetric {
    pub kind: u32,
    pub parameter: f32,
}

impl ElementwiseMetric {
    pub const RMSE: u32 = 0;
    pub const RMSLE: u32 = 1;
    pub const MAE: u32 = 2;
    pub const MAPE: u32 = 3;
    pub const MPHE: u32 = 4;
    pub const LOGLOSS: u32 = 5;
    pub const ERROR: u32 = 6;
    pub const POISSON_NLOGLIK: u32 = 7;
    pub const GAMMA_NLOGLIK: u32 = 8;
    pub const GAMMA_DEVIANCE: u32 = 9;
    /// `tweedie-nloglik@ρ`, the parameter `ρ`.
    pub const TWEEDIE_NLOGLIK: u32 = 10;
    /// The pinball loss of quantile `α` (the parameter): one output of `quantile`.
    pub const QUANTILE: u32 = 11;
    /// The asymmetric squared error of expectile `α` (the parameter): one output of `expectile`.
    pub const EXPECTILE: u32 = 12;

    /// XGBoost's `EvalRow`: the unweighted loss of one row with label `y` and prediction `p`, in `f32`.
    #[inline]
    pub fn row_loss(&self, y: f32, p: f32) -> f32 {
        match self.kind {
            Self::RMSE => {
                let d = y - p;
                d * d
            }
            Self::RMSLE => {
                let d = libm::log1pf(y) - libm::log1pf(p);
                d * d
            }
            Self::MAE => libm::fabsf(y - p),
            Self::MAPE => libm::fabsf((y - p) / y),
            Self::MPHE => {
                let z = y - p;
                let s2 = self.parameter * self.parameter;
                s2 * (libm::sqrtf(1.0 + z * z / s2) - 1.0)
            }
            Self::LOGLOSS => {
                // x log y with 0 log(anything) = 0 and the log argument floored at 1e-16.
                let xlogy =
                    |x: f32, v: f32| if x == 0.0 { 0.0 } else { x * libm::logf(if v > 1e-16 { v } else { 1e-16 }) };
                xlogy(-y, p) + xlogy(-(1.0 - y), 1.0 - p)
            }
            Self::ERROR => {
                if p > self.parameter {
                    1.0 - y
                } else {
                    y
                }
            }
            Self::POISSON_NLOGLIK => {
                let p = if p > 1e-16 { p } else { 1e-16 };
                libm::lgammaf(y + 1.0) + p - libm::logf(p) * y
            }
            Self::GAMMA_NLOGLIK => {
                // The exponential family's form with dispersion 1 (so `c = 0`); `θ = -1/p` in `f64`.
                let p = if p > 1e-6 { p } else { 1e-6 };
                let theta = (-1.0 / p as f64) as f32;
                let b = -libm::logf(-theta);
                -(y * theta - b)
            }
            Self::GAMMA_DEVIANCE => {
                let (p, y) = (p + 1e-6, y + 1e-6);
                libm::logf(p / y) + y / p - 1.0
            }
            Self::EXPECTILE => crate::expectile::loss(self.parameter, y, p),
            Self::QUANTILE => {
                let (a, d) = (self.parameter, y - p);
                let sign = if d >= 0.0 { 1.0 } else { 0.0 };
                (a * sign * d) - (1.0 - a) * (1.0 - sign) * d
            }
            _ => {
                let rho = self.parameter;
                let log_p = libm::logf(p);
                let a = y * crate::exp::expf((1.0 - rho) * log_p) / (1.0 - rho);
                let b = crate::exp::expf((2.0 - rho) * log_p) / (2.0 - rho);
                -a + b
            }
        }
    }

    /// One row's term of the sums: its loss times its weight (in `f32`, as XGBoost), and the weight.
    #[inline]
    pub fn row_term(&self, y: f32, p: f32, w: f32) -> LossSum {
        LossSum { loss: (self.row_loss(y, p) * w) as f64, weight: w as f64 }
    }

    /// The metric from the sums: `Σ loss / Σ w` (the undivided sum when no weight), `√` of it for
    /// the two root metrics.
    pub fn finish(&self, sums: LossSum) -> f64 {
        let mean = if sums.weight == 0.0 { sums.loss } else { sums.loss / sums.weight };
        match self.kind {
            Self::RMSE | Self::RMSLE => libm::sqrt(mean),
            // XGBoost divides by `kRtEps` (an `f32`) when the weights sum to nothing.
            Self::GAMMA_DEVIANCE => 2.0 * sums.loss / if sums.weight > 0.0 { sums.weight } else { 1e-6f32 as f64 },
            _ => mean,
        }
    }
}

/// `block_sums[b]`: block `b`'s [`LossSum`] of `metric` over the `n` rows, each row's prediction
/// `transform` of its margin. `weights` may be null (every weight 1). One warp per block of
/// [`reduce::SUM_BLOCK`] rows.
///
/// # Safety
/// `margins` and `labels` (and `weights` when not null) hold `n` values, `metric` one, `block_sums`
/// room for a sum per block; the grid has whole warps.
pub unsafe fn elementwise_kernel(
    margins: *const f32,
    labels: *const f32,
    weights: *const f32,
    n: u64,
    transform: Transform,
    metric: *const ElementwiseMetric,
    block_sums: *mut LossSum,
) {
    let block = (global_thread() / arch::WARP_SIZE as u64) as usize;
    if block >= reduce::blocks(n as usize) {
        return;
    }
    // SAFETY: one metric.
    let metric = unsafe { arch::load(metric) };
    let sum = reduce::warp_block_sum(n as usize, block, |i| {
        // SAFETY: `lane_partial` passes only indices below `n`.
        unsafe {
            let w = if weights.is_null() { 1.0 } else { arch::load(weights.add(i)) };
            metric.row_term(arch::load(labels.add(i)), transform.apply(arch::load(margins.add(i))), w)
        }
    });
    if arch::lane_id() == 0 {
        // SAFETY: `block` is below the block count.
        unsafe { arch::store(block_sums.add(block), sum) };
    }
}

/// `block_sums[b]`: block `b`'s sum of the `n` precomputed `terms` (a ranking metric's group
/// terms), in the fixed order of [`reduce`]. One warp per block of [`reduce::SUM_BLOCK`] terms.
///
/// # Safety
/// `terms` holds `n` values, `block_sums` room for a sum per block; the grid has whole warps.
pub unsafe fn terms_kernel(terms: *const LossSum, n: u64, block_sums: *mut LossSum) {
    let block = (global_thread() / arch::WARP_SIZE as u64) as usize;
    if block >= reduce::blocks(n as usize) {
        return;
    }
    // SAFETY: `lane_partial` passes only indices below `n`.
    let sum = reduce::warp_block_sum(n as usize, block, |i| unsafe { arch::load(terms.add(i)) });
    if arch::lane_id() == 0 {
        // SAFETY: `block` is below the block count.
        unsafe { arch::store(block_sums.add(block), sum) };
    }
}

/// `merror` or `mlogloss` over a row's class probabilities.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MultiClassMetric(pub u32);

impl MultiClassMetric {
    /// Whether the first largest probability is not the label's.
    pub const ERROR: MultiClassMetric = MultiClassMetric(0);
    /// `-log(max(p_y, 1e-16))`.
    pub const LOG_LOSS: MultiClassMetric = MultiClassMetric(1);

    /// The unweighted loss of a row with label `label < classes` whose class `c` has probability
    /// `probability(c)`.
    #[inline]
    pub fn row_loss(self, label: usize, classes: usize, probability: impl Fn(usize) -> f32) -> f32 {
        if self == Self::ERROR {
            let (mut best, mut best_p) = (0, probability(0));
            for c in 1..classes {
                let p = probability(c);
                if p > best_p {
                    (best, best_p) = (c, p);
                }
            }
            if best == label {
                0.0
            } else {
                1.0
            }
        } else {
            -libm::logf(probability(label).max(1e-16))
        }
    }

    /// One row's term of the sums: its loss times its weight (in `f32`), and the weight.
    #[inline]
    pub fn row_term(self, label: usize, classes: usize, weight: f32, probability: impl Fn(usize) -> f32) -> LossSum {
        LossSum { loss: (self.row_loss(label, classes, probability) * weight) as f64, weight: weight as f64 }
    }

    /// The metric from the sums: `Σ loss / Σ w` (the undivided sum when no weight).
    pub fn finish(self, sums: LossSum) -> f64 {
        if sums.weight == 0.0 {
            sums.loss
        } else {
            sums.loss / sums.weight
        }
    }
}

/// `block_sums[b]`: block `b`'s [`LossSum`] of `metric` over the `n` rows, each row's probabilities
/// the softmax of its `classes` margins (row-major). `weights` may be null (every weight 1). One warp
/// per block of [`reduce::SUM_BLOCK`] rows.
///
/// # Safety
/// `margins` holds `n * classes` values, `labels` `n` class ids below `classes` (and `weights` `n`
/// values when not null), `block_sums` room for a sum per block; the grid has whole warps.
pub unsafe fn multiclass_kernel(
    margins: *const f32,
    labels: *const f32,
    weights: *const f32,
    n: u64,
    classes: u64,
    metric: MultiClassMetric,
    block_sums: *mut LossSum,
) {
    let block = (global_thread() / arch::WARP_SIZE as u64) as usize;
    if block >= reduce::blocks(n as usize) {
        return;
    }
    let classes = classes as usize;
    let sum = reduce::warp_block_sum(n as usize, block, |i| {
        // SAFETY: `lane_partial` passes only indices below `n`; row `i`'s margins are
        // `i * classes..(i + 1) * classes`.
        unsafe {
            let row = margins.add(i * classes);
            let normaliser = softmax_normaliser(|c| arch::load(row.add(c)), classes);
            let w = if weights.is_null() { 1.0 } else { arch::load(weights.add(i)) };
            let label = arch::load(labels.add(i)) as usize;
            metric.row_term(label, classes, w, |c| softmax_probability(arch::load(row.add(c)), normaliser))
        }
    });
    if arch::lane_id() == 0 {
        // SAFETY: `block` is below the block count.
        unsafe { arch::store(block_sums.add(block), sum) };
    }
}
