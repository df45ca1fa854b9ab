//! Experiment 1: Mitchell & Frank's Table 8 (sum 10 million uniform numbers in `[-1, 1]`, 100
//! repeats), with an exact reference instead of their `f64` sequential sum, more methods, our GPU
//! reduce, and the growth of the error with `n`.

use anyhow::Result;
use boost::fixed_point::GradientQuantiser;
use primitives::ops::{GradientPair, Sum};
use primitives::{cpu, Gpu};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use rayon::prelude::*;

use super::{Cell, ExactSum, Options, Table};

pub const SEQUENTIAL_F32: &str = "f32 sequential";
pub const PAIRWISE_F32: &str = "f32 pairwise (cpu::reduce, leaves of 8)";
pub const DEVICE_ORDER_F32: &str = "f32 in DeviceReduce's order (CPU replay)";
pub const KAHAN_F32: &str = "f32 Kahan";
pub const SEQUENTIAL_F64: &str = "f64 sequential";
pub const DEVICE_ORDER_F64: &str = "f64 in DeviceReduce's order (CPU replay)";
pub const FIXED_POINT: &str = "64-bit fixed point (XGBoost's rounding factor)";
pub const GPU_F32: &str = "f32 DeviceReduce on the GPU";
pub const GPU_F64: &str = "f64 DeviceReduce on the GPU";

const CPU_METHODS: [&str; 7] =
    [SEQUENTIAL_F32, PAIRWISE_F32, DEVICE_ORDER_F32, KAHAN_F32, SEQUENTIAL_F64, DEVICE_ORDER_F64, FIXED_POINT];

/// Multiprocessors of the replayed device reduce when no GPU says otherwise (H100 SXM and H200: 132).
pub const DEFAULT_SMS: u32 = 132;

/// `DeviceReduce`'s launch shape (primitives/src/device/reduce.rs and
/// primitives-kernels/src/device/reduce.rs): 256 threads a block, at most 8 blocks a multiprocessor,
/// each thread loading 4 vectors of 16 bytes per step. The replay is checked against the GPU (and
/// against the emulator in the tests): the same bits.
const BLOCK_THREADS: usize = 256;
const BLOCKS_PER_MULTIPROCESSOR: usize = 8;
const LOADS_IN_FLIGHT: usize = 4;

/// The numbers of one repeat: uniform in `[-1, 1]`, drawn in `f64` (53 random bits) and rounded to
/// `f32`, so that each has a full 24-bit significand at its own scale, as gradients do. (`rand`'s
/// `f32` range gives multiples of 2^-23 only, whose `f64` sums are exact: they would hide the `f64`
/// and fixed-point errors.) The generator is seeded by the seed, the size and the repeat, so the GPU
/// pass sees the CPU pass's numbers.
pub fn uniform(n: usize, seed: u64, repeat: usize) -> Vec<f32> {
    let mut rng =
        SmallRng::seed_from_u64(seed ^ (n as u64).rotate_left(32) ^ (repeat as u64).wrapping_mul(0x9e37_79b9));
    (0..n).map(|_| (rng.gen::<f64>() * 2.0 - 1.0) as f32).collect()
}

/// A float type the replay sums.
pub trait ReplayFloat: Copy + Default + std::ops::Add<Output = Self> + Send + Sync {}
impl ReplayFloat for f32 {}
impl ReplayFloat for f64 {}

/// Pairwise sum of a power-of-two number of values, as a warp and block reduce combine them (the
/// shuffle distance grows 1, 2, 4, ...: lane 0 ends with `(x0 + x1) + (x2 + x3) ...`).
fn tree<T: ReplayFloat>(values: &[T]) -> T {
    if values.len() == 1 {
        return values[0];
    }
    let (left, right) = values.split_at(values.len() / 2);
    tree(left) + tree(right)
}

