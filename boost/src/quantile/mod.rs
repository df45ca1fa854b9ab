//! Quantile cuts: at most `max_bin` bins per feature, from weighted data, deterministic.
//!
//! Layout as XGBoost's `HistogramCuts`: for feature `f`, `cut_values[cut_ptrs[f]..cut_ptrs[f + 1]]`
//! are increasing **upper bounds** of its bins, and a value `v` falls in the first bin whose bound is
//! above it. So a split "bins `..=b` go left" is the tree condition `v < cut_values[b]`, the same test
//! prediction applies to raw values; when no present value goes left the condition is `v < -inf`,
//! as XGBoost 3.4 writes it (it no longer keeps a minimum a feature).
//!
//! The cuts are XGBoost 3.4's for the CPU `hist` method (`HostSketchContainer` over a `DMatrix`),
//! value for value: each column's present values are pushed in row order, with their weights, into
//! XGBoost's weighted quantile sketch (`WQuantileSketch`, `f32` ranks), whose levels keep
//! `sketch_limit` entries (relative error `1 / min(max_bin, n)`, `kFactor` 2); the merged levels
//! are pruned to the same size for the values with a weight, and the cuts are queried from that
//! summary (`QueryCutValues`): a column of `max_bin` distinct values or fewer gets one bin a value,
//! otherwise the entries nearest to `max_bin` evenly spaced ranks, kept strictly increasing. The
//! last bound is `max + (|max| + 1e-5)` in `f32`. Missing values (NaN) are left out; a column
//! without any present value (or only zero weights) has no bins (XGBoost gives it one empty bin;
//! no split can use either).
//!
//! XGBoost's sketch has no randomness and each column is sketched alone, so the cuts depend neither
//! on the thread count nor on the other columns.

use boost_kernels::sketch;
pub(crate) use boost_kernels::sketch::SketchEntry as Entry;
use rayon::prelude::*;

use boost_kernels::predict::MAX_CATEGORY;

use crate::data::FeatureMatrix;
use crate::{Error, Result};

mod stream;
pub use stream::CutsStream;

/// Per-feature bin boundaries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuantileCuts {
    /// `features + 1` offsets into `cut_values`: feature `f`'s bins are the global bins
    /// `cut_ptrs[f]..cut_ptrs[f + 1]`.
    pub cut_ptrs: Vec<u32>,
    /// Upper bounds of the bins, increasing within a feature.
    pub cut_values: Vec<f32>,
    /// Which features are categorical (empty: none). A categorical feature's bins are its codes
    /// `0..=max`, bin `c` bounded above by `c + 1` (exact in `f32` below 2^24) so that the search
    /// puts code `c` in it.
    pub categorical: Vec<bool>,
}

impl QuantileCuts {
    /// Cuts of every column of `features`, weighting row `i` by `weights[i]` (empty: all 1).
    pub fn build(features: &FeatureMatrix, weights: &[f32], max_bin: usize) -> Self {
        let columns = columns_of(features, weights);
        let per_feature: Vec<Vec<f32>> =
            columns.into_par_iter().map(|column| feature_cuts(column, max_bin.max(1))).collect();
        Self::from_features(per_feature)
    }

    /// [`QuantileCuts::build`] with the features `categorical` names given a bin a category (codes
    /// `0..=max` of the column's largest code `max`; XGBoost's cuts of a categorical feature). A
    /// categorical value that is not a whole number from 0 to `MAX_CATEGORY - 1` is an error naming
    /// its row, feature and value.
    pub fn build_typed(features: &FeatureMatrix, weights: &[f32], max_bin: usize, categorical: &[bool]) -> Result<Self> {
        if !categorical.contains(&true) {
            return Ok(Self::build(features, weights, max_bin));
        }
        let columns = columns_of(features, weights);
        let per_feature: Vec<std::result::Result<Vec<f32>, f32>> = columns
            .into_par_iter()
            .enumerate()
            .map(|(f, column)| match categorical.get(f) {
                Some(true) => category_cuts(&column),
                _ => Ok(feature_cuts(column, max_bin.max(1))),
            })
            .collect();
        let mut cuts = Vec::with_capacity(per_feature.len());
        for (f, c) in per_feature.into_iter().enumerate() {
            cuts.push(c.map_err(|value| bad_category(features, f, value))?);
        }
        let mut cuts = Self::from_features(cuts);
        cuts.categorical = categorical.to_vec();
        Ok(cuts)
    }

