//! Histogram oracles, the shapes of `DeviceHistogram`: counts and weighted sums of pre-binned
//! samples, equal-width binning of floats, and the multi-feature gradient histogram keyed by (node,
//! feature, bin). Samples outside the bins are ignored and counted, as on the device.

use crate::ops::{AssociativeOp, Element, Sum};

/// Counts of pre-binned samples in `bins` bins, and the number of samples at or above `bins`.
pub fn histogram_count<B: Copy + Into<u32>>(samples: &[B], bins: usize) -> (Vec<u64>, u64) {
    let mut histogram = vec![0u64; bins];
    let mut ignored = 0;
    for &sample in samples {
        match histogram.get_mut(sample.into() as usize) {
            Some(count) => *count += 1,
            None => ignored += 1,
        }
    }
    (histogram, ignored)
}

/// Sums of `weights[i]` by bin `samples[i]` (in sample order), and the number of samples at or above
/// `bins`.
pub fn histogram_weighted<B: Copy + Into<u32>, W: Element>(samples: &[B], weights: &[W], bins: usize) -> (Vec<W>, u64)
where
    Sum: AssociativeOp<W>,
{
    assert_eq!(samples.len(), weights.len(), "one weight per sample");
    let mut histogram = vec![<Sum as AssociativeOp<W>>::identity(); bins];
    let mut ignored = 0;
    for (&sample, &weight) in samples.iter().zip(weights) {
        match histogram.get_mut(sample.into() as usize) {
            Some(sum) => *sum = Sum::combine(*sum, weight),
            None => ignored += 1,
        }
    }
    (histogram, ignored)
}

/// A float that can be binned into equal-width bins (`f32`, `f64`).
pub trait EvenBinning: Copy {
    /// The bin of `self` among `bins` equal-width bins over `[lower, upper)`:
    /// `min(floor((x - lower) * (bins / (upper - lower))), bins - 1)` in the type's precision, those
    /// operations in that order (the device's formula, so that both agree bit for bit); `None` for
    /// `x` outside `[lower, upper)` or NaN.
    fn even_bin(self, lower: Self, upper: Self, bins: usize) -> Option<usize>;
}

macro_rules! even_binning {
    ($($t:ty),*) => {$(
        impl EvenBinning for $t {
            fn even_bin(self, lower: Self, upper: Self, bins: usize) -> Option<usize> {
                if !(self >= lower && self < upper) {
                    return None;
                }
                let scale = bins as u32 as $t / (upper - lower);
                Some(((((self - lower) * scale) as u32) as usize).min(bins - 1))
            }
        }
    )*};
}
even_binning!(f32, f64);

/// CUB's `HistogramEven`: counts in `bins` equal-width bins over `[lower, upper)` (see
/// [`EvenBinning::even_bin`]), and the number of samples outside the range or NaN.
pub fn histogram_even<F: EvenBinning>(samples: &[F], lower: F, upper: F, bins: usize) -> (Vec<u64>, u64) {
    let mut histogram = vec![0u64; bins];
    let mut ignored = 0;
    for &x in samples {
        match x.even_bin(lower, upper, bins) {
            Some(bin) => histogram[bin] += 1,
            None => ignored += 1,
        }
    }
    (histogram, ignored)
}

