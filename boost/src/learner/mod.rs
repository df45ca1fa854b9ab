//! The training loop, in XGBoost's shape: setup (the inputs checked, the devices opened, the tree
//! backend built, the base margins), then rounds of one tree an output, each followed by the
//! evaluation log and the callbacks, then the report. Logging and early stopping are callbacks
//! ([`EvaluationMonitor`], [`EarlyStopping`]), as the caller's own ([`TrainingCallback`]).
//!
//! - `setup.rs`: the checks, and the backend chosen and built;
//! - `backend.rs`: the backends behind the traits `TreeBackend` and `DeviceRounds`;
//! - `round.rs`: a run's state and one boosting round;
//! - `evaluation.rs`: the evaluation sets' margins and each round's log;
//! - `encode.rs`: categorical features encoded by ordered target statistics, before the backend;
//! - `device.rs`: opening devices, naming a device's failure;
//! - `callback.rs`, `custom.rs`: the caller's hooks, objective and metric.

mod backend;
mod callback;
mod custom;
mod device;
mod encode;
mod evaluation;
mod round;
mod setup;

use std::borrow::Cow;
use std::sync::Arc;

use primitives::Gpu;

pub use callback::{EarlyStopping, EvalLayout, EvaluationMonitor, TrainingCallback};
pub use custom::{CustomMetric, CustomObjective};
pub(crate) use device::describe;
pub use device::open_device;

use crate::data::{Dataset, FeatureMatrix, MetaInfo};
use crate::gpu::InitialMargins;
use crate::model::{CategoryEncoder, Model, TargetStatistics};
use crate::objective::Objective;
use crate::param::Params;
pub use crate::phases::PhaseTimes;
use crate::rows::{Features, Rows};
use crate::tree::hist::HistogramPrecision;
use crate::DMatrix;
use crate::Result;
use callback::Callbacks;
use device::Devices;
use round::Run;

/// Options of a training run besides the parameters.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Rounds to train (each adds a tree an output).
    pub num_boost_round: usize,
    /// Continue training this model (its trees are kept; new rounds are appended).
    pub xgb_model: Option<Model>,
    /// Stop when the last metric of the last evaluation set has not improved for this many rounds
    /// (adds an [`EarlyStopping`] after the caller's callbacks, as XGBoost's `train` does).
    pub early_stopping_rounds: Option<usize>,
    /// Write the evaluation log to standard error every this many rounds and at the last (0:
    /// never): adds an [`EvaluationMonitor`], as XGBoost's `verbose_eval`.
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
    /// The round with the best score of the early-stopping metric: only when early stopping ran in
    /// this run (an [`EarlyStopping`] of the options or the caller's), as the model's attribute
    /// (XGBoost's scikit-learn API predicts with the trees up to this round).
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
    callbacks: &mut [&mut dyn TrainingCallback],
) -> Result<Trained> {
    let evals: Vec<(Rows, &str)> = evals.iter().map(|(data, name)| (Rows::of(data), *name)).collect();
    train_rows(params, &Rows::of(train), &evals, options, callbacks)
}

/// [`train`] of [`DMatrix`] sets, whose rows may lie in a GPU's memory (then trained there unless
/// `device=cpu`): the whole report, of which [`crate::Booster::train_with`] keeps the model. An
/// evaluation set whose categories are named otherwise than the training set's is recoded to its
/// codes (a category the training set lacks is an error).
pub fn train_matrix(
    params: &Params,
    train: &DMatrix,
    evals: &[(&DMatrix, &str)],
    options: &TrainOptions,
    callbacks: &mut [&mut dyn TrainingCallback],
) -> Result<Trained> {
    let encoder = CategoryEncoder::of(train.categories())?;
    let recoded: Vec<Option<FeatureMatrix>> = evals
        .iter()
        .map(|(data, _)| match data.features() {
            Some(features) if !encoder.is_empty() => {
                Ok(match encoder.recode(features, &data.categories().features)? {
                    Cow::Owned(m) => Some(m),
                    Cow::Borrowed(_) => None,
                })
            }
            _ => Ok(None),
        })
        .collect::<Result<_>>()?;
    let evals: Vec<(Rows, &str)> = evals
        .iter()
        .zip(&recoded)
        .map(|((data, name), recoded)| match recoded {
            Some(m) => (Rows::new(Features::Host(m), data.info()), *name),
            None => (data.rows_view(), *name),
        })
        .collect();
    train_rows(params, &train.rows_view(), &evals, options, callbacks)
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
    callbacks: &mut [&mut dyn TrainingCallback],
) -> Result<Trained> {
    let evals: Vec<(Rows, &str)> = evals.iter().map(|(data, name)| (Rows::of(data), *name)).collect();
    train_in(params, &Rows::of(train), &evals, options, precision, callbacks)
}

