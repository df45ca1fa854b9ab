//! The passes over a [`BatchSource`], as XGBoost's external memory makes them: count each
//! column's present values and lay out the rows ([`EllpackLayout`]; and check every batch),
//! sketch ([`CutsStream`]), pack each batch and join consecutive batches into pages of at least
//! [`ExternalMemory::page_bytes`]. The cuts and the joined pages are those of the whole matrix,
//! bit for bit. The layout counts a row's values that have bins; counted in the first pass, before
//! the cuts, it takes every present value, the same where every feature with one has bins (as
//! the cuts give them); were one without, a pass of its own lays the rows out again.

use super::store::PageStore;
use super::{ExternalMatrix, ExternalMemory};
use crate::data::{categorical_features, FeatureMatrix, MetaInfo};
use crate::ellpack::{EllpackLayout, EllpackMatrix};
use crate::quantile::CutsStream;
use crate::{Error, Result};

/// One batch of rows: features, a label a row, and a weight a row (or none).
#[derive(Clone, Debug)]
pub struct Batch {
    /// The rows' features (NaN, or an absent CSR entry, is missing).
    pub features: FeatureMatrix,
    /// A label a row.
    pub labels: Vec<f32>,
    /// A weight a row, or none (every row weighs 1).
    pub weights: Vec<f32>,
}

/// Batches of rows the caller can read again from the first (XGBoost's `DataIter`: `reset`, then
/// `next` until `None`). Each pass must yield the same rows. A pass reads it on a thread of its
/// own, a batch ahead of the pass's work: hence `Send`.
pub trait BatchSource: Send {
    /// Starts again from the first batch.
    fn reset(&mut self) -> Result<()>;
    /// The next batch, `None` after the last.
    fn next_batch(&mut self) -> Result<Option<Batch>>;
}

impl ExternalMatrix {
    /// Reads `source` three times (see the module documentation) into pages kept as `options`
    /// says, with the labels and weights. Batches of different widths, a label or weight count
    /// other than the rows', a label or weight that is not a finite number (weights also not
    /// negative), and a pass that yields other batches than the first are errors naming the batch
    /// (from 0) and, where there is one, the row (of the whole data).
    pub fn from_batches(
        source: &mut dyn BatchSource,
        options: &ExternalMemory,
    ) -> Result<(ExternalMatrix, MetaInfo)> {
        options.check()?;
        let mut store = PageStore::new(options.cache_dir.as_deref(), options.host_bytes)?;
        let mut present = Vec::new();
        let (mut info, mut weights, mut weighted) = (MetaInfo::default(), Vec::new(), false);
        let (mut width, mut heights) = (None, Vec::new());
        let mut layout = EllpackLayout::default();
        each_batch(source, |index, first, batch| {
            check_batch(index, first, batch, width)?;
            width.get_or_insert(batch.features.cols());
            heights.push(batch.features.rows());
            CutsStream::count(&mut present, &batch.features);
            layout.add_present(&batch.features);
            info.labels.extend_from_slice(&batch.labels);
            weighted |= !batch.weights.is_empty();
            match batch.weights.is_empty() {
                true => weights.resize(weights.len() + batch.features.rows(), 1.0),
                false => weights.extend_from_slice(&batch.weights),
            }
            Ok(())
        })?;
        if info.labels.is_empty() {
            return Err(Error::InvalidData("the batches have no rows".into()));
        }
        if weighted {
            info.weights = weights;
        }
        let cols = present.len();
        let categorical = categorical_features(&options.feature_types, cols)?;
        info.feature_types = options.feature_types.clone();
        let mut stream = CutsStream::new(&present, options.max_bin as usize, &categorical);
        read_again(source, (&heights, cols), |batch| stream.push(&batch.features, &batch.weights))?;
        let cuts = stream.finish()?;
        if (0..cols).any(|j| present[j] > 0 && cuts.cut_ptrs[j] == cuts.cut_ptrs[j + 1]) {
            layout = EllpackLayout::default();
            read_again(source, (&heights, cols), |batch| {
                layout.add(&batch.features, &cuts);
                Ok(())
            })?;
        }
        let mut pending: Option<EllpackMatrix> = None;
        read_again(source, (&heights, cols), |batch| {
            let packed = EllpackMatrix::pack(&batch.features, &cuts, &layout);
            match &mut pending {
                Some(page) => page.append(&packed),
                None => pending = Some(packed),
            }
            match pending.take_if(|page| page.bytes() >= options.page_bytes) {
                Some(page) => store.push(page),
                None => Ok(()),
            }
        })?;
        if let Some(page) = pending {
            store.push(page)?;
        }
        Ok((ExternalMatrix { cuts, store, max_bin: options.max_bin, categorical }, info))
    }
}

