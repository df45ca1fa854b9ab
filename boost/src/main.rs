//! `boost`: train, predict and evaluate gradient-boosted trees from the command line, with XGBoost's
//! parameter names (`boost train data/higgs_lgbm_sample/binary.train objective=binary:logistic eta=0.1`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use boost::data::synthetic::{generate as generate_synthetic, generate_on_device, SyntheticSpec};
use boost::data::{
    read_data, Categories, Column, CsvOptions, DataFormat, Dataset, FeatureMatrix, LibsvmOptions, ReadOptions,
    SideFiles,
};
use boost::gpu::{transform_on_device, DeviceModel};
use boost::learner::{self, RoundLog, TrainOptions};
use boost::model::Model;
use boost::param::{Device, Params};
use boost::{metric, objective, DMatrix, Error, EvaluationMonitor, Result, TrainingCallback};

/// The model attribute that keeps the string encoding of a CSV training file, so that `predict` and
/// `eval` read CSV files with the same codes.
const CATEGORIES_ATTRIBUTE: &str = "boost_categories";

#[derive(Parser)]
#[command(
    name = "boost",
    version,
    about = "Gradient-boosted trees, XGBoost-compatible: hist, exact and oblivious trees on the CPU or a GPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train a model; parameters are XGBoost's (`objective=binary:logistic max_depth=6 eta=0.3 ...`).
    #[command(after_help = train_help())]
    Train(TrainArgs),
    /// Predict with a model: one line per row (outputs separated by commas).
    Predict(PredictArgs),
    /// Evaluate a model on labelled data with XGBoost's metrics.
    Eval(EvalArgs),
    /// Feature importance of a model (XGBoost's `get_score`), highest first.
    Importance(ImportanceArgs),
    /// Write a synthetic dataset (dense, with missing values; label in column 0) as CSV.
    Generate(GenerateArgs),
}

/// What `boost train --help` lists after the options: the parameters, objectives and metrics.
fn train_help() -> String {
    format!(
        "Parameters (NAME=VALUE, XGBoost's names): {}.\n\nObjectives: {}.\n\nMetrics (eval_metric=): {} \
         (error@T, ndcg@K, ndcg@K-, map@K take an argument).",
        boost::param::PARAMETER_NAMES,
        objective::OBJECTIVE_NAMES.join(", "),
        metric::METRIC_NAMES.join(", ")
    )
}

#[derive(Args)]
struct ImportanceArgs {
    /// The model (XGBoost JSON).
    #[arg(long, short)]
    model: PathBuf,
    /// weight, gain, cover, total_gain or total_cover.
    #[arg(long = "type", default_value = "gain")]
    kind: String,
}

