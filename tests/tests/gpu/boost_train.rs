//! Whole training runs on the device (`boost::learner::train` with a GPU) write the CPU backend's
//! model file, byte for byte, and the same evaluation log: every objective family, both growth
//! policies, row and column sampling, weights, base margins, missing values, regularisation. On the
//! emulator in `cargo test` (small data) and on a GPU with `--features gpu` (larger data).

use std::sync::Arc;

use boost::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
use boost::data::{CsrMatrix, Dataset, DenseMatrix, FeatureMatrix, MetaInfo};
use boost::learner::{train, TrainOptions, Trained};
use boost::param::Params;
use tests::gpu;

fn dataset(rows: usize, cols: usize, task: SyntheticTask, seed: u64) -> Dataset {
    let spec = SyntheticSpec { rows, cols, task, seed, missing_columns: 3.min(cols), ..Default::default() };
    generate(&spec).expect("synthetic data")
}

/// Trains on `data`, evaluating it as `train` and `valid` (when given) as `valid`, stopping early on
/// `valid` (after 2 rounds without improvement).
fn run(
    params: &[(&str, &str)],
    data: &Dataset,
    valid: Option<&Dataset>,
    rounds: usize,
    gpu: Option<Arc<primitives::Gpu>>,
) -> Trained {
    let params = Params::from_pairs(params).expect("params");
    let early_stopping_rounds = valid.map(|_| 2);
    let options =
        TrainOptions { num_boost_round: rounds, verbose_eval: 1, gpu, early_stopping_rounds, ..Default::default() };
    let mut evals = vec![(data, "train")];
    evals.extend(valid.map(|v| (v, "valid")));
    train(&params, data, &evals, &options, &mut []).expect("training")
}

/// Where a training run on the device computes what.
#[derive(Clone, Copy, PartialEq, Debug)]
enum OnDevice {
    /// Trees only: the host computes the gradients and the metrics.
    Trees,
    /// Gradients, trees and margins; the margins come back for the host's metrics.
    Rounds,
    /// Whole rounds and the training set's metrics: the margins never come back.
    RoundsAndMetrics,
}

/// Trains on the CPU and on the device; asserts equal model bytes and logs, and what the device
/// computed itself.
fn assert_same_model(
    case: &str,
    params: &[(&str, &str)],
    data: &Dataset,
    rounds: usize,
    gpu: &Arc<primitives::Gpu>,
    expected: OnDevice,
) {
    let on_device = compare(case, params, data, None, rounds, gpu);
    assert_eq!(on_device, expected, "{case}: what ran on the device");
}

/// [`assert_same_model`] with an evaluation set `valid` (early stopping on it): on the device when
/// the rounds are.
fn assert_same_model_with_valid(
    case: &str,
    params: &[(&str, &str)],
    data: &Dataset,
    valid: &Dataset,
    rounds: usize,
    gpu: &Arc<primitives::Gpu>,
    expected: OnDevice,
) {
    let on_device = compare(case, params, data, Some(valid), rounds, gpu);
    assert_eq!(on_device, expected, "{case}: what ran on the device");
}

/// Trains on the CPU and on the device; asserts equal model bytes and logs (with `valid`, when
/// given, as a second evaluation set: on the device whenever the rounds are); says what the device
/// computed itself.
fn compare(
    case: &str,
    params: &[(&str, &str)],
    data: &Dataset,
    valid: Option<&Dataset>,
    rounds: usize,
    gpu: &Arc<primitives::Gpu>,
) -> OnDevice {
    let cpu = run(params, data, valid, rounds, None);
    let device = run(params, data, valid, rounds, Some(gpu.clone()));
    let phase = |wanted: &str| device.phases.entries.iter().any(|(name, _)| *name == wanted);
    let rounds_on_device = phase("tree: gradients and quantise");
    assert_eq!(
        phase("evaluation sets to the device"),
        valid.is_some_and(|v| v.rows() > 0) && rounds_on_device,
        "{case}: the evaluation set is on the device exactly when the rounds are"
    );
    let on_device = match (rounds_on_device, phase("metrics on the device")) {
        (false, _) => OnDevice::Trees,
        (true, false) => OnDevice::Rounds,
        (true, true) => OnDevice::RoundsAndMetrics,
    };
    assert_eq!(cpu.device, "cpu");
    assert_eq!(device.device, gpu.properties().name.clone() + &cuda_suffix(gpu), "{case}");
    let (cpu_json, device_json) = (cpu.model.to_json_string().unwrap(), device.model.to_json_string().unwrap());
    let nodes: usize = cpu.model.trees.iter().map(|t| t.len()).sum();
    assert!(nodes > 3 * cpu.model.trees.len(), "{case}: real trees ({nodes} nodes in {})", cpu.model.trees.len());
    if cpu_json != device_json {
        let first = cpu.model.trees.iter().zip(&device.model.trees).position(|(c, d)| c != d);
        let at = cpu_json.bytes().zip(device_json.bytes()).position(|(c, d)| c != d).unwrap_or(0);
        let around = |json: &str| json.get(at.saturating_sub(80)..(at + 80).min(json.len())).unwrap_or("").to_string();
        panic!(
            "{case}: the device's model differs from the CPU's (first in tree {first:?}, {} and {} trees), \
             at byte {at}: {} | {}",
            cpu.model.trees.len(),
            device.model.trees.len(),
            around(&cpu_json),
            around(&device_json)
        );
    }
    if data.info.feature_types.iter().any(|t| t == "c") {
        let splits: usize = cpu.model.trees.iter().map(|t| t.categorical.nodes.len()).sum();
        let encoded = cpu.model.target_statistics.features.len();
        assert!(splits + encoded > 0, "{case}: categorical features and neither a categorical split nor an encoding");
    }
    assert_eq!(cpu.peak_device_bytes, None);
    match device.peak_device_bytes {
        // At least the bins (a byte a value or more at 256 bins: 9 bits) and the row order were
        // on the device.
        Some(peak) => assert!(peak as usize >= data.rows() * (data.cols() + 4), "{case}: peak {peak}"),
        None => assert!(gpu.is_emulated(), "{case}: no peak device memory from a CUDA device"),
    }
    assert_eq!(cpu.history, device.history, "{case}");
    on_device
}

fn cuda_suffix(gpu: &primitives::Gpu) -> String {
    match gpu.properties().kind {
        primitives::DeviceKind::Cuda { ordinal } => format!(" (cuda:{ordinal})"),
        primitives::DeviceKind::Emulated(_) => String::new(),
    }
}

/// The training sizes of the model-identity tests: small on the emulator.
fn training_sizes(gpu: &primitives::Gpu) -> (usize, usize, usize) {
    if gpu.is_emulated() {
        (2500, 9, 4)
    } else {
        (200_000, 28, 20)
    }
}

