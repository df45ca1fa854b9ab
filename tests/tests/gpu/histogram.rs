//! Device histograms against the CPU oracles, on the GPU with `--features gpu`, else on the SIMT
//! emulator (sizes capped). Counts and fixed-point sums exact (and bit-identical run to run); `f32`
//! and `f64` sums within the rounding bound of any summation order, `(n - 1) u sum(|w|)` per bin.

use primitives::ops::{Element, GradientPair};
use primitives::{
    cpu, pack_bin_rows, BinIndex, BlockHistogramLayout, DeviceBuffer, DeviceHistogram, Error, EvenSample, Gpu,
    HistogramWeight, MultiFeatureGradient, MultiFeatureMatrix, PackedBinMatrix,
};
use rand::Rng;
use tests::{gpu, max_len, random_vec, EDGE_SIZES};

/// The bin counts every histogram is checked with: one, two, around a byte, and past it.
const BIN_COUNTS: [usize; 5] = [1, 2, 255, 256, 1024];

fn sizes(gpu: &Gpu) -> Vec<usize> {
    EDGE_SIZES.iter().copied().chain([1 << 20, (1 << 26) + 5]).filter(|&n| n <= max_len(gpu)).collect()
}

fn run_count<B: BinIndex>(gpu: &Gpu, samples: &[B], bins: usize) -> (Vec<u64>, u64) {
    let input = gpu.upload(samples).unwrap();
    let mut histogram = gpu.alloc_zeroed::<u64>(bins).unwrap();
    let mut ignored = gpu.alloc_zeroed::<u64>(1).unwrap();
    DeviceHistogram::count(gpu, &input, &mut histogram, &mut ignored).unwrap();
    (histogram.to_vec(gpu).unwrap(), ignored.to_vec(gpu).unwrap()[0])
}

fn check_count<B: BinIndex>(gpu: &Gpu, samples: &[B], bins: usize, what: &str) {
    let got = run_count(gpu, samples, bins);
    let want = cpu::histogram_count(samples, bins);
    assert!(got == want, "{what}: n = {}, {bins} bins: ignored {} vs {}", samples.len(), got.1, want.1);
}

/// Bin ids drawn from `0..limit` (limit past the bin count: some ignored), as `B`.
fn uniform_bins<B: BinIndex + TryFrom<u32>>(n: usize, limit: u32, seed: u64) -> Vec<B> {
    random_vec(n, seed, |r| {
        let id = r.gen_range(0..limit);
        B::try_from(id).unwrap_or_else(|_| B::try_from(0).ok().expect("0 fits"))
    })
}

#[test]
fn counts_of_every_bin_type_and_bin_count() {
    let gpu = gpu();
    for (i, n) in sizes(&gpu).into_iter().enumerate() {
        for (j, bins) in BIN_COUNTS.into_iter().enumerate() {
            // The large sizes with 256 bins only.
            if n >= 1 << 20 && bins != 256 {
                continue;
            }
            let seed = 100 * i as u64 + j as u64;
            let limit = (bins + bins / 8 + 1) as u32;
            check_count::<u8>(&gpu, &uniform_bins(n, limit.min(256), seed), bins, "u8");
            check_count::<u16>(&gpu, &uniform_bins(n, limit, seed + 1), bins, "u16");
            check_count::<u32>(&gpu, &uniform_bins(n, limit, seed + 2), bins, "u32");
        }
    }
    // u32 ids far past the bins, and u32::MAX itself.
    let samples: Vec<u32> = random_vec(10_000, 7, |r| if r.gen_bool(0.5) { r.gen_range(0..64) } else { r.gen() });
    check_count(&gpu, &[&samples[..], &[u32::MAX, 63, 64]].concat(), 64, "u32 ids past the bins");
}

#[test]
fn skewed_counts_are_exact() {
    let gpu = gpu();
    let n = if gpu.is_emulated() { 300_001 } else { (1 << 26) + 3 };
    for bins in BIN_COUNTS {
        let hot = (bins as u32 * 2 / 3).min(255) as u8;
        // 95 % in one bin, the rest anywhere (some ignored).
        let skewed: Vec<u8> = random_vec(n, bins as u64, |r| {
            if r.gen_bool(0.95) {
                hot
            } else {
                r.gen_range(0..=255u32.min(bins as u32)) as u8
            }
        });
        check_count(&gpu, &skewed, bins, "95% in one bin");
        check_count(&gpu, &vec![hot; n], bins, "all in one bin");
    }
    // Everything ignored.
    let (histogram, ignored) = run_count(&gpu, &vec![200u8; 5000], 100);
    assert!(histogram.iter().all(|&c| c == 0));
    assert_eq!(ignored, 5000);
}

#[test]
fn every_block_histogram_layout_counts_the_same() {
    let gpu = gpu();
    let layouts = [
        BlockHistogramLayout::WarpColumns,
        BlockHistogramLayout::Atomic { copies: 1 },
        BlockHistogramLayout::Atomic { copies: 3 },
        BlockHistogramLayout::Atomic { copies: 8 },
    ];
    let n = if gpu.is_emulated() { 100_003 } else { 1 << 24 };
    for bins in [1usize, 2, 16, 100, 255, 256, 1024] {
        let uniform: Vec<u16> = uniform_bins(n, bins as u32 + 7, bins as u64);
        let skewed: Vec<u16> = random_vec(n, 5, |r| if r.gen_bool(0.95) { 0 } else { r.gen_range(0..bins as u16 + 2) });
        for layout in layouts {
            for samples in [&uniform, &skewed] {
                let input = gpu.upload(samples).unwrap();
                let mut histogram = gpu.alloc_zeroed::<u64>(bins).unwrap();
                let mut ignored = gpu.alloc_zeroed::<u64>(1).unwrap();
                let result =
                    DeviceHistogram::count_with_layout(&gpu, &input, Some(layout), &mut histogram, &mut ignored);
                // The warp-column layout takes 32 x 8 counters a bin: past the shared memory at 1024.
                let shared_bytes = 32 * 8 * bins * 4;
                if layout == BlockHistogramLayout::WarpColumns
                    && shared_bytes + 8 > gpu.properties().max_shared_bytes_per_block
                {
                    assert!(matches!(result, Err(Error::InvalidArgument { name: "layout", .. })), "{layout:?}, {bins}");
                    continue;
                }
                result.unwrap();
                let got = (histogram.to_vec(&gpu).unwrap(), ignored.to_vec(&gpu).unwrap()[0]);
                assert!(got == cpu::histogram_count(samples, bins), "{layout:?}, {bins} bins");
            }
        }
    }
    let input = gpu.upload(&[0u8]).unwrap();
    let mut histogram = gpu.alloc_zeroed::<u64>(4).unwrap();
    let mut ignored = gpu.alloc_zeroed::<u64>(1).unwrap();
    let nine = Some(BlockHistogramLayout::Atomic { copies: 9 });
    let result = DeviceHistogram::count_with_layout(&gpu, &input, nine, &mut histogram, &mut ignored);
    assert!(matches!(result, Err(Error::InvalidArgument { name: "layout", .. })));
}

