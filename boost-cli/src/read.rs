//! Reading data files for a command: the options' columns and side files, pipes spooled to a
//! temporary file, a model's feature names and string codes.

use std::path::{Path, PathBuf};

use boost::data::{
    read_data, Categories, Column, CsvOptions, DataFormat, Dataset, FeatureMatrix, LibsvmOptions, ReadOptions,
    SideFiles,
};
use boost::model::Model;
use boost::{Error, Result};

use crate::args::DataArgs;

/// The model attribute that keeps the string encoding of a CSV training file, so that `predict` and
/// `eval` read CSV files with the same codes.
pub(crate) const CATEGORIES_ATTRIBUTE: &str = "boost_categories";

/// What reading a file for a model takes from it: the training file's string encoding and the
/// model's feature count and names (a CSV header is matched to them).
#[derive(Default)]
pub(crate) struct ForModel<'a> {
    pub(crate) categories: Option<&'a Categories>,
    pub(crate) num_features: Option<usize>,
    pub(crate) feature_names: Option<&'a [String]>,
    pub(crate) has_label: bool,
}

impl<'a> ForModel<'a> {
    pub(crate) fn new(model: &'a Model, categories: Option<&'a Categories>) -> Self {
        ForModel {
            categories,
            num_features: Some(model.num_feature),
            feature_names: Some(model.feature_names.as_slice()),
            has_label: true,
        }
    }
}

/// Reads a data file (`-`: standard input) as the CLI's options say; `side_files` apply to it.
pub(crate) fn read(
    path: &Path,
    input: &DataArgs,
    side_files: SideFiles,
    model: &ForModel<'_>,
) -> Result<(Dataset, Categories)> {
    let format = format(input);
    // Resolved once, beside the user's path: a spooled copy (below) has no side files of its own.
    let (weights, groups) = side_files.paths(path);
    for (what, file) in [("weights", &weights), ("query groups", &groups)] {
        if let Some(file) = file {
            eprintln!("boost: {what} of {} from {}", path.display(), file.display());
        }
    }
    let options = ReadOptions {
        format,
        csv: csv_options(input, model),
        libsvm: LibsvmOptions { num_features: model.num_features },
        side_files: SideFiles::Given { weights, groups },
    };
    // Pipes and standard input are read twice (the format and header are detected from a first
    // look): they are copied to a temporary file first.
    let spooled = spool_if_not_a_file(path)?;
    let file = spooled.as_deref().unwrap_or(path);
    let (mut data, categories) = read_data(file, &options).map_err(|e| rename_path(e, file, path))?;
    if let Some(missing) = input.missing {
        data.features.mark_missing(missing);
    }
    // A dense file has every feature column (sparse rows may stop short of the model's last).
    if let (Some(expected), FeatureMatrix::Dense(_)) = (model.num_features, &data.features) {
        if data.cols() != expected {
            let label = if model.has_label {
                "the label column excluded; data without one needs --no-label"
            } else {
                "no label column"
            };
            return Err(Error::InvalidData(format!(
                "{}: {} feature columns, but the model was trained on {expected} ({label})",
                path.display(),
                data.cols()
            )));
        }
    }
    Ok((data, categories))
}

/// The file format the options name, if they do.
pub(crate) fn format(input: &DataArgs) -> Option<DataFormat> {
    input.format.as_deref().map(|f| if f == "csv" { DataFormat::Csv } else { DataFormat::Libsvm })
}

/// How the options and `model` read a CSV file.
pub(crate) fn csv_options<'a>(input: &DataArgs, model: &ForModel<'a>) -> CsvOptions<'a> {
    let column = |text: &str| match text.parse::<usize>() {
        Ok(i) => Column::Index(i),
        Err(_) => Column::Name(text.to_string()),
    };
    CsvOptions {
        label: column(&input.label),
        label_upper_bound: input.label_upper_bound.as_deref().map(column),
        has_label: model.has_label,
        categorical: input.categorical.iter().map(|c| column(c)).collect(),
        categories: model.categories,
        feature_names: model.feature_names,
        ..Default::default()
    }
}

/// A copy of standard input (`-`) or of a pipe in a temporary file, `None` for a regular file.
pub(crate) fn spool_if_not_a_file(path: &Path) -> Result<Option<tempfile::TempPath>> {
    let stdin = path.as_os_str() == "-";
    if !stdin && std::fs::metadata(path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?.is_file() {
        return Ok(None);
    }
    let io = |e| Error::Io { path: path.to_path_buf(), source: e };
    let mut temp = tempfile::NamedTempFile::new().map_err(io)?;
    if stdin {
        std::io::copy(&mut std::io::stdin().lock(), temp.as_file_mut()).map_err(io)?;
    } else {
        std::io::copy(&mut std::fs::File::open(path).map_err(io)?, temp.as_file_mut()).map_err(io)?;
    }
    Ok(Some(temp.into_temp_path()))
}

/// An error about the spooled copy `from`, told of the user's `to` instead.
fn rename_path(error: Error, from: &Path, to: &Path) -> Error {
    let to = if to.as_os_str() == "-" { PathBuf::from("<standard input>") } else { to.to_path_buf() };
    match error {
        Error::Io { path, source } if path == from => Error::Io { path: to, source },
        Error::Parse { path, line, reason } if path == from => Error::Parse { path: to, line, reason },
        Error::InvalidData(text) => {
            Error::InvalidData(text.replace(&from.display().to_string(), &to.display().to_string()))
        }
        other => other,
    }
}

/// The training file's string codes that `model` keeps (none for an all-numeric file).
pub(crate) fn previous_categories(model: Option<&Model>) -> Result<Option<Categories>> {
    match model.and_then(|m| m.attributes.get(CATEGORIES_ATTRIBUTE)) {
        Some(text) => serde_json::from_str(text)
            .map(Some)
            .map_err(|e| Error::Model(format!("attribute {CATEGORIES_ATTRIBUTE}: {e}"))),
        None => Ok(None),
    }
}
