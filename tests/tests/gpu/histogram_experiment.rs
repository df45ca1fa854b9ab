//! The experimental gradient histogram of the precision experiment (`ExperimentalHistogram`): fixed
//! point must equal the CPU's integer sums exactly and repeat bit for bit; `f32` and `f64` sums must
//! lie within the rounding bound of any summation order, `(n - 1) u sum(|x|)` per bin, of the exact
//! sum.

use primitives::ops::{Element, GradientPair};
use primitives::{cpu, Error, ExperimentalHistogram, Gpu, HistogramExperimentKernel};
use rand::Rng;
use tests::{gpu, max_len, random_vec, EDGE_SIZES};

fn sizes(gpu: &Gpu) -> Vec<usize> {
    // The emulator runs every thread as a coroutine: 10^5 rows keep it quick.
    let cap = if gpu.is_emulated() { 100_003 } else { max_len(gpu) };
    EDGE_SIZES.iter().copied().chain([1 << 20, 10_000_000]).filter(|&n| n <= cap).collect()
}

fn run<T: HistogramExperimentKernel>(
    gpu: &Gpu,
    bins: &[u32],
    gradients: &[GradientPair<T>],
    bin_count: usize,
) -> Vec<GradientPair<T>>
where
    GradientPair<T>: Element,
{
    let (bins, gradients) = (gpu.upload(bins).unwrap(), gpu.upload(gradients).unwrap());
    let mut histogram = gpu.alloc_zeroed::<GradientPair<T>>(bin_count).unwrap();
    ExperimentalHistogram::gradient_pairs(gpu, &bins, &gradients, &mut histogram).unwrap();
    histogram.to_vec(gpu).unwrap()
}

/// Logistic-loss-like gradients: `grad` in [-1, 1], `hess` in [0, 0.25]; bins uniform, some past the
/// last bin.
fn inputs(n: usize, bin_count: usize, seed: u64) -> (Vec<u32>, Vec<GradientPair<f32>>) {
    let bins = random_vec(n, seed, |r| r.gen_range(0..bin_count as u32 + 2));
    let gradients =
        random_vec(n, seed + 1, |r| GradientPair::new(r.gen_range(-1.0f32..1.0), r.gen_range(0.0f32..0.25)));
    (bins, gradients)
}

#[test]
fn fixed_point_histogram_is_exact_and_repeats() {
    let gpu = gpu();
    for (i, n) in sizes(&gpu).into_iter().enumerate() {
        for bin_count in [1usize, 256, ExperimentalHistogram::max_bins::<i64>()] {
            let (bins, gradients) = inputs(n, bin_count, 10 * i as u64);
            // Integers of up to 40 bits (sums a float accumulator could not hold exactly); 10^7 rows
            // in one bin stay below 2^63.
            let fixed: Vec<GradientPair<i64>> = gradients
                .iter()
                .map(|g| {
                    GradientPair::new((g.grad as f64 * 2f64.powi(40)) as i64, (g.hess as f64 * 2f64.powi(40)) as i64)
                })
                .collect();
            let mut want = vec![GradientPair::new(0i64, 0i64); bin_count];
            for (&b, g) in bins.iter().zip(&fixed) {
                if let Some(h) = want.get_mut(b as usize) {
                    *h = GradientPair::new(h.grad + g.grad, h.hess + g.hess);
                }
            }
            let first = run(&gpu, &bins, &fixed, bin_count);
            assert_eq!(first, want, "n = {n}, {bin_count} bins");
            assert_eq!(run(&gpu, &bins, &fixed, bin_count), first, "n = {n}: a second run differs");
        }
    }
}

#[test]
fn float_histograms_within_the_rounding_bound() {
    let gpu = gpu();
    for (i, n) in sizes(&gpu).into_iter().enumerate() {
        let bin_count = 256;
        let (bins, gradients) = inputs(n, bin_count, 1000 + i as u64);
        let wide: Vec<GradientPair<f64>> =
            gradients.iter().map(|g| GradientPair::new(g.grad as f64, g.hess as f64)).collect();
        let single = run(&gpu, &bins, &gradients, bin_count);
        let double = run(&gpu, &bins, &wide, bin_count);
        let mut rows_of = vec![Vec::new(); bin_count];
        for (r, &b) in bins.iter().enumerate() {
            if let Some(rows) = rows_of.get_mut(b as usize) {
                rows.push(r);
            }
        }
        for (b, rows) in rows_of.iter().enumerate() {
            let count = rows.len() as f64;
            for (component, pick) in [("grad", 0), ("hess", 1)] {
                let value = |r: usize| if pick == 0 { gradients[r].grad as f64 } else { gradients[r].hess as f64 };
                let exact = cpu::compensated_sum(rows.iter().map(|&r| value(r)));
                let abs_sum: f64 = rows.iter().map(|&r| value(r).abs()).sum();
                let got_f32 = if pick == 0 { single[b].grad } else { single[b].hess } as f64;
                let got_f64 = if pick == 0 { double[b].grad } else { double[b].hess };
                let bound = |u: f64| (count * u) / (1.0 - count * u) * abs_sum + u * exact.abs();
                let bound32 = bound(f32::EPSILON as f64 / 2.0);
                let bound64 = bound(f64::EPSILON / 2.0);
                assert!((got_f32 - exact).abs() <= bound32, "n = {n}, bin {b} {component}: f32 {got_f32} vs {exact}");
                assert!((got_f64 - exact).abs() <= bound64, "n = {n}, bin {b} {component}: f64 {got_f64} vs {exact}");
            }
        }
    }
}

#[test]
fn histogram_adds_to_what_is_there_and_checks_its_arguments() {
    let gpu = gpu();
    let bins = gpu.upload(&[0u32, 1, 1, 5]).unwrap();
    let gradients = gpu
        .upload(&[
            GradientPair::new(1.0f32, 2.0),
            GradientPair::new(3.0, 4.0),
            GradientPair::new(5.0, 6.0),
            GradientPair::new(7.0, 8.0),
        ])
        .unwrap();
    let mut histogram = gpu.upload(&[GradientPair::new(10.0f32, 20.0), GradientPair::new(0.5, 0.25)]).unwrap();
    ExperimentalHistogram::gradient_pairs(&gpu, &bins, &gradients, &mut histogram).unwrap();
    // Bin 5 is past the histogram: skipped.
    assert_eq!(histogram.to_vec(&gpu).unwrap(), [GradientPair::new(11.0, 22.0), GradientPair::new(8.5, 10.25)]);

    let short = gpu.upload(&[GradientPair::new(1.0f32, 1.0)]).unwrap();
    let error = ExperimentalHistogram::gradient_pairs(&gpu, &bins, &short, &mut histogram).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "gradients", .. }), "{error}");
    let mut huge = gpu.alloc_zeroed::<GradientPair<f32>>(ExperimentalHistogram::max_bins::<f32>() + 1).unwrap();
    let error = ExperimentalHistogram::gradient_pairs(&gpu, &bins, &gradients, &mut huge).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "histogram", .. }), "{error}");
    let mut empty = gpu.alloc_zeroed::<GradientPair<f32>>(0).unwrap();
    let error = ExperimentalHistogram::gradient_pairs(&gpu, &bins, &gradients, &mut empty).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "histogram", .. }), "{error}");
}
