//! External-memory pages on the device (`boost::gpu::GpuPages`): each tree grown from its sampled
//! rows gathered into one device page writes the CPU's model of the same pages, which is the
//! in-memory model (`boost/tests/external_memory.rs`): with gradient-based and uniform sampling,
//! without sampling, from pages in host memory and in a cache file, with the rounds on the device
//! and on the host; and `device_memory_limit` bounds the sampled page (the rounds then the
//! host's). On the emulator in `cargo test`, on a GPU with `--features gpu`.

use std::sync::Arc;

use boost::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
use boost::data::{Dataset, DenseMatrix, FeatureMatrix};
use boost::learner::{train_matrix, TrainOptions, Trained};
use boost::param::Params;
use boost::{Batch, BatchSource, DMatrix, ExternalMemory};
use tests::gpu;

/// A dense dataset's rows in batches of `size`.
struct Batches<'a> {
    data: &'a Dataset,
    size: usize,
    next: usize,
}

impl BatchSource for Batches<'_> {
    fn reset(&mut self) -> boost::Result<()> {
        self.next = 0;
        Ok(())
    }

    fn next_batch(&mut self) -> boost::Result<Option<Batch>> {
        let (begin, end) = (self.next, (self.next + self.size).min(self.data.rows()));
        if begin >= end {
            return Ok(None);
        }
        self.next = end;
        let FeatureMatrix::Dense(m) = &self.data.features else { panic!("dense rows") };
        let values = m.values[begin * m.cols..end * m.cols].to_vec();
        let info = &self.data.info;
        let weights = info.weights.get(begin..end).unwrap_or_default().to_vec();
        let features = FeatureMatrix::Dense(DenseMatrix::new(end - begin, m.cols, values));
        Ok(Some(Batch { features, labels: info.labels[begin..end].to_vec(), weights }))
    }
}

/// The device's memory pool is the process's, so its peak (`peak_device_bytes`, checked against
/// `device_memory_limit`) counts every test's buffers: this module's tests run one at a time.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ALONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn pages(data: &Dataset, batch: usize, memory: &ExternalMemory) -> DMatrix {
    let memory = ExternalMemory { feature_types: data.info.feature_types.clone(), ..memory.clone() };
    DMatrix::from_batches(&mut Batches { data, size: batch, next: 0 }, &memory).expect("pages")
}

fn run(pairs: &[(&str, &str)], data: &DMatrix, rounds: usize, gpu: Option<Arc<primitives::Gpu>>) -> Trained {
    let params = Params::from_pairs(pairs).expect("params");
    let options = TrainOptions { num_boost_round: rounds, verbose_eval: 1, gpu, ..Default::default() };
    train_matrix(&params, data, &[(data, "train")], &options, &mut []).expect("training")
}

/// A case's name, rows and parameters.
type Case<'a> = (&'a str, &'a Dataset, Vec<(&'a str, &'a str)>);

/// A case with the bytes a row of its `device_memory_limit`.
type LimitCase<'a> = (&'a str, &'a Dataset, Vec<(&'a str, &'a str)>, usize);