#[derive(Args)]
struct GenerateArgs {
    /// Output CSV file (label first, then the features; empty fields are missing).
    output: PathBuf,
    #[arg(long, default_value_t = 1_000_000)]
    rows: usize,
    #[arg(long, default_value_t = 28)]
    cols: usize,
    /// Standard deviation of the noise on the margin (the difficulty).
    #[arg(long, default_value_t = 1.0)]
    noise: f64,
    /// Regression target (the margin) instead of a 0/1 label.
    #[arg(long, conflicts_with = "classes")]
    regression: bool,
    /// Class ids `0..K` (classes of about equal size, ordered by the margin) instead of a 0/1 label.
    #[arg(long, value_name = "K")]
    classes: Option<u32>,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also write the same table as little-endian `f32`, row after row (label first, NaN where a value
    /// is missing): what NumPy's `fromfile` reads in a moment, where parsing the CSV takes minutes.
    #[arg(long, value_name = "PATH")]
    raw: Option<PathBuf>,
}

#[derive(Args)]
struct DataArgs {
    /// Label column of CSV/TSV files: a 0-based index or a header name.
    #[arg(long, default_value = "0")]
    label: String,
    /// A CSV/TSV column of categories (0-based index or header name; repeatable): read as strings
    /// even where its fields parse as numbers. Without it, a column is categorical only when none of
    /// its fields is a number, and a non-number in a column of numbers is an error.
    #[arg(long = "categorical", value_name = "COLUMN")]
    categorical: Vec<String>,
    /// File format (detected from the name and content when not given).
    #[arg(long, value_parser = ["csv", "libsvm"])]
    format: Option<String>,
    /// Weights of the data file's rows (one a line; for ranking, one a group). Without it,
    /// `DATA.weight` is read when it exists.
    #[arg(long, value_name = "FILE")]
    weights: Option<PathBuf>,
    /// Query group sizes of the data file (one a line, consecutive rows). Without it, `DATA.query`
    /// is read when it exists.
    #[arg(long, value_name = "FILE")]
    groups: Option<PathBuf>,
    /// Read no `DATA.weight` / `DATA.query` files beside the data.
    #[arg(long, conflicts_with_all = ["weights", "groups"])]
    no_side_files: bool,
}

impl DataArgs {
    /// Where the main data file's weights and groups come from (evaluation sets: beside them).
    fn side_files(&self) -> SideFiles {
        match (&self.weights, &self.groups, self.no_side_files) {
            (_, _, true) => SideFiles::Ignored,
            (None, None, false) => SideFiles::Beside,
            (weights, groups, false) => SideFiles::Given { weights: weights.clone(), groups: groups.clone() },
        }
    }
}

#[derive(Args)]
struct TrainArgs {
    /// Training data (CSV/TSV or libsvm, optionally gzip-compressed), or `synthetic:ROWS` (or
    /// `synthetic:ROWSxCOLS`): `boost generate`'s rows (binary labels, seed 0, 28 features unless
    /// given) made where the trees are built, in the GPU's memory on a GPU (no file to read).
    data: PathBuf,
    /// XGBoost parameters as NAME=VALUE (`device` defaults to `auto` here: a GPU when one is usable).
    params: Vec<String>,
    #[command(flatten)]
    input: DataArgs,
    /// An evaluation set as NAME=PATH (repeatable); the training set is always evaluated as `train`.
    #[arg(long = "eval")]
    evals: Vec<String>,
    /// Boosting rounds.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// Stop when the last metric on the last evaluation set has not improved for this many rounds.
    #[arg(long)]
    early_stopping_rounds: Option<usize>,
    /// Continue training this model.
    #[arg(long)]
    continue_from: Option<PathBuf>,
    /// Where to write the model (XGBoost JSON).
    #[arg(long, short, default_value = "model.json")]
    output: PathBuf,
    /// Write the learning curve (every metric of every set against the round) as an SVG plot.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Print the evaluation log every N rounds (0: never).
    #[arg(long, default_value_t = 1)]
    verbose_eval: usize,
}

#[derive(Args)]
struct PredictArgs {
    /// Data to predict.
    data: PathBuf,
    #[command(flatten)]
    input: DataArgs,
    /// The model (XGBoost JSON, written by `boost train` or by XGBoost).
    #[arg(long, short)]
    model: PathBuf,
    /// Where to write the predictions (default, or `-`: standard output).
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// The data has no label column: every column is a feature.
    #[arg(long)]
    no_label: bool,
    /// Raw margins instead of transformed predictions.
    #[arg(long)]
    margin: bool,
    /// Leaf indices (one per tree) instead of predictions.
    #[arg(long, conflicts_with = "margin")]
    leaf: bool,
    /// Boosting rounds BEGIN:END to use (XGBoost's iteration_range; 0:0 = all).
    #[arg(long, default_value = "0:0")]
    iteration_range: String,
    /// Where to predict, in XGBoost's spelling: cpu, cuda, cuda:N, gpu, auto (a GPU when one is
    /// usable). The values are the same bits on either.
    #[arg(long, default_value = "cpu")]
    device: String,
}

#[derive(Args)]
struct EvalArgs {
    /// Labelled data.
    data: PathBuf,
    #[command(flatten)]
    input: DataArgs,
    /// The model (XGBoost JSON).
    #[arg(long, short)]
    model: PathBuf,
    /// Metrics (default: the objective's).
    #[arg(long = "metric")]
    metrics: Vec<String>,
}

/// Writes a line to standard output. A closed pipe (`boost predict ... | head`) ends the output
/// quietly instead of panicking, as command-line tools do.
fn print_line(line: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("boost: writing to standard output: {e}");
        std::process::exit(1);
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("boost: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Train(args) => train(args),
        Command::Predict(args) => predict(args),
        Command::Eval(args) => eval(args),
        Command::Importance(args) => importance(args),
        Command::Generate(args) => generate(args),
    }
}

/// What reading a file for a model takes from it: the training file's string encoding and the
/// model's feature count and names (a CSV header is matched to them).
#[derive(Default)]
struct ForModel<'a> {
    categories: Option<&'a Categories>,
    num_features: Option<usize>,
    feature_names: Option<&'a [String]>,
    has_label: bool,
}

