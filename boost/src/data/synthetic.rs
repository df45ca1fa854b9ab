//! Synthetic data with a known non-linear target and missing values, for tests and benchmarks.
//!
//! Features are independent standard normals. The margin is
//!
//! ```text
//! m = x0 - 0.8 x1 + 0.6 x2 - 0.4 x3 + 0.2 x4      (linear)
//!   + sin(2 x5)                                    (non-monotone)
//!   + x6 x7                                        (interaction)
//!   + |x8| - sqrt(2/pi)                            (symmetric, centred)
//!   + noise * N(0, 1)
//! ```
//!
//! (terms whose feature is beyond `cols` are left out, and so are the `categorical` last columns,
//! which hold category codes instead, each category adding its effect). The binary label is `m > 0`, the regression
//! label `m`. The centring keeps the classes balanced. `missing_columns` columns spread evenly over
//! the features (`k * cols / missing_columns`, so the first is the strongest linear feature) lose each
//! value with probability `missing_fraction`, independently of everything else; the label is computed
//! before, from the full values.
//!
//! Determinism: rows are generated in chunks of [`ROWS_PER_CHUNK`], chunk `c` from ChaCha8 with the
//! seed in its key and `c` as its stream, so the data depends only on the spec, not on the thread
//! count. Uniforms come from the generator's 64-bit words by a fixed conversion and normals by
//! Box-Muller with `libm`'s `log`, `sin` and `cos` (not the platform's), so the values are the same
//! bits on every platform. The generator is `boost_kernels::synthetic`, the source the device runs
//! too: [`generate_on_device`] makes the same rows in a GPU's memory.

use std::ops::Range;

use boost_kernels::entry;
use boost_kernels::synthetic::{self as kernel, SyntheticRows};
use primitives::{DeviceBuffer, Gpu, LaunchConfig};
use rayon::prelude::*;

use super::{Dataset, DenseMatrix, FeatureMatrix, MetaInfo};
use crate::{Error, Result};

/// Rows generated from one generator stream.
pub const ROWS_PER_CHUNK: usize = kernel::ROWS_PER_CHUNK as usize;

/// What the label is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyntheticTask {
    /// 1 where the margin is positive, 0 elsewhere.
    #[default]
    Binary,
    /// The margin itself.
    Regression,
    /// `classes` classes of about equal size: class `k` where the margin's approximate normal CDF
    /// falls in `[k / classes, (k + 1) / classes)`, so the classes are ordered by the margin.
    MultiClass {
        /// The number of classes: labels `0..classes`.
        classes: u32,
    },
}

/// What [`generate`] makes.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticSpec {
    /// Rows (default 10 000).
    pub rows: usize,
    /// Feature columns (default 28, as HIGGS); at least 9 for every term of the target to be present.
    pub cols: usize,
    /// The probability that a value of a missing column is missing (default 0.05).
    pub missing_fraction: f64,
    /// How many columns have missing values (default 4).
    pub missing_columns: usize,
    /// The standard deviation of the noise added to the margin, the difficulty knob (default 1; the
    /// margin's other terms have a variance of about 4).
    pub noise: f64,
    /// What the labels are.
    pub task: SyntheticTask,
    /// The random generator's seed: the same seed, the same rows.
    pub seed: u64,
    /// How many of the last columns are categorical (default 0): codes of 10, 100, 1,000, 10,000,
    /// 100,000, 1,000,000, 10 and 1,000 categories (then again), skewed toward the small codes,
    /// each category adding its own effect in [-1, 1) to the margin; the data's feature types
    /// say `c` for them.
    pub categorical: usize,
    /// The most categories of a categorical column (0: no cut), for small tests.
    pub max_categories: u32,
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        SyntheticSpec {
            rows: 10_000,
            cols: 28,
            missing_fraction: 0.05,
            missing_columns: 4,
            noise: 1.0,
            task: SyntheticTask::Binary,
            seed: 0,
            categorical: 0,
            max_categories: 0,
        }
    }
}