/// Several pages, on the host and in a cache file; the CPU's model and log, and the device grew
/// the trees from sampled pages no larger than the rows with a gradient.
#[test]
fn pages_on_the_device_train_the_cpus_model() {
    let (_alone, gpu) = (one_at_a_time(), Arc::new(gpu()));
    let (rows, cols, rounds) = if gpu.is_emulated() { (3000, 9, 4) } else { (300_000, 28, 20) };
    let spec = |task, categorical, seed, missing_columns| SyntheticSpec {
        rows,
        cols,
        task,
        seed,
        categorical,
        max_categories: 30,
        missing_columns,
        ..Default::default()
    };
    let mut binary = generate(&spec(SyntheticTask::Binary, 0, 41, 2)).unwrap();
    binary.info.weights = (0..rows).map(|i| 0.5 + (i % 7) as f32 / 4.0).collect();
    let multiclass = generate(&spec(SyntheticTask::MultiClass { classes: 3 }, 2, 42, 2)).unwrap();
    // No value missing: dense pages.
    let regression = generate(&spec(SyntheticTask::Regression, 0, 43, 0)).unwrap();
    let base = [("max_depth", "5"), ("max_bin", "64"), ("seed", "5")];
    let sampled = |share| [("sampling_method", "gradient_based"), ("subsample", share)];
    let cases: Vec<Case> = vec![
        (
            "binary, gradient-based 0.1",
            &binary,
            [&base[..], &sampled("0.1"), &[("objective", "binary:logistic")]].concat(),
        ),
        ("binary, no sampling", &binary, [&base[..], &[("objective", "binary:logistic")]].concat()),
        (
            "multiclass with categories, lossguide, gradient-based 0.3",
            &multiclass,
            [
                &base[..],
                &sampled("0.3"),
                &[("objective", "multi:softprob"), ("num_class", "3"), ("grow_policy", "lossguide")],
            ]
            .concat(),
        ),
        (
            "absolute error, uniform 0.5",
            &regression,
            [&base[..], &[("objective", "reg:absoluteerror"), ("subsample", "0.5")]].concat(),
        ),
        (
            "oblivious, gradient-based 0.2",
            &regression,
            [&base[..], &sampled("0.2"), &[("grow_policy", "oblivious")]].concat(),
        ),
    ];
    let cache = tempfile::tempdir().unwrap();
    let page_bytes = if gpu.is_emulated() { 4000 } else { 1 << 20 };
    let memory = ExternalMemory { max_bin: 64, page_bytes, ..Default::default() };
    let on_disk = ExternalMemory { cache_dir: Some(cache.path().into()), host_bytes: page_bytes, ..memory.clone() };
    for (case, data, params) in cases {
        for (memory, batch) in [(&memory, rows / 7), (&on_disk, rows / 3)] {
            let d = pages(data, batch, memory);
            let info = d.pages().expect("pages");
            assert!(info.pages > 1, "{case}: {info}");
            let cpu = run(&params, &d, rounds, None);
            let device = run(&params, &d, rounds, Some(gpu.clone()));
            let (want, got) = (cpu.model.to_json_string().unwrap(), device.model.to_json_string().unwrap());
            let nodes: usize = cpu.model.trees.iter().map(|t| t.len()).sum();
            assert!(nodes > 3 * cpu.model.trees.len(), "{case}: real trees");
            assert!(want == got, "{case} ({info}): the device's model differs from the CPU's");
            assert_eq!(cpu.history, device.history, "{case}");
            let phase = |name: &str| device.phases.entries.iter().any(|(n, _)| *n == name);
            assert!(
                phase("pages: gather the sampled rows") && phase("tree: histograms"),
                "{case}: grown on the device"
            );
            // The gradients and the sample are the device's (absolute error's scale too).
            assert!(phase("pages: gradients, sample and kept rows on the device"), "{case}");
            assert!(!phase("pages: quantise and stage the sampled rows"), "{case}");
            // No limit: from the second tree on, every page is read where the device keeps it.
            assert!(phase("pages: copies kept on the device"), "{case}");
            if let Some(peak) = device.peak_device_bytes {
                eprintln!("{case} ({info}): peak device memory {peak} bytes");
            }
        }
    }
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0, "no cache file is left");
}

