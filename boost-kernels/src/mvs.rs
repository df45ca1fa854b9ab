//! Minimal variance sampling (`sampling_method=gradient_based`; Ibragimov & Gusev 2019, the
//! sampler of Ou 2020 and XGBoost's GPU `hist`): row `i` is kept with probability
//! `p_i = min(1, m_i / u)`, where `m_i = sqrt(g_i^2 + λ h_i^2)` is its regularised gradient
//! magnitude ([`magnitude`], `λ` = [`LAMBDA`]), and a kept row's gradient pair is scaled by `1 / p_i`,
//! so that every histogram sum stays unbiased. The threshold `u` makes the expected number of rows
//! `subsample * n`: `Σ min(1, m_i / u) = S`.
//!
//! XGBoost finds `u` from the sorted magnitudes and a running float sum. Here it is a radix select
//! over the magnitudes' bits ([`Threshold`]): three histogram passes (11, 10 and 10 bits of the
//! non-negative floats' images, each over the rows of the bin the pass before chose) of row counts
//! and fixed-point magnitude sums. The sums are integers, exact in any order, so any number of
//! threads, devices or pages give the same bins, and the host's choice of `u` from them is one
//! function of integers: the CPU and the GPU keep the same rows with the same weights. The memory
//! is a few kilobytes of bins, not a sorted copy of the rows (the out-of-core path needs that).
//!
//! The draw of row `i` is the top 24 bits of SplitMix64 of the tree's key and the row, as
//! [`crate::sampling::RowSampler`]'s, so it is a stateless function of (key, row) on both backends.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::fixed_point::rounding_factor;
use crate::sampling::{split_mix, GOLDEN};

/// XGBoost's `kDefaultMvsLambda`: the hessian's weight in a row's magnitude.
pub const LAMBDA: f32 = 0.1;
/// XGBoost's `kRtEps`: the smallest threshold (a zero threshold would divide by zero).
const MIN_THRESHOLD: f32 = 1e-6;
/// The bins of the widest pass.
pub const BINS: usize = 1 << 11;
/// Each pass's (lowest bit, width) of the 31-bit image of a non-negative float.
const PASSES: [(u32, u32); 3] = [(20, 11), (10, 10), (0, 10)];

/// Row `i`'s regularised gradient magnitude, `sqrt(g^2 + λ h^2)`; 0 for a pair that is not finite
/// (such a row is never sampled).
#[inline(always)]
pub fn magnitude(pair: GradientPair<f32>) -> f32 {
    let m = libm::sqrtf(pair.grad * pair.grad + LAMBDA * pair.hess * pair.hess);
    if m <= f32::MAX {
        m
    } else {
        0.0
    }
}

/// A pass's row counts and fixed-point magnitude sums of one bin. `Pod` for the kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MvsBin {
    pub count: u64,
    /// Wrapping two's-complement sums of [`MvsPass::fixed`] values (non-negative, below `2^62`).
    pub sum: u64,
}

/// One histogram pass: the rows whose magnitude's image has `prefix` above bit `shift + bits` fall
/// in bin `(image >> shift) & (2^bits - 1)`. `Pod` for the kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MvsPass {
    /// A magnitude in fixed point is `trunc(m * to_fixed)`.
    pub to_fixed: f64,
    pub prefix: u32,
    pub shift: u32,
    pub bits: u32,
    pub _pad: u32,
}

impl MvsPass {
    /// The bins of this pass.
    pub fn bins(&self) -> usize {
        1 << self.bits
    }

    /// Magnitude `m`'s bin, or `None` outside the pass's prefix.
    #[inline(always)]
    pub fn bin(&self, m: f32) -> Option<usize> {
        let image = m.to_bits();
        let high = self.shift + self.bits;
        let inside = if high >= 32 { true } else { image >> high == self.prefix };
        inside.then(|| ((image >> self.shift) & ((1 << self.bits) - 1)) as usize)
    }

    /// `m` in fixed point.
    #[inline(always)]
    pub fn fixed(&self, m: f32) -> u64 {
        (m as f64 * self.to_fixed) as i64 as u64
    }
}

/// The search for the threshold `u`, a pass at a time: [`Threshold::pass`] says which histogram
/// to build next, [`Threshold::take`] reads it.
#[derive(Clone, Copy, Debug)]
pub struct Threshold {
    /// `S`, the expected number of sampled rows.
    sample_rows: u64,
    to_fixed: f64,
    pass: usize,
    prefix: u32,
    /// The fixed-point sum of the magnitudes below the prefix's range.
    below: u64,
    /// The rows above the prefix's range.
    above: u64,
    /// After the last pass, `u`.
    found: Option<f32>,
}

