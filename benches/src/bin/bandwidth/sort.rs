//! Radix sort throughput for benches/scripts/sort_side_by_side.py. Prints CSV
//! `impl,op,n,segments,median_us,gkeys` (keys sorted per second, in billions):
//! * `pairs_u32`: u32 keys with u32 values, uniform random, 2^20..2^26 (the torch.sort comparison);
//! * `keys_u32`: u32 keys only, 2^20..MAX_LOG2;
//! * `segmented_pairs_u32`: 2^26 pairs in 2^10..2^16 equal segments.
//!
//! Each call includes the sort's own allocations (scratch from the stream's memory pool) and, for
//! the segmented sort, its read-back of the offsets.
//!
//! `sort-once LOG2` sorts 2^LOG2 u32 pairs twice and prints nothing: the run to put under a profiler
//! (`ncu --launch-skip` past the first sort's launches).
//!
//! Usage: bandwidth sort [MAX_LOG2 (default 28)] | bandwidth sort-once LOG2

use benches::time_gpu;
use primitives::{DeviceRadixSort, DeviceSegmentedSort, Gpu, SortOrder};
use rand::{rngs::SmallRng, Rng, SeedableRng};

pub fn run(max_log2: u32) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("bandwidth sort needs a GPU: {e}"));
    eprintln!("device: {} ({} SMs)", gpu.properties().name, gpu.properties().multiprocessors);
    println!("impl,op,n,segments,median_us,gkeys");
    let mut rng = SmallRng::seed_from_u64(1);
    let largest = 1usize << max_log2;
    let keys: Vec<u32> = (0..largest).map(|_| rng.gen()).collect();
    for log2 in (20..=max_log2).step_by(2) {
        let n = 1usize << log2;
        let input = gpu.upload(&keys[..n]).expect("upload");
        let mut output = gpu.alloc_zeroed::<u32>(n).expect("alloc");
        let us = time_gpu(&gpu, 3, 20, |_| {
            DeviceRadixSort::sort_keys(&gpu, &input, &mut output, SortOrder::ascending()).expect("sort")
        });
        println!("ours,keys_u32,{n},1,{us:.3},{:.3}", n as f64 / (us * 1e-6) / 1e9);
        if log2 <= 26 {
            let values: Vec<u32> = (0..n as u32).collect();
            let values = gpu.upload(&values).expect("upload");
            let mut moved = gpu.alloc_zeroed::<u32>(n).expect("alloc");
            let us = time_gpu(&gpu, 3, 20, |_| {
                DeviceRadixSort::sort_pairs(&gpu, &input, &mut output, &values, &mut moved, SortOrder::ascending())
                    .expect("sort")
            });
            println!("ours,pairs_u32,{n},1,{us:.3},{:.3}", n as f64 / (us * 1e-6) / 1e9);
        }
    }
    let n = 1usize << max_log2.min(26);
    let input = gpu.upload(&keys[..n]).expect("upload");
    let values: Vec<u32> = (0..n as u32).collect();
    let values = gpu.upload(&values).expect("upload");
    let mut output = gpu.alloc_zeroed::<u32>(n).expect("alloc");
    let mut moved = gpu.alloc_zeroed::<u32>(n).expect("alloc");
    for segments_log2 in (10..=16).step_by(2) {
        let segments = 1usize << segments_log2;
        let offsets: Vec<u32> = (0..=segments).map(|s| (s * (n / segments)) as u32).collect();
        let offsets = gpu.upload(&offsets).expect("upload");
        let us = time_gpu(&gpu, 3, 20, |_| {
            DeviceSegmentedSort::sort_pairs(
                &gpu,
                &input,
                &mut output,
                &values,
                &mut moved,
                &offsets,
                SortOrder::ascending(),
            )
            .expect("sort")
        });
        println!("ours,segmented_pairs_u32,{n},{segments},{us:.3},{:.3}", n as f64 / (us * 1e-6) / 1e9);
    }
}

pub fn once(log2: u32) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("bandwidth sort-once needs a GPU: {e}"));
    let n = 1usize << log2;
    let mut rng = SmallRng::seed_from_u64(1);
    let keys: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    let input = gpu.upload(&keys).expect("upload");
    let values = gpu.upload(&values).expect("upload");
    let mut output = gpu.alloc_zeroed::<u32>(n).expect("alloc");
    let mut moved = gpu.alloc_zeroed::<u32>(n).expect("alloc");
    for _ in 0..2 {
        DeviceRadixSort::sort_pairs(&gpu, &input, &mut output, &values, &mut moved, SortOrder::ascending())
            .expect("sort");
    }
    gpu.synchronize().expect("synchronize");
}
