//! Row sampling (`subsample`) as a stateless draw: a row is kept in a tree when a hash of the tree's
//! key and the row's index falls below the fraction. The host draws one key per tree from the
//! learner's random generator; every row's draw is then this function of (key, row), the same on the
//! CPU and on the device, for any thread count and any order of the rows. (Drawing a Bernoulli per
//! row from the generator on the host took about 30 ms a tree at 10M rows, and its mask crossed to
//! the device each round.)

/// `2^53`: the keep threshold of a fraction of 1 (hashes are compared on their top 53 bits).
const ONE: u64 = 1 << 53;
/// SplitMix64's increment: row `r` adds `(r + 1)` of it to the key.
pub(crate) const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// Which rows a tree keeps: row `i` when `hash(key, i) >> 11 < threshold`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RowSampler {
    pub key: u64,
    pub threshold: u64,
}

impl RowSampler {
    /// Keeps each row with probability `fraction` (in `(0, 1]`; 1 keeps every row).
    pub fn new(key: u64, fraction: f32) -> Self {
        let threshold = if fraction >= 1.0 { u64::MAX } else { (fraction.max(0.0) as f64 * ONE as f64) as u64 };
        RowSampler { key, threshold }
    }

    /// Keeps every row.
    pub const ALL: RowSampler = RowSampler { key: 0, threshold: u64::MAX };

    /// The sampler of the rows numbered from `first` on: its row `i` is this one's row `first + i`
    /// (a device's shard of a run's rows).
    pub fn from_row(&self, first: u64) -> Self {
        RowSampler { key: self.key.wrapping_add(first.wrapping_mul(GOLDEN)), threshold: self.threshold }
    }

    /// Whether row `row` is kept.
    #[inline(always)]
    pub fn keeps(&self, row: u64) -> bool {
        self.threshold == u64::MAX || (split_mix(self.key, row) >> 11) < self.threshold
    }
}

/// SplitMix64's output at position `row` of the sequence seeded with `key`: a bijective mix of
/// `key + (row + 1) * γ` whose outputs pass BigCrush as a sequence.
#[inline(always)]
pub(crate) fn split_mix(key: u64, row: u64) -> u64 {
    let mut z = key.wrapping_add(row.wrapping_add(1).wrapping_mul(GOLDEN));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_about_the_fraction_and_every_row_at_one() {
        for fraction in [0.1f32, 0.5, 0.8] {
            let sampler = RowSampler::new(0x1234_5678, fraction);
            let kept = (0..100_000u64).filter(|&i| sampler.keeps(i)).count() as f64 / 100_000.0;
            assert!((kept - fraction as f64).abs() < 0.01, "{fraction}: kept {kept}");
        }
        assert!((0..1000).all(|i| RowSampler::new(7, 1.0).keeps(i) && RowSampler::ALL.keeps(i)));
        assert!((0..1000).all(|i| !RowSampler::new(7, 0.0).keeps(i)));
    }

    #[test]
    fn a_sampler_from_a_row_keeps_the_rows_the_whole_one_keeps() {
        let sampler = RowSampler::new(0xfeed, 0.4);
        let shard = sampler.from_row(3072);
        assert!((0..5000u64).all(|i| shard.keeps(i) == sampler.keeps(3072 + i)));
    }

    #[test]
    fn different_keys_keep_different_rows() {
        let (a, b) = (RowSampler::new(1, 0.5), RowSampler::new(2, 0.5));
        let same = (0..10_000u64).filter(|&i| a.keeps(i) == b.keeps(i)).count();
        assert!((4_500..5_500).contains(&same), "{same} of 10000 agree");
    }
}
