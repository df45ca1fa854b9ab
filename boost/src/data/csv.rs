//! The CSV / TSV reader.
//!
//! Fields are trimmed of ASCII blanks (UCI files write `, <=50K`) and may be quoted (RFC 4180). A field
//! that is one of [`CsvOptions::missing_tokens`] is missing (NaN). Every data line must have as many
//! fields as the first line; blank lines are skipped.
//!
//! Column kinds: with no [`CsvOptions::categories`] (a training file), a column is a *string* column
//! when it is named in [`CsvOptions::categorical`] or when none of its fields parses as a number, and
//! *numeric* otherwise; in a numeric column, a field that is neither a number nor a missing token is
//! an error naming its line and column (a typo must not turn a column of numbers into categories).
//! A string column's distinct strings, sorted by bytes (code point order), get the codes `0..k` as
//! `f32` values, and the column is a categorical feature (type `c` in [`MetaInfo::feature_types`],
//! numeric columns `q`; no types when every column is numeric). The label column follows the same rule (string labels become `0..k`; numeric labels
//! are kept as they are). With categories (a test file), the training file's kinds and codes are
//! applied: a string unseen in training is a missing feature value (and an error as a label), and a
//! non-number in a numeric column is an error.

use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::path::Path;

use ::csv::{ByteRecord, ReaderBuilder};
use serde::{Deserialize, Serialize};

use super::{
    open_text, parse_error, parse_number, read_sample, read_siblings, shown, Dataset, DenseMatrix, FeatureMatrix,
    MetaInfo, Number, SideFiles,
};
use crate::{Error, Result};

/// The missing-value tokens of [`CsvOptions::default`]: the empty field and the usual spellings of
/// NA (R, pandas, UCI's `?`).
pub const DEFAULT_MISSING_TOKENS: [&str; 7] = ["", "?", "NA", "NaN", "nan", "N/A", "null"];

/// Lines read to detect the delimiter and the header.
const SAMPLE_LINES: usize = 1000;
/// Bytes after which the sample stops (at the end of a line) however few lines it has.
const SAMPLE_BYTES: usize = 4 << 20;
/// Distinct strings a column may hold: codes are `f32` values, exact up to 2^24.
const MAX_CATEGORIES: usize = 1 << 24;

/// A column of a CSV file: its 0-based position among all of the file's columns (the label's
/// included), or its name in the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    /// The column at this 0-based index.
    Index(usize),
    /// The column of this header name.
    Name(String),
}

/// Options of [`read_csv`] and [`read_csv_with_categories`].
#[derive(Clone, Debug, PartialEq)]
pub struct CsvOptions<'a> {
    /// The field delimiter. `None`: the first of tab, semicolon, comma and vertical bar that the first
    /// line holds (a comma if none).
    pub delimiter: Option<u8>,
    /// Whether the first line is a header. `None`: a header when the label or an ignored column is
    /// given by name; otherwise detected from the first 1000 lines: the first line is a header when
    /// one of its fields is not a number (nor a missing token) while the same column holds numbers
    /// (and at least one) in all the following lines. A file whose columns all hold strings is taken
    /// as having no header: say `Some(true)` for it. A file of one line with such a field is a header
    /// over no rows (an error).
    pub has_header: Option<bool>,
    /// The label column (default: column 0, LightGBM's default); unused without [`CsvOptions::has_label`].
    pub label: Column,
    /// `survival:aft`'s intervals: the column of the labels' upper bounds (`inf` above a
    /// right-censored row); the label column then holds the lower bounds, and the dataset gets both
    /// as its label bounds (the labels stay the lower bounds). Default none.
    pub label_upper_bound: Option<Column>,
    /// Whether the file has a label column (default true). Data to predict may have none: then every
    /// column that is not ignored is a feature and the dataset has no labels.
    pub has_label: bool,
    /// Columns that are neither label nor feature (an identifier, a leaking target); default none.
    pub ignore_columns: Vec<Column>,
    /// Columns read as strings (categories) even where their fields parse as numbers, such as codes
    /// or model names that mix `100` and `470v/7`; default none (a column is then categorical only
    /// when no field of it is a number). Ignored with [`CsvOptions::categories`], which fixes the kinds.
    pub categorical: Vec<Column>,
    /// Fields (compared after trimming) that mean "missing"; default [`DEFAULT_MISSING_TOKENS`].
    pub missing_tokens: Vec<String>,
    /// The column kinds and string codes of the training file, to read a test file with the same
    /// encoding; `None` for a training file (kinds and codes are learned from it).
    pub categories: Option<&'a Categories>,
    /// The feature names a model was trained with (its `feature_names`), to read data for it: a
    /// header's feature columns are matched to them by name, in any order, and a name missing from
    /// either side is an error. Without a header, or with no names given, columns are taken in order.
    pub feature_names: Option<&'a [String]>,
}

impl Default for CsvOptions<'_> {
    fn default() -> Self {
        CsvOptions {
            delimiter: None,
            has_header: None,
            label: Column::Index(0),
            label_upper_bound: None,
            has_label: true,
            ignore_columns: Vec::new(),
            categorical: Vec::new(),
            missing_tokens: DEFAULT_MISSING_TOKENS.iter().map(|t| t.to_string()).collect(),
            categories: None,
            feature_names: None,
        }
    }
}

/// The string encoding of a CSV training file, to be applied to the files read after it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Categories {
    /// One entry per feature column (in the dataset's column order): the sorted distinct strings of
    /// a string column (a value's code is its position), `None` for a numeric column.
    pub features: Vec<Option<Vec<String>>>,
    /// Empty, or one entry per feature: XGBoost's type code (`CatIndexType`: 9 to 16 for `i8`,
    /// `u8`, ..., `u64`) of a feature whose categories are integers named in decimal (pandas'
    /// categories of an integer dtype), `None` for strings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<Option<i64>>,
    /// The sorted distinct label strings (a label's value is its position), `None` for numeric labels.
    pub labels: Option<Vec<String>>,
}

impl Categories {
    /// The code of `value` in string column `feature`, or `None` if the column is numeric or
    /// `value` is not one of its strings.
    pub fn code(&self, feature: usize, value: &str) -> Option<u32> {
        let strings = self.features.get(feature)?.as_ref()?;
        strings.binary_search_by(|s| s.as_str().cmp(value)).ok().and_then(|i| u32::try_from(i).ok())
    }
}

/// Reads a CSV or TSV file (plain or gzip) into a dense dataset; see [`read_csv_with_categories`].
pub fn read_csv(path: &Path, options: &CsvOptions<'_>) -> Result<Dataset> {
    read_csv_with_categories(path, options).map(|(dataset, _)| dataset)
}

/// Reads a CSV or TSV file (plain or gzip) into a dense dataset, with the `.weight` and `.query`
/// siblings when they exist (see the [module](crate::data) docs), and returns the file's string
/// encoding: learned from the file, or `options.categories` when given. The features are the columns
/// other than the label and the ignored ones, in file order.
pub fn read_csv_with_categories(path: &Path, options: &CsvOptions<'_>) -> Result<(Dataset, Categories)> {
    read_csv_with(path, options, &SideFiles::Beside)
}

/// [`read_csv_with_categories`] with the weights and groups from `side_files`.
pub(crate) fn read_csv_with(
    path: &Path,
    options: &CsvOptions<'_>,
    side_files: &SideFiles,
) -> Result<(Dataset, Categories)> {
    let read = read_csv_pass(path, options, side_files, None)?;
    let features = FeatureMatrix::Dense(DenseMatrix { rows: read.rows, cols: read.cols, values: read.values.into() });
    Ok((Dataset { features, info: read.info }, read.categories))
}

