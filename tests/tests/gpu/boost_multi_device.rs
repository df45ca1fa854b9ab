//! Trees grown over several devices (`boost::gpu::MultiGpuTrainer`: rows in shards, histograms
//! summed over the devices) are the one device's, node for node and row for row: depthwise,
//! lossguide and oblivious growth, on the emulators in `cargo test` and on the GPUs of a machine
//! (the sums through host memory, and through NCCL and peer access where there are two GPUs).

use boost::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
use boost::gpu::{Communicator, GpuTrainer, HostStaged, MultiGpuTrainer, Nccl, PeerSum};
use boost::param::Params;
use boost::quantile::QuantileCuts;
use boost::GradientPair;
use rand::SeedableRng;

#[test]
fn trees_over_devices_are_the_one_devices() {
    let (owned, ordinals) = tests::gpus(2);
    let gpus: Vec<&primitives::Gpu> = owned.iter().collect();
    let rows = if gpus[0].is_emulated() { 6000 } else { 300_000 };
    let spec = SyntheticSpec {
        rows,
        cols: 10,
        task: SyntheticTask::Regression,
        seed: 8,
        missing_columns: 3,
        ..Default::default()
    };
    let data = generate(&spec).expect("synthetic data");
    let cuts = QuantileCuts::build(&data.features, &[], 256);
    let gradients: Vec<GradientPair<f32>> =
        data.info.labels.iter().enumerate().map(|(i, &y)| GradientPair::new(0.5 - y, 0.25 + (i % 4) as f32)).collect();
    let features: Vec<u32> = (0..10).collect();
    let policies: [&[(&str, &str)]; 3] = [
        &[("max_depth", "6")],
        &[("grow_policy", "lossguide"), ("max_leaves", "31"), ("max_depth", "0")],
        &[("grow_policy", "oblivious"), ("max_depth", "5")],
    ];
    for policy in policies {
        let params = Params::from_pairs(policy).expect("params").tree;
        let mut one = GpuTrainer::from_features(gpus[0], &data.features, &cuts).expect("one device");
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let expected = one.build_tree(&params, &gradients, &features, &mut rng).expect("one device's tree");
        assert!(expected.tree.len() > 15, "{policy:?}: a tree worth comparing");
        // NCCL takes distinct CUDA devices: with fewer than two GPUs only the host's sums run.
        let distinct = !gpus[0].is_emulated() && ordinals[0] != ordinals[1];
        let mut communicators: Vec<(&str, Box<dyn Communicator>)> = vec![("host", Box::new(HostStaged))];
        if distinct {
            communicators.push(("nccl", Box::new(Nccl::new(&gpus).expect("NCCL over the machine's GPUs"))));
            communicators.push(("peer", Box::new(PeerSum::new(&gpus).expect("peer access between the GPUs"))));
        } else {
            eprintln!("devices {ordinals:?}: the NCCL and peer sums need two GPUs and are not run here");
        }
        for (name, communicator) in communicators {
            let mut multi = MultiGpuTrainer::from_features(&gpus, &data.features, &cuts, communicator)
                .expect("the devices' shards");
            assert_eq!(multi.shards().len(), 2);
            let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
            let got = multi.build_tree(&params, &gradients, &features, &mut rng).expect("the devices' tree");
            assert_eq!(got.tree, expected.tree, "{policy:?} over devices {ordinals:?}, {name} sums");
            assert_eq!(got.positions, expected.positions, "{policy:?} over devices {ordinals:?}, {name} sums");
        }
    }
}