/// A dense dataset as `spec` describes (see the [module](self) docs); an error for a spec out of range.
pub fn generate(spec: &SyntheticSpec) -> Result<Dataset> {
    let (values, labels) = generate_rows(spec, 0..spec.rows)?;
    Ok(Dataset {
        features: FeatureMatrix::Dense(DenseMatrix { rows: spec.rows, cols: spec.cols, values: values.into() }),
        info: MetaInfo { labels, feature_types: feature_types(spec), ..MetaInfo::default() },
    })
}

/// Rows `range` of [`generate`]'s data, on the host: the values (row-major, `NaN` where missing)
/// and the labels, so that a writer holds a block of rows at a time, never the table. `range`
/// starts at a multiple of [`ROWS_PER_CHUNK`] (each chunk is its own generator stream).
pub fn generate_rows(spec: &SyntheticSpec, range: Range<usize>) -> Result<(Vec<f32>, Vec<f32>)> {
    check(spec)?;
    if !range.start.is_multiple_of(ROWS_PER_CHUNK) || range.start > range.end || range.end > spec.rows {
        return Err(Error::param(
            "rows",
            format!(
                "rows {}..{} of {}: a range of rows starts at a multiple of {ROWS_PER_CHUNK}",
                range.start, range.end, spec.rows
            ),
        ));
    }
    let (rows, cols, first_chunk) = (kernel_spec(spec), spec.cols, range.start / ROWS_PER_CHUNK);
    let mut values = vec![0f32; range.len() * cols];
    let mut labels = vec![0f32; range.len()];
    values.par_chunks_mut(ROWS_PER_CHUNK * cols).zip(labels.par_chunks_mut(ROWS_PER_CHUNK)).enumerate().for_each(
        |(chunk, (values, labels))| {
            let value = |r: usize, c: usize, v: f32| values[r * cols + c] = v;
            let chunk = (first_chunk + chunk) as u64;
            kernel::fill_chunk(&rows, chunk, labels.len(), value, |r, y| labels[r] = y);
        },
    );
    Ok((values, labels))
}

/// The data's feature types: `q`, then `c` for the categorical columns (none without them).
pub fn feature_types(spec: &SyntheticSpec) -> Vec<String> {
    if spec.categorical == 0 {
        return Vec::new();
    }
    let numeric = spec.cols.saturating_sub(spec.categorical);
    (0..spec.cols).map(|c| if c < numeric { "q" } else { "c" }.to_string()).collect()
}

