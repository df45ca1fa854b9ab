//! Training and prediction data: a dense or CSR feature matrix and the per-row meta information
//! (labels, weights, base margins, ranking groups), the file readers and a synthetic generator.
//!
//! Missing values: NaN in a dense matrix; in a CSR matrix an absent entry is **missing**, not zero
//! (XGBoost's choice for libsvm input; LightGBM's default differs).
//!
//! # Reading files
//!
//! - [`read_libsvm`]: LibSVM / SVMlight text (`label[:weight] [qid:Q] index:value ...`, `#` comments)
//!   into a [`CsrMatrix`]. Indices are 0-based column ids as in XGBoost, so a file whose indices start
//!   at 1 has an empty column 0; [`LibsvmOptions::num_features`] forces the column count (read a test
//!   file with the training file's count). `qid:` fields give ranking groups.
//! - [`read_csv`] / [`read_csv_with_categories`]: CSV or TSV into a [`DenseMatrix`] (see
//!   [`CsvOptions`] for the delimiter and header detection rules and the missing-value tokens). Columns
//!   holding strings are encoded as category codes; the [`Categories`] returned by the training file
//!   are passed (in [`CsvOptions::categories`]) when reading the test file so that both share one
//!   encoding.
//! - [`read_data`]: either of the two, by [`DataFormat::detect`] unless [`ReadOptions::format`] says.
//!
//! Both readers decompress gzip input (recognised by its magic bytes, whatever the file's name) and
//! read LightGBM-style sibling files when they exist ([`ReadOptions::side_files`] can name others or
//! none):
//! - `<file>.weight`: one weight per line (per row; for ranking data, per group, or per row constant
//!   within each group);
//! - `<file>.query`: one group size per line, consecutive rows; when the file also has `qid:` fields,
//!   both must give the same groups.
//!
//! Values that are `inf` (or overflow `f32`) are rejected, as XGBoost rejects them unless `missing` is
//! `inf`; NaN values are missing; NaN or infinite labels are errors. Every failure caused by the file
//! is an [`Error`] naming the file and, where there is one, the line.
//!
//! # Synthetic data
//!
//! [`synthetic::generate`] makes a dense dataset with a known non-linear target and missing values,
//! deterministic for a seed on every platform and for every thread count.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::{Error, Result};

mod csv;
mod csv_batches;
mod libsvm;
pub mod synthetic;

pub use self::csv::{read_csv, read_csv_with_categories, Categories, Column, CsvOptions, DEFAULT_MISSING_TOKENS};
pub use self::csv_batches::CsvBatches;
pub use self::libsvm::{read_libsvm, LibsvmOptions};

/// A dense row-major `f32` matrix; NaN marks a missing value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DenseMatrix {
    /// Rows.
    pub rows: usize,
    /// Columns (features).
    pub cols: usize,
    /// `rows * cols` values, row after row.
    pub values: FeatureValues,
}

impl DenseMatrix {
    /// A matrix from its row-major values (a `Vec<f32>`, or [`FeatureValues::shared`] memory of the
    /// caller's); `values.len()` must be `rows * cols`.
    pub fn new(rows: usize, cols: usize, values: impl Into<FeatureValues>) -> Self {
        let values = values.into();
        assert_eq!(values.len(), rows * cols, "dense matrix: values for {rows} x {cols}");
        Self { rows, cols, values }
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.values[i * self.cols..(i + 1) * self.cols]
    }
}

/// A dense matrix's values: its own, or memory another owner keeps (a NumPy array the Python
/// package reads in place), read through `Deref<Target = [f32]>` either way.
#[derive(Clone, Default)]
pub struct FeatureValues(ValuesRepr);

#[derive(Clone)]
enum ValuesRepr {
    Owned(Vec<f32>),
    Shared(Arc<dyn AsRef<[f32]> + Send + Sync>),
}

impl Default for ValuesRepr {
    fn default() -> Self {
        ValuesRepr::Owned(Vec::new())
    }
}

impl FeatureValues {
    /// Values that `owner` keeps (not copied): its slice must not change while these are in use.
    pub fn shared(owner: Arc<dyn AsRef<[f32]> + Send + Sync>) -> Self {
        FeatureValues(ValuesRepr::Shared(owner))
    }

    /// The values to change: a copy of another owner's first (then this matrix's own).
    pub fn make_mut(&mut self) -> &mut Vec<f32> {
        if let ValuesRepr::Shared(owner) = &self.0 {
            self.0 = ValuesRepr::Owned((**owner).as_ref().to_vec());
        }
        match &mut self.0 {
            ValuesRepr::Owned(values) => values,
            ValuesRepr::Shared(_) => unreachable!("made owned above"),
        }
    }

    /// Whether the values are another owner's memory, not a copy.
    pub fn is_shared(&self) -> bool {
        matches!(self.0, ValuesRepr::Shared(_))
    }
}

impl std::ops::Deref for FeatureValues {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        match &self.0 {
            ValuesRepr::Owned(values) => values,
            ValuesRepr::Shared(owner) => (**owner).as_ref(),
        }
    }
}

