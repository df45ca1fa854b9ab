//! Partition and select bandwidth for benches/scripts/select_side_by_side.py: u32 items with a flag
//! byte each (half of them set, at random). Prints CSV `impl,op,n,median_us,gbps` counting the bytes
//! that must move: items and flags read once, items written once (9 bytes an item for a partition).
//!
//! Usage: bandwidth select [MAX_LOG2 (default 28)]

use benches::{rotation, time_gpu};
use primitives::{DevicePartition, DeviceSelect, Gpu, SelectPasses};
use rand::{rngs::SmallRng, Rng, SeedableRng};

pub fn run(max_log2: u32) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("bandwidth select needs a GPU: {e}"));
    eprintln!("device: {} ({} SMs)", gpu.properties().name, gpu.properties().multiprocessors);
    println!("impl,op,n,median_us,gbps");
    for log2 in (20..=max_log2).step_by(2) {
        let n = 1usize << log2;
        let mut rng = SmallRng::seed_from_u64(n as u64);
        let values: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
        let flags: Vec<u8> = (0..n).map(|_| rng.gen_bool(0.5) as u8).collect();
        let copies = rotation(n * 5);
        let inputs: Vec<_> = (0..copies).map(|_| gpu.upload(&values).expect("upload")).collect();
        let flag_buffers: Vec<_> = (0..copies).map(|_| gpu.upload(&flags).expect("upload")).collect();
        let mut output = gpu.alloc_zeroed::<u32>(n).expect("alloc");
        let mut count = gpu.alloc_zeroed::<u64>(1).expect("alloc");
        let us = time_gpu(&gpu, 3, 20, |i| {
            DevicePartition::flagged(&gpu, &inputs[i % copies], &flag_buffers[i % copies], &mut output, &mut count)
                .expect("partition")
        });
        println!("ours,partition_flagged,{n},{us:.3},{:.1}", (9 * n) as f64 / (us * 1e-6) / 1e9);
        for (op, passes) in [
            ("select_flagged", SelectPasses::Auto),
            ("select_one_pass", SelectPasses::One),
            ("select_two_pass", SelectPasses::Two),
        ] {
            let us = time_gpu(&gpu, 3, 20, |i| {
                DeviceSelect::flagged_in(
                    &gpu,
                    passes,
                    &inputs[i % copies],
                    &flag_buffers[i % copies],
                    &mut output,
                    &mut count,
                )
                .expect("select")
            });
            // Select writes only the selected half.
            println!("ours,{op},{n},{us:.3},{:.1}", (7 * n) as f64 / (us * 1e-6) / 1e9);
        }
    }
}