    /// Whether feature `f` is categorical.
    #[inline]
    pub fn is_categorical(&self, f: usize) -> bool {
        self.categorical.get(f).copied().unwrap_or(false)
    }

    /// The cuts of each feature's bounds, in feature order.
    pub(crate) fn from_features(per_feature: Vec<Vec<f32>>) -> Self {
        let mut cuts = QuantileCuts { cut_ptrs: Vec::with_capacity(per_feature.len() + 1), ..Default::default() };
        cuts.cut_ptrs.push(0);
        for values in per_feature {
            cuts.cut_values.extend_from_slice(&values);
            cuts.cut_ptrs.push(cuts.cut_values.len() as u32);
        }
        cuts
    }

    /// Number of features.
    pub fn features(&self) -> usize {
        self.cut_ptrs.len().saturating_sub(1)
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
        // The device's search too (`boost_kernels::bins`), so its quantised matrix is this one.
        let local = boost_kernels::bins::local_bin(bounds.len(), |i| bounds[i], v);
        Some((begin + local) as u32)
    }

    /// The feature a global bin belongs to.
    pub fn feature_of_bin(&self, bin: u32) -> usize {
        self.cut_ptrs.partition_point(|&p| p <= bin) - 1
    }
}

/// Each column's present values with their weights, in row order (the order XGBoost pushes them).
pub(crate) fn columns_of(features: &FeatureMatrix, weights: &[f32]) -> Vec<Vec<(f32, f32)>> {
    // A task a piece of rows: it counts each column's present values of its rows, then writes them
    // into its own part of every column. Each row is read twice, not once a column (a task a
    // column would read every cache line of the rows once for each).
    let (rows, cols) = (features.rows(), features.cols());
    let weight = |i: usize| if weights.is_empty() { 1.0 } else { weights[i] };
    let piece = |p: usize| p * PIECE_ROWS..((p + 1) * PIECE_ROWS).min(rows);
    let counts = present_by_piece(features);
    let mut columns: Vec<Vec<(f32, f32)>> =
        (0..cols).map(|j| vec![(0.0, 0.0); counts.iter().map(|c| c[j]).sum()]).collect();
    let mut parts: Vec<Vec<&mut [(f32, f32)]>> = counts.iter().map(|_| Vec::with_capacity(cols)).collect();
    for (j, column) in columns.iter_mut().enumerate() {
        let mut rest = column.as_mut_slice();
        for (part, count) in parts.iter_mut().zip(&counts) {
            let (mine, after) = std::mem::take(&mut rest).split_at_mut(count[j]);
            part.push(mine);
            rest = after;
        }
    }
    parts.into_par_iter().enumerate().for_each(|(p, mut part)| {
        let mut at = vec![0; cols];
        for i in piece(p) {
            let w = weight(i);
            features.for_each_present(i, |j, v| {
                part[j][at[j]] = (v, w);
                at[j] += 1;
            });
        }
    });
    columns
}

/// Rows of a piece of [`present_by_piece`].
const PIECE_ROWS: usize = 8192;

/// Each column's count of present values in each piece of [`PIECE_ROWS`] rows (a piece a task).
pub(crate) fn present_by_piece(features: &FeatureMatrix) -> Vec<Vec<usize>> {
    let (rows, cols) = (features.rows(), features.cols());
    (0..rows.div_ceil(PIECE_ROWS))
        .into_par_iter()
        .map(|p| {
            let mut counts = vec![0; cols];
            let end = ((p + 1) * PIECE_ROWS).min(rows);
            (p * PIECE_ROWS..end).for_each(|i| features.for_each_present(i, |j, _| counts[j] += 1));
            counts
        })
        .collect()
}

/// A categorical column's bounds: `c + 1` for each code `c` up to its largest; the first value
/// that is no code when there is one.
fn category_cuts(column: &[(f32, f32)]) -> std::result::Result<Vec<f32>, f32> {
    let mut max = None;
    for &(v, _) in column {
        if !is_category(v) {
            return Err(v);
        }
        max = max.max(Some(v as u32));
    }
    Ok(category_bounds(max))
}