impl Threshold {
    /// The search over `rows` rows whose largest magnitude is `max`, for `sample_rows` of them
    /// (`0 < sample_rows < rows`).
    pub fn new(rows: u64, sample_rows: u64, max: f32) -> Self {
        // Every sum of magnitudes stays below 2^62.
        let to_fixed = (1u64 << 62) as f64 / rounding_factor(max as f64 * rows as f64, 0);
        Threshold { sample_rows, to_fixed, pass: 0, prefix: 0, below: 0, above: 0, found: None }
    }

    /// The next histogram to build, or `None` when [`Threshold::threshold`] is known.
    pub fn pass(&self) -> Option<MvsPass> {
        let &(shift, bits) = PASSES.get(self.pass)?;
        Some(MvsPass { to_fixed: self.to_fixed, prefix: self.prefix, shift, bits, _pad: 0 })
    }

    /// Reads the histogram of [`Threshold::pass`]: keeps the last bin `j` whose lower bound `t`
    /// has `F(t) >= S`, where `F(t) = Σ_{m < t} m / t + #{m >= t}` falls as `t` grows, so that
    /// `u` is in bin `j`. After the last pass the bin is one float `x`, and
    /// `u = Σ_{m <= x} m / (S - #{m > x})`.
    pub fn take(&mut self, bins: &[MvsBin]) {
        let Some(pass) = self.pass() else { return };
        let mut rows_from = self.above + bins.iter().map(|b| b.count).sum::<u64>();
        let mut below = self.below;
        let mut chosen = (0, below, rows_from);
        for (j, bin) in bins.iter().enumerate() {
            let t = f32::from_bits(((self.prefix << pass.bits) | j as u32) << pass.shift);
            let below_over_t = (below as f64 / self.to_fixed) / t as f64;
            let falls_short = !t.is_finite() || below_over_t + (rows_from as f64) < self.sample_rows as f64;
            if j > 0 && falls_short {
                break;
            }
            chosen = (j, below, rows_from);
            below = below.wrapping_add(bin.sum);
            rows_from -= bin.count;
        }
        let (j, below, rows_from) = chosen;
        self.above = rows_from - bins[j].count;
        self.below = below;
        self.prefix = (self.prefix << pass.bits) | j as u32;
        self.pass += 1;
        if self.pass == PASSES.len() {
            let below_or_at = below.wrapping_add(bins[j].sum) as f64 / self.to_fixed;
            // `S > #{m > x}` whenever a bin above fell short; the fallback keeps every nonzero row.
            let rows_left = self.sample_rows.saturating_sub(self.above) as f64;
            self.found = Some(if rows_left > 0.0 { (below_or_at / rows_left) as f32 } else { 0.0 });
        }
    }

    /// `u`, once every pass is read.
    pub fn threshold(&self) -> Option<f32> {
        self.found
    }
}

/// One tree's sampler: the draws' key and the threshold. `repr(C)` and `Pod` for the kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GradientSampler {
    pub key: u64,
    /// `u`; `f32::MAX` samples nothing.
    pub threshold: f32,
    pub _pad: u32,
}

impl GradientSampler {
    /// The sampler of the rows numbered from `first` on (a device's or a page's share).
    pub fn from_row(&self, first: u64) -> Self {
        GradientSampler { key: self.key.wrapping_add(first.wrapping_mul(GOLDEN)), ..*self }
    }

    /// Row `row`'s pair as its tree sees it: scaled by `1 / p` when drawn, zero otherwise.
    #[inline(always)]
    pub fn sample(&self, row: u64, pair: GradientPair<f32>) -> GradientPair<f32> {
        if self.threshold == f32::MAX {
            return GradientPair::new(0.0, 0.0);
        }
        let p = magnitude(pair) / self.threshold.max(MIN_THRESHOLD);
        if p >= 1.0 {
            return pair;
        }
        // The top 24 bits of the draw: a float in [0, 1), exact.
        let draw = (split_mix(self.key, row) >> 40) as f32 * (1.0 / (1u32 << 24) as f32);
        if p > 0.0 && draw < p {
            let scale = 1.0 / p;
            GradientPair::new(pair.grad * scale, pair.hess * scale)
        } else {
            GradientPair::new(0.0, 0.0)
        }
    }
}

