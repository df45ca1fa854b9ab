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
        // SCRATCH (to be removed): cuts from a file.
        if let Ok(path) = std::env::var("BOOST_DEBUG_CUTS") {
            let text = std::fs::read_to_string(path).unwrap();
            let mut cuts = QuantileCuts { cut_ptrs: vec![0], ..Default::default() };
            for line in text.lines() {
                let v: Vec<f32> = line.split_whitespace().map(|x| x.parse().unwrap()).collect();
                cuts.min_values.push(v[0]);
                cuts.cut_values.extend_from_slice(&v[1..]);
                cuts.cut_ptrs.push(cuts.cut_values.len() as u32);
            }
            assert_eq!(cuts.min_values.len(), cols);
            return cuts;
        }
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

/// Each column's present values with their weights, in row order (the order XGBoost pushes them).
fn columns_of(features: &FeatureMatrix, weights: &[f32]) -> Vec<Vec<(f32, f32)>> {
    let cols = features.cols();
    let mut columns: Vec<Vec<(f32, f32)>> = vec![Vec::new(); cols];
    for i in 0..features.rows() {
        let w = if weights.is_empty() { 1.0 } else { weights[i] };
        features.for_each_present(i, |j, v| columns[j].push((v, w)));
    }
    columns
}

/// XGBoost's `WQuantileSketch::kFactor`: summaries keep `kFactor` entries per bin until the end.
const SKETCH_FACTOR: usize = 8;

/// One feature's bounds and min value: XGBoost's sketch of the column (`max_bin` bins), then its
/// `MakeCuts`.
fn feature_cuts(column: Vec<(f32, f32)>, max_bin: usize) -> (Vec<f32>, f32) {
    let n = column.len();
    if n == 0 {
        return (Vec::new(), 0.0);
    }
    let n_bins = max_bin.min(n).max(1);
    let eps = 1.0 / (n_bins as f32 * SKETCH_FACTOR as f32) as f64;
    let mut sketch = Sketch::new(n, eps);
    for (v, w) in column {
        sketch.push(v, w);
    }
    let summary = sketch.summary();
    // AllReduce's pruning to `max_bin * kFactor` entries, then MakeCuts' to `max_bin + 1`.
    let intermediate = n.min(max_bin * SKETCH_FACTOR);
    let reduced = prune(&summary, intermediate);
    let max_num_bins = intermediate.min(max_bin);
    let last_summary = prune(&reduced, max_num_bins + 1);
    let (Some(first), Some(last)) = (last_summary.first(), last_summary.last()) else {
        // Every weight was zero: nothing was sketched.
        return (Vec::new(), 0.0);
    };
    // AddCutPoint: entries 1..max_num_bins, strictly increasing; the smallest value is never a cut.
    let mut bounds: Vec<f32> = Vec::with_capacity(max_num_bins);
    for e in last_summary.iter().take(max_num_bins).skip(1) {
        if bounds.last().is_none_or(|&b| e.value > b) {
            bounds.push(e.value);
        }
    }
    // XGBoost evaluates these in double precision (C `fabs`) and rounds once.
    let eps5 = 1e-5f32 as f64;
    let (lo, hi) = (first.value as f64, last.value as f64);
    bounds.push((hi + (hi.abs() + eps5)) as f32);
    (bounds, (lo - lo.abs() - eps5) as f32)
}

/// An entry of XGBoost's weighted quantile summary (`WQSummary<float, float>::Entry`): a value with
/// bounds on the weight strictly below it (`rmin`), up to and including it (`rmax`), and its own
/// weight (`wmin`). The ranks are `f32`, as XGBoost's; its pruning decisions depend on their
/// rounding.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    rmin: f32,
    rmax: f32,
    wmin: f32,
    value: f32,
}

impl Entry {
    /// The smallest rank of a value above this one.
    fn rmin_next(&self) -> f32 {
        self.rmin + self.wmin
    }
    /// The largest rank of a value below this one.
    fn rmax_prev(&self) -> f32 {
        self.rmax - self.wmin
    }
}

/// An exact summary of a queue of (value, weight): sorted, equal values merged.
fn summarize(queue: &mut [(f32, f32)]) -> Vec<Entry> {
    queue.sort_by(|a, b| a.0.partial_cmp(&b.0).expect("no NaN in a sketch"));
    let mut out = Vec::with_capacity(queue.len());
    let mut wsum = 0f32;
    let mut i = 0;
    while i < queue.len() {
        let value = queue[i].0;
        let mut w = queue[i].1;
        let mut j = i + 1;
        while j < queue.len() && queue[j].0 == value {
            w += queue[j].1;
            j += 1;
        }
        out.push(Entry { rmin: wsum, rmax: wsum + w, wmin: w, value });
        wsum += w;
        i = j;
    }
    out
}

/// `WQSummary::SetPrune`: at most `max_size` entries of `src`, the first and the last kept, the
/// others picked nearest to evenly spaced ranks between the first entry's `rmax` and the last's
/// `rmin`.
fn prune(src: &[Entry], max_size: usize) -> Vec<Entry> {
    if src.len() <= max_size {
        return src.to_vec();
    }
    if max_size <= 1 {
        return src[..max_size].to_vec();
    }
    let last = src.len() - 1;
    let begin = src[0].rmax;
    let range = src[last].rmin - src[0].rmax;
    let n = max_size - 1;
    let mut out = Vec::with_capacity(max_size);
    out.push(src[0]);
    let (mut i, mut last_idx) = (1, 0);
    for k in 1..n {
        let dx2 = 2.0 * ((k as f32 * range) / n as f32 + begin);
        while i < last && dx2 >= src[i + 1].rmax + src[i + 1].rmin {
            i += 1;
        }
        if i == last {
            break;
        }
        let pick = if dx2 < src[i].rmin_next() + src[i + 1].rmax_prev() { i } else { i + 1 };
        if pick != last_idx {
            out.push(src[pick]);
            last_idx = pick;
        }
    }
    if last_idx != last {
        out.push(src[last]);
    }
    out
}