/// `verbosity=3` times each step on the device too (CUDA events; the host's clock on the
/// emulator), beside the host's times, without changing the model; at verbosity 2 (the host's
/// phases) no events are recorded.
#[test]
fn verbosity_3_reports_each_steps_device_time() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = training_sizes(&gpu);
    let data = dataset(rows, cols, SyntheticTask::Binary, 8);
    let params = [("objective", "binary:logistic"), ("max_depth", "4")];
    let quiet = run(&[params[0], params[1], ("verbosity", "2")], &data, None, rounds, Some(gpu.clone()));
    let start = std::time::Instant::now();
    let timed = run(&[params[0], params[1], ("verbosity", "3")], &data, None, rounds, Some(gpu.clone()));
    let elapsed = start.elapsed();
    assert_eq!(quiet.model.to_json_string().unwrap(), timed.model.to_json_string().unwrap());
    assert!(quiet.phases.device.is_empty(), "device times at verbosity 2: {:?}", quiet.phases.device);
    let steps = [
        "tree: gradients and quantise",
        "tree: histograms",
        "tree: partitions",
        "tree: evaluation",
        "tree: row check and order read back",
        "tree: margins",
    ];
    for step in steps {
        let device = timed.phases.device.iter().find(|(name, _)| *name == step);
        let (_, time) = device.unwrap_or_else(|| panic!("no device time for {step}: {:?}", timed.phases.device));
        assert!(timed.phases.entries.iter().any(|(name, _)| *name == step), "{step} has no host time");
        assert!(!time.is_zero() || gpu.is_emulated(), "{step}: no device time on a GPU");
    }
    let total: std::time::Duration = timed.phases.device.iter().map(|(_, t)| *t).sum();
    assert!(total <= elapsed, "the steps' device time {total:?} exceeds the run's {elapsed:?}");
}

/// Every objective family trains the CPU backend's model on the device, with its metrics there.
#[test]
fn binary_objectives_on_the_device_write_the_cpu_backends_models() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = training_sizes(&gpu);
    let mut binary = dataset(rows, cols, SyntheticTask::Binary, 3);
    binary.info.weights = (0..rows).map(|i| 0.5 + (i % 7) as f32 / 4.0).collect();
    let mut binary_valid = dataset(rows / 2, cols, SyntheticTask::Binary, 13);
    binary_valid.info.weights = (0..rows / 2).map(|i| 0.5 + (i % 3) as f32).collect();
    assert_same_model_with_valid(
        "binary:logistic, depthwise, sampling, weights, a weighted evaluation set",
        &[
            ("objective", "binary:logistic"),
            ("max_depth", "5"),
            ("subsample", "0.8"),
            ("colsample_bytree", "0.9"),
            ("colsample_bylevel", "0.8"),
            ("colsample_bynode", "0.8"),
            ("lambda", "2"),
            ("alpha", "0.1"),
            ("gamma", "0.01"),
            ("min_child_weight", "2"),
            ("max_delta_step", "0.7"),
            ("seed", "11"),
            ("eval_metric", "logloss"),
            ("eval_metric", "auc"),
        ],
        &binary,
        &binary_valid,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    // Trees of depth 2 give a few distinct predictions: large tie groups in the AUC walks.
    assert_same_model(
        "binary:logitraw, depth 2, auc and aucpr over ties",
        &[("objective", "binary:logitraw"), ("max_depth", "2"), ("eval_metric", "aucpr"), ("eval_metric", "auc")],
        &binary,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );

    assert_same_model(
        "binary:logitraw, row-wise metrics on the device",
        &[
            ("objective", "binary:logitraw"),
            ("max_depth", "4"),
            ("eval_metric", "error@0.3"),
            ("eval_metric", "rmse"),
            ("eval_metric", "mae"),
        ],
        &binary,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );

    assert_same_model_with_valid(
        "binary:logistic with a metric of the host (map@8): the margins come back",
        &[("objective", "binary:logistic"), ("max_depth", "3"), ("eval_metric", "map@8")],
        &dataset(rows, cols, SyntheticTask::Binary, 4),
        &dataset(rows / 3, cols - 2, SyntheticTask::Binary, 14),
        rounds,
        &gpu,
        OnDevice::Rounds,
    );
}

