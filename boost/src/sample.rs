//! A tree's row sampling (`subsample`, `sampling_method`), one value both backends take: uniform
//! draws ([`RowSampler`]) or minimal variance sampling by gradient magnitude
//! ([`boost_kernels::mvs`]). The CPU backend samples a gradient column here; the GPU backend runs
//! the same steps as kernels (`gpu::sample`). Both find the threshold with `gradient_sampler`
//! from integer histograms, so they keep the same rows with the same weights.

use boost_kernels::mvs::{self, GradientSampler, MvsBin, MvsPass, Threshold};
use boost_kernels::sampling::RowSampler;
use primitives::ops::GradientPair;
use rand::Rng;
use rayon::prelude::*;

use crate::param::{SamplingMethod, TreeParams};
use crate::Result;

/// How one tree draws its rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TreeSampler {
    /// Each row with the same probability (every row: [`RowSampler::ALL`]).
    Uniform(RowSampler),
    /// Minimal variance sampling of `subsample` of the rows, the draws keyed by `key`.
    GradientBased { key: u64, subsample: f32 },
}

impl TreeSampler {
    /// The tree's sampler: a key drawn from the run's generator when sampling, so that the draws
    /// of both backends are one stateless function of it.
    pub fn draw(params: &TreeParams, rng: &mut impl Rng) -> Self {
        match (params.subsample < 1.0, params.sampling_method) {
            (false, _) => TreeSampler::Uniform(RowSampler::ALL),
            (true, SamplingMethod::Uniform) => TreeSampler::Uniform(RowSampler::new(rng.gen(), params.subsample)),
            (true, SamplingMethod::GradientBased) => {
                TreeSampler::GradientBased { key: rng.gen(), subsample: params.subsample }
            }
        }
    }

    /// Samples one output's gradient column in place (row `i` is the sampler's row `i`).
    /// `magnitudes`: room for gradient-based sampling's magnitudes, the caller's across trees (a
    /// new buffer would cost its page faults every tree).
    pub fn sample_on_host(&self, column: &mut [GradientPair<f32>], magnitudes: &mut Vec<f32>) -> Result<()> {
        match *self {
            TreeSampler::Uniform(sampler) if sampler == RowSampler::ALL => {}
            TreeSampler::Uniform(sampler) => column.par_iter_mut().enumerate().for_each(|(i, g)| {
                if !sampler.keeps(i as u64) {
                    *g = GradientPair::new(0.0, 0.0);
                }
            }),
            TreeSampler::GradientBased { key, subsample } => {
                magnitudes.resize(column.len(), 0.0);
                let max = (magnitudes.par_iter_mut().zip(column.par_iter()).with_min_len(1 << 14))
                    .map(|(m, &g)| {
                        *m = mvs::magnitude(g);
                        *m
                    })
                    .reduce(|| 0.0, f32::max);
                // A pass within a prefix reads only the magnitudes the pass before kept: few.
                let mut inside: Option<Vec<f32>> = None;
                let histogram = |pass: &MvsPass| {
                    if pass.shift + pass.bits < 31 {
                        let rows = inside.as_deref().unwrap_or(magnitudes);
                        inside = Some(rows.par_iter().copied().filter(|&m| pass.bin(m).is_some()).collect());
                    }
                    Ok(host_histogram(inside.as_deref().unwrap_or(magnitudes), pass))
                };
                if let Some(sampler) = gradient_sampler(key, subsample, column.len() as u64, max, histogram)? {
                    column.par_iter_mut().enumerate().for_each(|(i, g)| *g = sampler.sample(i as u64, *g));
                }
            }
        }
        Ok(())
    }
}

/// The gradient-based sampler of a tree over `rows` rows whose largest magnitude is `max`, its
/// threshold found from the histograms `histogram` builds over every row (all devices' or pages'
/// summed); `None` when `subsample` keeps every row.
pub(crate) fn gradient_sampler(
    key: u64,
    subsample: f32,
    rows: u64,
    max: f32,
    mut histogram: impl FnMut(&MvsPass) -> Result<Vec<MvsBin>>,
) -> Result<Option<GradientSampler>> {
    // XGBoost's count of the rows to sample.
    let sample_rows = (rows as f64 * subsample as f64) as u64;
    if sample_rows >= rows {
        return Ok(None);
    }
    let threshold = if sample_rows == 0 || max == 0.0 {
        f32::MAX
    } else {
        let mut search = Threshold::new(rows, sample_rows, max);
        while let Some(pass) = search.pass() {
            search.take(&histogram(&pass)?);
        }
        search.threshold().expect("every pass was read")
    };
    Ok(Some(GradientSampler { key, threshold, _pad: 0 }))
}

/// `pass`'s histogram of the `magnitudes`, per thread then added: integers, so in any order the same.
fn host_histogram(magnitudes: &[f32], pass: &MvsPass) -> Vec<MvsBin> {
    let add = |mut bins: Vec<MvsBin>, &m: &f32| {
        if let Some(b) = pass.bin(m) {
            bins[b].count += 1;
            bins[b].sum = bins[b].sum.wrapping_add(pass.fixed(m));
        }
        bins
    };
    let merge = |mut a: Vec<MvsBin>, b: Vec<MvsBin>| {
        add_bins(&mut a, &b);
        a
    };
    let empty = || vec![MvsBin::default(); pass.bins()];
    magnitudes.par_iter().with_min_len(1 << 14).fold(empty, add).reduce(empty, merge)
}

/// Adds `more` (a pass's bins of other rows: another thread's, device's or page's) to `bins`:
/// integers, so the order of the additions does not matter.
pub(crate) fn add_bins(bins: &mut [MvsBin], more: &[MvsBin]) {
    for (a, b) in bins.iter_mut().zip(more) {
        a.count += b.count;
        a.sum = a.sum.wrapping_add(b.sum);
    }
}