/// Whole training runs with `n_gpus` write the CPU's model file byte for byte, with the same
/// evaluation log (an evaluation set, early stopping): row and column sampling, weights, base
/// margins, a multi-class objective (whole rounds on the devices), absolute error (its scale sums
/// every device's rows: the host's gradients); uniform and gradient-based sampling (one threshold from every
/// device's histograms). On the emulators (2 and 3 devices) and on a
/// machine's GPUs (2, where it has them).
#[test]
fn training_over_devices_writes_the_cpus_model() {
    use boost::data::Dataset;
    use boost::learner::{train, TrainOptions};
    use std::sync::Arc;

    let gpu = Arc::new(tests::gpu());
    let counts: &[usize] = if gpu.is_emulated() {
        &[2, 3]
    } else if tests::gpus(2).1 == [0, 1] {
        &[2]
    } else {
        eprintln!("one GPU: training over several devices is not run here");
        &[]
    };
    let rows = if gpu.is_emulated() { 5000 } else { 200_000 };
    let data = |seed, task| {
        let spec = SyntheticSpec { rows, cols: 8, task, seed, missing_columns: 2, ..Default::default() };
        generate(&spec).expect("synthetic data")
    };
    let cases: [(&[(&str, &str)], SyntheticTask); 3] = [
        (
            &[("objective", "binary:logistic"), ("max_depth", "5"), ("subsample", "0.8"), ("colsample_bytree", "0.7")],
            SyntheticTask::Binary,
        ),
        (
            &[
                ("objective", "multi:softprob"),
                ("num_class", "3"),
                ("max_depth", "4"),
                ("subsample", "0.5"),
                ("sampling_method", "gradient_based"),
            ],
            SyntheticTask::MultiClass { classes: 3 },
        ),
        (
            &[
                ("objective", "reg:absoluteerror"),
                ("grow_policy", "lossguide"),
                ("max_leaves", "15"),
                ("subsample", "0.3"),
                ("sampling_method", "gradient_based"),
            ],
            SyntheticTask::Regression,
        ),
    ];
    for (params, task) in cases {
        let (mut train_set, mut valid): (Dataset, Dataset) = (data(1, task), data(2, task));
        if task == SyntheticTask::Binary {
            // Categorical features: one-hot and partition splits, chosen on the first device.
            categorize(&mut train_set);
            categorize(&mut valid);
        }
        let multi_class = matches!(task, SyntheticTask::MultiClass { .. });
        if multi_class {
            // Base margins of the data: each device starts from its rows' own.
            train_set.info.base_margin = (0..rows * 3).map(|i| (i % 5) as f32 * 0.1 - 0.2).collect();
        } else {
            train_set.info.weights = (0..rows).map(|i| 0.5 + (i % 3) as f32 * 0.5).collect();
        }
        // Element-wise objectives and the softmax run whole rounds on the devices; absolute error's
        // scale sums over every device's rows, so it takes the host's gradients.
        let device_rounds = !params.contains(&("objective", "reg:absoluteerror"));
        let run = |pairs: &[(&str, &str)], gpu: Option<Arc<primitives::Gpu>>| {
            let params = Params::from_pairs(pairs).expect("params");
            let options = TrainOptions {
                num_boost_round: 6,
                verbose_eval: 0,
                gpu,
                early_stopping_rounds: Some(2),
                ..Default::default()
            };
            train(&params, &train_set, &[(&train_set, "train"), (&valid, "valid")], &options, &mut [])
                .expect("training")
        };
        let cpu = run(params, None);
        for &n in counts {
            let n_gpus = n.to_string();
            let mut pairs = params.to_vec();
            pairs.push(("n_gpus", &n_gpus));
            let multi = run(&pairs, Some(gpu.clone()));
            assert_eq!(multi.device.matches(", ").count(), n - 1, "{params:?}: devices {}", multi.device);
            let rounds_on_devices = multi.phases.entries.iter().any(|(name, _)| *name == "tree: gradients");
            assert_eq!(rounds_on_devices, device_rounds, "{params:?}: rounds on the devices");
            // The training set's metrics too (sums of row terms): the margins stay there.
            let metrics_on_devices = multi.phases.entries.iter().any(|(name, _)| *name == "metrics on the device");
            assert_eq!(metrics_on_devices, device_rounds, "{params:?}: metrics on the devices");
            assert_eq!(
                multi.model.to_json_string().unwrap(),
                cpu.model.to_json_string().unwrap(),
                "{params:?} on {n} devices"
            );
            assert_eq!(multi.history, cpu.history, "{params:?} on {n} devices");
        }
    }
}

/// Columns 6 and 7 made categorical, of 3 and 50 categories coded from columns 0 and 1.
fn categorize(data: &mut boost::data::Dataset) {
    let boost::data::FeatureMatrix::Dense(m) = &mut data.features else { panic!("dense synthetic rows") };
    let cols = m.cols;
    for values in m.values.make_mut().chunks_exact_mut(cols) {
        for (f, categories) in [(6, 3.0f32), (7, 50.0)] {
            let v = values[f - 6];
            values[f] = if v.is_nan() { f32::NAN } else { ((v.abs() * categories * 5.0) % categories).floor() };
        }
    }
    data.info.feature_types = (0..cols).map(|f| if f >= 6 { "c" } else { "q" }.to_string()).collect();
}