/// Gradient-based sampling (`boost_kernels::mvs`) keeps the CPU's rows and weights on the device:
/// an element-wise objective's rounds, the softmax's (a column of the round's gradients), a sample
/// of 1% (a few rows on the emulator), and absolute error's (a column of the round's pairs).
#[test]
fn gradient_based_sampling_on_the_device_writes_the_cpu_backends_models() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = training_sizes(&gpu);
    let mut binary = dataset(rows, cols, SyntheticTask::Binary, 21);
    binary.info.weights = (0..rows).map(|i| 0.5 + (i % 7) as f32 / 4.0).collect();
    let sampled = |share| [("sampling_method", "gradient_based"), ("subsample", share), ("seed", "3")];
    for share in ["0.5", "0.1", "0.01"] {
        let mut params = vec![("objective", "binary:logistic"), ("max_depth", "5"), ("eval_metric", "auc")];
        params.extend(sampled(share));
        let case = format!("binary:logistic, weights, gradient-based sampling of {share}");
        assert_same_model(&case, &params, &binary, rounds, &gpu, OnDevice::RoundsAndMetrics);
    }
    let multiclass = dataset(rows, cols, SyntheticTask::MultiClass { classes: 3 }, 22);
    let mut params = vec![("objective", "multi:softprob"), ("num_class", "3"), ("grow_policy", "lossguide")];
    params.extend(sampled("0.3"));
    assert_same_model(
        "multi:softprob, gradient-based sampling",
        &params,
        &multiclass,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    let regression = dataset(rows, cols, SyntheticTask::Regression, 23);
    let mut params = vec![("objective", "reg:absoluteerror"), ("max_depth", "4")];
    params.extend(sampled("0.4"));
    assert_same_model(
        "reg:absoluteerror, gradient-based sampling",
        &params,
        &regression,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
}

/// `device_memory_limit` holds a run to its bytes: a limit the rows do not fit in stops training
/// with the typed error naming the phase, the bytes asked and the limit; a larger one trains the
/// model of no limit; the caller's device has its own limit (none) back after either.
#[test]
fn the_device_memory_limit_stops_a_run_naming_the_phase() {
    let gpu = Arc::new(gpu());
    let data = dataset(50_000, 8, SyntheticTask::Binary, 7);
    let run = |limit: Option<&str>| {
        let mut pairs = vec![("objective", "binary:logistic"), ("max_depth", "3"), ("device", "cuda")];
        pairs.extend(limit.map(|l| ("device_memory_limit", l)));
        let params = Params::from_pairs(&pairs).expect("params");
        let options =
            TrainOptions { num_boost_round: 2, verbose_eval: 0, gpu: Some(gpu.clone()), ..Default::default() };
        let trained = train(&params, &data, &[], &options, &mut []);
        assert_eq!(gpu.memory_limit(), None, "the caller's device keeps its own limit");
        trained
    };
    match run(Some("1MiB")) {
        Err(boost::Error::DeviceMemoryLimit { phase, bytes, in_use, limit }) => {
            assert_eq!(limit, 1 << 20);
            assert!(bytes + in_use > limit && !phase.is_empty(), "{phase}: {bytes} asked, {in_use} in use");
            eprintln!("stopped while {phase}: {bytes} bytes asked, {in_use} in use");
        }
        other => panic!("expected the limit's error, got {:?}", other.map(|t| t.device)),
    }
    let within = run(Some("256MiB")).expect("training within 256 MiB");
    let unlimited = run(None).expect("training");
    assert_eq!(within.model.to_json_string().unwrap(), unlimited.model.to_json_string().unwrap());
}

#[test]
fn regression_objectives_on_the_device_write_the_cpu_backends_models() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = training_sizes(&gpu);
    let mut regression = dataset(rows, cols, SyntheticTask::Regression, 5);
    regression.info.base_margin = (0..rows).map(|i| (i % 5) as f32 * 0.1).collect();
    assert_same_model(
        "reg:squarederror, lossguide, base margin",
        &[("objective", "reg:squarederror"), ("grow_policy", "lossguide"), ("max_leaves", "12"), ("max_bin", "64")],
        &regression,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    // XGBoost 3.4's absolute error: each round's scale summed on the device (block sums added in
    // order on the host), then the pairs.
    assert_same_model(
        "reg:absoluteerror, sampling, base margin",
        &[("objective", "reg:absoluteerror"), ("max_depth", "4"), ("subsample", "0.7"), ("seed", "5")],
        &regression,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    let mut weighted = regression.clone();
    // Zero weights too: they take no part in the scale.
    weighted.info.weights = (0..rows).map(|i| (i % 5) as f32 * 0.5).collect();
    assert_same_model(
        "reg:absoluteerror, lossguide, weights (some zero), sampling",
        &[
            ("objective", "reg:absoluteerror"),
            ("grow_policy", "lossguide"),
            ("max_leaves", "10"),
            ("subsample", "0.8"),
            ("min_child_weight", "0"),
        ],
        &weighted,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );

    // Three quantiles, one tree each a round; the `quantile` metric reads the margins back.
    let mut three = weighted.clone();
    three.info.base_margin.clear();
    assert_same_model(
        "reg:quantileerror, 3 alphas, weights, sampling",
        &[
            ("objective", "reg:quantileerror"),
            ("quantile_alpha", "[0.1, 0.5, 0.95]"),
            ("max_depth", "4"),
            ("subsample", "0.8"),
        ],
        &three,
        rounds,
        &gpu,
        OnDevice::Rounds,
    );
    assert_same_model(
        "reg:quantileerror, one alpha, its quantile metric and mae on the device",
        &[
            ("objective", "reg:quantileerror"),
            ("quantile_alpha", "0.3"),
            ("max_depth", "3"),
            ("eval_metric", "quantile"),
            ("eval_metric", "mae"),
        ],
        &regression,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    assert_same_model(
        "reg:expectileerror, 3 alphas, weights, sampling",
        &[
            ("objective", "reg:expectileerror"),
            ("expectile_alpha", "[0.1, 0.5, 0.95]"),
            ("max_depth", "4"),
            ("subsample", "0.8"),
        ],
        &three,
        rounds,
        &gpu,
        OnDevice::Rounds,
    );
    assert_same_model(
        "reg:expectileerror, one alpha, its expectile metric and rmse on the device",
        &[
            ("objective", "reg:expectileerror"),
            ("expectile_alpha", "0.7"),
            ("max_depth", "3"),
            ("eval_metric", "expectile"),
            ("eval_metric", "rmse"),
        ],
        &regression,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    assert_same_model(
        "reg:pseudohubererror",
        &[("objective", "reg:pseudohubererror"), ("huber_slope", "0.7"), ("max_depth", "4"), ("subsample", "0.7")],
        &regression,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );

    let mut counts = dataset(rows, cols, SyntheticTask::Regression, 6);
    counts.info.labels = counts.info.labels.iter().map(|&m| (m.abs() * 2.0).floor()).collect();
    assert_same_model(
        "count:poisson, metrics on the device",
        &[
            ("objective", "count:poisson"),
            ("max_depth", "4"),
            ("eval_metric", "poisson-nloglik"),
            ("eval_metric", "rmsle"),
            ("eval_metric", "logloss"),
        ],
        &counts,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    assert_same_model(
        "reg:tweedie, sampling, metrics on the device",
        &[
            ("objective", "reg:tweedie"),
            ("tweedie_variance_power", "1.2"),
            ("max_depth", "4"),
            ("subsample", "0.8"),
            ("eval_metric", "tweedie-nloglik@1.7"),
        ],
        &counts,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    assert_same_model(
        "reg:squaredlogerror",
        &[("objective", "reg:squaredlogerror"), ("max_depth", "4"), ("eval_metric", "rmsle")],
        &counts,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    let mut positive = counts.clone();
    positive.info.labels.iter_mut().for_each(|y| *y += 0.5);
    positive.info.weights = (0..rows).map(|i| (i % 3) as f32 * 0.5 + 0.25).collect();
    assert_same_model(
        "reg:gamma, weights, metrics on the device",
        &[
            ("objective", "reg:gamma"),
            ("max_depth", "4"),
            ("eval_metric", "gamma-deviance"),
            ("eval_metric", "gamma-nloglik"),
        ],
        &positive,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    // Cox: the host's gradients (a scan in time order), the trees on the device.
    let mut survival = positive.clone();
    survival.info.labels.iter_mut().enumerate().for_each(|(i, y)| *y = if i % 4 == 0 { -*y } else { *y });
    assert_same_model(
        "survival:cox, weights, censored rows",
        &[("objective", "survival:cox"), ("max_depth", "4"), ("eval_metric", "cox-nloglik")],
        &survival,
        rounds,
        &gpu,
        OnDevice::Trees,
    );
    // AFT: events, right-, left- and interval-censored rows; its metrics the host's.
    let mut intervals = positive.clone();
    let (lower, upper) = intervals
        .info
        .labels
        .iter()
        .enumerate()
        .map(|(i, &y)| match i % 4 {
            0 => (y, y),
            1 => (y, f32::INFINITY),
            2 => (0.0, y),
            _ => (y, 2.0 * y),
        })
        .unzip();
    (intervals.info.label_lower_bound, intervals.info.label_upper_bound) = (lower, upper);
    for distribution in ["normal", "logistic", "extreme"] {
        assert_same_model(
            &format!("survival:aft, {distribution}, weights, censored rows, sampling"),
            &[
                ("objective", "survival:aft"),
                ("aft_loss_distribution", distribution),
                ("aft_loss_distribution_scale", "0.8"),
                ("max_depth", "4"),
                ("subsample", "0.8"),
                ("eval_metric", "aft-nloglik"),
                ("eval_metric", "interval-regression-accuracy"),
            ],
            &intervals,
            rounds,
            &gpu,
            OnDevice::Rounds,
        );
    }
    let mut binary = dataset(rows, cols, SyntheticTask::Binary, 8);
    binary.info.weights = (0..rows).map(|i| (i % 4) as f32 * 0.5).collect();
    assert_same_model(
        "binary:hinge, weights (some zero), metrics on the device",
        &[("objective", "binary:hinge"), ("max_depth", "4"), ("eval_metric", "error"), ("eval_metric", "auc")],
        &binary,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
}

#[test]
fn multiclass_objectives_on_the_device_write_the_cpu_backends_models() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = training_sizes(&gpu);
    let mut multiclass = dataset(rows, cols, SyntheticTask::Regression, 7);
    multiclass.info.labels = multiclass
        .info
        .labels
        .iter()
        .map(|&m| {
            if m < -1.0 {
                0.0
            } else if m < 1.0 {
                1.0
            } else {
                2.0
            }
        })
        .collect();
    assert_same_model(
        "multi:softprob, 3 classes",
        &[("objective", "multi:softprob"), ("num_class", "3"), ("max_depth", "4"), ("max_bin", "32")],
        &multiclass,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    multiclass.info.weights = (0..rows).map(|i| 0.25 + (i % 5) as f32 / 2.0).collect();
    assert_same_model(
        "multi:softmax, 3 classes, sampling, weights, lossguide",
        &[
            ("objective", "multi:softmax"),
            ("num_class", "3"),
            ("grow_policy", "lossguide"),
            ("max_leaves", "12"),
            ("subsample", "0.7"),
            ("colsample_bynode", "0.8"),
            ("eval_metric", "merror"),
            ("eval_metric", "mlogloss"),
        ],
        &multiclass,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    assert_same_model_with_valid(
        "multi:softprob, one-vs-rest auc and aucpr, an evaluation set",
        &[
            ("objective", "multi:softprob"),
            ("num_class", "3"),
            ("max_depth", "3"),
            ("eval_metric", "auc"),
            ("eval_metric", "aucpr"),
        ],
        &multiclass,
        &dataset(rows / 2, cols, SyntheticTask::MultiClass { classes: 3 }, 17),
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
}

#[test]
fn ranking_objectives_on_the_device_write_the_cpu_backends_models() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = training_sizes(&gpu);
    let mut ranking = dataset(rows, cols, SyntheticTask::Regression, 9);
    ranking.info.labels = ranking.info.labels.iter().map(|&m| (m.clamp(-2.0, 2.0) + 2.0).floor()).collect();
    ranking.info.group_ptr = (0..rows).step_by(25).chain([rows]).collect();
    let mut ranking_valid = dataset(rows / 2, cols, SyntheticTask::Regression, 19);
    ranking_valid.info.labels = ranking_valid.info.labels.iter().map(|&m| (m.clamp(-2.0, 2.0) + 2.0).floor()).collect();
    ranking_valid.info.group_ptr = (0..rows / 2).step_by(10).chain([rows / 2]).collect();
    assert_same_model_with_valid(
        "rank:pairwise, groups of 25, an evaluation set in groups of 10",
        &[
            ("objective", "rank:pairwise"),
            ("max_depth", "4"),
            ("eval_metric", "ndcg@10"),
            ("eval_metric", "auc"),
            ("eval_metric", "ndcg-"),
        ],
        &ranking,
        &ranking_valid,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    // Groups of many sizes (empty, one document, long ones), a weight per group.
    let mut offsets = vec![0];
    for size in [0usize, 1, 37, 5, 80, 13, 2].into_iter().cycle() {
        let last = *offsets.last().unwrap();
        if last + size >= rows {
            break;
        }
        offsets.push(last + size);
    }
    offsets.push(rows);
    ranking.info.group_ptr = offsets;
    let groups = ranking.info.group_ptr.len() - 1;
    ranking.info.weights = (0..groups).map(|g| 0.5 + (g % 4) as f32 * 0.5).collect();
    assert_same_model(
        "rank:ndcg, mean pairs, groups of many sizes, group weights, sampling",
        &[
            ("objective", "rank:ndcg"),
            ("lambdarank_pair_method", "mean"),
            ("lambdarank_num_pair_per_sample", "3"),
            ("max_depth", "4"),
            ("subsample", "0.8"),
        ],
        &ranking,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    assert_same_model(
        "rank:ndcg, top 8 pairs, linear gain",
        &[
            ("objective", "rank:ndcg"),
            ("lambdarank_num_pair_per_sample", "8"),
            ("ndcg_exp_gain", "false"),
            ("lambdarank_score_normalization", "false"),
            ("max_depth", "3"),
        ],
        &ranking,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    let mut binary_ranking = ranking.clone();
    binary_ranking.info.labels = ranking.info.labels.iter().map(|&y| (y >= 2.0) as u8 as f32).collect();
    assert_same_model(
        "rank:map, lossguide, top 40 pairs",
        &[
            ("objective", "rank:map"),
            ("grow_policy", "lossguide"),
            ("max_leaves", "9"),
            ("lambdarank_num_pair_per_sample", "40"),
            ("eval_metric", "aucpr"),
            ("eval_metric", "map@5"),
        ],
        &binary_ranking,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
}

/// A shipped dataset (`data/`), its label column, its categorical columns and the parameters it
/// trains with.
pub(crate) struct Shipped {
    pub(crate) file: &'static str,
    label: &'static str,
    /// `survival:aft`'s upper bounds' column (the label column then holds the lower bounds).
    label_upper_bound: Option<&'static str>,
    categorical: &'static [usize],
    params: &'static [(&'static str, &'static str)],
}

impl Shipped {
    /// How to read the dataset's training file: its label and categorical columns.
    pub(crate) fn read_options(&self) -> boost::data::ReadOptions<'static> {
        use boost::data::{Column, CsvOptions, ReadOptions};
        let label = self.label.parse().map_or_else(|_| Column::Name(self.label.into()), Column::Index);
        let categorical = self.categorical.iter().map(|&c| Column::Index(c)).collect();
        let label_upper_bound = self.label_upper_bound.map(|c| Column::Name(c.into()));
        ReadOptions {
            csv: CsvOptions { label, label_upper_bound, categorical, ..Default::default() },
            ..Default::default()
        }
    }
}

pub(crate) const SHIPPED: &[Shipped] = &[
    Shipped {
        file: "higgs_lgbm_sample/binary.train",
        label: "0",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "binary:logistic")],
    },
    Shipped {
        file: "lgbm_multiclass/multiclass.train",
        label: "0",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "multi:softprob"), ("num_class", "5")],
    },
    Shipped {
        file: "lgbm_rank/rank.train",
        label: "0",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "rank:ndcg")],
    },
    Shipped {
        file: "lgbm_categorical/categorical.train",
        label: "0",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "binary:logistic")],
    },
    Shipped {
        file: "agaricus/agaricus.txt.train",
        label: "0",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "binary:logistic")],
    },
    Shipped {
        file: "dermatology/dermatology.train.data",
        label: "34",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "multi:softmax"), ("num_class", "7")],
    },
    Shipped {
        file: "cpu_machine/machine.train.data",
        label: "8",
        label_upper_bound: None,
        categorical: &[0, 1],
        params: &[("objective", "reg:squarederror")],
    },
    Shipped {
        file: "adult/adult_train.csv",
        label: "income",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "binary:logistic")],
    },
    Shipped {
        file: "dna/dna.train.csv",
        label: "LABEL",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "multi:softprob"), ("num_class", "3")],
    },
    Shipped {
        file: "iris/iris.train.csv",
        label: "class",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "multi:softprob"), ("num_class", "3")],
    },
    Shipped {
        file: "abalone/abalone.train.csv",
        label: "Rings",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "reg:tweedie"), ("tweedie_variance_power", "1.4")],
    },
    Shipped {
        file: "california_housing/housing.train.csv",
        label: "median_house_value",
        label_upper_bound: None,
        categorical: &[],
        params: &[("objective", "reg:squarederror"), ("grow_policy", "lossguide"), ("max_leaves", "24")],
    },
    Shipped {
        file: "veterans_lung_cancer/veterans_lung_cancer.train.csv",
        label: "Survival_label_lower_bound",
        label_upper_bound: Some("Survival_label_upper_bound"),
        categorical: &[],
        params: &[("objective", "survival:aft"), ("aft_loss_distribution", "logistic")],
    },
];

