//! Device-scan bandwidth for the side-by-side comparison (benches/scripts/scan_side_by_side.py):
//! prints CSV `impl,dtype,op,n,median_us,gbps` counting bytes read plus bytes written, median of 30
//! runs timed with CUDA events after 5 warm-ups, rotating through input copies.
//!
//! Usage: bandwidth scan [MAX_LOG2 (default 28)]

use benches::{rotation, time_gpu};
use primitives::ops::{Element, GradientPair, Sum};
use primitives::{DeviceScan, Gpu, ScanKernel, ScanTile};
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

/// The production scan next to the variants kept for comparison, f32 inclusive sums at 2^24 and at
/// `max_log2`: CSV `impl,dtype,op,n,median_us,gbps`.
pub fn variants(max_log2: u32) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("bandwidth scan-variants needs a GPU: {e}"));
    eprintln!("device: {} ({} SMs)", gpu.properties().name, gpu.properties().multiprocessors);
    println!("impl,dtype,op,n,median_us,gbps");
    // (label, kernel, threads, tile, shared-memory padding): the padded ones run the previous
    // production kernel (rows of 8) with fewer blocks per multiprocessor, so fewer bytes in flight.
    const KIB: usize = 1024;
    let rows8 = "primitives_scanvariant_rows8_sum_f32";
    let rows9 = "primitives_scanvariant_rows9_sum_f32";
    let eight = ScanTile::Staged { row_vectors: 8 };
    let nine = ScanTile::Staged { row_vectors: 9 };
    let specialized = ScanTile::Specialized { row_vectors: 8 };
    let variants: [(&str, &'static str, u32, ScanTile, usize); 15] = [
        ("registers", "primitives_scanvariant_registers_sum_f32", 256, ScanTile::Registers, 0),
        ("rows of 9, 512x3 (216 KiB in flight)", rows9, 512, nine, 0),
        ("rows of 9, 384x4 (216 KiB in flight)", rows9, 384, nine, 0),
        ("rows of 8, 512x3 (192 KiB in flight)", rows8, 512, eight, 0),
        ("rows of 8, 256x6 (192 KiB in flight)", rows8, 256, eight, 0),
        ("rows of 8, 512x2 (128 KiB in flight)", rows8, 512, eight, 20 * KIB),
        ("rows of 8, 256x4 (128 KiB in flight)", rows8, 256, eight, 16 * KIB),
        ("rows of 8, 256x3 (96 KiB in flight)", rows8, 256, eight, 32 * KIB),
        ("specialized depth 1 sleep 0 ns", "primitives_scanvariant_specialized_d1_b0_sum_f32", 544, specialized, 0),
        ("specialized depth 1 sleep 64 ns", "primitives_scanvariant_specialized_d1_b64_sum_f32", 544, specialized, 0),
        ("specialized depth 2 sleep 0 ns", "primitives_scanvariant_specialized_d2_b0_sum_f32", 544, specialized, 0),
        ("specialized depth 2 sleep 64 ns", "primitives_scanvariant_specialized_d2_b64_sum_f32", 544, specialized, 0),
        ("specialized depth 2 sleep 512 ns", "primitives_scanvariant_specialized_d2_b512_sum_f32", 544, specialized, 0),
        ("specialized depth 4 sleep 64 ns", "primitives_scanvariant_specialized_d4_b64_sum_f32", 544, specialized, 0),
        ("specialized depth 4 sleep 512 ns", "primitives_scanvariant_specialized_d4_b512_sum_f32", 544, specialized, 0),
    ];
    for log2 in [24, max_log2] {
        let n = 1usize << log2;
        measure::<f32, Sum>(&gpu, "float32", n, |r| r.gen_range(-1.0..1.0));
        let mut rng = SmallRng::seed_from_u64(n as u64);
        let host: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let copies = rotation(n * 4);
        let inputs: Vec<_> = (0..copies).map(|_| gpu.upload(&host).expect("upload")).collect();
        let mut output = gpu.alloc_zeroed::<f32>(n).expect("alloc");
        for (label, name, threads, tile, padding) in variants {
            let us = time_gpu(&gpu, 5, 30, |i| {
                DeviceScan::inclusive_sum_variant(
                    &gpu,
                    name,
                    threads,
                    tile,
                    padding,
                    &inputs[i % copies],
                    &mut output,
                    None,
                )
                .expect("scan variant")
            });
            let gbps = (2 * n * 4) as f64 / (us * 1e-6) / 1e9;
            println!("{label},float32,inclusive_sum,{n},{us:.3},{gbps:.1}");
        }
    }
}

/// One timed run of the staged scan, or of the warp-specialized one with `specialized` (f32
/// inclusive sum of 2^`log2` items, after warm-ups): the timeline of every tile as CSV
/// `tile,start_ns,sm,c_ticket,c_loaded,c_aggregate,c_prefix,c_scanned,end_ns` (for the specialized
/// scan: c_loaded when the first row warp's part has landed, c_aggregate when the aggregate is
/// published, c_prefix when the look-back is done, c_scanned after the barrier).
pub fn timeline(log2: u32, specialized: bool) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("bandwidth scan-timeline needs a GPU: {e}"));
    let n = 1usize << log2;
    let mut rng = SmallRng::seed_from_u64(n as u64);
    let host: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let input = gpu.upload(&host).expect("upload");
    let mut output = gpu.alloc_zeroed::<f32>(n).expect("alloc");
    let (name, threads, tile, tile_items) = if specialized {
        ("primitives_scanvariant_specialized_timed_sum_f32", 544, ScanTile::Specialized { row_vectors: 8 }, 512 * 8 * 4)
    } else {
        let rows = ScanTile::Staged { row_vectors: DeviceScan::STAGED_ROW_VECTORS };
        ("primitives_scanvariant_timed_sum_f32", 256, rows, DeviceScan::tile_items::<f32>())
    };
    let tiles = n.div_ceil(tile_items);
    let mut timeline = gpu.alloc_zeroed::<u64>(8 * tiles).expect("alloc");
    for _ in 0..5 {
        DeviceScan::inclusive_sum_variant(&gpu, name, threads, tile, 0, &input, &mut output, Some(&mut timeline))
            .expect("timed scan");
    }
    let words = timeline.to_vec(&gpu).expect("download");
    println!("tile,start_ns,sm,c_ticket,c_loaded,c_aggregate,c_prefix,c_scanned,end_ns");
    for (tile, w) in words.chunks(8).enumerate() {
        println!("{tile},{},{},{},{},{},{},{},{}", w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]);
    }
}