impl From<Vec<f32>> for FeatureValues {
    fn from(values: Vec<f32>) -> Self {
        FeatureValues(ValuesRepr::Owned(values))
    }
}

impl std::fmt::Debug for FeatureValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_shared() { "shared" } else { "owned" };
        write!(f, "{} {kind} values", self.len())
    }
}

impl PartialEq for FeatureValues {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl PartialEq<Vec<f32>> for FeatureValues {
    fn eq(&self, other: &Vec<f32>) -> bool {
        **self == **other
    }
}

/// A compressed sparse row matrix; entries not stored are missing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CsrMatrix {
    /// Rows.
    pub rows: usize,
    /// Columns (features).
    pub cols: usize,
    /// `rows + 1` offsets into `col_indices` and `values`.
    pub row_ptr: Vec<usize>,
    /// Column of each stored entry, increasing within a row.
    pub col_indices: Vec<u32>,
    /// Value of each stored entry (NaN: missing, as an absent entry is).
    pub values: Vec<f32>,
}

impl CsrMatrix {
    /// The stored entries of row `i` as (column, value).
    pub fn row(&self, i: usize) -> impl Iterator<Item = (u32, f32)> + '_ {
        let range = self.row_ptr[i]..self.row_ptr[i + 1];
        self.col_indices[range.clone()].iter().copied().zip(self.values[range].iter().copied())
    }
}

/// The features of a dataset.
#[derive(Clone, Debug, PartialEq)]
pub enum FeatureMatrix {
    /// Row-major values, NaN missing.
    Dense(DenseMatrix),
    /// Compressed sparse rows, absent entries missing.
    Sparse(CsrMatrix),
}

impl FeatureMatrix {
    /// Changes every stored value in place with `f(feature, value)` (a dense matrix's every value,
    /// a CSR matrix's stored entries), stopping at the first error.
    pub fn try_map_values(&mut self, mut f: impl FnMut(usize, &mut f32) -> Result<()>) -> Result<()> {
        match self {
            FeatureMatrix::Dense(m) => {
                let cols = m.cols;
                m.values.make_mut().iter_mut().enumerate().try_for_each(|(i, v)| f(i % cols, v))
            }
            FeatureMatrix::Sparse(m) => {
                m.values.iter_mut().zip(&m.col_indices).try_for_each(|(v, &c)| f(c as usize, v))
            }
        }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        match self {
            FeatureMatrix::Dense(m) => m.rows,
            FeatureMatrix::Sparse(m) => m.rows,
        }
    }

    /// Features (columns).
    pub fn cols(&self) -> usize {
        match self {
            FeatureMatrix::Dense(m) => m.cols,
            FeatureMatrix::Sparse(m) => m.cols,
        }
    }

    /// Values equal to `missing` become missing, as XGBoost's `missing` of a `DMatrix`: NaN in
    /// dense rows, dropped from CSR rows. NaN is missing whatever `missing` is (a NaN `missing`
    /// changes nothing).
    pub fn mark_missing(&mut self, missing: f32) {
        if missing.is_nan() {
            return;
        }
        match self {
            FeatureMatrix::Dense(m) => {
                m.values.make_mut().par_iter_mut().filter(|v| **v == missing).for_each(|v| *v = f32::NAN);
            }
            FeatureMatrix::Sparse(m) => {
                let (mut kept, mut end) = (0, 0);
                for r in 0..m.rows {
                    let (begin, stop) = (end, m.row_ptr[r + 1]);
                    for e in begin..stop {
                        if m.values[e] != missing {
                            (m.values[kept], m.col_indices[kept]) = (m.values[e], m.col_indices[e]);
                            kept += 1;
                        }
                    }
                    (end, m.row_ptr[r + 1]) = (stop, kept);
                }
                m.values.truncate(kept);
                m.col_indices.truncate(kept);
            }
        }
    }

    /// An error naming the first row and column holding an infinite value: missing values are
    /// NaN, and XGBoost refuses `inf` too ("Input data contains `inf`").
    pub fn check_finite(&self) -> Result<()> {
        // Blocks scanned without branches (a fold that vectorises), then the first bad block
        // searched: a per-value `position_first` cost 5 ns a value.
        let infinite_in = |values: &[f32]| {
            const BLOCK: usize = 1 << 14;
            let block = values
                .par_chunks(BLOCK)
                .position_first(|block| block.iter().fold(false, |bad, v| bad | v.is_infinite()))?;
            let at = values[block * BLOCK..].iter().position(|v| v.is_infinite())?;
            Some(block * BLOCK + at)
        };
        let (row, col, value) = match self {
            FeatureMatrix::Dense(m) => match infinite_in(&m.values) {
                Some(at) => (at / m.cols.max(1), at % m.cols.max(1), m.values[at]),
                None => return Ok(()),
            },
            FeatureMatrix::Sparse(m) => match infinite_in(&m.values) {
                Some(at) => (m.row_ptr.partition_point(|&p| p <= at) - 1, m.col_indices[at] as usize, m.values[at]),
                None => return Ok(()),
            },
        };
        Err(Error::InvalidData(format!("row {row}, feature {col}: {value} is infinite (missing values are NaN)")))
    }