/// Six synthetic binary features whose last three are made categorical, of `categories` each,
/// coded from the first three (so that the categories matter), missing where those are and in
/// every 17th row.
fn categorical_dataset(rows: usize, seed: u64, categories: [f32; 3]) -> Dataset {
    let mut data = dataset(rows, 6, SyntheticTask::Binary, seed);
    let FeatureMatrix::Dense(m) = &mut data.features else { panic!("dense synthetic rows") };
    let cols = m.cols;
    for (row, values) in m.values.make_mut().chunks_exact_mut(cols).enumerate() {
        for (f, n) in (3..6).zip(categories) {
            let v = values[f - 3];
            values[f] = if v.is_nan() || row % 17 == f { f32::NAN } else { ((v.abs() * n * 7.0) % n).floor() };
        }
    }
    data.info.feature_types = (0..cols).map(|f| if f >= 3 { "c" } else { "q" }.to_string()).collect();
    data
}

/// Categorical features of 3, 40 and 700 categories with missing values (one-hot and partition
/// splits, both scans, both missing directions; 40 one-hot under `max_cat_to_onehot` 50), depthwise and lossguide, with column sampling:
/// the device's trees are the CPU's. Their codes follow numeric features the label depends on, so
/// the categories matter.
#[test]
fn categorical_trees_on_the_device_are_the_cpus() {
    let gpu = Arc::new(gpu());
    let (rows, rounds) = if gpu.is_emulated() { (3000, 3) } else { (300_000, 20) };
    let data = categorical_dataset(rows, 41, [3.0, 40.0, 700.0]);
    for policy in [&[("grow_policy", "depthwise")][..], &[("grow_policy", "lossguide"), ("max_leaves", "12")]] {
        for (threshold, one_hot) in [("64", "4"), ("5", "4"), ("64", "50")] {
            let mut params = vec![
                ("objective", "binary:logistic"),
                ("max_depth", "5"),
                ("max_cat_threshold", threshold),
                ("max_cat_to_onehot", one_hot),
                ("colsample_bynode", "0.9"),
            ];
            params.extend_from_slice(policy);
            let case = format!("categorical, {policy:?}, max_cat_threshold {threshold}, max_cat_to_onehot {one_hot}");
            compare(&case, &params, &data, None, rounds, &gpu);
        }
    }
}