impl<'a> ForModel<'a> {
    fn new(model: &'a Model, categories: Option<&'a Categories>) -> Self {
        ForModel {
            categories,
            num_features: Some(model.num_feature),
            feature_names: Some(model.feature_names.as_slice()),
            has_label: true,
        }
    }
}

/// Reads a data file (`-`: standard input) as the CLI's options say; `side_files` apply to it.
fn read(path: &Path, input: &DataArgs, side_files: SideFiles, model: &ForModel<'_>) -> Result<(Dataset, Categories)> {
    let column = |text: &str| match text.parse::<usize>() {
        Ok(i) => Column::Index(i),
        Err(_) => Column::Name(text.to_string()),
    };
    let label = column(&input.label);
    let categorical = input.categorical.iter().map(|c| column(c)).collect();
    let format = input.format.as_deref().map(|f| if f == "csv" { DataFormat::Csv } else { DataFormat::Libsvm });
    // Resolved once, beside the user's path: a spooled copy (below) has no side files of its own.
    let (weights, groups) = side_files.paths(path);
    for (what, file) in [("weights", &weights), ("query groups", &groups)] {
        if let Some(file) = file {
            eprintln!("boost: {what} of {} from {}", path.display(), file.display());
        }
    }
    let options = ReadOptions {
        format,
        csv: CsvOptions {
            label,
            has_label: model.has_label,
            categorical,
            categories: model.categories,
            feature_names: model.feature_names,
            ..Default::default()
        },
        libsvm: LibsvmOptions { num_features: model.num_features },
        side_files: SideFiles::Given { weights, groups },
    };
    // Pipes and standard input are read twice (the format and header are detected from a first
    // look): they are copied to a temporary file first.
    let spooled = spool_if_not_a_file(path)?;
    let file = spooled.as_deref().unwrap_or(path);
    let (data, categories) = read_data(file, &options).map_err(|e| rename_path(e, file, path))?;
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

/// A copy of standard input (`-`) or of a pipe in a temporary file, `None` for a regular file.
fn spool_if_not_a_file(path: &Path) -> Result<Option<tempfile::TempPath>> {
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

fn parse_params(pairs: &[String]) -> Result<Params> {
    let mut split = Vec::with_capacity(pairs.len());
    for p in pairs {
        let (name, value) = p
            .split_once('=')
            .ok_or_else(|| Error::InvalidParameter { name: p.clone(), reason: "expected NAME=VALUE".into() })?;
        split.push((name.trim().to_string(), value.trim().to_string()));
    }
    Params::from_pairs(&split)
}

fn train(args: TrainArgs) -> Result<()> {
    let mut params = parse_params(&args.params)?;
    // The CLI trains on a GPU when one is usable unless told otherwise (the library keeps XGBoost's
    // default, the CPU).
    if !args.params.iter().any(|p| p.split_once('=').is_some_and(|(name, _)| name.trim() == "device")) {
        params.device = Device::Auto;
    }
    if args.early_stopping_rounds.is_some() && args.evals.is_empty() {
        // As XGBoost: stopping on the training set's own metric would only stop by chance.
        return Err(Error::InvalidParameter {
            name: "--early-stopping-rounds".into(),
            reason: "needs an evaluation set to watch: add --eval NAME=PATH".into(),
        });
    }
    if params.nthread > 0 {
        // Only the first pool configuration takes effect; a second call is harmless.
        let _ = rayon::ThreadPoolBuilder::new().num_threads(params.nthread).build_global();
    }
    let previous = args.continue_from.as_ref().map(Model::load_json).transpose()?;
    let synthetic = synthetic_spec(&args.data)?;
    let (train_set, categories) = match &synthetic {
        Some(spec) => (synthetic_rows(spec, &params)?, Categories::default()),
        None => {
            let categories = previous_categories(previous.as_ref())?;
            let for_model = ForModel { categories: categories.as_ref(), has_label: true, ..Default::default() };
            let (data, categories) = read(&args.data, &args.input, args.input.side_files(), &for_model)?;
            (TrainSet::Host(data), categories)
        }
    };
    let mut evals_data = Vec::new();
    for e in &args.evals {
        let (name, path) = e.split_once('=').ok_or_else(|| Error::InvalidParameter {
            name: "--eval".into(),
            reason: format!("`{e}`: expected NAME=PATH"),
        })?;
        let for_model = ForModel {
            categories: Some(&categories),
            num_features: Some(train_set.cols()),
            feature_names: train_set.feature_names(),
            has_label: true,
        };
        let (data, _) = read(Path::new(path), &args.input, SideFiles::Beside, &for_model)?;
        evals_data.push((name.to_string(), data));
    }

    let progress = ProgressBar::new(args.rounds as u64);
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} rounds, {elapsed} elapsed, ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let options = TrainOptions {
        num_boost_round: args.rounds,
        xgb_model: previous,
        early_stopping_rounds: args.early_stopping_rounds,
        verbose_eval: 0,
        ..Default::default()
    };
    let start = std::time::Instant::now();
    // The log goes to standard output (also when it is not a terminal and the bar is hidden).
    let mut monitor =
        EvaluationMonitor::with_output(args.verbose_eval, |log| progress.suspend(|| print_line(&log.to_string())));
    let mut bar = ProgressCallback(&progress);
    let mut with_log: [&mut dyn TrainingCallback; 2] = [&mut bar, &mut monitor];
    let callbacks = if args.verbose_eval > 0 { &mut with_log[..] } else { &mut with_log[..1] };
    let trained = match &train_set {
        TrainSet::Host(train_data) => {
            let mut evals: Vec<(&Dataset, &str)> = vec![(train_data, "train")];
            evals.extend(evals_data.iter().map(|(n, d)| (d, n.as_str())));
            learner::train(&params, train_data, &evals, &options, callbacks)?
        }
        TrainSet::Device(train_data) => {
            let matrices: Vec<(DMatrix, String)> =
                evals_data.into_iter().map(|(n, d)| Ok((DMatrix::from_dataset(d)?, n))).collect::<Result<_>>()?;
            let mut evals: Vec<(&DMatrix, &str)> = vec![(train_data, "train")];
            evals.extend(matrices.iter().map(|(m, n)| (m, n.as_str())));
            learner::train_matrix(&params, train_data, &evals, &options, callbacks)?
        }
    };
    progress.finish_and_clear();
    let mut model = trained.model;
    // Only string columns need their codes kept (an all-numeric file's encoding is empty).
    if categories.features.iter().any(Option::is_some) || categories.labels.is_some() {
        let text = serde_json::to_string(&categories).map_err(|e| Error::Model(e.to_string()))?;
        model.attributes.insert(CATEGORIES_ATTRIBUTE.into(), text);
    }
    model.save_json(&args.output)?;
    eprintln!(
        "boost: quantised matrix {:.1} MB, the same data as dense f32 {:.1} MB",
        trained.ellpack_bytes as f64 / 1e6,
        trained.dense_f32_bytes as f64 / 1e6
    );
    eprintln!(
        "boost: {} trees in {:.2} s on {}; model written to {}",
        model.trees.len(),
        start.elapsed().as_secs_f64(),
        trained.device,
        args.output.display()
    );
    if !trained.peak_device_bytes_each.is_empty() {
        let mib: Vec<String> =
            trained.peak_device_bytes_each.iter().map(|&b| format!("{:.1}", b as f64 / 1048576.0)).collect();
        eprintln!("boost: peak device memory {} MiB", mib.join(", "));
    }
    if params.verbosity >= 2 {
        eprintln!("boost: phases: {}", trained.phases);
    }
    if let Some(best) = trained.best_iteration {
        eprintln!("boost: best iteration {best} ({:.5})", trained.best_score.unwrap_or(f64::NAN));
    }
    if let Some(plot) = &args.plot {
        plot_learning_curve(&trained.history, plot)?;
        eprintln!("boost: learning curve written to {}", plot.display());
    }
    Ok(())
}

/// The training rows: read or generated on the host, or generated in a GPU's memory.
enum TrainSet {
    Host(Dataset),
    Device(DMatrix),
}

impl TrainSet {
    fn cols(&self) -> usize {
        match self {
            TrainSet::Host(data) => data.cols(),
            TrainSet::Device(matrix) => matrix.cols(),
        }
    }

    /// The header's names, which an evaluation set's header must match.
    fn feature_names(&self) -> Option<&[String]> {
        match self {
            TrainSet::Host(data) => Some(data.info.feature_names.as_slice()),
            TrainSet::Device(_) => None,
        }
    }
}

/// The spec of a `synthetic:ROWS[xCOLS]` training set (`None`: a file).
fn synthetic_spec(data: &Path) -> Result<Option<SyntheticSpec>> {
    let Some(shape) = data.to_str().and_then(|d| d.strip_prefix("synthetic:")) else { return Ok(None) };
    let bad = || Error::InvalidParameter {
        name: "data".into(),
        reason: format!("`{}`: expected synthetic:ROWS or synthetic:ROWSxCOLS", data.display()),
    };
    let (rows, cols) = shape.split_once('x').unwrap_or((shape, "28"));
    let (rows, cols) = (rows.parse().map_err(|_| bad())?, cols.parse().map_err(|_| bad())?);
    Ok(Some(SyntheticSpec { rows, cols, ..Default::default() }))
}

/// The synthetic rows of `spec` where `params` build the trees: in the GPU's memory (the device
/// `device` opens, the first of `n_gpus`), or on the host.
fn synthetic_rows(spec: &SyntheticSpec, params: &Params) -> Result<TrainSet> {
    let (gpu, _) = learner::open_device(params.device, params.verbosity >= 2)?;
    let Some(gpu) = gpu else { return Ok(TrainSet::Host(generate_synthetic(spec)?)) };
    let start = std::time::Instant::now();
    let (values, labels) = generate_on_device(&gpu, spec, 0..spec.rows)?;
    let labels = labels.to_vec(&gpu)?;
    eprintln!("boost: {} synthetic rows made on the GPU in {:.2} s", spec.rows, start.elapsed().as_secs_f64());
    let matrix = DMatrix::from_device_dense(std::sync::Arc::new(gpu), values, spec.rows, spec.cols)?;
    Ok(TrainSet::Device(matrix.with_labels(labels)?))
}

fn previous_categories(model: Option<&Model>) -> Result<Option<Categories>> {
    match model.and_then(|m| m.attributes.get(CATEGORIES_ATTRIBUTE)) {
        Some(text) => serde_json::from_str(text)
            .map(Some)
            .map_err(|e| Error::Model(format!("attribute {CATEGORIES_ATTRIBUTE}: {e}"))),
        None => Ok(None),
    }
}

fn parse_range(text: &str) -> Result<(usize, usize)> {
    let bad = || Error::InvalidParameter {
        name: "--iteration-range".into(),
        reason: format!("`{text}`: expected BEGIN:END"),
    };
    let (b, e) = text.split_once(':').ok_or_else(bad)?;
    Ok((b.trim().parse().map_err(|_| bad())?, e.trim().parse().map_err(|_| bad())?))
}

fn predict(args: PredictArgs) -> Result<()> {
    let model = Model::load_json(&args.model)?;
    let objective = objective::from_json(&model.objective)?;
    let categories = previous_categories(Some(&model))?;
    let for_model = ForModel { has_label: !args.no_label, ..ForModel::new(&model, categories.as_ref()) };
    let (data, _) = read(&args.data, &args.input, args.input.side_files(), &for_model)?;
    let range = parse_range(&args.iteration_range)?;
    let device = Params::from_pairs(&[("device", args.device.as_str())])?.device;
    let (gpu, device_name) = learner::open_device(device, false)?;
    if device != Device::Cpu {
        eprintln!("boost: predicting on {device_name}");
    }
    let device_model = gpu.as_ref().map(|gpu| DeviceModel::upload(gpu, &model)).transpose()?;
    let (values, per_row): (Vec<String>, usize) = if args.leaf {
        let leaves = match (&gpu, &device_model) {
            (Some(gpu), Some(device_model)) => device_model.predict_leaf(gpu, &data.features, range)?,
            _ => model.predict_leaf(&data.features, range)?,
        };
        let per_row = leaves.len() / data.rows().max(1);
        (leaves.iter().map(u32::to_string).collect(), per_row)
    } else {
        let out = match (&gpu, &device_model) {
            (Some(gpu), Some(device_model)) => {
                model.check_objective(objective.as_ref())?;
                let base_margin = (!data.info.base_margin.is_empty()).then_some(data.info.base_margin.as_slice());
                let to_margin = |b| objective.prob_to_margin(b);
                let margins =
                    device_model.predict_margin_uploaded(gpu, &data.features, base_margin, to_margin, range)?;
                if args.margin {
                    margins.to_vec(gpu)?
                } else {
                    // The objective's outputs computed on the device too (the host's bits).
                    let (rows, outputs, transform) = (data.rows(), objective.outputs(), objective.output_transform());
                    transform_on_device(gpu, &margins, rows, outputs, transform)?.to_vec(gpu)?
                }
            }
            _ => {
                let margins = model.predict_dataset_margin(&data, objective.as_ref(), range)?;
                if args.margin {
                    margins
                } else {
                    objective.transform(&margins)
                }
            }
        };
        let per_row = out.len() / data.rows().max(1);
        (out.iter().map(f32::to_string).collect(), per_row)
    };
    let mut text = String::with_capacity(values.len() * 12);
    for row in values.chunks(per_row.max(1)) {
        text.push_str(&row.join(","));
        text.push('\n');
    }
    match &args.output {
        Some(path) if path.as_os_str() != "-" => boost::output::write_file(path, text.as_bytes())?,
        _ => print_line(text.trim_end_matches('\n')),
    }
    Ok(())
}

fn eval(args: EvalArgs) -> Result<()> {
    let model = Model::load_json(&args.model)?;
    let objective = objective::from_json(&model.objective)?;
    let categories = previous_categories(Some(&model))?;
    let for_model = ForModel::new(&model, categories.as_ref());
    let (data, _) = read(&args.data, &args.input, args.input.side_files(), &for_model)?;
    objective.validate(&data.info)?;
    let margins = model.predict_dataset_margin(&data, objective.as_ref(), (0, 0))?;
    let predictions = objective.eval_transform(&margins);
    let metrics = if args.metrics.is_empty() {
        vec![metric::default_metric_for(objective.as_ref())?]
    } else {
        args.metrics.iter().map(|name| metric::from_name(name)).collect::<Result<_>>()?
    };
    for m in metrics {
        m.check(predictions.len(), &data.info, model.num_outputs())?;
        print_line(&format!("{}:{:.6}", m.name(), m.evaluate(&predictions, &data.info, model.num_outputs())));
    }
    Ok(())
}

fn importance(args: ImportanceArgs) -> Result<()> {
    let model = Model::load_json(&args.model)?;
    let kind: boost::model::ImportanceType = args
        .kind
        .parse()
        .map_err(|_| Error::InvalidParameter { name: "--type".into(), reason: format!("`{}`", args.kind) })?;
    let mut scores = model.feature_importance(kind)?;
    scores.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.feature.cmp(&b.feature)));
    for s in scores {
        print_line(&format!("{}\t{}", s.key(), s.score));
    }
    Ok(())
}