/// The bounds of a categorical column whose largest code is `largest`: `c + 1` for each code.
fn category_bounds(largest: Option<u32>) -> Vec<f32> {
    largest.map(|m| (1..=m + 1).map(|c| c as f32).collect()).unwrap_or_default()
}

pub use boost_kernels::categorical::is_category;

/// The error of a value `value` of categorical feature `f` that is no category, naming its row.
fn bad_category(features: &FeatureMatrix, f: usize, value: f32) -> Error {
    not_a_category(row_holding(features, f, value), f, value)
}

/// The first row of `features` whose feature `f` is `value` (the same bits).
fn row_holding(features: &FeatureMatrix, f: usize, value: f32) -> Option<usize> {
    (0..features.rows()).find(|&i| {
        let mut found = false;
        features.for_each_present(i, |j, v| found |= j == f && v.to_bits() == value.to_bits());
        found
    })
}

/// The error of a value of categorical feature `f` that is no category (in `row`, when known).
pub(crate) fn not_a_category(row: Option<usize>, f: usize, value: f32) -> Error {
    let place = row.map(|r| format!("row {r}, ")).unwrap_or_default();
    Error::InvalidData(format!(
        "{place}feature {f} is categorical but holds {value}: a category is a whole number from 0 to {}",
        MAX_CATEGORY - 1
    ))
}

/// One feature's bounds: XGBoost's sketch of the column (`max_bin` bins), then its `MakeCuts`.
fn feature_cuts(column: Vec<(f32, f32)>, max_bin: usize) -> Vec<f32> {
    let n = column.len();
    if n == 0 {
        return Vec::new();
    }
    let kept = column.iter().filter(|&&(_, w)| w != 0.0).count();
    cuts_of_summary(&sketch(&column, sketch_limit(n, max_bin)), kept, max_bin)
}

/// XGBoost's `SketchSummaryBudget` (`WQuantileSketch::LimitSizeLevel` for relative error `1 /
/// min(max_bin, n)`): the entries a level of the sketch of a column of `n` values keeps, and the
/// entries of its final summary. Evaluated in `f64` as XGBoost does: the smallest level count `L`
/// with `2^L min(n, ceil(L / (eps / kFactor)) + 1) >= n`, `kFactor` 2.
pub(crate) fn sketch_limit(n: usize, max_bin: usize) -> usize {
    if n == 0 {
        return 1;
    }
    let eps = 1.0 / max_bin.clamp(1, n) as f64;
    let internal_eps = eps / SKETCH_FACTOR;
    let mut levels = 1u32;
    loop {
        let limit = (((levels as f64) / internal_eps).ceil() as usize + 1).min(n);
        if (1usize << levels).saturating_mul(limit) >= n {
            return limit;
        }
        levels += 1;
    }
}

/// XGBoost's `WQuantileSketch::kFactor`: how many more entries than bins a level keeps.
const SKETCH_FACTOR: f64 = 2.0;

/// `GetSummary`'s last pruning and `MakeCuts` of a column's merged sketch summary, `kept` its values
/// with a weight: the bounds (empty when nothing was sketched).
pub(crate) fn cuts_of_summary(summary: &[Entry], kept: usize, max_bin: usize) -> Vec<f32> {
    let summary = prune(summary, sketch_limit(kept, max_bin));
    if summary.is_empty() {
        return Vec::new();
    }
    let mut bounds = Vec::with_capacity(summary.len().min(max_bin) + 1);
    query_cuts(&summary, summary.len().min(max_bin), |b| bounds.push(b));
    bounds
}