/// The largest magnitude of the `n` pairs as float bits in `max` (an atomic max, so `max` starts
/// at 0). Any grid; a thread walks the rows a grid apart.
///
/// # Safety
/// `gradients` holds `n` pairs; `max` is one word.
pub unsafe fn max_kernel(gradients: *const GradientPair<f32>, n: u64, max: *mut u32) {
    let stride = arch::grid_dim_x() as u64 * arch::block_dim_x() as u64;
    let mut largest = 0u32;
    let mut i = global_thread();
    while i < n {
        // SAFETY: `i < n`.
        largest = largest.max(magnitude(unsafe { arch::load(gradients.add(i as usize)) }).to_bits());
        i += stride;
    }
    for offset in [16, 8, 4, 2, 1] {
        largest = largest.max(arch::shfl_xor_sync_u32(u32::MAX, largest, offset));
    }
    if arch::lane_id() == 0 && largest > 0 {
        // SAFETY: one word.
        unsafe { arch::atomic_max_u32_gpu(max, largest) };
    }
}

/// Adds `pass`'s histogram of the `n` pairs to `bins` (`pass.bins()` of them): each block counts
/// into shared memory (`16 * pass.bins()` bytes of it) and adds its nonzero bins. Any grid of whole
/// warps.
///
/// # Safety
/// `gradients` holds `n` pairs, `pass` one, `bins` `pass.bins()`.
pub unsafe fn histogram_kernel(gradients: *const GradientPair<f32>, n: u64, pass: *const MvsPass, bins: *mut MvsBin) {
    // SAFETY: one pass.
    let pass = unsafe { arch::load(pass) };
    let shared = arch::dynamic_shared_memory() as *mut MvsBin;
    let (thread, threads) = (arch::thread_idx_x() as usize, arch::block_dim_x() as usize);
    for b in (thread..pass.bins()).step_by(threads) {
        // SAFETY: the launch gives `pass.bins()` bins of shared memory.
        unsafe { arch::store(shared.add(b), MvsBin::default()) };
    }
    arch::sync_threads();
    let stride = arch::grid_dim_x() as u64 * threads as u64;
    let mut i = global_thread();
    while i < n {
        // SAFETY: `i < n`.
        let m = magnitude(unsafe { arch::load(gradients.add(i as usize)) });
        if let Some(b) = pass.bin(m) {
            // SAFETY: `b < pass.bins()`, in shared memory.
            unsafe {
                let bin = shared.add(b);
                arch::atomic_add_u64_cta(core::ptr::addr_of_mut!((*bin).count), 1);
                arch::atomic_add_u64_cta(core::ptr::addr_of_mut!((*bin).sum), pass.fixed(m));
            }
        }
        i += stride;
    }
    arch::sync_threads();
    for b in (thread..pass.bins()).step_by(threads) {
        // SAFETY: `b < pass.bins()`, in shared memory and in `bins`.
        unsafe {
            let local = arch::load(shared.add(b));
            if local.count > 0 {
                let bin = bins.add(b);
                arch::atomic_add_u64_gpu(core::ptr::addr_of_mut!((*bin).count), local.count);
                arch::atomic_add_u64_gpu(core::ptr::addr_of_mut!((*bin).sum), local.sum);
            }
        }
    }
}

