//! `reg:expectileerror`, XGBoost 3.4.1's expectile regression of several `expectile_alpha` at once:
//! output 0's margin is the lowest expectile and each next output's margin `m_k` adds a gap
//! `1e-6 + softplus(m_k)`, so predictions never cross. Output `j`'s gradient sums the asymmetric
//! squared errors `s_k (p_k - y) w` of every expectile `k >= j` it moves (`s_k = 1 - α_k` above the
//! label, `α_k` below), times `softplus'(m_j) = σ(m_j)` for `j > 0`; the hessian is Gauss-Newton's,
//! `σ(m_j)² Σ s_k w`. All `f32`, in XGBoost's order; `boost`'s objective and metric call these
//! functions and [`gradients_kernel`] runs them on the device.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::objective::sigmoid;
use crate::residual::MAX_QUANTILES;

/// XGBoost's `kRtEps`: the least gap between two expectiles.
pub const GAP: f32 = 1e-6;

/// `log(1 + e^x)` in `f32`, as XGBoost's `SoftPlus`.
#[inline]
pub fn softplus(x: f32) -> f32 {
    if x > 0.0 {
        x + libm::log1pf(crate::exp::expf(-x))
    } else {
        libm::log1pf(crate::exp::expf(x))
    }
}

/// The inverse of [`softplus`] (of at least [`GAP`]), as XGBoost's `SoftPlusInv`.
#[inline]
pub fn softplus_inv(x: f32) -> f32 {
    let x = if x > GAP { x } else { GAP };
    x + libm::logf(-libm::expm1f(-x))
}

/// A row's predictions from its margins: `p_0 = m_0`, `p_k = p_{k-1} + GAP + softplus(m_k)`
/// (XGBoost's `PredTransform`), written by `write(k, p_k)`.
#[inline]
pub fn chain(outputs: usize, margin: impl Fn(usize) -> f32, mut write: impl FnMut(usize, f32)) {
    let mut p = margin(0);
    write(0, p);
    for k in 1..outputs {
        p += GAP + softplus(margin(k));
        write(k, p);
    }
}

/// The margins of predictions `base` (one a row's outputs, ascending): XGBoost's `ProbToMargin`.
#[inline]
pub fn margins_of(base: &mut [f32]) {
    for k in (1..base.len()).rev() {
        base[k] = softplus_inv(base[k] - base[k - 1] - GAP);
    }
}

/// The asymmetric weight of expectile `alpha` at error `diff = p - y`.
#[inline]
fn side(alpha: f32, diff: f32) -> f32 {
    if diff >= 0.0 {
        1.0 - alpha
    } else {
        alpha
    }
}

/// Output `j`'s pair of a row with `outputs` margins `margin(k)` of expectiles `alpha(k)`, label
/// `label` and weight `weight` (XGBoost's order of operations).
#[inline]
pub fn gradient(
    outputs: usize,
    alpha: impl Fn(usize) -> f32,
    j: usize,
    margin: impl Fn(usize) -> f32,
    label: f32,
    weight: f32,
) -> GradientPair<f32> {
    let (mut p, mut grad, mut hess) = (margin(0), 0.0f32, 0.0f32);
    for k in 0..outputs {
        if k > 0 {
            p += GAP + softplus(margin(k));
        }
        if k >= j {
            let diff = p - label;
            let side = side(alpha(k), diff);
            grad += side * diff * weight;
            hess += side * weight;
        }
    }
    let scale = if j == 0 { 1.0 } else { sigmoid(margin(j)) };
    GradientPair::new(scale * grad, scale * scale * hess)
}

/// The expectiles (`outputs` of them, ascending) as the device takes them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Expectiles {
    pub outputs: u32,
    pub alphas: [f32; MAX_QUANTILES],
}

impl Expectiles {
    /// Output `j`'s pair of a row with margins `margin(k)`, label `label` and weight `weight`.
    #[inline]
    pub fn gradient(&self, j: usize, margin: impl Fn(usize) -> f32, label: f32, weight: f32) -> GradientPair<f32> {
        gradient(self.outputs as usize, |k| self.alphas[k], j, margin, label, weight)
    }
}

/// Expectile `alpha`'s loss of prediction `p` against label `y`, unweighted: the `expectile`
/// metric's term.
#[inline]
pub fn loss(alpha: f32, y: f32, p: f32) -> f32 {
    let diff = p - y;
    side(alpha, diff) * diff * diff
}

/// `out[c * n + i]`: row `i`'s pair of output `c` (class-major, each output's tree reads its own
/// contiguously), from the row-major `margins`. `weights` may be null (every weight 1). One thread
/// per row.
///
/// # Safety
/// `margins` and `out` hold `n * outputs` values, `labels` (and `weights` when not null) `n`;
/// `expectiles` one, whose `outputs` is at most [`MAX_QUANTILES`].
pub unsafe fn gradients_kernel(
    margins: *const f32,
    labels: *const f32,
    weights: *const f32,
    n: u64,
    expectiles: *const Expectiles,
    out: *mut GradientPair<f32>,
) {
    let i = global_thread();
    if i >= n {
        return;
    }
    let (i, n) = (i as usize, n as usize);
    // SAFETY: `i < n`; the row's margins are `i * outputs..(i + 1) * outputs`; the contract covers
    // the buffers.
    unsafe {
        let expectiles = arch::load(expectiles);
        let outputs = expectiles.outputs as usize;
        let row = margins.add(i * outputs);
        let label = arch::load(labels.add(i));
        let weight = if weights.is_null() { 1.0 } else { arch::load(weights.add(i)) };
        for c in 0..outputs {
            let pair = expectiles.gradient(c, |k| arch::load(row.add(k)), label, weight);
            arch::store(out.add(c * n + i), pair);
        }
    }
}