#[test]
fn more_bins_than_shared_memory_holds_go_straight_to_device_memory() {
    let gpu = gpu();
    // 2^20 u32 counters (4 MiB) fit in no block's shared memory.
    let bins = 1 << 20;
    for n in [0, 1, 1000, 300_007] {
        check_count::<u32>(&gpu, &uniform_bins(n, bins as u32 + 1000, n as u64), bins, "direct");
        let skewed: Vec<u32> = random_vec(n, 3, |r| if r.gen_bool(0.9) { 12345 } else { r.gen_range(0..bins as u32) });
        check_count::<u32>(&gpu, &skewed, bins, "direct, skewed");
    }
}

#[test]
fn histograms_accumulate_across_calls() {
    let gpu = gpu();
    let samples: Vec<u8> = uniform_bins(50_000, 40, 11);
    let input = gpu.upload(&samples).unwrap();
    let mut histogram = gpu.alloc_zeroed::<u64>(32).unwrap();
    let mut ignored = gpu.alloc_zeroed::<u64>(1).unwrap();
    DeviceHistogram::count(&gpu, &input, &mut histogram, &mut ignored).unwrap();
    DeviceHistogram::count(&gpu, &input, &mut histogram, &mut ignored).unwrap();
    let (want, want_ignored) = cpu::histogram_count(&samples, 32);
    assert_eq!(histogram.to_vec(&gpu).unwrap(), want.iter().map(|c| 2 * c).collect::<Vec<_>>());
    assert_eq!(ignored.to_vec(&gpu).unwrap(), [2 * want_ignored]);
}

fn run_weighted<B: BinIndex, W: HistogramWeight>(
    gpu: &Gpu,
    samples: &[B],
    weights: &[W],
    bins: usize,
) -> (Vec<W>, u64) {
    let (input, weight_buffer) = (gpu.upload(samples).unwrap(), gpu.upload(weights).unwrap());
    let mut histogram = gpu.alloc_zeroed::<W>(bins).unwrap();
    let mut ignored = gpu.alloc_zeroed::<u64>(1).unwrap();
    DeviceHistogram::weighted(gpu, &input, &weight_buffer, &mut histogram, &mut ignored).unwrap();
    (histogram.to_vec(gpu).unwrap(), ignored.to_vec(gpu).unwrap()[0])
}

/// Checks float sums against the exact (f64 of f64 products is exact enough: weights have 24 bits,
/// sums of at most 2^26 of them keep 50) within `(n - 1) u sum(|w|)` per bin.
fn check_float_bins(got: &[f64], samples: &[u32], weights: &[f64], unit_roundoff: f64, what: &str) {
    let bins = got.len();
    let (exact, _) = cpu::histogram_weighted(samples, weights, bins);
    let magnitudes: Vec<f64> = weights.iter().map(|w| w.abs()).collect();
    let (absolute, _) = cpu::histogram_weighted(samples, &magnitudes, bins);
    let (counts, _) = cpu::histogram_count(samples, bins);
    for b in 0..bins {
        let bound = counts[b].saturating_sub(1) as f64 * unit_roundoff * absolute[b] * 1.01;
        assert!(
            (got[b] - exact[b]).abs() <= bound,
            "{what}: bin {b} of {bins}: {} vs {} (bound {bound})",
            got[b],
            exact[b]
        );
    }
}

#[test]
fn weighted_float_histograms_within_the_rounding_bound() {
    let gpu = gpu();
    for (i, n) in sizes(&gpu).into_iter().enumerate() {
        for (j, bins) in BIN_COUNTS.into_iter().enumerate() {
            if n >= 1 << 20 && bins != 256 {
                continue;
            }
            let seed = 1000 + 10 * i as u64 + j as u64;
            let limit = (bins + 3) as u32;
            // Weights of both signs.
            let weights: Vec<f32> = random_vec(n, seed, |r| r.gen_range(-2.0f32..2.0));
            let wide: Vec<f64> = weights.iter().map(|&w| w as f64).collect();
            let ids: Vec<u16> = uniform_bins(n, limit, seed + 1);
            let ids_u32: Vec<u32> = ids.iter().map(|&b| b as u32).collect();
            let (got, ignored) = run_weighted(&gpu, &ids, &weights, bins);
            assert_eq!(ignored, cpu::histogram_count(&ids, bins).1, "f32 ignored");
            let got: Vec<f64> = got.iter().map(|&x| x as f64).collect();
            check_float_bins(&got, &ids_u32, &wide, f32::EPSILON as f64 / 2.0, "f32 weights, u16 ids");
            let (got, ignored) = run_weighted(&gpu, &ids_u32, &wide, bins);
            assert_eq!(ignored, cpu::histogram_count(&ids, bins).1, "f64 ignored");
            check_float_bins(&got, &ids_u32, &wide, f64::EPSILON / 2.0, "f64 weights, u32 ids");
            if bins <= 256 {
                let ids_u8: Vec<u8> = ids.iter().map(|&b| b.min(255) as u8).collect();
                let ids_u8_u32: Vec<u32> = ids_u8.iter().map(|&b| b as u32).collect();
                let (got, _) = run_weighted(&gpu, &ids_u8, &weights, bins);
                let got: Vec<f64> = got.iter().map(|&x| x as f64).collect();
                check_float_bins(&got, &ids_u8_u32, &wide, f32::EPSILON as f64 / 2.0, "f32 weights, u8 ids");
            }
        }
    }
}

