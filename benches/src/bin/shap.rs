//! SHAP throughput of `boost`'s device explanations, for `benches/scripts/shap_side_by_side.py`:
//! a model (XGBoost JSON) over rows of little-endian `f32` (row-major, NaN for missing) read from
//! a file.
//!
//! Usage: shap MODEL.json VALUES.f32 COLS CONTRIB_ROWS INTERACTION_ROWS CHECK_ROWS OUT_PREFIX [paths]
//!
//! Prints `kind=contribs rows=N seconds=S` and `kind=interactions rows=N seconds=S`: the best of
//! three calls (after a warm-up) of `Booster::predict_contributions` / `predict_interactions`
//! with `device=cuda` on the first N rows in host memory (upload, sums, values read back). Writes the values of the first
//! CHECK_ROWS rows to `OUT_PREFIX.contribs.f32` and `OUT_PREFIX.interactions.f32` (for the script's
//! comparison with XGBoost's), after checking that they are the CPU's bits. With `paths` (for a
//! model of oblivious trees, which is walked), also `kind=contribs_paths`: the same model with one
//! node's threshold moved up a float, so that its trees are no longer all oblivious and take the
//! generic paths, the same work a path.

use std::time::{Duration, Instant};

use boost::model::Model;
use boost::{Booster, DMatrix, Device, PredictOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 7 {
        eprintln!("usage: shap MODEL.json VALUES.f32 COLS CONTRIB_ROWS INTERACTION_ROWS CHECK_ROWS OUT_PREFIX");
        std::process::exit(2);
    }
    let model = Model::load_json(&args[0]).expect("reading the model");
    let booster = Booster::from_model(model.clone()).expect("a booster");
    let cols: usize = args[2].parse().expect("COLS");
    let bytes = std::fs::read(&args[1]).expect("reading the values");
    let values: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let rows = |n: usize| DMatrix::from_dense(values[..n * cols].to_vec(), n, cols).expect("rows");
    let count = |i: usize| -> usize { args[i].parse().expect("a row count") };
    let (contrib_rows, interaction_rows, check_rows) = (count(3), count(4), count(5));
    let cuda = PredictOptions::default().device(Device::Cuda { ordinal: 0 });
    println!("device={}", booster.open_device(cuda.device).expect("a GPU"));
    for (kind, n) in [("contribs", contrib_rows), ("interactions", interaction_rows)] {
        let explain = |data: &DMatrix, options: &PredictOptions| match kind {
            "contribs" => booster.predict_contributions(data, options),
            _ => booster.predict_interactions(data, options),
        };
        let check = rows(check_rows);
        let on_gpu = explain(&check, &cuda).expect("device explanation");
        let on_cpu = explain(&check, &PredictOptions::default()).expect("CPU explanation");
        let same = on_gpu.iter().zip(&on_cpu).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same && on_gpu.len() == on_cpu.len(), "{kind}: the device's values are not the CPU's");
        let out: Vec<u8> = on_gpu.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(format!("{}.{kind}.f32", args[6]), out).expect("writing the values");
        let best = best_of(|| explain(&rows(n), &cuda).expect("device explanation"));
        println!("kind={kind} rows={n} seconds={best:.4}");
        eprintln!("{kind}: {n} rows in {best:.4} s");
    }
    if args.get(7).map(String::as_str) == Some("paths") {
        let mut nudged = model;
        let tree = &mut nudged.trees[0];
        assert!(tree.split_conditions.len() >= 7, "a tree of at least two levels");
        tree.split_conditions[2] = tree.split_conditions[2].next_up();
        let booster = Booster::from_model(nudged).expect("a booster");
        let data = rows(contrib_rows);
        let best = best_of(|| booster.predict_contributions(&data, &cuda).expect("device explanation"));
        println!("kind=contribs_paths rows={contrib_rows} seconds={best:.4}");
        eprintln!("contributions on the paths: {contrib_rows} rows in {best:.4} s");
    }
}

/// The best of three calls of `explain` after a warm-up, in seconds.
fn best_of(explain: impl Fn() -> Vec<f32>) -> f64 {
    let mut best = Duration::MAX;
    for call in 0..4 {
        let start = Instant::now();
        let values = explain();
        let took = start.elapsed();
        assert!(!values.is_empty());
        if call > 0 {
            best = best.min(took);
        }
    }
    best.as_secs_f64()
}