/// Calls `step(index, first row, batch)` on every batch from the first; returns their count.
/// A reader thread reads the next batch while `step` works on this one (at most two batches in
/// memory): the source's reading and the pass's work overlap.
fn each_batch(
    source: &mut dyn BatchSource,
    mut step: impl FnMut(usize, usize, &Batch) -> Result<()>,
) -> Result<usize> {
    std::thread::scope(|scope| {
        // A rendezvous: the reader hands a batch over only when the pass takes it.
        let (hand, batches) = std::sync::mpsc::sync_channel::<Result<Batch>>(0);
        scope.spawn(move || {
            let mut read = || -> Result<()> {
                source.reset()?;
                while let Some(batch) = source.next_batch()? {
                    if hand.send(Ok(batch)).is_err() {
                        // The pass stopped (its step failed): nobody to read for.
                        return Ok(());
                    }
                }
                Ok(())
            };
            if let Err(error) = read() {
                let _ = hand.send(Err(error));
            }
        });
        let (mut index, mut first) = (0, 0);
        for batch in batches {
            let batch = batch?;
            step(index, first, &batch)?;
            (index, first) = (index + 1, first + batch.features.rows());
        }
        Ok(index)
    })
}

/// A pass after the first: `step` on every batch, each checked to have the first pass's rows
/// (`heights`) and columns.
fn read_again(
    source: &mut dyn BatchSource,
    (heights, cols): (&[usize], usize),
    mut step: impl FnMut(&Batch) -> Result<()>,
) -> Result<()> {
    let count = each_batch(source, |index, _, batch| match heights.get(index) {
        Some(&rows) if rows == batch.features.rows() && batch.features.cols() == cols => step(batch),
        _ => Err(Error::InvalidData(format!("batch {index}: not the batch the first pass read"))),
    })?;
    match count == heights.len() {
        true => Ok(()),
        false => Err(Error::InvalidData(format!("a pass read {count} batches, the first {}", heights.len()))),
    }
}

