//! `survival:aft`, the accelerated failure time model (Barnwal, Cho and Hocking, 2020), as XGBoost
//! 3.4.1 computes it (`survival_util.h`): a row's label is an interval `[lower, upper]` of survival
//! times (`lower == upper`: an event; `upper = +∞`: right-censored; `lower <= 0`: left-censored),
//! the margin `m` predicts `log T`, and `log T = m + σ Z` with `Z` normal, logistic or extreme
//! (Gumbel, minimum). The loss is `-log` of the density of `T` at an event, or of the interval's
//! probability; gradient and hessian are its derivatives in `m`, clipped to XGBoost's ranges, with
//! its limits where the denominator vanishes. Everything is `f64` (`libm`'s `exp`, `log`, `erf`),
//! each pair rounded to `f32` at the end, as XGBoost; `boost`'s objective and metric call these
//! functions and [`aft_gradients_kernel`] runs them on the device, so both give the same bits.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;

/// XGBoost's clipping ranges (`aft::kMinGradient`, ...) and its smallest denominator.
const MIN_GRADIENT: f64 = -15.0;
const MAX_GRADIENT: f64 = 15.0;
const MIN_HESSIAN: f64 = 1e-16;
const MAX_HESSIAN: f64 = 15.0;
const EPS: f64 = 1e-12;

/// The noise distribution and its scale `σ` (`aft_loss_distribution`,
/// `aft_loss_distribution_scale`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Aft {
    pub distribution: u32,
    pub sigma: f32,
}

/// How a row's interval is censored; picks the limit taken where the prediction is so far out
/// that the gradient's denominator underflows.
#[derive(Clone, Copy, PartialEq)]
enum Censoring {
    Uncensored,
    Right,
    Left,
    Interval,
}

impl Aft {
    pub const NORMAL: u32 = 0;
    pub const LOGISTIC: u32 = 1;
    pub const EXTREME: u32 = 2;

    fn pdf(&self, z: f64) -> f64 {
        match self.distribution {
            Self::NORMAL => libm::exp(-z * z / 2.0) / libm::sqrt(2.0 * core::f64::consts::PI),
            Self::LOGISTIC => {
                let w = libm::exp(z);
                if w.is_infinite() || (w * w).is_infinite() {
                    0.0
                } else {
                    w / ((1.0 + w) * (1.0 + w))
                }
            }
            _ => {
                let w = libm::exp(z);
                if w.is_infinite() {
                    0.0
                } else {
                    w * libm::exp(-w)
                }
            }
        }
    }

    fn cdf(&self, z: f64) -> f64 {
        match self.distribution {
            Self::NORMAL => 0.5 * (1.0 + libm::erf(z / libm::sqrt(2.0))),
            Self::LOGISTIC => {
                let w = libm::exp(z);
                if w.is_infinite() {
                    1.0
                } else {
                    w / (1.0 + w)
                }
            }
            _ => 1.0 - libm::exp(-libm::exp(z)),
        }
    }

    fn grad_pdf(&self, z: f64) -> f64 {
        match self.distribution {
            Self::NORMAL => -z * self.pdf(z),
            Self::LOGISTIC => {
                let w = libm::exp(z);
                if w.is_infinite() {
                    0.0
                } else {
                    self.pdf(z) * (1.0 - w) / (1.0 + w)
                }
            }
            _ => {
                let w = libm::exp(z);
                if w.is_infinite() {
                    0.0
                } else {
                    (1.0 - w) * self.pdf(z)
                }
            }
        }
    }

    fn hess_pdf(&self, z: f64) -> f64 {
        match self.distribution {
            Self::NORMAL => (z * z - 1.0) * self.pdf(z),
            Self::LOGISTIC => {
                let w = libm::exp(z);
                if w.is_infinite() || (w * w).is_infinite() {
                    0.0
                } else {
                    self.pdf(z) * (w * w - 4.0 * w + 1.0) / ((1.0 + w) * (1.0 + w))
                }
            }
            _ => {
                let w = libm::exp(z);
                if w.is_infinite() || (w * w).is_infinite() {
                    0.0
                } else {
                    (w * w - 3.0 * w + 1.0) * self.pdf(z)
                }
            }
        }
    }

    /// The negative log-likelihood of interval `[lower, upper]` at margin `pred` (XGBoost's
    /// `AFTLoss::Loss`, the row term of `aft-nloglik`).
    pub fn loss(&self, lower: f64, upper: f64, pred: f64) -> f64 {
        let sigma = self.sigma as f64;
        if lower == upper {
            let z = (libm::log(lower) - pred) / sigma;
            return -libm::log(f64::max(self.pdf(z) / (sigma * lower), EPS));
        }
        let cdf_u = if upper.is_infinite() { 1.0 } else { self.cdf((libm::log(upper) - pred) / sigma) };
        let cdf_l = if lower <= 0.0 { 0.0 } else { self.cdf((libm::log(lower) - pred) / sigma) };
        -libm::log(f64::max(cdf_u - cdf_l, EPS))
    }

    /// Row `(lower, upper)`'s gradient pair at `margin`, times `weight` (XGBoost's `AFTObj`: both in
    /// `f64`, clipped, rounded to `f32`, then weighted in `f32`).
    #[inline]
    pub fn gradient(&self, lower: f32, upper: f32, margin: f32, weight: f32) -> GradientPair<f32> {
        let (grad, hess) = self.derivatives(lower as f64, upper as f64, margin as f64);
        GradientPair::new(grad as f32 * weight, hess as f32 * weight)
    }

