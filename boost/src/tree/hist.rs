//! XGBoost's `hist` tree method on the CPU: per-node gradient histograms over the quantised matrix,
//! the subtraction trick (build the smaller child's histogram, derive its sibling from the parent),
//! split evaluation that tries both directions for missing values, and depthwise or lossguide
//! growth.
//!
//! All sums are 64-bit fixed point ([`crate::fixed_point`]), so the histograms, and with them the
//! tree, do not depend on the order of summation or the thread count. For the precision experiment
//! (`cargo xtask precision`, docs/precision.md) the builder is generic over the sum type
//! ([`HistogramSum`]): `f64` and `f32` pairs accumulate in floating point instead, subtraction trick
//! and split evaluation included; training uses fixed point unless told otherwise
//! ([`HistogramPrecision`]). The arithmetic that decides a split is `boost_kernels::split`, shared
//! with the kernels (the GPU backend's oracle is this builder). Gains and weights follow
//! XGBoost's hist evaluator (`TreeEvaluator::SplitEvaluator`) with its precision: with `T(G)` the
//! gradient sum soft-thresholded by `alpha`, a node's weight is `w = -T(G) / (H + lambda)` in double
//! precision (0 below `min_child_weight`, clipped to `max_delta_step` when set), rounded to `f32`; a
//! leaf's value is that `f32` weight times `eta` in `f32`. A node's gain is the `f32` quotient
//! `f32(T(G)^2) / f32(H + lambda)` (with `max_delta_step`, `-(2 G w + (H + lambda) w^2)` in `f32`), a
//! split's loss change the children's gains minus the parent's, all in `f32`. A split is kept when
//! its loss change is above 1e-6 (`kRtEps`) and at least `gamma`, and both children have hessian.
//! Ties between features go to the lower index, within a feature to the first candidate found
//! (missing values right, then left); XGBoost's `f32` rounding decides which candidates tie.

use rand::Rng;
use rayon::prelude::*;

use crate::ellpack::{EllpackMatrix, UnpackedBins, UnpackedData};
use crate::fixed_point::GradientQuantiser;
use crate::param::TreeParams;
use crate::phases::PhaseTimes;
use crate::quantile::QuantileCuts;
use crate::tree::grow::{self, ChildHistograms, Expansion, GrowBackend, RowOrder, SplitRequest};
use crate::tree::Tree;
use crate::Result;
use std::time::Instant;

/// How the hist builder accumulates gradient sums. Training uses [`HistogramPrecision::FixedPoint`];
/// the others exist for the precision experiment (`cargo xtask precision`), which measures how much
/// trees change when histograms are summed in floating point in an uncontrolled order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HistogramPrecision {
    /// 64-bit fixed point (XGBoost's rounding factor): exact, order-independent sums.
    #[default]
    FixedPoint,
    /// `f64` sums of the `f32` gradients (XGBoost's CPU `hist` before fixed point).
    F64,
    /// `f32` sums (XGBoost's early GPU `hist`, Mitchell & Frank 2017).
    F32,
}

impl HistogramPrecision {
    /// `fixed`, `f64` or `f32`.
    pub fn name(self) -> &'static str {
        match self {
            HistogramPrecision::FixedPoint => "fixed",
            HistogramPrecision::F64 => "f64",
            HistogramPrecision::F32 => "f32",
        }
    }
}

use boost_kernels::oblivious;
use boost_kernels::partition::build_left;
/// The sum types of the builder (`boost_kernels::split::GradientSum`): fixed point in training,
/// floats for the precision experiment.
pub use boost_kernels::split::GradientSum as HistogramSum;
use boost_kernels::categorical::{self, CategorySet};
use boost_kernels::split::{self, Parent, SliceBins, Split, SplitKind, SplitParams};
pub use boost_kernels::split::{calc_gain, calc_weight, leaf_value};

/// Rows per parallel task of a histogram build.
const ROWS_PER_TASK: usize = 16 * 1024;

/// The result of one tree build.
pub struct BuiltTree {
    /// The tree.
    pub tree: Tree,
    /// The leaf (node id) each training row ends in.
    pub positions: Vec<u32>,
    /// Wall time of the build's steps (`tree: histograms`, ...), as the GPU backend reports its own.
    pub phases: PhaseTimes,
}

/// The quantised training rows as the builder reads them: consecutive pages of rows
/// ([`PageView`]). In-core training has one page, the whole matrix unpacked; external memory
/// ([`crate::external`]) gives its packed pages one at a time, from host memory or its mapped
/// cache file. Every step visits the pages in turn (a node's rows are increasing, so its rows of a
/// page are a range), and fixed-point sums make the tree the same for any split into pages.
pub trait BinPages: Sync {
    /// Rows of all the pages.
    fn rows(&self) -> usize;
    /// Calls `visit(first row, page)` on every page, in row order.
    fn visit(&self, visit: &mut dyn FnMut(usize, PageView<'_>)) -> Result<()>;
    /// The one page, when all rows are one page in memory (in core): the builder then works node
    /// by node, each node's steps in one task, their data still in cache.
    fn single(&self) -> Option<PageView<'_>> {
        None
    }
}

/// A page of rows as the builder reads it: unpacked (the in-core matrix, unpacked once for the
/// fastest loops), or packed (an external page, read in place: unpacking it at every visit would
/// cost more than the reads).
#[derive(Clone, Copy)]
pub enum PageView<'a> {
    /// Bins unpacked to 16 or 32 bits (and by column).
    Unpacked(&'a UnpackedBins),
    /// Bit-packed ELLPACK symbols.
    Packed(EllpackMatrix<&'a [u64]>),
}

impl PageView<'_> {
    fn rows(&self) -> usize {
        match self {
            PageView::Unpacked(page) => page.rows,
            PageView::Packed(page) => page.rows,
        }
    }
}

/// The in-core matrix: one page.
impl BinPages for UnpackedBins {
    fn rows(&self) -> usize {
        self.rows
    }