/// `categorical_encoding=ordered_target` (CatBoost's ordered target statistics): the device
/// computes the statistics (a radix sort by category and permutation, a segmented scan) and then
/// grows the trees; the model file is the CPU's, statistics and trees, with missing values, weights
/// and an evaluation set encoded by the statistics of all training rows.
#[test]
fn ordered_target_statistics_on_the_device_are_the_cpus() {
    let gpu = Arc::new(gpu());
    let (rows, rounds) = if gpu.is_emulated() { (3000, 3) } else { (1_000_000, 20) };
    let categorical = |rows: usize, seed: u64| {
        let mut data = categorical_dataset(rows, seed, [3.0, 40.0, 100_000.0]);
        data.info.weights = (0..rows).map(|i| 0.5 + (i % 5) as f32 / 4.0).collect();
        data
    };
    let (train, valid) = (categorical(rows, 43), categorical(rows / 5, 44));
    for (seed, weight) in [("1", "1"), ("8", "20")] {
        let params = [
            ("objective", "binary:logistic"),
            ("max_depth", "6"),
            ("categorical_encoding", "ordered_target"),
            ("ordered_target_prior_weight", weight),
            ("seed", seed),
        ];
        let case = format!("ordered target statistics, seed {seed}, prior weight {weight}");
        compare(&case, &params, &train, Some(&valid), rounds, &gpu);
    }
}

/// Monotone constraints (XGBoost's bounds on the children's weights, split kernels scanning each
/// feature with its direction) and interaction constraints (the driver's filter), depthwise and
/// lossguide, numeric and categorical features: the device's trees are the CPU's, and predictions
/// move with a constrained feature the way its constraint says.
#[test]
fn constrained_trees_on_the_device_are_the_cpus() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = training_sizes(&gpu);
    let data = dataset(rows, cols, SyntheticTask::Regression, 23);
    let categorical = categorical_dataset(rows, 29, [3.0, 40.0, 700.0]);
    let lossguide = [("grow_policy", "lossguide"), ("max_leaves", "12")];
    type Case<'a> = (&'a str, &'a Dataset, Vec<(&'a str, &'a str)>);
    let cases: [Case; 4] = [
        ("monotone, depthwise", &data, vec![("monotone_constraints", "(1,-1,0,1)"), ("colsample_bynode", "0.8")]),
        ("monotone, lossguide", &data, [&[("monotone_constraints", "(-1,0,1)")][..], &lossguide].concat()),
        ("interactions", &data, vec![("interaction_constraints", "[[0, 1, 2], [2, 3], [4, 5, 6, 7, 8]]")]),
        (
            "both, categorical features",
            &categorical,
            vec![("monotone_constraints", "(1,0,-1)"), ("interaction_constraints", "[[0, 3, 4], [1, 2, 5]]")],
        ),
    ];
    for (case, data, extra) in cases {
        let mut params = vec![("objective", "reg:squarederror"), ("max_depth", "5")];
        params.extend_from_slice(&extra);
        compare(case, &params, data, None, rounds, &gpu);
        let Some(&(_, monotone)) = extra.iter().find(|(k, _)| *k == "monotone_constraints") else { continue };
        // Each constrained feature set to its smallest and largest value in every row.
        let model = run(&params, data, None, rounds, None).model;
        let booster = boost::Booster::from_model(model).unwrap();
        let FeatureMatrix::Dense(m) = &data.features else { panic!("dense synthetic rows") };
        let directions: Vec<i32> = monotone.trim_matches(['(', ')']).split(',').map(|d| d.parse().unwrap()).collect();
        let mut moved = 0;
        for (f, &direction) in directions.iter().enumerate().filter(|(_, &d)| d != 0) {
            let column = m.values.chunks_exact(m.cols).map(|r| r[f]).filter(|v| !v.is_nan());
            let (lo, hi) = column.fold((f32::MAX, f32::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
            let at = |value: f32| {
                let mut values = m.values.to_vec();
                values.chunks_exact_mut(m.cols).for_each(|r| r[f] = value);
                let rows = Dataset {
                    features: FeatureMatrix::Dense(DenseMatrix::new(m.rows, m.cols, values)),
                    ..data.clone()
                };
                let matrix = boost::DMatrix::from_dataset(rows).unwrap();
                booster.predict(&matrix, &Default::default()).unwrap()
            };
            let (low, high) = (at(lo), at(hi));
            moved += low.iter().zip(&high).filter(|(l, h)| (*h - *l) * direction as f32 > 0.0).count();
            assert!(low.iter().zip(&high).all(|(l, h)| (h - l) * direction as f32 >= 0.0), "{case}: feature {f}");
        }
        assert!(moved > 0, "{case}: the constrained features are used");
    }
}

/// Random forests (`num_parallel_tree`): a round's trees grow on the device from the round's
/// gradients (the host's, as the device's element-wise kernels would read margins the round's
/// earlier trees moved), each with its own row and column samples: the CPU's model.
#[test]
fn random_forests_on_the_device_are_the_cpus() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = training_sizes(&gpu);
    let data = dataset(rows, cols, SyntheticTask::Binary, 37);
    let multiclass = dataset(rows, cols, SyntheticTask::MultiClass { classes: 3 }, 38);
    let forest = [("num_parallel_tree", "3"), ("subsample", "0.8"), ("colsample_bynode", "0.8"), ("max_depth", "4")];
    let binary = [&[("objective", "binary:logistic")][..], &forest].concat();
    assert_same_model("random forest, binary", &binary, &data, rounds, &gpu, OnDevice::Trees);
    let three = [&[("objective", "multi:softprob"), ("num_class", "3")][..], &forest].concat();
    assert_same_model("random forest, 3 classes", &three, &multiclass, rounds, &gpu, OnDevice::Trees);
    let model = run(&binary, &data, None, rounds, None).model;
    assert_eq!((model.num_parallel_tree, model.trees.len()), (3, 3 * rounds));
}

