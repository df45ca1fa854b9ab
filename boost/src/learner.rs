//! The training loop: gradients from the objective, one tree per output per round (hist method),
//! margins kept up to date on the training and evaluation sets, an XGBoost-style evaluation log,
//! early stopping on the last metric of the last evaluation set, and continuation from a model.

use std::sync::Arc;
use std::time::Instant;

use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, DeviceKind, Gpu};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use boost_kernels::adaptive;
use boost_kernels::metric::Transform;
use boost_kernels::sampling::RowSampler;

use crate::data::{Dataset, FeatureMatrix, MetaInfo};
use crate::ellpack::{EllpackMatrix, UnpackedBins};
use crate::fixed_point;
use crate::gpu::{
    csr_is_checked, device_cuts, device_cuts_csr, Communicator, DeviceCsr, DeviceData, DeviceEvalSet, DeviceModel,
    DeviceTrees, GpuExact, GpuTrainer, HostStaged, InitialMargins, MultiGpuTrainer, Nccl, PeerSum,
};
use crate::metric::{self, DeviceMetric, Metric};
use crate::model::Model;
use crate::objective::{self, DeviceObjective, Objective};
use crate::param::{Device, Params, TreeMethod, TreeParams};
use crate::phases::PhaseTimes;
use crate::quantile::QuantileCuts;
use crate::rows::{Features, Rows};
use crate::tree::exact::{ExactBuilder, SortedColumns};
use crate::tree::hist::{HistBuilder, HistogramPrecision};
use crate::tree::Tree;
use crate::DMatrix;
use crate::{Error, Result};

/// Options of a training run besides the parameters.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Rounds to train (each adds a tree an output).
    pub num_boost_round: usize,
    /// Continue training this model (its trees are kept; new rounds are appended).
    pub xgb_model: Option<Model>,
    /// Stop when the last metric of the last evaluation set has not improved for this many rounds.
    pub early_stopping_rounds: Option<usize>,
    /// Print the evaluation log every this many rounds (0: never), as XGBoost's `verbose_eval`.
    pub verbose_eval: usize,
    /// A device already opened, used instead of the one the `device` parameter names (a caller that
    /// trains many models opens it once; the tests pass the SIMT emulator).
    pub gpu: Option<Arc<Gpu>>,
    /// The caller's gradients in place of the `objective` parameter's (XGBoost's `obj=`): the
    /// named objective still gives the base score, the output transform, the default metric and
    /// the model file's objective, as in XGBoost.
    pub custom_objective: Option<CustomObjective>,
    /// A metric of the caller's, logged after the `eval_metric`s (so early stopping watches it, as
    /// XGBoost's `custom_metric`).
    pub custom_metric: Option<CustomMetric>,
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            num_boost_round: 10,
            xgb_model: None,
            early_stopping_rounds: None,
            verbose_eval: 1,
            gpu: None,
            custom_objective: None,
            custom_metric: None,
        }
    }
}

/// The gradient and hessian of each row and output from the margins (`rows * outputs`,
/// row-major, before any transform) and the training rows' labels, weights and groups.
type GradientFn = dyn Fn(&[f32], &MetaInfo) -> Vec<GradientPair<f32>> + Send + Sync;

/// A custom objective: a function from the margins and the training rows' [`MetaInfo`] to a
/// [`GradientPair`] (gradient, hessian) a row and output, as XGBoost's `obj(predt, dtrain)`. The
/// gradients are computed on the host each round, also when the trees are built on a GPU.
#[derive(Clone)]
pub struct CustomObjective(Arc<GradientFn>);

impl CustomObjective {
    /// A custom objective computing its gradients with `gradients`.
    pub fn new(gradients: impl Fn(&[f32], &MetaInfo) -> Vec<GradientPair<f32>> + Send + Sync + 'static) -> Self {
        CustomObjective(Arc::new(gradients))
    }

    /// Its gradients of `margins` into `out`, or an error when it gives another count.
    fn gradients_into(&self, margins: &[f32], info: &MetaInfo, out: &mut [GradientPair<f32>]) -> Result<()> {
        let gradients = (self.0)(margins, info);
        if gradients.len() != out.len() {
            return Err(Error::InvalidData(format!(
                "the custom objective gave {} gradient pairs for {} margins",
                gradients.len(),
                out.len()
            )));
        }
        out.copy_from_slice(&gradients);
        Ok(())
    }
}

/// A metric from the predictions (the objective's evaluation transform of the margins, `rows *
/// outputs` row-major: probabilities for `binary:logistic`) and the evaluated rows' [`MetaInfo`].
type MetricFn = dyn Fn(&[f32], &MetaInfo) -> f64 + Send + Sync;

/// A custom metric: its name in the evaluation log, whether larger is better (for early stopping)
/// and the function computing it (XGBoost's `custom_metric`).
#[derive(Clone)]
pub struct CustomMetric {
    name: String,
    higher_is_better: bool,
    evaluate: Arc<MetricFn>,
}

impl CustomMetric {
    /// A custom metric named `name` in the evaluation log.
    pub fn new(
        name: impl Into<String>,
        higher_is_better: bool,
        evaluate: impl Fn(&[f32], &MetaInfo) -> f64 + Send + Sync + 'static,
    ) -> Self {
        CustomMetric { name: name.into(), higher_is_better, evaluate: Arc::new(evaluate) }
    }
}

impl Metric for CustomMetric {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn higher_is_better(&self) -> bool {
        self.higher_is_better
    }
    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, _outputs: usize) -> f64 {
        (self.evaluate)(predictions, info)
    }
}

impl std::fmt::Debug for CustomMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CustomMetric({})", self.name)
    }
}

impl std::fmt::Debug for CustomObjective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CustomObjective")
    }
}

/// One round's metrics: (set name, metric name, value) in log order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoundLog {
    /// The round (0-based).
    pub round: usize,
    /// (evaluation set, metric, value) in log order.
    pub values: Vec<(String, String, f64)>,
}

impl std::fmt::Display for RoundLog {
    /// XGBoost's line: `[12]\ttrain-auc:0.91000\tvalid-auc:0.88000`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}]", self.round)?;
        for (set, metric, value) in &self.values {
            write!(f, "\t{set}-{metric}:{value:.5}")?;
        }
        Ok(())
    }
}

/// What `train` returns.
pub struct Trained {
    /// The trees, base score and objective, as the model file holds them.
    pub model: Model,
    /// The objective the parameters named.
    pub objective: Box<dyn Objective>,
    /// Each logged round's metrics.
    pub history: Vec<RoundLog>,
    /// The round with the best score of the early-stopping metric: only when early stopping ran (as
    /// XGBoost, whose scikit-learn API predicts with the trees up to this round).
    pub best_iteration: Option<usize>,
    /// The early-stopping metric's value at `best_iteration`.
    pub best_score: Option<f64>,
    /// Bytes of the training data's quantised matrix (the CPU's bit-packed ELLPACK, or the GPU
    /// builder's `u16` a row and feature), and of the same matrix as dense `f32` (Mitchell et al.
    /// 2018's comparison).
    pub ellpack_bytes: usize,
    /// Bytes of the training features as dense `f32`.
    pub dense_f32_bytes: usize,
    /// Where the trees were built: `cpu`, or the GPU's name and kind; with `device=auto` and no usable
    /// GPU, `cpu` and the reason.
    pub device: String,
    /// Wall time by phase: the cuts and matrix, gradients, trees (the GPU backend's steps too),
    /// margins, metrics.
    pub phases: PhaseTimes,
    /// The most device memory in use at once during training (a CUDA device's pool; `None` on the
    /// CPU and the emulator); the first device's of several.
    pub peak_device_bytes: Option<u64>,
    /// Each device's peak, in device order (one entry with one GPU, none on the CPU and the
    /// emulator).
    pub peak_device_bytes_each: Vec<u64>,
}