    /// Calls `f(column, value)` for every present (non-missing) value of row `i`, in column order.
    pub fn for_each_present(&self, i: usize, mut f: impl FnMut(usize, f32)) {
        match self {
            FeatureMatrix::Dense(m) => {
                for (j, &v) in m.row(i).iter().enumerate() {
                    if !v.is_nan() {
                        f(j, v);
                    }
                }
            }
            FeatureMatrix::Sparse(m) => {
                for (j, v) in m.row(i) {
                    if !v.is_nan() {
                        f(j as usize, v);
                    }
                }
            }
        }
    }

    /// Row `i` written into `out` (length `cols()`), NaN where missing.
    pub fn fill_row(&self, i: usize, out: &mut [f32]) {
        match self {
            FeatureMatrix::Dense(m) => out.copy_from_slice(m.row(i)),
            FeatureMatrix::Sparse(m) => {
                out.fill(f32::NAN);
                for (j, v) in m.row(i) {
                    if (j as usize) < out.len() {
                        out[j as usize] = v;
                    }
                }
            }
        }
    }
}

/// Per-row information besides the features.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetaInfo {
    /// One label per row.
    pub labels: Vec<f32>,
    /// One weight per row, or empty (every weight 1). For ranking, XGBoost takes one weight per
    /// group; then this holds one per group.
    pub weights: Vec<f32>,
    /// `rows * outputs` initial margins, or empty.
    pub base_margin: Vec<f32>,
    /// Ranking groups as offsets (`groups + 1` entries from 0 to `rows`), or empty.
    pub group_ptr: Vec<usize>,
    /// The features' names (a CSV header's), or empty; a model trained on the data keeps them as its
    /// `feature_names`, as XGBoost's does.
    pub feature_names: Vec<String>,
    /// The features' types by XGBoost's names (`q`, `float`, `int`, `i`: numeric; `c`:
    /// categorical), or empty (all numeric); a model trained on the data keeps them as its
    /// `feature_types`.
    pub feature_types: Vec<String>,
    /// Each feature's weight in column sampling (XGBoost's `feature_weights`), or empty (uniform).
    pub feature_weights: Vec<f32>,
    /// `survival:aft`'s intervals: each row's lower bound (0 or less: left-censored), or empty.
    pub label_lower_bound: Vec<f32>,
    /// Each row's upper bound (`+∞`: right-censored; equal to the lower: an event), or empty.
    pub label_upper_bound: Vec<f32>,
}

impl MetaInfo {
    /// Checks `feature_weights` for `cols` features: empty, or one finite weight >= 0 a feature.
    pub fn check_feature_weights(weights: &[f32], cols: usize) -> Result<()> {
        if !weights.is_empty() && weights.len() != cols {
            return Err(Error::InvalidData(format!("{} feature weights for {cols} features", weights.len())));
        }
        if let Some(f) = weights.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
            return Err(Error::InvalidData(format!("feature weight {f} ({}) is not finite and >= 0", weights[f])));
        }
        Ok(())
    }

    /// Which of `cols` features are categorical (all `false` without [`MetaInfo::feature_types`]);
    /// an unknown type or a list of another length is an error naming it.
    pub fn categorical_features(&self, cols: usize) -> Result<Vec<bool>> {
        categorical_features(&self.feature_types, cols)
    }

    /// The weight of row `i` (1 when no weights are set).
    pub fn weight(&self, i: usize) -> f32 {
        if self.weights.is_empty() {
            1.0
        } else {
            self.weights[i]
        }
    }
}

/// Which of `cols` features XGBoost's feature `types` make categorical (all `false` when `types`
/// is empty); an unknown type or a list of another length is an error naming it.
pub fn categorical_features(types: &[String], cols: usize) -> Result<Vec<bool>> {
    if types.is_empty() {
        return Ok(vec![false; cols]);
    }
    if types.len() != cols {
        return Err(Error::param("feature_types", format!("{} types for {cols} features", types.len())));
    }
    types.iter().enumerate().map(|(f, t)| feature_type_is_categorical(f, t)).collect()
}

/// Whether XGBoost's feature type `name` (of feature `feature`) is categorical: `c` is; `q`,
/// `float`, `int` and `i` are not; any other name is an error.
pub fn feature_type_is_categorical(feature: usize, name: &str) -> Result<bool> {
    match name {
        "c" => Ok(true),
        "q" | "float" | "int" | "i" => Ok(false),
        _ => Err(Error::param(
            "feature_types",
            format!("feature {feature}: unknown type `{name}` (expected q, float, int, i or c)"),
        )),
    }
}

/// Features and meta information, as XGBoost's `DMatrix`.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// The features.
    pub features: FeatureMatrix,
    /// Labels, weights, base margins and query groups.
    pub info: MetaInfo,
}

impl Dataset {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.features.rows()
    }
    /// Features (columns).
    pub fn cols(&self) -> usize {
        self.features.cols()
    }
}

/// The file formats [`read_data`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataFormat {
    /// Comma- or tab-separated values ([`read_csv`]).
    Csv,
    /// LibSVM / SVMlight text ([`read_libsvm`]).
    Libsvm,
}

