//! Segmented-reduce bandwidth for benches/scripts/segmented_side_by_side.py: f32 sums over CSR
//! segments of a fixed length (and one layout of a few huge segments). Prints CSV
//! `impl,layout,n,segment,median_us,gbps` counting the items and offsets read once.
//!
//! Usage: bandwidth segmented [MAX_LOG2 (default 28)]

use benches::{rotation, time_gpu};
use primitives::ops::Sum;
use primitives::{DeviceSegmentedReduce, Gpu};
use rand::{rngs::SmallRng, Rng, SeedableRng};

pub fn run(max_log2: u32) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("bandwidth segmented needs a GPU: {e}"));
    eprintln!("device: {} ({} SMs)", gpu.properties().name, gpu.properties().multiprocessors);
    println!("impl,layout,n,segment,median_us,gbps");
    for log2 in [24, 26, 28].into_iter().filter(|&l| l <= max_log2) {
        let n = 1usize << log2;
        let mut rng = SmallRng::seed_from_u64(n as u64);
        let values: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let copies = rotation(n * 4);
        let inputs: Vec<_> = (0..copies).map(|_| gpu.upload(&values).expect("upload")).collect();
        for segment in [10usize, 100, 1000, 10_000, 1 << 20] {
            let offsets: Vec<u32> = (0..n.div_ceil(segment)).map(|s| (s * segment) as u32).chain([n as u32]).collect();
            let offsets = gpu.upload(&offsets).expect("upload");
            let segments = offsets.len() - 1;
            let mut output = gpu.alloc_zeroed::<f32>(segments).expect("alloc");
            let us = time_gpu(&gpu, 3, 20, |i| {
                DeviceSegmentedReduce::reduce_csr::<f32, Sum>(&gpu, &inputs[i % copies], &offsets, &mut output)
                    .expect("reduce")
            });
            let bytes = n * 4 + (segments + 1) * 4 + segments * 4;
            println!("ours,csr,{n},{segment},{us:.3},{:.1}", bytes as f64 / (us * 1e-6) / 1e9);
        }
    }
}