    fn visit(&self, visit: &mut dyn FnMut(usize, PageView<'_>)) -> Result<()> {
        visit(0, PageView::Unpacked(self));
        Ok(())
    }

    fn single(&self) -> Option<PageView<'_>> {
        Some(PageView::Unpacked(self))
    }
}

/// Pages shared with the caller (an external-memory matrix).
impl<T: BinPages + Send> BinPages for std::sync::Arc<T> {
    fn rows(&self) -> usize {
        self.as_ref().rows()
    }

    fn visit(&self, visit: &mut dyn FnMut(usize, PageView<'_>)) -> Result<()> {
        self.as_ref().visit(visit)
    }

    fn single(&self) -> Option<PageView<'_>> {
        self.as_ref().single()
    }
}

/// The range of increasing `rows` that lie in the page of `page_rows` rows from row `first`.
fn rows_in_page(rows: &[u32], first: usize, page_rows: usize) -> std::ops::Range<usize> {
    let below = |end: usize| rows.partition_point(|&r| (r as usize) < end);
    below(first)..below(first + page_rows)
}

/// Builds one tree from gradients (one a row of `pages`), fixed point in training.
pub struct HistBuilder<'a> {
    /// The quantised training rows, read by the inner loops.
    pub pages: &'a dyn BinPages,
    /// The cuts the bins came from.
    pub cuts: &'a QuantileCuts,
    /// The tree parameters.
    pub params: &'a TreeParams,
    /// Converts fixed-point sums to floats (unused by float sums).
    pub quantiser: &'a GradientQuantiser,
}

