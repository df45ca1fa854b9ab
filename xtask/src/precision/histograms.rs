//! Experiment 2: a gradient-pair histogram (one feature, `--bins` bins, `--hist-rows` rows of
//! logistic-loss gradients) accumulated in `f32`, `f64` and 64-bit fixed point: the error of every
//! bin against its exact sum, and on the GPU, where atomics add in the scheduler's order, how much
//! the bins change from run to run.

use anyhow::Result;
use boost::fixed_point::GradientQuantiser;
use boost::objective::sigmoid;
use primitives::ops::{Element, GradientPair};
use primitives::{ExperimentalHistogram, Gpu, HistogramExperimentKernel};
use rand::{rngs::SmallRng, Rng, SeedableRng};

use super::{Cell, ExactSum, Options, Table};

/// The rows: a uniform bin, and the logistic loss's gradient pair, computed in `f32` as `boost`'s
/// objective does (`p = sigmoid(margin)`, `g = p - y`, `h = max(p (1 - p), 1e-16)`), as in the middle
/// of training: margins uniform in `[-6, 6]` (drawn in `f64`, rounded to `f32`) and labels drawn
/// with probability `p`, so that most rows are predicted well and have small gradients (down to
/// about `2.5e-3`) while a few have large ones.
pub fn rows(n: usize, bins: usize, seed: u64) -> (Vec<u32>, Vec<GradientPair<f32>>) {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x4849_5354);
    let mut bin_of = Vec::with_capacity(n);
    let mut gradients = Vec::with_capacity(n);
    for _ in 0..n {
        bin_of.push(rng.gen_range(0..bins as u32));
        let p = sigmoid((rng.gen::<f64>() * 12.0 - 6.0) as f32);
        let y = if rng.gen_bool(p as f64) { 1.0 } else { 0.0 };
        gradients.push(GradientPair::new(p - y, (p * (1.0 - p)).max(1e-16)));
    }
    (bin_of, gradients)
}

/// A histogram as `f64` pairs, whatever it was accumulated in.
type Wide = Vec<GradientPair<f64>>;

/// Error statistics of one method over every bin of every run.
struct Measured {
    name: &'static str,
    place: String,
    runs: Vec<Wide>,
}

fn widen<T: Copy + Into<f64>>(h: &[GradientPair<T>]) -> Wide {
    h.iter().map(|g| GradientPair::new(g.grad.into(), g.hess.into())).collect()
}

fn gpu_runs<T: HistogramExperimentKernel>(
    gpu: &Gpu,
    bins: &[u32],
    gradients: &[GradientPair<T>],
    bin_count: usize,
    runs: usize,
) -> Result<Vec<Vec<GradientPair<T>>>>
where
    GradientPair<T>: Element,
{
    let (bins, gradients) = (gpu.upload(bins)?, gpu.upload(gradients)?);
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        let mut histogram = gpu.alloc_zeroed::<GradientPair<T>>(bin_count)?;
        ExperimentalHistogram::gradient_pairs(gpu, &bins, &gradients, &mut histogram)?;
        out.push(histogram.to_vec(gpu)?);
    }
    Ok(out)
}