/// Ranking over the devices (groups of many sizes, crossing the shards' boundaries; the host's
/// LambdaMART gradients, every tree on the devices) writes the CPU's model and evaluation log.
#[test]
fn ranking_over_devices_writes_the_cpus_model() {
    use boost::learner::{train, TrainOptions};
    use std::sync::Arc;

    let gpu = Arc::new(tests::gpu());
    let devices = if gpu.is_emulated() || tests::gpus(2).1 == [0, 1] { 2 } else { 1 };
    let rows = if gpu.is_emulated() { 5000 } else { 200_000 };
    let spec = SyntheticSpec { rows, cols: 8, task: SyntheticTask::Regression, seed: 3, ..Default::default() };
    let mut data = generate(&spec).expect("synthetic data");
    data.info.labels = data.info.labels.iter().map(|&m| (m + 2.0).clamp(0.0, 4.0).floor()).collect();
    let mut offsets = vec![0];
    for size in [3usize, 41, 1, 17, 90, 8].into_iter().cycle() {
        let last = *offsets.last().unwrap();
        if last + size >= rows {
            break;
        }
        offsets.push(last + size);
    }
    offsets.push(rows);
    data.info.group_ptr = offsets;
    let options = TrainOptions { num_boost_round: 5, verbose_eval: 0, ..Default::default() };
    let pairs = [("objective", "rank:ndcg"), ("max_depth", "5"), ("eval_metric", "ndcg@10")];
    let cpu = train(&Params::from_pairs(&pairs).unwrap(), &data, &[(&data, "train")], &options, &mut []).unwrap();
    let n_gpus = devices.to_string();
    let mut pairs = pairs.to_vec();
    pairs.push(("n_gpus", n_gpus.as_str()));
    let options = TrainOptions { gpu: Some(gpu), ..options };
    let multi = train(&Params::from_pairs(&pairs).unwrap(), &data, &[(&data, "train")], &options, &mut []).unwrap();
    assert_eq!(multi.device.matches(", ").count(), devices - 1, "devices {}", multi.device);
    assert_eq!(multi.model.to_json_string().unwrap(), cpu.model.to_json_string().unwrap(), "{devices} devices");
    assert_eq!(multi.history, cpu.history);
}

/// `n_gpus` takes a GPU and the `hist` method; other runs are refused naming the parameter.
#[test]
fn n_gpus_without_a_gpu_or_with_exact_is_an_error() {
    use boost::learner::{train, TrainOptions};
    let spec = SyntheticSpec { rows: 300, cols: 4, task: SyntheticTask::Regression, seed: 1, ..Default::default() };
    let data = generate(&spec).expect("synthetic data");
    let gpu = std::sync::Arc::new(tests::gpu());
    for (pairs, gpu) in [
        (&[("n_gpus", "2"), ("device", "cpu")][..], None),
        (&[("n_gpus", "2"), ("tree_method", "exact")][..], Some(gpu)),
    ] {
        let params = Params::from_pairs(pairs).expect("params");
        let options = TrainOptions { num_boost_round: 1, verbose_eval: 0, gpu, ..Default::default() };
        let error = train(&params, &data, &[], &options, &mut []).err().expect("refused");
        assert!(error.to_string().starts_with("parameter `n_gpus`"), "{pairs:?}: {error}");
    }
}

/// Synthetic rows made in the first device's memory are the host's, bit for bit, and training on
/// them over the devices (each shard copied from the first device to its own) writes the CPU's
/// model of the host's rows: the path of `boost train synthetic:ROWS n_gpus=K`.
#[test]
fn device_rows_over_devices_write_the_cpus_model() {
    use boost::data::synthetic::generate_on_device;
    use boost::learner::{train, train_matrix, TrainOptions};
    use boost::DMatrix;
    use std::sync::Arc;

    let gpu = Arc::new(tests::gpu());
    let rows = if gpu.is_emulated() { 6000 } else { 300_000 };
    let spec = SyntheticSpec { rows, cols: 12, seed: 5, ..Default::default() };
    let host = generate(&spec).expect("synthetic data");
    let (values, labels) = generate_on_device(&gpu, &spec, 0..rows).expect("rows on the device");
    let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let host_values = match &host.features {
        boost::data::FeatureMatrix::Dense(m) => m.values.clone(),
        boost::data::FeatureMatrix::Sparse(_) => unreachable!("synthetic rows are dense"),
    };
    assert_eq!(bits(values.to_vec(&gpu).unwrap()), bits(host_values.to_vec()), "values");
    let labels = labels.to_vec(&gpu).unwrap();
    assert_eq!(bits(labels.clone()), bits(host.info.labels.clone()), "labels");
    let matrix = DMatrix::from_device_dense(gpu.clone(), values, rows, 12).unwrap().with_labels(labels).unwrap();
    let options = TrainOptions { num_boost_round: 4, verbose_eval: 0, ..Default::default() };
    let pairs = [("objective", "binary:logistic"), ("max_depth", "6"), ("subsample", "0.9")];
    let cpu = train(&Params::from_pairs(&pairs).unwrap(), &host, &[(&host, "train")], &options, &mut []).unwrap();
    let devices = if gpu.is_emulated() || tests::gpus(2).1 == [0, 1] { 2 } else { 1 };
    let n_gpus = devices.to_string();
    let mut pairs = pairs.to_vec();
    pairs.extend([("device", "cuda"), ("n_gpus", n_gpus.as_str())]);
    let params = Params::from_pairs(&pairs).unwrap();
    let multi = train_matrix(&params, &matrix, &[(&matrix, "train")], &options, &mut []).unwrap();
    assert_eq!(multi.device.matches(", ").count(), devices - 1, "devices {}", multi.device);
    assert_eq!(multi.model.to_json_string().unwrap(), cpu.model.to_json_string().unwrap(), "{devices} devices");
    assert_eq!(multi.history, cpu.history);
}