/// The first pass's checks of batch `index`, whose rows start at row `first`.
fn check_batch(index: usize, first: usize, batch: &Batch, width: Option<usize>) -> Result<()> {
    let rows = batch.features.rows();
    let bad = |what: String| Err(Error::InvalidData(format!("batch {index}: {what}")));
    if let Some(width) = width.filter(|&w| w != batch.features.cols()) {
        return bad(format!("{} columns, the batches before have {width}", batch.features.cols()));
    }
    if batch.labels.len() != rows {
        return bad(format!("{} labels for {rows} rows", batch.labels.len()));
    }
    if !batch.weights.is_empty() && batch.weights.len() != rows {
        return bad(format!("{} weights for {rows} rows", batch.weights.len()));
    }
    if let Some(i) = batch.labels.iter().position(|l| !l.is_finite()) {
        return bad(format!("row {}: the label is {}", first + i, batch.labels[i]));
    }
    if let Some(i) = batch.weights.iter().position(|w| !w.is_finite() || *w < 0.0) {
        return bad(format!("row {}: the weight is {}", first + i, batch.weights[i]));
    }
    match batch.features.check_finite() {
        Err(Error::InvalidData(reason)) => bad(format!("{reason} (the batch's row; its first is row {first})")),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseMatrix;
    use crate::quantile::QuantileCuts;

    /// Batches in memory, read again from the first on `reset`; `shrink` drops the last batch from
    /// the second pass on (a source that changes); `fail` (pass, batch, both from 1) is an error
    /// of the source's own; `reads` counts the batches read.
    struct Batches {
        batches: Vec<Batch>,
        at: usize,
        passes: usize,
        shrink: bool,
        fail: Option<(usize, usize)>,
        reads: usize,
    }

    impl BatchSource for Batches {
        fn reset(&mut self) -> Result<()> {
            (self.at, self.passes) = (0, self.passes + 1);
            Ok(())
        }
        fn next_batch(&mut self) -> Result<Option<Batch>> {
            let end = self.batches.len() - usize::from(self.shrink && self.passes > 1);
            (self.at, self.reads) = (self.at + 1, self.reads + 1);
            if self.fail == Some((self.passes, self.at)) {
                return Err(Error::Callback(format!("pass {}, batch {}: the source failed", self.passes, self.at)));
            }
            Ok((self.at <= end).then(|| self.batches[self.at - 1].clone()))
        }
    }

    /// `rows x cols` values with missing ones, cut into batches of `sizes` (cycled), every other
    /// batch weighted.
    fn batches(rows: usize, cols: usize, sizes: &[usize]) -> (Batches, FeatureMatrix, Vec<f32>) {
        let values: Vec<f32> =
            (0..rows * cols).map(|i| if i % 11 == 3 { f32::NAN } else { ((i * 7919) % 1013) as f32 * 0.01 }).collect();
        let (mut list, mut weights) = (Vec::new(), Vec::new());
        let (mut start, mut k) = (0, 0);
        while start < rows {
            let end = (start + sizes[k % sizes.len()]).min(rows);
            let w: Vec<f32> = if k % 2 == 1 { (start..end).map(|i| (i % 4) as f32 * 0.5).collect() } else { Vec::new() };
            weights.extend(if w.is_empty() { vec![1.0; end - start] } else { w.clone() });
            let features = FeatureMatrix::Dense(DenseMatrix::new(end - start, cols, values[start * cols..end * cols].to_vec()));
            list.push(Batch { features, labels: (start..end).map(|i| (i % 2) as f32).collect(), weights: w });
            (start, k) = (end, k + 1);
        }
        let whole = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values));
        (Batches { batches: list, at: 0, passes: 0, shrink: false, fail: None, reads: 0 }, whole, weights)
    }

    fn options(max_bin: u32, page_bytes: usize) -> ExternalMemory {
        ExternalMemory { max_bin, page_bytes, ..Default::default() }
    }

    /// Batches of any sizes, joined into pages of any size: the whole matrix's cuts and ELLPACK
    /// rows, bit for bit.
    #[test]
    fn batches_quantise_as_the_whole_matrix() {
        for page_bytes in [1, 3000, 1 << 30] {
            let (mut source, whole, weights) = batches(5000, 6, &[1000, 1, 777]);
            let (matrix, info) = ExternalMatrix::from_batches(&mut source, &options(64, page_bytes)).unwrap();
            assert_eq!(source.passes, 3, "the layout counted with the column counts");
            let cuts = QuantileCuts::build(&whole, &weights, 64);
            assert!(matrix.cuts == cuts);
            let mut joined: Option<EllpackMatrix> = None;
            let mut firsts = Vec::new();
            matrix
                .store
                .for_each(|first, page| {
                    firsts.push(first);
                    match &mut joined {
                        Some(m) => m.append(&page),
                        None => joined = Some(page.to_owned_matrix()),
                    }
                })
                .unwrap();
            assert!(joined.unwrap() == EllpackMatrix::new(&whole, &cuts));
            let pages = firsts.len();
            match page_bytes {
                1 => assert_eq!(pages, 9, "a page a batch"),
                3000 => assert!((2..9).contains(&pages), "{pages} pages of at least 3000 bytes"),
                _ => assert_eq!(pages, 1, "one page"),
            }
            assert_eq!((info.labels.len(), &info.weights), (5000, &weights));
        }
    }

    /// A column whose values all weigh nothing has no bins: its values are then not counted in
    /// the layout, which a pass of its own makes again; the whole matrix's rows all the same.
    #[test]
    fn a_column_of_weightless_values_is_laid_out_again() {
        let (rows, cols) = (300, 3);
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| match (i / cols, i % cols) {
                (r, 2) if r % 3 != 0 => f32::NAN,
                (r, c) => (r * 7 + c) as f32 * 0.5,
            })
            .collect();
        let weights: Vec<f32> = (0..rows).map(|r| if r % 3 == 0 { 0.0 } else { 1.0 }).collect();
        let list = [0..100, 100..300]
            .into_iter()
            .map(|span| Batch {
                features: FeatureMatrix::Dense(DenseMatrix::new(
                    span.len(),
                    cols,
                    values[span.start * cols..span.end * cols].to_vec(),
                )),
                labels: vec![0.0; span.len()],
                weights: weights[span].to_vec(),
            })
            .collect();
        let mut source = Batches { batches: list, at: 0, passes: 0, shrink: false, fail: None, reads: 0 };
        let (matrix, _) = ExternalMatrix::from_batches(&mut source, &options(16, 1 << 30)).unwrap();
        assert_eq!(source.passes, 4);
        let whole = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values));
        let cuts = QuantileCuts::build(&whole, &weights, 16);
        assert_eq!(cuts.cut_ptrs[2], cuts.cut_ptrs[3], "no bins for the weightless column");
        assert!(matrix.cuts == cuts);
        let mut pages = Vec::new();
        matrix.store.for_each(|_, page| pages.push(page.to_owned_matrix())).unwrap();
        assert!(pages.len() == 1 && pages[0] == EllpackMatrix::new(&whole, &cuts));
    }

    #[test]
    fn bad_batches_are_named() {
        let error = |source: &mut Batches| {
            ExternalMatrix::from_batches(source, &options(64, 1)).map(|_| ()).unwrap_err().to_string()
        };
        let (mut source, ..) = batches(3000, 4, &[1000]);
        source.batches[2].features = FeatureMatrix::Dense(DenseMatrix::new(1000, 3, vec![0.0; 3000]));
        assert!(error(&mut source).contains("batch 2: 3 columns, the batches before have 4"), "{}", error(&mut source));
        let (mut source, ..) = batches(3000, 4, &[1000]);
        source.batches[1].labels[5] = f32::NAN;
        assert!(error(&mut source).contains("batch 1: row 1005: the label is NaN"), "{}", error(&mut source));
        let (mut source, ..) = batches(3000, 4, &[1000]);
        source.batches[1].weights = vec![1.0; 999];
        assert!(error(&mut source).contains("batch 1: 999 weights for 1000 rows"));
        let (mut source, ..) = batches(3000, 4, &[1000]);
        if let FeatureMatrix::Dense(m) = &mut source.batches[2].features {
            m.values.make_mut()[4 * 7 + 2] = f32::INFINITY;
        }
        let message = error(&mut source);
        assert!(message.contains("batch 2: row 7, feature 2: inf is infinite") && message.contains("row 2000"), "{message}");
        let (mut source, ..) = batches(3000, 4, &[1000]);
        source.batches[1].weights = vec![1.0; 1000];
        source.batches[1].weights[17] = -0.5;
        assert!(error(&mut source).contains("batch 1: row 1017: the weight is -0.5"), "{}", error(&mut source));
        let (mut source, ..) = batches(3000, 4, &[1000]);
        source.shrink = true;
        assert!(error(&mut source).contains("a pass read 2 batches, the first 3"), "{}", error(&mut source));
    }

    /// The source is read a batch ahead on a thread of its own: its error ends the pass, and a
    /// pass that fails stops the reading (at most the batch in hand read beyond it).
    #[test]
    fn a_failing_source_or_pass_stops_the_other() {
        let (mut source, ..) = batches(10_000, 4, &[1000]);
        source.fail = Some((2, 3));
        let message = ExternalMatrix::from_batches(&mut source, &options(64, 1)).map(|_| ()).unwrap_err().to_string();
        assert!(message.contains("pass 2, batch 3: the source failed"), "{message}");
        // The first pass: ten batches and its end.
        assert_eq!((source.passes, source.reads), (2, 11 + 3), "no read after the failure");
        let (mut source, ..) = batches(10_000, 4, &[1000]);
        source.batches[1].labels[0] = f32::NAN;
        let message = ExternalMatrix::from_batches(&mut source, &options(64, 1)).map(|_| ()).unwrap_err().to_string();
        assert!(message.contains("batch 1: row 1000: the label is NaN"), "{message}");
        assert!((2..=3).contains(&source.reads), "{} batches read for a pass that failed at the second", source.reads);
    }
}