/// `feature_weights` in column sampling by tree, level and node: the device's trees are the
/// CPU's, and a weightless feature is never split on while enough others have weight.
#[test]
fn feature_weights_on_the_device_are_the_cpus() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = training_sizes(&gpu);
    let mut data = dataset(rows, cols, SyntheticTask::Binary, 31);
    data.info.feature_weights = (0..cols).map(|f| if f == 0 { 0.0 } else { f as f32 }).collect();
    let params = [
        ("objective", "binary:logistic"),
        ("max_depth", "4"),
        ("colsample_bytree", "0.8"),
        ("colsample_bylevel", "0.8"),
        ("colsample_bynode", "0.8"),
        ("seed", "4"),
    ];
    compare("feature weights", &params, &data, None, rounds, &gpu);
    let model = run(&params, &data, None, rounds, None).model;
    let split_on =
        |t: &boost::tree::Tree, f: u32| (0..t.len()).filter(|&n| !t.is_leaf(n) && t.split_indices[n] == f).count();
    let splits_on_0: usize = model.trees.iter().map(|t| split_on(t, 0)).sum();
    assert!(
        model.trees.iter().map(|t| split_on(t, cols as u32 - 1)).sum::<usize>() > 0,
        "the heaviest feature is used"
    );
    assert_eq!(splits_on_0, 0, "feature 0 has no weight");
}

/// Shipped data whose categorical features are numbers: the features typed `c` after reading.
const CATEGORY_FEATURES: &[(&str, &[usize])] = &[("lgbm_categorical/categorical.train", &[0, 1, 4, 5, 6])];

/// Oblivious trees (`grow_policy=oblivious`): the level's split chosen on the device is the CPU's.
#[test]
fn oblivious_trees_on_the_device_are_the_cpus() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = if gpu.is_emulated() { (3000, 9, 4) } else { (200_000, 28, 20) };
    let mut binary = dataset(rows, cols, SyntheticTask::Binary, 31);
    binary.info.weights = (0..rows).map(|i| 0.5 + (i % 7) as f32 / 4.0).collect();
    let params = [
        ("objective", "binary:logistic"),
        ("grow_policy", "oblivious"),
        ("max_depth", "6"),
        ("min_child_weight", "3"),
        ("colsample_bylevel", "0.8"),
        ("subsample", "0.9"),
        ("seed", "2"),
    ];
    assert_same_model(
        "binary:logistic, oblivious, depth 6",
        &params,
        &binary,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
    let regression = dataset(rows, cols, SyntheticTask::Regression, 32);
    let params =
        [("objective", "reg:squarederror"), ("grow_policy", "SymmetricTree"), ("max_depth", "4"), ("max_bin", "32")];
    assert_same_model(
        "reg:squarederror, oblivious, 32 bins",
        &params,
        &regression,
        rounds,
        &gpu,
        OnDevice::RoundsAndMetrics,
    );
}

/// The exact method (`tree_method=exact`): the device's levels (sorted columns, every boundary a
/// candidate, the stable re-sort by node) build the CPU's trees, with ties between values, missing
/// values, weights, sampling and several outputs.
#[test]
fn exact_trees_on_the_device_are_the_cpus() {
    let gpu = Arc::new(gpu());
    let (rows, cols, rounds) = if gpu.is_emulated() { (2500, 7, 3) } else { (200_000, 28, 20) };
    let mut binary = dataset(rows, cols, SyntheticTask::Binary, 41);
    binary.info.weights = (0..rows).map(|i| 0.5 + (i % 7) as f32 / 4.0).collect();
    // Columns of few distinct values: long runs of ties.
    if let boost::data::FeatureMatrix::Dense(m) = &mut binary.features {
        for (i, v) in m.values.make_mut().iter_mut().enumerate() {
            if i % cols < 2 {
                *v = (*v * 4.0).round() / 4.0;
            }
        }
    }
    let params = [
        ("objective", "binary:logistic"),
        ("tree_method", "exact"),
        ("max_depth", "6"),
        ("min_child_weight", "2"),
        ("subsample", "0.9"),
        ("colsample_bynode", "0.8"),
        ("gamma", "0.05"),
        ("seed", "3"),
    ];
    assert_same_model("binary:logistic, exact, depth 6", &params, &binary, rounds, &gpu, OnDevice::Trees);
    // The interleaved algorithm for the first levels, changing to the sorting one at level 2, 3, or
    // never (the trees are 6 deep).
    // Shallow trees: the last level interleaved (the rows' leaves from the interleaved layout), or
    // the change to the sorting layout at the last level.
    for depth in ["2", "3"] {
        let mut shallow = params.to_vec();
        shallow.retain(|p| p.0 != "max_depth");
        shallow.extend([("max_depth", depth), ("exact_interleaved_levels", "2")]);
        let case = format!("binary:logistic, exact, depth {depth}, 2 interleaved levels");
        assert_same_model(&case, &shallow, &binary, 2, &gpu, OnDevice::Trees);
    }
    for levels in ["2", "3", "7"] {
        let mut interleaved = params.to_vec();
        interleaved.push(("exact_interleaved_levels", levels));
        let case = format!("binary:logistic, exact, {levels} interleaved levels");
        assert_same_model(&case, &interleaved, &binary, rounds.min(2), &gpu, OnDevice::Trees);
    }
    // Monotone and interaction constraints, with the sorting and the interleaved algorithm.
    for levels in ["0", "3"] {
        let mut constrained = params.to_vec();
        constrained.extend([
            ("monotone_constraints", "(1,0,-1,1)"),
            ("interaction_constraints", "[[0, 1, 2], [2, 3, 4, 5, 6]]"),
            ("exact_interleaved_levels", levels),
        ]);
        let case = format!("binary:logistic, exact, constraints, {levels} interleaved levels");
        assert_same_model(&case, &constrained, &binary, rounds, &gpu, OnDevice::Trees);
    }
    let device = run(&params, &binary, None, 1, Some(gpu.clone()));
    assert!(
        device.phases.entries.iter().any(|(name, _)| *name == "tree: exact splits"),
        "the exact levels ran on the device"
    );
    let multiclass = dataset(rows, cols, SyntheticTask::MultiClass { classes: 3 }, 42);
    let params = [
        ("objective", "multi:softprob"),
        ("num_class", "3"),
        ("tree_method", "exact"),
        ("max_depth", "4"),
        ("min_child_weight", "0"),
    ];
    assert_same_model("multi:softprob, exact, min_child_weight 0", &params, &multiclass, rounds, &gpu, OnDevice::Trees);
}

