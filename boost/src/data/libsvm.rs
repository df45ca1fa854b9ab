//! The LibSVM / SVMlight text reader.
//!
//! One row per line: `label[:weight] [qid:Q] index:value index:value ... [# comment]`, fields separated
//! by spaces or tabs. Blank and comment-only lines are skipped (line numbers in errors still count
//! them). Indices are 0-based column ids (XGBoost's reading: a file whose indices start at 1 has an
//! empty column 0) and may come in any order within a line, but not twice. Absent entries are missing,
//! and so is an explicit `nan` value; an explicit `0` is a present zero.

use std::collections::HashSet;
use std::path::Path;

use super::{
    open_text, parse_error, parse_number, read_siblings, shown, CsrMatrix, Dataset, FeatureMatrix, MetaInfo, Number,
    SideFiles, MAX_FEATURES,
};
use crate::{Error, Result};

/// Options of [`read_libsvm`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LibsvmOptions {
    /// The number of columns. `None`: the largest index in the file plus one. Set it to read a test
    /// file with the training file's columns (its largest index may be smaller); an index at or above
    /// it is then an error.
    pub num_features: Option<usize>,
}

/// Reads a LibSVM file (plain or gzip) into a CSR dataset, with the `.query` and `.weight` siblings
/// when they exist (see the [module](crate::data) docs).
///
/// Groups: when the lines have `qid:` fields (all of them or none), each run of consecutive rows with
/// one qid is a group, and a qid that comes back after another is an error (XGBoost needs the rows of
/// a query together). Weights written as `label:weight` (all lines or none) are per row; with groups,
/// they must be constant within each group and become per-group weights, as the `.weight` file's.
pub fn read_libsvm(path: &Path, options: &LibsvmOptions) -> Result<Dataset> {
    read_libsvm_with(path, options, &SideFiles::Beside)
}

/// [`read_libsvm`] with the weights and groups from `side_files`.
pub(crate) fn read_libsvm_with(path: &Path, options: &LibsvmOptions, side_files: &SideFiles) -> Result<Dataset> {
    let mut reader = open_text(path)?;
    let mut parser = Parser::new(path, options.num_features);
    let mut line = Vec::new();
    let mut line_no = 0;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        parser.line(&line, line_no)?;
    }
    parser.finish(side_files)
}

/// Whether a sample of a file's first lines looks like LibSVM: some line has tokens after the label
/// and every token after a label has a `:` (`index:value` or `qid:Q`). CSV lines have one token (no
/// blanks) or tokens without `:`.
pub(super) fn looks_like_libsvm(sample: &[u8]) -> bool {
    let mut evidence = false;
    for line in sample.split(|&b| b == b'\n') {
        let mut tokens = tokens(strip_comment(line));
        if tokens.next().is_none() {
            continue;
        }
        for token in tokens {
            if !token.contains(&b':') {
                return false;
            }
            evidence = true;
        }
    }
    evidence
}

fn strip_comment(line: &[u8]) -> &[u8] {
    match line.iter().position(|&b| b == b'#') {
        Some(i) => &line[..i],
        None => line,
    }
}

fn tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|b| b.is_ascii_whitespace()).filter(|t| !t.is_empty())
}

/// A decimal integer without sign (a column index or qid); `None` on anything else or on overflow.
fn parse_unsigned(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() {
        return None;
    }
    bytes.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// The reader's state between lines.
struct Parser<'a> {
    path: &'a Path,
    num_features: Option<usize>,
    labels: Vec<f32>,
    /// Weights given as `label:weight`.
    weights: Vec<f32>,
    /// Whether the lines give weights, set by the first row.
    has_weights: Option<bool>,
    row_ptr: Vec<usize>,
    col_indices: Vec<u32>,
    values: Vec<f32>,
    /// The largest column index plus one.
    cols_seen: usize,
    /// Whether the lines have `qid:` fields, set by the first row.
    has_qid: Option<bool>,
    last_qid: Option<u64>,
    /// The qids of the groups closed so far, to reject a query split over non-adjacent rows.
    seen_qids: HashSet<u64>,
    /// The first row of each group.
    group_starts: Vec<usize>,
    /// Scratch for sorting a row whose indices are out of order.
    pairs: Vec<(u32, f32)>,
}