/// Fixed-point gradient pairs of up to 2^40 in magnitude, both signs (2^26 rows in one bin stay
/// below 2^63).
fn fixed_pairs(n: usize, seed: u64) -> Vec<GradientPair<i64>> {
    random_vec(n, seed, |r| GradientPair::new(r.gen_range(-(1i64 << 40)..1 << 40), r.gen_range(0..1i64 << 40)))
}

#[test]
fn fixed_point_weighted_histograms_are_exact_and_repeat() {
    let gpu = gpu();
    for (i, n) in sizes(&gpu).into_iter().enumerate() {
        for (j, bins) in BIN_COUNTS.into_iter().enumerate() {
            if n >= 1 << 20 && bins != 256 {
                continue;
            }
            let seed = 2000 + 10 * i as u64 + j as u64;
            let pairs = fixed_pairs(n, seed);
            // Skewed: 90 % in bin 0, whose sum carries between the 32-bit halves many times.
            let ids: Vec<u32> =
                random_vec(n, seed + 1, |r| if r.gen_bool(0.9) { 0 } else { r.gen_range(0..bins as u32 + 2) });
            let want = cpu::histogram_weighted(&ids, &pairs, bins);
            let first = run_weighted(&gpu, &ids, &pairs, bins);
            assert!(first == want, "u32 ids: n = {n}, {bins} bins");
            assert!(run_weighted(&gpu, &ids, &pairs, bins) == first, "a second run differs: n = {n}, {bins} bins");
            if bins <= 256 {
                let ids_u8: Vec<u8> = ids.iter().map(|&b| b.min(255) as u8).collect();
                assert!(run_weighted(&gpu, &ids_u8, &pairs, bins) == cpu::histogram_weighted(&ids_u8, &pairs, bins));
            } else {
                let ids_u16: Vec<u16> = ids.iter().map(|&b| b as u16).collect();
                assert!(run_weighted(&gpu, &ids_u16, &pairs, bins) == cpu::histogram_weighted(&ids_u16, &pairs, bins));
            }
        }
    }
}

fn run_even<F: EvenSample>(gpu: &Gpu, samples: &[F], lower: F, upper: F, bins: usize) -> (Vec<u64>, u64) {
    let input = gpu.upload(samples).unwrap();
    let mut histogram = gpu.alloc_zeroed::<u64>(bins).unwrap();
    let mut ignored = gpu.alloc_zeroed::<u64>(1).unwrap();
    DeviceHistogram::histogram_even(gpu, &input, lower, upper, &mut histogram, &mut ignored).unwrap();
    (histogram.to_vec(gpu).unwrap(), ignored.to_vec(gpu).unwrap()[0])
}

#[test]
fn even_binning_ignores_and_counts_values_outside_the_range_and_nan() {
    let gpu = gpu();
    for (i, n) in sizes(&gpu).into_iter().enumerate() {
        for (j, bins) in BIN_COUNTS.into_iter().enumerate() {
            if n >= 1 << 20 && bins != 256 {
                continue;
            }
            let seed = 3000 + 10 * i as u64 + j as u64;
            let (lower, upper) = (-1.5f64, 2.25f64);
            // Mostly inside, some outside, some NaN and infinities, and the edges themselves.
            let specials = [lower, upper, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, upper - 1e-15, -0.0];
            let samples: Vec<f64> = random_vec(n, seed, |r| {
                if r.gen_bool(0.05) {
                    specials[r.gen_range(0..specials.len())]
                } else {
                    r.gen_range(-2.0..2.5)
                }
            });
            let singles: Vec<f32> = samples.iter().map(|&x| x as f32).collect();
            let got = run_even(&gpu, &samples, lower, upper, bins);
            assert!(got == cpu::histogram_even(&samples, lower, upper, bins), "f64: n = {n}, {bins} bins");
            let got = run_even(&gpu, &singles, lower as f32, upper as f32, bins);
            assert!(
                got == cpu::histogram_even(&singles, lower as f32, upper as f32, bins),
                "f32: n = {n}, {bins} bins"
            );
        }
    }
    // By hand: [0, 1) in 4 bins.
    let samples = [0.0f32, 0.24, 0.25, 0.99, 1.0, -0.01, f32::NAN, 0.5, f32::INFINITY];
    assert_eq!(run_even(&gpu, &samples, 0.0, 1.0, 4), (vec![2, 1, 1, 1], 4));
}

#[test]
fn histogram_inputs_that_cannot_be_right_are_errors() {
    let gpu = gpu();
    let samples = gpu.upload(&[1u8, 2, 3]).unwrap();
    let floats = gpu.upload(&[0.5f32, 1.5]).unwrap();
    let mut histogram = gpu.alloc_zeroed::<u64>(4).unwrap();
    let mut empty = gpu.alloc_zeroed::<u64>(0).unwrap();
    let mut ignored = gpu.alloc_zeroed::<u64>(1).unwrap();
    let invalid = |result: primitives::Result<()>, what: &str| match result {
        Err(Error::InvalidArgument { name, .. }) => assert_eq!(name, what),
        other => panic!("expected an invalid `{what}`, got {other:?}"),
    };
    invalid(DeviceHistogram::count(&gpu, &samples, &mut empty, &mut ignored), "histogram");
    let mut no_ignored = gpu.alloc_zeroed::<u64>(0).unwrap();
    invalid(DeviceHistogram::count(&gpu, &samples, &mut histogram, &mut no_ignored), "ignored");
    let short_weights = gpu.upload(&[1.0f32, 2.0]).unwrap();
    let mut float_histogram = gpu.alloc_zeroed::<f32>(4).unwrap();
    invalid(DeviceHistogram::weighted(&gpu, &samples, &short_weights, &mut float_histogram, &mut ignored), "weights");
    for (lower, upper) in [(1.0, 1.0), (2.0, 1.0), (f32::NAN, 1.0), (0.0, f32::INFINITY), (-f32::MAX, f32::MAX)] {
        invalid(DeviceHistogram::histogram_even(&gpu, &floats, lower, upper, &mut histogram, &mut ignored), "upper");
    }
    invalid(DeviceHistogram::histogram_even(&gpu, &floats, 0.0, 1.0, &mut empty, &mut ignored), "histogram");
    // Nothing was written by the rejected calls.
    assert_eq!(histogram.to_vec(&gpu).unwrap(), [0; 4]);
    assert_eq!(ignored.to_vec(&gpu).unwrap(), [0]);
}

