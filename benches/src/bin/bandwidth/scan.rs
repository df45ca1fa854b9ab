//! Device-scan bandwidth for the side-by-side comparison (benches/scripts/scan_side_by_side.py):
//! prints CSV `impl,dtype,op,n,median_us,gbps` counting bytes read plus bytes written, median of 30
//! runs timed with CUDA events after 5 warm-ups, rotating through input copies.
//!
//! Usage: bandwidth scan [MAX_LOG2 (default 28)]

use benches::{rotation, time_gpu};
use primitives::ops::{Element, GradientPair, Sum};
use primitives::{DeviceScan, Gpu, ScanKernel};
use rand::{rngs::SmallRng, Rng, SeedableRng};

fn measure<T: Element, Op: ScanKernel<T>>(gpu: &Gpu, dtype: &str, n: usize, draw: fn(&mut SmallRng) -> T) {
    let mut rng = SmallRng::seed_from_u64(n as u64);
    let host: Vec<T> = (0..n).map(|_| draw(&mut rng)).collect();
    let copies = rotation(n * size_of::<T>());
    let inputs: Vec<_> = (0..copies).map(|_| gpu.upload(&host).expect("upload")).collect();
    let mut output = gpu.alloc_zeroed::<T>(n).expect("alloc");
    let us = time_gpu(gpu, 5, 30, |i| {
        DeviceScan::inclusive_scan::<T, Op>(gpu, &inputs[i % copies], &mut output).expect("scan")
    });
    let gbps = (2 * n * size_of::<T>()) as f64 / (us * 1e-6) / 1e9;
    println!("ours,{dtype},inclusive_sum,{n},{us:.3},{gbps:.1}");
}

pub fn run(max_log2: u32) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("bandwidth scan needs a GPU: {e}"));
    eprintln!("device: {} ({} SMs)", gpu.properties().name, gpu.properties().multiprocessors);
    println!("impl,dtype,op,n,median_us,gbps");
    for log2 in (16..=max_log2).step_by(2) {
        let n = 1usize << log2;
        measure::<f32, Sum>(&gpu, "float32", n, |r| r.gen_range(-1.0..1.0));
        measure::<i32, Sum>(&gpu, "int32", n, |r| r.gen_range(-1000..1000));
        measure::<f64, Sum>(&gpu, "float64", n, |r| r.gen_range(-1.0..1.0));
        if log2 <= 26 {
            measure::<GradientPair<f32>, Sum>(&gpu, "pair_f32", n, |r| {
                GradientPair::new(r.gen_range(-1.0..1.0), r.gen())
            });
            measure::<GradientPair<i64>, Sum>(&gpu, "pair_i64", n, |r| {
                GradientPair::new(r.gen_range(-1000..1000), r.gen_range(0..1000))
            });
        }
    }
}