impl DataFormat {
    /// The format of `path`. A trailing `.gz` is ignored; then `.csv` and `.tsv` mean CSV, `.libsvm`,
    /// `.svm` and `.svmlight` mean LibSVM. Any other name (`.data`, `.train`, `.txt`, ...) is ambiguous
    /// in practice (LightGBM's `binary.train` is TSV, its `rank.train` LibSVM, its `categorical.data`
    /// LibSVM, UCI's `.data` files CSV), so the content decides: LibSVM when some of the first 100
    /// non-blank lines has `index:value` tokens after the label and no line has a token without `:`
    /// after its first token; CSV otherwise.
    pub fn detect(path: &Path) -> Result<DataFormat> {
        let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        let extension = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        match extension {
            "csv" | "tsv" => return Ok(DataFormat::Csv),
            "libsvm" | "svm" | "svmlight" => return Ok(DataFormat::Libsvm),
            _ => {}
        }
        let sample = read_sample(path, 100, 1 << 20)?;
        Ok(if libsvm::looks_like_libsvm(&sample) { DataFormat::Libsvm } else { DataFormat::Csv })
    }
}

/// Options of [`read_data`]: the format (detected when `None`) and each reader's options (the other
/// reader's are ignored).
#[derive(Clone, Debug, Default)]
pub struct ReadOptions<'a> {
    /// The file's format; `None`: from the name and content ([`DataFormat::detect`]).
    pub format: Option<DataFormat>,
    /// How a CSV file is read.
    pub csv: CsvOptions<'a>,
    /// How a LibSVM file is read.
    pub libsvm: LibsvmOptions,
    /// Where weights and query groups come from besides the file's own lines.
    pub side_files: SideFiles,
}

/// Where a data file's weights and query groups come from besides its own lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SideFiles {
    /// `FILE.weight` and `FILE.query` beside the data, when they exist (LightGBM's convention).
    #[default]
    Beside,
    /// None: only what the data file itself holds.
    Ignored,
    /// These files (either may be absent); a file named here that cannot be read is an error.
    Given {
        /// One weight per line.
        weights: Option<PathBuf>,
        /// One group size per line.
        groups: Option<PathBuf>,
    },
}

impl SideFiles {
    /// The weight file and the query-group file that reading `data` takes, if any.
    pub fn paths(&self, data: &Path) -> (Option<PathBuf>, Option<PathBuf>) {
        match self {
            SideFiles::Beside => {
                let existing = |suffix| Some(sibling(data, suffix)).filter(|p| p.is_file());
                (existing("weight"), existing("query"))
            }
            SideFiles::Ignored => (None, None),
            SideFiles::Given { weights, groups } => (weights.clone(), groups.clone()),
        }
    }
}

/// Reads `path` as [`ReadOptions::format`] says, or as [`DataFormat::detect`] finds. The categories
/// are those of [`read_csv_with_categories`]; LibSVM data has none ([`Categories::default`]).
pub fn read_data(path: &Path, options: &ReadOptions<'_>) -> Result<(Dataset, Categories)> {
    let format = match options.format {
        Some(format) => format,
        None => DataFormat::detect(path)?,
    };
    match format {
        DataFormat::Csv => csv::read_csv_with(path, &options.csv, &options.side_files),
        DataFormat::Libsvm => {
            Ok((libsvm::read_libsvm_with(path, &options.libsvm, &options.side_files)?, Categories::default()))
        }
    }
}

/// Bytes of the readers' input buffers: large enough that reading is not dominated by system calls.
const READ_BUFFER: usize = 1 << 18;

/// The most features (columns) a dataset may have. Training keeps per-feature arrays (the quantile
/// sketch's columns, cut offsets, the model's feature arrays: about 100 bytes a feature), so a
/// libsvm file naming column 4000000000 in one short line would otherwise ask for hundreds of GB;
/// beyond this it is an error naming the line. 2^24 also keeps every feature index exact as an
/// `f32` (XGBoost's JSON models and `feature_of_bin`-style arithmetic rely on small integers).
pub const MAX_FEATURES: usize = 1 << 24;

/// Opens `path` for reading, decompressing it when it starts with the gzip magic bytes (so that a
/// compressed file is read whatever its name, and a plain file named `.gz` is read as it is).
fn open_text(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::with_capacity(READ_BUFFER, file);
    // One `fill_buf` on a fresh reader of a regular file returns the file's start (or all of it).
    let head = reader.fill_buf().map_err(|e| Error::io(path, e))?;
    if head.starts_with(&[0x1f, 0x8b]) {
        // Multi-member: `cat a.gz b.gz` and bgzip files are several gzip members in a row.
        let decoder = flate2::bufread::MultiGzDecoder::new(reader);
        Ok(Box::new(BufReader::with_capacity(READ_BUFFER, decoder)))
    } else {
        Ok(Box::new(reader))
    }
}