/// Trains on `train`, evaluating `evals` (data, name) after every round.
pub fn train(
    params: &Params,
    train: &Dataset,
    evals: &[(&Dataset, &str)],
    options: &TrainOptions,
    on_round: impl FnMut(&RoundLog),
) -> Result<Trained> {
    let evals: Vec<(Rows, &str)> = evals.iter().map(|(data, name)| (Rows::of(data), *name)).collect();
    train_rows(params, &Rows::of(train), &evals, options, on_round)
}

/// [`train`] of [`DMatrix`] sets, whose rows may lie in a GPU's memory (then trained there unless
/// `device=cpu`): the whole report, of which [`crate::Booster::train_with`] keeps the model.
pub fn train_matrix(
    params: &Params,
    train: &DMatrix,
    evals: &[(&DMatrix, &str)],
    options: &TrainOptions,
    on_round: impl FnMut(&RoundLog),
) -> Result<Trained> {
    let evals: Vec<(Rows, &str)> = evals.iter().map(|(data, name)| (data.rows_view(), *name)).collect();
    train_rows(params, &train.rows_view(), &evals, options, on_round)
}

/// [`train`] with histograms summed in `precision`: an experiment switch for `cargo xtask precision`
/// (docs/precision.md), behind the `experiments` feature. Anything but
/// [`HistogramPrecision::FixedPoint`] (what [`train`] uses) makes the trees depend on the order of
/// summation and so on the thread count.
#[cfg(feature = "experiments")]
pub fn train_with_precision(
    params: &Params,
    train: &Dataset,
    evals: &[(&Dataset, &str)],
    options: &TrainOptions,
    precision: HistogramPrecision,
    on_round: impl FnMut(&RoundLog),
) -> Result<Trained> {
    let evals: Vec<(Rows, &str)> = evals.iter().map(|(data, name)| (Rows::of(data), *name)).collect();
    train_in(params, &Rows::of(train), &evals, options, precision, on_round)
}

