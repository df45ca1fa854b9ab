//! The cuts of rows that arrive a batch at a time (a file read in chunks, an iterator of batches,
//! pages that do not fit in memory at once): [`CutsStream`]. XGBoost's sketch is a streaming
//! algorithm over each column's values in row order (a queue of `2 limit` entries becomes a
//! summary carried up the levels), so fed the same values in the same order in any batches it
//! keeps the same state, and the cuts are [`QuantileCuts::build_typed`]'s of all the rows, bit
//! for bit. Its one global input is each column's count of present values (the level size
//! depends on it): a first pass counts them ([`CutsStream::count`]).

use rayon::prelude::*;

use super::{category_bounds, cuts_of_summary, is_category, merge_levels, not_a_category, prune, push_summary};
use super::{queue, row_holding, sketch_limit, summarize, Entry, QuantileCuts};
use crate::data::FeatureMatrix;
use crate::{Error, Result};

/// Quantile cuts built from batches of rows; see the module documentation.
#[derive(Debug)]
pub struct CutsStream {
    max_bin: usize,
    categorical: Vec<bool>,
    columns: Vec<ColumnStream>,
    /// Rows pushed so far (the next batch's first row).
    rows: usize,
}

/// One column's sketch state between batches.
#[derive(Debug, Default)]
struct ColumnStream {
    /// Present values over all batches (the pass before), those pushed so far, and those of
    /// them with a weight.
    present: usize,
    seen: usize,
    kept: usize,
    limit: usize,
    /// The current queue's values in order (zero weights left out), its distinct runs, the last.
    pending: Vec<(f32, f32)>,
    entries: usize,
    last: Option<f32>,
    levels: Vec<Vec<Entry>>,
    /// A categorical column's largest code, and its first value that is no category (with row).
    largest: Option<u32>,
    bad: Option<(usize, f32)>,
}

impl CutsStream {
    /// Counts each column's present values of `batch` into `present` (one count a column; resized
    /// to the batch's width): the pass before [`CutsStream::new`].
    pub fn count(present: &mut Vec<usize>, batch: &FeatureMatrix) {
        present.resize(present.len().max(batch.cols()), 0);
        for counts in super::present_by_piece(batch) {
            present.iter_mut().zip(counts).for_each(|(p, c)| *p += c);
        }
    }

    /// A stream for columns of `present[f]` present values in all, `max_bin` bins, the features
    /// `categorical` names a bin a category.
    pub fn new(present: &[usize], max_bin: usize, categorical: &[bool]) -> Self {
        let max_bin = max_bin.max(1);
        let columns = present
            .iter()
            .map(|&n| ColumnStream { present: n, limit: sketch_limit(n, max_bin), ..Default::default() })
            .collect();
        CutsStream { max_bin, categorical: categorical.to_vec(), columns, rows: 0 }
    }

    /// The next rows, row `i` of `batch` weighted by `weights[i]` (empty: all 1). A batch wider
    /// than the counted columns, or columns holding more values than counted, is an error.
    pub fn push(&mut self, batch: &FeatureMatrix, weights: &[f32]) -> Result<()> {
        if batch.cols() > self.columns.len() {
            return Err(Error::InvalidData(format!(
                "a batch of {} columns after counting {}",
                batch.cols(),
                self.columns.len()
            )));
        }
        let first = self.rows;
        let columns = super::columns_of(batch, weights);
        let categorical = &self.categorical;
        self.columns.par_iter_mut().zip(columns).enumerate().try_for_each(|(f, (stream, values))| {
            stream.seen += values.len();
            if stream.seen > stream.present {
                return Err(stream.miscounted(f));
            }
            match categorical.get(f) {
                Some(true) => stream.push_categories(&values, batch, f, first),
                _ => stream.push(&values),
            }
            Ok(())
        })?;
        self.rows += batch.rows();
        Ok(())
    }

    /// The cuts of every row pushed: [`QuantileCuts::build_typed`]'s of them all.
    pub fn finish(self) -> Result<QuantileCuts> {
        let (max_bin, categorical) = (self.max_bin, self.categorical);
        let per_feature: Vec<Result<Vec<f32>>> = self
            .columns
            .into_par_iter()
            .enumerate()
            .map(|(f, column)| match categorical.get(f) {
                _ if column.seen != column.present => Err(column.miscounted(f)),
                Some(true) => column.category_cuts(f),
                _ => Ok(column.cuts(max_bin)),
            })
            .collect();
        let mut cuts = QuantileCuts::from_features(per_feature.into_iter().collect::<Result<_>>()?);
        if categorical.contains(&true) {
            cuts.categorical = categorical;
        }
        Ok(cuts)
    }
}

impl ColumnStream {
    /// Pushes values in row order, as [`super::sketch`]'s queues take them: zero weights left
    /// out, a full queue (`2 limit` distinct runs) summarised and carried up before the next value.
    fn push(&mut self, values: &[(f32, f32)]) {
        for &(value, weight) in values {
            self.kept += usize::from(weight != 0.0);
            if weight == 0.0 {
                continue;
            }
            if self.entries == 2 * self.limit {
                self.flush();
            }
            if self.last != Some(value) {
                self.entries += 1;
                self.last = Some(value);
            }
            self.pending.push((value, weight));
        }
    }

    /// The error of batches that do not hold the values the first pass counted.
    fn miscounted(&self, f: usize) -> Error {
        Error::InvalidData(format!(
            "feature {f}: the batches hold {} present values or more, the first pass counted {}",
            self.seen, self.present
        ))
    }

