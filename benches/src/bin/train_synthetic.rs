//! GPU training on `boost generate`'s rows made in the device's memory, without writing the model
//! (a model of partition splits over a million categories lists most of them in every such split:
//! gigabytes of JSON), for `benches/scripts/categorical_side_by_side.py`.
//!
//! Usage: train_synthetic ROWS COLS CATEGORICAL ROUNDS [NAME=VALUE ...]
//!
//! Times `DMatrix::from_device_dense` and `Booster::train` together (the cuts, the quantised matrix
//! and the trees, from rows in device memory), then evaluates the test AUC on 1M other rows (seed
//! 1) and prints `seconds=S test_auc=A peak_device_mib=M` and the training phases.

use std::sync::Arc;
use std::time::Instant;

use boost::data::synthetic::{feature_types, generate_on_device, SyntheticSpec};
use boost::{Booster, DMatrix, Params};
use primitives::{DeviceKind, Gpu};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: train_synthetic ROWS COLS CATEGORICAL ROUNDS [NAME=VALUE ...]");
        std::process::exit(2);
    }
    let number = |i: usize| args[i].parse::<usize>().unwrap_or_else(|_| panic!("`{}` is not a count", args[i]));
    let (rows, cols, categorical, rounds) = (number(0), number(1), number(2), number(3));
    let pairs: Vec<(String, String)> = args[4..]
        .iter()
        .map(|a| a.split_once('=').map(|(n, v)| (n.to_string(), v.to_string())).expect("NAME=VALUE"))
        .collect();
    let params = Params::from_pairs(&pairs).expect("parameters");
    let kind = DeviceKind::from_env_or(DeviceKind::Cuda { ordinal: 0 }).expect("PRIMITIVES_DEVICE");
    let gpu = Arc::new(Gpu::with_kind(kind).expect("opening the GPU"));
    let matrix = |seed: u64, rows: usize| {
        let spec = SyntheticSpec { rows, cols, categorical, seed, ..Default::default() };
        let (values, labels) = generate_on_device(&gpu, &spec, 0..rows).expect("synthetic rows");
        gpu.synchronize().expect("synthetic rows");
        (spec, values, labels.to_vec(&gpu).expect("labels"))
    };
    let (spec, values, labels) = matrix(0, rows);
    let start = Instant::now();
    let mut dtrain = DMatrix::from_device_dense(gpu.clone(), values, rows, cols).expect("rows");
    dtrain.set_feature_types(feature_types(&spec)).expect("feature types");
    let dtrain = dtrain.with_labels(labels).expect("labels");
    let booster = Booster::train(&params, &dtrain, rounds, &[]).expect("training");
    let seconds = start.elapsed().as_secs_f64();
    let usage = gpu.memory_usage().expect("the device's memory");
    let peak = usage.map_or(0.0, |u| u.peak_bytes as f64 / (1 << 20) as f64);
    drop(dtrain);
    let test_rows = rows.min(1_000_000);
    let (spec, values, labels) = matrix(1, test_rows);
    let mut dtest = DMatrix::from_device_dense(gpu.clone(), values, test_rows, cols).expect("test rows");
    dtest.set_feature_types(feature_types(&spec)).expect("feature types");
    let auc = booster.evaluate(&dtest.with_labels(labels).expect("labels"), &["auc"]).expect("test auc")[0].1;
    println!("seconds={seconds:.3} test_auc={auc:.5} peak_device_mib={peak:.0}");
}