/// `out[i] = sampler.sample(i, gradients[i])` (in place when `out == gradients`). One thread a row.
///
/// # Safety
/// `gradients` and `out` hold `n` pairs.
pub unsafe fn apply_kernel(
    gradients: *const GradientPair<f32>,
    sampler: GradientSampler,
    n: u64,
    out: *mut GradientPair<f32>,
) {
    let i = global_thread();
    if i >= n {
        return;
    }
    // SAFETY: `i < n`.
    unsafe { arch::store(out.add(i as usize), sampler.sample(i, arch::load(gradients.add(i as usize)))) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `u` from the sorted magnitudes in f64, as XGBoost finds it.
    fn sorted_threshold(magnitudes: &[f32], sample_rows: u64) -> f64 {
        let mut sorted: Vec<f64> = magnitudes.iter().map(|&m| m as f64).collect();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mut below = 0.0;
        for i in 0..n {
            below += sorted[i];
            let above = (n - i - 1) as f64;
            let u = below / (sample_rows as f64 - above);
            let upper = sorted.get(i + 1).copied().unwrap_or(f64::MAX);
            if sample_rows as f64 > above && u >= sorted[i] && u <= upper {
                return u;
            }
        }
        panic!("no threshold")
    }

    fn radix_threshold(magnitudes: &[f32], sample_rows: u64) -> f32 {
        let max = magnitudes.iter().copied().fold(0.0, f32::max);
        let mut search = Threshold::new(magnitudes.len() as u64, sample_rows, max);
        while let Some(pass) = search.pass() {
            let mut bins = vec![MvsBin::default(); pass.bins()];
            for &m in magnitudes {
                if let Some(b) = pass.bin(m) {
                    bins[b].count += 1;
                    bins[b].sum = bins[b].sum.wrapping_add(pass.fixed(m));
                }
            }
            search.take(&bins);
        }
        search.threshold().expect("found")
    }

    extern crate std;
    use std::vec::Vec;
    use std::{panic, vec};

    fn magnitudes(n: usize, seed: u64, spread: f32) -> Vec<f32> {
        (0..n as u64)
            .map(|i| {
                let x = (split_mix(seed, i) >> 40) as f32 / (1u32 << 24) as f32;
                if i % 7 == 0 {
                    0.0
                } else {
                    (x * spread).exp() * 1e-3
                }
            })
            .collect()
    }

    #[test]
    fn the_radix_threshold_is_the_sorted_ones() {
        for (n, spread, share) in [(1000, 1.0, 0.1), (5000, 8.0, 0.5), (20_000, 20.0, 0.01), (300, 0.0, 0.3)] {
            let m = magnitudes(n, n as u64, spread);
            let sample_rows = (n as f64 * share) as u64;
            let (radix, sorted) = (radix_threshold(&m, sample_rows) as f64, sorted_threshold(&m, sample_rows));
            assert!((radix - sorted).abs() <= 1e-6 * sorted, "{n} rows: {radix} against {sorted}");
            // The expected number of rows is S.
            let expected: f64 = m.iter().map(|&m| (m as f64 / radix).min(1.0)).sum();
            assert!((expected - sample_rows as f64).abs() < 1e-3 * sample_rows as f64 + 1e-6, "{expected}");
        }
    }

    #[test]
    fn sampling_keeps_about_s_rows_and_is_unbiased() {
        let n = 200_000u64;
        let pairs: Vec<GradientPair<f32>> = (0..n)
            .map(|i| {
                let x = (split_mix(99, i) >> 40) as f32 / (1u32 << 24) as f32;
                GradientPair::new(x * x * if i % 2 == 0 { 1.0 } else { -1.0 }, 0.25 * x)
            })
            .collect();
        let m: Vec<f32> = pairs.iter().map(|&p| magnitude(p)).collect();
        let sample_rows = n / 10;
        let sampler = GradientSampler { key: 0xabc, threshold: radix_threshold(&m, sample_rows), _pad: 0 };
        let sampled: Vec<GradientPair<f32>> = (0..n).map(|i| sampler.sample(i, pairs[i as usize])).collect();
        let kept = sampled.iter().filter(|p| p.hess != 0.0).count() as f64;
        assert!((kept / sample_rows as f64 - 1.0).abs() < 0.03, "kept {kept}");
        let sum = |pairs: &[GradientPair<f32>]| pairs.iter().map(|p| p.hess as f64).sum::<f64>();
        let (all, estimate) = (sum(&pairs), sum(&sampled));
        assert!((estimate / all - 1.0).abs() < 0.02, "{estimate} against {all}");
    }

    #[test]
    fn the_largest_rows_are_always_kept_and_zero_ones_never() {
        let pairs: Vec<GradientPair<f32>> = (0..1000)
            .map(|i| {
                GradientPair::new(
                    if i < 10 {
                        100.0
                    } else if i < 20 {
                        0.0
                    } else {
                        0.01
                    },
                    0.0,
                )
            })
            .collect();
        let m: Vec<f32> = pairs.iter().map(|&p| magnitude(p)).collect();
        let sampler = GradientSampler { key: 1, threshold: radix_threshold(&m, 50), _pad: 0 };
        assert!((0..10).all(|i| sampler.sample(i, pairs[i as usize]) == pairs[i as usize]));
        assert!((10..20).all(|i| sampler.sample(i, pairs[i as usize]).grad == 0.0));
    }
}