/// [`train`] of rows on the host or in a GPU's memory ([`Rows`]). Rows in a GPU's memory train on
/// that GPU unless `device=cpu` (which reads them back) or `options.gpu` names another.
pub(crate) fn train_rows(
    params: &Params,
    train: &Rows<'_>,
    evals: &[(Rows<'_>, &str)],
    options: &TrainOptions,
    on_round: impl FnMut(&RoundLog),
) -> Result<Trained> {
    train_in(params, train, evals, options, HistogramPrecision::FixedPoint, on_round)
}

fn train_in(
    params: &Params,
    train: &Rows<'_>,
    evals: &[(Rows<'_>, &str)],
    options: &TrainOptions,
    precision: HistogramPrecision,
    mut on_round: impl FnMut(&RoundLog),
) -> Result<Trained> {
    if train.rows() == 0 {
        return Err(Error::InvalidData("the training data has no rows".into()));
    }
    if train.info.labels.len() != train.rows() {
        return Err(Error::InvalidData(format!("{} labels for {} rows", train.info.labels.len(), train.rows())));
    }
    if options.early_stopping_rounds.is_some() && evals.is_empty() {
        return Err(Error::InvalidParameter {
            name: "early_stopping_rounds".into(),
            reason: "needs at least one evaluation set (as in XGBoost)".into(),
        });
    }
    let checks = Instant::now();
    let objective = objective::from_name(&params.objective, &params.objective_params)?;
    objective.validate(train.info)?;
    train.check_finite()?;
    // The training set named as an evaluation set too is checked once.
    for (data, name) in evals.iter().filter(|(data, _)| !data.is(train)) {
        if let Err(Error::InvalidData(reason)) = data.check_finite() {
            return Err(Error::InvalidData(format!("evaluation set `{name}`: {reason}")));
        }
        if data.cols() > train.cols() {
            return Err(Error::InvalidData(format!(
                "evaluation set `{name}` has {} features, the training data {}",
                data.cols(),
                train.cols()
            )));
        }
        objective.validate(data.info)?;
    }
    let outputs = objective.outputs();
    let mut metrics: Vec<Box<dyn Metric>> = params
        .eval_metrics
        .iter()
        .map(|m| metric::from_name_with_params(m, &params.objective_params))
        .collect::<Result<_>>()?;
    if metrics.is_empty() && !params.disable_default_eval_metric {
        metrics.push(metric::default_metric_for(objective.as_ref())?);
    }
    if let Some(custom) = &options.custom_metric {
        metrics.push(Box::new(custom.clone()));
    }
    for (data, _) in evals {
        for m in &metrics {
            m.check(data.rows() * outputs, data.info, outputs)?;
        }
    }
    let mut phases = PhaseTimes::default();
    phases.add("data checks", checks.elapsed());
    let start = Instant::now();
    // Rows in a GPU's memory train there unless the parameters say the CPU.
    let rows_gpu = match train.features {
        Features::Device { gpu, .. } if params.device != Device::Cpu => Some(gpu),
        _ => None,
    };
    let (opened, mut device) = match options.gpu.as_deref().or(rows_gpu) {
        Some(gpu) => (None, describe(gpu)),
        None => open_device(params.device, params.verbosity >= 2)?,
    };
    phases.add("device open", start.elapsed());
    let gpu = options.gpu.as_deref().or(rows_gpu).or(opened.as_ref());
    if gpu.is_some() && precision != HistogramPrecision::FixedPoint {
        return Err(Error::param(
            "device",
            format!("histograms in {} are a CPU experiment; the GPU builder sums in fixed point", precision.name()),
        ));
    }
    let extra_gpus = open_extra_devices(params, gpu)?;
    for extra in &extra_gpus {
        device = format!("{device}, {}", describe(extra));
    }
    let row_weights = row_weights(train.info, train.rows())?;
    let max_bin = params.tree.max_bin as usize;
    // The CPU sketches and quantises the features into its ELLPACK matrix. A GPU sketches dense
    // rows itself (the CPU's cuts bit for bit) and quantises them with the same search into the
    // bins its builder reads; CSR rows are sketched on the host.
    let (cuts, mut backend, quantised_bytes) = match gpu {
        // The exact method sorts the columns on the host; a GPU keeps them and grows the trees.
        _ if params.tree_method == TreeMethod::Exact => {
            let start = Instant::now();
            let columns = SortedColumns::new(train.host_features()?);
            phases.add("sorted columns", start.elapsed());
            match gpu {
                Some(gpu) => {
                    on_device(gpu, "resetting the peak memory", || Ok(gpu.reset_peak_memory()?))?;
                    let start = Instant::now();
                    let exact =
                        on_device(gpu, "uploading the sorted columns", || GpuExact::new(gpu, &columns, train.rows()))?;
                    phases.add("sorted columns to the device", start.elapsed());
                    let bytes = exact.bytes();
                    (QuantileCuts::default(), TreeBackend::GpuExact(Box::new(exact)), bytes)
                }
                None => {
                    let bytes = columns.bytes();
                    (QuantileCuts::default(), TreeBackend::Exact(columns), bytes)
                }
            }
        }
        // Several devices: the one device's cuts, each device quantising its shard of the rows.
        Some(gpu) if !extra_gpus.is_empty() => {
            let gpus: Vec<&Gpu> = std::iter::once(gpu).chain(&extra_gpus).collect();
            let trainer = multi_gpu_trainer(&gpus, train, &row_weights, max_bin, &mut phases)?;
            let bytes = trainer.trainer.bins_bytes();
            (trainer.cuts, TreeBackend::MultiGpu(Box::new(trainer.trainer)), bytes)
        }
        Some(gpu) => {
            on_device(gpu, "resetting the peak memory", || Ok(gpu.reset_peak_memory()?))?;
            let (cuts, trainer) = gpu_trainer(gpu, train, &row_weights, max_bin, &mut phases)?;
            let bytes = trainer.bins_bytes();
            (cuts, TreeBackend::Gpu(Box::new(trainer)), bytes)
        }
        None => {
            let start = Instant::now();
            let features = train.host_features()?;
            let cuts = QuantileCuts::build(features, &row_weights, max_bin);
            phases.add("cuts", start.elapsed());
            let start = Instant::now();
            let matrix = EllpackMatrix::new(features, &cuts);
            phases.add("ellpack", start.elapsed());
            let start = Instant::now();
            let bins = matrix.unpack(&cuts);
            phases.add("matrix for the tree builder", start.elapsed());
            let bytes = matrix.bytes();
            (cuts, TreeBackend::Cpu { matrix, bins }, bytes)
        }
    };

    let start = Instant::now();
    let num_class = if outputs > 1 { outputs } else { 0 };
    let mut model = match &options.xgb_model {
        Some(previous) => {
            if previous.num_outputs() != outputs || previous.objective_name != objective.name() {
                return Err(Error::param(
                    "xgb_model",
                    format!(
                        "the model to continue has objective {} with {} outputs, the parameters {} with {outputs}",
                        previous.objective_name,
                        previous.num_outputs(),
                        objective.name()
                    ),
                ));
            }
            if previous.num_feature > train.cols() {
                return Err(Error::InvalidData(format!(
                    "the model to continue has {} features, the training data {}",
                    previous.num_feature,
                    train.cols()
                )));
            }
            let mut m = previous.clone();
            m.num_feature = train.cols();
            m
        }
        None => {
            let base_score = match params.base_score {
                Some(b) => {
                    objective.check_base_score(b)?;
                    vec![b]
                }
                None => objective.initial_base_scores(train.info),
            };
            let mut m = Model::new(objective.to_json(), train.cols(), num_class, base_score)?;
            m.boost_from_average = params.base_score.is_none();
            if train.info.feature_names.len() == train.cols() {
                m.feature_names = train.info.feature_names.clone();
            }
            m
        }
    };
    let prob_to_margin = |b: f32| objective.prob_to_margin(b);
    let margins_of = |data: &Rows| -> Result<Vec<f32>> {
        let base = (!data.info.base_margin.is_empty()).then_some(data.info.base_margin.as_slice());
        match data.features {
            Features::Host(features) => model.predict_margin(features, base, prob_to_margin, (0, 0)),
            // The device predictor's margins are the host's bit for bit.
            Features::Device { gpu, data } => on_device(gpu, "predicting the initial margins", || {
                let margins = DeviceModel::upload(gpu, &model)?.predict_margin_on_device(
                    gpu,
                    data,
                    base,
                    prob_to_margin,
                    (0, 0),
                )?;
                Ok(margins.to_vec(gpu)?)
            }),
        }
    };
    // Objectives whose gradients the device computes keep the training rows there: gradients, trees
    // and margins on the device, the margins read back only for the evaluation log.
    let device_objective = objective.device_objective().filter(|_| options.custom_objective.is_none());
    let device_rounds = device_objective.is_some_and(|o| match &backend {
        TreeBackend::Gpu(_) => true,
        TreeBackend::MultiGpu(_) => MultiGpuTrainer::takes(o),
        _ => false,
    });
    // Rows start at the model's base margins unless the data gives its own or a model's trees are
    // continued; the device then makes such margins itself instead of receiving them.
    let base_margins = model.base_margins(prob_to_margin);
    let at_base = |data: &Rows| {
        device_rounds && data.info.base_margin.is_empty() && model.trees.is_empty() && base_margins.len() == outputs
    };
    let mut margins = if at_base(train) { Vec::new() } else { margins_of(train)? };
    // An evaluation set that is the training data itself (`train` in the log) reads the training
    // margins, which the rows' leaves keep up to date: the same values prediction would give.
    let is_train = |data: &Rows| train.is(data);
    let mut eval_margins: Vec<Vec<f32>> = evals
        .iter()
        .map(|(d, _)| if is_train(d) || at_base(d) { Ok(Vec::new()) } else { margins_of(d) })
        .collect::<Result<_>>()?;
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let all_features: Vec<u32> = (0..train.cols() as u32).collect();
    let n = train.rows();
    // The host's gradients, when the host computes them.
    let mut gradients = if device_rounds { Vec::new() } else { vec![GradientPair::new(0f32, 0f32); n * outputs] };
    let mut history = Vec::new();
    let (mut best_iteration, mut best_score) = (None, None::<f64>);
    let tree_params = &params.tree;
    phases.add("base score and initial margins", start.elapsed());

    if let (Some(mut rounds), Some(device_objective), true) = (backend.rounds(), device_objective, device_rounds) {
        let gpu = rounds.gpu();
        let start = Instant::now();
        on_device(gpu, "uploading the labels and margins", || {
            let margins = initial_margins(at_base(train), &base_margins, &margins);
            rounds.keep_rows_on_device(device_objective, train.info, margins)
        })?;
        phases.add("labels and margins to the device", start.elapsed());
    }
    // The training set's metrics on the device when the device computes all of them: then the
    // margins never come back.
    let transform = objective.device_eval_transform();
    // Over several devices, the metrics that are sums of row terms (each device's block sums, added
    // in row order on the host).
    let row_wise = |m: &DeviceMetric| matches!(m, DeviceMetric::Elementwise(_) | DeviceMetric::MultiClass(_));
    let device_metrics = device_objective
        .filter(|_| device_rounds)
        .and_then(|objective| device_metrics_of(&metrics, objective, transform, train.info))
        .filter(|ms| matches!(backend, TreeBackend::Gpu(_)) || ms.iter().all(row_wise));
    // Whether the training data fits each metric, checked once (the data does not change); NaN
    // where it does not, as `Metric::evaluate` gives.
    let fits_device_metric: Vec<bool> = match &device_metrics {
        Some(_) => metrics.iter().map(|m| m.check(n * outputs, train.info, outputs).is_ok()).collect(),
        None => Vec::new(),
    };
    // The other evaluation sets on the device too when the rounds are: the round's trees walk their
    // rows there, and their metrics are computed there when the device computes all of them.
    let mut device_evals: Vec<Option<DeviceEval>> = Vec::with_capacity(evals.len());
    for ((data, _), margins) in evals.iter().zip(&eval_margins) {
        let on_device = match (backend.gpu(), device_objective) {
            (Some(gpu), Some(device_objective)) if device_rounds && !is_train(data) && data.rows() > 0 => {
                let start = Instant::now();
                let set = on_device(gpu, "uploading an evaluation set", || {
                    let margins = initial_margins(at_base(data), &base_margins, margins);
                    match data.features {
                        Features::Host(features) => {
                            DeviceEvalSet::new(gpu, features, data.info, device_objective, margins)
                        }
                        Features::Device { data: rows, .. } => {
                            DeviceEvalSet::from_device(gpu, rows, data.info, device_objective, margins)
                        }
                    }
                })?;
                phases.add("evaluation sets to the device", start.elapsed());
                let metrics_on_device = device_metrics_of(&metrics, device_objective, transform, data.info);
                let fits = metrics.iter().map(|m| m.check(data.rows() * outputs, data.info, outputs).is_ok()).collect();
                Some(DeviceEval { set, metrics: metrics_on_device, fits })
            }
            _ => None,
        };
        device_evals.push(on_device);
    }
    let train_margins_read = evals.iter().any(|(d, _)| is_train(d)) && !metrics.is_empty() && device_metrics.is_none();

    let first_round = model.num_rounds();
    for round in first_round..first_round + options.num_boost_round {
        let mut new_trees = Vec::with_capacity(outputs);
        if let (true, Some(mut trainer)) = (device_rounds, backend.rounds()) {
            let start = Instant::now();
            on_device(trainer.gpu(), "computing the gradients", || trainer.compute_gradients(round))?;
            phases.add("gradients", start.elapsed());
            for k in 0..outputs {
                let start = Instant::now();
                // The same draws, in the same order, as the host path below.
                let sampler = row_sampler(tree_params.subsample, &mut rng);
                let tree_features = sample_features(&all_features, tree_params.colsample_bytree, &mut rng);
                phases.add("gradients", start.elapsed());
                let start = Instant::now();
                let gpu = trainer.gpu();
                let tree = on_device(gpu, "growing a tree", || {
                    trainer.boost_tree(tree_params, k, sampler, &tree_features, &mut rng)
                })?;
                new_trees.push((tree, k as u32));
                phases.add("trees", start.elapsed());
            }
            if train_margins_read {
                let start = Instant::now();
                margins = on_device(trainer.gpu(), "reading the margins back", || trainer.margins())?;
                phases.add("margins", start.elapsed());
            }
        } else {
            let start = Instant::now();
            match &options.custom_objective {
                Some(custom) => custom.gradients_into(&margins, train.info, &mut gradients)?,
                None => objective.gradients(&margins, train.info, round, &mut gradients),
            }
            phases.add("gradients", start.elapsed());
        }
        // On the host: each output's tree from the host's gradients (none left when the device did the round).
        for k in 0..if device_rounds { 0 } else { outputs } {
            let start = Instant::now();
            let sampler = row_sampler(tree_params.subsample, &mut rng);
            let column: Vec<GradientPair<f32>> = (0..n)
                .into_par_iter()
                .map(|i| if sampler.keeps(i as u64) { gradients[i * outputs + k] } else { GradientPair::new(0.0, 0.0) })
                .collect();
            let tree_features = sample_features(&all_features, tree_params.colsample_bytree, &mut rng);
            phases.add("gradients", start.elapsed());
            let start = Instant::now();
            let mut built = match &mut backend {
                // The device quantises the gradients itself (the same quantiser, by construction).
                TreeBackend::Gpu(trainer) => {
                    let gpu = trainer.gpu();
                    on_device(gpu, "growing a tree", || {
                        trainer.build_tree(tree_params, &column, &tree_features, &mut rng)
                    })?
                }
                TreeBackend::MultiGpu(trainer) => on_device(trainer.gpu(), "growing a tree", || {
                    trainer.build_tree(tree_params, &column, &tree_features, &mut rng)
                })?,
                TreeBackend::GpuExact(exact) => {
                    let (quantiser, fixed) = fixed_point::quantise(&column);
                    let gpu = exact.gpu();
                    on_device(gpu, "growing an exact tree", || {
                        exact.build_tree(tree_params, &quantiser, &fixed, &tree_features, &mut rng)
                    })?
                }
                TreeBackend::Exact(columns) => {
                    let (quantiser, fixed) = fixed_point::quantise(&column);
                    ExactBuilder { columns, params: tree_params, quantiser: &quantiser }.build(
                        &fixed,
                        &tree_features,
                        &mut rng,
                    )
                }
                TreeBackend::Cpu { matrix, bins } => {
                    let (quantiser, fixed) = fixed_point::quantise(&column);
                    let builder = HistBuilder { matrix, bins, cuts: &cuts, params: tree_params, quantiser: &quantiser };
                    match precision {
                        HistogramPrecision::FixedPoint => builder.build(&fixed, &tree_features, &mut rng),
                        HistogramPrecision::F64 => {
                            let wide: Vec<GradientPair<f64>> =
                                column.iter().map(|g| GradientPair::new(g.grad as f64, g.hess as f64)).collect();
                            builder.build(&wide, &tree_features, &mut rng)
                        }
                        HistogramPrecision::F32 => builder.build(&column, &tree_features, &mut rng),
                    }
                }
            };
            if let Some(alpha) = objective.leaf_quantile() {
                refresh_leaves(
                    alpha,
                    &mut built.tree,
                    &built.positions,
                    &column,
                    &margins,
                    train.info,
                    outputs,
                    k,
                    tree_params.eta,
                );
            }
            phases.add("trees", start.elapsed());
            phases.merge(&built.phases);
            let start = Instant::now();
            let leaves = &built.tree.split_conditions;
            margins
                .par_chunks_mut(outputs)
                .zip(built.positions.par_iter())
                .with_min_len(1 << 14)
                .for_each(|(row, &leaf)| row[k] += leaves[leaf as usize]);
            phases.add("margins", start.elapsed());
            new_trees.push((built.tree, k as u32));
        }
        let start = Instant::now();
        if let (true, Some(gpu)) = (device_evals.iter().any(Option::is_some), backend.gpu()) {
            on_device(gpu, "predicting the evaluation sets", || {
                let trees = DeviceTrees::upload(gpu, &new_trees)?;
                device_evals.iter_mut().flatten().try_for_each(|eval| eval.set.add_trees(gpu, &trees))
            })?;
        }
        model.push_round(new_trees)?;
        for (((data, _), m), on_device) in evals.iter().zip(eval_margins.iter_mut()).zip(&device_evals) {
            if !is_train(data) && on_device.is_none() {
                *m = model.predict_margin(data.host_features()?, Some(m), prob_to_margin, (round, round + 1))?;
            }
        }
        phases.add("margins", start.elapsed());

        if evals.is_empty() || metrics.is_empty() {
            continue;
        }
        let start = Instant::now();
        let mut log = RoundLog { round, values: Vec::new() };
        let mut metrics_on_device = false;
        for (((data, name), m), device_eval) in evals.iter().zip(eval_margins.iter_mut()).zip(&mut device_evals) {
            if let (Some(eval), Some(gpu)) = (device_eval, backend.gpu()) {
                if let Some(kernel_metrics) = &eval.metrics {
                    log_device_metrics(&mut log, name, &metrics, kernel_metrics, &eval.fits, |kernel_metric| {
                        on_device(gpu, "evaluating an evaluation set", || {
                            eval.set.evaluate(gpu, kernel_metric, transform.unwrap_or(Transform::IDENTITY))
                        })
                    })?;
                    metrics_on_device = true;
                    continue;
                }
                // A metric of the host's: the margins come back.
                *m = on_device(gpu, "reading an evaluation set's margins", || eval.set.margins(gpu))?;
            }
            if let (true, Some(kernel_metrics), Some(mut trainer)) = (is_train(data), &device_metrics, backend.rounds())
            {
                let gpu = trainer.gpu();
                log_device_metrics(&mut log, name, &metrics, kernel_metrics, &fits_device_metric, |kernel_metric| {
                    on_device(gpu, "evaluating the training metrics", || {
                        trainer.evaluate(kernel_metric, transform.unwrap_or(Transform::IDENTITY))
                    })
                })?;
                metrics_on_device = true;
                continue;
            }
            let predictions = objective.eval_transform(if is_train(data) { &margins } else { &*m });
            for metric in &metrics {
                log.values.push((name.to_string(), metric.name(), metric.evaluate(&predictions, data.info, outputs)));
            }
        }
        phases.add(if metrics_on_device { "metrics on the device" } else { "metrics" }, start.elapsed());
        let last = round + 1 == first_round + options.num_boost_round;
        // Every `verbose_eval` rounds and the last one, as XGBoost prints.
        if options.verbose_eval > 0 && (round % options.verbose_eval == 0 || last) {
            on_round(&log);
        }
        let score = log.values.last().map(|v| v.2).unwrap_or(f64::NAN);
        let higher = metrics.last().is_some_and(|m| m.higher_is_better());
        let improved = match best_score {
            None => true,
            Some(b) => {
                if higher {
                    score > b
                } else {
                    score < b
                }
            }
        };
        // XGBoost records the best round only when early stopping watches the metric: its
        // scikit-learn API predicts with the trees up to `best_iteration` whenever the model has one.
        if improved && options.early_stopping_rounds.is_some() {
            best_score = Some(score);
            best_iteration = Some(round);
        }
        history.push(log);
        if let (Some(patience), Some(best)) = (options.early_stopping_rounds, best_iteration) {
            if round - best >= patience {
                break;
            }
        }
    }
    if let (Some(best), Some(score)) = (best_iteration, best_score) {
        model.attributes.insert("best_iteration".into(), best.to_string());
        model.attributes.insert("best_score".into(), score.to_string());
    }
    match &backend {
        TreeBackend::Gpu(trainer) => phases.merge(trainer.phases()),
        TreeBackend::MultiGpu(trainer) => phases.merge(&trainer.phases()),
        _ => {}
    }
    let mut peak_device_bytes_each = Vec::new();
    let gpus = match &backend {
        TreeBackend::MultiGpu(trainer) => trainer.gpus(),
        _ => backend.gpu().into_iter().collect(),
    };
    for gpu in gpus {
        let usage = on_device(gpu, "reading the peak memory", || Ok(gpu.memory_usage()?))?;
        peak_device_bytes_each.extend(usage.map(|usage| usage.peak_bytes));
    }
    Ok(Trained {
        phases,
        peak_device_bytes: peak_device_bytes_each.first().copied(),
        peak_device_bytes_each,
        model,
        objective,
        history,
        best_iteration,
        best_score,
        ellpack_bytes: quantised_bytes,
        dense_f32_bytes: train.rows() * train.cols() * 4,
        device,
    })
}

/// An evaluation set on the device, with the metrics the device computes for it (all of the run's,
/// or `None`: then its margins come back for the host's) and whether its data fits each.
struct DeviceEval {
    set: DeviceEvalSet,
    metrics: Option<Vec<DeviceMetric>>,
    fits: Vec<bool>,
}

/// Appends set `name`'s values of `metrics` to the log, each computed on the device by `evaluate`
/// from its device form, or NaN where the set's data does not fit it (as `Metric::evaluate` gives).
fn log_device_metrics(
    log: &mut RoundLog,
    name: &str,
    metrics: &[Box<dyn Metric>],
    kernel_metrics: &[DeviceMetric],
    fits: &[bool],
    mut evaluate: impl FnMut(DeviceMetric) -> Result<f64>,
) -> Result<()> {
    for ((metric, &kernel_metric), &fits) in metrics.iter().zip(kernel_metrics).zip(fits) {
        let value = if fits { evaluate(kernel_metric)? } else { f64::NAN };
        log.values.push((name.to_string(), metric.name(), value));
    }
    Ok(())
}

/// The metrics of a set with `info` in the device's form, when the device computes every one of them
/// for predictions of `objective`: row-wise ones of an element-wise objective with a transform,
/// multi-class ones of a softmax, AUC (binary, one-vs-rest, and per query group for a ranking
/// objective), and `ndcg`/`map` of a ranking objective (ranked by its margins; of another
/// objective's transformed predictions, on the host).
fn device_metrics_of(
    metrics: &[Box<dyn Metric>],
    objective: DeviceObjective,
    transform: Option<Transform>,
    info: &MetaInfo,
) -> Option<Vec<DeviceMetric>> {
    metrics
        .iter()
        .map(|m| match (m.device_metric()?, objective) {
            (d @ DeviceMetric::Elementwise(_), DeviceObjective::Elementwise(_)) if transform.is_some() => Some(d),
            (d @ DeviceMetric::MultiClass(_), DeviceObjective::Softmax { .. }) => Some(d),
            (d @ DeviceMetric::Auc(_), DeviceObjective::Elementwise(_))
                if transform.is_some() && info.group_ptr.is_empty() =>
            {
                Some(d)
            }
            (d @ DeviceMetric::Auc(_), DeviceObjective::Softmax { .. }) if info.group_ptr.is_empty() => Some(d),
            (d @ DeviceMetric::Rank(_), DeviceObjective::LambdaRank(_)) => Some(d),
            // Per group with groups; without, the binary AUC, whose row weights a ranking set's
            // device rows do not keep.
            (d @ DeviceMetric::Auc(_), DeviceObjective::LambdaRank(_))
                if !info.group_ptr.is_empty() || info.weights.is_empty() =>
            {
                Some(d)
            }
            _ => None,
        })
        .collect()
}

/// A set's margins before the first round: every row at `base` (made on the device), or `margins`.
fn initial_margins<'a>(at_base: bool, base: &'a [f32], margins: &'a [f32]) -> InitialMargins<'a> {
    if at_base {
        InitialMargins::Base(base)
    } else {
        InitialMargins::Rows(margins)
    }
}

/// Row sampling of one tree (`subsample`): a key drawn from the run's generator when sampling, so
/// that the draws of both backends are one stateless function of it ([`RowSampler`]).
fn row_sampler(subsample: f32, rng: &mut impl Rng) -> RowSampler {
    if subsample < 1.0 {
        RowSampler::new(rng.gen(), subsample)
    } else {
        RowSampler::ALL
    }
}

/// Runs a step on `gpu`; a device failure becomes an error naming the device and `phase` (with
/// the bytes asked and free when it ran out of memory).
fn on_device<T>(gpu: &Gpu, phase: &str, step: impl FnOnce() -> Result<T>) -> Result<T> {
    match step() {
        Err(Error::Gpu(primitives::Error::OutOfMemory { bytes })) => {
            let free_bytes = gpu.memory_usage().ok().flatten().map_or(0, |usage| usage.free_bytes);
            Err(Error::DeviceMemory { phase: phase.into(), bytes, free_bytes })
        }
        Err(Error::Gpu(source)) => {
            Err(Error::DeviceStep { device: describe(gpu), phase: phase.into(), source: Box::new(source) })
        }
        other => other,
    }
}

/// The features as the GPU builder reads them, with their cuts: dense rows and CSR rows whose
/// columns increase are sketched on the device ([`device_cuts`], [`device_cuts_csr`]: the host's
/// cuts bit for bit) and quantised from the same device copy (uploaded once, or the caller's rows
/// in place); other CSR rows (built in memory) are sketched on the host and quantised on the device.
fn gpu_trainer<'g>(
    gpu: &'g Gpu,
    train: &Rows<'_>,
    weights: &[f32],
    max_bin: usize,
    phases: &mut PhaseTimes,
) -> Result<(QuantileCuts, GpuTrainer<'g>)> {
    /// The rows the sketch read on the device, for the quantisation.
    enum OnDevice<'a> {
        Uploaded(DeviceBuffer<f32>, (usize, usize)),
        UploadedCsr(DeviceCsr),
        Caller(DeviceData<'a>),
        Nothing,
    }
    let start = Instant::now();
    let (rows, cuts) = on_device(gpu, "sketching the features on the device", || {
        let device_weights = (!weights.is_empty()).then(|| gpu.upload(weights)).transpose()?;
        let sketch = |data: DeviceData<'_>| match data {
            DeviceData::Dense { values, rows, cols } => {
                device_cuts(gpu, values, (rows, cols), device_weights.as_ref(), max_bin)
            }
            DeviceData::Csr(csr) => device_cuts_csr(gpu, csr, device_weights.as_ref(), max_bin),
        };
        Ok(match train.features {
            Features::Device { data, .. } => (OnDevice::Caller(data), sketch(data)?),
            Features::Host(FeatureMatrix::Dense(m)) => {
                let values = gpu.upload(&m.values)?;
                let cuts = sketch(DeviceData::Dense { values: &values, rows: m.rows, cols: m.cols })?;
                (OnDevice::Uploaded(values, (m.rows, m.cols)), cuts)
            }
            Features::Host(FeatureMatrix::Sparse(m)) if csr_is_checked(m) => {
                let csr = DeviceCsr::upload(gpu, m)?;
                let cuts = sketch(DeviceData::Csr(&csr))?;
                (OnDevice::UploadedCsr(csr), cuts)
            }
            Features::Host(features) => (OnDevice::Nothing, QuantileCuts::build(features, weights, max_bin)),
        })
    })?;
    phases.add("cuts", start.elapsed());
    let start = Instant::now();
    let trainer = on_device(gpu, "quantising the features on the device", || match &rows {
        OnDevice::Uploaded(values, shape) => GpuTrainer::from_device_rows(gpu, values, *shape, &cuts),
        OnDevice::UploadedCsr(csr) => GpuTrainer::from_device_csr(gpu, csr, &cuts),
        OnDevice::Caller(DeviceData::Dense { values, rows, cols }) => {
            GpuTrainer::from_device_rows(gpu, values, (*rows, *cols), &cuts)
        }
        OnDevice::Caller(DeviceData::Csr(csr)) => GpuTrainer::from_device_csr(gpu, csr, &cuts),
        OnDevice::Nothing => GpuTrainer::from_features(gpu, train.host_features()?, &cuts),
    })?;
    phases.add("matrix for the tree builder", start.elapsed());
    Ok((cuts, trainer))
}

/// A [`MultiGpuTrainer`] and the cuts it quantised with.
struct MultiGpu<'g> {
    trainer: MultiGpuTrainer<'g>,
    cuts: QuantileCuts,
}

/// The trainer over `gpus` (at least two) of the training rows: dense rows (the caller's in the
/// first device's memory, or uploaded there) sketched on the first device (the one device's cuts)
/// and their shards copied from it to the others; CSR rows sketched on the host, each device's
/// shard uploaded. The devices sum histograms through NCCL, or through host memory when emulated.
fn multi_gpu_trainer<'g>(
    gpus: &[&'g Gpu],
    train: &Rows<'_>,
    weights: &[f32],
    max_bin: usize,
    phases: &mut PhaseTimes,
) -> Result<MultiGpu<'g>> {
    let gpu = gpus[0];
    for &g in gpus {
        on_device(g, "resetting the peak memory", || Ok(g.reset_peak_memory()?))?;
    }
    let start = Instant::now();
    // Peer access where every pair of devices has it (a few driver calls a sum), else NCCL.
    let (communicator, name): (Box<dyn Communicator>, _) = if gpus.iter().any(|g| g.is_emulated()) {
        (Box::new(HostStaged), "communicator: host")
    } else if let Ok(peer) = PeerSum::new(gpus) {
        (Box::new(peer), "communicator: peer access")
    } else {
        (Box::new(Nccl::new(gpus)?), "communicator: nccl")
    };
    phases.add(name, start.elapsed());
    let start = Instant::now();
    let uploaded;
    let dense = match train.features {
        Features::Device { data: DeviceData::Dense { values, rows, cols }, .. } if values.is_on(gpu) => {
            Some((values, rows, cols))
        }
        Features::Host(FeatureMatrix::Dense(m)) => {
            uploaded = on_device(gpu, "uploading the features", || Ok(gpu.upload(&m.values)?))?;
            Some((&uploaded, m.rows, m.cols))
        }
        _ => None,
    };
    let Some((values, rows, cols)) = dense else {
        let features = train.host_features()?;
        let cuts = QuantileCuts::build(features, weights, max_bin);
        phases.add("cuts", start.elapsed());
        let start = Instant::now();
        let trainer = on_device(gpu, "quantising the features on the devices", || {
            MultiGpuTrainer::from_features(gpus, features, &cuts, communicator)
        })?;
        phases.add("matrix for the tree builder", start.elapsed());
        return Ok(MultiGpu { trainer, cuts });
    };
    let cuts = on_device(gpu, "sketching the features on the device", || {
        let weights = (!weights.is_empty()).then(|| gpu.upload(weights)).transpose()?;
        device_cuts(gpu, values, (rows, cols), weights.as_ref(), max_bin)
    })?;
    phases.add("cuts", start.elapsed());
    let start = Instant::now();
    let trainer = on_device(gpu, "quantising the features on the devices", || {
        MultiGpuTrainer::from_device_rows(gpus, values, (rows, cols), &cuts, communicator)
    })?;
    phases.add("matrix for the tree builder", start.elapsed());
    Ok(MultiGpu { trainer, cuts })
}