/// XGBoost 3.4's `WQSummary::QueryCutValues` of a non-empty summary: every value after the first
/// when it holds `max_bin` entries or fewer, else the entries nearest to the ranks `i total /
/// max_bin` (`i` from 1, in `f64`), each moved to the next larger value when it does not increase;
/// then the last bound, `max + (|max| + 1e-5)` in `f32`. Pushes the bounds in order.
fn query_cuts(entries: &[Entry], max_bin: usize, mut push: impl FnMut(f32)) {
    let n = entries.len();
    // The first entry at or after `cursor` with a value above `value` (`n` if none).
    let next_distinct = |mut cursor: usize, value: f32| {
        while cursor < n && entries[cursor].value <= value {
            cursor += 1;
        }
        cursor
    };
    let mut last_cut = entries[0].value;
    let mut next = next_distinct(1, last_cut);
    if n <= max_bin {
        while next < n {
            last_cut = entries[next].value;
            push(last_cut);
            next = next_distinct(next + 1, last_cut);
        }
    } else {
        let total = entries[n - 1].rmax as f64;
        let mut at = 0;
        for i in 1..max_bin {
            let rank2 = 2.0 * (i as f64 * total / max_bin as f64);
            while at < n - 2 && rank2 >= (entries[at + 1].rmin + entries[at + 1].rmax) as f64 {
                at += 1;
            }
            let (here, after) = (entries[at], entries[at + 1]);
            let mut cut = if rank2 < (here.rmin_next() + after.rmax_prev()) as f64 { here.value } else { after.value };
            if cut <= last_cut {
                next = next_distinct(next, last_cut);
                if next == n {
                    break;
                }
                cut = entries[next].value;
            } else if next < n && entries[next].value <= cut {
                next = next_distinct(next + 1, cut);
            }
            push(cut);
            last_cut = cut;
        }
    }
    let max = entries[n - 1].value;
    push(max + (max.abs() + 1e-5));
}

/// XGBoost's `WQuantileSketch` of one column, `limit` entries a level: the values are queued
/// (zero weights skipped, a value equal to the last entry's merged into it); a full queue (`2
/// limit` entries) becomes an exact summary, pruned to `limit` entries and carried up a hierarchy
/// of levels as a binary counter; at the end the last queue's summary is carried up too, and the
/// levels are merged, the lowest first, each merge pruned to `limit` (`GetSummary`).
///
/// The queues' summaries are most of the work and independent of each other: where each queue
/// starts is found first ([`queue_starts`]), and they are computed in parallel, a batch at a time,
/// then merged in order, so the result is the sequential sketch's.
pub(crate) fn sketch(column: &[(f32, f32)], limit: usize) -> Vec<Entry> {
    let starts = queue_starts(column, limit);
    let ends = starts.iter().skip(1).copied().chain([column.len()]);
    let ranges: Vec<(usize, usize)> = starts.iter().copied().zip(ends).collect();
    let queue_summary = |&(begin, end): &(usize, usize)| prune(&summarize(&queue(&column[begin..end])), limit);
    let mut levels: Vec<Vec<Entry>> = Vec::new();
    // A batch bounds the summaries held at once (each of `limit` entries).
    for batch in ranges.chunks(4 * rayon::current_num_threads()) {
        let summaries: Vec<Vec<Entry>> = batch.par_iter().map(queue_summary).collect();
        for summary in summaries {
            push_summary(&mut levels, summary, limit);
        }
    }
    merge_levels(&levels, limit)
}

/// `GetSummary`: the sketch's levels merged, the lowest first, each merge pruned to `limit`.
fn merge_levels(levels: &[Vec<Entry>], limit: usize) -> Vec<Entry> {
    let mut merged: Vec<Entry> = Vec::new();
    for level in levels.iter().filter(|l| !l.is_empty()) {
        merged = if merged.is_empty() { level.clone() } else { prune(&combine(&merged, level), limit) };
    }
    merged
}

/// Where each queue of the sketch starts in `column`: a queue takes the values in order (zero
/// weights skipped, a value equal to its last entry's merged into it) until it holds `2 limit`
/// entries; the next value then starts the next queue (even one equal to the last entry's).
fn queue_starts(column: &[(f32, f32)], limit: usize) -> Vec<usize> {
    let mut starts = vec![0];
    let (mut entries, mut last) = (0, None);
    for (i, &(value, weight)) in column.iter().enumerate() {
        if weight == 0.0 {
            continue;
        }
        if entries == 2 * limit {
            starts.push(i);
            (entries, last) = (0, None);
        }
        if last != Some(value) {
            entries += 1;
            last = Some(value);
        }
    }
    starts
}

/// The queue of a range of values that [`queue_starts`] gave: zero weights skipped, consecutive
/// equal values merged (their weights summed in order, in `f32`).
fn queue(values: &[(f32, f32)]) -> Vec<(f32, f32)> {
    let mut queue: Vec<(f32, f32)> = Vec::with_capacity(values.len());
    for &(value, weight) in values.iter().filter(|&&(_, w)| w != 0.0) {
        match queue.last_mut() {
            Some(last) if last.0 == value => last.1 += weight,
            _ => queue.push((value, weight)),
        }
    }
    queue
}