/// Hands over the rows read so far every `.0` rows (and the last ones at the end) while a pass
/// reads: `.1(rows, values, labels)`, the values row-major and taken from the pass, which then
/// holds no more than a batch. An error stops the pass.
pub(crate) type Flush<'f> = (usize, &'f mut dyn FnMut(usize, Vec<f32>, Vec<f32>) -> Result<()>);

/// What a pass over a CSV file gives: the values (none handed over by a [`Flush`]), their shape,
/// the labels (idem), weights, groups and feature names and types, and the categories.
pub(crate) struct CsvRead {
    pub values: Vec<f32>,
    pub rows: usize,
    pub cols: usize,
    pub info: MetaInfo,
    pub categories: Categories,
}

/// One read of a CSV file (see [`read_csv_with_categories`]), its rows kept or handed over by
/// `flush`. Learned string codes replace first-appearance ids at the end, so rows handed over
/// hold codes only when `options.categories` gives them.
pub(crate) fn read_csv_pass(
    path: &Path,
    options: &CsvOptions<'_>,
    side_files: &SideFiles,
    flush: Option<Flush<'_>>,
) -> Result<CsvRead> {
    let sample = read_sample(path, SAMPLE_LINES, SAMPLE_BYTES)?;
    let first_line = sample.split(|&b| b == b'\n').find(|line| !line.trim_ascii().is_empty()).unwrap_or_default();
    let delimiter = options.delimiter.unwrap_or_else(|| detect_delimiter(first_line));
    let missing = MissingTokens::new(&options.missing_tokens);
    let records = sample_records(&sample, delimiter);
    let Some(first) = records.first() else {
        return Err(Error::InvalidData(format!("{}: no data rows", path.display())));
    };
    let names_used = std::iter::once(&options.label)
        .filter(|_| options.has_label)
        .chain(&options.label_upper_bound)
        .chain(&options.ignore_columns)
        .chain(&options.categorical)
        .any(|c| matches!(c, Column::Name(_)));
    let has_header = match options.has_header {
        Some(has_header) => has_header,
        None => names_used || detect_header(&records, &missing),
    };
    let names =
        has_header.then(|| first.iter().map(|f| String::from_utf8_lossy(f.trim_ascii()).into_owned()).collect());
    let layout = Layout::new(path, first.len(), names, options)?;

    let given = options.categories;
    let (features, label): (Vec<Kind<'_>>, Kind<'_>) = match given {
        Some(categories) => {
            if categories.features.len() != layout.features {
                return Err(Error::InvalidData(format!(
                    "{}: {} feature columns, but the model was trained on {} (the label column {})",
                    path.display(),
                    layout.features,
                    categories.features.len(),
                    if options.has_label { "excluded; data without one must say so" } else { "absent" },
                )));
            }
            // Codes are found by binary search: strings out of order would be given wrong codes.
            let sorted = |strings: &Option<Vec<String>>| strings.iter().flatten().is_sorted_by(|a, b| a < b);
            if let Some(j) = categories.features.iter().position(|s| !sorted(s)) {
                return Err(Error::InvalidData(format!(
                    "the categories given for feature column {j} are not sorted and distinct"
                )));
            }
            if !sorted(&categories.labels) {
                return Err(Error::InvalidData("the label categories given are not sorted and distinct".to_string()));
            }
            (categories.features.iter().map(Kind::given).collect(), Kind::given(&categories.labels))
        }
        None => {
            let kind = |c: usize| {
                if layout.categorical[c] {
                    Kind::Learn(Interner::default(), Declared::Yes)
                } else {
                    Kind::Numeric
                }
            };
            let features = layout.roles.iter().enumerate().filter(|(_, r)| matches!(r, Role::Feature(_)));
            let label = layout.roles.iter().position(|r| *r == Role::Label).map_or(Kind::Numeric, kind);
            (features.map(|(c, _)| kind(c)).collect(), label)
        }
    };
    let mut pass = Pass {
        path,
        layout: &layout,
        missing: &missing,
        learn: given.is_none(),
        features: features.into_iter().map(ColumnState::new).collect(),
        label: ColumnState::new(label),
        values: Vec::new(),
        labels: Vec::new(),
        upper_bounds: Vec::new(),
        rows: 0,
        flush,
    };
    pass.run(delimiter, has_header)?;
    pass.finish(given, side_files)
}

/// The delimiter of a file whose first line is `line`: the first of tab, semicolon (European CSV,
/// whose numbers may hold decimal commas), comma and vertical bar that it holds; a comma if none.
fn detect_delimiter(line: &[u8]) -> u8 {
    [b'\t', b';', b',', b'|'].into_iter().find(|d| line.contains(d)).unwrap_or(b',')
}

/// The missing-value tokens, trimmed as the fields are.
struct MissingTokens(Vec<Vec<u8>>);

impl MissingTokens {
    fn new(tokens: &[String]) -> Self {
        MissingTokens(tokens.iter().map(|t| t.as_bytes().trim_ascii().to_vec()).collect())
    }

    fn contains(&self, field: &[u8]) -> bool {
        self.0.iter().any(|t| t.as_slice() == field)
    }
}

/// The records of the detection sample (up to the first one the parser rejects: the full read
/// reports that one), blank lines left out.
fn sample_records(sample: &[u8], delimiter: u8) -> Vec<ByteRecord> {
    let mut reader = ReaderBuilder::new().delimiter(delimiter).has_headers(false).flexible(true).from_reader(sample);
    let mut records = Vec::new();
    let mut record = ByteRecord::new();
    while let Ok(true) = reader.read_byte_record(&mut record) {
        if !is_blank(&record) {
            records.push(record.clone());
        }
    }
    records
}

/// A line of blanks, which the CSV parser returns as one field.
fn is_blank(record: &ByteRecord) -> bool {
    record.len() == 1 && record[0].trim_ascii().is_empty()
}

/// The header rule of [`CsvOptions::has_header`].
fn detect_header(records: &[ByteRecord], missing: &MissingTokens) -> bool {
    let Some((first, rest)) = records.split_first() else {
        return false;
    };
    let is_number = |field: &[u8]| !matches!(parse_number(field), Number::Invalid);
    if rest.is_empty() {
        // One line with a name on it is a header over no data (an error later), not one row.
        return first.iter().map(<[u8]>::trim_ascii).any(|f| !missing.contains(f) && !is_number(f));
    }
    first.iter().enumerate().any(|(c, field)| {
        let field = field.trim_ascii();
        if missing.contains(field) || is_number(field) {
            return false;
        }
        let mut present = rest.iter().filter_map(|r| r.get(c)).map(<[u8]>::trim_ascii).filter(|f| !missing.contains(f));
        let Some(next) = present.next() else {
            return false;
        };
        is_number(next) && present.all(is_number)
    })
}

/// What each column of the file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Label,
    /// The label's upper bound ([`CsvOptions::label_upper_bound`]).
    UpperBound,
    Ignored,
    /// The column of the dataset it becomes.
    Feature(usize),
}

struct Layout {
    roles: Vec<Role>,
    /// Per file column: named in [`CsvOptions::categorical`].
    categorical: Vec<bool>,
    /// The number of feature columns.
    features: usize,
    /// The header's names, if the file has a header.
    names: Option<Vec<String>>,
    /// The feature columns' names in feature order (from the header; empty without one).
    feature_names: Vec<String>,
}