// ---- multi-feature ------------------------------------------------------------------------------

/// One multi-feature case: a matrix, its gradients, a row list and node offsets.
struct MultiCase<B, G> {
    bins: Vec<B>,
    features: usize,
    bins_per_feature: usize,
    gradients: Vec<G>,
    rows: Vec<u32>,
    node_offsets: Vec<u32>,
}

impl<B: BinIndex, G: MultiFeatureGradient> MultiCase<B, G>
where
    primitives::ops::Sum: primitives::ops::AssociativeOp<G>,
{
    fn want(&self) -> Vec<G> {
        let nodes = self.node_offsets.len() - 1;
        let mut histogram = vec![G::zeroed(); nodes * self.features * self.bins_per_feature];
        cpu::multi_feature_histogram(
            &self.bins,
            self.features,
            self.bins_per_feature,
            &self.gradients,
            &self.rows,
            &self.node_offsets,
            &mut histogram,
        );
        histogram
    }

    /// The same matrix, rows and nodes with other gradients.
    fn with_gradients<H>(&self, gradients: impl Iterator<Item = H>) -> MultiCase<B, H> {
        MultiCase {
            bins: self.bins.clone(),
            features: self.features,
            bins_per_feature: self.bins_per_feature,
            gradients: gradients.collect(),
            rows: self.rows.clone(),
            node_offsets: self.node_offsets.clone(),
        }
    }

    fn run(&self, gpu: &Gpu) -> Vec<G> {
        let nodes = self.node_offsets.len() - 1;
        let mut histogram = DeviceBuffer::<G>::zeroed(gpu, nodes * self.features * self.bins_per_feature).unwrap();
        self.run_into(gpu, &mut histogram).unwrap();
        histogram.to_vec(gpu).unwrap()
    }

    fn run_into(&self, gpu: &Gpu, histogram: &mut DeviceBuffer<G>) -> primitives::Result<()> {
        let bins = gpu.upload(&self.bins).unwrap();
        let matrix =
            MultiFeatureMatrix { bins: &bins, features: self.features, bins_per_feature: self.bins_per_feature };
        let gradients = gpu.upload(&self.gradients).unwrap();
        let rows = gpu.upload(&self.rows).unwrap();
        DeviceHistogram::multi_feature(gpu, matrix, &gradients, &rows, &self.node_offsets, histogram)
    }
}

/// A random case: `matrix_rows` rows, bin ids up to `bins_per_feature + 1` (a few missing), a row
/// list of `listed` random rows (rows may repeat), cut into `nodes` nodes (some empty).
fn multi_case<B: BinIndex + TryFrom<u32>, G: Element>(
    matrix_rows: usize,
    features: usize,
    bins_per_feature: usize,
    listed: usize,
    nodes: usize,
    seed: u64,
    gradient: impl FnMut(&mut rand::rngs::SmallRng) -> G,
) -> MultiCase<B, G> {
    let limit = (bins_per_feature + bins_per_feature / 16 + 1) as u32;
    let bins = uniform_bins(matrix_rows * features, limit, seed);
    let gradients = random_vec(matrix_rows, seed + 1, gradient);
    let rows = random_vec(listed, seed + 2, |r| r.gen_range(0..matrix_rows as u32));
    let mut node_offsets = random_vec(nodes - 1, seed + 3, |r| r.gen_range(0..=listed as u32));
    node_offsets.extend([0, listed as u32]);
    node_offsets.sort();
    MultiCase { bins, features, bins_per_feature, gradients, rows, node_offsets }
}

fn fixed_gradient(r: &mut rand::rngs::SmallRng) -> GradientPair<i64> {
    GradientPair::new(r.gen_range(-(1i64 << 40)..1 << 40), r.gen_range(0..1i64 << 40))
}

#[test]
fn multi_feature_fixed_point_is_exact_and_repeats_bit_for_bit() {
    let gpu = gpu();
    let rows = if gpu.is_emulated() { 20_000 } else { 1_000_000 };
    // (features, bins per feature, nodes): one node and several, small and large bin counts; 28 x
    // 1024 bins take several feature groups, 1 x 2 the warp-column layout.
    let shapes = [(28, 256, 1), (28, 256, 8), (5, 1, 3), (1, 2, 1), (3, 255, 4), (7, 1024, 2), (28, 1024, 3)];
    for (k, (features, bins_per_feature, nodes)) in shapes.into_iter().enumerate() {
        let seed = 4000 + 10 * k as u64;
        let case = multi_case::<u8, _>(rows, features, bins_per_feature.min(256), rows, nodes, seed, fixed_gradient);
        let first = case.run(&gpu);
        assert!(first == case.want(), "u8, {features} x {bins_per_feature}, {nodes} nodes");
        assert!(case.run(&gpu) == first, "a second run differs: {features} x {bins_per_feature}, {nodes} nodes");
        let case =
            multi_case::<u16, _>(rows / 2, features, bins_per_feature, rows / 3, nodes, seed + 5, fixed_gradient);
        assert!(case.run(&gpu) == case.want(), "u16, {features} x {bins_per_feature}, {nodes} nodes");
    }
    // u32 ids, many nodes most of them empty, a short row list.
    let case = multi_case::<u32, _>(3000, 4, 300, 500, 64, 4100, fixed_gradient);
    assert!(case.run(&gpu) == case.want(), "u32, 64 nodes");
    // Every node empty.
    let mut case = multi_case::<u8, _>(100, 3, 16, 0, 5, 4200, fixed_gradient);
    assert!(case.run(&gpu).iter().all(|g| *g == GradientPair::new(0, 0)));
    // A node list that starts past 0 (rows before it belong to no node).
    case = multi_case::<u8, _>(1000, 3, 16, 900, 3, 4300, fixed_gradient);
    case.node_offsets[0] = 100;
    assert!(case.run(&gpu) == case.want(), "offsets from 100");
}