/// `PushSummary`: carries a queue's summary (pruned to `limit`) up the levels; `levels[l]` holds a
/// summary of at most `limit` entries (empty: none).
fn push_summary(levels: &mut Vec<Vec<Entry>>, mut summary: Vec<Entry>, limit: usize) {
    let mut l = 0;
    loop {
        if levels.len() < l + 1 {
            levels.resize(l + 1, Vec::new());
        }
        if levels[l].is_empty() {
            levels[l] = prune(&summary, limit);
            return;
        }
        summary = combine(&prune(&summary, limit), &levels[l]);
        if summary.len() > limit {
            levels[l].clear();
            l += 1;
        } else {
            levels[l] = summary;
            return;
        }
    }
}

/// An exact summary of a queue of (value, weight): sorted, equal values merged (their weights
/// summed in `f32` in queue order, as a stable sort leaves them).
fn summarize(queue: &[(f32, f32)]) -> Vec<Entry> {
    // The stable order by value: a stable radix sort of the values' order-preserving bits (`-0` as
    // `+0`, which compare equal) with the queue positions alongside. (A queue holds `2 limit`
    // values at most, `limit` at most the column's length: positions fit in 32 bits for any column
    // of fewer than 2^32 values, which memory bounds.)
    let mut keys: Vec<(u32, u32)> = queue.iter().enumerate().map(|(i, &(v, _))| (value_key(v), i as u32)).collect();
    radsort::sort_by_key(&mut keys, |&(key, _)| key);
    let mut out = Vec::with_capacity(queue.len());
    sketch::summarize(keys.len(), |k| queue[keys[k].1 as usize], |e| out.push(e));
    out
}