impl Layout {
    fn new(path: &Path, columns: usize, names: Option<Vec<String>>, options: &CsvOptions<'_>) -> Result<Layout> {
        let resolve = |column: &Column, option: &str| -> Result<usize> {
            match column {
                Column::Index(i) if *i < columns => Ok(*i),
                Column::Index(i) => Err(Error::param(
                    option,
                    format!("column {i} does not exist: {} has {columns} columns", path.display()),
                )),
                Column::Name(name) => {
                    let Some(names) = &names else {
                        return Err(Error::param(
                            option,
                            format!("column `{name}` is named, but {} has no header", path.display()),
                        ));
                    };
                    let mut found = names.iter().enumerate().filter(|(_, n)| *n == name).map(|(i, _)| i);
                    match (found.next(), found.next()) {
                        (Some(i), None) => Ok(i),
                        (None, _) => Err(Error::param(
                            option,
                            format!("no column is named `{name}` in the header of {}", path.display()),
                        )),
                        (Some(_), Some(_)) => Err(Error::param(
                            option,
                            format!("several columns are named `{name}` in the header of {}", path.display()),
                        )),
                    }
                }
            }
        };
        let mut roles = vec![Role::Feature(0); columns];
        let label = options.has_label.then(|| resolve(&options.label, "label")).transpose()?;
        if let Some(label) = label {
            roles[label] = Role::Label;
        }
        if let Some(column) = &options.label_upper_bound {
            let c = resolve(column, "label_upper_bound")?;
            if label.is_none_or(|l| l == c) {
                let why = if label.is_none() { "needs a label column (the lower bounds)" } else { "is the label" };
                return Err(Error::param("label_upper_bound", format!("column {c} {why}")));
            }
            roles[c] = Role::UpperBound;
        }
        for column in &options.ignore_columns {
            let c = resolve(column, "ignore_columns")?;
            if Some(c) == label || roles[c] == Role::UpperBound {
                return Err(Error::param("ignore_columns", format!("column {c} is the label or its upper bound")));
            }
            roles[c] = Role::Ignored;
        }
        let mut categorical = vec![false; columns];
        for column in &options.categorical {
            categorical[resolve(column, "categorical")?] = true;
        }
        let mut features = 0;
        for role in &mut roles {
            if let Role::Feature(j) = role {
                *j = features;
                features += 1;
            }
        }
        let mut layout = Layout { roles, categorical, features, names, feature_names: Vec::new() };
        if let Some(names) = &layout.names {
            layout.feature_names = (0..columns).filter(|&c| layout.is_feature(c)).map(|c| names[c].clone()).collect();
            if let Some(expected) = options.feature_names.filter(|e| !e.is_empty()) {
                layout.match_names(path, expected)?;
            }
        }
        Ok(layout)
    }

    fn is_feature(&self, c: usize) -> bool {
        matches!(self.roles[c], Role::Feature(_))
    }

    /// Maps the header's feature columns to the model's features by name (`expected`, in the model's
    /// order): the file's columns may come in any order, but must be the model's, each once.
    fn match_names(&mut self, path: &Path, expected: &[String]) -> Result<()> {
        if self.feature_names == expected {
            return Ok(());
        }
        let mismatch = |reason: String| {
            Error::InvalidData(format!(
                "{}: {reason}; the model's features are {}",
                path.display(),
                quoted_list(expected)
            ))
        };
        // Each name's first position (a lookup, not a scan a column: files may have many columns).
        let mut position = std::collections::HashMap::with_capacity(expected.len());
        for (j, e) in expected.iter().enumerate() {
            position.entry(e.as_str()).or_insert(j);
        }
        let mut seen = vec![false; expected.len()];
        for c in 0..self.roles.len() {
            if !self.is_feature(c) {
                continue;
            }
            let name = &self.names.as_ref().expect("names were read")[c];
            let Some(&j) = position.get(name.as_str()) else {
                return Err(mismatch(format!("{} is not one of the model's features", self.describe(c))));
            };
            if std::mem::replace(&mut seen[j], true) {
                return Err(mismatch(format!("{} names a feature a second time", self.describe(c))));
            }
            self.roles[c] = Role::Feature(j);
        }
        let missing: Vec<String> = expected.iter().zip(&seen).filter(|(_, s)| !**s).map(|(e, _)| e.clone()).collect();
        if !missing.is_empty() {
            let label = self.roles.iter().position(|r| *r == Role::Label);
            let label_name = label.and_then(|c| self.names.as_ref().map(|names| &names[c]));
            let hint = match label_name {
                Some(name) if missing.contains(name) => {
                    format!(
                        " (`{}` is read as the label: data without a label column must say so)",
                        shown(name.as_bytes())
                    )
                }
                _ => String::new(),
            };
            return Err(mismatch(format!("the header lacks {}{hint}", quoted_list(&missing))));
        }
        self.feature_names = expected.to_vec();
        Ok(())
    }

    /// A column for an error message: its index, and its name if the file has a header.
    fn describe(&self, c: usize) -> String {
        match self.names.as_ref().and_then(|names| names.get(c)) {
            Some(name) => format!("column {c} (`{}`)", shown(name.as_bytes())),
            None => format!("column {c}"),
        }
    }
}

/// Names as `a`, `b`, `c` (the first 20, then how many more).
fn quoted_list(names: &[String]) -> String {
    let mut text: Vec<String> = names.iter().take(20).map(|n| format!("`{}`", shown(n.as_bytes()))).collect();
    if names.len() > 20 {
        text.push(format!("and {} more", names.len() - 20));
    }
    text.join(", ")
}

/// How a column's fields are read.
enum Kind<'c> {
    Numeric,
    /// Strings learned from this file; until the end of the read, values are first-appearance ids.
    Learn(Interner, Declared),
    /// The training file's sorted strings: a value is its position.
    Known(&'c [String]),
}

/// Whether a string column was named categorical by the user, or found to hold no number (then a
/// number later in it is an error: the column mixes the two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Declared {
    Yes,
    /// Found from its first non-missing field, on `line`.
    Found {
        line: usize,
    },
}

impl<'c> Kind<'c> {
    /// The kind of a column of the training file: strings or numbers.
    fn given(strings: &'c Option<Vec<String>>) -> Self {
        strings.as_deref().map_or(Kind::Numeric, Kind::Known)
    }
}

struct ColumnState<'c> {
    kind: Kind<'c>,
    /// The first number the column gave, and its line: why a string in it is an error.
    first_number: Option<usize>,
}

impl<'c> ColumnState<'c> {
    fn new(kind: Kind<'c>) -> Self {
        ColumnState { kind, first_number: None }
    }
}

/// The distinct strings of a column by first appearance.
#[derive(Default)]
struct Interner {
    ids: HashMap<Vec<u8>, u32>,
    strings: Vec<String>,
}

impl Interner {
    fn intern(&mut self, field: &[u8]) -> std::result::Result<f32, String> {
        if let Some(&id) = self.ids.get(field) {
            return Ok(id as f32);
        }
        let text = std::str::from_utf8(field).map_err(|_| format!("`{}` is not valid UTF-8", shown(field)))?;
        if self.strings.len() >= MAX_CATEGORIES {
            return Err(format!("more than {MAX_CATEGORIES} distinct strings"));
        }
        let id = self.strings.len() as u32;
        self.ids.insert(field.to_vec(), id);
        self.strings.push(text.to_owned());
        Ok(id as f32)
    }