/// `WQSummary::SetCombine`: the merged summary of `a` and `b`, with `FixError`'s repair of the rank
/// invariants.
fn combine(a: &[Entry], b: &[Entry]) -> Vec<Entry> {
    if a.is_empty() {
        return b.to_vec();
    }
    if b.is_empty() {
        return a.to_vec();
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    let (mut a_prev_rmin, mut b_prev_rmin) = (0f32, 0f32);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        if x.value == y.value {
            out.push(Entry { rmin: x.rmin + y.rmin, rmax: x.rmax + y.rmax, wmin: x.wmin + y.wmin, value: x.value });
            a_prev_rmin = x.rmin_next();
            b_prev_rmin = y.rmin_next();
            i += 1;
            j += 1;
        } else if x.value < y.value {
            out.push(Entry { rmin: x.rmin + b_prev_rmin, rmax: x.rmax + y.rmax_prev(), wmin: x.wmin, value: x.value });
            a_prev_rmin = x.rmin_next();
            i += 1;
        } else {
            out.push(Entry { rmin: y.rmin + a_prev_rmin, rmax: y.rmax + x.rmax_prev(), wmin: y.wmin, value: y.value });
            b_prev_rmin = y.rmin_next();
            j += 1;
        }
    }
    let b_rmax = b[b.len() - 1].rmax;
    for x in &a[i..] {
        out.push(Entry { rmin: x.rmin + b_prev_rmin, rmax: x.rmax + b_rmax, wmin: x.wmin, value: x.value });
    }
    let a_rmax = a[a.len() - 1].rmax;
    for y in &b[j..] {
        out.push(Entry { rmin: y.rmin + a_prev_rmin, rmax: y.rmax + a_rmax, wmin: y.wmin, value: y.value });
    }
    // FixError: ranks non-decreasing, rmax at least rmin + wmin.
    let (mut prev_rmin, mut prev_rmax) = (0f32, 0f32);
    for e in &mut out {
        if e.rmin < prev_rmin {
            e.rmin = prev_rmin;
        } else {
            prev_rmin = e.rmin;
        }
        if e.rmax < prev_rmax {
            e.rmax = prev_rmax;
        }
        let rmin_next = e.rmin_next();
        if e.rmax < rmin_next {
            e.rmax = rmin_next;
        }
        prev_rmax = e.rmax;
    }
    out
}

/// XGBoost's `LimitSizeLevel`: the size of each level of a sketch for `max_n` values and relative
/// error `eps`.
fn limit_size(max_n: usize, eps: f64) -> usize {
    let mut levels = 1u32;
    loop {
        let limit = (((levels as f64) / eps).ceil() as usize + 1).min(max_n);
        if (1usize << levels).saturating_mul(limit) >= max_n {
            return limit;
        }
        levels += 1;
    }
}

/// XGBoost's `WQuantileSketch` of one column: values are queued (consecutive equal values merged);
/// a full queue (`2 limit` entries) becomes an exact summary that is pruned to `limit` entries and
/// merged up a hierarchy of levels, as a binary counter.
struct Sketch {
    limit: usize,
    queue: Vec<(f32, f32)>,
    /// `levels[l]` for `l >= 1` holds a summary of at most `limit` entries (empty: none).
    levels: Vec<Vec<Entry>>,
}

impl Sketch {
    fn new(max_n: usize, eps: f64) -> Self {
        let limit = limit_size(max_n, eps).max(1);
        Sketch { limit, queue: Vec::with_capacity((2 * limit).min(max_n)), levels: Vec::new() }
    }

    fn push(&mut self, value: f32, weight: f32) {
        if weight == 0.0 {
            return;
        }
        if self.queue.len() == 2 * self.limit {
            let summary = summarize(&mut self.queue);
            self.queue.clear();
            self.push_summary(summary);
        }
        match self.queue.last_mut() {
            Some(last) if last.0 == value => last.1 += weight,
            _ => self.queue.push((value, weight)),
        }
    }

    /// `PushTemp`: carries a summary up the levels.
    fn push_summary(&mut self, mut summary: Vec<Entry>) {
        let mut l = 1;
        loop {
            if self.levels.len() < l + 1 {
                self.levels.resize(l + 1, Vec::new());
            }
            if self.levels[l].is_empty() {
                self.levels[l] = prune(&summary, self.limit);
                return;
            }
            summary = combine(&prune(&summary, self.limit), &self.levels[l]);
            if summary.len() > self.limit {
                self.levels[l].clear();
                l += 1;
            } else {
                self.levels[l] = summary;
                return;
            }
        }
    }

    /// `GetSummary`: the queue's summary merged with every level.
    fn summary(mut self) -> Vec<Entry> {
        let out = summarize(&mut self.queue);
        if self.levels.is_empty() {
            return prune(&out, self.limit);
        }
        let mut merged = prune(&out, self.limit);
        for level in self.levels.iter().skip(1).filter(|l| !l.is_empty()) {
            merged = if merged.is_empty() { level.clone() } else { prune(&combine(&merged, level), self.limit) };
        }
        merged
    }
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