/// Bit-packed rows (`PackedBinMatrix`) give the dense ids' histogram: ids of 1 to 19 bits, ids that
/// straddle words, the missing id, rows padded past their words, bins too many for shared memory,
/// f32 pairs too; bad shapes are errors naming the argument.
#[test]
fn multi_feature_of_packed_rows_is_the_dense_histogram() {
    let gpu = gpu();
    let rows = if gpu.is_emulated() { 6000 } else { 400_000 };
    // (features, bins per feature, bits, words of padding a row)
    let shapes = [
        (28, 256, 9, 0),
        (28, 255, 8, 0),
        (3, 1, 1, 0),
        (5, 20, 5, 1),
        (13, 1000, 11, 0),
        (7, 4000, 12, 2),
        (2, 3000, 16, 0),
        // Bins past a block's shared memory (added straight to the device histogram), ids wider
        // than 16 bits (read one at a time).
        (4, 20_000, 15, 0),
        (3, 70_000, 17, 1),
        (2, 300_000, 19, 0),
    ];
    for (k, (features, bins_per_feature, bits, padding)) in shapes.into_iter().enumerate() {
        let mut case =
            multi_case::<u32, _>(rows, features, bins_per_feature, rows / 2, 3, 7000 + k as u64, fixed_gradient);
        // Missing ids become the all-ones id of the width (the widths leave it free).
        let missing = (1u32 << bits) - 1;
        assert!(missing as usize >= bins_per_feature);
        case.bins.iter_mut().for_each(|id| *id = (*id).min(missing));
        let packed = pack_bin_rows(&case.bins, features, bits);
        let row_words = packed.len() / rows;
        let padded: Vec<u32> = packed
            .chunks_exact(row_words)
            .flat_map(|r| r.iter().copied().chain(std::iter::repeat_n(!0, padding)))
            .collect();
        let words = gpu.upload(&padded).unwrap();
        let matrix =
            PackedBinMatrix { words: &words, row_words: row_words + padding, bits, features, bins_per_feature };
        let (gradients, list) = (gpu.upload(&case.gradients).unwrap(), gpu.upload(&case.rows).unwrap());
        let mut histogram = DeviceBuffer::zeroed(&gpu, 3 * features * bins_per_feature).unwrap();
        DeviceHistogram::multi_feature(&gpu, matrix, &gradients, &list, &case.node_offsets, &mut histogram).unwrap();
        assert!(histogram.to_vec(&gpu).unwrap() == case.want(), "{features} x {bins_per_feature}, {bits} bits");
        if k == 0 {
            let floats = case.with_gradients(case.gradients.iter().map(|g| GradientPair::new(g.grad as f32, 1.0)));
            let gradients = gpu.upload(&floats.gradients).unwrap();
            let mut histogram = DeviceBuffer::<GradientPair<f32>>::zeroed(&gpu, 3 * features * 256).unwrap();
            DeviceHistogram::multi_feature(&gpu, matrix, &gradients, &list, &case.node_offsets, &mut histogram)
                .unwrap();
            let (got, want) = (histogram.to_vec(&gpu).unwrap(), floats.want());
            // Hessians are counts: exact in f32.
            assert!(got.iter().zip(&want).all(|(a, b)| a.hess == b.hess), "f32 pair counts");
        }
        let error = |m: PackedBinMatrix<'_>| {
            let mut h = DeviceBuffer::zeroed(&gpu, 3 * features * bins_per_feature).unwrap();
            match DeviceHistogram::multi_feature(&gpu, m, &gradients, &list, &case.node_offsets, &mut h) {
                Err(Error::InvalidArgument { name, .. }) => name,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(error(PackedBinMatrix { bits: 25, ..matrix }), "bits");
        assert_eq!(error(PackedBinMatrix { row_words: row_words - 1, ..matrix }), "row_words");
    }
}

#[test]
fn multi_feature_accumulates_into_the_histogram() {
    let gpu = gpu();
    let case = multi_case::<u8, _>(5000, 6, 32, 4000, 3, 4400, fixed_gradient);
    let mut histogram = DeviceBuffer::<GradientPair<i64>>::zeroed(&gpu, 3 * 6 * 32).unwrap();
    case.run_into(&gpu, &mut histogram).unwrap();
    case.run_into(&gpu, &mut histogram).unwrap();
    let doubled: Vec<_> = case.want().iter().map(|g| GradientPair::new(2 * g.grad, 2 * g.hess)).collect();
    assert_eq!(histogram.to_vec(&gpu).unwrap(), doubled);
}

#[test]
fn multi_feature_float_pairs_within_the_rounding_bound() {
    let gpu = gpu();
    let rows = if gpu.is_emulated() { 10_000 } else { 1_000_000 };
    // Values representable in f32, so that the f32 and f64 runs sum the same numbers.
    let case = multi_case::<u8, GradientPair<f64>>(rows, 9, 64, rows, 3, 4500, |r| {
        GradientPair::new(r.gen_range(-1.0f32..1.0) as f64, r.gen_range(0.0f32..0.25) as f64)
    });
    // The oracle sums in f64 in row order: within (n - 1) u64 sum |g| of the exact sums itself.
    let reference = case.want();
    let absolute = case.with_gradients(case.gradients.iter().map(|g| GradientPair::new(g.grad.abs(), g.hess))).want();
    let counts = case.with_gradients(case.gradients.iter().map(|_| GradientPair::new(1.0f64, 1.0))).want();
    let wide = case.run(&gpu);
    let single =
        case.with_gradients(case.gradients.iter().map(|g| GradientPair::new(g.grad as f32, g.hess as f32))).run(&gpu);
    let (u64_, u32_) = (f64::EPSILON / 2.0, f32::EPSILON as f64 / 2.0);
    for i in 0..reference.len() {
        let (want, magnitude, n) = (reference[i], absolute[i], (counts[i].grad - 1.0).max(0.0));
        let within = |got: GradientPair<f64>, u: f64| {
            let bound = |sum: f64| (n * u + 2.0 * n * u64_) * sum * 1.01;
            (got.grad - want.grad).abs() <= bound(magnitude.grad)
                && (got.hess - want.hess).abs() <= bound(magnitude.hess)
        };
        assert!(within(wide[i], u64_), "f64 slot {i}: {:?} vs {want:?}", wide[i]);
        let narrow = GradientPair::new(single[i].grad as f64, single[i].hess as f64);
        assert!(within(narrow, u32_), "f32 slot {i}: {narrow:?} vs {want:?}");
    }
}

#[test]
fn multi_feature_inputs_that_cannot_be_right_are_errors() {
    let gpu = gpu();
    let case = multi_case::<u8, _>(100, 4, 16, 80, 2, 4600, fixed_gradient);
    let bins = gpu.upload(&case.bins).unwrap();
    let gradients = gpu.upload(&case.gradients).unwrap();
    let rows = gpu.upload(&case.rows).unwrap();
    let mut histogram = DeviceBuffer::<GradientPair<i64>>::zeroed(&gpu, 2 * 4 * 16).unwrap();
    let matrix = MultiFeatureMatrix { bins: &bins, features: 4, bins_per_feature: 16 };
    let invalid = |result: primitives::Result<()>, what: &str| match result {
        Err(Error::InvalidArgument { name, .. }) => assert_eq!(name, what),
        other => panic!("expected an invalid `{what}`, got {other:?}"),
    };
    let run = |matrix, gradients: &DeviceBuffer<_>, rows: &DeviceBuffer<u32>, offsets: &[u32], histogram: &mut _| {
        DeviceHistogram::multi_feature(&gpu, matrix, gradients, rows, offsets, histogram)
    };
    invalid(run(matrix, &gradients, &rows, &[0, 50, 40], &mut histogram), "node_offsets");
    invalid(run(matrix, &gradients, &rows, &[0, 40, 81], &mut histogram), "node_offsets");
    invalid(run(matrix, &gradients, &rows, &[0], &mut histogram), "node_offsets");
    invalid(run(matrix, &gradients, &rows, &[0, 10, 20, 30], &mut histogram), "histogram");
    invalid(run(MultiFeatureMatrix { features: 3, ..matrix }, &gradients, &rows, &[0, 40, 80], &mut histogram), "bins");
    invalid(
        run(MultiFeatureMatrix { features: 0, ..matrix }, &gradients, &rows, &[0, 40, 80], &mut histogram),
        "features",
    );
    invalid(
        run(MultiFeatureMatrix { bins_per_feature: 0, ..matrix }, &gradients, &rows, &[0, 40, 80], &mut histogram),
        "bins_per_feature",
    );
    let short = gpu.upload(&case.gradients[..99]).unwrap();
    invalid(run(matrix, &short, &rows, &[0, 40, 80], &mut histogram), "gradients");
    // Nothing was added by the rejected calls.
    assert!(histogram.to_vec(&gpu).unwrap().iter().all(|g| *g == GradientPair::new(0, 0)));
    // A row index past the matrix: an error after the launch, no out-of-bounds access.
    let mut bad_rows = case.rows.clone();
    bad_rows[57] = 100;
    bad_rows[70] = u32::MAX;
    let bad_rows = gpu.upload(&bad_rows).unwrap();
    match run(matrix, &gradients, &bad_rows, &[0, 40, 80], &mut histogram) {
        Err(Error::InvalidArgument { name: "rows", reason }) => assert!(reason.contains("rows[57]"), "{reason}"),
        other => panic!("expected an invalid `rows`, got {other:?}"),
    }
    // Rows outside the nodes are not read: the same bad list is fine when the nodes end before them.
    let mut clean = DeviceBuffer::<GradientPair<i64>>::zeroed(&gpu, 2 * 4 * 16).unwrap();
    run(matrix, &gradients, &bad_rows, &[0, 40, 50], &mut clean).unwrap();
}

#[test]
fn multi_feature_over_ranges_apart_and_out_of_order_is_the_offsets_histogram_per_node() {
    let gpu = gpu();
    let case = multi_case::<u16, _>(6000, 7, 64, 5000, 1, 4700, fixed_gradient);
    // Nodes: rows 3000..4500, nothing, 10..900, 900..2000 (adjacent to the one before), 4999..5000.
    let ranges = [(3000u32, 4500u32), (7, 7), (10, 900), (900, 2000), (4999, 5000)];
    let bins = gpu.upload(&case.bins).unwrap();
    let matrix = MultiFeatureMatrix { bins: &bins, features: 7, bins_per_feature: 64 };
    let gradients = gpu.upload(&case.gradients).unwrap();
    let rows = gpu.upload(&case.rows).unwrap();
    let slot = 7 * 64;
    let mut histogram = DeviceBuffer::<GradientPair<i64>>::zeroed(&gpu, ranges.len() * slot).unwrap();
    let mut bad_row = gpu.upload(&[u32::MAX]).unwrap();
    DeviceHistogram::multi_feature_ranges(&gpu, matrix, &gradients, &rows, &ranges, &mut histogram, &mut bad_row)
        .unwrap();
    let got = histogram.to_vec(&gpu).unwrap();
    for (n, &(begin, end)) in ranges.iter().enumerate() {
        let single =
            MultiCase { node_offsets: vec![begin, end], ..case.with_gradients(case.gradients.iter().copied()) };
        assert!(got[n * slot..(n + 1) * slot] == single.want()[..], "node {n}: rows {begin}..{end}");
    }
    assert_eq!(bad_row.to_vec(&gpu).unwrap(), [u32::MAX]);
    // A bad row index is skipped and its position reported, not waited for.
    let mut bad_rows = case.rows.clone();
    bad_rows[950] = 6000;
    let bad_rows = gpu.upload(&bad_rows).unwrap();
    DeviceHistogram::multi_feature_ranges(&gpu, matrix, &gradients, &bad_rows, &ranges, &mut histogram, &mut bad_row)
        .unwrap();
    assert_eq!(bad_row.to_vec(&gpu).unwrap(), [950]);
    let invalid = |ranges: &[(u32, u32)], histogram: &mut DeviceBuffer<_>, bad_row: &mut DeviceBuffer<u32>| {
        match DeviceHistogram::multi_feature_ranges(&gpu, matrix, &gradients, &rows, ranges, histogram, bad_row) {
            Err(Error::InvalidArgument { name, .. }) => name,
            other => panic!("expected an invalid argument, got {other:?}"),
        }
    };
    assert_eq!(invalid(&[(10, 5)], &mut histogram, &mut bad_row), "ranges");
    assert_eq!(invalid(&[(10, 5001)], &mut histogram, &mut bad_row), "ranges");
    assert_eq!(invalid(&[], &mut histogram, &mut bad_row), "ranges");
    assert_eq!(invalid(&[(0, 1); 6], &mut histogram, &mut bad_row), "histogram");
    assert_eq!(invalid(&[(0, 1)], &mut histogram, &mut gpu.alloc_zeroed(0).unwrap()), "bad_row");
}

#[test]
fn multi_feature_over_device_ranges_is_the_ranges_histogram_within_the_bounds() {
    let gpu = gpu();
    let case = multi_case::<u16, _>(6000, 7, 64, 5000, 1, 4700, fixed_gradient);
    let bins = gpu.upload(&case.bins).unwrap();
    let matrix = MultiFeatureMatrix { bins: &bins, features: 7, bins_per_feature: 64 };
    let gradients = gpu.upload(&case.gradients).unwrap();
    let rows = gpu.upload(&case.rows).unwrap();
    let slot = 7 * 64;
    // Host bounds and device ranges: inside, overlapping the bound's start and its end, empty, and
    // disjoint from the bound (nothing); what counts is their intersection.
    let bounds = [(0u32, 2500u32), (1000, 3000), (3000, 4000), (100, 200), (4000, 5000)];
    let device = [(10u32, 2400u32), (500, 1500), (3500, 4200), (150, 150), (0, 4000)];
    let want = [(10u32, 2400u32), (1000, 1500), (3500, 4000), (150, 150), (4000, 4000)];
    let flat: Vec<u32> = device.iter().flat_map(|&(b, e)| [b, e]).collect();
    let device_ranges = gpu.upload(&flat).unwrap();
    let mut histogram = DeviceBuffer::<GradientPair<i64>>::zeroed(&gpu, bounds.len() * slot).unwrap();
    let mut bad_row = gpu.upload(&[u32::MAX]).unwrap();
    DeviceHistogram::multi_feature_device_ranges(
        &gpu,
        matrix,
        &gradients,
        &rows,
        &bounds,
        &device_ranges,
        &mut histogram,
        &mut bad_row,
    )
    .unwrap();
    let got = histogram.to_vec(&gpu).unwrap();
    for (n, &(begin, end)) in want.iter().enumerate() {
        let single =
            MultiCase { node_offsets: vec![begin, end], ..case.with_gradients(case.gradients.iter().copied()) };
        assert!(got[n * slot..(n + 1) * slot] == single.want()[..], "node {n}: rows {begin}..{end}");
    }
    assert_eq!(bad_row.to_vec(&gpu).unwrap(), [u32::MAX]);
    let short = gpu.upload(&flat[..8]).unwrap();
    let result = DeviceHistogram::multi_feature_device_ranges(
        &gpu,
        matrix,
        &gradients,
        &rows,
        &bounds,
        &short,
        &mut histogram,
        &mut bad_row,
    );
    assert!(matches!(result, Err(Error::InvalidArgument { name: "device_ranges", .. })), "{result:?}");
}

/// The global layout (no padding; features of 0 to 120,000 bins, the largest past shared memory,
/// added straight to the device histogram; groups of several small features) gives each node's
/// bins at its feature's offset: dense `u32` ids and packed rows, host and device ranges; bad
/// offsets are errors naming them.
#[test]
fn multi_feature_in_the_global_layout_is_the_histogram_at_the_features_offsets() {
    let gpu = gpu();
    let matrix_rows = if gpu.is_emulated() { 4000 } else { 300_000 };
    let counts = [256u32, 3, 40, 120_000, 0, 256, 1000, 7, 256, 256];
    let features = counts.len();
    let mut offsets = vec![0u32];
    counts.iter().for_each(|&c| offsets.push(offsets.last().unwrap() + c));
    let total = *offsets.last().unwrap() as usize;
    let bits = 17;
    let missing = (1u32 << bits) - 1;
    let ids: Vec<u32> = random_vec(matrix_rows * features, 91, |r| r.gen::<u32>())
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let count = counts[i % features];
            if x % 13 == 0 || count == 0 {
                missing
            } else {
                x % count
            }
        })
        .collect();
    let gradients_host = random_vec(matrix_rows, 92, fixed_gradient);
    let rows_host = random_vec(matrix_rows, 93, |r| r.gen_range(0..matrix_rows as u32));
    let ranges = [(0u32, 1500u32), (1500, 1500), (2000, 3900), (100, 900)];
    let mut want = vec![GradientPair::<i64>::new(0, 0); ranges.len() * total];
    for (n, &(begin, end)) in ranges.iter().enumerate() {
        for &row in &rows_host[begin as usize..end as usize] {
            for f in 0..features {
                let id = ids[row as usize * features + f];
                if id < counts[f] {
                    let slot = &mut want[n * total + (offsets[f] + id) as usize];
                    *slot = GradientPair::new(
                        slot.grad + gradients_host[row as usize].grad,
                        slot.hess + gradients_host[row as usize].hess,
                    );
                }
            }
        }
    }
    let (gradients, rows) = (gpu.upload(&gradients_host).unwrap(), gpu.upload(&rows_host).unwrap());
    let dense = gpu.upload(&ids).unwrap();
    let dense = MultiFeatureMatrix { bins: &dense, features, bins_per_feature: missing as usize };
    let words = gpu.upload(&pack_bin_rows(&ids, features, bits)).unwrap();
    let row_words = words.len() / matrix_rows;
    let packed = PackedBinMatrix { words: &words, row_words, bits, features, bins_per_feature: missing as usize };
    let mut bad_row = gpu.upload(&[u32::MAX]).unwrap();
    let mut histogram = DeviceBuffer::<GradientPair<i64>>::zeroed(&gpu, ranges.len() * total).unwrap();
    DeviceHistogram::multi_feature_global_ranges(
        &gpu,
        dense,
        &gradients,
        &rows,
        &ranges,
        &offsets,
        &mut histogram,
        &mut bad_row,
    )
    .unwrap();
    assert!(histogram.to_vec(&gpu).unwrap() == want, "dense ids");
    // Device ranges equal to the bounds: the same sums, from packed rows.
    let flat: Vec<u32> = ranges.iter().flat_map(|&(b, e)| [b, e]).collect();
    let device_ranges = gpu.upload(&flat).unwrap();
    let mut histogram = DeviceBuffer::<GradientPair<i64>>::zeroed(&gpu, ranges.len() * total).unwrap();
    DeviceHistogram::multi_feature_global_device_ranges(
        &gpu,
        packed,
        &gradients,
        &rows,
        &ranges,
        &device_ranges,
        &offsets,
        &mut histogram,
        &mut bad_row,
    )
    .unwrap();
    assert!(histogram.to_vec(&gpu).unwrap() == want, "packed rows");
    assert_eq!(bad_row.to_vec(&gpu).unwrap(), [u32::MAX]);
    for bad in [&offsets[..5], &[0, 5, 3, 9, 9, 9, 9, 9, 9, 9, 9][..]] {
        let result = DeviceHistogram::multi_feature_global_ranges(
            &gpu,
            dense,
            &gradients,
            &rows,
            &ranges,
            bad,
            &mut histogram,
            &mut bad_row,
        );
        assert!(matches!(result, Err(Error::InvalidArgument { name: "feature_offsets", .. })), "{result:?}");
    }
}

