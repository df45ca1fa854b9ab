//! Training from external-memory pages through the Rust API, for
//! `benches/scripts/external_gpu_side_by_side.py` (XGBoost's `ExtMemQuantileDMatrix` on the same
//! batch files): batches `x.I.f32` (row-major little-endian `f32`, NaN missing) and `y.I.f32` of
//! DIR read one at a time by a `BatchSource` into pages (`DMatrix::from_batches`), then trained;
//! or, with `--in-core`, every batch read into one in-memory `DMatrix` (not timed) and trained, the
//! reference run.
//!
//! Usage: train_external DIR BATCHES COLS ROUNDS [--in-core] [--cache-dir D] [--host-cache BYTES]
//!        [NAME=VALUE ...]
//!
//! Prints `pages_s=` (building the pages; each pass's seconds and the files' reading time,
//! `pages_passes_s=`, `pages_reading_s=`), `train_s=`, `peak_device_mib=`, `peak_rss_mib=`, the
//! test AUC of `test_x.f32`/`test_y.f32` in DIR (`test_auc=`), the model file's SHA-256 and the
//! training phases (`phase NAME SECONDS`).

use std::time::Instant;

use boost::data::{DenseMatrix, FeatureMatrix};
use boost::learner::{train_matrix, TrainOptions};
use boost::{Batch, BatchSource, Booster, DMatrix, ExternalMemory, Params};
use sha2::{Digest, Sha256};

/// A file of little-endian `f32`s, read straight into the vector (as NumPy's `fromfile` does for
/// XGBoost's side; this machine is little-endian).
fn read_f32(path: &str) -> Vec<f32> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).unwrap_or_else(|e| panic!("opening {path}: {e}"));
    let bytes = file.metadata().unwrap_or_else(|e| panic!("reading {path}: {e}")).len() as usize;
    let mut values = vec![0f32; bytes / 4];
    let read = file.read_exact(bytemuck::cast_slice_mut(&mut values));
    read.unwrap_or_else(|e| panic!("reading {path}: {e}"));
    values
}

/// The batch files of a directory, read one at a time; each pass's start and the time spent
/// reading kept for the report.
struct Files {
    dir: String,
    batches: usize,
    cols: usize,
    next: usize,
    passes: Vec<Instant>,
    reading: f64,
}

impl BatchSource for Files {
    fn reset(&mut self) -> boost::Result<()> {
        self.next = 0;
        self.passes.push(Instant::now());
        Ok(())
    }

    fn next_batch(&mut self) -> boost::Result<Option<Batch>> {
        if self.next == self.batches {
            return Ok(None);
        }
        let start = Instant::now();
        let (x, y) = self.read(self.next);
        self.reading += start.elapsed().as_secs_f64();
        self.next += 1;
        let features = FeatureMatrix::Dense(DenseMatrix::new(y.len(), self.cols, x));
        Ok(Some(Batch { features, labels: y, weights: Vec::new() }))
    }
}

impl Files {
    fn read(&self, i: usize) -> (Vec<f32>, Vec<f32>) {
        (read_f32(&format!("{}/x.{i}.f32", self.dir)), read_f32(&format!("{}/y.{i}.f32", self.dir)))
    }
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap_or("VmHWM: 0 kB");
    line.split_whitespace().nth(1).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

/// The area under the ROC curve of `scores` against 0/1 `labels` (ties share their ranks).
fn auc(scores: &[f32], labels: &[f32]) -> f64 {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let (mut rank_sum, mut i) = (0.0, 0);
    while i < order.len() {
        let j = (i..order.len()).find(|&j| scores[order[j]] != scores[order[i]]).unwrap_or(order.len());
        let rank = (i + j + 1) as f64 / 2.0;
        rank_sum += order[i..j].iter().filter(|&&k| labels[k] > 0.5).count() as f64 * rank;
        i = j;
    }
    let positives = labels.iter().filter(|&&l| l > 0.5).count() as f64;
    let negatives = labels.len() as f64 - positives;
    (rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives)
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut take = |flag: &str, value: bool| -> Option<String> {
        let at = args.iter().position(|a| a == flag)?;
        args.remove(at);
        Some(if value { args.remove(at) } else { String::new() })
    };
    let in_core = take("--in-core", false).is_some();
    let cache_dir = take("--cache-dir", true);
    let host_bytes = take("--host-cache", true).map(|b| b.parse().expect("--host-cache BYTES"));
    if args.len() < 4 {
        eprintln!("usage: train_external DIR BATCHES COLS ROUNDS [--in-core] [--cache-dir D] [--host-cache BYTES] [NAME=VALUE ...]");
        std::process::exit(2);
    }
    let (dir, batches) = (args[0].clone(), args[1].parse().expect("BATCHES"));
    let (cols, rounds) = (args[2].parse().expect("COLS"), args[3].parse().expect("ROUNDS"));
    let pairs: Vec<(String, String)> = args[4..]
        .iter()
        .map(|a| a.split_once('=').map(|(n, v)| (n.to_string(), v.to_string())).expect("NAME=VALUE"))
        .collect();
    let params = Params::from_pairs(&pairs).expect("parameters");
    let mut files = Files { dir: dir.clone(), batches, cols, next: 0, passes: Vec::new(), reading: 0.0 };
    let start = Instant::now();
    let dtrain = if in_core {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for i in 0..batches {
            let (bx, by) = files.read(i);
            x.extend_from_slice(&bx);
            y.extend_from_slice(&by);
        }
        DMatrix::from_dense(x, y.len(), cols).and_then(|d| d.with_labels(y)).expect("rows")
    } else {
        let max_bin = params.tree.max_bin;
        let mut memory = ExternalMemory { max_bin, cache_dir: cache_dir.map(Into::into), ..Default::default() };
        memory.host_bytes = host_bytes.unwrap_or(memory.host_bytes);
        let d = DMatrix::from_batches(&mut files, &memory).expect("pages");
        println!("pages_s={:.3} {}", start.elapsed().as_secs_f64(), d.pages().expect("pages"));
        files.passes.push(Instant::now());
        let passes: Vec<String> =
            files.passes.windows(2).map(|w| format!("{:.2}", (w[1] - w[0]).as_secs_f64())).collect();
        println!("pages_passes_s={} pages_reading_s={:.2}", passes.join(","), files.reading);
        d
    };
    let start = Instant::now();
    let options = TrainOptions { num_boost_round: rounds, verbose_eval: 0, ..Default::default() };
    let trained = train_matrix(&params, &dtrain, &[], &options, &mut []).expect("training");
    let seconds = start.elapsed().as_secs_f64();
    drop(dtrain);
    let peak = trained.peak_device_bytes.unwrap_or(0) as f64 / (1 << 20) as f64;
    println!(
        "train_s={seconds:.3} peak_device_mib={peak:.0} peak_rss_mib={:.0} device={}",
        peak_rss_mib(),
        trained.device
    );
    let json = trained.model.to_json_string().expect("the model's JSON");
    println!("model_sha={:x}", Sha256::digest(json.as_bytes()));
    let (x, y) = (read_f32(&format!("{dir}/test_x.f32")), read_f32(&format!("{dir}/test_y.f32")));
    let booster = Booster::from_model(trained.model).expect("model");
    let test = DMatrix::from_dense(x, y.len(), cols).expect("test rows");
    let scores = booster.predict(&test, &Default::default()).expect("prediction");
    println!("test_auc={:.6}", auc(&scores, &y));
    for (name, time) in &trained.phases.entries {
        println!("phase {name:?} {:.3}", time.as_secs_f64());
    }
}