/// The sum `DeviceReduce` computes on a device with `sms` multiprocessors, replayed on the CPU in
/// its order: each thread sums its grid-strided 16-byte vectors (then the scalar tail) sequentially,
/// a block combines its 256 threads' sums as a binary tree (warp reduce, then the 8 warp totals,
/// padded with zeros, as another warp reduce), and the last block sums the block totals
/// grid-strided over its threads and combines those as a tree.
pub fn device_order<T: ReplayFloat>(values: &[T], sms: u32) -> T {
    let per_vector = 16 / size_of::<T>();
    let grid = values
        .len()
        .div_ceil(BLOCK_THREADS * per_vector * LOADS_IN_FLIGHT)
        .clamp(1, sms.max(1) as usize * BLOCKS_PER_MULTIPROCESSOR);
    let threads = grid * BLOCK_THREADS;
    let mut sums = vec![T::default(); threads];
    // Thread t's vectors are t, t + threads, ...: visiting vectors in order keeps each thread's order.
    let vectors = values.len() / per_vector;
    let mut t = 0;
    for vector in values[..vectors * per_vector].chunks_exact(per_vector) {
        for &x in vector {
            sums[t] = sums[t] + x;
        }
        t += 1;
        if t == threads {
            t = 0;
        }
    }
    for (i, &x) in values[vectors * per_vector..].iter().enumerate() {
        let t = i % threads;
        sums[t] = sums[t] + x;
    }
    let block_totals: Vec<T> = sums.chunks_exact(BLOCK_THREADS).map(tree).collect();
    if grid == 1 {
        return block_totals[0];
    }
    let mut last = vec![T::default(); BLOCK_THREADS];
    for (b, &total) in block_totals.iter().enumerate() {
        last[b % BLOCK_THREADS] = last[b % BLOCK_THREADS] + total;
    }
    tree(&last)
}

/// Kahan's compensated summation in `f32`.
pub fn kahan_f32(values: &[f32]) -> f32 {
    let (mut sum, mut compensation) = (0f32, 0f32);
    for &x in values {
        let y = x - compensation;
        let t = sum + y;
        compensation = (t - sum) - y;
        sum = t;
    }
    sum
}

/// The sum in 64-bit fixed point: quantised by `boost`'s quantiser (XGBoost's rounding factor, a
/// power of two from the sum of the magnitudes), summed exactly as integers, converted back.
pub fn fixed_point(values: &[f32]) -> f64 {
    let pairs: Vec<GradientPair<f32>> = values.iter().map(|&x| GradientPair::new(x, 0.0)).collect();
    let quantiser = GradientQuantiser::new(&pairs);
    let sum = pairs.iter().fold(0i64, |acc, &p| acc.wrapping_add(quantiser.to_fixed(p).grad));
    quantiser.to_float(GradientPair::new(sum, 0)).grad
}

/// One repeat on the CPU: the exact sum and each of [`CPU_METHODS`]' results.
fn cpu_repeat(values: &[f32], sms: u32) -> (ExactSum, Vec<f64>) {
    let exact = ExactSum::of(values.iter().map(|&x| x as f64));
    let wide: Vec<f64> = values.iter().map(|&x| x as f64).collect();
    let results = vec![
        values.iter().fold(0f32, |a, &x| a + x) as f64,
        cpu::reduce::<f32, Sum>(values) as f64,
        device_order(values, sms) as f64,
        kahan_f32(values) as f64,
        wide.iter().fold(0f64, |a, &x| a + x),
        device_order(&wide, sms),
        fixed_point(values),
    ];
    (exact, results)
}

/// The GPU's sums of one repeat, each computed twice (f32, f32 again, f64, f64 again).
fn gpu_repeat(gpu: &Gpu, values: &[f32]) -> Result<[f64; 4]> {
    let single = gpu.upload(values)?;
    let wide: Vec<f64> = values.iter().map(|&x| x as f64).collect();
    let double = gpu.upload(&wide)?;
    Ok([
        gpu.reduce::<f32, Sum>(&single)? as f64,
        gpu.reduce::<f32, Sum>(&single)? as f64,
        gpu.reduce::<f64, Sum>(&double)?,
        gpu.reduce::<f64, Sum>(&double)?,
    ])
}