impl<'a> Parser<'a> {
    fn new(path: &'a Path, num_features: Option<usize>) -> Self {
        Parser {
            path,
            num_features,
            labels: Vec::new(),
            weights: Vec::new(),
            has_weights: None,
            row_ptr: vec![0],
            col_indices: Vec::new(),
            values: Vec::new(),
            cols_seen: 0,
            has_qid: None,
            last_qid: None,
            seen_qids: HashSet::new(),
            group_starts: Vec::new(),
            pairs: Vec::new(),
        }
    }

    fn error(&self, line: usize, reason: impl Into<String>) -> Error {
        parse_error(self.path, line, reason)
    }

    fn line(&mut self, line: &[u8], line_no: usize) -> Result<()> {
        let mut tokens = tokens(strip_comment(line));
        let Some(head) = tokens.next() else {
            return Ok(());
        };
        let (label_text, weight_text) = match head.iter().position(|&b| b == b':') {
            Some(i) => (&head[..i], Some(&head[i + 1..])),
            None => (head, None),
        };
        let label = match parse_number(label_text) {
            Number::Value(v) => v,
            Number::Nan => return Err(self.error(line_no, "the label is NaN")),
            Number::Infinite => return Err(self.error(line_no, "the label is infinite")),
            Number::Invalid => return Err(self.error(line_no, format!("`{}` is not a label", shown(label_text)))),
        };
        if *self.has_weights.get_or_insert(weight_text.is_some()) != weight_text.is_some() {
            return Err(self.error(line_no, "some lines give a weight (`label:weight`) and others do not"));
        }
        if let Some(text) = weight_text {
            match parse_number(text) {
                Number::Value(w) if w >= 0.0 => self.weights.push(w),
                _ => return Err(self.error(line_no, format!("weight `{}` is not a finite number >= 0", shown(text)))),
            }
        }

        let start = self.col_indices.len();
        let mut qid = None;
        for token in tokens {
            let Some(colon) = token.iter().position(|&b| b == b':') else {
                return Err(self.error(line_no, format!("`{}` is not `index:value`", shown(token))));
            };
            let (key, value) = (&token[..colon], &token[colon + 1..]);
            if key == b"qid" {
                if qid.is_some() {
                    return Err(self.error(line_no, "two qid fields"));
                }
                qid =
                    Some(parse_unsigned(value).ok_or_else(|| {
                        self.error(line_no, format!("qid `{}` is not an integer >= 0", shown(value)))
                    })?);
                continue;
            }
            let index = parse_unsigned(key)
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| self.error(line_no, format!("`{}` is not a column index", shown(key))))?;
            let cols = index as usize + 1;
            if cols > MAX_FEATURES {
                return Err(self.error(
                    line_no,
                    format!("column index {index} is beyond the {MAX_FEATURES} features a dataset may have"),
                ));
            }
            if let Some(n) = self.num_features {
                if cols > n {
                    return Err(self.error(line_no, format!("column {index} is beyond the {n} columns asked for")));
                }
            }
            self.cols_seen = self.cols_seen.max(cols);
            match parse_number(value) {
                Number::Value(v) => {
                    self.col_indices.push(index);
                    self.values.push(v);
                }
                // A NaN value is missing, as an absent entry: not stored.
                Number::Nan => {}
                Number::Infinite => {
                    return Err(self.error(line_no, format!("column {index}: `{}` is infinite", shown(value))))
                }
                Number::Invalid => {
                    return Err(self.error(line_no, format!("column {index}: `{}` is not a number", shown(value))))
                }
            }
        }
        self.sort_row(start, line_no)?;
        self.group(qid, line_no)?;
        self.labels.push(label);
        self.row_ptr.push(self.col_indices.len());
        Ok(())
    }

    /// Puts the entries of the row that starts at `start` in column order (the CSR invariant), and
    /// rejects a column given twice.
    fn sort_row(&mut self, start: usize, line_no: usize) -> Result<()> {
        let cols = &self.col_indices[start..];
        if cols.windows(2).all(|w| w[0] < w[1]) {
            return Ok(());
        }
        self.pairs.clear();
        self.pairs.extend(cols.iter().copied().zip(self.values[start..].iter().copied()));
        self.pairs.sort_unstable_by_key(|&(c, _)| c);
        if let Some(w) = self.pairs.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(self.error(line_no, format!("column {} is given twice", w[0].0)));
        }
        for (k, &(c, v)) in self.pairs.iter().enumerate() {
            self.col_indices[start + k] = c;
            self.values[start + k] = v;
        }
        Ok(())
    }

    /// Starts a new group when the row's qid differs from the previous row's.
    fn group(&mut self, qid: Option<u64>, line_no: usize) -> Result<()> {
        if *self.has_qid.get_or_insert(qid.is_some()) != qid.is_some() {
            return Err(self.error(line_no, "some lines have a qid field and others do not"));
        }
        let Some(qid) = qid else {
            return Ok(());
        };
        if self.last_qid == Some(qid) {
            return Ok(());
        }
        if let Some(last) = self.last_qid {
            self.seen_qids.insert(last);
        }
        if self.seen_qids.contains(&qid) {
            return Err(self.error(
                line_no,
                format!("qid {qid} comes back after other queries; the rows of a query must be consecutive"),
            ));
        }
        self.last_qid = Some(qid);
        self.group_starts.push(self.labels.len());
        Ok(())
    }

    fn finish(self, side_files: &SideFiles) -> Result<Dataset> {
        let rows = self.labels.len();
        if rows == 0 {
            return Err(Error::InvalidData(format!("{}: no data rows", self.path.display())));
        }
        let mut group_ptr = self.group_starts;
        if !group_ptr.is_empty() {
            group_ptr.push(rows);
        }
        let mut info = MetaInfo { labels: self.labels, weights: self.weights, group_ptr, ..MetaInfo::default() };
        read_siblings(self.path, rows, &mut info, side_files)?;
        let matrix = CsrMatrix {
            rows,
            cols: self.num_features.unwrap_or(self.cols_seen),
            row_ptr: self.row_ptr,
            col_indices: self.col_indices,
            values: self.values,
        };
        Ok(Dataset { features: FeatureMatrix::Sparse(matrix), info })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::tests::{expect_invalid, expect_parse, gzip, shared_data, sparse, TempDir};

    fn read(dir: &TempDir, text: &str) -> Result<Dataset> {
        read_libsvm(&dir.file("data.txt", text), &LibsvmOptions::default())
    }

    /// Row `i` as a vector, NaN where missing.
    fn row(data: &Dataset, i: usize) -> Vec<f32> {
        let mut out = vec![0.0; data.cols()];
        data.features.fill_row(i, &mut out);
        out
    }

    fn same(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
    }

    #[test]
    fn rows_columns_and_missing_entries() {
        let dir = TempDir::new("libsvm-basic");
        let text = "1 0:0.5 2:-3e2\n\
                    # a comment line\n\
                    \n\
                    -1\t1:0   3:7 # trailing comment\r\n\
                    +0.25 3:nan 0:1\n";
        let data = read(&dir, text).unwrap();
        assert_eq!((data.rows(), data.cols()), (3, 4));
        // A column whose only value is `nan` still counts.
        assert_eq!(read(&dir, "1 0:1\n0 6:nan\n").unwrap().cols(), 7);
        assert_eq!(data.info.labels, vec![1.0, -1.0, 0.25]);
        let nan = f32::NAN;
        assert!(same(&row(&data, 0), &[0.5, nan, -300.0, nan]));
        // An explicit 0 is a present value; absent entries and `nan` are missing.
        assert!(same(&row(&data, 1), &[nan, 0.0, nan, 7.0]));
        assert!(same(&row(&data, 2), &[1.0, nan, nan, nan]));
        let m = sparse(&data);
        assert_eq!(m.row_ptr, vec![0, 2, 4, 5]);
        assert!(data.info.weights.is_empty() && data.info.group_ptr.is_empty());
    }

    #[test]
    fn indices_out_of_order_are_sorted_and_duplicates_rejected() {
        let dir = TempDir::new("libsvm-order");
        let data = read(&dir, "1 5:5 1:1 3:3\n").unwrap();
        assert_eq!(sparse(&data).col_indices, vec![1, 3, 5]);
        assert_eq!(sparse(&data).values, vec![1.0, 3.0, 5.0]);
        expect_parse(read(&dir, "1 1:1\n0 5:5 1:1 5:2\n"), 2, "column 5 is given twice");
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let dir = TempDir::new("libsvm-errors");
        expect_parse(read(&dir, "1 1:1\n\n# c\nyes 1:1\n"), 4, "`yes` is not a label");
        expect_parse(read(&dir, "1 1:1\n0 1:1 7\n"), 2, "`7` is not `index:value`");
        expect_parse(read(&dir, "1 1:1\n0 x:1\n"), 2, "`x` is not a column index");
        expect_parse(read(&dir, "1 -1:1\n"), 1, "`-1` is not a column index");
        expect_parse(read(&dir, "1 99999999999:1\n"), 1, "not a column index");
        expect_parse(read(&dir, "1 1:abc\n"), 1, "column 1: `abc` is not a number");
        expect_parse(read(&dir, "1 1:\n"), 1, "is not a number");
        expect_parse(read(&dir, "1 1:1\n1 2:inf\n"), 2, "infinite");
        expect_parse(read(&dir, "1 2:1e39\n"), 1, "infinite");
        expect_parse(read(&dir, "nan 1:1\n"), 1, "the label is NaN");
        expect_parse(read(&dir, "1 1:1\n0 1:1\ninf 1:1\n"), 3, "the label is infinite");
    }

    #[test]
    fn a_huge_column_index_is_an_error_not_an_allocation() {
        let dir = TempDir::new("libsvm-huge-index");
        expect_parse(
            read(&dir, "0 1:1\n1 4000000000:1\n"),
            2,
            "column index 4000000000 is beyond the 16777216 features",
        );
        expect_parse(read(&dir, "1 16777216:1\n"), 1, "column index 16777216 is beyond");
        // Past u32: not a column index at all.
        expect_parse(read(&dir, "1 99999999999:1\n"), 1, "`99999999999` is not a column index");
        // The last index allowed reads as a (sparse) dataset of that many columns.
        assert_eq!(read(&dir, "1 16777215:1\n").unwrap().cols(), MAX_FEATURES);
    }

    #[test]
    fn num_features_forces_the_column_count() {
        let dir = TempDir::new("libsvm-cols");
        let path = dir.file("t.txt", "1 1:1\n0 2:1\n");
        assert_eq!(read_libsvm(&path, &LibsvmOptions::default()).unwrap().cols(), 3);
        let wide = LibsvmOptions { num_features: Some(10) };
        assert_eq!(read_libsvm(&path, &wide).unwrap().cols(), 10);
        let narrow = LibsvmOptions { num_features: Some(2) };
        expect_parse(read_libsvm(&path, &narrow), 2, "column 2 is beyond the 2 columns");
    }

    #[test]
    fn qid_groups() {
        let dir = TempDir::new("libsvm-qid");
        let text = "2 qid:7 1:1\n1 qid:7 1:2\n0 qid:3 2:1\n1 qid:3 1:1\n0 qid:3 2:2\n3 qid:10 1:5\n";
        let path = dir.file("q.txt", text);
        let data = read_libsvm(&path, &LibsvmOptions::default()).unwrap();
        assert_eq!(data.info.group_ptr, vec![0, 2, 5, 6]);
        // qid is not a column.
        assert_eq!(data.cols(), 3);
        // A `.query` file agreeing with the qids is accepted; one that disagrees is an error.
        dir.file("q.txt.query", "2\n3\n1\n");
        assert_eq!(read_libsvm(&path, &LibsvmOptions::default()).unwrap().info.group_ptr, vec![0, 2, 5, 6]);
        dir.file("q.txt.query", "2\n2\n2\n");
        expect_invalid(read_libsvm(&path, &LibsvmOptions::default()), "differ");

        expect_parse(read(&dir, "1 qid:1 1:1\n1 1:1\n"), 2, "some lines have a qid field");
        expect_parse(read(&dir, "1 1:1\n1 qid:1 1:1\n"), 2, "some lines have a qid field");
        expect_parse(read(&dir, "1 qid:1 1:1\n1 qid:2 1:1\n1 qid:1 1:1\n"), 3, "qid 1 comes back");
        expect_parse(read(&dir, "1 qid:1 qid:1 1:1\n"), 1, "two qid fields");
        expect_parse(read(&dir, "1 qid:a 1:1\n"), 1, "qid `a`");
    }

    #[test]
    fn inline_weights() {
        let dir = TempDir::new("libsvm-weights");
        let path = dir.file("w.txt", "1:0.5 1:1\n0:2 2:1\n");
        let data = read_libsvm(&path, &LibsvmOptions::default()).unwrap();
        assert_eq!(data.info.labels, vec![1.0, 0.0]);
        assert_eq!(data.info.weights, vec![0.5, 2.0]);
        dir.file("w.txt.weight", "1\n1\n");
        expect_invalid(read_libsvm(&path, &LibsvmOptions::default()), "also a weight file");
        expect_parse(read(&dir, "1:0.5 1:1\n0 2:1\n"), 2, "some lines give a weight");
        expect_parse(read(&dir, "1:-1 1:1\n"), 1, "weight `-1`");
    }

    #[test]
    fn gzip_round_trip() {
        let dir = TempDir::new("libsvm-gzip");
        let text = "1 qid:1 0:0.5 2:1.5\n0 qid:1 1:2\n1 qid:2 3:4\n";
        let plain = read_libsvm(&dir.file("plain.txt", text), &LibsvmOptions::default()).unwrap();
        let packed = read_libsvm(&dir.file("packed.txt.gz", gzip(text.as_bytes())), &LibsvmOptions::default()).unwrap();
        let unnamed = read_libsvm(&dir.file("packed.txt", gzip(text.as_bytes())), &LibsvmOptions::default()).unwrap();
        assert_eq!(plain, packed);
        assert_eq!(plain, unnamed);
        assert_eq!(plain.info.group_ptr, vec![0, 2, 3]);
    }

    #[test]
    fn sniffing() {
        assert!(looks_like_libsvm(b"1 1:2 3:4\n0 2:1\n"));
        assert!(looks_like_libsvm(b"1 qid:2 1:2\n"));
        assert!(!looks_like_libsvm(b"1,2,3\n"));
        assert!(!looks_like_libsvm(b"1\t2\t3\n"));
        assert!(!looks_like_libsvm(b"1 1:2\n1 2 3\n"));
        assert!(!looks_like_libsvm(b"1\n0\n"));
    }

    #[test]
    fn agaricus() {
        let train = read_libsvm(&shared_data("agaricus/agaricus.txt.train"), &LibsvmOptions::default()).unwrap();
        // Indices 1..=126 read as 0-based columns: 127 columns, column 0 empty.
        assert_eq!((train.rows(), train.cols()), (6513, 127));
        let m = sparse(&train);
        assert_eq!(m.values.len(), 6513 * 22);
        assert!(m.values.iter().all(|&v| v == 1.0));
        assert!(!m.col_indices.contains(&0));
        assert_eq!(m.col_indices.iter().max(), Some(&126));
        assert_eq!(train.info.labels.iter().filter(|&&l| l == 1.0).count(), 3140);
        assert_eq!(train.info.labels[0], 1.0);
        assert_eq!(m.row(0).map(|(c, _)| c).take(4).collect::<Vec<_>>(), vec![3, 10, 11, 21]);
        assert!(train.info.weights.is_empty() && train.info.group_ptr.is_empty());

        // The test file's largest index is also 126; forcing the count keeps the two aligned anyway.
        let options = LibsvmOptions { num_features: Some(train.cols()) };
        let test = read_libsvm(&shared_data("agaricus/agaricus.txt.test"), &options).unwrap();
        assert_eq!((test.rows(), test.cols()), (1611, 127));
        assert_eq!(sparse(&test).values.len(), 35442);
        assert_eq!(test.info.labels.iter().filter(|&&l| l == 1.0).count(), 776);
    }

    #[test]
    fn lgbm_rank_with_query_file() {
        let train = read_libsvm(&shared_data("lgbm_rank/rank.train"), &LibsvmOptions::default()).unwrap();
        assert_eq!((train.rows(), train.cols()), (3005, 301));
        assert_eq!(sparse(&train).values.len(), 284_736);
        let groups = &train.info.group_ptr;
        assert_eq!(groups.len(), 202);
        assert_eq!(&groups[..6], &[0, 1, 14, 19, 27, 46]);
        assert_eq!(groups.last(), Some(&3005));
        assert_eq!(groups.windows(2).map(|w| w[1] - w[0]).max(), Some(27));
        let count = |label: f32| train.info.labels.iter().filter(|&&l| l == label).count();
        assert_eq!([count(0.0), count(1.0), count(2.0), count(3.0), count(4.0)], [645, 1211, 858, 222, 69]);
        let first: Vec<_> = sparse(&train).row(0).take(2).collect();
        assert_eq!(first, vec![(10, 0.89), (11, 0.75)]);
    }

    #[test]
    fn lgbm_categorical_zero_based() {
        let data = read_libsvm(&shared_data("lgbm_categorical/categorical.train"), &LibsvmOptions::default()).unwrap();
        assert_eq!((data.rows(), data.cols()), (5600, 8));
        // 5600 * 8 cells, 43 327 written: the rest are missing.
        assert_eq!(sparse(&data).values.len(), 43_327);
        assert_eq!(data.info.labels.iter().filter(|&&l| l == 1.0).count(), 1021);
        assert_eq!(row(&data, 0), vec![7.0, 2.0, 3.0, 20.0, 15.0, 38.0, 29.0, 201.0]);
    }
}