/// A `max_bin` whose histograms do not fit in a block's shared memory (XGBoost's limit is none):
/// 17-bit ids, the histograms added straight to device memory; the CPU's model all the same.
#[test]
fn a_max_bin_past_shared_memory_trains_the_cpu_backends_model() {
    let gpu = Arc::new(gpu());
    // Over 65535 distinct values a column: more bins than 16-bit ids hold.
    let (rows, cols, rounds) = if gpu.is_emulated() { (70_000, 2, 2) } else { (300_000, 28, 10) };
    let data = dataset(rows, cols, SyntheticTask::Regression, 21);
    let cuts = boost::quantile::QuantileCuts::build(&data.features, &[], 65536);
    let most = (0..cuts.features()).map(|f| cuts.bins(f)).max().unwrap_or(0);
    assert!(most > 65535, "{most} bins a feature: 16-bit ids would do");
    let params = [("objective", "reg:squarederror"), ("max_depth", "3"), ("max_bin", "65536")];
    assert_same_model("reg:squarederror, max_bin 65536", &params, &data, rounds, &gpu, OnDevice::RoundsAndMetrics);
}

#[test]
fn every_shipped_dataset_trains_the_cpu_backends_model_on_the_device() {
    use boost::data::{read_data, LibsvmOptions, ReadOptions};
    let gpu = Arc::new(gpu());
    let (depth, rounds) = if gpu.is_emulated() { ("4", 3) } else { ("6", 20) };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data");
    let folders = std::fs::read_dir(&dir)
        .expect("the shipped data")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().is_dir()))
        .count();
    assert_eq!(folders, SHIPPED.len(), "a case for every folder of {}", dir.display());
    for case in SHIPPED {
        let options = case.read_options();
        let (data, _) = read_data(&dir.join(case.file), &options).expect(case.file);
        // The folder's test file, with the training file's columns, as the evaluation set.
        let test = dir.join(case.file.replace("train", "test"));
        let options = ReadOptions { libsvm: LibsvmOptions { num_features: Some(data.cols()) }, ..options };
        let (test, _) = read_data(&test, &options).expect("the test file");
        // The emulator runs a thread at a time: the first rows (whole query groups) there.
        let (mut data, mut test) =
            if gpu.is_emulated() { (head(&data, 2000), head(&test, 1000)) } else { (data, test) };
        let mut params = vec![("max_depth", depth), ("eta", "0.3"), ("seed", "3"), ("colsample_bynode", "0.8")];
        params.extend_from_slice(case.params);
        // Categorical features (CSV string columns, LightGBM's test's columns): one-hot and
        // partition splits, the categories sorted on the device.
        if let Some((_, features)) = CATEGORY_FEATURES.iter().find(|(file, _)| *file == case.file) {
            let types: Vec<String> =
                (0..data.cols()).map(|f| if features.contains(&f) { "c" } else { "q" }.to_string()).collect();
            data.info.feature_types = types.clone();
            test.info.feature_types = types;
        }
        compare(case.file, &params, &data, Some(&test), rounds, &gpu);
    }
}

/// The first rows of `data`, about `rows` of them: whole query groups, with their weights (per row,
/// or per group for ranking data).
fn head(data: &Dataset, rows: usize) -> Dataset {
    let info = &data.info;
    // At least one group, however large.
    let total_groups = info.group_ptr.len().saturating_sub(1);
    let groups =
        info.group_ptr.iter().take_while(|&&end| end <= rows).count().saturating_sub(1).max(1).min(total_groups);
    let cut = if info.group_ptr.is_empty() { rows.min(data.rows()) } else { info.group_ptr[groups] };
    let features = match &data.features {
        FeatureMatrix::Dense(m) => {
            FeatureMatrix::Dense(DenseMatrix::new(cut, m.cols, m.values[..cut * m.cols].to_vec()))
        }
        FeatureMatrix::Sparse(m) => {
            let end = m.row_ptr[cut];
            FeatureMatrix::Sparse(CsrMatrix {
                rows: cut,
                cols: m.cols,
                row_ptr: m.row_ptr[..=cut].to_vec(),
                col_indices: m.col_indices[..end].to_vec(),
                values: m.values[..end].to_vec(),
            })
        }
    };
    let weights = match info.weights.len() {
        0 => Vec::new(),
        n if n == data.rows() => info.weights[..cut].to_vec(),
        _ => info.weights[..groups].to_vec(),
    };
    let group_ptr = if info.group_ptr.is_empty() { Vec::new() } else { info.group_ptr[..=groups].to_vec() };
    let outputs = info.base_margin.len() / data.rows().max(1);
    let base_margin = info.base_margin[..cut * outputs].to_vec();
    let bounds = |b: &[f32]| b[..cut.min(b.len())].to_vec();
    let info = MetaInfo {
        labels: info.labels[..cut].to_vec(),
        weights,
        group_ptr,
        base_margin,
        label_lower_bound: bounds(&info.label_lower_bound),
        label_upper_bound: bounds(&info.label_upper_bound),
        ..info.clone()
    };
    Dataset { features, info }
}

/// Training on the device twice writes the same model bytes and evaluation log: on a GPU, whatever
/// order its blocks and atomics take; on the emulator, under a second, shuffled schedule.
#[test]
fn training_twice_on_the_device_writes_the_same_model() {
    let first = Arc::new(gpu());
    let second = if first.is_emulated() {
        Arc::new(primitives::Gpu::emulated(primitives::Schedule::Shuffled { seed: 17 }))
    } else {
        first.clone()
    };
    let (rows, cols, rounds) = if first.is_emulated() { (3000, 8, 4) } else { (200_000, 28, 20) };
    let binary = dataset(rows, cols, SyntheticTask::Binary, 21);
    let mut ranking = dataset(rows, cols, SyntheticTask::Regression, 22);
    ranking.info.labels = ranking.info.labels.iter().map(|&m| (m.clamp(-2.0, 2.0) + 2.0).floor()).collect();
    ranking.info.group_ptr = (0..rows).step_by(60).chain([rows]).collect();
    let cases: [(&[(&str, &str)], &Dataset); 3] = [
        (
            &[
                ("objective", "binary:logistic"),
                ("max_depth", "6"),
                ("subsample", "0.7"),
                ("colsample_bynode", "0.8"),
                ("eval_metric", "auc"),
            ],
            &binary,
        ),
        (&[("objective", "reg:squarederror"), ("grow_policy", "lossguide"), ("max_leaves", "31")], &binary),
        (&[("objective", "rank:ndcg"), ("max_depth", "5"), ("eval_metric", "ndcg@10")], &ranking),
    ];
    for (params, data) in cases {
        let a = run(params, data, None, rounds, Some(first.clone()));
        let b = run(params, data, None, rounds, Some(second.clone()));
        assert_eq!(a.model.to_json_string().unwrap(), b.model.to_json_string().unwrap(), "{params:?}");
        assert_eq!(a.history, b.history, "{params:?}");
        assert!(a.model.trees.iter().map(|t| t.len()).sum::<usize>() > 3 * a.model.trees.len(), "real trees");
    }
}