    fn flush(&mut self) {
        let summary = prune(&summarize(&queue(&self.pending)), self.limit);
        push_summary(&mut self.levels, summary, self.limit);
        self.pending.clear();
        (self.entries, self.last) = (0, None);
    }

    /// A categorical column's values: its largest code, and the first value that is no code.
    fn push_categories(&mut self, values: &[(f32, f32)], batch: &FeatureMatrix, f: usize, first: usize) {
        for &(v, _) in values {
            if !is_category(v) {
                if self.bad.is_none() {
                    self.bad = Some((first + row_holding(batch, f, v).unwrap_or(0), v));
                }
                return;
            }
            self.largest = self.largest.max(Some(v as u32));
        }
    }

    fn category_cuts(&self, f: usize) -> Result<Vec<f32>> {
        if let Some((row, value)) = self.bad {
            return Err(not_a_category(Some(row), f, value));
        }
        Ok(category_bounds(self.largest))
    }

    /// The last queue carried up, the levels merged (the lowest first), then the cuts.
    fn cuts(mut self, max_bin: usize) -> Vec<f32> {
        if self.present == 0 {
            return Vec::new();
        }
        if !self.pending.is_empty() {
            self.flush();
        }
        cuts_of_summary(&merge_levels(&self.levels, self.limit), self.kept, max_bin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{read_data, Column, CsvOptions, DenseMatrix, ReadOptions};

    /// The stream's cuts of `features` cut into batches of `sizes` (cycled).
    fn streamed(features: &FeatureMatrix, weights: &[f32], max_bin: usize, categorical: &[bool], sizes: &[usize]) -> Result<QuantileCuts> {
        let dense = match features {
            FeatureMatrix::Dense(m) => m,
            FeatureMatrix::Sparse(_) => unreachable!("dense test data"),
        };
        let cols = dense.cols;
        let mut batches = Vec::new();
        let (mut start, mut k) = (0, 0);
        while start < dense.rows {
            let end = (start + sizes[k % sizes.len()]).min(dense.rows);
            let values = dense.values[start * cols..end * cols].to_vec();
            let batch = FeatureMatrix::Dense(DenseMatrix::new(end - start, cols, values));
            let w = if weights.is_empty() { Vec::new() } else { weights[start..end].to_vec() };
            batches.push((batch, w));
            (start, k) = (end, k + 1);
        }
        let mut present = Vec::new();
        batches.iter().for_each(|(b, _)| CutsStream::count(&mut present, b));
        let mut stream = CutsStream::new(&present, max_bin, categorical);
        for (batch, w) in &batches {
            stream.push(batch, w)?;
        }
        stream.finish()
    }

    #[test]
    fn streamed_cuts_are_the_whole_matrixs_for_any_batches() {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/higgs_lgbm_sample/binary.train");
        let options = ReadOptions { csv: CsvOptions { label: Column::Index(0), ..Default::default() }, ..Default::default() };
        let (data, _) = read_data(&file, &options).expect("read");
        // Some weights zero (left out of the queues, counted in the level size), some large.
        let weights: Vec<f32> = (0..data.rows()).map(|i| [0.0, 1.0, 2.5, 0.5, 40.0][i % 5]).collect();
        for (max_bin, weights) in [(256, &[][..]), (16, &weights[..]), (1024, &weights[..])] {
            let whole = QuantileCuts::build(&data.features, weights, max_bin);
            for sizes in [&[7000][..], &[1][..], &[1000, 1, 333], &[4096, 2048]] {
                let cuts = streamed(&data.features, weights, max_bin, &[], sizes).expect("streamed");
                assert!(cuts == whole, "{max_bin} bins, batches {sizes:?}");
            }
        }
    }

    #[test]
    fn streamed_categories_and_their_errors_name_the_row() {
        let rows = 3000;
        let mut values: Vec<f32> = (0..rows * 2).map(|i| if i % 2 == 0 { (i % 37) as f32 } else { i as f32 * 0.01 }).collect();
        let features = FeatureMatrix::Dense(DenseMatrix::new(rows, 2, values.clone()));
        let categorical = [true, false];
        let whole = QuantileCuts::build_typed(&features, &[], 64, &categorical).unwrap();
        assert!(streamed(&features, &[], 64, &categorical, &[500, 77]).unwrap() == whole);
        values[2 * 1234] = 2.5;
        let features = FeatureMatrix::Dense(DenseMatrix::new(rows, 2, values));
        let error = streamed(&features, &[], 64, &categorical, &[500, 77]).unwrap_err().to_string();
        let expected = QuantileCuts::build_typed(&features, &[], 64, &categorical).unwrap_err().to_string();
        assert!(error.contains("row 1234") && error == expected, "{error}");
    }

    #[test]
    fn batches_other_than_the_counted_ones_are_refused() {
        let batch = FeatureMatrix::Dense(DenseMatrix::new(2, 2, vec![1.0, 2.0, 3.0, 4.0]));
        let mut stream = CutsStream::new(&[2, 2], 16, &[]);
        stream.push(&batch, &[]).unwrap();
        assert!(stream.push(&batch, &[]).unwrap_err().to_string().contains("first pass counted 2"));
        let stream = CutsStream::new(&[3, 2], 16, &[]);
        let short = { let mut s = stream; s.push(&batch, &[]).unwrap(); s.finish() };
        assert!(short.unwrap_err().to_string().contains("feature 0"));
        let wide = FeatureMatrix::Dense(DenseMatrix::new(1, 3, vec![1.0; 3]));
        assert!(CutsStream::new(&[1, 1], 16, &[]).push(&wide, &[]).is_err());
    }
}
