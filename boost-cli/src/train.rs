//! `boost train`.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use boost::data::synthetic::{feature_types, generate, generate_on_device, SyntheticSpec};
use boost::data::{Categories, Dataset, SideFiles};
use boost::learner::{self, RoundLog, TrainOptions, Trained};
use boost::model::Model;
use boost::{DMatrix, Device, Error, EvaluationMonitor, Params, Result, TrainingCallback};

use crate::args::TrainArgs;
use crate::external;
use crate::read::{previous_categories, read, ForModel, CATEGORIES_ATTRIBUTE};
use crate::{parse_params, plot, print_line};

pub(crate) fn train(args: TrainArgs) -> Result<()> {
    let params = train_params(&args)?;
    let previous = args.continue_from.as_ref().map(Model::load).transpose()?;
    let (train_set, categories) = match synthetic_spec(&args.data)? {
        Some(spec) => (synthetic_rows(&spec, &params)?, Categories::default()),
        None if args.external_memory => {
            let categories = previous_categories(previous.as_ref())?;
            let (pages, categories) = external::read_pages(&args, &params, categories.as_ref())?;
            (TrainSet::Matrix(pages), categories)
        }
        None => {
            let categories = previous_categories(previous.as_ref())?;
            let for_model = ForModel { categories: categories.as_ref(), has_label: true, ..Default::default() };
            let (data, categories) = read(&args.data, &args.input, args.input.side_files(), &for_model)?;
            (TrainSet::Host(data), categories)
        }
    };
    let evals = read_evals(&args, &train_set, &categories)?;
    let options = TrainOptions {
        num_boost_round: args.rounds,
        xgb_model: previous,
        early_stopping_rounds: args.early_stopping_rounds,
        verbose_eval: 0,
        ..Default::default()
    };
    let start = Instant::now();
    let mut trained = run(&args, &params, &train_set, evals, &options)?;
    // Only string columns need their codes kept (an all-numeric file's encoding is empty).
    if categories.features.iter().any(Option::is_some) || categories.labels.is_some() {
        let text = serde_json::to_string(&categories).map_err(|e| Error::Model(e.to_string()))?;
        trained.model.attributes.insert(CATEGORIES_ATTRIBUTE.into(), text);
        if options.xgb_model.is_none() {
            // XGBoost's category encoder too: its users predict from frames of the strings.
            trained.model.categories = boost::model::CategoryEncoder::from_names(&categories.features);
        }
    }
    trained.model.save(&args.output)?;
    report(&args, &params, &trained, start)
}

/// The options' parameters, with the CLI's defaults and checks.
fn train_params(args: &TrainArgs) -> Result<Params> {
    let mut params = parse_params(&args.params)?;
    // The CLI trains on a GPU when one is usable unless told otherwise (the library keeps XGBoost's
    // default, the CPU).
    let device_given = args.params.iter().any(|p| p.split_once('=').is_some_and(|(name, _)| name.trim() == "device"));
    if !device_given {
        // External-memory pages train on the CPU unless a GPU is named: without sampling the GPU
        // holds every row, which pages are for not needing.
        params.device = if args.external_memory { Device::Cpu } else { Device::Auto };
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
    Ok(params)
}

/// The `--eval NAME=PATH` sets, read with the training set's codes, feature count and names.
fn read_evals(args: &TrainArgs, train_set: &TrainSet, categories: &Categories) -> Result<Vec<(String, Dataset)>> {
    let mut evals = Vec::new();
    for e in &args.evals {
        let (name, path) = e.split_once('=').ok_or_else(|| Error::InvalidParameter {
            name: "--eval".into(),
            reason: format!("`{e}`: expected NAME=PATH"),
        })?;
        let for_model = ForModel {
            categories: Some(categories),
            num_features: Some(train_set.cols()),
            feature_names: train_set.feature_names(),
            has_label: true,
        };
        let (data, _) = read(Path::new(path), &args.input, SideFiles::Beside, &for_model)?;
        evals.push((name.to_string(), data));
    }
    Ok(evals)
}

/// Trains with a progress bar, and the evaluation log every `--verbose-eval` rounds.
fn run(
    args: &TrainArgs,
    params: &Params,
    train_set: &TrainSet,
    evals: Vec<(String, Dataset)>,
    options: &TrainOptions,
) -> Result<Trained> {
    let progress = ProgressBar::new(args.rounds as u64);
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} rounds, {elapsed} elapsed, ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // The log goes to standard output (also when it is not a terminal and the bar is hidden).
    let mut monitor =
        EvaluationMonitor::with_output(args.verbose_eval, |log| progress.suspend(|| print_line(&log.to_string())));
    let mut bar = ProgressCallback(&progress);
    let mut with_log: [&mut dyn TrainingCallback; 2] = [&mut bar, &mut monitor];
    let callbacks = if args.verbose_eval > 0 { &mut with_log[..] } else { &mut with_log[..1] };
    let trained = match train_set {
        TrainSet::Host(train_data) => {
            let mut sets: Vec<(&Dataset, &str)> = vec![(train_data, "train")];
            sets.extend(evals.iter().map(|(n, d)| (d, n.as_str())));
            learner::train(params, train_data, &sets, options, callbacks)?
        }
        TrainSet::Matrix(train_data) => {
            let matrices: Vec<(DMatrix, String)> =
                evals.into_iter().map(|(n, d)| Ok((DMatrix::from_dataset(d)?, n))).collect::<Result<_>>()?;
            let mut sets: Vec<(&DMatrix, &str)> = vec![(train_data, "train")];
            sets.extend(matrices.iter().map(|(m, n)| (m, n.as_str())));
            learner::train_matrix(params, train_data, &sets, options, callbacks)?
        }
    };
    progress.finish_and_clear();
    Ok(trained)
}

