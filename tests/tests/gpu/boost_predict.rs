//! Prediction on the device (`boost::gpu::DeviceModel`) gives the CPU predictor's margins, bit for
//! bit: models XGBoost 3.4.1 wrote (`boost/tests/data/xgboost/`, binary, regression, multi-class, an
//! exact-method forest, a 2.x-style file) and one trained here, over dense rows (missing values,
//! fewer columns than the model) and the same rows as CSR, whole models and iteration ranges, with
//! and without base margins, rows from the host or already on the device; and the leaf indices.

use std::path::Path;

use boost::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
use boost::data::{CsrMatrix, DenseMatrix, FeatureMatrix};
use boost::gpu::{DeviceCsr, DeviceData, DeviceModel, PredictLaunch};
use boost::learner::{train, TrainOptions};
use boost::model::Model;
use boost::param::Params;
#[cfg(feature = "gpu")]
use boost::Device;
use boost::{Booster, DMatrix, PredictOptions};
use tests::gpu;

pub(crate) fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../boost/tests/data/xgboost").join(name)
}

/// A fixture's rows (CSV with a header, an empty field is missing).
pub(crate) fn rows(case: &str) -> DenseMatrix {
    let text = std::fs::read_to_string(fixture(&format!("{case}.rows.csv"))).expect("fixture rows");
    let mut lines = text.lines();
    let cols = lines.next().expect("header").split(',').count();
    let values: Vec<f32> = lines
        .flat_map(|line| line.split(',').map(|f| if f.is_empty() { f32::NAN } else { f.parse().expect("a number") }))
        .collect();
    DenseMatrix::new(values.len() / cols, cols, values)
}

pub(crate) fn csr(m: &DenseMatrix) -> CsrMatrix {
    let mut csr = CsrMatrix { rows: m.rows, cols: m.cols, row_ptr: vec![0], ..Default::default() };
    for i in 0..m.rows {
        for (j, &v) in m.row(i).iter().enumerate() {
            if !v.is_nan() {
                csr.col_indices.push(j as u32);
                csr.values.push(v);
            }
        }
        csr.row_ptr.push(csr.values.len());
    }
    csr
}

/// Asserts the device's margins are the host's for every iteration range of interest, dense and CSR,
/// with either shape of launch.
fn assert_same_margins(case: &str, model: &Model, dense: DenseMatrix, gpu: &primitives::Gpu) {
    for launch in [None, Some(PredictLaunch::Rows), Some(PredictLaunch::Trees), Some(PredictLaunch::Binarised)] {
        let mut device = DeviceModel::upload(gpu, model).expect("upload");
        device.set_launch(launch);
        assert_same_margins_of(&format!("{case}, launch {launch:?}"), model, &device, dense.clone(), gpu);
    }
}

fn assert_same_margins_of(case: &str, model: &Model, device: &DeviceModel, dense: DenseMatrix, gpu: &primitives::Gpu) {
    let objective = boost::objective::from_json(&model.objective).expect("objective");
    let to_margin = |b| objective.prob_to_margin(b);
    let rounds = model.num_rounds();
    let outputs = model.num_outputs();
    let base_margin: Vec<f32> = (0..dense.rows * outputs).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
    for features in [FeatureMatrix::Sparse(csr(&dense)), FeatureMatrix::Dense(dense)] {
        let mut ranges = vec![(0, 0), (0, 1), (rounds / 2, rounds)];
        if rounds >= 2 {
            ranges.push((1, rounds - 1));
        }
        for &range in &ranges {
            for base in [None, Some(base_margin.as_slice())] {
                let host = model.predict_margin(&features, base, to_margin, range).expect("host");
                let got = device.predict_margin(gpu, &features, base, to_margin, range).expect("device");
                assert_eq!(got.len(), host.len(), "{case} {range:?}");
                let differ = host.iter().zip(&got).position(|(h, d)| h.to_bits() != d.to_bits());
                assert_eq!(
                    differ,
                    None,
                    "{case}, range {range:?}, base margin {}: row-output {differ:?}",
                    base.is_some()
                );
            }
            // The same rows already in device memory (dense or CSR); the margins stay there.
            let (dense, csr);
            let rows = match &features {
                FeatureMatrix::Dense(m) => {
                    dense = gpu.upload(&m.values).expect("upload");
                    DeviceData::Dense { values: &dense, rows: m.rows, cols: m.cols }
                }
                FeatureMatrix::Sparse(m) => {
                    csr = DeviceCsr::upload(gpu, m).expect("CSR upload");
                    DeviceData::Csr(&csr)
                }
            };
            let host = model.predict_margin(&features, None, to_margin, range).expect("host");
            let got = device
                .predict_margin_on_device(gpu, rows, None, to_margin, range)
                .and_then(|margins| Ok(margins.to_vec(gpu)?))
                .expect("device rows");
            assert!(host.iter().zip(&got).all(|(h, d)| h.to_bits() == d.to_bits()), "{case} {range:?}, device rows");
            assert_eq!(host.len(), got.len());
            let host = model.predict_leaf(&features, range).expect("host leaves");
            assert_eq!(device.predict_leaf(gpu, &features, range).expect("device leaves"), host, "{case} {range:?}");
        }
    }
}