fn generate(args: GenerateArgs) -> Result<()> {
    use boost::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
    let spec = SyntheticSpec {
        rows: args.rows,
        cols: args.cols,
        noise: args.noise,
        task: match (args.regression, args.classes) {
            (true, _) => SyntheticTask::Regression,
            (false, Some(classes)) => SyntheticTask::MultiClass { classes },
            (false, None) => SyntheticTask::Binary,
        },
        seed: args.seed,
        ..Default::default()
    };
    let data = generate(&spec)?;
    let mut text = String::with_capacity(data.rows() * (data.cols() + 1) * 8);
    let mut row = vec![0f32; data.cols()];
    let mut raw = Vec::with_capacity(if args.raw.is_some() { data.rows() * (data.cols() + 1) } else { 0 });
    for i in 0..data.rows() {
        data.features.fill_row(i, &mut row);
        if args.raw.is_some() {
            raw.push(data.info.labels[i]);
            raw.extend_from_slice(&row);
        }
        text.push_str(&data.info.labels[i].to_string());
        for v in &row {
            text.push(',');
            if !v.is_nan() {
                text.push_str(&v.to_string());
            }
        }
        text.push('\n');
    }
    boost::output::write_file(&args.output, text.as_bytes())?;
    if let Some(path) = &args.raw {
        let bytes: Vec<u8> = raw.iter().flat_map(|v| v.to_le_bytes()).collect();
        boost::output::write_file(path, &bytes)?;
    }
    Ok(())
}

