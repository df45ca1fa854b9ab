//! Multireduce and multiscan cost against the bucket count at 2^26 u32 items (uniform buckets), and
//! the two halves of the alternative "sort by bucket, then segmented scan": our radix sort of the
//! (bucket id, value) pairs over the id's few bits, and the segmented scan of values already sorted
//! by bucket (the script also times torch's sort). Prints CSV `impl,op,n,buckets,median_us,gbps`
//! (bytes: values and bucket ids read, outputs written).
//!
//! Usage: bandwidth multi [MAX_LOG2 (default 26)]

use benches::time_gpu;
use primitives::ops::Sum;
use primitives::{DeviceMulti, DeviceRadixSort, DeviceScan, DeviceSegmentedReduce, Gpu, SegmentHeads, SortOrder};
use rand::{rngs::SmallRng, Rng, SeedableRng};

pub fn run(max_log2: u32) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("bandwidth multi needs a GPU: {e}"));
    eprintln!("device: {} ({} SMs)", gpu.properties().name, gpu.properties().multiprocessors);
    println!("impl,op,n,buckets,median_us,gbps");
    let n = 1usize << max_log2.min(26);
    let mut rng = SmallRng::seed_from_u64(7);
    let values: Vec<u32> = (0..n).map(|_| rng.gen_range(0..1000)).collect();
    let input = gpu.upload(&values).expect("upload");
    let mut output = gpu.alloc_zeroed::<u32>(n).expect("alloc");
    for buckets in [1u32, 2, 4, 8, 16, 32, 64] {
        let ids: Vec<u32> = (0..n).map(|_| rng.gen_range(0..buckets)).collect();
        let ids = gpu.upload(&ids).expect("upload");
        let mut totals = gpu.alloc_zeroed::<u32>(buckets as usize).expect("alloc");
        let us = time_gpu(&gpu, 2, 10, |_| {
            DeviceMulti::reduce::<u32, Sum>(&gpu, &input, &ids, buckets, &mut totals).expect("multireduce")
        });
        println!("ours,multireduce,{n},{buckets},{us:.3},{:.1}", (8 * n) as f64 / (us * 1e-6) / 1e9);
        let us = time_gpu(&gpu, 2, 10, |_| {
            DeviceMulti::exclusive_scan::<u32, Sum>(&gpu, &input, &ids, buckets, &mut output).expect("multiscan")
        });
        println!("ours,multiscan,{n},{buckets},{us:.3},{:.1}", (12 * n) as f64 / (us * 1e-6) / 1e9);
        // Sort the pairs by bucket id over just the id's bits (at least one).
        let bits = buckets.next_power_of_two().trailing_zeros().max(1);
        let mut ids_out = gpu.alloc_zeroed::<u32>(n).expect("alloc");
        let us = time_gpu(&gpu, 2, 10, |_| {
            let order = SortOrder::ascending().bits(0, bits);
            DeviceRadixSort::sort_pairs(&gpu, &ids, &mut ids_out, &input, &mut output, order).expect("sort")
        });
        println!("ours,sort_by_bucket,{n},{buckets},{us:.3},{:.1}", (16 * n) as f64 / (us * 1e-6) / 1e9);
        // The same data sorted by bucket: a segmented scan by key and a segmented reduce.
        let mut sorted_ids: Vec<u32> = (0..n).map(|i| (i * buckets as usize / n) as u32).collect();
        sorted_ids.sort_unstable();
        let keys = gpu.upload(&sorted_ids).expect("upload");
        let us = time_gpu(&gpu, 2, 10, |_| {
            DeviceScan::exclusive_segmented_scan::<u32, Sum>(&gpu, &input, SegmentHeads::Keys(&keys), &mut output)
                .expect("segmented scan")
        });
        println!("ours,segmented_scan_sorted,{n},{buckets},{us:.3},{:.1}", (12 * n) as f64 / (us * 1e-6) / 1e9);
        let offsets: Vec<u32> = (0..=buckets as usize).map(|b| (b * n / buckets as usize) as u32).collect();
        let offsets = gpu.upload(&offsets).expect("upload");
        let us = time_gpu(&gpu, 2, 10, |_| {
            DeviceSegmentedReduce::reduce_csr::<u32, Sum>(&gpu, &input, &offsets, &mut totals)
                .expect("segmented reduce")
        });
        println!("ours,segmented_reduce_sorted,{n},{buckets},{us:.3},{:.1}", (4 * n) as f64 / (us * 1e-6) / 1e9);
    }
}