pub fn run(options: &Options, gpu: Option<&Gpu>) -> Result<Table> {
    let (n, bin_count) = (options.hist_rows, options.bins);
    let (bins, gradients) = rows(n, bin_count, options.seed);
    let mut exact = vec![(ExactSum::new(), ExactSum::new()); bin_count];
    for (&b, g) in bins.iter().zip(&gradients) {
        exact[b as usize].0.add_f32(g.grad);
        exact[b as usize].1.add_f32(g.hess);
    }

    // CPU, rows in order.
    let mut single = vec![GradientPair::new(0f32, 0f32); bin_count];
    let mut double = vec![GradientPair::new(0f64, 0f64); bin_count];
    let quantiser = GradientQuantiser::new(&gradients);
    let fixed_rows: Vec<GradientPair<i64>> = gradients.iter().map(|&g| quantiser.to_fixed(g)).collect();
    let mut fixed = vec![GradientPair::new(0i64, 0i64); bin_count];
    for ((&b, g), q) in bins.iter().zip(&gradients).zip(&fixed_rows) {
        let b = b as usize;
        single[b] = GradientPair::new(single[b].grad + g.grad, single[b].hess + g.hess);
        double[b] = GradientPair::new(double[b].grad + g.grad as f64, double[b].hess + g.hess as f64);
        fixed[b] = boost::fixed_point::add(fixed[b], *q);
    }
    let fixed_wide: Wide = fixed.iter().map(|&s| quantiser.to_float(s)).collect();
    let mut measured = vec![
        Measured { name: "f32, rows in order", place: "CPU".into(), runs: vec![widen(&single)] },
        Measured { name: "f64, rows in order", place: "CPU".into(), runs: vec![widen(&double)] },
        Measured { name: "64-bit fixed point", place: "CPU".into(), runs: vec![fixed_wide.clone()] },
    ];
    let mut notes = Vec::new();
    if let Some(gpu) = gpu {
        let name = gpu.properties().name.clone();
        let runs = options.hist_runs;
        let wide_rows: Vec<GradientPair<f64>> =
            gradients.iter().map(|g| GradientPair::new(g.grad as f64, g.hess as f64)).collect();
        let f32_runs = gpu_runs(gpu, &bins, &gradients, bin_count, runs)?;
        let f64_runs = gpu_runs(gpu, &bins, &wide_rows, bin_count, runs)?;
        let fixed_runs = gpu_runs(gpu, &bins, &fixed_rows, bin_count, runs)?;
        let same_as_cpu = fixed_runs.iter().filter(|h| **h == fixed).count();
        notes.push(format!(
            "The GPU's fixed-point histogram equals the CPU's bit for bit in {same_as_cpu} of {runs} runs."
        ));
        measured.push(Measured {
            name: "f32 atomics",
            place: name.clone(),
            runs: f32_runs.iter().map(|h| widen(h)).collect(),
        });
        measured.push(Measured { name: "f64 atomics", place: name.clone(), runs: f64_runs });
        measured.push(Measured {
            name: "64-bit fixed point, integer atomics",
            place: name,
            runs: fixed_runs.iter().map(|h| h.iter().map(|&s| quantiser.to_float(s)).collect()).collect(),
        });
    } else {
        notes.push("GPU rows not run (`--device cuda` adds f32, f64 and fixed-point atomics on the GPU).".into());
    }

    let mut table = Table::new(
        "histograms",
        format!(
            "Gradient histogram of {n} logistic-loss rows in {bin_count} bins: error per bin against the exact sums"
        ),
        &[
            "accumulation",
            "where",
            "runs",
            "grad: mean abs. error",
            "grad: max abs. error",
            "hess: mean abs. error",
            "hess: max abs. error",
            "bins that change between runs",
            "grad: max run-to-run spread",
        ],
    );
    for m in &measured {
        table.rows.push(row(m, &exact, bin_count));
    }
    let typical: f64 = exact.iter().map(|(_, h)| h.round()).sum::<f64>() / bin_count as f64;
    notes.push(format!(
        "A bin holds about {} rows; its hessian sum is about {typical:.4e} and its gradient sum a random walk \
         around 0. GPU histograms: a private shared-memory histogram per block (block-scope atomics), \
         then device-scope atomics into the result (XGBoost's scheme; the experimental kernel of \
         primitives-kernels/src/device/histogram_experiment.rs, not the histogram library of issue 5).",
        n / bin_count
    ));
    table.notes = notes;
    Ok(table)
}

/// A table row of `m`: its errors against the exact sums, and how its runs differ.
fn row(m: &Measured, exact: &[(ExactSum, ExactSum)], bin_count: usize) -> Vec<Cell> {
    let (mut grad_errors, mut hess_errors) = (Vec::new(), Vec::new());
    for run in &m.runs {
        for (h, (eg, eh)) in run.iter().zip(exact) {
            grad_errors.push(eg.error_of(h.grad).abs());
            hess_errors.push(eh.error_of(h.hess).abs());
        }
    }
    let mean = |e: &[f64]| e.iter().sum::<f64>() / e.len().max(1) as f64;
    let max = |e: &[f64]| e.iter().copied().fold(0.0, f64::max);
    let (changing, spread) = if m.runs.len() > 1 {
        let mut changing = 0u64;
        let mut spread = 0f64;
        for b in 0..bin_count {
            let first = m.runs[0][b];
            changing += u64::from(m.runs.iter().any(|r| r[b] != first));
            let (lo, hi) = m
                .runs
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| (lo.min(r[b].grad), hi.max(r[b].grad)));
            spread = spread.max(hi - lo);
        }
        (Cell::Text(format!("{changing}/{bin_count}")), Cell::Float(spread))
    } else {
        ("- (one order)".into(), Cell::Text("-".into()))
    };
    vec![
        m.name.into(),
        m.place.clone().into(),
        Cell::Int(m.runs.len() as u64),
        Cell::Float(mean(&grad_errors)),
        Cell::Float(max(&grad_errors)),
        Cell::Float(mean(&hess_errors)),
        Cell::Float(max(&hess_errors)),
        changing,
        spread,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_logistic_gradients() {
        let (bins, gradients) = rows(10_000, 16, 3);
        assert!(bins.iter().all(|&b| b < 16));
        assert!(gradients.iter().all(|g| g.grad > -1.0 && g.grad < 1.0 && g.hess > 0.0 && g.hess <= 0.25));
        // Labels drawn with probability p: about as many positive as negative gradients, most small.
        let positive = gradients.iter().filter(|g| g.grad > 0.0).count();
        assert!((4000..6000).contains(&positive), "{positive}");
        let small = gradients.iter().filter(|g| g.grad.abs() < 0.1).count();
        assert!(small > 2500, "{small}");
    }
}