/// A tree whose sampled rows do not fit `device_memory_limit` in one page streams the pages a
/// level at a time (their rows' state partly on the host): the CPU's model, within the limit; a
/// limit below one page's buffers stops the run with the typed error.
#[test]
fn the_device_memory_limit_streams_what_does_not_fit() {
    let (_alone, gpu) = (one_at_a_time(), Arc::new(gpu()));
    let rows = if gpu.is_emulated() { 150_000 } else { 2_000_000 };
    let data = generate(&SyntheticSpec { rows, cols: 16, seed: 44, ..Default::default() }).unwrap();
    // Pages of a batch each: the leaf walk uploads one page at a time.
    let d = pages(&data, rows / 8, &ExternalMemory { max_bin: 256, page_bytes: 1, ..Default::default() });
    // Each sampled row costs the device its gradient (16 bytes), its bins (16 bytes) and its
    // place in the row order (24 bytes); the histograms and cuts about 1 MiB: all rows do not fit,
    // a tenth of them does. Streamed, the copies of two pages (words, order and gradients) and
    // one page's bins and partition buffers take about 24 bytes a row of the matrix.
    let limit = (2 << 20) + rows * 24;
    let pairs = |share: &str, limit: usize| {
        Params::from_pairs(&[
            ("objective", "binary:logistic"),
            ("max_depth", "4"),
            ("sampling_method", "gradient_based"),
            ("subsample", share),
            ("device_memory_limit", limit.to_string().as_str()),
        ])
        .unwrap()
    };
    let options = TrainOptions { num_boost_round: 2, verbose_eval: 1, gpu: Some(gpu.clone()), ..Default::default() };
    let cpu_options = TrainOptions { gpu: None, ..options.clone() };
    for share in ["1", "0.1"] {
        let params = pairs(share, limit);
        let device = train_matrix(&params, &d, &[(&d, "train")], &options, &mut []).expect("training");
        let cpu = train_matrix(&params, &d, &[(&d, "train")], &cpu_options, &mut []).expect("training");
        assert!(device.model.to_json_string().unwrap() == cpu.model.to_json_string().unwrap(), "subsample {share}");
        assert_eq!(cpu.history, device.history);
        let phase = |name: &str| device.phases.entries.iter().any(|(n, _)| *n == name);
        // Every row's labels, margins and gradients would take more than half the limit: they
        // stream through the device.
        assert!(phase("pages: the rows' gradients and sample, streamed through the device"));
        let streamed = phase("pages: a level's pass (copy, bins, partition, histograms)");
        assert_eq!(streamed, share == "1", "subsample {share}: streamed only when the sampled page does not fit");
        assert_eq!(streamed, !phase("pages: gather the sampled rows"));
        if let Some(peak) = device.peak_device_bytes {
            assert!(peak as usize <= limit, "peak {peak} within the limit {limit}");
        }
    }
    let tiny = 1 << 20;
    match train_matrix(&pairs("1", tiny), &d, &[], &options, &mut []) {
        Err(boost::Error::DeviceMemoryLimit { bytes, in_use, limit, .. }) => {
            assert_eq!(limit, tiny);
            assert!(bytes + in_use > limit, "{bytes} asked, {in_use} in use");
        }
        other => panic!("expected the limit's error, got {:?}", other.map(|t| t.device)),
    }
}