/// The multi-feature gradient histogram: for every node `n`, row `r = rows[p]` with `p` in
/// `node_offsets[n]..node_offsets[n + 1]`, and feature `f` whose bin `b = bins[r * features + f]`
/// is below `bins_per_feature` (others are missing, skipped), adds `gradients[r]` to
/// `histogram[(n * features + f) * bins_per_feature + b]` (accumulates; nothing is cleared).
///
/// Panics on a row index outside the matrix or offsets out of order (the device API reports those
/// as errors).
pub fn multi_feature_histogram<B: Copy + Into<u32>, G: Element>(
    bins: &[B],
    features: usize,
    bins_per_feature: usize,
    gradients: &[G],
    rows: &[u32],
    node_offsets: &[u32],
    histogram: &mut [G],
) where
    Sum: AssociativeOp<G>,
{
    for (node, range) in node_offsets.windows(2).enumerate() {
        for &row in &rows[range[0] as usize..range[1] as usize] {
            let row = row as usize;
            let gradient = gradients[row];
            for (feature, &bin) in bins[row * features..(row + 1) * features].iter().enumerate() {
                let bin = bin.into() as usize;
                if bin < bins_per_feature {
                    let slot = &mut histogram[(node * features + feature) * bins_per_feature + bin];
                    *slot = Sum::combine(*slot, gradient);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::GradientPair;
    use proptest::prelude::*;

    #[test]
    fn known_histograms() {
        assert_eq!(histogram_count(&[0u8, 3, 3, 1, 7], 4), (vec![1, 1, 0, 2], 1));
        assert_eq!(histogram_weighted(&[2u16, 0, 2, 9], &[1.5f64, -2.0, 0.25, 100.0], 3), (vec![-2.0, 0.0, 1.75], 1));
        let samples = [0.0f32, 0.24, 0.25, 0.99, 1.0, -0.01, f32::NAN, 0.5];
        assert_eq!(histogram_even(&samples, 0.0, 1.0, 4), (vec![2, 1, 1, 1], 3));
    }

    #[test]
    fn even_bin_edges() {
        // Just below the upper bound rounds to `bins` before the clamp.
        let below = 1.0f32 - f32::EPSILON / 2.0;
        assert_eq!(below.even_bin(0.0, 1.0, 3), Some(2));
        assert_eq!(0.0f64.even_bin(0.0, 1.0, 1), Some(0));
        assert_eq!(1.0f64.even_bin(0.0, 1.0, 1), None);
        assert_eq!(f64::NEG_INFINITY.even_bin(0.0, 1.0, 5), None);
        assert_eq!(f64::INFINITY.even_bin(0.0, 1.0, 5), None);
    }

    #[test]
    fn multi_feature_by_hand() {
        // 3 rows x 2 features, 2 bins per feature; bin 5 is missing.
        let bins = [0u8, 1, 1, 5, 0, 0];
        let gradients = [GradientPair::new(1i64, 10), GradientPair::new(2, 20), GradientPair::new(4, 40)];
        // Node 0: rows 2, 0; node 1: empty; node 2: row 1.
        let rows = [2u32, 0, 1];
        let offsets = [0u32, 2, 2, 3];
        let mut histogram = vec![GradientPair::new(0i64, 0); 3 * 2 * 2];
        multi_feature_histogram(&bins, 2, 2, &gradients, &rows, &offsets, &mut histogram);
        let g = GradientPair::new;
        #[rustfmt::skip]
        let want = [
            g(5, 50), g(0, 0), g(4, 40), g(1, 10), // node 0: feature 0 bins 0, 1; feature 1 bins 0, 1
            g(0, 0), g(0, 0), g(0, 0), g(0, 0),    // node 1
            g(0, 0), g(2, 20), g(0, 0), g(0, 0),   // node 2 (feature 1 missing)
        ];
        assert_eq!(histogram, want);
    }

    proptest! {
        #[test]
        fn counts_add_up(samples in proptest::collection::vec(0u16..40, 0..400), bins in 1usize..40) {
            let (histogram, ignored) = histogram_count(&samples, bins);
            prop_assert_eq!(histogram.iter().sum::<u64>() + ignored, samples.len() as u64);
            for (b, &count) in histogram.iter().enumerate() {
                prop_assert_eq!(count, samples.iter().filter(|&&s| s as usize == b).count() as u64);
            }
            let ones = vec![1i64; samples.len()];
            let (weighted, weighted_ignored) = histogram_weighted(&samples, &ones, bins);
            prop_assert_eq!(weighted_ignored, ignored);
            prop_assert!(weighted.iter().zip(&histogram).all(|(&w, &c)| w as u64 == c));
        }

        #[test]
        fn even_bins_are_monotone_and_in_range(
            mut samples in proptest::collection::vec(-2.0f64..3.0, 0..300),
            lower in -1.0f64..0.5,
            width in 0.001f64..2.0,
            bins in 1usize..300,
        ) {
            let upper = lower + width;
            samples.sort_by(f64::total_cmp);
            let mut previous = 0;
            for &x in &samples {
                match x.even_bin(lower, upper, bins) {
                    Some(b) => {
                        prop_assert!(x >= lower && x < upper && b < bins);
                        prop_assert!(b >= previous, "bins must not decrease with x");
                        previous = b;
                    }
                    None => prop_assert!(x < lower || x >= upper),
                }
            }
            let (histogram, ignored) = histogram_even(&samples, lower, upper, bins);
            let outside = samples.iter().filter(|&&x| x < lower || x >= upper).count() as u64;
            prop_assert_eq!(ignored, outside);
            prop_assert_eq!(histogram.iter().sum::<u64>() + ignored, samples.len() as u64);
        }

        #[test]
        fn multi_feature_is_weighted_histograms_of_columns(
            (rows_in_matrix, features, bins_per_feature) in (1usize..40, 1usize..5, 1usize..8),
            seed in any::<u64>(),
            nodes in 1usize..5,
        ) {
            use rand::{rngs::SmallRng, Rng, SeedableRng};
            let mut rng = SmallRng::seed_from_u64(seed);
            // Bin ids up to bins_per_feature + 1: some missing.
            let bins: Vec<u8> = (0..rows_in_matrix * features).map(|_| rng.gen_range(0..=bins_per_feature as u8 + 1)).collect();
            let gradients: Vec<GradientPair<i64>> =
                (0..rows_in_matrix).map(|_| GradientPair::new(rng.gen_range(-1000..1000), rng.gen_range(0..1000))).collect();
            let rows: Vec<u32> = (0..rng.gen_range(0..60)).map(|_| rng.gen_range(0..rows_in_matrix as u32)).collect();
            let mut offsets: Vec<u32> = (0..nodes - 1).map(|_| rng.gen_range(0..=rows.len() as u32)).collect();
            offsets.extend([0, rows.len() as u32]);
            offsets.sort();
            let mut histogram = vec![GradientPair::new(0i64, 0); nodes * features * bins_per_feature];
            multi_feature_histogram(&bins, features, bins_per_feature, &gradients, &rows, &offsets, &mut histogram);
            for node in 0..nodes {
                let node_rows = &rows[offsets[node] as usize..offsets[node + 1] as usize];
                let weights: Vec<GradientPair<i64>> = node_rows.iter().map(|&r| gradients[r as usize]).collect();
                for feature in 0..features {
                    let column: Vec<u8> = node_rows.iter().map(|&r| bins[r as usize * features + feature]).collect();
                    let (want, _) = histogram_weighted(&column, &weights, bins_per_feature);
                    let start = (node * features + feature) * bins_per_feature;
                    prop_assert_eq!(&histogram[start..start + bins_per_feature], &want[..]);
                }
            }
        }
    }
}