/// The first `max_lines` whole lines of `path` (decompressed), stopping early once `max_bytes` are
/// read; for format, delimiter and header detection.
fn read_sample(path: &Path, max_lines: usize, max_bytes: usize) -> Result<Vec<u8>> {
    let mut reader = open_text(path)?;
    let mut sample = Vec::new();
    for _ in 0..max_lines {
        let n = reader.read_until(b'\n', &mut sample).map_err(|e| Error::io(path, e))?;
        if n == 0 || sample.len() >= max_bytes {
            break;
        }
    }
    Ok(sample)
}

/// `path` with `.suffix` appended to its file name (`binary.train` -> `binary.train.weight`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

fn parse_error(path: &Path, line: usize, reason: impl Into<String>) -> Error {
    Error::Parse { path: path.to_path_buf(), line, reason: reason.into() }
}

/// A field for an error message: lossy UTF-8, cut to a readable length.
fn shown(bytes: &[u8]) -> String {
    const MAX: usize = 40;
    let text = String::from_utf8_lossy(bytes);
    // Control characters (a binary file's bytes) escaped, so that no message drives the terminal.
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// What a numeric field holds.
enum Number {
    Value(f32),
    /// NaN: a missing value.
    Nan,
    /// Infinite, or finite text too large for `f32`.
    Infinite,
    /// Not a number at all.
    Invalid,
}

/// Parses a (trimmed) numeric field with Rust's correctly rounded `f32` parser, which takes what
/// `strtof` takes apart from hexadecimal: `1`, `-1.5`, `.5`, `2.`, `1e-3`, `inf`, `NaN`.
fn parse_number(bytes: &[u8]) -> Number {
    // Numbers are ASCII: rejecting other bytes first is cheap, and then `from_utf8` cannot fail.
    if bytes.is_empty() || !bytes.is_ascii() {
        return Number::Invalid;
    }
    match std::str::from_utf8(bytes).ok().and_then(|s| s.parse::<f32>().ok()) {
        Some(v) if v.is_finite() => Number::Value(v),
        Some(v) if v.is_nan() => Number::Nan,
        Some(_) => Number::Infinite,
        None => Number::Invalid,
    }
}

/// The non-blank lines of a sibling file parsed by `parse` (which says why a line is wrong), or
/// `None` when the file does not exist.
fn read_sibling<T>(
    sibling: Option<PathBuf>,
    mut parse: impl FnMut(&str) -> std::result::Result<T, String>,
) -> Result<Option<(PathBuf, Vec<T>)>> {
    let Some(sibling) = sibling else { return Ok(None) };
    let mut reader = open_text(&sibling)?;
    let mut text = String::new();
    reader.read_to_string(&mut text).map_err(|e| Error::io(&sibling, e))?;
    let mut values = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        values.push(parse(line).map_err(|reason| parse_error(&sibling, i + 1, reason))?);
    }
    Ok(Some((sibling, values)))
}

