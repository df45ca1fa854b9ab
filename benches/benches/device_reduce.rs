//! Criterion benchmark of device reduce (f32 sum) from 2^10 to 2^28 elements on the GPU.
//! Each sample enqueues the reductions back to back and waits once, so it measures GPU throughput.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use primitives::{DeviceReduce, Gpu};
use std::time::{Duration, Instant};

fn device_reduce(c: &mut Criterion) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("the device_reduce benchmark needs a GPU: {e}"));
    let mut group = c.benchmark_group("device_reduce_sum_f32");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2)).sample_size(20);
    for log2 in (10..=28).step_by(2) {
        let n = 1usize << log2;
        let host: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect();
        let copies = benches::rotation(n * 4);
        let inputs: Vec<_> = (0..copies).map(|_| gpu.upload(&host).expect("upload")).collect();
        let mut output = gpu.alloc_zeroed::<f32>(1).expect("alloc");
        group.throughput(Throughput::Bytes((n * 4) as u64));
        group.bench_function(BenchmarkId::from_parameter(format!("2^{log2}")), |b| {
            b.iter_custom(|iterations| {
                gpu.synchronize().expect("sync");
                let start = Instant::now();
                for i in 0..iterations as usize {
                    DeviceReduce::sum(&gpu, &inputs[i % copies], &mut output).expect("reduce");
                }
                gpu.synchronize().expect("sync");
                start.elapsed()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, device_reduce);
criterion_main!(benches);
