//! Training is deterministic: the same data and parameters give byte-identical model files, run after
//! run and whatever the thread count (fixed-point histogram sums; column and row sampling from one
//! seeded generator on the calling thread).

use std::path::Path;

use boost::data::{read_data, Column, CsvOptions, ReadOptions};
use boost::learner::{train, TrainOptions};
use boost::param::Params;

fn model_text(threads: usize, objective: &[(&str, &str)], path: &str, label: Column) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data").join(path);
    let options = ReadOptions { csv: CsvOptions { label, ..Default::default() }, ..Default::default() };
    let (data, _) = read_data(&file, &options).expect("read");
    let mut pairs = vec![
        ("max_depth", "6"),
        ("subsample", "0.8"),
        ("colsample_bytree", "0.9"),
        ("colsample_bylevel", "0.9"),
        ("colsample_bynode", "0.8"),
        ("seed", "7"),
    ];
    pairs.extend_from_slice(objective);
    let params = Params::from_pairs(&pairs).expect("params");
    let options = TrainOptions { num_boost_round: 15, verbose_eval: 0, ..Default::default() };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
    let trained = pool.install(|| train(&params, &data, &[], &options, &mut [])).expect("train");
    trained.model.to_json_string().expect("json")
}

/// Objective parameters, data file, label column.
type Case = (&'static [(&'static str, &'static str)], &'static str, Column);

#[test]
fn byte_identical_models_for_1_and_2_threads_and_repeated_runs() {
    let cases: [Case; 3] = [
        (&[("objective", "binary:logistic")], "higgs_lgbm_sample/binary.train", Column::Index(0)),
        (&[("objective", "multi:softprob"), ("num_class", "5")], "lgbm_multiclass/multiclass.train", Column::Index(0)),
        (
            &[("objective", "reg:squarederror")],
            "california_housing/housing.train.csv",
            Column::Name("median_house_value".into()),
        ),
    ];
    for (objective, path, label) in cases {
        let one = model_text(1, objective, path, label.clone());
        let two = model_text(2, objective, path, label.clone());
        let again = model_text(2, objective, path, label);
        assert!(one == two, "{path}: 1 and 2 threads differ");
        assert!(two == again, "{path}: two runs differ");
        assert!(one.len() > 10_000, "{path}: a real model ({} bytes)", one.len());
    }
}

/// Rows enough for the parallel steps that split one node's rows into tasks (partitions, node
/// sums, histograms): the same model file for 1, 2, 3, 8 and 16 threads.
#[test]
fn byte_identical_models_for_every_thread_count_on_large_nodes() {
    use boost::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
    let spec = SyntheticSpec {
        rows: 120_000,
        cols: 10,
        task: SyntheticTask::Binary,
        seed: 3,
        missing_columns: 2,
        ..Default::default()
    };
    let data = generate(&spec).expect("synthetic data");
    let options = TrainOptions { num_boost_round: 4, verbose_eval: 0, ..Default::default() };
    // Uniform and gradient-based sampling (its threshold from histograms the threads add).
    for sampling in ["uniform", "gradient_based"] {
        let pairs =
            [("objective", "binary:logistic"), ("max_depth", "6"), ("subsample", "0.5"), ("sampling_method", sampling)];
        let params = Params::from_pairs(&pairs).expect("params");
        let model = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
            let trained = pool.install(|| train(&params, &data, &[], &options, &mut [])).expect("train");
            trained.model.to_json_string().expect("json")
        };
        let one = model(1);
        for threads in [2, 3, 8, 16] {
            assert!(model(threads) == one, "{sampling}: {threads} threads differ from 1");
        }
    }
}