/// The trainer of device rounds (gradients, trees and margins where the rows are): one GPU's, or
/// several's.
enum Rounds<'a, 'g> {
    One(&'a mut GpuTrainer<'g>),
    Many(&'a mut MultiGpuTrainer<'g>),
}

impl<'g> Rounds<'_, 'g> {
    fn gpu(&self) -> &'g Gpu {
        match self {
            Rounds::One(t) => t.gpu(),
            Rounds::Many(t) => t.gpu(),
        }
    }

    fn keep_rows_on_device(
        &mut self,
        objective: DeviceObjective,
        info: &MetaInfo,
        margins: InitialMargins<'_>,
    ) -> Result<()> {
        match self {
            Rounds::One(t) => t.keep_rows_on_device(objective, info, margins),
            Rounds::Many(t) => t.keep_rows_on_device(objective, info, margins),
        }
    }

    fn compute_gradients(&mut self, round: usize) -> Result<()> {
        match self {
            Rounds::One(t) => t.compute_gradients(round),
            Rounds::Many(t) => t.compute_gradients(round),
        }
    }

    fn boost_tree(
        &mut self,
        params: &TreeParams,
        output: usize,
        sampler: RowSampler,
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<Tree> {
        match self {
            Rounds::One(t) => t.boost_tree(params, output, sampler, features, rng),
            Rounds::Many(t) => t.boost_tree(params, output, sampler, features, rng),
        }
    }

    fn margins(&self) -> Result<Vec<f32>> {
        match self {
            Rounds::One(t) => t.margins(),
            Rounds::Many(t) => t.margins(),
        }
    }

    fn evaluate(&mut self, metric: DeviceMetric, transform: Transform) -> Result<f64> {
        match self {
            Rounds::One(t) => t.evaluate(metric, transform),
            Rounds::Many(t) => t.evaluate(metric, transform),
        }
    }
}