/// Rows `range` of the data `spec` describes, made in the memory of `gpu` by the generator
/// [`generate`] runs on the host (the same bits): the values (row-major, `NaN` where missing)
/// and the labels. Rows `range` of `generate(spec)` are these; `spec.rows` only bounds `range`.
pub fn generate_on_device(
    gpu: &Gpu,
    spec: &SyntheticSpec,
    range: Range<usize>,
) -> Result<(DeviceBuffer<f32>, DeviceBuffer<f32>)> {
    check(spec)?;
    if range.start > range.end || range.end > spec.rows {
        return Err(Error::param("rows", format!("rows {range:?} of a dataset of {} rows", spec.rows)));
    }
    let n = range.len();
    let values = gpu.alloc_uninitialized::<f32>(n * spec.cols)?;
    let labels = gpu.alloc_uninitialized::<f32>(n)?;
    let chunks = (range.end.div_ceil(ROWS_PER_CHUNK) - range.start / ROWS_PER_CHUNK) as u32;
    if n > 0 {
        let rows = gpu.upload(std::slice::from_ref(&kernel_spec(spec)))?;
        let threads = 64;
        let config = LaunchConfig {
            grid_dim: (chunks.div_ceil(threads), 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let args = entry::boost_synthetic_rows::args(
            rows.as_ptr(),
            range.start as u64,
            n as u64,
            values.as_mut_ptr(),
            labels.as_mut_ptr(),
        );
        // SAFETY: `rows` holds one spec; `values` holds `n * cols` values and `labels` `n`; a thread
        // per chunk that meets the range (extra threads return).
        unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
    }
    Ok((values, labels))
}

/// An error for a spec out of range; else the number of values.
fn check(spec: &SyntheticSpec) -> Result<usize> {
    if spec.rows == 0 {
        return Err(Error::param("rows", "must be at least 1"));
    }
    if spec.cols == 0 {
        return Err(Error::param("cols", "must be at least 1"));
    }
    let Some(values) = spec.rows.checked_mul(spec.cols) else {
        return Err(Error::param("rows", format!("{} rows of {} columns do not fit in memory", spec.rows, spec.cols)));
    };
    if !(0.0..=1.0).contains(&spec.missing_fraction) {
        return Err(Error::param("missing_fraction", format!("{} is not in [0, 1]", spec.missing_fraction)));
    }
    if spec.missing_columns > spec.cols {
        return Err(Error::param(
            "missing_columns",
            format!("{} is more than the {} columns", spec.missing_columns, spec.cols),
        ));
    }
    if matches!(spec.task, SyntheticTask::MultiClass { classes } if classes < 2) {
        return Err(Error::param("classes", "a multi-class task has at least 2 classes"));
    }
    if spec.categorical > spec.cols {
        return Err(Error::param(
            "categorical",
            format!("{} is more than the {} columns", spec.categorical, spec.cols),
        ));
    }
    if !(spec.noise.is_finite() && spec.noise >= 0.0) {
        return Err(Error::param("noise", format!("{} is not a finite number >= 0", spec.noise)));
    }
    Ok(values)
}

/// The kernel's spec of `spec`.
fn kernel_spec(spec: &SyntheticSpec) -> SyntheticRows {
    let (task, classes) = match spec.task {
        SyntheticTask::Binary => (kernel::TASK_BINARY, 0),
        SyntheticTask::Regression => (kernel::TASK_REGRESSION, 0),
        SyntheticTask::MultiClass { classes } => (kernel::TASK_MULTICLASS, classes),
    };
    SyntheticRows {
        seed: spec.seed,
        missing_fraction: spec.missing_fraction,
        noise: spec.noise,
        cols: spec.cols as u32,
        missing_columns: spec.missing_columns as u32,
        task,
        classes,
        categorical: spec.categorical as u32,
        max_categories: spec.max_categories,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(data: &Dataset) -> &[f32] {
        match &data.features {
            FeatureMatrix::Dense(m) => &m.values,
            FeatureMatrix::Sparse(_) => panic!("expected a dense matrix"),
        }
    }

    fn bits(data: &Dataset) -> (Vec<u32>, Vec<u32>) {
        (values(data).iter().map(|v| v.to_bits()).collect(), data.info.labels.iter().map(|v| v.to_bits()).collect())
    }

    fn spec(rows: usize) -> SyntheticSpec {
        SyntheticSpec { rows, seed: 7, ..SyntheticSpec::default() }
    }

    #[test]
    fn shape_missing_values_and_balance() {
        let data = generate(&spec(20_000)).unwrap();
        assert_eq!((data.rows(), data.cols()), (20_000, 28));
        assert_eq!(data.info.labels.len(), 20_000);
        assert!(data.info.labels.iter().all(|&l| l == 0.0 || l == 1.0));
        let positive = data.info.labels.iter().filter(|&&l| l == 1.0).count();
        assert!((9_000..11_000).contains(&positive), "{positive} positives");
        // Missing values only in columns 0, 7, 14 and 21, about 5% of each.
        let v = values(&data);
        for j in 0..28 {
            let missing = (0..20_000).filter(|&i| v[i * 28 + j].is_nan()).count();
            if [0, 7, 14, 21].contains(&j) {
                assert!((850..1150).contains(&missing), "column {j}: {missing} missing");
            } else {
                assert_eq!(missing, 0, "column {j}");
            }
        }
        // Standard normal features.
        let column: Vec<f64> = (0..20_000).map(|i| f64::from(v[i * 28 + 3])).collect();
        let mean = column.iter().sum::<f64>() / 20_000.0;
        let variance = column.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 20_000.0;
        assert!(mean.abs() < 0.05 && (variance - 1.0).abs() < 0.05, "mean {mean}, variance {variance}");
    }

    #[test]
    fn same_data_for_every_thread_count_and_prefix() {
        let spec = spec(3 * ROWS_PER_CHUNK + 100);
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| generate(&spec).unwrap());
        let three =
            rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap().install(|| generate(&spec).unwrap());
        assert_eq!(bits(&one), bits(&three));
        // Rows depend on their index only: a shorter dataset is a prefix of a longer one.
        let short = generate(&SyntheticSpec { rows: ROWS_PER_CHUNK + 5, ..spec.clone() }).unwrap();
        let (values_short, labels_short) = bits(&short);
        let (values_long, labels_long) = bits(&one);
        assert_eq!(values_short, values_long[..values_short.len()]);
        assert_eq!(labels_short, labels_long[..labels_short.len()]);
        // Any range starting at a chunk is the same rows of the whole (how `boost generate`
        // writes a block at a time); another start is refused.
        let (values, labels) = generate_rows(&spec, ROWS_PER_CHUNK..2 * ROWS_PER_CHUNK + 7).unwrap();
        let cols = spec.cols;
        let value_bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(value_bits, values_long[ROWS_PER_CHUNK * cols..(2 * ROWS_PER_CHUNK + 7) * cols]);
        let label_bits: Vec<u32> = labels.iter().map(|v| v.to_bits()).collect();
        assert_eq!(label_bits, labels_long[ROWS_PER_CHUNK..2 * ROWS_PER_CHUNK + 7]);
        assert!(generate_rows(&spec, 5..10).is_err());
        assert!(generate_rows(&spec, 0..spec.rows + 1).is_err());
        // Another seed gives other data.
        let other = generate(&SyntheticSpec { seed: 8, ..spec }).unwrap();
        assert_ne!(bits(&other).0, values_long);
    }

    /// The shared generator's stream is `rand_chacha`'s `ChaCha8Rng` (what the data was first
    /// made with): several keys, streams and blocks.
    #[test]
    fn the_generator_is_rand_chachas_chacha8() {
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        for (seed, stream) in [(0u64, 0u64), (7, 3), (u64::MAX, 1 << 40), (0x0123_4567_89ab_cdef, 24_414)] {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&seed.to_le_bytes());
            let mut oracle = rand_chacha::ChaCha8Rng::from_seed(key);
            oracle.set_stream(stream);
            let mut ours = kernel::ChaCha8::new([seed as u32, (seed >> 32) as u32, 0, 0, 0, 0, 0, 0], stream);
            for i in 0..200 {
                assert_eq!(ours.next_u64(), oracle.next_u64(), "seed {seed}, stream {stream}, word {i}");
            }
        }
    }

    /// Rows made on the (emulated) device are the host's, bit for bit, for ranges that start and
    /// end inside chunks, every task.
    #[test]
    fn rows_on_the_device_are_the_hosts() {
        let gpu = Gpu::emulated(primitives::Schedule::Shuffled { seed: 2 });
        for task in [SyntheticTask::Binary, SyntheticTask::Regression, SyntheticTask::MultiClass { classes: 3 }] {
            let spec = SyntheticSpec { rows: 2 * ROWS_PER_CHUNK + 300, cols: 11, task, ..spec(0) };
            let host = generate(&spec).unwrap();
            let (values, labels) = bits(&host);
            for range in [0..spec.rows, 1000..ROWS_PER_CHUNK + 7, ROWS_PER_CHUNK..ROWS_PER_CHUNK, 5..6] {
                let (v, l) = generate_on_device(&gpu, &spec, range.clone()).unwrap();
                let v: Vec<u32> = v.to_vec(&gpu).unwrap().iter().map(|x| x.to_bits()).collect();
                let l: Vec<u32> = l.to_vec(&gpu).unwrap().iter().map(|x| x.to_bits()).collect();
                assert_eq!(v, values[range.start * 11..range.end * 11], "{task:?} rows {range:?}");
                assert_eq!(l, labels[range.clone()], "{task:?} rows {range:?}");
            }
        }
        // Categorical columns (codes, their effects in the margin) too.
        let coded = SyntheticSpec { rows: ROWS_PER_CHUNK + 300, cols: 12, categorical: 7, ..spec(4) };
        let (values, labels) = bits(&generate(&coded).unwrap());
        let (v, l) = generate_on_device(&gpu, &coded, 0..coded.rows).unwrap();
        assert_eq!(v.to_vec(&gpu).unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>(), values, "categorical");
        assert_eq!(l.to_vec(&gpu).unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>(), labels, "categorical");
        let spec = spec(100);
        assert!(generate_on_device(&gpu, &spec, 50..101).is_err(), "rows past the end");
        let bad = SyntheticSpec { missing_columns: 40, ..spec };
        assert!(matches!(generate_on_device(&gpu, &bad, 0..10), Err(Error::InvalidParameter { .. })));
    }

    /// Categorical columns hold codes below their counts (the smaller codes more often), typed
    /// `c`; their categories move the label.
    #[test]
    fn categorical_columns_hold_codes_that_move_the_label() {
        let coded = SyntheticSpec { rows: 20_000, cols: 10, categorical: 6, missing_columns: 0, ..spec(3) };
        let data = generate(&coded).unwrap();
        assert_eq!(data.info.feature_types, ["q", "q", "q", "q", "c", "c", "c", "c", "c", "c"]);
        let v = values(&data);
        for (k, count) in kernel::CATEGORY_COUNTS[..6].iter().enumerate() {
            let codes: Vec<f32> = v.chunks_exact(10).map(|row| row[4 + k]).collect();
            assert!(codes.iter().all(|&c| c >= 0.0 && c < *count as f32 && c.fract() == 0.0), "column {k}");
            let low = codes.iter().filter(|&&c| c < *count as f32 / 4.0).count();
            assert!(low > codes.len() * 2 / 5, "column {k}: {low} of {} codes in the lowest quarter", codes.len());
        }
        // The 10 categories of the first categorical column: their positive rates differ.
        let rate = |code: f32| {
            let rows: Vec<usize> = (0..coded.rows).filter(|&r| v[r * 10 + 4] == code).collect();
            rows.iter().filter(|&&r| data.info.labels[r] == 1.0).count() as f64 / rows.len().max(1) as f64
        };
        let rates: Vec<f64> = (0..10).map(|c| rate(c as f32)).collect();
        let spread = rates.iter().cloned().fold(f64::MIN, f64::max) - rates.iter().cloned().fold(f64::MAX, f64::min);
        assert!(spread > 0.1, "{rates:?}");
        assert!(generate(&SyntheticSpec { categorical: 11, ..coded }).is_err());
    }

    #[test]
    fn pinned_values() {
        // The generator's output is part of its contract (benchmarks and tests compare runs over
        // time and machines): these values must not change.
        let data = generate(&SyntheticSpec { rows: 5000, ..spec(0) }).unwrap();
        let v = values(&data);
        let first: Vec<u32> = v[..4].iter().map(|x| x.to_bits()).collect();
        let last = v[v.len() - 1].to_bits();
        let positives = data.info.labels.iter().filter(|&&l| l == 1.0).count();
        let sum: f64 = v.iter().filter(|x| !x.is_nan()).map(|&x| f64::from(x)).sum();
        assert_eq!(first, vec![0xbfd4971a, 0x3eb8d339, 0xbd0a9d5f, 0x3dcf3420]);
        assert_eq!(last, 0xbe11b8af);
        assert_eq!(positives, 2507);
        assert!((sum - 316.636745).abs() < 1e-5, "{sum}");
    }

    #[test]
    fn labels_follow_the_margin() {
        let exact = SyntheticSpec { rows: 20_000, noise: 0.0, missing_fraction: 0.0, ..spec(0) };
        let regression = generate(&SyntheticSpec { task: SyntheticTask::Regression, ..exact.clone() }).unwrap();
        let binary = generate(&exact).unwrap();
        let v = values(&regression);
        assert_eq!(values(&binary), v);
        for (i, (&m, &b)) in regression.info.labels.iter().zip(&binary.info.labels).enumerate() {
            let row = &v[i * 28..(i + 1) * 28];
            let x = |j: usize| f64::from(row[j]);
            let expected = x(0) - 0.8 * x(1) + 0.6 * x(2) - 0.4 * x(3)
                + 0.2 * x(4)
                + (2.0 * x(5)).sin()
                + x(6) * x(7)
                + x(8).abs()
                - (2.0 / std::f64::consts::PI).sqrt();
            assert!((f64::from(m) - expected).abs() < 1e-5, "row {i}: {m} vs {expected}");
            assert_eq!(b, f32::from(u8::from(f64::from(m) > 0.0)), "row {i}");
        }
        // The margin's variance is about 1 + 0.64 + 0.36 + 0.16 + 0.04 + 0.5 + 1 + (1 - 2/pi) = 4.06;
        // noise adds its square.
        let variance = |data: &Dataset| {
            let n = data.info.labels.len() as f64;
            let mean = data.info.labels.iter().map(|&l| f64::from(l)).sum::<f64>() / n;
            data.info.labels.iter().map(|&l| (f64::from(l) - mean).powi(2)).sum::<f64>() / n
        };
        let quiet = variance(&regression);
        assert!((3.8..4.3).contains(&quiet), "{quiet}");
        let noisy = SyntheticSpec { noise: 2.0, task: SyntheticTask::Regression, ..exact };
        let loud = variance(&generate(&noisy).unwrap());
        assert!((7.6..8.5).contains(&loud), "{loud}");
    }

    #[test]
    fn multi_class_labels_are_ordered_by_the_margin_and_about_balanced() {
        let base = SyntheticSpec { rows: 20_000, ..spec(3) };
        let regression = generate(&SyntheticSpec { task: SyntheticTask::Regression, ..base.clone() }).unwrap();
        let classes =
            generate(&SyntheticSpec { task: SyntheticTask::MultiClass { classes: 5 }, ..base.clone() }).unwrap();
        let mut by_margin: Vec<(f32, f32)> =
            regression.info.labels.iter().copied().zip(classes.info.labels.iter().copied()).collect();
        by_margin.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(by_margin.windows(2).all(|w| w[0].1 <= w[1].1), "classes rise with the margin");
        for k in 0..5 {
            let share = classes.info.labels.iter().filter(|&&l| l == k as f32).count() as f64 / 20_000.0;
            assert!((0.15..0.25).contains(&share), "class {k}: {share}");
        }
        let one = SyntheticSpec { task: SyntheticTask::MultiClass { classes: 1 }, ..base };
        assert!(generate(&one).is_err());
    }

    #[test]
    fn few_columns_and_bad_specs() {
        let narrow = generate(&SyntheticSpec { rows: 10, cols: 2, missing_columns: 2, ..spec(0) }).unwrap();
        assert_eq!((narrow.rows(), narrow.cols()), (10, 2));
        let bad = |spec: SyntheticSpec, name: &str| match generate(&spec) {
            Err(Error::InvalidParameter { name: got, .. }) => assert_eq!(got, name),
            other => panic!("{name}: {other:?}"),
        };
        bad(spec(0), "rows");
        bad(SyntheticSpec { cols: 0, ..spec(1) }, "cols");
        bad(SyntheticSpec { rows: usize::MAX, cols: 2, ..spec(1) }, "rows");
        bad(SyntheticSpec { missing_fraction: 1.5, ..spec(1) }, "missing_fraction");
        bad(SyntheticSpec { missing_fraction: f64::NAN, ..spec(1) }, "missing_fraction");
        bad(SyntheticSpec { missing_columns: 29, ..spec(1) }, "missing_columns");
        bad(SyntheticSpec { noise: -1.0, ..spec(1) }, "noise");
        bad(SyntheticSpec { noise: f64::INFINITY, ..spec(1) }, "noise");
    }
}
