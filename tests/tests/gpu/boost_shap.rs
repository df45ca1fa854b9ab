//! Explanations on the device (`Booster::predict_contributions` / `predict_interactions` of rows
//! in device memory, and with `device=cuda` on a GPU) are the CPU's values, bit for bit: models
//! XGBoost 3.4.1 wrote (binary, regression, multi-class, an exact-method forest, categorical
//! splits) and ours (depthwise and oblivious, trained on synthetic rows with missing values),
//! dense and CSR rows, whole models and iteration ranges. The CPU's values are checked against
//! XGBoost's in `python/tests/test_shap.py` and against Shapley values by enumeration in `boost`.

use boost::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
use boost::data::{DenseMatrix, FeatureMatrix};
use boost::gpu::DeviceCsr;
use boost::learner::{train, TrainOptions};
use boost::model::Model;
use boost::param::Params;
#[cfg(feature = "gpu")]
use boost::Device;
use boost::{Booster, DMatrix, PredictOptions};
use tests::gpu;

use crate::boost_predict::{csr, fixture, rows};

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Asserts that `booster`'s explanations of `m` are the same bits on the device as on the CPU.
fn assert_same_explanations(case: &str, booster: &Booster, m: &DenseMatrix, gpu: &std::sync::Arc<primitives::Gpu>) {
    let host = DMatrix::from_dense(m.values.clone(), m.rows, m.cols).expect("rows");
    let dense = DMatrix::from_device_dense(gpu.clone(), gpu.upload(&m.values).expect("upload"), m.rows, m.cols);
    let sparse = DMatrix::from_device_csr(gpu.clone(), DeviceCsr::upload(gpu, &csr(m)).expect("CSR"));
    let (dense, sparse) = (dense.expect("device rows"), sparse.expect("device CSR"));
    let rounds = booster.model().num_rounds();
    for options in [PredictOptions::default(), PredictOptions::default().iteration_range(1, rounds.max(2) - 1)] {
        for interactions in [false, true] {
            let explain = |data: &DMatrix| match interactions {
                false => booster.predict_contributions(data, &options),
                true => booster.predict_interactions(data, &options),
            };
            let cpu = explain(&host).expect("CPU");
            let what = format!("{case}, {:?}, interactions {interactions}", options.iteration_range);
            assert_eq!(bits(&explain(&dense).expect("device rows")), bits(&cpu), "{what}, device rows");
            assert_eq!(bits(&explain(&sparse).expect("device CSR")), bits(&cpu), "{what}, device CSR rows");
            #[cfg(feature = "gpu")]
            {
                let cuda = options.device(Device::Cuda { ordinal: 0 });
                let on_gpu = match interactions {
                    false => booster.predict_contributions(&host, &cuda),
                    true => booster.predict_interactions(&host, &cuda),
                };
                assert_eq!(bits(&on_gpu.expect("device=cuda")), bits(&cpu), "{what}, device=cuda");
            }
        }
    }
}

#[test]
fn device_explanations_are_the_cpus() {
    let gpu = std::sync::Arc::new(gpu());
    for case in ["binary_logistic", "reg_squarederror", "multi_softprob", "reg_exact_forest", "categorical_splits"] {
        let booster = Booster::from_model(Model::load_json(fixture(&format!("{case}.model.json"))).expect("model"))
            .expect("booster");
        let mut m = rows(case);
        // Explanations take the model's width: pad the rows with missing values.
        let cols = booster.model().num_feature;
        let values = (0..m.rows)
            .flat_map(|i| (0..cols).map(move |j| (i, j)))
            .map(|(i, j)| m.row(i).get(j).copied().unwrap_or(f32::NAN));
        m = DenseMatrix::new(m.rows, cols, values.collect::<Vec<f32>>());
        assert_same_explanations(case, &booster, &m, &gpu);
    }
    // Ours: depthwise and oblivious, 3 classes, rows with missing values.
    let spec = SyntheticSpec {
        rows: if gpu.is_emulated() { 300 } else { 20_000 },
        cols: 8,
        task: SyntheticTask::MultiClass { classes: 3 },
        seed: 9,
        missing_columns: 3,
        ..Default::default()
    };
    let data = generate(&spec).expect("synthetic data");
    let FeatureMatrix::Dense(full) = &data.features else { panic!("synthetic data is dense") };
    for policy in ["depthwise", "oblivious"] {
        let pairs = [("objective", "multi:softprob"), ("num_class", "3"), ("max_depth", "6"), ("grow_policy", policy)];
        let params = Params::from_pairs(&pairs).unwrap();
        let options = TrainOptions { num_boost_round: 4, verbose_eval: 0, ..Default::default() };
        let model = train(&params, &data, &[], &options, &mut []).expect("training").model;
        let booster = Booster::from_model(model).expect("booster");
        assert_same_explanations(&format!("ours, {policy}"), &booster, full, &gpu);
    }
}