#[test]
fn device_to_device_copies_overwrite_the_front_of_the_destination() {
    let gpu = gpu();
    let source = gpu.upload(&[1u32, 2, 3]).unwrap();
    let mut destination = gpu.upload(&[9u32, 9, 9, 9]).unwrap();
    destination.copy_from_device(&gpu, &source).unwrap();
    assert_eq!(destination.to_vec(&gpu).unwrap(), [1, 2, 3, 9]);
    destination.copy_from_device(&gpu, &gpu.alloc_zeroed(0).unwrap()).unwrap();
    assert_eq!(destination.to_vec(&gpu).unwrap(), [1, 2, 3, 9]);
    let mut short = gpu.alloc_zeroed::<u32>(2).unwrap();
    assert!(matches!(short.copy_from_device(&gpu, &source), Err(Error::InvalidArgument { name: "start", .. })));
}

#[test]
fn range_reads_bring_back_only_their_range() {
    let gpu = gpu();
    let buffer = gpu.upload(&[1u64, 2, 3, 4, 5]).unwrap();
    assert_eq!(buffer.range_to_vec(&gpu, 1..4).unwrap(), [2, 3, 4]);
    assert_eq!(buffer.range_to_vec(&gpu, 5..5).unwrap(), [] as [u64; 0]);
    assert!(matches!(buffer.range_to_vec(&gpu, 3..6), Err(Error::InvalidArgument { name: "range", .. })));
}