    /// The strings sorted, and for each first-appearance id its position among them.
    fn sorted(self) -> (Vec<String>, Vec<u32>) {
        let mut strings: Vec<(usize, String)> = self.strings.into_iter().enumerate().collect();
        strings.sort_unstable_by(|a, b| a.1.cmp(&b.1));
        let mut rank = vec![0u32; strings.len()];
        for (position, (id, _)) in strings.iter().enumerate() {
            rank[*id] = position as u32;
        }
        (strings.into_iter().map(|(_, s)| s).collect(), rank)
    }
}

/// What a field that is not a missing token gives.
enum Field {
    Value(f32),
    Nan,
    Infinite,
    /// Not a number, in a column that must hold numbers (its kind is given).
    NotANumber,
    /// A string of a string column that the training file did not have.
    Unseen,
}

/// Reads a (trimmed, not missing) field of a column on `line`. While kinds are learned, a column
/// whose first field is not a number becomes a string column; a non-number after numbers, or a
/// number after strings, in a column not named categorical, is an error.
fn read_field(
    state: &mut ColumnState<'_>,
    field: &[u8],
    learn: bool,
    line: usize,
) -> std::result::Result<Field, String> {
    let number = parse_number(field);
    match &mut state.kind {
        Kind::Numeric => match number {
            Number::Value(v) => {
                state.first_number.get_or_insert(line);
                Ok(Field::Value(v))
            }
            Number::Nan => Ok(Field::Nan),
            Number::Infinite => Ok(Field::Infinite),
            Number::Invalid if learn => match state.first_number {
                Some(first) => Err(format!(
                    "`{}` is not a number, but the column holds numbers (from line {first}); name the \
                     column categorical if it holds categories",
                    shown(field)
                )),
                None => {
                    let mut interner = Interner::default();
                    let id = interner.intern(field)?;
                    state.kind = Kind::Learn(interner, Declared::Found { line });
                    Ok(Field::Value(id))
                }
            },
            Number::Invalid => Ok(Field::NotANumber),
        },
        Kind::Learn(_, Declared::Found { line: first }) if !matches!(number, Number::Invalid) => Err(format!(
            "`{}` is a number, but the column holds strings (from line {first}); name the column \
             categorical if it holds categories, or correct the strings",
            shown(field)
        )),
        Kind::Learn(interner, _) => interner.intern(field).map(Field::Value),
        Kind::Known(strings) => Ok(match strings.binary_search_by(|s| s.as_bytes().cmp(field)) {
            Ok(code) => Field::Value(code as f32),
            Err(_) => Field::Unseen,
        }),
    }
}

/// The value of a field of the label column: labels are never missing, NaN or infinite.
fn label_value(
    state: &mut ColumnState<'_>,
    field: &[u8],
    missing: &MissingTokens,
    learn: bool,
    line: usize,
) -> std::result::Result<f32, String> {
    if missing.contains(field) {
        return Err(format!("the label is missing (`{}`)", shown(field)));
    }
    match read_field(state, field, learn, line)? {
        Field::Value(v) => Ok(v),
        Field::Nan => Err("the label is NaN".to_string()),
        Field::Infinite => Err(format!("the label `{}` is infinite", shown(field))),
        Field::NotANumber => {
            Err(format!("the label `{}` is not a number (the training file's labels are numbers)", shown(field)))
        }
        Field::Unseen => Err(format!("the label `{}` is not one of the training file's labels", shown(field))),
    }
}

/// The value of a field of the label's upper-bound column: a number, `inf` included.
fn upper_bound_value(field: &[u8], missing: &MissingTokens) -> std::result::Result<f32, String> {
    let value = std::str::from_utf8(field).ok().and_then(|text| text.parse::<f32>().ok());
    match value {
        Some(v) if !v.is_nan() && !missing.contains(field) => Ok(v),
        _ => Err(format!("the label's upper bound `{}` is not a number (`inf` if unbounded)", shown(field))),
    }
}

/// The value of a field of a feature column, NaN when missing.
fn feature_value(
    state: &mut ColumnState<'_>,
    field: &[u8],
    missing: &MissingTokens,
    learn: bool,
    line: usize,
) -> std::result::Result<f32, String> {
    if missing.contains(field) {
        return Ok(f32::NAN);
    }
    match read_field(state, field, learn, line)? {
        Field::Value(v) => Ok(v),
        // A string the training file did not have is missing: the model has no split for it.
        Field::Nan | Field::Unseen => Ok(f32::NAN),
        Field::Infinite => Err(format!("`{}` is infinite", shown(field))),
        Field::NotANumber => {
            Err(format!("`{}` is not a number (the column holds numbers in the training file)", shown(field)))
        }
    }
}

/// One read of the file.
struct Pass<'p, 'c, 'f> {
    path: &'p Path,
    layout: &'p Layout,
    missing: &'p MissingTokens,
    /// Whether kinds are learned (a training file) rather than given.
    learn: bool,
    features: Vec<ColumnState<'c>>,
    label: ColumnState<'c>,
    values: Vec<f32>,
    labels: Vec<f32>,
    upper_bounds: Vec<f32>,
    rows: usize,
    flush: Option<Flush<'f>>,
}

impl<'c> Pass<'_, 'c, '_> {
    fn run(&mut self, delimiter: u8, has_header: bool) -> Result<()> {
        let path = self.path;
        let mut reader = ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .buffer_capacity(super::READ_BUFFER)
            .from_reader(LineEnds::new(open_text(path)?));
        let columns = self.layout.roles.len();
        let mut record = ByteRecord::new();
        let mut skip_header = has_header;
        let mut first_line = 0;
        while reader.read_byte_record(&mut record).map_err(|e| csv_error(path, e))? {
            let line = record.position().map_or(0, |p| p.line() as usize);
            if is_blank(&record) {
                continue;
            }
            if first_line == 0 {
                first_line = line;
            }
            if skip_header {
                skip_header = false;
                continue;
            }
            if record.len() != columns {
                return Err(parse_error(
                    path,
                    line,
                    format!("{} fields, but line {first_line} has {columns}", record.len()),
                ));
            }
            // Each feature at its position: a header matched to a model's names may reorder them.
            let row = self.values.len();
            self.values.resize(row + self.layout.features, f32::NAN);
            self.rows += 1;
            for (c, field) in record.iter().enumerate() {
                let field = field.trim_ascii();
                let value = match self.layout.roles[c] {
                    Role::Ignored => continue,
                    Role::Label => {
                        label_value(&mut self.label, field, self.missing, self.learn, line).map(|v| self.labels.push(v))
                    }
                    Role::UpperBound => upper_bound_value(field, self.missing).map(|v| self.upper_bounds.push(v)),
                    Role::Feature(j) => feature_value(&mut self.features[j], field, self.missing, self.learn, line)
                        .map(|v| self.values[row + j] = v),
                };
                value.map_err(|reason| parse_error(path, line, format!("{}: {reason}", self.layout.describe(c))))?;
            }
            if self.flush.as_ref().is_some_and(|(every, _)| self.values.len() >= every * self.layout.features) {
                self.hand_over()?;
            }
        }
        if !self.values.is_empty() {
            self.hand_over()?;
        }
        Ok(())
    }

