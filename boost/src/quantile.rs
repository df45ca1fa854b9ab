//! Quantile cuts: at most `max_bin` bins per feature, from weighted data, deterministic.
//!
//! Layout as XGBoost's `HistogramCuts`: for feature `f`, `cut_values[cut_ptrs[f]..cut_ptrs[f + 1]]`
//! are increasing **upper bounds** of its bins, and a value `v` falls in the first bin whose bound is
//! above it. So a split "bins `..=b` go left" is the tree condition `v < cut_values[b]`, the same test
//! prediction applies to raw values. `min_values[f]` lies below every value of `f`; it is the split
//! condition when no present value goes left.
//!
//! A feature with at most `max_bin` distinct values gets one bin per value (exact cuts). Otherwise the
//! cuts are weighted quantiles: with the distinct values sorted, `W` their total weight, `w_first` and
//! `w_last` the weights of the smallest and largest value, the `k`-th cut (k = 1..max_bin) is the
//! value whose weighted rank interval `[r, r + w)` holds `w_first + k (W - w_first - w_last) / max_bin`:
//! the picks of XGBoost's summary pruning on an exact summary. (XGBoost's own summary is an
//! approximate sketch, so its cuts can differ from these by a rank or two.) The last bound is `max + (|max| + 1e-5)`, and the min value `min - (|min| + 1e-5)`, as in
//! XGBoost. Missing values (NaN) are left out.

use rayon::prelude::*;

use crate::data::FeatureMatrix;

/// Per-feature bin boundaries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuantileCuts {
    /// `features + 1` offsets into `cut_values`: feature `f`'s bins are the global bins
    /// `cut_ptrs[f]..cut_ptrs[f + 1]`.
    pub cut_ptrs: Vec<u32>,
    /// Upper bounds of the bins, increasing within a feature.
    pub cut_values: Vec<f32>,
    /// Below every value of the feature.
    pub min_values: Vec<f32>,
}

impl QuantileCuts {
    /// Cuts of every column of `features`, weighting row `i` by `weights[i]` (empty: all 1).
    pub fn build(features: &FeatureMatrix, weights: &[f32], max_bin: usize) -> Self {
        let cols = features.cols();
        let columns = columns_of(features, weights);
        let per_feature: Vec<(Vec<f32>, f32)> =
            columns.into_par_iter().map(|column| feature_cuts(column, max_bin.max(1))).collect();
        let mut cuts = QuantileCuts { cut_ptrs: Vec::with_capacity(cols + 1), ..Default::default() };
        cuts.cut_ptrs.push(0);
        for (values, min) in per_feature {
            cuts.cut_values.extend_from_slice(&values);
            cuts.cut_ptrs.push(cuts.cut_values.len() as u32);
            cuts.min_values.push(min);
        }
        cuts
    }

    /// Number of features.
    pub fn features(&self) -> usize {
        self.min_values.len()
    }

    /// Bins over all features.
    pub fn total_bins(&self) -> usize {
        self.cut_values.len()
    }

    /// Bins of feature `f`.
    pub fn bins(&self, f: usize) -> usize {
        (self.cut_ptrs[f + 1] - self.cut_ptrs[f]) as usize
    }

    /// The global bin of a present value `v` of feature `f` (values above the last bound, which only
    /// unseen data can have, go to the last bin). `None` for a feature without bins (no value seen).
    #[inline]
    pub fn search_bin(&self, f: usize, v: f32) -> Option<u32> {
        let (begin, end) = (self.cut_ptrs[f] as usize, self.cut_ptrs[f + 1] as usize);
        if begin == end {
            return None;
        }
        let bounds = &self.cut_values[begin..end];
        let local = bounds.partition_point(|&c| c <= v).min(bounds.len() - 1);
        Some((begin + local) as u32)
    }

    /// The feature a global bin belongs to.
    pub fn feature_of_bin(&self, bin: u32) -> usize {
        self.cut_ptrs.partition_point(|&p| p <= bin) - 1
    }
}

/// Each column's present values with their weights.
fn columns_of(features: &FeatureMatrix, weights: &[f32]) -> Vec<Vec<(f32, f32)>> {
    let cols = features.cols();
    let mut columns: Vec<Vec<(f32, f32)>> = vec![Vec::new(); cols];
    for i in 0..features.rows() {
        let w = if weights.is_empty() { 1.0 } else { weights[i] };
        features.for_each_present(i, |j, v| columns[j].push((v, w)));
    }
    columns
}

