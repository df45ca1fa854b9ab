//! The quantile cuts of dense rows in device memory (`boost::gpu::device_cuts`, XGBoost's sketch on
//! the device) against the host's (`QuantileCuts::build`, every core), for
//! `benches/scripts/cuts_side_by_side.py`: rows of little-endian `f32` (row-major, NaN for
//! missing, no label) read from a file.
//!
//! Usage: sketch VALUES.f32 COLS MAX_BIN
//!
//! Prints `device seconds=S` (the best of 3 calls, the rows already uploaded; the cuts read back)
//! with the device memory held at its peak (the rows included), then the same with the sketch's
//! buffers unbounded (every column at once) and held to 4 and 1 GiB (`budget=B`: the columns
//! sketched in more groups), `host seconds=S` (one call),
//! and whether the cuts are the same bits.

use std::time::{Duration, Instant};

use boost::data::{DenseMatrix, FeatureMatrix};
use boost::gpu::{device_cuts, device_cuts_within};
use boost::quantile::QuantileCuts;
use primitives::Gpu;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: sketch VALUES.f32 COLS MAX_BIN");
        std::process::exit(2);
    }
    let cols: usize = args[1].parse().expect("COLS must be an integer");
    let max_bin: usize = args[2].parse().expect("MAX_BIN must be an integer");
    let bytes = std::fs::read(&args[0]).expect("reading the values");
    let values: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let rows = values.len() / cols;
    let gpu = Gpu::new().expect("no usable GPU");
    println!("device: {}", gpu.properties().name);
    let on_device = gpu.upload(&values).expect("uploading the rows");
    let mut device = None;
    for budget in [None, Some(usize::MAX), Some(4usize << 30), Some(1 << 30)] {
        let mut best = Duration::MAX;
        gpu.reset_peak_memory().expect("resetting the peak");
        for _ in 0..3 {
            let start = Instant::now();
            let cuts = match budget {
                None => device_cuts(&gpu, &on_device, (rows, cols), None, max_bin),
                Some(b) => device_cuts_within(&gpu, &on_device, (rows, cols), None, max_bin, b),
            };
            best = best.min(start.elapsed());
            let cuts = cuts.expect("device cuts");
            assert!(device.as_ref().is_none_or(|d| *d == cuts), "the budget changed the cuts");
            device = Some(cuts);
        }
        let peak = gpu.memory_usage().ok().flatten().map_or(0, |m| m.peak_bytes) as f64 / (1u64 << 20) as f64;
        let budget = budget.map_or("default".to_string(), |b| b.to_string());
        println!("device seconds={:.6} budget={budget} peak MiB={peak:.0}", best.as_secs_f64());
    }
    let features = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values));
    let start = Instant::now();
    let host = QuantileCuts::build(&features, &[], max_bin);
    println!("host seconds={:.6} threads={}", start.elapsed().as_secs_f64(), rayon_threads());
    let same = device.as_ref().is_some_and(|d| {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        d.cut_ptrs == host.cut_ptrs && bits(&d.cut_values) == bits(&host.cut_values)
    });
    println!("same cuts: {same} ({} bins)", host.total_bins());
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
