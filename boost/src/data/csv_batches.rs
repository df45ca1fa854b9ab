//! A CSV file read a batch of rows at a time, for external memory ([`crate::DMatrix::from_batches`]):
//! the file is read once to learn its column kinds and string codes, count its rows and read its
//! `.weight` and `.query` siblings ([`CsvBatches::open`]), then once a pass of the
//! [`BatchSource`], by a reader thread that parses at most one batch ahead of the caller.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use super::csv::{read_csv_pass, Categories, CsvOptions};
use super::{DenseMatrix, FeatureMatrix, MetaInfo, SideFiles};
use crate::external::{Batch, BatchSource};
use crate::{Error, Result};

/// A CSV or TSV file (plain or gzip) as batches of `batch_rows` rows (the last fewer), never held
/// whole; the rows, codes and errors are those of [`super::read_csv_with_categories`].
pub struct CsvBatches {
    path: PathBuf,
    /// The caller's options without the borrowed parts (kept below).
    options: CsvOptions<'static>,
    feature_names: Option<Vec<String>>,
    categories: Arc<Categories>,
    info: MetaInfo,
    rows: usize,
    cols: usize,
    batch_rows: usize,
    weights: Arc<Vec<f32>>,
    reader: Option<Receiver<Result<Batch>>>,
}

impl CsvBatches {
    /// Reads `path` once (its kinds and codes, learned or `options.categories`', its row count,
    /// the weights and groups of `side_files`), holding no more than a batch of it.
    pub fn open(path: &Path, options: &CsvOptions<'_>, side_files: &SideFiles, batch_rows: usize) -> Result<Self> {
        if batch_rows == 0 {
            return Err(Error::param("batch_rows", "0 rows a batch: at least 1"));
        }
        if options.label_upper_bound.is_some() {
            return Err(Error::param(
                "label_upper_bound",
                "label bounds are read whole, not in batches (external memory)",
            ));
        }
        let mut count = |_: usize, _: Vec<f32>, _: Vec<f32>| Ok(());
        let read = read_csv_pass(path, options, side_files, Some((batch_rows, &mut count)))?;
        let mut info = read.info;
        if !info.weights.is_empty() && info.weights.len() != read.rows {
            return Err(Error::InvalidData(format!(
                "{}: {} weights for {} rows: read in batches, a file takes a weight a row",
                path.display(),
                info.weights.len(),
                read.rows
            )));
        }
        let weights = Arc::new(std::mem::take(&mut info.weights));
        let owned = CsvOptions {
            delimiter: options.delimiter,
            has_header: options.has_header,
            label: options.label.clone(),
            label_upper_bound: None,
            has_label: options.has_label,
            ignore_columns: options.ignore_columns.clone(),
            categorical: options.categorical.clone(),
            missing_tokens: options.missing_tokens.clone(),
            categories: None,
            feature_names: None,
        };
        Ok(CsvBatches {
            path: path.to_path_buf(),
            options: owned,
            feature_names: options.feature_names.map(<[String]>::to_vec),
            categories: Arc::new(read.categories),
            info,
            rows: read.rows,
            cols: read.cols,
            batch_rows,
            weights,
            reader: None,
        })
    }

    /// The file's rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The query groups, feature names and types (the weights go with the batches).
    pub fn info(&self) -> &MetaInfo {
        &self.info
    }

    /// The string columns' codes (as [`super::read_csv_with_categories`] returns them).
    pub fn categories(&self) -> &Categories {
        &self.categories
    }

    /// A reader thread for one pass: it sends each batch as it is parsed, and stops when the
    /// receiver is dropped (a [`BatchSource::reset`] before the end).
    fn start(&mut self) -> Receiver<Result<Batch>> {
        let (send, receive) = sync_channel(1);
        let (path, template, names) = (self.path.clone(), self.options.clone(), self.feature_names.clone());
        let (categories, weights, batch_rows) = (self.categories.clone(), self.weights.clone(), self.batch_rows);
        let cols = self.cols;
        std::thread::spawn(move || {
            let mut options: CsvOptions<'_> = template;
            // The kinds and codes of the first read: every pass gives the final codes.
            options.categories = Some(&categories);
            options.feature_names = names.as_deref();
            let mut first = 0;
            let mut hand = |rows: usize, values: Vec<f32>, labels: Vec<f32>| {
                let weights = if weights.is_empty() { Vec::new() } else { weights[first..first + rows].to_vec() };
                first += rows;
                let features = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values));
                let stopped = |_| Error::InvalidData("the pass was stopped".into());
                send.send(Ok(Batch { features, labels, weights })).map_err(stopped)
            };
            if let Err(error) = read_csv_pass(&path, &options, &SideFiles::Ignored, Some((batch_rows, &mut hand))) {
                // Nobody to tell when the pass was stopped.
                let _ = send.send(Err(error));
            }
        });
        receive
    }
}

impl BatchSource for CsvBatches {
    fn reset(&mut self) -> Result<()> {
        self.reader = Some(self.start());
        Ok(())
    }

    fn next_batch(&mut self) -> Result<Option<Batch>> {
        if self.reader.is_none() {
            self.reader = Some(self.start());
        }
        let reader = self.reader.as_ref().expect("a reader was started");
        // A closed channel is the end of the file.
        reader.recv().map_or(Ok(None), |batch| batch.map(Some))
    }
}
