//! Rows that arrive in batches (an iterator the caller can restart, a file read in chunks),
//! quantised without ever holding them all: the first piece of the out-of-core path. Four passes
//! over the batches, as XGBoost's external memory makes them: count each column's present values
//! (and check every batch), sketch ([`CutsStream`]), lay out ([`EllpackLayout`]), pack each batch
//! into its page. The cuts and the joined pages are those of the whole matrix, bit for bit.

use crate::data::{FeatureMatrix, MetaInfo};
use crate::ellpack::{EllpackLayout, EllpackMatrix};
use crate::quantile::{CutsStream, QuantileCuts};
use crate::{Error, Result};

/// One batch of rows: features, a label a row, and a weight a row (or none).
#[derive(Clone, Debug)]
pub struct Batch {
    pub features: FeatureMatrix,
    pub labels: Vec<f32>,
    pub weights: Vec<f32>,
}

/// Batches of rows the caller can read again from the first (XGBoost's `DataIter`: `reset`, then
/// `next` until `None`). Each pass must yield the same rows.
pub trait BatchSource {
    /// Starts again from the first batch.
    fn reset(&mut self) -> Result<()>;
    /// The next batch, `None` after the last.
    fn next_batch(&mut self) -> Result<Option<Batch>>;
}

/// The quantised rows of a [`BatchSource`]: the cuts, one ELLPACK page a batch (in the layout of
/// all the rows), the labels and weights.
#[derive(Debug)]
pub struct QuantisedPages {
    pub cuts: QuantileCuts,
    pub pages: Vec<EllpackMatrix>,
    pub info: MetaInfo,
}

impl QuantisedPages {
    /// Reads `source` four times (see the module documentation). Batches of different widths,
    /// a label or weight count other than the rows', a label or weight that is not a finite number
    /// (weights also not negative), and a pass that yields other batches than the first are errors
    /// naming the batch (from 0) and, where there is one, the row (of the whole data).
    pub fn from_batches(
        source: &mut dyn BatchSource,
        max_bin: usize,
        categorical: &[bool],
    ) -> Result<QuantisedPages> {
        let mut present = Vec::new();
        let (mut info, mut weights, mut weighted) = (MetaInfo::default(), Vec::new(), false);
        let (mut width, mut heights) = (None, Vec::new());
        each_batch(source, |index, first, batch| {
            check_batch(index, first, batch, width)?;
            width.get_or_insert(batch.features.cols());
            heights.push(batch.features.rows());
            CutsStream::count(&mut present, &batch.features);
            info.labels.extend_from_slice(&batch.labels);
            weighted |= !batch.weights.is_empty();
            match batch.weights.is_empty() {
                true => weights.resize(weights.len() + batch.features.rows(), 1.0),
                false => weights.extend_from_slice(&batch.weights),
            }
            Ok(())
        })?;
        if weighted {
            info.weights = weights;
        }
        let cols = present.len();
        let mut stream = CutsStream::new(&present, max_bin, categorical);
        read_again(source, (&heights, cols), |batch| stream.push(&batch.features, &batch.weights))?;
        let cuts = stream.finish()?;
        let mut layout = EllpackLayout::default();
        read_again(source, (&heights, cols), |batch| {
            layout.add(&batch.features, &cuts);
            Ok(())
        })?;
        let mut pages = Vec::with_capacity(heights.len());
        read_again(source, (&heights, cols), |batch| {
            pages.push(EllpackMatrix::pack(&batch.features, &cuts, &layout));
            Ok(())
        })?;
        Ok(QuantisedPages { cuts, pages, info })
    }
}

/// Calls `step(index, first row, batch)` on every batch from the first; returns their count.
fn each_batch(source: &mut dyn BatchSource, mut step: impl FnMut(usize, usize, &Batch) -> Result<()>) -> Result<usize> {
    source.reset()?;
    let (mut index, mut first) = (0, 0);
    while let Some(batch) = source.next_batch()? {
        step(index, first, &batch)?;
        (index, first) = (index + 1, first + batch.features.rows());
    }
    Ok(index)
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseMatrix;

    /// Batches in memory, read again from the first on `reset`; `shrink` drops the last batch from
    /// the second pass on (a source that changes).
    struct Batches {
        batches: Vec<Batch>,
        at: usize,
        passes: usize,
        shrink: bool,
    }

    impl BatchSource for Batches {
        fn reset(&mut self) -> Result<()> {
            (self.at, self.passes) = (0, self.passes + 1);
            Ok(())
        }
        fn next_batch(&mut self) -> Result<Option<Batch>> {
            let end = self.batches.len() - usize::from(self.shrink && self.passes > 1);
            self.at += 1;
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
        (Batches { batches: list, at: 0, passes: 0, shrink: false }, whole, weights)
    }

    #[test]
    fn batches_quantise_as_the_whole_matrix() {
        let (mut source, whole, weights) = batches(5000, 6, &[1000, 1, 777]);
        let pages = QuantisedPages::from_batches(&mut source, 64, &[]).unwrap();
        assert_eq!(source.passes, 4);
        let cuts = QuantileCuts::build(&whole, &weights, 64);
        assert!(pages.cuts == cuts);
        let mut joined = pages.pages[0].clone();
        pages.pages[1..].iter().for_each(|page| joined.append(page));
        assert!(joined == EllpackMatrix::new(&whole, &cuts));
        assert_eq!((pages.info.labels.len(), &pages.info.weights), (5000, &weights));
    }

    #[test]
    fn bad_batches_are_named() {
        let error = |source: &mut Batches| QuantisedPages::from_batches(source, 64, &[]).unwrap_err().to_string();
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
        source.shrink = true;
        assert!(error(&mut source).contains("a pass read 2 batches, the first 3"), "{}", error(&mut source));
    }
}