/// Where every row's labels, margins and gradients do not fit the device, the device's rounds
/// stream them through it in chunks (`HostRows`): the CPU's model and log (an evaluation set
/// beside the training rows, on the host) with weights, gradient-based and uniform sampling, and
/// none (the pages then streamed too).
#[test]
fn rows_streamed_through_the_device_train_the_cpus_model() {
    let (_alone, gpu) = (one_at_a_time(), Arc::new(gpu()));
    let (rows, cols, rounds) = if gpu.is_emulated() { (150_000, 6, 3) } else { (2_000_000, 16, 10) };
    let spec = |task, seed| SyntheticSpec { rows, cols, task, seed, missing_columns: 1, ..Default::default() };
    let mut binary = generate(&spec(SyntheticTask::Binary, 61)).unwrap();
    binary.info.weights = (0..rows).map(|i| 0.5 + (i % 5) as f32 / 3.0).collect();
    let regression = generate(&spec(SyntheticTask::Regression, 62)).unwrap();
    let test = generate(&SyntheticSpec { rows: rows / 10, ..spec(SyntheticTask::Binary, 63) }).unwrap();
    let test = DMatrix::from_dataset(test).unwrap();
    let base = [("max_depth", "5"), ("max_bin", "64"), ("seed", "7")];
    let gradient_based = [&base[..], &[("sampling_method", "gradient_based"), ("subsample", "0.1")]].concat();
    // Bytes a row of the limit: the rows' 20 bytes on the device (label, weight, margin,
    // gradients) take more than half of it; a fifth of the rows' sampled page fits beside the
    // pages' buffers, all of them not. At 12 bytes a row the device keeps only some chunks'
    // gradients between the sampling's passes, at 26 all of them.
    let cases: Vec<LimitCase> = vec![
        (
            "binary, weights, gradient-based 0.1",
            &binary,
            [&gradient_based[..], &[("objective", "binary:logistic")]].concat(),
            26,
        ),
        (
            "binary, weights, gradient-based 0.1, a tight limit",
            &binary,
            [&gradient_based[..], &[("objective", "binary:logistic")]].concat(),
            12,
        ),
        ("binary, weights, no sampling", &binary, [&base[..], &[("objective", "binary:logistic")]].concat(), 26),
        (
            "regression, uniform 0.2",
            &regression,
            [&base[..], &[("objective", "reg:squarederror"), ("subsample", "0.2")]].concat(),
            26,
        ),
    ];
    for (case, data, params, row_bytes) in cases {
        let limit = (1 << 20) + rows * row_bytes;
        let limit_text = limit.to_string();
        let d = pages(data, rows / 6, &ExternalMemory { max_bin: 64, page_bytes: 1, ..Default::default() });
        let params =
            Params::from_pairs(&[&params[..], &[("device_memory_limit", limit_text.as_str())]].concat()).unwrap();
        let options =
            TrainOptions { num_boost_round: rounds, verbose_eval: 1, gpu: Some(gpu.clone()), ..Default::default() };
        let evals = [(&d, "train"), (&test, "test")];
        let device = train_matrix(&params, &d, &evals, &options, &mut []).expect("training");
        let cpu = train_matrix(&params, &d, &evals, &TrainOptions { gpu: None, ..options.clone() }, &mut [])
            .expect("training");
        let nodes: usize = cpu.model.trees.iter().map(|t| t.len()).sum();
        assert!(nodes > 3 * cpu.model.trees.len(), "{case}: real trees");
        assert!(device.model.to_json_string().unwrap() == cpu.model.to_json_string().unwrap(), "{case}");
        assert_eq!(cpu.history, device.history, "{case}");
        let phase = |name: &str| device.phases.entries.iter().any(|(n, _)| *n == name);
        assert!(phase("pages: the rows' labels and margins, page-locked"), "{case}");
        assert!(phase("pages: the rows' gradients and sample, streamed through the device"), "{case}");
        let kept = phase("pages: the kept rows in fixed point, streamed through the device");
        assert_eq!(kept, !case.ends_with("no sampling"), "{case}: the sampled page fits");
        assert_eq!(kept, phase("pages: gather the sampled rows"), "{case}");
        assert!(!phase("pages: quantise and stage the sampled rows"), "{case}: not the host's rounds");
        if let Some(peak) = device.peak_device_bytes {
            assert!(peak as usize <= limit, "{case}: peak {peak} within the limit {limit}");
        }
    }
}