#[test]
fn device_predictions_are_the_cpu_predictors() {
    let gpu = gpu();
    // `categorical_splits`: XGBoost's one-hot and partition splits, rows with unseen, negative,
    // fractional and missing categories.
    for case in [
        "binary_logistic",
        "reg_squarederror",
        "multi_softprob",
        "reg_exact_forest",
        "legacy_2x_multi",
        "categorical_splits",
    ] {
        let mut model = Model::load_json(fixture(&format!("{case}.model.json"))).expect("model");
        assert_same_margins(case, &model, rows(case), &gpu);
        // XGBoost's GPU trees split at -Infinity (every present value right); +Infinity sends
        // every finite value left.
        for (t, tree) in model.trees.iter_mut().enumerate().filter(|(_, tree)| tree.left_children[0] != -1) {
            tree.split_conditions[0] = if t % 2 == 0 { f32::NEG_INFINITY } else { f32::INFINITY };
        }
        assert_same_margins(&format!("{case} at infinite roots"), &model, rows(case), &gpu);
    }
    // A model of ours, 3 classes, predicted on rows of one column fewer than it was trained on.
    let spec = SyntheticSpec {
        rows: if gpu.is_emulated() { 1500 } else { 100_000 },
        cols: 9,
        task: SyntheticTask::MultiClass { classes: 3 },
        seed: 5,
        missing_columns: 3,
        ..Default::default()
    };
    let data = generate(&spec).expect("synthetic data");
    let params =
        Params::from_pairs(&[("objective", "multi:softprob"), ("num_class", "3"), ("max_depth", "5")]).unwrap();
    let options = TrainOptions { num_boost_round: 6, verbose_eval: 0, ..Default::default() };
    let model = train(&params, &data, &[], &options, &mut []).expect("training").model;
    let FeatureMatrix::Dense(full) = &data.features else { panic!("synthetic data is dense") };
    let cols = full.cols - 1;
    let values: Vec<f32> = (0..full.rows).flat_map(|i| full.row(i)[..cols].to_vec()).collect();
    let fewer = DenseMatrix::new(full.rows, cols, values);
    assert_same_margins("ours, multi:softprob", &model, fewer.clone(), &gpu);
    // Oblivious trees: the kernels' fast applier (level splits, then leaves by index).
    let params = Params::from_pairs(&[
        ("objective", "multi:softprob"),
        ("num_class", "3"),
        ("max_depth", "7"),
        ("grow_policy", "oblivious"),
    ])
    .unwrap();
    let model = train(&params, &data, &[], &options, &mut []).expect("training").model;
    assert!(model.trees.iter().any(|t| t.max_depth() == 7), "the trees reach the depth limit");
    assert_same_margins("ours, oblivious multi:softprob", &model, fewer, &gpu);
}