    /// The rows read since the last hand-over, to the [`Flush`] if there is one.
    fn hand_over(&mut self) -> Result<()> {
        let Some((_, flush)) = self.flush.as_mut() else { return Ok(()) };
        let rows = self.values.len() / self.layout.features.max(1);
        flush(rows, std::mem::take(&mut self.values), std::mem::take(&mut self.labels))
    }

    /// The dataset and categories, once the last pass is done: learned codes replace the
    /// first-appearance ids.
    fn finish(self, given: Option<&Categories>, side_files: &SideFiles) -> Result<CsvRead> {
        let rows = self.rows;
        if rows == 0 {
            return Err(Error::InvalidData(format!("{}: no data rows", self.path.display())));
        }
        let cols = self.layout.features;
        let mut values = self.values;
        let mut labels = self.labels;
        let mut learned = Categories { features: Vec::with_capacity(cols), kinds: Vec::new(), labels: None };
        for (j, state) in self.features.into_iter().enumerate() {
            let Kind::Learn(interner, _) = state.kind else {
                learned.features.push(None);
                continue;
            };
            let (strings, rank) = interner.sorted();
            for v in values.iter_mut().skip(j).step_by(cols) {
                if !v.is_nan() {
                    *v = rank[*v as usize] as f32;
                }
            }
            learned.features.push(Some(strings));
        }
        if let Kind::Learn(interner, _) = self.label.kind {
            let (strings, rank) = interner.sorted();
            for v in &mut labels {
                *v = rank[*v as usize] as f32;
            }
            learned.labels = Some(strings);
        }
        let mut info = MetaInfo { labels, feature_names: self.layout.feature_names.clone(), ..MetaInfo::default() };
        if self.layout.roles.contains(&Role::UpperBound) {
            crate::objective::check_bounds(&info.labels, &self.upper_bounds, rows)
                .map_err(|e| Error::InvalidData(format!("{}: {e}", self.path.display())))?;
            (info.label_lower_bound, info.label_upper_bound) = (info.labels.clone(), self.upper_bounds);
        }
        read_siblings(self.path, rows, &mut info, side_files)?;
        let categories = given.cloned().unwrap_or(learned);
        // String columns are categorical features (XGBoost's type `c`), their codes categories.
        if categories.features.iter().any(Option::is_some) {
            info.feature_types =
                categories.features.iter().map(|c| if c.is_some() { "c" } else { "q" }.to_string()).collect();
        }
        Ok(CsvRead { values, rows, cols, info, categories })
    }
}

/// The input with every line end (`\r\n`, `\r`) made `\n` and a space put on every empty line, so
/// that the CSV parser's line count is the file's: it counts `\n` only, and it skips empty lines
/// without counting them before the next record. (A quoted field spanning lines sees the same
/// changes, which keeps train and test files consistent.)
struct LineEnds<R> {
    inner: R,
    /// The last byte given was a line end (or nothing was given yet).
    after_newline: bool,
    /// The last byte read was `\r`: a `\n` right after it is part of the same line end.
    after_cr: bool,
    /// A `\n` that did not fit in the caller's buffer after the space of an empty line.
    pending_newline: bool,
}

impl<R: BufRead> LineEnds<R> {
    fn new(inner: R) -> Self {
        LineEnds { inner, after_newline: true, after_cr: false, pending_newline: false }
    }
}

impl<R: BufRead> Read for LineEnds<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let mut n = 0;
        if self.pending_newline {
            self.pending_newline = false;
            out[0] = b'\n';
            n = 1;
        }
        // Loops only when every byte read was a dropped `\n`: returning 0 would mean the end.
        loop {
            let input = self.inner.fill_buf()?;
            if input.is_empty() {
                return Ok(n);
            }
            let mut used = 0;
            while used < input.len() && n < out.len() {
                let mut byte = input[used];
                used += 1;
                if byte == b'\n' && self.after_cr {
                    self.after_cr = false;
                    continue;
                }
                self.after_cr = byte == b'\r';
                if byte == b'\r' {
                    byte = b'\n';
                }
                if byte == b'\n' && self.after_newline {
                    out[n] = b' ';
                    n += 1;
                    if n == out.len() {
                        self.pending_newline = true;
                        break;
                    }
                }
                out[n] = byte;
                n += 1;
                self.after_newline = byte == b'\n';
            }
            self.inner.consume(used);
            if n > 0 {
                return Ok(n);
            }
        }
    }
}

