//! Shared helpers of the benchmarks: GPU timing with CUDA events, the median, and input rotation so
//! that repeated runs do not measure the L2 cache.

use cudarc::driver::sys::CUevent_flags;
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
    let context = gpu.cuda_context().expect("timing needs a CUDA device");
    let stream = gpu.cuda_stream().expect("timing needs a CUDA device");
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    for i in 0..warmup {
        run(i);
    }
    let mut samples = Vec::with_capacity(repeats);
    for i in 0..repeats {
        let start = context.new_event(flags).expect("creating a CUDA event");
        let stop = context.new_event(flags).expect("creating a CUDA event");
        start.record(stream).expect("recording an event");
        run(warmup + i);
        stop.record(stream).expect("recording an event");
        let ms = start.elapsed_ms(&stop).expect("reading an event");
        samples.push(ms as f64 * 1000.0);
    }
    median(&mut samples)
}
