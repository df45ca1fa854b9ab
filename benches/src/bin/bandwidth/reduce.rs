//! Device-reduce bandwidth for the side-by-side comparison (benches/scripts/reduce_side_by_side.py):
//! prints CSV `impl,dtype,op,n,median_us,gbps` with bytes read per second, median of 50 runs timed with
//! CUDA events after 5 warm-up runs, rotating through input copies so the L2 does not hold the input.
//!
//! Usage: bandwidth reduce [MAX_LOG2 (default 28)]

use benches::{rotation, time_gpu};
use primitives::ops::{Element, Max, Sum};
use primitives::{DeviceReduce, Gpu, ReduceKernel};
use rand::{rngs::SmallRng, Rng, SeedableRng};

fn measure<T: Element, Op: ReduceKernel<T>>(gpu: &Gpu, dtype: &str, op: &str, n: usize, draw: fn(&mut SmallRng) -> T) {
    let mut rng = SmallRng::seed_from_u64(n as u64);
    let host: Vec<T> = (0..n).map(|_| draw(&mut rng)).collect();
    let copies = rotation(n * size_of::<T>());
    let inputs: Vec<_> = (0..copies).map(|_| gpu.upload(&host).expect("upload")).collect();
    let mut output = gpu.alloc_zeroed::<T>(1).expect("alloc");
    let us =
        time_gpu(gpu, 5, 50, |i| DeviceReduce::reduce::<T, Op>(gpu, &inputs[i % copies], &mut output).expect("reduce"));
    let gbps = (n * size_of::<T>()) as f64 / (us * 1e-6) / 1e9;
    println!("ours,{dtype},{op},{n},{us:.3},{gbps:.1}");
}

pub fn run(max_log2: u32) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("bandwidth reduce needs a GPU: {e}"));
    eprintln!("device: {} ({} SMs)", gpu.properties().name, gpu.properties().multiprocessors);
    println!("impl,dtype,op,n,median_us,gbps");
    for log2 in (10..=max_log2).step_by(2) {
        let n = 1usize << log2;
        measure::<f32, Sum>(&gpu, "float32", "sum", n, |r| r.gen_range(-1.0..1.0));
        if log2 >= 20 {
            measure::<f64, Sum>(&gpu, "float64", "sum", n, |r| r.gen_range(-1.0..1.0));
            measure::<i32, Sum>(&gpu, "int32", "sum", n, |r| r.gen_range(-1000..1000));
            measure::<f32, Max>(&gpu, "float32", "max", n, |r| r.gen_range(-1.0..1.0));
        }
    }
}
