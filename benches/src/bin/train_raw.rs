//! Training through the Rust API from rows in memory, for `benches/scripts/python_side_by_side.py`
//! (the Python package's `train` against the same run here): rows of little-endian `f32`
//! (row-major, NaN for missing) and a label file of `f32`, read into memory (not timed), then
//! `DMatrix::from_dense` and `Booster::train` timed together, as the Python side times
//! `DMatrix(array)` and `train`.
//!
//! Usage: train_raw [--device-rows] VALUES.f32 LABELS.f32 COLS ROUNDS [NAME=VALUE ...]
//!
//! Prints `seconds=S peak_rss_mib=M` (the process's peak resident memory, `VmHWM`, the rows
//! included) and `model_sha=...` (the model file's bytes, to compare with the Python side's).
//! With `--device-rows` the rows are uploaded to the first GPU first and their host copy dropped
//! (not timed), and `DMatrix::from_device_dense` + `Booster::train` are timed, as the Python side
//! times `DMatrix(cupy_array)` and `train`; the peak is then the one reached while training, after
//! a reset (`/proc/self/clear_refs`), and `base_rss_mib=` the resident memory at the reset.

use std::sync::Arc;
use std::time::Instant;

use boost::{Booster, DMatrix, Params};
use primitives::Gpu;
use sha2::{Digest, Sha256};

/// The file's `f32`s, read straight into their vector (one copy in memory, as NumPy's `fromfile`).
fn read_f32(path: &str) -> Vec<f32> {
    let mut file = std::fs::File::open(path).unwrap_or_else(|e| panic!("opening {path}: {e}"));
    let len = file.metadata().map(|m| m.len() as usize / 4).unwrap_or(0);
    let mut values = vec![0f32; len];
    std::io::Read::read_exact(&mut file, bytemuck::cast_slice_mut(&mut values))
        .unwrap_or_else(|e| panic!("reading {path}: {e}"));
    values
}

/// The process's peak resident memory in MiB (`VmHWM` of `/proc/self/status`).
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap_or("VmHWM: 0 kB");
    let kib: f64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    kib / 1024.0
}

/// The process's resident memory now in MiB (`VmRSS`), after resetting its peak (`VmHWM`) to it.
fn reset_peak_rss() -> f64 {
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting the peak resident memory");
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("VmRSS: 0 kB");
    line.split_whitespace().nth(1).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let device_rows = args.first().is_some_and(|a| a == "--device-rows");
    if device_rows {
        args.remove(0);
    }
    if args.len() < 4 {
        eprintln!("usage: train_raw [--device-rows] VALUES.f32 LABELS.f32 COLS ROUNDS [NAME=VALUE ...]");
        std::process::exit(2);
    }
    let (values, labels) = (read_f32(&args[0]), read_f32(&args[1]));
    let cols: usize = args[2].parse().expect("COLS must be an integer");
    let rounds: usize = args[3].parse().expect("ROUNDS must be an integer");
    let pairs: Vec<(String, String)> = args[4..]
        .iter()
        .map(|a| a.split_once('=').map(|(n, v)| (n.to_string(), v.to_string())).expect("NAME=VALUE"))
        .collect();
    let params = Params::from_pairs(&pairs).expect("parameters");
    let rows = values.len() / cols;
    if device_rows {
        let gpu = Arc::new(Gpu::new().expect("opening the GPU"));
        let on_device = gpu.upload(&values).expect("uploading the rows");
        gpu.synchronize().expect("uploading the rows");
        drop(values);
        let base = reset_peak_rss();
        let start = Instant::now();
        let dtrain = DMatrix::from_device_dense(gpu, on_device, rows, cols).and_then(|d| d.with_labels(labels));
        let booster = Booster::train(&params, &dtrain.expect("rows"), rounds, &[]).expect("training");
        let seconds = start.elapsed().as_secs_f64();
        let json = booster.model().to_json_string().expect("the model's JSON");
        println!("seconds={seconds:.3} peak_rss_mib={:.0} base_rss_mib={base:.0}", peak_rss_mib());
        println!("model_sha={:x}", Sha256::digest(json.as_bytes()));
        return;
    }
    let start = Instant::now();
    let dtrain = DMatrix::from_dense(values, rows, cols).and_then(|d| d.with_labels(labels)).expect("rows");
    let booster = Booster::train(&params, &dtrain, rounds, &[]).expect("training");
    let seconds = start.elapsed().as_secs_f64();
    let json = booster.model().to_json_string().expect("the model's JSON");
    println!("seconds={seconds:.3} peak_rss_mib={:.0}", peak_rss_mib());
    println!("model_sha={:x}", Sha256::digest(json.as_bytes()));
}