/// The summary on standard error, and the learning-curve plot.
fn report(args: &TrainArgs, params: &Params, trained: &Trained, start: Instant) -> Result<()> {
    eprintln!(
        "boost: quantised matrix {:.1} MB, the same data as dense f32 {:.1} MB",
        trained.ellpack_bytes as f64 / 1e6,
        trained.dense_f32_bytes as f64 / 1e6
    );
    eprintln!(
        "boost: {} trees in {:.2} s on {}; model written to {}",
        trained.model.trees.len(),
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
        if !trained.phases.device.is_empty() {
            eprintln!("boost: device time by phase: {}", trained.phases.device_summary());
        }
    }
    let encoded: Vec<String> = trained.model.target_statistics.features.iter().map(|e| e.feature.to_string()).collect();
    if !encoded.is_empty() {
        eprintln!(
            "boost: features {} encoded by ordered target statistics, kept in the model: XGBoost cannot load this file",
            encoded.join(", ")
        );
    }
    if let Some(best) = trained.best_iteration {
        eprintln!("boost: best iteration {best} ({:.5})", trained.best_score.unwrap_or(f64::NAN));
    }
    if let Some(path) = &args.plot {
        plot::learning_curve(&trained.history, path)?;
        eprintln!("boost: learning curve written to {}", path.display());
    }
    Ok(())
}

/// The training rows: read or generated on the host, or a matrix (rows generated in a GPU's
/// memory, or a file's external-memory pages).
enum TrainSet {
    Host(Dataset),
    Matrix(DMatrix),
}

impl TrainSet {
    fn cols(&self) -> usize {
        match self {
            TrainSet::Host(data) => data.cols(),
            TrainSet::Matrix(matrix) => matrix.cols(),
        }
    }

    /// The header's names, which an evaluation set's header must match.
    fn feature_names(&self) -> Option<&[String]> {
        match self {
            TrainSet::Host(data) => Some(data.info.feature_names.as_slice()),
            TrainSet::Matrix(_) => None,
        }
    }
}

/// The spec of a `synthetic:ROWS[xCOLS][:cN]` training set (`None`: a file).
fn synthetic_spec(data: &Path) -> Result<Option<SyntheticSpec>> {
    let Some(shape) = data.to_str().and_then(|d| d.strip_prefix("synthetic:")) else { return Ok(None) };
    let bad = || Error::InvalidParameter {
        name: "data".into(),
        reason: format!("`{}`: expected synthetic:ROWS, synthetic:ROWSxCOLS or synthetic:ROWSxCOLS:cN", data.display()),
    };
    let (shape, categorical) = match shape.split_once(":c") {
        Some((shape, n)) => (shape, n.parse().map_err(|_| bad())?),
        None => (shape, 0),
    };
    let (rows, cols) = shape.split_once('x').unwrap_or((shape, "28"));
    let (rows, cols) = (rows.parse().map_err(|_| bad())?, cols.parse().map_err(|_| bad())?);
    Ok(Some(SyntheticSpec { rows, cols, categorical, ..Default::default() }))
}

/// The synthetic rows of `spec` where `params` build the trees: in the GPU's memory (the device
/// `device` opens, the first of `n_gpus`), or on the host.
fn synthetic_rows(spec: &SyntheticSpec, params: &Params) -> Result<TrainSet> {
    let (gpu, _) = learner::open_device(params.device, params.verbosity >= 2)?;
    let Some(gpu) = gpu else { return Ok(TrainSet::Host(generate(spec)?)) };
    let start = Instant::now();
    let (values, labels) = generate_on_device(&gpu, spec, 0..spec.rows)?;
    let labels = labels.to_vec(&gpu)?;
    eprintln!("boost: {} synthetic rows made on the GPU in {:.2} s", spec.rows, start.elapsed().as_secs_f64());
    let mut matrix = DMatrix::from_device_dense(Arc::new(gpu), values, spec.rows, spec.cols)?;
    matrix.set_feature_types(feature_types(spec))?;
    Ok(TrainSet::Matrix(matrix.with_labels(labels)?))
}

/// Moves the progress bar on a round at every round.
struct ProgressCallback<'a>(&'a ProgressBar);

impl TrainingCallback for ProgressCallback<'_> {
    fn after_iteration(&mut self, _model: &Model, _log: &RoundLog) -> Result<ControlFlow<()>> {
        self.0.inc(1);
        Ok(ControlFlow::Continue(()))
    }
}