/// [`train`] of rows on the host or in a GPU's memory ([`Rows`]). Rows in a GPU's memory train on
/// that GPU unless `device=cpu` (which reads them back) or `options.gpu` names another.
pub(crate) fn train_rows(
    params: &Params,
    train: &Rows<'_>,
    evals: &[(Rows<'_>, &str)],
    options: &TrainOptions,
    callbacks: &mut [&mut dyn TrainingCallback],
) -> Result<Trained> {
    train_in(params, train, evals, options, HistogramPrecision::FixedPoint, callbacks)
}

/// The loop: setup, then for each round the callbacks before it, the round's trees, its log and the
/// callbacks after it (any may stop training), then the callbacks after training and the report.
fn train_in(
    params: &Params,
    train: &Rows<'_>,
    evals: &[(Rows<'_>, &str)],
    options: &TrainOptions,
    precision: HistogramPrecision,
    callbacks: &mut [&mut dyn TrainingCallback],
) -> Result<Trained> {
    // Sets of `survival:aft` given only label bounds count their rows by the lower bounds; the
    // training set named as an evaluation set stays the same set.
    let with_labels = crate::objective::with_bound_labels;
    let train_info = with_labels(&params.objective, train.info);
    let eval_infos: Vec<_> =
        evals.iter().map(|(r, _)| (!r.is(train)).then(|| with_labels(&params.objective, r.info))).collect();
    let evals: &[(Rows<'_>, &str)] = &evals
        .iter()
        .zip(&eval_infos)
        .map(|((r, name), info)| (Rows::new(r.features, info.as_deref().unwrap_or(&train_info)), *name))
        .collect::<Vec<_>>();
    let train = &Rows::new(train.features, &train_info);
    let mut phases = PhaseTimes::default();
    let checked = phases.time("data checks", || setup::check(params, train, evals, options))?;
    let devices = phases.time("device open", || Devices::open(params, train, options.gpu.as_deref()))?;
    let encoded = phases
        .time("target statistics", || encode::encode(params, train, evals, &devices, options, checked.0.as_ref()))?;
    match &encoded {
        None => grow(params, train, evals, options, precision, callbacks, (checked, devices, phases), None),
        Some(encoded) => {
            let (train_encoded, evals_encoded) = encoded.rows(evals);
            let statistics = Some((&encoded.statistics, train.info));
            grow(
                params,
                &train_encoded,
                &evals_encoded,
                options,
                precision,
                callbacks,
                (checked, devices, phases),
                statistics,
            )
        }
    }
}

/// [`train_in`] after the set-up: the backend, then the rounds. With target statistics, the
/// model keeps them and the features' types of the rows before encoding (`info`).
#[allow(clippy::too_many_arguments)]
fn grow(
    params: &Params,
    train: &Rows<'_>,
    evals: &[(Rows<'_>, &str)],
    options: &TrainOptions,
    precision: HistogramPrecision,
    callbacks: &mut [&mut dyn TrainingCallback],
    (checked, devices, mut phases): (setup::Checked, Devices<'_>, PhaseTimes),
    statistics: Option<(&TargetStatistics, &MetaInfo)>,
) -> Result<Trained> {
    let backend = setup::backend(params, train, &devices, precision, &mut phases)?;
    let mut run = Run::start(params, train, evals, options, checked, backend, phases)?;
    if let Some((statistics, info)) = statistics {
        run.model.target_statistics = statistics.clone();
        if info.feature_types.len() == train.cols() {
            run.model.feature_types = info.feature_types.clone();
        }
    }
    let mut callbacks = Callbacks::new(options.verbose_eval, options.early_stopping_rounds, callbacks);
    // A continued model's best round is kept unless this run's early stopping replaces it.
    let carried = take_best(&mut run.model);
    callbacks.before_training(&run.model, &run.layout())?;
    let mut history = Vec::new();
    let first_round = run.model.num_rounds();
    for round in first_round..first_round + options.num_boost_round {
        if callbacks.before_iteration(&run.model, round)? {
            break;
        }
        if let Some(eta) = callbacks.learning_rate(round) {
            run.set_learning_rate(eta)?;
        }
        run.boost_round(round)?;
        let log = run.evaluate(round)?;
        let stop = callbacks.after_iteration(&run.model, &log)?;
        if !log.values.is_empty() {
            history.push(log);
        }
        if stop {
            break;
        }
    }
    callbacks.after_training(&mut run.model)?;
    run.finish(history, &devices, carried)
}

/// The model's `best_iteration` and `best_score` attributes, removed.
fn take_best(model: &mut Model) -> Vec<(String, String)> {
    ["best_iteration", "best_score"].into_iter().filter_map(|name| model.attributes.remove_entry(name)).collect()
}

/// A set's margins before the first round: every row at `base` (made on the device), or `margins`.
fn initial_margins<'a>(at_base: bool, base: &'a [f32], margins: &'a [f32]) -> InitialMargins<'a> {
    if at_base {
        InitialMargins::Base(base)
    } else {
        InitialMargins::Rows(margins)
    }
}

#[cfg(test)]
mod tests {
    use super::device::on_device;
    use super::*;
    use crate::data::MetaInfo;
    use crate::param::Device;
    use crate::Error;

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
            // Untyped arguments: the kernel has no `args` to call.
            let args = primitives::kernels::KernelArgs::new("boost_no_such_kernel", &[]);
            // SAFETY: the kernel does not exist, so nothing runs.
            unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
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
        assert!(message(train(&params, &bad, &[], &options, &mut [])).contains(expected));
        let on_eval = message(train(&params, &good, &[(&bad, "test")], &options, &mut []));
        assert!(on_eval.contains(&format!("evaluation set `test`: {expected}")), "{on_eval}");
        let gpu = Gpu::emulated(primitives::Schedule::Deterministic);
        let on_device = TrainOptions { gpu: Some(std::sync::Arc::new(gpu)), ..options.clone() };
        assert!(message(train(&params, &bad, &[], &on_device, &mut [])).contains(expected));
        let model = train(&params, &good, &[], &options, &mut []).unwrap().model;
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
    fn absolute_error_trees_are_xgboosts() {
        // xgboost 3.4.1, hist, max_depth 1, eta 0.5, min_child_weight 0, 2 rounds: the smooth
        // majorisation's Newton leaves (no refresh since 3.4), and its base score.
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
        // (base score, then each round's root threshold and two leaves, and the root's weight).
        type Expected = (f32, [[f32; 4]; 2]);
        let expected: [Expected; 2] = [
            (1.1443766, [[2.0, -0.3780551, 0.090310246, -0.053180538], [2.0, -0.27353525, 0.06416315, -0.04837995]]),
            (0.59103316, [[4.0, 0.40420994, -0.26883867, 0.013945011], [6.0, 0.24846052, -0.244346, 0.010219594]]),
        ];
        let close = |a: f32, b: f32| (a - b).abs() <= 2e-6 * (1.0 + b.abs());
        for (weights, (base, rounds)) in [(vec![], expected[0]), (w, expected[1])] {
            let features = crate::data::FeatureMatrix::Dense(crate::data::DenseMatrix::new(12, 1, x.clone()));
            let info = MetaInfo { labels: y.clone(), weights, ..Default::default() };
            let data = Dataset { features, info };
            let model = train(&params, &data, &[], &options, &mut []).unwrap().model;
            assert!(close(model.base_score[0], base), "{:?}", model.base_score);
            for (tree, want) in model.trees.iter().zip(rounds) {
                let got = [
                    tree.split_conditions[0],
                    tree.split_conditions[1],
                    tree.split_conditions[2],
                    tree.base_weights[0],
                ];
                assert!(got.iter().zip(want).all(|(&g, w)| close(g, w)), "{got:?} vs {want:?}");
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