/// Absolute errors of every method over the repeats of size `n`: (method, errors), and the GPU
/// consistency counts when a GPU ran (f32 second run identical, f32 equal to the replay, same f64).
struct Errors {
    methods: Vec<(&'static str, Vec<f64>)>,
    gpu_checks: Option<[usize; 4]>,
}

fn measure(n: usize, repeats: usize, seed: u64, gpu: Option<&Gpu>, sms: u32) -> Result<Errors> {
    let cpu: Vec<(ExactSum, Vec<f64>)> =
        (0..repeats).into_par_iter().map(|r| cpu_repeat(&uniform(n, seed, r), sms)).collect();
    let mut methods: Vec<(&'static str, Vec<f64>)> = CPU_METHODS
        .iter()
        .enumerate()
        .map(|(m, &name)| (name, cpu.iter().map(|(exact, results)| exact.error_of(results[m]).abs()).collect()))
        .collect();
    let mut gpu_checks = None;
    if let Some(gpu) = gpu {
        let (mut f32_errors, mut f64_errors, mut checks) = (Vec::new(), Vec::new(), [0usize; 4]);
        let replay_f32 = CPU_METHODS.iter().position(|&m| m == DEVICE_ORDER_F32).unwrap_or(0);
        let replay_f64 = CPU_METHODS.iter().position(|&m| m == DEVICE_ORDER_F64).unwrap_or(0);
        for (r, (exact, results)) in cpu.iter().enumerate() {
            let [a, a_again, b, b_again] = gpu_repeat(gpu, &uniform(n, seed, r))?;
            f32_errors.push(exact.error_of(a).abs());
            f64_errors.push(exact.error_of(b).abs());
            checks[0] += usize::from(a.to_bits() == a_again.to_bits());
            checks[1] += usize::from(a.to_bits() == results[replay_f32].to_bits());
            checks[2] += usize::from(b.to_bits() == b_again.to_bits());
            checks[3] += usize::from(b.to_bits() == results[replay_f64].to_bits());
        }
        methods.push((GPU_F32, f32_errors));
        methods.push((GPU_F64, f64_errors));
        gpu_checks = Some(checks);
    }
    Ok(Errors { methods, gpu_checks })
}

fn mean_sd_max(errors: &[f64]) -> (f64, f64, f64) {
    let n = errors.len() as f64;
    let mean = errors.iter().sum::<f64>() / n;
    let variance =
        if errors.len() > 1 { errors.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (mean, variance.sqrt(), errors.iter().copied().fold(0.0, f64::max))
}

/// Table 8, and the GPU consistency checks when a GPU ran.
pub fn table8(options: &Options, gpu: Option<&Gpu>, sms: u32) -> Result<(Table, Option<Table>)> {
    let (n, repeats) = (options.n, options.repeats);
    let errors = measure(n, repeats, options.seed, gpu, sms)?;
    let mut table = Table::new(
        "sums",
        format!("Sum of {n} uniform numbers in [-1, 1], {repeats} repeats: absolute error against the exact sum"),
        &["method", "where", "mean abs. error", "SD", "max abs. error"],
    );
    let gpu_name = gpu.map(|g| g.properties().name.clone()).unwrap_or_default();
    for (name, errs) in &errors.methods {
        let (mean, sd, max) = mean_sd_max(errs);
        let place = if name.contains("GPU") { gpu_name.clone() } else { "CPU".into() };
        table.rows.push(vec![Cell::from(*name), place.into(), Cell::Float(mean), Cell::Float(sd), Cell::Float(max)]);
    }
    if gpu.is_none() {
        for name in [GPU_F32, GPU_F64] {
            table.rows.push(vec![
                name.into(),
                "(GPU not run)".into(),
                Cell::Float(f64::NAN),
                Cell::Float(f64::NAN),
                Cell::Float(f64::NAN),
            ]);
        }
    }
    table.notes.push(
        "Mitchell & Frank 2017, Table 8 (Thrust's reduce on their GPU, errors against a sequential f64 sum): \
         sequential f32 0.0694 (SD 0.0520), parallel f32 0.0007 (SD 0.0005). Here the reference is the \
         exact sum, rounded once (a superaccumulator, xtask/src/precision/exact.rs); SD is the sample \
         standard deviation over the repeats."
            .into(),
    );
    let checks = errors.gpu_checks.map(|c| {
        let mut checks = Table::new(
            "gpu_checks",
            format!(
                "GPU reduce: determinism and agreement with the CPU replay of its order ({repeats} repeats of {n})"
            ),
            &["GPU sum", "second run bit-identical", "bit-identical to the CPU replay", "all"],
        );
        for (label, same, replay) in [("f32", c[0], c[1]), ("f64", c[2], c[3])] {
            let all = if same == repeats && replay == repeats { "yes" } else { "no" };
            checks.rows.push(vec![
                label.into(),
                format!("{same}/{repeats}").into(),
                format!("{replay}/{repeats}").into(),
                all.into(),
            ]);
        }
        checks
    });
    Ok((table, checks))
}

/// Mean absolute error of every method for each size of `--sizes`.
pub fn against_n(options: &Options, gpu: Option<&Gpu>, sms: u32) -> Result<Table> {
    let mut names: Vec<&str> = CPU_METHODS.to_vec();
    if gpu.is_some() {
        names.extend([GPU_F32, GPU_F64]);
    }
    let mut headers = vec!["n"];
    headers.extend(&names);
    let mut table = Table::new(
        "sums_vs_n",
        format!("Mean absolute error against n ({} repeats per size)", options.size_repeats),
        &headers,
    );
    for &n in &options.sizes {
        let errors = measure(n, options.size_repeats, options.seed.wrapping_add(1), gpu, sms)?;
        let mut row = vec![Cell::Int(n as u64)];
        row.extend(errors.methods.iter().map(|(_, e)| Cell::Float(mean_sd_max(e).0)));
        table.rows.push(row);
    }
    table.notes.push(
        "Rounding error bounds: sequential summation grows as (n - 1) u sum|x| (a random-walk typical \
         error of about sqrt(n) ulps of the partial sums, which themselves grow as sqrt(n)), pairwise as \
         log2(n) u sum|x|; DeviceReduce sums about n / (256 x grid) items per thread sequentially, then \
         two trees of depth 8 with a short sequential pass between them."
            .into(),
    );
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_of_a_single_block_is_a_tree_of_thread_sums() {
        // 8 numbers, one block: thread 0 sums vector 0 (1 + 2 + 3 + 4), thread 1 vector 1.
        let values: Vec<f32> = (1..=8).map(|i| i as f32).collect();
        assert_eq!(device_order(&values, 1), 36.0);
        // Thread 0 absorbs the 1 into 1e8 before thread 1's -1e8 cancels it...
        let mut v = vec![0f32; 4096];
        (v[0], v[1], v[4]) = (1e8, 1.0, -1e8);
        assert_eq!(device_order(&v, 1), 0.0);
        // ... but when the 1 is thread 2's, threads 0 and 1 cancel first in the tree.
        let mut v = vec![0f32; 4096];
        (v[0], v[4], v[8]) = (1e8, -1e8, 1.0);
        assert_eq!(device_order(&v, 1), 1.0);
    }

    #[test]
    fn methods_are_exact_on_exact_inputs() {
        // Multiples of 2^-10 below 2^10 in small numbers: every method is exact.
        let values: Vec<f32> = (0..5000).map(|i| ((i * 37 % 2001) as f32 - 1000.0) / 1024.0).collect();
        let (exact, results) = cpu_repeat(&values, 4);
        for (name, value) in CPU_METHODS.iter().zip(results) {
            assert_eq!(exact.error_of(value), 0.0, "{name}");
        }
    }

    #[test]
    fn kahan_recovers_what_sequential_loses() {
        let mut values = vec![1.0f32];
        values.extend(std::iter::repeat_n(1e-8f32, 10_000));
        let exact = ExactSum::of(values.iter().map(|&x| x as f64));
        let sequential = values.iter().fold(0f32, |a, &x| a + x);
        assert_eq!(sequential, 1.0, "each 1e-8 is below half an ulp of 1");
        assert!(exact.error_of(kahan_f32(&values) as f64).abs() < 1e-7);
    }
}
