//! Prediction throughput and latency of `boost`'s device predictor, for
//! `benches/scripts/predict_side_by_side.py`: a model (XGBoost JSON) over rows of little-endian
//! `f32` (row-major, NaN for missing, no label) read from a file.
//!
//! Usage: predict MODEL.json VALUES.f32 COLS BATCH[,BATCH...] [MARGINS_OUT.f32]
//!
//! For each batch size (`0`: every row of the file), prints lines `batch=N source=device
//! launch=L seconds=S` for rows already in device memory (the best of several calls of
//! `DeviceModel::predict_margin_on_device`, margins left on the device, synchronised), with the
//! launch shape the library picks (`launch=auto`) and with each shape forced (`rows`, `trees`: how
//! the threshold between them was chosen; `binarised`: the oblivious trees' applier, which is
//! `rows` for other models), and one `batch=N source=host launch=auto seconds=S` for
//! rows in host memory (`DeviceModel::predict_margin`: upload, walk, margins read back), and one
//! `batch=N source=cpu launch=cpu seconds=S` for the CPU predictor (`Model::predict_margin`). With
//! `MARGINS_OUT`, the margins of the whole file (device source) are written there, for the
//! script's comparison with XGBoost's.

use std::time::{Duration, Instant};

use boost::data::{DenseMatrix, FeatureMatrix};
use boost::gpu::{DeviceData, DeviceModel, PredictLaunch};
use boost::model::Model;
use boost::objective;
use primitives::Gpu;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: predict MODEL.json VALUES.f32 COLS BATCH[,BATCH...] [MARGINS_OUT.f32]");
        std::process::exit(2);
    }
    let model = Model::load_json(&args[0]).expect("reading the model");
    let objective = objective::from_json(&model.objective).expect("the model's objective");
    let to_margin = |b| objective.prob_to_margin(b);
    let cols: usize = args[2].parse().expect("COLS must be an integer");
    let bytes = std::fs::read(&args[1]).expect("reading the values");
    let values: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let rows = values.len() / cols;
    let gpu = Gpu::new().expect("no usable GPU");
    let mut device_model = DeviceModel::upload(&gpu, &model).expect("uploading the model");
    println!("device: {}", gpu.properties().name);
    println!("trees: {} outputs: {} rows: {rows} cols: {cols}", model.trees.len(), model.num_outputs());
    for batch in args[3].split(',').map(|b| b.parse::<usize>().expect("BATCH must be an integer")) {
        let batch = if batch == 0 { rows } else { batch.min(rows) };
        let slice = &values[..batch * cols];
        let on_device = gpu.upload(slice).expect("uploading the rows");
        for (name, launch) in [
            ("auto", None),
            ("rows", Some(PredictLaunch::Rows)),
            ("trees", Some(PredictLaunch::Trees)),
            ("binarised", Some(PredictLaunch::Binarised)),
        ] {
            device_model.set_launch(launch);
            let device_seconds = best_of(&gpu, batch, || {
                device_model
                    .predict_margin_on_device(
                        &gpu,
                        DeviceData::Dense { values: &on_device, rows: batch, cols },
                        None,
                        to_margin,
                        (0, 0),
                    )
                    .expect("device prediction");
            });
            println!("batch={batch} source=device launch={name} seconds={device_seconds:.6}");
        }
        device_model.set_launch(None);
        let host = FeatureMatrix::Dense(DenseMatrix::new(batch, cols, slice.to_vec()));
        let host_seconds = best_of(&gpu, batch, || {
            device_model.predict_margin(&gpu, &host, None, to_margin, (0, 0)).expect("host prediction");
        });
        println!("batch={batch} source=host launch=auto seconds={host_seconds:.6}");
        // The CPU predictor on every core (the oblivious applier when every tree is oblivious).
        let cpu_seconds = best_of(&gpu, batch, || {
            model.predict_margin(&host, None, to_margin, (0, 0)).expect("CPU prediction");
        });
        println!("batch={batch} source=cpu launch=cpu seconds={cpu_seconds:.6}");
    }
    if let Some(out) = args.get(4) {
        let on_device = gpu.upload(&values).expect("uploading the rows");
        let margins = device_model
            .predict_margin_on_device(
                &gpu,
                DeviceData::Dense { values: &on_device, rows, cols },
                None,
                to_margin,
                (0, 0),
            )
            .expect("device prediction")
            .to_vec(&gpu)
            .expect("reading the margins");
        std::fs::write(out, le_bytes(&margins)).expect("writing the margins");
    }
}

/// The fastest of a few synchronised calls of `predict` (one warm-up first); more calls for small
/// batches, where a call takes microseconds.
fn best_of(gpu: &Gpu, batch: usize, mut predict: impl FnMut()) -> f64 {
    let calls = if batch <= 100_000 { 50 } else { 5 };
    predict();
    gpu.synchronize().expect("synchronize");
    let mut best = Duration::MAX;
    for _ in 0..calls {
        let start = Instant::now();
        predict();
        gpu.synchronize().expect("synchronize");
        best = best.min(start.elapsed());
    }
    best.as_secs_f64()
}

fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}