/// A custom objective (gradients from a closure, computed on the host each round) trains the same
/// model on the device as on the CPU, and a closure computing logistic loss's gradients with the
/// built-in's `f32` arithmetic trains the built-in objective's model; with a custom metric logged.
#[test]
fn a_custom_objective_trains_the_same_model_on_the_device() {
    use boost::data::MetaInfo;
    use boost::learner::{CustomMetric, CustomObjective};
    use primitives::ops::GradientPair;
    let gpu = Arc::new(gpu());
    let rows = if gpu.is_emulated() { 3000 } else { 200_000 };
    let data = dataset(rows, 12, SyntheticTask::Binary, 17);
    let params = Params::from_pairs(&[("objective", "reg:squarederror"), ("max_depth", "6")]).expect("params");
    let squared_error = CustomObjective::new(|margins: &[f32], info: &MetaInfo| {
        margins.iter().zip(&info.labels).map(|(m, y)| GradientPair::new(m - y, 1.0)).collect()
    });
    let mean_error = CustomMetric::new("mean-error", false, |predictions: &[f32], info: &MetaInfo| {
        predictions.iter().zip(&info.labels).map(|(p, y)| f64::from((p - y).abs())).sum::<f64>()
            / predictions.len() as f64
    });
    let options = TrainOptions {
        num_boost_round: 8,
        verbose_eval: 1,
        custom_objective: Some(squared_error),
        custom_metric: Some(mean_error),
        ..Default::default()
    };
    let on_cpu = train(&params, &data, &[(&data, "train")], &options, &mut []).expect("cpu");
    let on_device = TrainOptions { gpu: Some(gpu.clone()), ..options.clone() };
    let on_gpu = train(&params, &data, &[(&data, "train")], &on_device, &mut []).expect("device");
    let json = |t: &Trained| t.model.to_json_string().expect("json");
    assert_eq!(json(&on_gpu), json(&on_cpu), "custom objective{}", cuda_suffix(&gpu));
    assert_eq!(on_gpu.history, on_cpu.history);
    assert_eq!(on_cpu.history[0].values.last().map(|v| v.1.as_str()), Some("mean-error"));
    let built_in = TrainOptions { custom_objective: None, custom_metric: None, gpu: Some(gpu.clone()), ..options };
    let reference = train(&params, &data, &[], &built_in, &mut []).expect("built-in");
    // (The trees: the model files differ in the early-stopping attributes of the logged run.)
    assert!(on_gpu.model.trees == reference.model.trees, "the custom gradients are squared error's");
}

/// A `DMatrix` of rows the caller put in device memory (dense and CSR, with an evaluation set in
/// device memory too) trains on their GPU, sketched and quantised in place, the CPU's model and
/// log; the booster's predictions of those rows are its CPU predictions.
#[test]
fn a_dmatrix_in_device_memory_trains_the_cpus_model() {
    use boost::data::{CsrMatrix, FeatureMatrix};
    use boost::gpu::DeviceCsr;
    use boost::{Booster, DMatrix, PredictOptions};
    let gpu = Arc::new(gpu());
    let rows = if gpu.is_emulated() { 3000 } else { 200_000 };
    let (train_set, test_set) =
        (dataset(rows, 12, SyntheticTask::Binary, 23), dataset(rows / 2, 12, SyntheticTask::Binary, 24));
    let host = |d: &Dataset| match &d.features {
        FeatureMatrix::Dense(m) => DMatrix::from_dense(m.values.clone(), m.rows, m.cols),
        FeatureMatrix::Sparse(m) => {
            DMatrix::from_csr(m.row_ptr.clone(), m.col_indices.clone(), m.values.clone(), m.cols)
        }
    };
    let device = |d: &Dataset, csr: bool| -> DMatrix {
        let FeatureMatrix::Dense(m) = &d.features else { panic!("dense synthetic data") };
        let data = if csr {
            let mut c =
                CsrMatrix { rows: m.rows, cols: m.cols, row_ptr: vec![0], col_indices: Vec::new(), values: Vec::new() };
            for r in 0..m.rows {
                for (j, &v) in m.values[r * m.cols..(r + 1) * m.cols].iter().enumerate() {
                    if !v.is_nan() {
                        c.col_indices.push(j as u32);
                        c.values.push(v);
                    }
                }
                c.row_ptr.push(c.values.len());
            }
            DMatrix::from_device_csr(gpu.clone(), DeviceCsr::upload(&gpu, &c).expect("CSR upload"))
        } else {
            DMatrix::from_device_dense(gpu.clone(), gpu.upload(&m.values).expect("upload"), m.rows, m.cols)
        };
        data.expect("device rows").with_labels(d.info.labels.clone()).expect("labels")
    };
    let with_labels = |d: &Dataset| host(d).expect("rows").with_labels(d.info.labels.clone()).expect("labels");
    let (dtrain, dtest) = (with_labels(&train_set), with_labels(&test_set));
    let pairs = [("objective", "binary:logistic"), ("max_depth", "6"), ("eval_metric", "logloss")];
    let on_cpu = Params::from_pairs(&pairs).expect("params");
    let mut on_gpu = on_cpu.clone();
    on_gpu.set("device", "cuda").expect("device");
    let options = TrainOptions { num_boost_round: 8, verbose_eval: 0, ..Default::default() };
    let reference = Booster::train_with(&on_cpu, &dtrain, &[(&dtest, "test")], &options, &mut []).expect("cpu");
    let json = |b: &Booster| b.model().to_json_string().expect("json");
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    let expected = bits(reference.predict(&dtest, &PredictOptions::default()).expect("cpu predictions"));
    for csr in [false, true] {
        let (train_rows, test_rows) = (device(&train_set, csr), device(&test_set, csr));
        let trained =
            Booster::train_with(&on_gpu, &train_rows, &[(&test_rows, "test")], &options, &mut []).expect("device rows");
        assert_eq!(json(&trained), json(&reference), "csr: {csr}{}", cuda_suffix(&gpu));
        assert_eq!(trained.history(), reference.history(), "csr: {csr}");
        let predicted = trained.predict(&test_rows, &PredictOptions::default()).expect("device predictions");
        assert_eq!(bits(predicted), expected, "csr: {csr}");
    }
}
