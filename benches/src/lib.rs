//! Shared helpers of the benchmarks: GPU timing with CUDA events, the median, and input rotation so
//! that repeated runs do not measure the L2 cache.

use primitives::Gpu;

/// Median of the measurements (sorts them).
pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    if samples.len() % 2 == 1 {
        samples[mid]
    } else {
        (samples[mid - 1] + samples[mid]) / 2.0
    }
}

/// How many copies of an input of `bytes` bytes to rotate through so that the working set is at
/// least 256 MiB (several times any L2), capped at 64 copies.
pub fn rotation(bytes: usize) -> usize {
    (256usize << 20).div_ceil(bytes.max(1)).clamp(1, 64)
}

/// Times `run(i)` for `repeats` calls after `warmup` calls, each between two CUDA events on the GPU's
/// stream; returns the median in microseconds.
pub fn time_gpu(gpu: &Gpu, warmup: usize, repeats: usize, mut run: impl FnMut(usize)) -> f64 {
    assert!(!gpu.is_emulated(), "timing needs a CUDA device");
    for i in 0..warmup {
        run(i);
    }
    let mut samples = Vec::with_capacity(repeats);
    for i in 0..repeats {
        let start = gpu.record_event().expect("recording an event");
        run(warmup + i);
        let stop = gpu.record_event().expect("recording an event");
        samples.push(stop.elapsed_since(&start).expect("reading an event").as_secs_f64() * 1e6);
    }
    median(&mut samples)
}