/// Streamed trees (pages a level at a time, each page's rows partitioned and both children's
/// histograms summed over the pages) are the CPU's for every grow policy, categorical splits,
/// missing values, several outputs and the device's rounds, with the pages' row state on the
/// device and on the host.
#[test]
fn streamed_pages_train_the_cpus_model() {
    let (_alone, gpu) = (one_at_a_time(), Arc::new(gpu()));
    let (rows, cols, rounds) = if gpu.is_emulated() { (100_000, 5, 2) } else { (2_000_000, 9, 10) };
    let spec = |task, categorical, seed| SyntheticSpec {
        rows,
        cols,
        task,
        seed,
        categorical,
        max_categories: 40,
        missing_columns: 2,
        ..Default::default()
    };
    let binary = generate(&spec(SyntheticTask::Binary, 2, 51)).unwrap();
    let multiclass = generate(&spec(SyntheticTask::MultiClass { classes: 3 }, 0, 52)).unwrap();
    let base = [("max_depth", "5"), ("max_bin", "64"), ("seed", "5"), ("max_cat_to_onehot", "8")];
    // Bytes a row of the limit: the device's rounds take 20 bytes a row for one output, 52 for
    // three (at most half the limit, or the rounds are the host's), their kept rows 20 more; the
    // sampled page would take 48 beside them (5 or 9 features: two words of bins), so each limit
    // leaves it too little room; what is left (30 to 40 bytes a row) holds a page's buffers.
    let cases: Vec<LimitCase> = vec![
        ("binary, categories, depthwise", &binary, [&base[..], &[("objective", "binary:logistic")]].concat(), 80),
        (
            "binary, lossguide, pages partly on disk",
            &binary,
            [&base[..], &[("objective", "binary:logistic"), ("grow_policy", "lossguide"), ("max_leaves", "12")]]
                .concat(),
            80,
        ),
        ("regression, oblivious", &multiclass, [&base[..], &[("grow_policy", "oblivious")]].concat(), 80),
        (
            "multiclass, host rounds",
            &multiclass,
            [&base[..], &[("objective", "multi:softprob"), ("num_class", "3")]].concat(),
            40,
        ),
        (
            "multiclass, device rounds",
            &multiclass,
            [&base[..], &[("objective", "multi:softprob"), ("num_class", "3")]].concat(),
            112,
        ),
    ];
    let cache = tempfile::tempdir().unwrap();
    for (case, data, params, row_bytes) in cases {
        // Pages in host memory are copied in the builder's layout, those on disk as their words.
        let mut memory = ExternalMemory { max_bin: 64, page_bytes: 1, ..Default::default() };
        if case.ends_with("on disk") {
            (memory.cache_dir, memory.host_bytes) = (Some(cache.path().to_path_buf()), rows * 4);
        }
        let d = pages(data, rows / 5, &memory);
        let info = d.pages().expect("pages");
        assert_eq!(info.disk_bytes > 0 && info.host_bytes > 0, case.ends_with("on disk"), "{case}: {info}");
        let limit = rows * row_bytes;
        let limit_text = limit.to_string();
        let params = [&params[..], &[("device_memory_limit", limit_text.as_str())]].concat();
        let cpu = run(&params, &d, rounds, None);
        let device = run(&params, &d, rounds, Some(gpu.clone()));
        let nodes: usize = cpu.model.trees.iter().map(|t| t.len()).sum();
        assert!(nodes > 3 * cpu.model.trees.len(), "{case}: real trees");
        assert!(device.model.to_json_string().unwrap() == cpu.model.to_json_string().unwrap(), "{case}");
        assert_eq!(cpu.history, device.history, "{case}");
        let phase = |name: &str| device.phases.entries.iter().any(|(n, _)| *n == name);
        assert!(phase("pages: a level's pass (copy, bins, partition, histograms)"), "{case}: streamed");
        assert!(!phase("pages: gather the sampled rows"), "{case}");
        let device_rounds = phase("pages: gradients, sample and kept rows on the device");
        assert_eq!(device_rounds, case.ends_with("device rounds") || !case.starts_with("multiclass"), "{case}");
        if let Some(peak) = device.peak_device_bytes {
            assert!(peak as usize <= limit, "{case}: peak {peak} within the limit {limit}");
        }
    }
}

/// Under a limit that holds the rows' device rounds but only part of the pages, some pages stay
/// on the device and the others are copied for every pass: the CPU's model.
#[test]
fn pages_partly_kept_on_the_device_train_the_cpus_model() {
    let (_alone, gpu) = (one_at_a_time(), Arc::new(gpu()));
    let rows = if gpu.is_emulated() { 200_000 } else { 2_000_000 };
    let data = generate(&SyntheticSpec { rows, cols: 28, seed: 45, ..Default::default() }).unwrap();
    let d = pages(&data, rows / 6, &ExternalMemory { max_bin: 256, page_bytes: 1, ..Default::default() });
    let info = d.pages().expect("pages");
    // Pages of 45.5 bytes a row. The device's rounds take 16 bytes a row (label, margin,
    // gradients: at most half the limit), the first tree about 25 more (the sampled rows, a page
    // copied, histograms); the pages are then kept while they fit half of what is left.
    let limit = rows * 70;
    assert!(info.host_bytes > limit / 2, "{info}: not every page fits");
    let limit_text = limit.to_string();
    let pairs = [
        ("objective", "binary:logistic"),
        ("max_depth", "4"),
        ("sampling_method", "gradient_based"),
        ("subsample", "0.1"),
        ("device_memory_limit", limit_text.as_str()),
    ];
    let device = run(&pairs, &d, 3, Some(gpu.clone()));
    let cpu = run(&pairs, &d, 3, None);
    assert!(device.model.to_json_string().unwrap() == cpu.model.to_json_string().unwrap());
    assert_eq!(cpu.history, device.history);
    let phase = |name: &str| device.phases.entries.iter().any(|(n, _)| *n == name);
    // Some pages kept (not all: see above), the rounds on the device.
    assert!(phase("pages: gradients, sample and kept rows on the device") && phase("pages: copies kept on the device"));
    if let Some(peak) = device.peak_device_bytes {
        assert!(peak as usize <= limit, "peak {peak} within the limit {limit}");
    }
}