/// A `u32` whose order is the order of the (non-NaN) values, `-0` and `+0` equal.
fn value_key(v: f32) -> u32 {
    let bits = if v == 0.0 { 0 } else { v.to_bits() };
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// `WQSummary::SetPrune` (`boost_kernels::sketch::prune`) of a summary.
fn prune(src: &[Entry], max_size: usize) -> Vec<Entry> {
    let mut out = Vec::with_capacity(src.len().min(max_size));
    sketch::prune(src.len(), |i| src[i], max_size, |e| out.push(e));
    out
}

/// `WQSummary::SetCombine` with `FixError` (`boost_kernels::sketch::combine`) of two summaries.
fn combine(a: &[Entry], b: &[Entry]) -> Vec<Entry> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    sketch::combine(a.len(), |i| a[i], b.len(), |j| b[j], |e| out.push(e));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{read_data, Column, CsrMatrix, CsvOptions, DenseMatrix, ReadOptions};
    use rand::{Rng, SeedableRng};

    /// Categorical codes fall in their own bins, up to the largest code XGBoost takes (2^24 - 1,
    /// where `c + 0.5` would round).
    #[test]
    fn category_codes_are_their_bins() {
        let top = (boost_kernels::predict::MAX_CATEGORY - 1) as f32;
        let values = vec![0.0, 1.5, 3.0, 2.0, top - 1.0, 7.0, top, f32::NAN];
        let m = FeatureMatrix::Dense(DenseMatrix::new(4, 2, values));
        let cuts = QuantileCuts::build_typed(&m, &[], 256, &[true, false]).unwrap();
        assert_eq!(cuts.bins(0), boost_kernels::predict::MAX_CATEGORY as usize);
        for code in [0.0, 3.0, top - 1.0, top] {
            assert_eq!(cuts.search_bin(0, code), Some(code as u32), "{code}");
        }
        assert!(cuts.is_categorical(0) && !cuts.is_categorical(1));
    }

    fn dense(cols: usize, values: Vec<f32>) -> FeatureMatrix {
        FeatureMatrix::Dense(DenseMatrix::new(values.len() / cols, cols, values))
    }

    /// The summary of a queue is the one a stable sort by value gives (equal values' weights added
    /// in queue order, `-0` equal to `+0`), whatever the ties, signs and weights.
    #[test]
    fn summaries_follow_the_queue_order_of_equal_values() {
        let stable = |queue: &[(f32, f32)]| {
            let mut q = queue.to_vec();
            q.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
            let mut out = Vec::new();
            let (mut wsum, mut i) = (0f32, 0);
            while i < q.len() {
                let (value, mut w) = q[i];
                let mut j = i + 1;
                while j < q.len() && q[j].0 == value {
                    w += q[j].1;
                    j += 1;
                }
                out.push(Entry { rmin: wsum, rmax: wsum + w, wmin: w, value });
                wsum += w;
                i = j;
            }
            out
        };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        for len in [0usize, 1, 2, 17, 500] {
            let queue: Vec<(f32, f32)> = (0..len)
                .map(|_| {
                    let v = [-0.0f32, 0.0, 1.5, -2.25, 3.0e-39, f32::MAX, f32::NEG_INFINITY][rng.gen_range(0..7)];
                    (v, rng.gen_range(0.001f32..10.0))
                })
                .collect();
            let (got, want) = (summarize(&queue), stable(&queue));
            let bits = |e: &[Entry]| -> Vec<[u32; 4]> {
                e.iter().map(|e| [e.rmin.to_bits(), e.rmax.to_bits(), e.wmin.to_bits(), e.value.to_bits()]).collect()
            };
            assert_eq!(bits(&got), bits(&want), "{len} values");
        }
    }

    #[test]
    fn few_distinct_values_get_one_bin_each() {
        let m = dense(2, vec![3.0, f32::NAN, 1.0, 5.0, 2.0, 5.0, 3.0, 7.0, 1.0, f32::NAN]);
        let cuts = QuantileCuts::build(&m, &[], 256);
        assert_eq!(cuts.cut_ptrs, vec![0, 3, 5]);
        // The last bound `max + (|max| + 1e-5)` in `f32` (XGBoost 3.4.1 gives these same cuts).
        assert_eq!(&cuts.cut_values[..3], &[2.0, 3.0, 3.0 + (3.0 + 1e-5)]);
        assert_eq!(&cuts.cut_values[3..], &[7.0, 7.0 + (7.0 + 1e-5)]);
        assert_eq!((cuts.cut_values[2], cuts.cut_values[4]), (6.00001, 14.00001));
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
    fn many_values_get_xgboost_sketch_quantiles() {
        // The answers of XGBoost 3.4.1 (`boost/scripts/make_xgboost_cuts.py --cases`: a DMatrix
        // trained on with `hist`, then `get_quantile_cut()`) for the column 0..1000. The sketch's
        // summary answers rank queries within its error: the bins are not of equal counts.
        let m = dense(1, (0..1000).map(|x| x as f32).collect());
        let last = 999.0 + 999.0;
        let cuts = QuantileCuts::build(&m, &[], 4);
        assert_eq!(cuts.cut_values, vec![246.0, 492.0, 753.0, last]);
        // Weighting the upper half 3x moves the quantiles up.
        let weights: Vec<f32> = (0..1000).map(|x| if x < 500 { 1.0 } else { 3.0 }).collect();
        let cuts = QuantileCuts::build(&m, &weights, 4);
        assert_eq!(cuts.cut_values, vec![501.0, 665.0, 829.0, last]);
        let expected: [(usize, &[f32]); 3] = [
            (2, &[500.0]),
            (3, &[329.0, 673.0]),
            (
                16,
                &[
                    61.0, 125.0, 189.0, 249.0, 313.0, 373.0, 439.0, 499.0, 561.0, 625.0, 685.0, 749.0, 810.0, 874.0,
                    934.0,
                ],
            ),
        ];
        for (max_bin, values) in expected {
            let cuts = QuantileCuts::build(&m, &[], max_bin);
            assert_eq!(&cuts.cut_values[..max_bin - 1], values, "max_bin {max_bin}");
            assert_eq!(cuts.cut_values[max_bin - 1], last);
        }
        // With max_bin near the number of values, XGBoost's bins hold 2 to 5 of the 1000.
        for max_bin in [255usize, 256] {
            let cuts = QuantileCuts::build(&m, &[], max_bin);
            assert_eq!(cuts.bins(0), max_bin);
            let mut counts = vec![0usize; max_bin];
            for x in 0..1000 {
                counts[cuts.search_bin(0, x as f32).unwrap() as usize] += 1;
            }
            assert!(counts.iter().all(|&c| (2..=5).contains(&c)), "{max_bin}: {counts:?}");
            assert!(counts.contains(&2) && counts.contains(&5), "{max_bin}: {counts:?}");
        }
    }

    /// XGBoost 3.4.1's cuts (`tests/data/xgboost_cuts.json`, from `scripts/make_xgboost_cuts.py`:
    /// cuts of a few features of the shipped datasets, from a `DMatrix` trained on with `hist`, 256
    /// bins) are ours, value for value. They cover sample weights (higgs), columns long enough for
    /// the sketch's levels to merge (all: more than 2 limit values), few distinct values (adult's
    /// age) and picks moved to the next distinct value (california_housing's longitude).
    #[test]
    fn cuts_are_xgboost_cuts_on_the_shipped_data() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let fixture: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("tests/data/xgboost_cuts.json")).unwrap()).unwrap();
        let max_bin = fixture["max_bin"].as_u64().unwrap() as usize;
        let sources = [
            ("higgs", "higgs_lgbm_sample/binary.train", Column::Index(0)),
            ("lgbm_multiclass", "lgbm_multiclass/multiclass.train", Column::Index(0)),
            ("california_housing", "california_housing/housing.train.csv", Column::Name("median_house_value".into())),
            ("adult", "adult/adult_train.csv", Column::Name("income".into())),
        ];
        let features = fixture["features"].as_array().unwrap();
        let mut checked = 0;
        for (name, path, label) in sources {
            let options = ReadOptions { csv: CsvOptions { label, ..Default::default() }, ..Default::default() };
            let (data, _) = read_data(&root.join("../data").join(path), &options).unwrap();
            if name == "higgs" {
                assert_eq!(data.info.weights.len(), data.rows(), "higgs is weighted (binary.train.weight)");
            }
            let cuts = QuantileCuts::build(&data.features, &data.info.weights, max_bin);
            for entry in features.iter().filter(|e| e["dataset"] == name) {
                let f = entry["feature"].as_u64().unwrap() as usize;
                let want: Vec<f32> =
                    entry["cuts"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
                let got = &cuts.cut_values[cuts.cut_ptrs[f] as usize..cuts.cut_ptrs[f + 1] as usize];
                assert_eq!(got, &want[..], "{name} feature {f}");
                checked += 1;
            }
        }
        assert_eq!(checked, features.len(), "every fixture feature was checked");
    }

    #[test]
    fn long_columns_merge_the_sketch_levels_as_xgboost() {
        // 60000 values with duplicates, 16 bins: the sketch's levels hold 257 entries and its queue
        // fills over a hundred times, so summaries are pruned, combined and carried up several levels. XGBoost
        // 3.4.1's answers (`scripts/make_xgboost_cuts.py --cases`), without and with weights.
        let n = 60_000usize;
        let m = dense(1, (0..n).map(|i| ((i * 7919) % 10007) as f32 * 0.01).collect());
        assert_eq!(sketch_limit(n, 16), 257);
        let cuts = QuantileCuts::build(&m, &[], 16);
        let want: [f32; 16] = [
            6.3599997, 12.57, 18.859999, 25.08, 31.3, 37.55, 43.809998, 50.14, 56.309998, 62.539997, 68.81, 75.08,
            81.2, 87.42, 93.729996, 200.12,
        ];
        assert_eq!(cuts.cut_values, want);
        let weights: Vec<f32> = (0..n).map(|i| 1.0 + (i % 7) as f32 * 0.25).collect();
        let cuts = QuantileCuts::build(&m, &weights, 16);
        let want: [f32; 16] = [
            6.31, 12.59, 18.75, 24.97, 31.369999, 37.54, 43.71, 50.0, 56.3, 62.59, 68.75, 75.0, 81.36, 87.54, 93.81,
            200.12,
        ];
        assert_eq!(cuts.cut_values, want);
    }

    #[test]
    fn widely_spread_weights_give_xgboost_cuts() {
        // Weights from 0.1 to 1000, whose `f32` rank sums round. XGBoost 3.4.1's cuts.
        let n = 2097usize;
        let values: Vec<f32> = (0..n).map(|i| (((i * 7919) % 1009) as f32 - 500.0) / 7.0).collect();
        let choices = [0.1f32, 0.3, 1.7, 2.9, 1000.0];
        let weights: Vec<f32> = (0..n).map(|i| choices[(i * 31 + i / 3) % 5]).collect();
        let cuts = QuantileCuts::build(&dense(1, values), &weights, 256);
        assert_eq!(cuts.bins(0), 256);
        assert_eq!(&cuts.cut_values[..3], &[-69.28571, -69.14286, -69.0]);
        assert_eq!(&cuts.cut_values[100..104], &[-13.0, -12.714286, -12.571428, -12.428572]);
        assert_eq!(&cuts.cut_values[206..211], &[46.57143, 46.714287, 46.857143, 47.0, 49.285713]);
        assert_eq!(cuts.cut_values[255], 145.14285);
    }

    #[test]
    fn same_cuts_for_any_thread_count() {
        // Long enough columns (30000 > 2 limit_size) that the sketch merges levels.
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let (rows, cols) = (30_000, 4);
        let values: Vec<f32> = (0..rows * cols)
            .map(|_| if rng.gen_bool(0.1) { f32::NAN } else { (rng.gen_range(-2000..2000) as f32) * 0.01 })
            .collect();
        let weights: Vec<f32> = (0..rows).map(|_| rng.gen_range(0.5..2.0)).collect();
        let m = dense(cols, values);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| QuantileCuts::build(&m, &weights, 256))
        };
        let (a, b) = (run(1), run(3));
        assert_eq!(a, b);
        assert_eq!(a.bins(0), 256);
    }

    #[test]
    fn dense_and_csr_forms_of_the_same_data_give_the_same_cuts() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        let (rows, cols) = (5000, 5);
        let values: Vec<f32> = (0..rows * cols)
            .map(|k| if k % cols == 4 || rng.gen_bool(0.1) { f32::NAN } else { (rng.gen_range(0..300) as f32) / 7.0 })
            .collect();
        let weights: Vec<f32> = (0..rows).map(|i| 0.5 + (i % 5) as f32).collect();
        let mut csr = CsrMatrix { rows, cols, row_ptr: vec![0], col_indices: Vec::new(), values: Vec::new() };
        for i in 0..rows {
            for j in 0..cols {
                let v = values[i * cols + j];
                if !v.is_nan() {
                    csr.col_indices.push(j as u32);
                    csr.values.push(v);
                }
            }
            csr.row_ptr.push(csr.values.len());
        }
        let dense = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values));
        for w in [&[][..], &weights[..]] {
            let (a, b) =
                (QuantileCuts::build(&dense, w, 64), QuantileCuts::build(&FeatureMatrix::Sparse(csr.clone()), w, 64));
            assert_eq!(a, b);
            assert!(a.bins(0) > 30 && a.bins(4) == 0, "{:?}", a.cut_ptrs);
        }
    }

    /// `columns_of` writes each piece of rows into its own part of the columns: over several
    /// pieces, dense and sparse, each column's present values with their weights in row order.
    #[test]
    fn columns_hold_their_present_values_in_row_order() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let (rows, cols) = (20_000, 4);
        let values: Vec<f32> =
            (0..rows * cols).map(|k| if k % cols == 1 && rng.gen_bool(0.3) { f32::NAN } else { rng.gen() }).collect();
        let weights: Vec<f32> = (0..rows).map(|i| (i % 3) as f32).collect();
        let mut csr = CsrMatrix { rows, cols, row_ptr: vec![0], col_indices: Vec::new(), values: Vec::new() };
        for (k, &v) in values.iter().enumerate().filter(|(k, v)| !v.is_nan() && k % cols != 3) {
            while csr.row_ptr.len() <= k / cols {
                csr.row_ptr.push(csr.values.len());
            }
            csr.col_indices.push((k % cols) as u32);
            csr.values.push(v);
        }
        csr.row_ptr.resize(rows + 1, csr.values.len());
        let want = |w: &[f32], skip_last: bool| -> Vec<Vec<(f32, f32)>> {
            (0..cols)
                .map(|j| {
                    let present = (0..rows).filter(|&i| !values[i * cols + j].is_nan() && (!skip_last || j != 3));
                    present.map(|i| (values[i * cols + j], if w.is_empty() { 1.0 } else { w[i] })).collect()
                })
                .collect()
        };
        let dense = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values.clone()));
        let sparse = FeatureMatrix::Sparse(csr);
        for w in [&[][..], &weights[..]] {
            assert!(columns_of(&dense, w) == want(w, false));
            assert!(columns_of(&sparse, w) == want(w, true));
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