/// Where a run's trees are grown, with what each backend keeps for the whole run.
enum TreeBackend<'g> {
    /// The quantised matrix, and unpacked for the CPU builder.
    Cpu {
        matrix: EllpackMatrix,
        bins: UnpackedBins,
    },
    Gpu(Box<GpuTrainer<'g>>),
    /// Several GPUs, each over its shard of the rows, growing the trees from the host's gradients.
    MultiGpu(Box<MultiGpuTrainer<'g>>),
    /// The exact method's sorted columns.
    Exact(SortedColumns),
    /// The exact method's sorted columns on a GPU, which grows the trees from the host's gradients.
    GpuExact(Box<GpuExact<'g>>),
}

impl<'g> TreeBackend<'g> {
    /// The trainer of device rounds, when the trees grow on GPUs from their own rows.
    fn rounds(&mut self) -> Option<Rounds<'_, 'g>> {
        match self {
            TreeBackend::Gpu(t) => Some(Rounds::One(t)),
            TreeBackend::MultiGpu(t) => Some(Rounds::Many(t)),
            TreeBackend::Cpu { .. } | TreeBackend::Exact(_) | TreeBackend::GpuExact(_) => None,
        }
    }

    /// The GPU growing the trees, if one does.
    fn gpu(&self) -> Option<&'g Gpu> {
        match self {
            TreeBackend::Gpu(trainer) => Some(trainer.gpu()),
            TreeBackend::GpuExact(exact) => Some(exact.gpu()),
            TreeBackend::MultiGpu(trainer) => Some(trainer.gpu()),
            TreeBackend::Cpu { .. } | TreeBackend::Exact(_) => None,
        }
    }
}

/// The devices after the first of a run of `n_gpus` (none for one): CUDA devices from the first's
/// ordinal on, or emulators when the first is one (`PRIMITIVES_DEVICE`, the tests). `n_gpus` takes
/// a GPU and the `hist` method.
fn open_extra_devices(params: &Params, first: Option<&Gpu>) -> Result<Vec<Gpu>> {
    if params.n_gpus == 1 {
        return Ok(Vec::new());
    }
    let Some(first) = first else {
        return Err(Error::param(
            "n_gpus",
            format!("{} devices need device=cuda, not {}", params.n_gpus, params.device),
        ));
    };
    if params.tree_method != TreeMethod::Hist {
        return Err(Error::param("n_gpus", "several devices take tree_method=hist"));
    }
    let ordinal = match first.properties().kind {
        DeviceKind::Cuda { ordinal } => ordinal,
        DeviceKind::Emulated(schedule) => return Ok((1..params.n_gpus).map(|_| Gpu::emulated(schedule)).collect()),
    };
    (ordinal + 1..ordinal + params.n_gpus)
        .map(|o| {
            Gpu::with_ordinal(o)
                .map_err(|source| Error::Device { device: format!("cuda:{o}"), source: Box::new(source) })
        })
        .collect()
}

/// The device `device` names, opened (`None`: the CPU), and how [`Trained::device`] describes it.
/// `PRIMITIVES_DEVICE` overrides which device `cuda`/`auto` open (the tests' SIMT emulator). With
/// `explain`, an `auto` that falls back to the CPU says why in the description.
pub fn open_device(device: Device, explain: bool) -> Result<(Option<Gpu>, String)> {
    let open = |ordinal| Gpu::with_kind(DeviceKind::from_env_or(DeviceKind::Cuda { ordinal })?);
    match device {
        Device::Cpu => Ok((None, "cpu".into())),
        Device::Cuda { ordinal } => {
            let gpu = open(ordinal)
                .map_err(|source| Error::Device { device: device.to_string(), source: Box::new(source) })?;
            let name = describe(&gpu);
            Ok((Some(gpu), name))
        }
        Device::Auto => match open(0) {
            Ok(gpu) => {
                let name = describe(&gpu);
                Ok((Some(gpu), name))
            }
            // Said once, briefly: the reason (no driver, on most CPU machines) only when asked.
            Err(reason) if explain => Ok((None, format!("cpu (device=auto, no usable GPU: {reason})"))),
            Err(_) => Ok((None, "cpu (device=auto, no usable GPU)".into())),
        },
    }
}

pub(crate) fn describe(gpu: &Gpu) -> String {
    let properties = gpu.properties();
    match properties.kind {
        DeviceKind::Cuda { ordinal } => format!("{} (cuda:{ordinal})", properties.name),
        DeviceKind::Emulated(_) => properties.name.clone(),
    }
}

/// Row weights for the quantile sketch: per-row weights, or per-group weights spread over the rows.
fn row_weights(info: &MetaInfo, rows: usize) -> Result<Vec<f32>> {
    if info.weights.is_empty() || info.weights.len() == rows {
        return Ok(info.weights.clone());
    }
    let groups = info.group_ptr.len().saturating_sub(1);
    if info.weights.len() == groups {
        let mut w = vec![0f32; rows];
        for g in 0..groups {
            w[info.group_ptr[g]..info.group_ptr[g + 1]].fill(info.weights[g]);
        }
        return Ok(w);
    }
    Err(Error::InvalidData(format!("{} weights for {rows} rows and {groups} groups", info.weights.len())))
}

fn sample_features(features: &[u32], fraction: f32, rng: &mut ChaCha8Rng) -> Vec<u32> {
    if fraction >= 1.0 {
        return features.to_vec();
    }
    let count = ((features.len() as f64 * fraction as f64) as usize).max(1);
    let mut chosen: Vec<u32> =
        rand::seq::index::sample(rng, features.len(), count).into_iter().map(|i| features[i]).collect();
    chosen.sort_unstable();
    chosen
}

/// For objectives that recompute leaf values after the tree is built (absolute error): each leaf's
/// value from the residuals of its rows that took part in the tree (a non-zero hessian in
/// `gradients`, the tree's column), times `eta` (`boost_kernels::adaptive::refreshed_leaf`). The
/// leaves' base weights stay the builder's, as in XGBoost's models.
#[allow(clippy::too_many_arguments)]
fn refresh_leaves(
    alpha: f64,
    tree: &mut Tree,
    positions: &[u32],
    gradients: &[GradientPair<f32>],
    margins: &[f32],
    info: &MetaInfo,
    outputs: usize,
    output: usize,
    eta: f32,
) {
    let mut rows_of: Vec<Vec<u32>> = vec![Vec::new(); tree.len()];
    for (i, &leaf) in positions.iter().enumerate() {
        if gradients[i].hess != 0.0 {
            rows_of[leaf as usize].push(i as u32);
        }
    }
    let own_margins: Vec<f32> =
        if outputs == 1 { Vec::new() } else { (0..positions.len()).map(|i| margins[i * outputs + output]).collect() };
    let margins = if outputs == 1 { margins } else { &own_margins };
    for (leaf, rows) in rows_of.iter().enumerate() {
        if tree.is_leaf(leaf) {
            let quantile = objective::residual_quantile(alpha, rows, margins, info);
            tree.split_conditions[leaf] = adaptive::refreshed_leaf(quantile, tree.split_conditions[leaf], eta);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_out_of_device_memory_names_the_phase_and_the_bytes() {
        let gpu = Gpu::emulated(primitives::Schedule::Deterministic);
        let oom = on_device(&gpu, "growing a tree", || -> Result<()> {
            Err(Error::Gpu(primitives::Error::OutOfMemory { bytes: 12345 }))
        });
        match oom {
            Err(e @ Error::DeviceMemory { .. }) => {
                assert_eq!(e.to_string(), "GPU out of memory while growing a tree: 12345 bytes asked, 0 free")
            }
            other => panic!("{other:?}"),
        }
        // A real allocation past the emulator's limit, through the same path.
        let too_big = on_device(&gpu, "uploading the quantised matrix", || Ok(gpu.alloc_zeroed::<u8>(1 << 41)?));
        assert!(matches!(too_big, Err(Error::DeviceMemory { bytes, .. }) if bytes == 1 << 41));
        assert_eq!(on_device(&gpu, "x", || Ok(3)).unwrap(), 3);
    }

    #[test]
    fn a_failing_device_step_names_the_device_and_the_phase() {
        let gpu = Gpu::emulated(primitives::Schedule::Deterministic);
        // A launch of a kernel the module does not have, through the same path as any device failure.
        let failed = on_device(&gpu, "growing a tree", || -> Result<()> {
            let config = primitives::LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: the kernel does not exist, so nothing runs.
            unsafe { gpu.launch(crate::KERNELS, "boost_no_such_kernel", config, &[])? };
            Ok(())
        });
        match failed {
            Err(e @ Error::DeviceStep { .. }) => {
                let message = e.to_string();
                assert!(message.starts_with("GPU SIMT emulator"), "{message}");
                assert!(message.contains("failed while growing a tree: "), "{message}");
                assert!(message.contains("boost_no_such_kernel"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// An infinite feature value is refused, naming the row, the feature and the evaluation set; on
    /// the emulated device as on the CPU, and in prediction.
    #[test]
    fn infinite_features_are_refused_naming_the_row_and_feature() {
        use crate::data::{CsrMatrix, DenseMatrix, FeatureMatrix};
        let params = Params::from_pairs(&[("objective", "reg:squarederror"), ("max_depth", "2")]).unwrap();
        let options = TrainOptions { num_boost_round: 1, verbose_eval: 0, ..Default::default() };
        let dataset = |values: Vec<f32>| Dataset {
            features: FeatureMatrix::Dense(DenseMatrix::new(4, 2, values)),
            info: MetaInfo { labels: vec![0.0, 1.0, 2.0, 3.0], ..Default::default() },
        };
        let good = dataset(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        let bad = dataset(vec![0.0, 1.0, 2.0, 3.0, 4.0, f32::NEG_INFINITY, 6.0, 7.0]);
        let message = |r: Result<Trained>| r.err().map(|e| e.to_string()).unwrap_or_default();
        let expected = "row 2, feature 1: -inf is infinite";
        assert!(message(train(&params, &bad, &[], &options, |_| {})).contains(expected));
        let on_eval = message(train(&params, &good, &[(&bad, "test")], &options, |_| {}));
        assert!(on_eval.contains(&format!("evaluation set `test`: {expected}")), "{on_eval}");
        let gpu = Gpu::emulated(primitives::Schedule::Deterministic);
        let on_device = TrainOptions { gpu: Some(std::sync::Arc::new(gpu)), ..options.clone() };
        assert!(message(train(&params, &bad, &[], &on_device, |_| {})).contains(expected));
        let model = train(&params, &good, &[], &options, |_| {}).unwrap().model;
        let predicted = model.predict_margin(&bad.features, None, |b| b, (0, 0));
        assert!(predicted.err().is_some_and(|e| e.to_string().contains(expected)));
        let csr = CsrMatrix {
            rows: 2,
            cols: 2,
            row_ptr: vec![0, 1, 2],
            col_indices: vec![0, 1],
            values: vec![1.0, f32::INFINITY],
        };
        let csr = FeatureMatrix::Sparse(csr).check_finite().err().map(|e| e.to_string());
        assert!(csr.is_some_and(|e| e.contains("row 1, feature 1: inf is infinite")));
        // Beyond the check's first block of values: the first infinity is named, in any block.
        let mut values = vec![0.5f32; 100_000];
        let large = |values: &Vec<f32>| FeatureMatrix::Dense(DenseMatrix::new(50_000, 2, values.clone()));
        assert!(large(&values).check_finite().is_ok());
        (values[70_001], values[70_002], values[90_000]) = (f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY);
        let error = large(&values).check_finite().err().map(|e| e.to_string());
        assert!(error.is_some_and(|e| e.contains("row 35000, feature 1: inf is infinite")));
    }

    #[test]
    fn absolute_error_leaves_are_xgboosts() {
        // xgboost 3.2.0, hist, max_depth 1, eta 0.5, min_child_weight 0, 2 rounds: the leaves are the
        // residuals' (weighted) medians times eta; the base weights stay the builder's.
        let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let y = vec![0.5f32, -1.0, 3.0, 2.0, 0.1, 7.0, -3.0, 0.0, 1.0, 4.0, 2.5, -0.5];
        let w = vec![1.0f32, 0.5, 2.0, 1.5, 1.0, 0.25, 3.0, 0.0, 0.7, 0.9, 1.0, 2.0];
        let params = Params::from_pairs(&[
            ("objective", "reg:absoluteerror"),
            ("max_depth", "1"),
            ("eta", "0.5"),
            ("min_child_weight", "0"),
            ("device", "cpu"),
        ])
        .unwrap();
        let options = TrainOptions { num_boost_round: 2, verbose_eval: 0, ..Default::default() };
        let expected: [[[f32; 3]; 4]; 2] = [
            [[2.0, -0.5, 0.375], [-0.0, -0.33333334, 0.09090909], [4.0, 0.28125, -0.2875], [-0.0, 0.2, -0.11111111]],
            [
                [4.0, 0.75, -0.5],
                [-0.010101013, 0.25, -0.15989847],
                [6.0, 0.375, -0.25],
                [0.057239056, 0.22413793, -0.13953489],
            ],
        ];
        for (weights, expected) in [(vec![], expected[0]), (w, expected[1])] {
            let features = crate::data::FeatureMatrix::Dense(crate::data::DenseMatrix::new(12, 1, x.clone()));
            let info = MetaInfo { labels: y.clone(), weights, ..Default::default() };
            let data = Dataset { features, info };
            let model = train(&params, &data, &[], &options, |_| {}).unwrap().model;
            for (round, tree) in model.trees.iter().enumerate() {
                assert_eq!(tree.split_conditions, expected[2 * round], "round {round}");
                assert_eq!(tree.base_weights, expected[2 * round + 1], "round {round}");
            }
        }
    }

    #[test]
    fn device_cuda_that_cannot_be_opened_is_a_typed_error() {
        if std::env::var(primitives::DEVICE_ENV).is_ok() {
            return; // the variable chooses the device instead
        }
        let error = open_device(Device::Cuda { ordinal: 1 << 20 }, false).expect_err("no machine has that GPU");
        assert!(matches!(error, Error::Device { ref device, .. } if device == "cuda:1048576"), "{error}");
        let (gpu, description) = open_device(Device::Cpu, false).unwrap();
        assert!(gpu.is_none() && description == "cpu");
    }
}