/// Completes the meta information of a file that has just been read: the groups from the `.query`
/// sibling (checked against groups already taken from `qid:` fields) and the weights from the
/// `.weight` sibling (exclusive with weights written in the file itself), then checks that the weights
/// fit the rows or groups, turning per-row weights of ranking data into XGBoost's per-group weights.
fn read_siblings(path: &Path, rows: usize, info: &mut MetaInfo, side_files: &SideFiles) -> Result<()> {
    let (weight_file, query_file) = side_files.paths(path);
    let query = read_sibling(query_file, |line| match line.parse::<usize>() {
        Ok(0) => Err("a group size of 0".to_string()),
        Ok(size) => Ok(size),
        Err(_) => Err(format!("`{}` is not a group size", shown(line.as_bytes()))),
    })?;
    if let Some((query_path, sizes)) = query {
        let mut group_ptr = Vec::with_capacity(sizes.len() + 1);
        group_ptr.push(0usize);
        for size in sizes {
            let end = group_ptr.last().copied().unwrap_or(0).saturating_add(size);
            group_ptr.push(end);
        }
        let total = group_ptr.last().copied().unwrap_or(0);
        if total != rows {
            return Err(Error::InvalidData(format!(
                "{}: the group sizes add up to {total} rows, but {} has {rows}",
                query_path.display(),
                path.display()
            )));
        }
        if !info.group_ptr.is_empty() && info.group_ptr != group_ptr {
            return Err(Error::InvalidData(format!(
                "{}: the qid fields give {} groups that differ from the {} groups of {}",
                path.display(),
                info.group_ptr.len() - 1,
                group_ptr.len() - 1,
                query_path.display()
            )));
        }
        info.group_ptr = group_ptr;
    }

    let weights = read_sibling(weight_file, |line| match parse_number(line.as_bytes()) {
        Number::Value(w) if w >= 0.0 => Ok(w),
        Number::Value(_) | Number::Nan | Number::Infinite => {
            Err(format!("weight `{}` is not finite and >= 0", shown(line.as_bytes())))
        }
        Number::Invalid => Err(format!("`{}` is not a weight", shown(line.as_bytes()))),
    })?;
    let weight_source = match weights {
        Some((weight_path, weights)) => {
            if !info.weights.is_empty() {
                return Err(Error::InvalidData(format!(
                    "{} has weights in its lines and also a weight file {}: give one of them",
                    path.display(),
                    weight_path.display()
                )));
            }
            info.weights = weights;
            weight_path
        }
        None => path.to_path_buf(),
    };
    if info.weights.is_empty() {
        return Ok(());
    }
    let count = info.weights.len();
    if info.group_ptr.is_empty() {
        if count != rows {
            return Err(Error::InvalidData(format!(
                "{}: {count} weights for the {rows} rows of {}",
                weight_source.display(),
                path.display()
            )));
        }
        return Ok(());
    }
    let groups = info.group_ptr.len() - 1;
    if count == groups {
        return Ok(());
    }
    if count != rows {
        return Err(Error::InvalidData(format!(
            "{}: {count} weights for the {rows} rows and {groups} groups of {}",
            weight_source.display(),
            path.display()
        )));
    }
    // Ranking objectives weigh groups (XGBoost takes one weight per group). LightGBM's `.weight`
    // files are per row even for ranking (LightGBM averages them over each query); they are accepted
    // when constant within each group, so that no weight is silently averaged away.
    let mut per_group = Vec::with_capacity(groups);
    for (g, bounds) in info.group_ptr.windows(2).enumerate() {
        let group = &info.weights[bounds[0]..bounds[1]];
        let Some(&first) = group.first() else {
            // Groups are never empty (sizes of 0 and rows without a group are rejected); a weight of 1
            // would be the neutral choice if one were.
            per_group.push(1.0);
            continue;
        };
        if let Some(k) = group.iter().position(|&w| w != first) {
            return Err(Error::InvalidData(format!(
                "{}: the weights of rows {} and {} (from 1) differ, but both are in group {g}; ranking \
                 takes one weight per group",
                weight_source.display(),
                bounds[0] + 1,
                bounds[0] + k + 1
            )));
        }
        per_group.push(first);
    }
    info.weights = per_group;
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    //! Helpers shared by the readers' tests, and the tests of the dispatcher and sibling files.

    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A fresh directory under the system's temporary directory, removed when dropped.
    pub(crate) struct TempDir(PathBuf);

    impl TempDir {
        pub(crate) fn new(name: &str) -> TempDir {
            static COUNTER: AtomicUsize = AtomicUsize::new(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("boost-data-{}-{n}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("create a temporary directory");
            TempDir(dir)
        }

        /// Writes `contents` to the file `name` in the directory.
        pub(crate) fn file(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
            let path = self.0.join(name);
            std::fs::write(&path, contents).expect("write a temporary file");
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    pub(crate) fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(bytes).expect("compress");
        encoder.finish().expect("compress")
    }

    /// A file of the data sets the project ships (`data/` at the workspace root, copied from the shared
    /// collection with its provenance and licenses), or of `$BOOST_DATA_DIR`.
    /// A missing directory fails the test: these tests must not pass without reading the files.
    pub(crate) fn shared_data(relative: &str) -> PathBuf {
        let root = match std::env::var_os("BOOST_DATA_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../data"),
        };
        assert!(
            root.is_dir(),
            "the shared data directory {} does not exist; the real-file tests read it (set BOOST_DATA_DIR to \
             point elsewhere)",
            root.display()
        );
        let path = root.join(relative);
        assert!(path.is_file(), "{} is missing from the shared data", path.display());
        path
    }

    /// Asserts that `result` is a parse error at `line` whose reason contains `words`.
    #[track_caller]
    pub(crate) fn expect_parse<T: std::fmt::Debug>(result: Result<T>, line: usize, words: &str) {
        match result {
            Err(Error::Parse { line: at, reason, .. }) => {
                assert_eq!(at, line, "line of `{reason}`");
                assert!(reason.contains(words), "`{reason}` does not say `{words}`");
            }
            other => panic!("expected a parse error at line {line}, got {other:?}"),
        }
    }

    /// Asserts that `result` is an `InvalidData` error whose message contains `words`.
    #[track_caller]
    pub(crate) fn expect_invalid<T: std::fmt::Debug>(result: Result<T>, words: &str) {
        match result {
            Err(Error::InvalidData(message)) => assert!(message.contains(words), "`{message}` does not say `{words}`"),
            other => panic!("expected invalid data, got {other:?}"),
        }
    }

    pub(crate) fn dense(dataset: &Dataset) -> &DenseMatrix {
        match &dataset.features {
            FeatureMatrix::Dense(m) => m,
            FeatureMatrix::Sparse(_) => panic!("expected a dense matrix"),
        }
    }

    pub(crate) fn sparse(dataset: &Dataset) -> &CsrMatrix {
        match &dataset.features {
            FeatureMatrix::Sparse(m) => m,
            FeatureMatrix::Dense(_) => panic!("expected a sparse matrix"),
        }
    }

    #[test]
    fn a_missing_value_is_nan_in_dense_rows_and_dropped_from_csr_rows() {
        let mut dense = FeatureMatrix::Dense(DenseMatrix::new(2, 2, vec![-999.0, 1.0, 2.0, -999.0]));
        dense.mark_missing(-999.0);
        let FeatureMatrix::Dense(m) = &dense else { unreachable!() };
        assert!(m.values[0].is_nan() && m.values[3].is_nan() && m.values[1] == 1.0 && m.values[2] == 2.0);
        let csr = CsrMatrix {
            rows: 3,
            cols: 3,
            row_ptr: vec![0, 2, 3, 5],
            col_indices: vec![0, 2, 1, 0, 2],
            values: vec![-999.0, 4.0, -999.0, 5.0, 6.0],
        };
        let mut sparse = FeatureMatrix::Sparse(csr);
        sparse.mark_missing(-999.0);
        let FeatureMatrix::Sparse(m) = &sparse else { unreachable!() };
        assert_eq!((m.row_ptr.as_slice(), m.col_indices.as_slice()), (&[0, 1, 1, 3][..], &[2, 0, 2][..]));
        assert_eq!(m.values, [4.0, 5.0, 6.0]);
        sparse.mark_missing(f32::NAN);
        assert_eq!(sparse.rows(), 3, "a NaN `missing` changes nothing");
    }

    #[test]
    fn format_by_extension_then_content() {
        let dir = TempDir::new("format");
        let libsvm = b"1 0:1 3:2.5\n0 1:1\n";
        let tsv = b"1\t0.5\t2\n0\t1.5\t3\n";
        // The extension decides when it is unambiguous, even against the content.
        assert_eq!(DataFormat::detect(&dir.file("a.csv", libsvm)).unwrap(), DataFormat::Csv);
        assert_eq!(DataFormat::detect(&dir.file("a.TSV.gz", libsvm)).unwrap(), DataFormat::Csv);
        assert_eq!(DataFormat::detect(&dir.file("a.svm", tsv)).unwrap(), DataFormat::Libsvm);
        assert_eq!(DataFormat::detect(&dir.file("a.libsvm", tsv)).unwrap(), DataFormat::Libsvm);
        // Otherwise the content (gzip or not).
        assert_eq!(DataFormat::detect(&dir.file("b.train", tsv)).unwrap(), DataFormat::Csv);
        assert_eq!(DataFormat::detect(&dir.file("c.train", libsvm)).unwrap(), DataFormat::Libsvm);
        assert_eq!(DataFormat::detect(&dir.file("c.data", gzip(libsvm))).unwrap(), DataFormat::Libsvm);
        assert_eq!(DataFormat::detect(&dir.file("d.data", b"1,2,3\n4,5,6\n")).unwrap(), DataFormat::Csv);
        assert_eq!(DataFormat::detect(&dir.file("e.txt", b"# comment\n\n1 qid:3 2:1\n")).unwrap(), DataFormat::Libsvm);
        // A space-separated line with a token lacking `:` is not LibSVM.
        assert_eq!(DataFormat::detect(&dir.file("f.txt", b"1 2:1\n1 2 3\n")).unwrap(), DataFormat::Csv);
        assert!(matches!(DataFormat::detect(&dir.0.join("absent.txt")), Err(Error::Io { .. })));
    }

    #[test]
    fn read_data_dispatches_and_can_be_forced() {
        let dir = TempDir::new("dispatch");
        let path = dir.file("x.train", b"1 0:1 3:2.5\n0 1:1\n");
        let (data, categories) = read_data(&path, &ReadOptions::default()).unwrap();
        assert_eq!((data.rows(), data.cols()), (2, 4));
        assert!(matches!(data.features, FeatureMatrix::Sparse(_)));
        assert_eq!(categories, Categories::default());

        let path = dir.file("y.train", b"1\tred\n0\tblue\n");
        let (data, categories) = read_data(&path, &ReadOptions::default()).unwrap();
        assert_eq!(dense(&data).values, vec![1.0, 0.0]);
        assert_eq!(categories.features, vec![Some(vec!["blue".to_string(), "red".to_string()])]);

        // Forced: a LibSVM-looking file read as CSV fails on the tokens instead.
        let path = dir.file("z.txt", b"1 0:1\n0 0:2\n");
        let forced = ReadOptions { format: Some(DataFormat::Libsvm), ..ReadOptions::default() };
        assert_eq!(read_data(&path, &forced).unwrap().0.cols(), 1);
        let options = ReadOptions {
            format: Some(DataFormat::Csv),
            csv: CsvOptions { delimiter: Some(b' '), ..CsvOptions::default() },
            ..ReadOptions::default()
        };
        let (data, categories) = read_data(&path, &options).unwrap();
        assert_eq!(data.cols(), 1);
        assert_eq!(categories.features, vec![Some(vec!["0:1".to_string(), "0:2".to_string()])]);
    }

    #[test]
    fn read_data_on_shared_files() {
        let agaricus = shared_data("agaricus/agaricus.txt.train");
        let (data, _) = read_data(&agaricus, &ReadOptions::default()).unwrap();
        assert_eq!((data.rows(), data.cols()), (6513, 127));
        let higgs = shared_data("higgs_lgbm_sample/binary.train");
        let (data, _) = read_data(&higgs, &ReadOptions::default()).unwrap();
        assert_eq!((data.rows(), data.cols()), (7000, 28));
        let categorical = shared_data("lgbm_categorical/categorical.train");
        assert_eq!(DataFormat::detect(&categorical).unwrap(), DataFormat::Libsvm);
        let dermatology = shared_data("dermatology/dermatology.train.data");
        assert_eq!(DataFormat::detect(&dermatology).unwrap(), DataFormat::Csv);
    }

    #[test]
    fn gzip_is_found_by_its_bytes() {
        let dir = TempDir::new("gzip");
        let text = b"line one\nline two\n";
        for name in ["plain.gz", "compressed", "compressed.gz"] {
            let contents = if name == "plain.gz" { text.to_vec() } else { gzip(text) };
            let path = dir.file(name, contents);
            let mut read = String::new();
            open_text(&path).unwrap().read_to_string(&mut read).unwrap();
            assert_eq!(read.as_bytes(), text, "{name}");
        }
        // Two gzip members in a row are one stream.
        let mut two = gzip(b"a\n");
        two.extend(gzip(b"b\n"));
        let mut read = String::new();
        open_text(&dir.file("two.gz", two)).unwrap().read_to_string(&mut read).unwrap();
        assert_eq!(read, "a\nb\n");
        // A corrupt stream is an I/O error naming the file, not a panic.
        let mut corrupt = gzip(&[b'x'; 1000]);
        corrupt.truncate(corrupt.len() / 2);
        let path = dir.file("corrupt.gz", corrupt);
        let mut sink = String::new();
        assert!(open_text(&path).unwrap().read_to_string(&mut sink).is_err());
        assert!(matches!(read_libsvm(&path, &LibsvmOptions::default()), Err(Error::Io { .. })));
        assert!(matches!(read_csv(&path, &CsvOptions::default()), Err(Error::Io { .. })));
        // An empty file.
        let empty = dir.file("empty", b"");
        expect_invalid(read_libsvm(&empty, &LibsvmOptions::default()), "no data rows");
        expect_invalid(read_csv(&empty, &CsvOptions::default()), "no data rows");
    }

    #[test]
    fn weight_sibling() {
        let dir = TempDir::new("weights");
        let path = dir.file("w.csv", b"1,2\n0,3\n1,4\n");
        dir.file("w.csv.weight", b"0.5\n2\n\n1.5\n");
        let data = read_csv(&path, &CsvOptions::default()).unwrap();
        assert_eq!(data.info.weights, vec![0.5, 2.0, 1.5]);
        assert_eq!(data.info.weight(1), 2.0);

        dir.file("w.csv.weight", b"0.5\n2\n");
        expect_invalid(read_csv(&path, &CsvOptions::default()), "2 weights for the 3 rows");
        dir.file("w.csv.weight", b"0.5\nheavy\n1\n");
        match read_csv(&path, &CsvOptions::default()) {
            Err(Error::Parse { path, line, reason }) => {
                assert!(path.ends_with("w.csv.weight"));
                assert_eq!(line, 2);
                assert!(reason.contains("heavy"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        dir.file("w.csv.weight", b"0.5\n-1\n1\n");
        expect_parse(read_csv(&path, &CsvOptions::default()), 2, ">= 0");
    }

    #[test]
    fn query_sibling_and_ranking_weights() {
        let dir = TempDir::new("query");
        let path = dir.file("r.txt", b"2 1:1\n1 1:2\n0 2:1\n1 1:1\n0 2:2\n");
        dir.file("r.txt.query", b"2\n3\n");
        let data = read_libsvm(&path, &LibsvmOptions::default()).unwrap();
        assert_eq!(data.info.group_ptr, vec![0, 2, 5]);

        // Per-group weights are kept; per-row weights constant within groups become per-group.
        dir.file("r.txt.weight", b"1\n3\n");
        assert_eq!(read_libsvm(&path, &LibsvmOptions::default()).unwrap().info.weights, vec![1.0, 3.0]);
        dir.file("r.txt.weight", b"1\n1\n3\n3\n3\n");
        assert_eq!(read_libsvm(&path, &LibsvmOptions::default()).unwrap().info.weights, vec![1.0, 3.0]);
        dir.file("r.txt.weight", b"1\n1\n3\n2\n3\n");
        expect_invalid(read_libsvm(&path, &LibsvmOptions::default()), "rows 3 and 4 (from 1) differ");
        dir.file("r.txt.weight", b"1\n1\n3\n");
        expect_invalid(read_libsvm(&path, &LibsvmOptions::default()), "3 weights for the 5 rows and 2 groups");
        std::fs::remove_file(sibling(&path, "weight")).unwrap();

        dir.file("r.txt.query", b"2\n2\n");
        expect_invalid(read_libsvm(&path, &LibsvmOptions::default()), "add up to 4 rows");
        dir.file("r.txt.query", b"2\n0\n3\n");
        expect_parse(read_libsvm(&path, &LibsvmOptions::default()), 2, "group size of 0");
        dir.file("r.txt.query", b"2\nthree\n");
        expect_parse(read_libsvm(&path, &LibsvmOptions::default()), 2, "three");

        // The same rule for CSV files.
        let path = dir.file("r.csv", b"1,2\n0,3\n1,4\n");
        dir.file("r.csv.query", b"1\n2\n");
        assert_eq!(read_csv(&path, &CsvOptions::default()).unwrap().info.group_ptr, vec![0, 1, 3]);
    }
}