/// A CSV parser error as the crate's error: I/O errors (gzip ones included) as such, others (bad
/// quoting) as parse errors at their line.
fn csv_error(path: &Path, error: ::csv::Error) -> Error {
    let line = error.position().map_or(0, |p| p.line() as usize);
    let message = error.to_string();
    match error.into_kind() {
        ::csv::ErrorKind::Io(e) => Error::io(path, e),
        _ => parse_error(path, line, message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::tests::{dense, expect_invalid, expect_parse, gzip, shared_data, TempDir};

    fn read(dir: &TempDir, text: &str, options: &CsvOptions<'_>) -> Result<(Dataset, Categories)> {
        read_csv_with_categories(&dir.file("data.csv", text), options)
    }

    fn same(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
    }

    fn strings(items: &[&str]) -> Option<Vec<String>> {
        Some(items.iter().map(|s| s.to_string()).collect())
    }

    fn label(name: &str) -> CsvOptions<'static> {
        CsvOptions { label: Column::Name(name.to_string()), ..CsvOptions::default() }
    }

    fn missing_count(data: &Dataset) -> usize {
        dense(data).values.iter().filter(|v| v.is_nan()).count()
    }

    const NAN: f32 = f32::NAN;

    #[test]
    fn numeric_file_without_header() {
        let dir = TempDir::new("csv-numeric");
        let (data, categories) = read(&dir, "1,0.5,-2\n0, 1e3 ,.25\n", &CsvOptions::default()).unwrap();
        assert_eq!((data.rows(), data.cols()), (2, 2));
        assert_eq!(data.info.labels, vec![1.0, 0.0]);
        assert_eq!(dense(&data).values, vec![0.5, -2.0, 1000.0, 0.25]);
        assert_eq!(categories, Categories { features: vec![None, None], kinds: Vec::new(), labels: None });
        // The label can be any column; the features keep the file's order.
        let options = CsvOptions { label: Column::Index(2), ..CsvOptions::default() };
        let (data, _) = read(&dir, "1,0.5,-2\n0,1e3,.25\n", &options).unwrap();
        assert_eq!(data.info.labels, vec![-2.0, 0.25]);
        assert_eq!(dense(&data).values, vec![1.0, 0.5, 0.0, 1000.0]);
    }

    #[test]
    fn delimiter_detection_and_override() {
        let dir = TempDir::new("csv-delimiter");
        // A tab in the first line: tab-separated, and the comma is part of a field.
        let (data, categories) = read(&dir, "1\t2,5\t3\n0\tx\t5\n", &CsvOptions::default()).unwrap();
        assert_eq!((data.rows(), data.cols()), (2, 2));
        assert_eq!(categories.features[0], strings(&["2,5", "x"]));
        let (data, _) = read(&dir, "1,2\n0,4\n", &CsvOptions::default()).unwrap();
        assert_eq!(data.cols(), 1);
        // The first line that is not blank decides.
        let (data, _) = read(&dir, "\n\n1\t2\n0\t4\n", &CsvOptions::default()).unwrap();
        assert_eq!(data.cols(), 1);
        let forced = CsvOptions { delimiter: Some(b';'), ..CsvOptions::default() };
        let (data, _) = read(&dir, "1;2;3\n0;4;5\n", &forced).unwrap();
        assert_eq!(dense(&data).values, vec![2.0, 3.0, 4.0, 5.0]);
    }

    #[test]
    fn missing_tokens() {
        let dir = TempDir::new("csv-missing");
        let text = "y,a,b,c,d,e,f,g,h\n1,,?,NA,NaN,nan,N/A,null, 2 \n0,1,2,3,4,5,6,7,8\n";
        let (data, categories) = read(&dir, text, &CsvOptions::default()).unwrap();
        assert_eq!(data.cols(), 8);
        assert!(same(dense(&data).row(0), &[NAN, NAN, NAN, NAN, NAN, NAN, NAN, 2.0]));
        assert!(categories.features.iter().all(Option::is_none));
        // Custom tokens replace the defaults: `?` is then a string, -999 missing.
        let options = CsvOptions { missing_tokens: vec!["-999".into(), String::new()], ..CsvOptions::default() };
        let (data, categories) = read(&dir, "1,-999,?\n0,3,x\n1,,y\n", &options).unwrap();
        assert!(same(&dense(&data).values, &[NAN, 0.0, 3.0, 1.0, NAN, 2.0]));
        assert_eq!(categories.features[1], strings(&["?", "x", "y"]));
    }

    #[test]
    fn header_detection() {
        let dir = TempDir::new("csv-header");
        let has_header = |text: &str| read(&dir, text, &CsvOptions::default()).unwrap().0.rows() == 1;
        // A name over a numeric column.
        assert!(has_header("label,x\n1,2\n"));
        assert!(has_header("label,x,colour\n1,2,red\n"));
        // Names over numeric columns whose first value is missing.
        assert!(has_header("label,x\n1,\n"));
        // All numbers: no header.
        assert!(!has_header("1,2\n0,3\n"));
        // Strings over string columns, numbers over numbers: data (as UCI's cpu_machine).
        let options = CsvOptions { categorical: vec![Column::Index(2)], ..CsvOptions::default() };
        let (data, categories) = read(&dir, "1,adviser,32/60\n0,amdahl,100\n1,amdahl,470v/7\n", &options).unwrap();
        assert_eq!(data.rows(), 3);
        assert_eq!(categories.features[1], strings(&["100", "32/60", "470v/7"]));
        // A column of strings only gives no evidence: say so explicitly.
        let text = "colour,size\nred,big\nblue,small\n";
        assert_eq!(read(&dir, text, &CsvOptions::default()).unwrap().0.rows(), 3);
        let options = CsvOptions { has_header: Some(true), ..CsvOptions::default() };
        let (data, categories) = read(&dir, text, &options).unwrap();
        assert_eq!(data.rows(), 2);
        assert_eq!(categories.labels, strings(&["blue", "red"]));
        // Forcing no header reads a numeric-looking header as data.
        let options = CsvOptions { has_header: Some(false), ..CsvOptions::default() };
        assert_eq!(read(&dir, "1,2\n0,3\n", &options).unwrap().0.rows(), 2);
    }

    #[test]
    fn label_and_ignored_columns_by_name() {
        let dir = TempDir::new("csv-names");
        let text = "id,x,target,y\n7,1.5,1,2\n8,2.5,0,3\n";
        let options = CsvOptions {
            label: Column::Name("target".into()),
            ignore_columns: vec![Column::Name("id".into())],
            ..CsvOptions::default()
        };
        let (data, _) = read(&dir, text, &options).unwrap();
        assert_eq!(data.info.labels, vec![1.0, 0.0]);
        assert_eq!(dense(&data).values, vec![1.5, 2.0, 2.5, 3.0]);

        let parameter = |result: Result<(Dataset, Categories)>, words: &str| match result {
            Err(Error::InvalidParameter { reason, .. }) => assert!(reason.contains(words), "{reason}"),
            other => panic!("{other:?}"),
        };
        parameter(read(&dir, text, &label("nope")), "no column is named `nope`");
        parameter(read(&dir, "a,a\n1,2\n", &label("a")), "several columns are named `a`");
        let no_header = CsvOptions { has_header: Some(false), ..label("target") };
        parameter(read(&dir, text, &no_header), "has no header");
        let beyond = CsvOptions { label: Column::Index(4), ..CsvOptions::default() };
        parameter(read(&dir, text, &beyond), "column 4 does not exist");
        let clash = CsvOptions { ignore_columns: vec![Column::Index(0)], ..CsvOptions::default() };
        parameter(read(&dir, text, &clash), "is the label");
    }

    #[test]
    fn string_columns_shared_between_train_and_test() {
        let dir = TempDir::new("csv-categories");
        let train_text = "colour,size,class\n red ,1,yes\nblue,2,no\n,3,yes\ngreen,4,maybe\nred,5,no\n";
        let train_path = dir.file("train.csv", train_text);
        let (train, categories) = read_csv_with_categories(&train_path, &label("class")).unwrap();
        assert_eq!(categories.features, vec![strings(&["blue", "green", "red"]), None]);
        assert_eq!(categories.labels, strings(&["maybe", "no", "yes"]));
        assert!(same(&dense(&train).values, &[2.0, 1.0, 0.0, 2.0, NAN, 3.0, 1.0, 4.0, 2.0, 5.0]));
        assert_eq!(train.info.labels, vec![2.0, 1.0, 2.0, 0.0, 1.0]);
        assert_eq!(categories.code(0, "green"), Some(1));
        assert_eq!(categories.code(0, "mauve"), None);
        assert_eq!(categories.code(1, "1"), None);

        // The test file has the codes of the training file; an unseen string is missing.
        let test_path = dir.file("test.csv", "colour,size,class\nmauve,1,yes\ngreen,2,no\n");
        let options = CsvOptions { categories: Some(&categories), ..label("class") };
        let (test, test_categories) = read_csv_with_categories(&test_path, &options).unwrap();
        assert!(same(&dense(&test).values, &[NAN, 1.0, 1.0, 2.0]));
        assert_eq!(test.info.labels, vec![2.0, 1.0]);
        assert_eq!(test_categories, categories);

        // With the training categories a label must be known and a numeric column numeric.
        let bad = dir.file("bad.csv", "colour,size,class\nred,1,yes\nred,2,perhaps\n");
        expect_parse(read_csv(&bad, &options), 3, "the label `perhaps` is not one of the training file's labels");
        let bad = dir.file("bad.csv", "colour,size,class\nred,1,yes\nred,big,no\n");
        expect_parse(read_csv(&bad, &options), 3, "column 1 (`size`): `big` is not a number");
        let bad = dir.file("bad.csv", "colour,class\nred,yes\n");
        expect_invalid(read_csv(&bad, &options), "1 feature columns");
        let mut unsorted = categories.clone();
        unsorted.features[0] = strings(&["red", "blue"]);
        let options = CsvOptions { categories: Some(&unsorted), ..label("class") };
        expect_invalid(read_csv(&test_path, &options), "feature column 0 are not sorted");
        // Numeric training labels stay numbers; a string label in the test file is then an error.
        let numeric = Categories { features: vec![None], kinds: Vec::new(), labels: None };
        let options = CsvOptions { categories: Some(&numeric), ..CsvOptions::default() };
        expect_parse(read(&dir, "1,2\nyes,3\n", &options), 2, "the label `yes` is not a number");
    }

    #[test]
    fn numeric_labels_are_not_renumbered() {
        let dir = TempDir::new("csv-labels");
        let (data, categories) = read(&dir, "6,1\n1,2\n3,3\n", &CsvOptions::default()).unwrap();
        assert_eq!(data.info.labels, vec![6.0, 1.0, 3.0]);
        assert_eq!(categories.labels, None);
    }

    #[test]
    fn a_typo_in_a_numeric_column_is_an_error_not_a_category() {
        let dir = TempDir::new("csv-mixed");
        // A string after numbers: the first bad cell, by line and column.
        let text = "1,10,5\n2,2.0,6\n3,x,7\n";
        expect_parse(
            read(&dir, text, &CsvOptions::default()),
            3,
            "column 1: `x` is not a number, but the column holds numbers (from line 1)",
        );
        // A number after strings, the label's column too.
        expect_parse(
            read(&dir, "a,1\nb,2\n3,3\n", &CsvOptions::default()),
            3,
            "column 0: `3` is a number, but the column holds strings (from line 1)",
        );
        // Named categorical, the same column is one of strings (the label too).
        let options = CsvOptions { categorical: vec![Column::Index(0), Column::Index(1)], ..CsvOptions::default() };
        let (data, categories) = read(&dir, "1,10,5\n2,2.0,6\n3,x,7\nz,10,8\n", &options).unwrap();
        // Sorted as strings: "10" < "2.0" < "x"; labels "1" < "2" < "3" < "z".
        assert_eq!(categories.features, vec![strings(&["10", "2.0", "x"]), None]);
        assert_eq!(categories.labels, strings(&["1", "2", "3", "z"]));
        assert_eq!(dense(&data).values, vec![0.0, 5.0, 1.0, 6.0, 2.0, 7.0, 0.0, 8.0]);
        assert_eq!(data.info.labels, vec![0.0, 1.0, 2.0, 3.0]);
        // By name, which implies a header.
        let options = CsvOptions { categorical: vec![Column::Name("code".into())], ..CsvOptions::default() };
        let (data, categories) = read(&dir, "y,code\n1,7\n0,A7\n", &options).unwrap();
        assert_eq!(data.rows(), 2);
        assert_eq!(categories.features, vec![strings(&["7", "A7"])]);
        let options = CsvOptions { categorical: vec![Column::Name("nope".into())], ..CsvOptions::default() };
        assert!(matches!(read(&dir, "y,code\n1,7\n", &options), Err(Error::InvalidParameter { .. })));
    }

    #[test]
    fn a_header_without_rows_is_an_error() {
        let dir = TempDir::new("csv-header-only");
        expect_invalid(read(&dir, "label,x,y\n", &CsvOptions::default()), "no data rows");
        expect_invalid(read(&dir, "label,x,y\n\n\n", &CsvOptions::default()), "no data rows");
        expect_invalid(read(&dir, "y,x\n", &label("y")), "no data rows");
        // One line of numbers is one row.
        assert_eq!(read(&dir, "1,2\n", &CsvOptions::default()).unwrap().0.rows(), 1);
    }

    #[test]
    fn malformed_lines_name_their_line_and_column() {
        let dir = TempDir::new("csv-errors");
        let options = CsvOptions::default();
        expect_parse(read(&dir, "1,2,3\n0,1,2\n\n1,2\n", &options), 4, "2 fields, but line 1 has 3");
        expect_parse(read(&dir, "y,a\n1,2\n0,1,2\n", &options), 3, "3 fields, but line 1 has 2");
        expect_parse(read(&dir, "1,2\nNA,3\n", &options), 2, "the label is missing (`NA`)");
        expect_parse(read(&dir, "1,2\n,3\n", &options), 2, "the label is missing");
        expect_parse(read(&dir, "1,2\n0,3\ninf,3\n", &options), 3, "column 0: the label `inf` is infinite");
        let no_nan_token = CsvOptions { missing_tokens: vec![String::new()], ..CsvOptions::default() };
        expect_parse(read(&dir, "1,2\nNaN,3\n", &no_nan_token), 2, "the label is NaN");
        expect_parse(read(&dir, "y,a,b\n1,2,3\n0,3,-inf\n", &options), 3, "column 2 (`b`): `-inf` is infinite");
        expect_parse(read(&dir, "1,2\n0,1e40\n", &options), 2, "column 1: `1e40` is infinite");
        let latin1 = dir.file("latin1.csv", b"1,tea\n1,caf\xe9\n");
        expect_parse(read_csv(&latin1, &options), 2, "column 1: `caf\u{fffd}` is not valid UTF-8");
        // A NaN feature is a missing one.
        let (data, _) = read(&dir, "1,2\n0,NaN\n", &no_nan_token).unwrap();
        assert!(same(&dense(&data).values, &[2.0, NAN]));
    }

    #[test]
    fn quoted_and_padded_fields() {
        let dir = TempDir::new("csv-quotes");
        let text = "y,name,x\n1,\"Smith, J\",\" 3\"\n0, Doe ,4\r\n";
        let (data, categories) = read(&dir, text, &CsvOptions::default()).unwrap();
        assert_eq!(categories.features[0], strings(&["Doe", "Smith, J"]));
        assert_eq!(dense(&data).values, vec![1.0, 3.0, 0.0, 4.0]);
    }

    #[test]
    fn gzip_round_trip() {
        let dir = TempDir::new("csv-gzip");
        let text = "a,b,c\n1,red,2\n0,,3\n";
        let (plain, plain_categories) =
            read_csv_with_categories(&dir.file("plain.csv", text), &CsvOptions::default()).unwrap();
        let packed = dir.file("packed.csv.gz", gzip(text.as_bytes()));
        let (data, categories) = read_csv_with_categories(&packed, &CsvOptions::default()).unwrap();
        assert_eq!(plain.rows(), 2);
        assert!(same(&dense(&data).values, &dense(&plain).values));
        assert_eq!(data.info, plain.info);
        assert_eq!(categories, plain_categories);
    }

    #[test]
    fn line_numbers_count_blank_lines_and_any_line_end() {
        let dir = TempDir::new("csv-lines");
        let options = CsvOptions::default();
        for (text, line) in [
            ("1,2\n\n\n0,3,4\n", 4),
            ("1,2\r\n0,3\r\n\r\n1,x,y\r\n", 4),
            ("1,2\r0,3\r\r1\r", 4),
            ("\n1,a\n0,\"multi\nline\"\n\n1\n", 6),
            ("1,2\n0,3\n1", 3),
        ] {
            expect_parse(read(&dir, text, &options), line, "fields, but line");
        }
        // Blank lines anywhere, CRLF and a last line without its end are all fine.
        let (data, _) = read(&dir, "\r\n1,2\r\n\r\n0,3\r\n\r\n1,4", &options).unwrap();
        assert_eq!(data.info.labels, vec![1.0, 0.0, 1.0]);
        assert_eq!(dense(&data).values, vec![2.0, 3.0, 4.0]);
    }

    #[test]
    fn line_ends_adapter_with_tiny_buffers() {
        let input = b"\r\na\r\n\r\nb\rc\n\n\nd";
        let expected = b" \na\n \nb\nc\n \n \nd";
        // Whole reads, and reads of one byte from a one-byte buffered input (every split point).
        let mut whole = Vec::new();
        LineEnds::new(&input[..]).read_to_end(&mut whole).unwrap();
        assert_eq!(whole, expected);
        let mut adapter = LineEnds::new(std::io::BufReader::with_capacity(1, &input[..]));
        let mut bytes = Vec::new();
        let mut one = [0u8; 1];
        while adapter.read(&mut one).unwrap() == 1 {
            bytes.push(one[0]);
        }
        assert_eq!(bytes, expected);
    }

    #[test]
    fn higgs_tsv_with_weight_file() {
        let (data, categories) =
            read_csv_with_categories(&shared_data("higgs_lgbm_sample/binary.train"), &CsvOptions::default()).unwrap();
        assert_eq!((data.rows(), data.cols()), (7000, 28));
        assert_eq!(categories.features, vec![None; 28]);
        assert_eq!(data.info.labels.iter().filter(|&&l| l == 1.0).count(), 3716);
        let m = dense(&data);
        assert_eq!(&m.row(0)[..3], &[0.869, -0.635, 0.226]);
        assert_eq!(m.row(6999)[27], 1.018);
        assert_eq!(missing_count(&data), 0);
        assert_eq!(m.values.iter().filter(|&&v| v == 0.0).count(), 15_511);
        // binary.train.weight: 6998 ones, one 1.1 and one 1.2.
        let weights = &data.info.weights;
        assert_eq!(weights.len(), 7000);
        assert_eq!(weights.iter().filter(|&&w| w == 1.0).count(), 6998);
        assert_eq!(&weights[..3], &[1.2, 1.1, 1.0]);
    }

    #[test]
    fn adult_strings_and_shared_categories() {
        let (train, categories) =
            read_csv_with_categories(&shared_data("adult/adult_train.csv"), &label("income")).unwrap();
        assert_eq!((train.rows(), train.cols()), (22_792, 14));
        assert_eq!(categories.labels, strings(&["<=50K", ">50K"]));
        assert_eq!(train.info.labels.iter().filter(|&&l| l == 1.0).count(), 5484);
        let cardinality: Vec<usize> = categories.features.iter().map(|c| c.as_ref().map_or(0, Vec::len)).collect();
        assert_eq!(cardinality, vec![0, 8, 0, 16, 0, 7, 14, 6, 5, 2, 0, 0, 0, 41]);
        assert_eq!(missing_count(&train), 2924);
        // Row 0: 44,Private,228057,7th-8th,4,...,Dominican-Republic.
        let row = dense(&train).row(0);
        assert_eq!((row[0], row[1], row[2], row[13]), (44.0, 3.0, 228_057.0, 5.0));
        assert_eq!(categories.code(1, "Private"), Some(3));

        let options = CsvOptions { categories: Some(&categories), ..label("income") };
        let (test, _) = read_csv_with_categories(&shared_data("adult/adult_test.csv"), &options).unwrap();
        assert_eq!((test.rows(), test.cols()), (9769, 14));
        assert_eq!(test.info.labels.iter().filter(|&&l| l == 1.0).count(), 2357);
        // Every test string is known to the training file: the missing cells are the empty ones.
        assert_eq!(missing_count(&test), 1338);
    }

    #[test]
    fn dermatology_question_marks() {
        let data = read_csv(
            &shared_data("dermatology/dermatology.train.data"),
            &CsvOptions { label: Column::Index(34), ..CsvOptions::default() },
        )
        .unwrap();
        assert_eq!((data.rows(), data.cols()), (293, 34));
        let count = |label: f32| data.info.labels.iter().filter(|&&l| l == label).count();
        assert_eq!((1..=6).map(|l| count(l as f32)).collect::<Vec<_>>(), vec![94, 51, 55, 40, 38, 15]);
        // The 6 `?` of this split are all ages (column 33), in rows 27-29 and 210-212.
        let m = dense(&data);
        let missing: Vec<(usize, usize)> =
            (0..m.rows).flat_map(|i| (0..m.cols).map(move |j| (i, j))).filter(|&(i, j)| m.row(i)[j].is_nan()).collect();
        assert_eq!(missing, vec![(27, 33), (28, 33), (29, 33), (210, 33), (211, 33), (212, 33)]);
        assert_eq!(m.row(0)[33], 55.0);
    }

    #[test]
    fn california_housing_empty_fields() {
        let (data, categories) = read_csv_with_categories(
            &shared_data("california_housing/housing.train.csv"),
            &label("median_house_value"),
        )
        .unwrap();
        assert_eq!((data.rows(), data.cols()), (16_512, 9));
        assert_eq!(missing_count(&data), 179);
        assert!(
            (0..data.rows()).all(|i| dense(&data).row(i)[..8].iter().enumerate().all(|(j, v)| !v.is_nan() || j == 4))
        );
        assert_eq!(categories.features[8], strings(&["<1H OCEAN", "INLAND", "ISLAND", "NEAR BAY", "NEAR OCEAN"]));
        let island = dense(&data).values.iter().skip(8).step_by(9).filter(|&&v| v == 2.0).count();
        assert_eq!(island, 4);
        assert_eq!(data.info.labels[0], 452_600.0);
        let (min, max) = data.info.labels.iter().fold((f32::MAX, f32::MIN), |(a, b), &l| (a.min(l), b.max(l)));
        assert_eq!((min, max), (14_999.0, 500_001.0));
        assert_eq!(dense(&data).row(0), &[-122.23, 37.88, 41.0, 880.0, 129.0, 322.0, 126.0, 8.3252, 3.0]);
    }

    #[test]
    fn string_labels_of_dna_iris_and_cpu_machine() {
        let (dna, categories) = read_csv_with_categories(&shared_data("dna/dna.train.csv"), &label("LABEL")).unwrap();
        assert_eq!((dna.rows(), dna.cols()), (2549, 180));
        assert_eq!(categories.labels, strings(&["ei", "ie", "n"]));
        let count = |data: &Dataset, label: f32| data.info.labels.iter().filter(|&&l| l == label).count();
        assert_eq!([count(&dna, 0.0), count(&dna, 1.0), count(&dna, 2.0)], [596, 605, 1348]);

        let (iris, categories) =
            read_csv_with_categories(&shared_data("iris/iris.train.csv"), &label("class")).unwrap();
        assert_eq!((iris.rows(), iris.cols()), (120, 4));
        assert_eq!(categories.labels, strings(&["setosa", "versicolor", "virginica"]));
        assert_eq!([count(&iris, 0.0), count(&iris, 1.0), count(&iris, 2.0)], [40, 40, 40]);

        // No header (its first line has strings only over string columns); the model names mix
        // numbers and strings, so they are named categorical; ERP (column 9) leaks the target.
        let mut options =
            CsvOptions { label: Column::Index(8), ignore_columns: vec![Column::Index(9)], ..CsvOptions::default() };
        let path = shared_data("cpu_machine/machine.train.data");
        expect_parse(read_csv(&path, &options), 13, "column 1: `8000` is a number, but the column holds strings");
        options.categorical = vec![Column::Index(1)];
        let (cpu, categories) = read_csv_with_categories(&path, &options).unwrap();
        assert_eq!((cpu.rows(), cpu.cols()), (168, 8));
        assert_eq!(categories.features[0].as_ref().map(Vec::len), Some(30));
        assert_eq!(categories.features[1].as_ref().map(Vec::len), Some(168));
        assert_eq!(cpu.info.labels[0], 198.0);
        assert_eq!(&dense(&cpu).row(0)[2..], &[125.0, 256.0, 6000.0, 256.0, 16.0, 128.0]);
    }
}