#[test]
fn device_prediction_refuses_what_the_host_refuses() {
    let gpu = gpu();
    let model = Model::load_json(fixture("binary_logistic.model.json")).expect("model");
    let device = DeviceModel::upload(&gpu, &model).expect("upload");
    let dense = rows("binary_logistic");
    let features = FeatureMatrix::Dense(dense);
    let identity = |b: f32| b;
    assert!(device.predict_margin(&gpu, &features, None, identity, (0, model.num_rounds() + 1)).is_err());
    assert!(device.predict_margin(&gpu, &features, Some(&[0.0]), identity, (0, 0)).is_err());
    let wide = FeatureMatrix::Dense(DenseMatrix::new(1, model.num_feature + 1, vec![0.0; model.num_feature + 1]));
    assert!(device.predict_margin(&gpu, &wide, None, identity, (0, 0)).is_err());
    // Rows in device memory: more columns than the model's, a shape the buffer does not hold.
    let cols = model.num_feature + 1;
    let values = gpu.upload(&vec![0f32; 2 * cols]).expect("upload");
    let on_device = |rows, cols| {
        let data = DeviceData::Dense { values: &values, rows, cols };
        device.predict_margin_on_device(&gpu, data, None, identity, (0, 0)).err().map(|e| e.to_string())
    };
    assert!(on_device(2, cols).is_some_and(|e| e.contains("features")));
    assert!(on_device(3, cols - 1).is_some_and(|e| e.contains("device values")));
    let infinite = gpu.upload(&[0.0, 1.0, f32::INFINITY, 2.0]).expect("upload");
    let data = DeviceData::Dense { values: &infinite, rows: 2, cols: 2 };
    let refused = device.predict_margin_on_device(&gpu, data, None, identity, (0, 0)).err().map(|e| e.to_string());
    assert!(refused.is_some_and(|e| e.contains("row 1, feature 0: inf is infinite")));
    let csr = CsrMatrix { rows: 1, cols, row_ptr: vec![0, 1], col_indices: vec![cols as u32 - 1], values: vec![1.0] };
    let csr = DeviceCsr::upload(&gpu, &csr).expect("CSR upload");
    assert!(device.predict_margin_on_device(&gpu, DeviceData::Csr(&csr), None, identity, (0, 0)).is_err());
    let mut broken = model.clone();
    broken.trees[0].left_children[0] = 0;
    assert!(DeviceModel::upload(&gpu, &broken).is_err(), "a cycle is refused at upload");
}

/// The front door's device predictions (`Booster`, trees kept on the device between calls) are
/// its CPU predictions, bit for bit: rows in device memory (dense and CSR), and, on a GPU, host
/// rows with `device=cuda`.
#[test]
fn booster_device_predictions_are_its_cpu_predictions() {
    let gpu = gpu();
    for case in ["binary_logistic", "multi_softprob"] {
        let booster = Booster::from_model(Model::load_json(fixture(&format!("{case}.model.json"))).expect("model"))
            .expect("booster");
        let m = rows(case);
        let data = DMatrix::from_dense(m.values.clone(), m.rows, m.cols).expect("rows");
        for options in [PredictOptions::default(), PredictOptions::default().margin().iteration_range(0, 2)] {
            let host = booster.predict(&data, &options).expect("host");
            let values = gpu.upload(&m.values).expect("upload");
            let dense = DeviceData::Dense { values: &values, rows: m.rows, cols: m.cols };
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(
                    &booster
                        .predict_device_data(&gpu, dense, &options)
                        .and_then(|v| Ok(v.to_vec(&gpu)?))
                        .expect("dense")
                ),
                bits(&host),
                "{case}"
            );
            let csr = DeviceCsr::upload(&gpu, &csr(&m)).expect("CSR");
            let sparse = booster.predict_device_data(&gpu, DeviceData::Csr(&csr), &options).expect("CSR rows");
            let sparse = sparse.to_vec(&gpu).expect("read back");
            assert_eq!(bits(&sparse), bits(&host), "{case}, CSR");
            #[cfg(feature = "gpu")]
            {
                let on_gpu = booster.predict(&data, &options.device(Device::Cuda { ordinal: 0 })).expect("device=cuda");
                assert_eq!(bits(&on_gpu), bits(&host), "{case}, device=cuda");
            }
        }
    }
}