impl HistBuilder<'_> {
    /// Grows a tree over `features` (the tree's sampled columns), drawing further column samples
    /// from `rng`: the shared expansion driver ([`grow::grow`]) over this builder as its backend.
    /// `gradients` are fixed point in training ([`HistogramSum`] says why others exist).
    /// Fails only when an external-memory page cannot be read.
    pub fn build<S: HistogramSum>(&self, gradients: &[S], features: &[u32], rng: &mut impl Rng) -> Result<BuiltTree> {
        let n = self.pages.rows();
        let mut backend = CpuBackend {
            builder: self,
            gradients,
            order: RowOrder::new(n),
            hists: vec![None],
            phases: PhaseTimes::default(),
        };
        let tree = grow::grow(&mut backend, self.params, self.quantiser, features, n, rng)?;
        let mut phases = backend.phases;
        let positions = phases.time("tree: positions", || backend.order.positions(&tree));
        Ok(BuiltTree { tree, positions, phases })
    }

    /// Adds the gradient histogram (one sum per global bin) of `rows` (increasing) of the page
    /// from row `first` to `hist` (`None`: none yet).
    fn add_histogram<S: HistogramSum>(
        &self,
        hist: &mut Option<Vec<S>>,
        (first, page): (usize, PageView<'_>),
        gradients: &[S],
        rows: &[u32],
    ) {
        let rows = &rows[rows_in_page(rows, first, page.rows())];
        let this = match page {
            PageView::Unpacked(page) => match &page.data {
                UnpackedData::U16(bins) => self.histogram_of(page, bins, first, gradients, rows),
                UnpackedData::U32(bins) => self.histogram_of(page, bins, first, gradients, rows),
            },
            PageView::Packed(page) => self.histogram_of_packed(&page, first, gradients, rows),
        };
        match hist {
            Some(sum) => sum.iter_mut().zip(&this).for_each(|(a, &b)| *a = S::add(*a, b)),
            None => *hist = Some(this),
        }
    }

    /// The histogram of `rows` (all of the page from row `first`).
    fn histogram_of<B: Copy + Into<u32> + Sync, S: HistogramSum>(
        &self,
        page: &UnpackedBins,
        bins: &[B],
        first: usize,
        gradients: &[S],
        rows: &[u32],
    ) -> Vec<S> {
        let (stride, by_feature, null) = (page.stride, page.by_feature, page.null);
        // The page's own rows.
        let local = |row: u32| row as usize - first;
        let accumulate = |hist: &mut Vec<S>, chunk: &[u32]| {
            for (i, &row) in chunk.iter().enumerate() {
                // A node's rows are scattered over the matrix after a few partitions: fetch the bins
                // and gradient of a row a few iterations ahead.
                if let Some(&ahead) = chunk.get(i + PREFETCH_DISTANCE) {
                    // A row's entries may straddle two cache lines: ask for both.
                    let entries = &bins[local(ahead) * stride..(local(ahead) + 1) * stride];
                    prefetch(entries.as_ptr());
                    if let Some(last) = entries.last() {
                        prefetch(last);
                    }
                    prefetch(&gradients[ahead as usize]);
                }
                let g = gradients[row as usize];
                if g == S::ZERO {
                    continue;
                }
                let entries = &bins[local(row) * stride..(local(row) + 1) * stride];
                for &b in entries {
                    let b: u32 = b.into();
                    if b == null {
                        // A missing feature's slot, or the padding after a sparse row's entries.
                        if by_feature {
                            continue;
                        }
                        break;
                    }
                    let h = &mut hist[b as usize];
                    *h = S::add(*h, g);
                }
            }
        };
        self.histogram_by_tasks(rows, accumulate)
    }

    /// The histogram of `rows` (all of the packed page from row `first`), each row's symbols read
    /// in place.
    fn histogram_of_packed<S: HistogramSum>(
        &self,
        page: &EllpackMatrix<&[u64]>,
        first: usize,
        gradients: &[S],
        rows: &[u32],
    ) -> Vec<S> {
        let accumulate = |hist: &mut Vec<S>, chunk: &[u32]| {
            for &row in chunk {
                let g = gradients[row as usize];
                if g != S::ZERO {
                    page.for_each_bin(row as usize - first, |b| hist[b as usize] = S::add(hist[b as usize], g));
                }
            }
        };
        self.histogram_by_tasks(rows, accumulate)
    }

    /// `accumulate(histogram, rows)` over tasks of [`ROWS_PER_TASK`] rows, their histograms added.
    fn histogram_by_tasks<S: HistogramSum>(
        &self,
        rows: &[u32],
        accumulate: impl Fn(&mut Vec<S>, &[u32]) + Sync,
    ) -> Vec<S> {
        let total_bins = self.cuts.total_bins();
        if rows.len() <= ROWS_PER_TASK {
            let mut hist = vec![S::ZERO; total_bins];
            accumulate(&mut hist, rows);
            return hist;
        }
        rows.par_chunks(ROWS_PER_TASK)
            .fold(
                || vec![S::ZERO; total_bins],
                |mut hist, chunk| {
                    accumulate(&mut hist, chunk);
                    hist
                },
            )
            .reduce(
                || vec![S::ZERO; total_bins],
                |mut a, b| {
                    a.iter_mut().zip(&b).for_each(|(x, &y)| *x = S::add(*x, y));
                    a
                },
            )
    }

    /// The best split of node `r` from its histogram, if any passes the limits: each feature's
    /// bins scanned by `boost_kernels::split` (the kernels' code), features in increasing order.
    fn evaluate<S: HistogramSum>(&self, hist: &[S], r: &SplitRequest<S>) -> Option<Split<S>> {
        let p = self.params.split();
        let per_feature: Vec<Option<Split<S>>> = r
            .features
            .par_iter()
            .enumerate()
            .map(|(k, &f)| self.evaluate_feature(hist, r.sum, f as usize, &r.parent_of(k), &p))
            .collect();
        let mut best: Option<Split<S>> = None;
        for s in per_feature.into_iter().flatten() {
            if split::replaces(&s, best.as_ref()) {
                best = Some(s);
            }
        }
        best.filter(|b| split::is_valid(b, &p))
    }

    fn evaluate_feature<S: HistogramSum>(
        &self,
        hist: &[S],
        total: S,
        f: usize,
        parent: &Parent,
        p: &SplitParams,
    ) -> Option<Split<S>> {
        let cuts = self.cuts;
        let (begin, end) = (cuts.cut_ptrs[f] as usize, cuts.cut_ptrs[f + 1] as usize);
        if begin == end {
            return None;
        }
        let bins = SliceBins {
            feature: f as u32,
            first_bin: begin as u32,
            hist: &hist[begin..end],
            cut_values: &cuts.cut_values[begin..end],
        };
        let q = self.quantiser;
        if !cuts.is_categorical(f) {
            return split::best_split_of_feature(&bins, total, parent, p, q);
        }
        let c = self.params.categorical();
        if categorical::use_one_hot(end - begin, &c) {
            return categorical::best_one_hot_split(&bins, total, parent, p, q);
        }
        let order = category_order(&hist[begin..end], p, q);
        categorical::best_partition_split(&bins, |i| order[i] as usize, total, parent, p, &c, q)
    }

    /// The categories `split` (categorical, of a node with histogram `hist`) sends right, as a
    /// bitset over its feature's bins.
    fn categories<S: HistogramSum>(&self, hist: &[S], split: &Split<S>) -> Vec<u32> {
        let f = split.feature as usize;
        let (begin, end) = (self.cuts.cut_ptrs[f] as usize, self.cuts.cut_ptrs[f + 1] as usize);
        let mut words = vec![0u32; categorical::words_for(end - begin)];
        match split.kind {
            SplitKind::OneHot { bin } => categorical::insert(&mut words, bin as usize),
            SplitKind::Partition { count } => {
                let order = category_order(&hist[begin..end], &self.params.split(), self.quantiser);
                let (count, left) = (count as usize, split.default_left);
                let edge = &order[categorical::partition_edge(order.len(), count, left)];
                categorical::partition_set(&mut words, order.len(), count, left, edge);
            }
            SplitKind::Numeric => {}
        }
        words
    }

    /// The split of an oblivious tree's level: nodes with histograms `hists` and sums `totals`,
    /// each feature's candidates summed over the nodes (`boost_kernels::oblivious`, the kernels'
    /// code), features in increasing order.
    fn evaluate_level<S: HistogramSum>(&self, hists: &[&[S]], totals: &[S], features: &[u32]) -> Option<Vec<Split<S>>> {
        let (p, q, cuts) = (self.params.split(), self.quantiser, self.cuts);
        let parent_gains: Vec<f32> = totals
            .iter()
            .map(|t| {
                let t = t.to_float(q);
                calc_gain(&p, t.grad, t.hess)
            })
            .collect();
        let range = |f: usize| (cuts.cut_ptrs[f] as usize, cuts.cut_ptrs[f + 1] as usize);
        // Each node's inclusive prefix sums of the feature's bins.
        let prefixes = |f: usize| -> Vec<Vec<S>> {
            let (begin, end) = range(f);
            let scan = |hist: &&[S]| {
                hist[begin..end]
                    .iter()
                    .scan(S::ZERO, |sum, &h| {
                        *sum = S::add(*sum, h);
                        Some(*sum)
                    })
                    .collect()
            };
            hists.iter().map(scan).collect()
        };
        let per_feature: Vec<Option<oblivious::LevelBest>> = features
            .par_iter()
            .map(|&f| {
                let (begin, end) = range(f as usize);
                let n = end - begin;
                if n == 0 {
                    return None;
                }
                let prefixes = prefixes(f as usize);
                let missing = prefixes.iter().zip(totals).any(|(prefix, &total)| prefix[n - 1] != total);
                oblivious::best_of_feature(f, n, missing, |c| {
                    prefixes.iter().zip(totals).zip(&parent_gains).fold(0.0f64, |sum, ((prefix, &total), &gain)| {
                        let (left, right) = oblivious::candidate_sums(c, n, total, |b| prefix[b]);
                        sum + oblivious::share(left, right, gain, &p, q) as f64
                    })
                })
            })
            .collect();
        let best = oblivious::first_best(per_feature.into_iter().flatten()).filter(|b| b.is_valid(&p, hists.len()))?;
        let f = best.feature as usize;
        let (begin, end) = range(f);
        let n = end - begin;
        let prefixes = prefixes(f);
        let splits = prefixes
            .iter()
            .zip(totals)
            .zip(&parent_gains)
            .map(|((prefix, &total), &gain)| {
                let children = oblivious::candidate_sums(best.candidate as usize, n, total, |b| prefix[b]);
                best.node_split(n, begin, |b| cuts.cut_values[begin + b], children, gain, &p, q)
            })
            .collect();
        Some(splits)
    }

    /// Whether each of a node's `rows` (increasing) that lie in the page from row `first` goes
    /// left by the node's split, written to their places in `out` (a flag a node row).
    fn page_flags<S: Sync>(&self, (first, page): (usize, PageView<'_>), rows: &[u32], e: &Expansion<S>, out: &mut [bool]) {
        let range = rows_in_page(rows, first, page.rows());
        let (rows, out) = (&rows[range.clone()], &mut out[range]);
        let split = &e.split;
        let first_bin = self.cuts.cut_ptrs[split.feature as usize];
        let set = CategorySet { words: &e.categories };
        let categorical = split.kind.is_categorical();
        // A present value's global bin: left at or below the threshold, or when not in the set.
        let goes_left = |bin: u32| {
            if categorical {
                !set.contains(bin - first_bin)
            } else {
                (bin as i64) <= split.last_left_bin
            }
        };
        let d = Decision { goes_left, default_left: split.default_left };
        let page = match page {
            PageView::Unpacked(page) => page,
            PageView::Packed(page) => return self.flags_of_packed((first, &page), rows, split.feature, &d, out),
        };
        let at = (first, page);
        match (&page.columns, &page.data) {
            (Some(UnpackedData::U16(columns)), _) => self.flags_of_column(at, columns, rows, split.feature, &d, out),
            (Some(UnpackedData::U32(columns)), _) => self.flags_of_column(at, columns, rows, split.feature, &d, out),
            (None, UnpackedData::U16(bins)) => self.flags_of_rows(at, bins, rows, split.feature, &d, out),
            (None, UnpackedData::U32(bins)) => self.flags_of_rows(at, bins, rows, split.feature, &d, out),
        }
    }

    /// Whether each row goes left, from the packed page's symbols.
    fn flags_of_packed<F: Fn(u32) -> bool + Sync>(
        &self,
        (first, page): (usize, &EllpackMatrix<&[u64]>),
        rows: &[u32],
        feature: u32,
        d: &Decision<F>,
        out: &mut [bool],
    ) {
        let goes_left = |row: u32| match page.bin_of(row as usize - first, feature as usize, self.cuts) {
            Some(bin) => (d.goes_left)(bin),
            None => d.default_left,
        };
        fill_flags(rows, out, |chunk, out| {
            chunk.iter().zip(out.iter_mut()).for_each(|(&row, flag)| *flag = goes_left(row))
        })
    }

    /// Whether each row goes left, from the split feature's column (one slot a feature).
    fn flags_of_column<B: Copy + Into<u32> + Sync, F: Fn(u32) -> bool + Sync>(
        &self,
        (first, page): (usize, &UnpackedBins),
        columns: &[B],
        rows: &[u32],
        feature: u32,
        d: &Decision<F>,
        out: &mut [bool],
    ) {
        let n = page.rows;
        let f = feature as usize;
        let column = &columns[f * n..(f + 1) * n];
        let null = page.null;
        let goes_left = |row: u32| {
            let b: u32 = column[row as usize - first].into();
            if b == null {
                d.default_left
            } else {
                (d.goes_left)(b)
            }
        };
        fill_flags(rows, out, |chunk, out| {
            chunk.iter().zip(out.iter_mut()).for_each(|(&row, flag)| *flag = goes_left(row))
        })
    }

    /// Whether each row goes left, from the rows' entries (sparse layouts).
    fn flags_of_rows<B: Copy + Into<u32> + Sync, F: Fn(u32) -> bool + Sync>(
        &self,
        (first, page): (usize, &UnpackedBins),
        bins: &[B],
        rows: &[u32],
        feature: u32,
        d: &Decision<F>,
        out: &mut [bool],
    ) {
        let (stride, by_feature, null) = (page.stride, page.by_feature, page.null);
        let f = feature as usize;
        let (lo, hi) = (self.cuts.cut_ptrs[f], self.cuts.cut_ptrs[f + 1]);
        let bin_of = |row: usize| -> Option<u32> {
            let entries = &bins[row * stride..(row + 1) * stride];
            if by_feature {
                let b: u32 = entries[f].into();
                return (b != null).then_some(b);
            }
            // Present entries in feature order, nulls (the largest symbol) last.
            let k = entries.partition_point(|&b| b.into() < lo);
            entries.get(k).map(|&b| b.into()).filter(|&b| b < hi)
        };
        let goes_left = |row: u32| match bin_of(row as usize - first) {
            Some(bin) => (d.goes_left)(bin),
            None => d.default_left,
        };
        // Rows are scattered over the matrix: ask for the entry a few rows ahead.
        let slot = if by_feature { f } else { 0 };
        fill_flags(rows, out, |chunk, out| {
            for (i, (&row, flag)) in chunk.iter().zip(out.iter_mut()).enumerate() {
                if let Some(&ahead) = chunk.get(i + PREFETCH_DISTANCE) {
                    prefetch(bins[(ahead as usize - first) * stride + slot..].as_ptr());
                }
                *flag = goes_left(row);
            }
        })
    }
}

/// A node's categories of one feature (the feature's slice of its histogram) in the order partition
/// splits take them: increasing [`categorical::sort_key`], ties in bin order (a stable sort, as
/// XGBoost's and the device's radix sort).
fn category_order<S: HistogramSum>(hist: &[S], p: &SplitParams, q: &GradientQuantiser) -> Vec<u32> {
    let keys: Vec<f32> = hist.iter().map(|&h| categorical::sort_key(h, p, q)).collect();
    let mut order: Vec<u32> = (0..hist.len() as u32).collect();
    order.sort_by(|&a, &b| keys[a as usize].total_cmp(&keys[b as usize]));
    order
}

/// Where a split sends a row: by its present value's global bin, or to the default side.
struct Decision<F> {
    goes_left: F,
    default_left: bool,
}

/// `decide(chunk, flags)` over `rows` and their flags `out`, in parallel tasks when there are many.
fn fill_flags(rows: &[u32], out: &mut [bool], decide: impl Fn(&[u32], &mut [bool]) + Sync) {
    if rows.len() > ROWS_PER_TASK {
        rows.par_chunks(ROWS_PER_TASK).zip(out.par_chunks_mut(ROWS_PER_TASK)).for_each(|(c, out)| decide(c, out));
    } else {
        decide(rows, out);
    }
}

/// Stable partition of a node's rows by their flags; returns how many go left.
fn partition_by(rows: &mut [u32], goes_left: &[bool]) -> usize {
    if rows.len() > ROWS_PER_TASK {
        parallel_stable_partition(rows, goes_left)
    } else {
        grow::stable_partition(rows, goes_left)
    }
}

/// [`grow::stable_partition`] in parallel tasks: each task's rows go to the places its count of
/// left rows and those of the tasks before it give (the same order as the sequential pass).
fn parallel_stable_partition(rows: &mut [u32], goes_left: &[bool]) -> usize {
    let lefts: Vec<usize> = goes_left.par_chunks(ROWS_PER_TASK).map(|f| f.iter().filter(|&&l| l).count()).collect();
    let n_left: usize = lefts.iter().sum();
    let mut out = vec![0u32; rows.len()];
    let (mut left, mut right) = out.split_at_mut(n_left);
    let mut places = Vec::with_capacity(lefts.len());
    for (chunk, &chunk_left) in goes_left.chunks(ROWS_PER_TASK).zip(&lefts) {
        let (l, rest_left) = std::mem::take(&mut left).split_at_mut(chunk_left);
        let (r, rest_right) = std::mem::take(&mut right).split_at_mut(chunk.len() - chunk_left);
        places.push((l, r));
        (left, right) = (rest_left, rest_right);
    }
    rows.par_chunks(ROWS_PER_TASK).zip(goes_left.par_chunks(ROWS_PER_TASK)).zip(places).for_each(
        |((chunk, flags), (l, r))| {
            let (mut i, mut j) = (0, 0);
            for (&row, &goes) in chunk.iter().zip(flags) {
                if goes {
                    l[i] = row;
                    i += 1;
                } else {
                    r[j] = row;
                    j += 1;
                }
            }
        },
    );
    rows.par_chunks_mut(ROWS_PER_TASK).zip(out.par_chunks(ROWS_PER_TASK)).for_each(|(d, s)| d.copy_from_slice(s));
    n_left
}

/// Rows ahead whose data [`prefetch`] requests during a histogram build.
const PREFETCH_DISTANCE: usize = 32;

/// Asks for the cache line at `p` (a hint; no effect on results).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The CPU backend of the expansion driver: a node's rows are a range of one row array, kept in
/// order by stable partitions; histograms are per node, built over rayon's threads.
struct CpuBackend<'b, 'a, S> {
    builder: &'b HistBuilder<'a>,
    gradients: &'b [S],
    order: RowOrder,
    hists: Vec<Option<Vec<S>>>,
    phases: PhaseTimes,
}

impl<S> CpuBackend<'_, '_, S> {
    /// A pair's children, the one built from rows first (the one derived by subtraction second).
    fn smaller_first(&self, c: &ChildHistograms) -> (usize, usize) {
        let rows = |node| {
            let (begin, end) = self.order.range(node);
            (end - begin) as u64
        };
        if build_left(rows(c.left), rows(c.right)) {
            (c.left, c.right)
        } else {
            (c.right, c.left)
        }
    }
}

impl<S: HistogramSum> GrowBackend<S> for CpuBackend<'_, '_, S> {
    type Error = crate::Error;

    fn total(&mut self) -> Result<S> {
        let start = Instant::now();
        let total = sum_rows(self.gradients, &self.order.rows);
        self.phases.add("tree: total", start.elapsed());
        Ok(total)
    }

    fn root_histogram(&mut self) -> Result<()> {
        let start = Instant::now();
        let (builder, gradients, rows) = (self.builder, self.gradients, &self.order.rows);
        let mut hist = None;
        builder.pages.visit(&mut |first, page| builder.add_histogram(&mut hist, (first, page), gradients, rows))?;
        self.hists[0] = Some(hist.unwrap_or_else(|| vec![S::ZERO; builder.cuts.total_bins()]));
        self.phases.add("tree: histograms", start.elapsed());
        Ok(())
    }

    fn partition(&mut self, expanded: &[Expansion<S>]) -> Result<()> {
        let start = Instant::now();
        self.partition_rows(expanded)?;
        self.phases.add("tree: partitions", start.elapsed());
        Ok(())
    }

    fn children_histograms(&mut self, children: &[ChildHistograms]) -> Result<()> {
        let start = Instant::now();
        self.build_children(children)?;
        self.phases.add("tree: histograms", start.elapsed());
        Ok(())
    }

    fn evaluate(&mut self, nodes: &[SplitRequest<S>]) -> Result<Vec<Option<Split<S>>>> {
        let start = Instant::now();
        let splits = nodes
            .par_iter()
            .map(|r| {
                let hist = self.hists[r.node].as_ref().expect("a node is evaluated after its histogram is built");
                self.builder.evaluate(hist, r)
            })
            .collect();
        self.phases.add("tree: evaluation", start.elapsed());
        Ok(splits)
    }

    fn evaluate_level(&mut self, nodes: &[(usize, S)], features: &[u32]) -> Result<Option<Vec<Split<S>>>> {
        let start = Instant::now();
        let hists: Vec<&[S]> = nodes
            .iter()
            .map(|&(node, _)| self.hists[node].as_deref().expect("a level is evaluated after its histograms are built"))
            .collect();
        let totals: Vec<S> = nodes.iter().map(|&(_, sum)| sum).collect();
        let splits = self.builder.evaluate_level(&hists, &totals, features);
        self.phases.add("tree: evaluation", start.elapsed());
        Ok(splits)
    }

    fn release(&mut self, node: usize) {
        if let Some(hist) = self.hists.get_mut(node) {
            *hist = None;
        }
    }

    fn categories(&mut self, node: usize, split: &Split<S>) -> Result<Vec<u32>> {
        let hist = self.hists[node].as_ref().expect("a node's histogram is kept until it is split");
        Ok(self.builder.categories(hist, split))
    }
}

impl<S: HistogramSum> CpuBackend<'_, '_, S> {
    /// Every expanded node's rows split between its children, the nodes in parallel: their flags
    /// page by page, then the partitions.
    fn partition_rows(&mut self, expanded: &[Expansion<S>]) -> Result<()> {
        let (builder, order) = (self.builder, &self.order);
        let single = builder.pages.single();
        // Several pages: every node's flags first, page by page (one page: in each node's task).
        let mut flags: Vec<Vec<bool>> = Vec::new();
        if single.is_none() {
            flags = expanded.iter().map(|e| vec![false; order.node_rows(e.node).len()]).collect();
            builder.pages.visit(&mut |first, page| {
                flags.par_iter_mut().zip(expanded).for_each(|(out, e)| {
                    builder.page_flags((first, page), order.node_rows(e.node), e, out);
                })
            })?;
        }
        // Every expanded node's rows (disjoint ranges of `rows`) in parallel.
        let mut ranges: Vec<(usize, usize, usize)> = expanded
            .iter()
            .enumerate()
            .map(|(i, e)| (self.order.range(e.node).0, self.order.range(e.node).1, i))
            .collect();
        ranges.sort_unstable();
        let mut slices: Vec<(&mut [u32], usize)> = Vec::with_capacity(ranges.len());
        let mut rest: &mut [u32] = &mut self.order.rows;
        let mut offset = 0;
        for &(begin, end, i) in &ranges {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(begin - offset);
            let (mine, tail) = tail.split_at_mut(end - begin);
            slices.push((mine, i));
            rest = tail;
            offset = end;
        }
        let mut lefts = vec![0usize; expanded.len()];
        let counted: Vec<(usize, usize)> = slices
            .into_par_iter()
            .map(|(slice, i)| match single {
                Some(page) => {
                    let mut goes_left = vec![false; slice.len()];
                    builder.page_flags((0, page), slice, &expanded[i], &mut goes_left);
                    (i, partition_by(slice, &goes_left))
                }
                None => (i, partition_by(slice, &flags[i])),
            })
            .collect();
        for (i, n_left) in counted {
            lefts[i] = n_left;
        }
        self.order.split(expanded, &lefts);
        let slots = expanded.iter().map(|e| e.left.max(e.right) + 1).max().unwrap_or(0);
        if self.hists.len() < slots {
            self.hists.resize(slots, None);
        }
        Ok(())
    }

    /// The children's histograms, page by page: the smaller from its rows, the other by
    /// subtraction from the parent's when it is kept (else from its rows too). With one page,
    /// each pair in one task.
    fn build_children(&mut self, children: &[ChildHistograms]) -> Result<()> {
        let parents: Vec<Option<Vec<S>>> = children.iter().map(|c| self.hists[c.parent].take()).collect();
        let this = &*self;
        // A pair's histograms summed so far: the smaller child's, the larger's (built from rows).
        type Partial<S> = (Option<Vec<S>>, Option<Vec<S>>);
        let add_page = |(small_hist, large_hist): &mut Partial<S>, c: &ChildHistograms, has_parent: bool, at: (usize, PageView<'_>)| {
            let (small, large) = this.smaller_first(c);
            let add = |hist: &mut Option<Vec<S>>, node| {
                this.builder.add_histogram(hist, at, this.gradients, this.order.node_rows(node))
            };
            add(small_hist, small);
            if !has_parent {
                add(large_hist, large);
            }
        };
        let finish = |(small_hist, large_hist): Partial<S>, parent: Option<Vec<S>>| {
            let zeros = || vec![S::ZERO; this.builder.cuts.total_bins()];
            let small_hist = small_hist.unwrap_or_else(zeros);
            let large_hist = match parent {
                Some(mut h) => {
                    h.iter_mut().zip(&small_hist).for_each(|(a, &b)| *a = S::sub(*a, b));
                    h
                }
                None => large_hist.unwrap_or_else(zeros),
            };
            (small_hist, large_hist)
        };
        let built: Vec<(Vec<S>, Vec<S>)> = match this.builder.pages.single() {
            Some(page) => children
                .par_iter()
                .zip(parents)
                .map(|(c, parent)| {
                    let mut partial = (None, None);
                    add_page(&mut partial, c, parent.is_some(), (0, page));
                    finish(partial, parent)
                })
                .collect(),
            None => {
                let mut partials: Vec<Partial<S>> = children.iter().map(|_| (None, None)).collect();
                this.builder.pages.visit(&mut |first, page| {
                    partials.par_iter_mut().zip(children).zip(&parents).for_each(|((partial, c), parent)| {
                        add_page(partial, c, parent.is_some(), (first, page))
                    })
                })?;
                partials.into_par_iter().zip(parents).map(|(partial, parent)| finish(partial, parent)).collect()
            }
        };
        for (c, (small_hist, large_hist)) in children.iter().zip(built) {
            let (small, large) = self.smaller_first(c);
            self.hists[small] = Some(small_hist);
            self.hists[large] = Some(large_hist);
        }
        Ok(())
    }
}

/// The gradients of `rows` summed in parallel tasks of fixed size (exact in fixed point, so any
/// order gives the same sum; the float experiments' sums depend on the task size only).
fn sum_rows<S: HistogramSum>(gradients: &[S], rows: &[u32]) -> S {
    let sum = |chunk: &[u32]| chunk.iter().fold(S::ZERO, |a, &r| S::add(a, gradients[r as usize]));
    let partial: Vec<S> = rows.par_chunks(ROWS_PER_TASK).map(sum).collect();
    partial.into_iter().fold(S::ZERO, S::add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed_point;
    use crate::param::GrowPolicy;
    use primitives::ops::GradientPair;

    type Fixed = GradientPair<i64>;
    use crate::data::{DenseMatrix, FeatureMatrix};
    use crate::ellpack::EllpackMatrix;
    use rand::SeedableRng;

    struct Case {
        features: FeatureMatrix,
        values: Vec<f32>,
        cols: usize,
        gradients: Vec<GradientPair<f32>>,
    }

    fn case(seed: u64, rows: usize, cols: usize, missing: f64) -> Case {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let values: Vec<f32> = (0..rows * cols)
            .map(|_| if rng.gen_bool(missing) { f32::NAN } else { (rng.gen_range(-50..50) as f32) * 0.25 })
            .collect();
        let gradients = (0..rows)
            .map(|i| {
                let x = values[i * cols];
                let signal = if x.is_nan() { 0.7 } else { (x * 0.3).sin() };
                GradientPair::new(signal + rng.gen_range(-0.5..0.5), rng.gen_range(0.05..0.3))
            })
            .collect();
        Case { features: FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values.clone())), values, cols, gradients }
    }

    fn build(c: &Case, params: &TreeParams, max_bin: usize) -> (BuiltTree, GradientQuantiser) {
        let cuts = QuantileCuts::build(&c.features, &[], max_bin);
        let matrix = EllpackMatrix::new(&c.features, &cuts);
        let q = GradientQuantiser::new(&c.gradients);
        let fixed: Vec<Fixed> = c.gradients.iter().map(|&g| q.to_fixed(g)).collect();
        let features: Vec<u32> = (0..c.cols as u32).collect();
        let bins = matrix.unpack(&cuts);
        let builder = HistBuilder { pages: &bins, cuts: &cuts, params, quantiser: &q };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(0);
        (builder.build(&fixed, &features, &mut rng).unwrap(), q)
    }

    /// The best root split found by trying every threshold on the raw values (no histogram).
    fn brute_force_root(c: &Case, params: &TreeParams, max_bin: usize) -> (u32, f32, bool, f32) {
        let cuts = QuantileCuts::build(&c.features, &[], max_bin);
        let q = GradientQuantiser::new(&c.gradients);
        let fixed: Vec<Fixed> = c.gradients.iter().map(|&g| q.to_fixed(g)).collect();
        let rows = c.gradients.len();
        let total = fixed.iter().fold(Fixed::ZERO, |a, &b| fixed_point::add(a, b));
        let t = q.to_float(total);
        let parent = calc_gain(&params.split(), t.grad, t.hess);
        let mut best = (0, 0.0, false, f32::NEG_INFINITY);
        for f in 0..c.cols {
            let (b0, b1) = (cuts.cut_ptrs[f] as usize, cuts.cut_ptrs[f + 1] as usize);
            let mut thresholds: Vec<(f32, bool)> = cuts.cut_values[b0..b1].iter().map(|&v| (v, false)).collect();
            thresholds.push((boost_kernels::split::NO_VALUE_LEFT, true));
            thresholds.extend(cuts.cut_values[b0..b1 - 1].iter().rev().map(|&v| (v, true)));
            let any_missing = (0..rows).any(|i| c.values[i * c.cols + f].is_nan());
            for (threshold, default_left) in thresholds {
                if default_left && !any_missing {
                    continue;
                }
                let mut left = Fixed::ZERO;
                for (i, &g) in fixed.iter().enumerate() {
                    let v = c.values[i * c.cols + f];
                    if if v.is_nan() { default_left } else { v < threshold } {
                        left = fixed_point::add(left, g);
                    }
                }
                let (l, r) = (q.to_float(left), q.to_float(fixed_point::sub(total, left)));
                if l.hess < params.min_child_weight as f64 || r.hess < params.min_child_weight as f64 {
                    continue;
                }
                let gain =
                    calc_gain(&params.split(), l.grad, l.hess) + calc_gain(&params.split(), r.grad, r.hess) - parent;
                if gain > best.3 {
                    best = (f as u32, threshold, default_left, gain);
                }
            }
        }
        best
    }

    #[test]
    fn root_split_matches_brute_force_over_raw_thresholds() {
        for (seed, missing, alpha, mds, max_bin) in
            [(1, 0.0, 0.0, 0.0, 256), (2, 0.2, 0.0, 0.0, 16), (3, 0.3, 0.5, 0.0, 32), (4, 0.1, 0.0, 0.7, 8)]
        {
            let c = case(seed, 3000, 5, missing);
            let params =
                TreeParams { max_depth: 1, alpha, max_delta_step: mds, min_child_weight: 2.0, ..Default::default() };
            let (built, _) = build(&c, &params, max_bin);
            let (feature, threshold, default_left, gain) = brute_force_root(&c, &params, max_bin);
            let tree = &built.tree;
            assert_eq!(tree.len(), 3, "seed {seed}: the root splits");
            assert_eq!(
                (tree.split_indices[0], tree.split_conditions[0], tree.default_left[0]),
                (feature, threshold, default_left),
                "seed {seed}"
            );
            assert_eq!(tree.loss_changes[0], gain, "seed {seed}");
        }
    }

    #[test]
    fn positions_agree_with_prediction_and_sums_with_the_rows() {
        for policy in [GrowPolicy::Depthwise, GrowPolicy::Lossguide] {
            let c = case(9, 5000, 6, 0.15);
            let params = TreeParams { max_depth: 5, max_leaves: 20, grow_policy: policy, ..Default::default() };
            let (built, _) = build(&c, &params, 64);
            let tree = &built.tree;
            assert!(tree.len() > 7, "{policy:?}: a real tree ({} nodes)", tree.len());
            assert!(tree.max_depth() <= 5);
            let leaves = (0..tree.len()).filter(|&n| tree.is_leaf(n)).count();
            assert!(leaves <= 20, "{policy:?}: {leaves} leaves");
            let mut hess = vec![0f64; tree.len()];
            for i in 0..c.gradients.len() {
                let row = &c.values[i * c.cols..(i + 1) * c.cols];
                let leaf = tree.leaf_index(|f| row[f]);
                assert_eq!(built.positions[i] as usize, leaf, "{policy:?}: row {i}");
                hess[leaf] += c.gradients[i].hess as f64;
            }
            for n in (0..tree.len()).filter(|&n| tree.is_leaf(n)) {
                assert!((hess[n] - tree.sum_hessian[n] as f64).abs() < 1e-3, "{policy:?}: leaf {n}");
                assert!(tree.sum_hessian[n] >= params.min_child_weight);
            }
        }
    }

    /// The parallel partition keeps the sequential one's order, over several tasks.
    #[test]
    fn parallel_stable_partition_is_the_sequential_one() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        for n in [ROWS_PER_TASK + 1, 3 * ROWS_PER_TASK + 17] {
            for p_left in [0.0, 0.3, 1.0] {
                let rows: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
                let flags: Vec<bool> = (0..n).map(|_| rng.gen_bool(p_left)).collect();
                let (mut parallel, mut sequential) = (rows.clone(), rows);
                let left = parallel_stable_partition(&mut parallel, &flags);
                assert_eq!(left, grow::stable_partition(&mut sequential, &flags), "{n} {p_left}");
                assert_eq!(parallel, sequential, "{n} {p_left}");
            }
        }
    }

    #[test]
    fn same_tree_for_any_thread_count() {
        let c = case(11, 40_000, 8, 0.1);
        let params = TreeParams { max_depth: 6, colsample_bynode: 0.7, ..Default::default() };
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| build(&c, &params, 256).0)
        };
        let (a, b) = (run(1), run(3));
        assert_eq!(a.tree, b.tree);
        assert_eq!(a.positions, b.positions);
    }

    /// The precision experiment's float sums: `f64` sums round far below the `f32` gains, so the
    /// tree is the fixed-point one; `f32` sums give a valid tree of its own.
    #[test]
    fn float_sums_build_consistent_trees() {
        let c = case(9, 5000, 6, 0.15);
        let params = TreeParams { max_depth: 5, ..Default::default() };
        let cuts = QuantileCuts::build(&c.features, &[], 64);
        let matrix = EllpackMatrix::new(&c.features, &cuts);
        let bins = matrix.unpack(&cuts);
        let q = GradientQuantiser::new(&c.gradients);
        let builder = HistBuilder { pages: &bins, cuts: &cuts, params: &params, quantiser: &q };
        let features: Vec<u32> = (0..c.cols as u32).collect();
        let rng = || rand::rngs::SmallRng::seed_from_u64(0);
        let fixed: Vec<Fixed> = c.gradients.iter().map(|&g| q.to_fixed(g)).collect();
        let wide: Vec<GradientPair<f64>> =
            c.gradients.iter().map(|g| GradientPair::new(g.grad as f64, g.hess as f64)).collect();
        let reference = builder.build(&fixed, &features, &mut rng()).unwrap();
        let double = builder.build(&wide, &features, &mut rng()).unwrap();
        assert_eq!(double.positions, reference.positions);
        assert_eq!(double.tree.split_indices, reference.tree.split_indices);
        assert_eq!(double.tree.split_conditions, reference.tree.split_conditions);
        let single = builder.build(&c.gradients, &features, &mut rng()).unwrap();
        let tree = &single.tree;
        assert!(tree.len() > 7, "a real tree ({} nodes)", tree.len());
        let mut hess = vec![0f64; tree.len()];
        for i in 0..c.gradients.len() {
            let row = &c.values[i * c.cols..(i + 1) * c.cols];
            let leaf = tree.leaf_index(|f| row[f]);
            assert_eq!(single.positions[i] as usize, leaf, "row {i}");
            hess[leaf] += c.gradients[i].hess as f64;
        }
        // f32 sums (the root's over 5000 rows, then subtractions) are off by a few ulps of the
        // total hessian: far more than fixed point's 1e-3, far less than a row's hessian (>= 0.05).
        let total: f64 = hess.iter().sum();
        for n in (0..tree.len()).filter(|&n| tree.is_leaf(n)) {
            let error = (hess[n] - tree.sum_hessian[n] as f64).abs();
            assert!(error < 2e-5 * total, "leaf {n}: {} vs {}, error {error}", hess[n], tree.sum_hessian[n]);
        }
    }

    #[test]
    fn gamma_and_min_child_weight_stop_splits() {
        let c = case(5, 2000, 4, 0.0);
        let (built, _) = build(&c, &TreeParams { gamma: 1e9, ..Default::default() }, 256);
        assert_eq!(built.tree.len(), 1);
        assert!(built.positions.iter().all(|&p| p == 0));
        let (built, _) = build(&c, &TreeParams { min_child_weight: 1e9, ..Default::default() }, 256);
        assert_eq!(built.tree.len(), 1);
    }
}