    /// XGBoost's `AFTLoss::Gradient` and `AFTLoss::Hessian`.
    fn derivatives(&self, lower: f64, upper: f64, pred: f64) -> (f64, f64) {
        let sigma = self.sigma as f64;
        let (grad_num, grad_den, hess_num, hess_den, censoring, sign);
        if lower == upper {
            let z = (libm::log(lower) - pred) / sigma;
            let (pdf, grad_pdf, hess_pdf) = (self.pdf(z), self.grad_pdf(z), self.hess_pdf(z));
            (grad_num, grad_den) = (grad_pdf, sigma * pdf);
            (hess_num, hess_den) = (-(pdf * hess_pdf - grad_pdf * grad_pdf), sigma * sigma * pdf * pdf);
            (censoring, sign) = (Censoring::Uncensored, z > 0.0);
        } else {
            let mut kind = Censoring::Interval;
            let (mut z_u, mut z_l) = (0.0, 0.0);
            let (pdf_u, cdf_u, grad_pdf_u) = if upper.is_infinite() {
                kind = Censoring::Right;
                (0.0, 1.0, 0.0)
            } else {
                z_u = (libm::log(upper) - pred) / sigma;
                (self.pdf(z_u), self.cdf(z_u), self.grad_pdf(z_u))
            };
            let (pdf_l, cdf_l, grad_pdf_l) = if lower <= 0.0 {
                kind = Censoring::Left;
                (0.0, 0.0, 0.0)
            } else {
                z_l = (libm::log(lower) - pred) / sigma;
                (self.pdf(z_l), self.cdf(z_l), self.grad_pdf(z_l))
            };
            let (cdf_diff, pdf_diff, grad_diff) = (cdf_u - cdf_l, pdf_u - pdf_l, grad_pdf_u - grad_pdf_l);
            let root = sigma * cdf_diff;
            (grad_num, grad_den) = (pdf_diff, root);
            (hess_num, hess_den) = (-(cdf_diff * grad_diff - pdf_diff * pdf_diff), root * root);
            (censoring, sign) = (kind, z_u > 0.0 || z_l > 0.0);
        }
        let mut grad = grad_num / grad_den;
        if grad_den < EPS && !grad.is_finite() {
            grad = self.gradient_limit(censoring, sign);
        }
        let mut hess = hess_num / hess_den;
        if hess_den < EPS && !hess.is_finite() {
            hess = self.hessian_limit(censoring, sign);
        }
        (clip(grad, MIN_GRADIENT, MAX_GRADIENT), clip(hess, MIN_HESSIAN, MAX_HESSIAN))
    }

    /// The gradient's limit as the prediction goes to `∓∞` (`sign`: the z-score is positive).
    fn gradient_limit(&self, censoring: Censoring, sign: bool) -> f64 {
        let inv = 1.0 / self.sigma as f64;
        let (below, above) = match self.distribution {
            Self::NORMAL => (MIN_GRADIENT, MAX_GRADIENT),
            Self::LOGISTIC => (-inv, inv),
            _ => (MIN_GRADIENT, inv),
        };
        match (censoring, sign) {
            (Censoring::Right, false) | (Censoring::Left, true) => 0.0,
            (_, true) => below,
            (_, false) => above,
        }
    }

    /// The hessian's limit as the prediction goes to `∓∞`.
    fn hessian_limit(&self, censoring: Censoring, sign: bool) -> f64 {
        let sigma = self.sigma as f64;
        match self.distribution {
            Self::NORMAL => match (censoring, sign) {
                (Censoring::Right, false) | (Censoring::Left, true) => MIN_HESSIAN,
                _ => 1.0 / (sigma * sigma),
            },
            Self::LOGISTIC => MIN_HESSIAN,
            _ => match (censoring, sign) {
                (Censoring::Left, _) | (_, false) => MIN_HESSIAN,
                _ => MAX_HESSIAN,
            },
        }
    }
}

fn clip(x: f64, low: f64, high: f64) -> f64 {
    if x < low {
        low
    } else if x > high {
        high
    } else {
        x
    }
}

/// `out[i]`: row `i`'s gradient pair of interval `[lower[i], upper[i]]` at `margins[i]`.
/// `weights` may be null (every weight 1). One thread per row.
///
/// # Safety
/// `margins`, `lower`, `upper`, `out` (and `weights` when not null) hold `n` elements; `aft` one.
pub unsafe fn aft_gradients_kernel(
    margins: *const f32,
    lower: *const f32,
    upper: *const f32,
    weights: *const f32,
    n: u64,
    aft: *const Aft,
    out: *mut GradientPair<f32>,
) {
    let i = global_thread();
    if i >= n {
        return;
    }
    let i = i as usize;
    // SAFETY: `i < n`; the contract covers the buffers.
    unsafe {
        let weight = if weights.is_null() { 1.0 } else { arch::load(weights.add(i)) };
        let pair = arch::load(aft).gradient(
            arch::load(lower.add(i)),
            arch::load(upper.add(i)),
            arch::load(margins.add(i)),
            weight,
        );
        arch::store(out.add(i), pair);
    }
}