/// One feature's bounds and min value.
fn feature_cuts(mut column: Vec<(f32, f32)>, max_bin: usize) -> (Vec<f32>, f32) {
    if column.is_empty() {
        return (Vec::new(), 0.0);
    }
    column.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    // Distinct values with summed weights (-0.0 and +0.0 are one value).
    let mut distinct: Vec<(f32, f64)> = Vec::new();
    for (v, w) in column {
        match distinct.last_mut() {
            Some(last) if last.0 == v => last.1 += w as f64,
            _ => distinct.push((v, w as f64)),
        }
    }
    let min = distinct[0].0;
    let max = distinct[distinct.len() - 1].0;
    let mut bounds = Vec::with_capacity(max_bin.min(distinct.len()));
    if distinct.len() <= max_bin {
        bounds.extend(distinct[1..].iter().map(|d| d.0));
    } else {
        let total: f64 = distinct.iter().map(|d| d.1).sum();
        // XGBoost's summary pruning spaces the targets between the first value's upper rank and the
        // last value's lower rank (not over 0..total); matching that keeps our bins closer to its.
        let begin = distinct[0].1;
        let range = total - distinct[distinct.len() - 1].1 - begin;
        let mut j = 0;
        let mut rank_below = 0.0; // weight of distinct[..j]
        for k in 1..max_bin {
            let target = begin + k as f64 * range / max_bin as f64;
            // The value whose rank interval [rank_below, rank_below + w) holds the target.
            while j + 1 < distinct.len() && rank_below + distinct[j].1 <= target {
                rank_below += distinct[j].1;
                j += 1;
            }
            let v = distinct[j].0;
            if v > min && bounds.last().is_none_or(|&last| v > last) {
                bounds.push(v);
            }
        }
    }
    bounds.push(max + (max.abs() + 1e-5));
    (bounds, min - (min.abs() + 1e-5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrMatrix, DenseMatrix};

    fn dense(cols: usize, values: Vec<f32>) -> FeatureMatrix {
        FeatureMatrix::Dense(DenseMatrix::new(values.len() / cols, cols, values))
    }

    #[test]
    fn few_distinct_values_get_one_bin_each() {
        let m = dense(2, vec![3.0, f32::NAN, 1.0, 5.0, 2.0, 5.0, 3.0, 7.0, 1.0, f32::NAN]);
        let cuts = QuantileCuts::build(&m, &[], 256);
        assert_eq!(cuts.cut_ptrs, vec![0, 3, 5]);
        assert_eq!(&cuts.cut_values[..3], &[2.0, 3.0, 3.0 + 3.0 + 1e-5]);
        assert_eq!(&cuts.cut_values[3..], &[7.0, 7.0 + 7.0 + 1e-5]);
        assert_eq!(cuts.min_values, vec![1.0 - (1.0 + 1e-5), 5.0 - (5.0 + 1e-5)]);
        // Every value lands in its own bin; the split test `v < bound` agrees with the bins.
        for (v, bin) in [(1.0, 0), (2.0, 1), (3.0, 2)] {
            assert_eq!(cuts.search_bin(0, v), Some(bin));
        }
        assert_eq!(cuts.search_bin(0, 100.0), Some(2), "above the last bound: last bin");
        assert_eq!(cuts.search_bin(1, 7.0), Some(4));
        assert_eq!(cuts.feature_of_bin(2), 0);
        assert_eq!(cuts.feature_of_bin(3), 1);
    }

    #[test]
    fn many_values_give_weighted_quantiles() {
        // 0..1000 with unit weights, 4 bins: targets 1 + k 998 / 4 = 250.5, 500, 749.5, then max+.
        let m = dense(1, (0..1000).map(|x| x as f32).collect());
        let cuts = QuantileCuts::build(&m, &[], 4);
        assert_eq!(cuts.cut_values, vec![250.0, 500.0, 749.0, 999.0 + 999.0 + 1e-5]);
        // Weighting the upper half 3x moves the quantiles up: total 2000, targets 1 + k 1996 / 4 =
        // 500, 999, 1498, held by the values 500 (rank [500, 503)), 666 ([998, 1001)), 832.
        let weights: Vec<f32> = (0..1000).map(|x| if x < 500 { 1.0 } else { 3.0 }).collect();
        let cuts = QuantileCuts::build(&m, &weights, 4);
        assert_eq!(&cuts.cut_values[..3], &[500.0, 666.0, 832.0]);
        // Bin sizes stay near W / max_bin for any count.
        for max_bin in [2usize, 3, 16, 255, 256] {
            let cuts = QuantileCuts::build(&m, &[], max_bin);
            assert_eq!(cuts.bins(0), max_bin);
            let mut counts = vec![0usize; max_bin];
            for x in 0..1000 {
                counts[cuts.search_bin(0, x as f32).unwrap() as usize] += 1;
            }
            let ideal = 1000 / max_bin;
            // The targets skip the end values' own weight, so the first and last bins may hold one more.
            assert!(counts.iter().all(|&c| c.abs_diff(ideal) <= 2), "{max_bin}: {counts:?}");
        }
    }

    #[test]
    fn sparse_absent_entries_are_missing_and_empty_columns_have_no_bins() {
        let m = FeatureMatrix::Sparse(CsrMatrix {
            rows: 3,
            cols: 3,
            row_ptr: vec![0, 1, 2, 3],
            col_indices: vec![0, 0, 2],
            values: vec![-1.0, 4.0, 0.5],
        });
        let cuts = QuantileCuts::build(&m, &[], 256);
        assert_eq!(cuts.cut_ptrs, vec![0, 2, 2, 3]);
        assert_eq!(cuts.search_bin(1, 0.0), None);
        assert_eq!(cuts.bins(2), 1);
    }
}