/// Every (set, metric) series of the evaluation log against the round, as an SVG line chart.
/// Moves the progress bar on a round at every round.
struct ProgressCallback<'a>(&'a ProgressBar);

impl TrainingCallback for ProgressCallback<'_> {
    fn after_iteration(&mut self, _model: &Model, _log: &RoundLog) -> Result<std::ops::ControlFlow<()>> {
        self.0.inc(1);
        Ok(std::ops::ControlFlow::Continue(()))
    }
}

fn plot_learning_curve(history: &[RoundLog], path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let plot_error =
        |e: &dyn std::fmt::Display| Error::InvalidParameter { name: "--plot".into(), reason: e.to_string() };
    let Some(first) = history.first() else {
        return Err(plot_error(&"no evaluation log to plot (were there any rounds?)"));
    };
    let series: Vec<(String, Vec<(f64, f64)>)> = (0..first.values.len())
        .map(|k| {
            let (set, metric, _) = &first.values[k];
            let points = history.iter().map(|log| (log.round as f64, log.values[k].2)).collect();
            (format!("{set}-{metric}"), points)
        })
        .collect();
    let (x0, x1) = (first.round as f64, history.last().map_or(1.0, |l| l.round as f64).max(first.round as f64 + 1.0));
    let ys = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).filter(|y| y.is_finite());
    let (y0, y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| (a.min(y), b.max(y)));
    let pad = ((y1 - y0) * 0.05).max(1e-9);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 540)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_error(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("learning curve", ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
            .map_err(|e| plot_error(&e))?;
        chart.configure_mesh().x_desc("round").draw().map_err(|e| plot_error(&e))?;
        for (i, (name, points)) in series.into_iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| plot_error(&e))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| plot_error(&e))?;
        root.present().map_err(|e| plot_error(&e))?;
    }
    boost::output::write_file(path, svg.as_bytes())
}