#[test]
fn device_to_device_range_copies_touch_only_their_range() {
    let gpu = gpu();
    let source = gpu.upload(&[1u32, 2, 3, 4, 5]).unwrap();
    let mut destination = gpu.upload(&[9u32; 6]).unwrap();
    destination.copy_range_from_device(&gpu, &source, 1..4, 2).unwrap();
    assert_eq!(destination.to_vec(&gpu).unwrap(), [9, 9, 2, 3, 4, 9]);
    destination.copy_range_from_device(&gpu, &source, 4..4, 6).unwrap();
    assert_eq!(destination.to_vec(&gpu).unwrap(), [9, 9, 2, 3, 4, 9]);
    let name = |result: primitives::Result<()>| match result {
        Err(Error::InvalidArgument { name, .. }) => name,
        other => panic!("expected an invalid argument, got {other:?}"),
    };
    assert_eq!(name(destination.copy_range_from_device(&gpu, &source, 3..6, 0)), "range");
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = 3..2;
    assert_eq!(name(destination.copy_range_from_device(&gpu, &source, backwards, 0)), "range");
    assert_eq!(name(destination.copy_range_from_device(&gpu, &source, 0..3, 4)), "start");
}

#[test]
fn memory_usage_reports_the_pools_peak_on_a_cuda_device() {
    let gpu = gpu();
    gpu.reset_peak_memory().unwrap();
    let buffer = gpu.alloc_zeroed::<u8>(64 << 20).unwrap();
    match gpu.memory_usage().unwrap() {
        None => assert!(gpu.is_emulated(), "a CUDA device with a memory pool reports its usage"),
        Some(usage) => {
            assert!(usage.peak_bytes >= 64 << 20, "{usage:?}");
            assert!(usage.free_bytes > 0 && usage.free_bytes < usage.total_bytes, "{usage:?}");
        }
    }
    drop(buffer);
}
