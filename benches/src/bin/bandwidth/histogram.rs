//! Histogram throughput for benches/scripts/histogram_side_by_side.py. Prints CSV
//! `impl,op,layout,n,features,bins,nodes,median_us,g_items_per_s`, where an item is a sample for the
//! histograms of a sequence and a (row, feature) pair for the multi-feature histogram:
//!
//! * `count_u8`: 2^MAX_LOG2 `u8` samples into 256 bins, uniform (`uniform`), 95 % in one bin
//!   (`skewed`) and all in one bin (`constant`), with the selector's layout;
//! * `layouts`: the same uniform and skewed inputs into 1 to 1024 bins with each block-histogram
//!   layout forced (`warp_columns`, `atomic1`, `atomic8`) and the selector's (`auto`), `u16` samples
//!   past 256 bins: the figures behind `BlockHistogramLayout::select`;
//! * `weighted_f32_u8`, `weighted_gpi64_u8`, `even_f32`: 2^(MAX_LOG2 - 2) samples into 256 bins;
//! * `multi_gpi64_u8`: 10M rows x 28 features x 256 bins, fixed-point gradient pairs, with one node
//!   (all rows in order) and with 8 nodes (rows dealt at random, in order within a node). Each call
//!   includes the upload of its work list and the wait for the row-index check.
//!
//! Usage: bandwidth histogram [MAX_LOG2 (default 28)]

use benches::time_gpu;
use primitives::ops::GradientPair;
use primitives::{
    pack_bin_rows, BlockHistogramLayout, DeviceBuffer, DeviceHistogram, Gpu, MultiFeatureMatrix, PackedBinMatrix,
};
use rand::{rngs::SmallRng, Rng, SeedableRng};

const WARMUP: usize = 3;
const REPEATS: usize = 20;
/// The boosting shape: rows, features, bins per feature.
const MULTI_SHAPE: (usize, usize, usize) = (10_000_000, 28, 256);

fn print(op: &str, layout: &str, n: usize, features: usize, bins: usize, nodes: usize, us: f64) {
    let items = n * features.max(1);
    println!("ours,{op},{layout},{n},{features},{bins},{nodes},{us:.3},{:.2}", items as f64 / (us * 1e-6) / 1e9);
}

/// Uniform, skewed (95 % in bin 3) and constant `u8` samples below `bins`.
fn distributions(n: usize, bins: u32) -> Vec<(&'static str, Vec<u8>)> {
    let mut rng = SmallRng::seed_from_u64(n as u64 + bins as u64);
    let hot = 3.min(bins - 1) as u8;
    let uniform: Vec<u8> = (0..n).map(|_| rng.gen_range(0..bins) as u8).collect();
    let skewed: Vec<u8> = (0..n).map(|_| if rng.gen_bool(0.95) { hot } else { rng.gen_range(0..bins) as u8 }).collect();
    vec![("uniform", uniform), ("skewed", skewed), ("constant", vec![hot; n])]
}

fn time_count<B: primitives::BinIndex>(
    gpu: &Gpu,
    input: &DeviceBuffer<B>,
    bins: usize,
    layout: Option<BlockHistogramLayout>,
) -> Option<f64> {
    let mut histogram = gpu.alloc_zeroed::<u64>(bins).expect("alloc");
    let mut ignored = gpu.alloc_zeroed::<u64>(1).expect("alloc");
    // A layout that does not fit in shared memory is skipped.
    DeviceHistogram::count_with_layout(gpu, input, layout, &mut histogram, &mut ignored).ok()?;
    Some(time_gpu(gpu, WARMUP, REPEATS, |_| {
        DeviceHistogram::count_with_layout(gpu, input, layout, &mut histogram, &mut ignored).expect("histogram")
    }))
}

pub fn run(max_log2: u32) {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("bandwidth histogram needs a GPU: {e}"));
    eprintln!("device: {} ({} SMs)", gpu.properties().name, gpu.properties().multiprocessors);
    println!("impl,op,layout,n,features,bins,nodes,median_us,g_items_per_s");
    let n = 1usize << max_log2;

    for (name, samples) in distributions(n, 256) {
        let input = gpu.upload(&samples).expect("upload");
        let us = time_count(&gpu, &input, 256, None).expect("256 bins fit");
        print(&format!("count_u8_{name}"), "auto", n, 0, 256, 1, us);
    }

    let layouts = [
        ("auto", None),
        ("warp_columns", Some(BlockHistogramLayout::WarpColumns)),
        ("atomic1", Some(BlockHistogramLayout::Atomic { copies: 1 })),
        ("atomic8", Some(BlockHistogramLayout::Atomic { copies: 8 })),
    ];
    for bins in [1u32, 2, 4, 8, 16, 32, 64, 128, 256, 1024] {
        let mut rng = SmallRng::seed_from_u64(bins as u64);
        let uniform: Vec<u16> = (0..n).map(|_| rng.gen_range(0..bins) as u16).collect();
        let skewed: Vec<u16> =
            (0..n).map(|_| if rng.gen_bool(0.95) { 0 } else { rng.gen_range(0..bins) as u16 }).collect();
        for (name, samples) in [("uniform", uniform), ("skewed", skewed)] {
            let (op, wide, narrow);
            if bins <= 256 {
                op = format!("layouts_u8_{name}");
                narrow = Some(gpu.upload(&samples.iter().map(|&s| s as u8).collect::<Vec<u8>>()).expect("upload"));
                wide = None;
            } else {
                op = format!("layouts_u16_{name}");
                narrow = None;
                wide = Some(gpu.upload(&samples).expect("upload"));
            }
            for (layout_name, layout) in layouts {
                let us = match (&narrow, &wide) {
                    (Some(input), _) => time_count(&gpu, input, bins as usize, layout),
                    (_, Some(input)) => time_count(&gpu, input, bins as usize, layout),
                    _ => None,
                };
                if let Some(us) = us {
                    print(&op, layout_name, n, 0, bins as usize, 1, us);
                }
            }
        }
    }

    let quarter = n / 4;
    let mut rng = SmallRng::seed_from_u64(7);
    let samples: Vec<u8> = (0..quarter).map(|_| rng.gen()).collect();
    let input = gpu.upload(&samples).expect("upload");
    let mut ignored = gpu.alloc_zeroed::<u64>(1).expect("alloc");
    let weights: Vec<f32> = (0..quarter).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let weights = gpu.upload(&weights).expect("upload");
    let mut histogram = gpu.alloc_zeroed::<f32>(256).expect("alloc");
    let us = time_gpu(&gpu, WARMUP, REPEATS, |_| {
        DeviceHistogram::weighted(&gpu, &input, &weights, &mut histogram, &mut ignored).expect("weighted")
    });
    print("weighted_f32_u8", "auto", quarter, 0, 256, 1, us);
    let pairs: Vec<GradientPair<i64>> = (0..quarter)
        .map(|_| GradientPair::new(rng.gen_range(-(1 << 40)..1 << 40), rng.gen_range(0..1 << 40)))
        .collect();
    let pairs = gpu.upload(&pairs).expect("upload");
    let mut histogram = gpu.alloc_zeroed::<GradientPair<i64>>(256).expect("alloc");
    let us = time_gpu(&gpu, WARMUP, REPEATS, |_| {
        DeviceHistogram::weighted(&gpu, &input, &pairs, &mut histogram, &mut ignored).expect("weighted")
    });
    print("weighted_gpi64_u8", "auto", quarter, 0, 256, 1, us);
    let floats: Vec<f32> = (0..quarter).map(|_| rng.gen_range(-0.1..1.1)).collect();
    let floats = gpu.upload(&floats).expect("upload");
    let mut histogram = gpu.alloc_zeroed::<u64>(256).expect("alloc");
    let us = time_gpu(&gpu, WARMUP, REPEATS, |_| {
        DeviceHistogram::histogram_even(&gpu, &floats, 0.0, 1.0, &mut histogram, &mut ignored).expect("even")
    });
    print("even_f32", "auto", quarter, 0, 256, 1, us);

    multi_feature(&gpu);
}

fn multi_feature(gpu: &Gpu) {
    let (rows, features, bins_per_feature) = MULTI_SHAPE;
    let mut rng = SmallRng::seed_from_u64(28);
    let ids: Vec<u32> = (0..rows * features).map(|_| rng.gen_range(0..bins_per_feature as u32)).collect();
    let gradients: Vec<GradientPair<i64>> =
        (0..rows).map(|_| GradientPair::new(rng.gen_range(-(1 << 40)..1 << 40), rng.gen_range(0..1 << 40))).collect();
    let gradients = gpu.upload(&gradients).expect("upload");
    let u8_ids = gpu.upload(&ids.iter().map(|&id| id as u8).collect::<Vec<u8>>()).expect("upload");
    let u16_ids = gpu.upload(&ids.iter().map(|&id| id as u16).collect::<Vec<u16>>()).expect("upload");
    // 9 bits: 256 bins and the missing id, as boost's ELLPACK would pack them.
    let bits = 9;
    let words = gpu.upload(&pack_bin_rows(&ids, features, bits)).expect("upload");
    let packed = PackedBinMatrix { words: &words, row_words: words.len() / rows, bits, features, bins_per_feature };
    drop(ids);
    for nodes in [1usize, 8, 256] {
        // Rows dealt to nodes at random, in row order within each node (a stable partition).
        let owner: Vec<u32> = (0..rows).map(|_| rng.gen_range(0..nodes as u32)).collect();
        let mut row_list: Vec<u32> = (0..rows as u32).collect();
        row_list.sort_by_key(|&r| owner[r as usize]);
        let mut offsets = vec![0u32; nodes + 1];
        owner.iter().for_each(|&n| offsets[n as usize + 1] += 1);
        (0..nodes).for_each(|n| offsets[n + 1] += offsets[n]);
        let row_list = gpu.upload(&row_list).expect("upload");
        let mut histogram = gpu.alloc_zeroed::<GradientPair<i64>>(nodes * features * bins_per_feature).expect("alloc");
        let mut time = |op: &str, launch: &dyn Fn(&mut DeviceBuffer<GradientPair<i64>>)| {
            let us = time_gpu(gpu, WARMUP, REPEATS, |_| launch(&mut histogram));
            print(op, "auto", rows, features, bins_per_feature, nodes, us);
        };
        time("multi_gpi64_u8", &|h| {
            let matrix = MultiFeatureMatrix { bins: &u8_ids, features, bins_per_feature };
            DeviceHistogram::multi_feature(gpu, matrix, &gradients, &row_list, &offsets, h).expect("multi-feature")
        });
        time("multi_gpi64_u16", &|h| {
            let matrix = MultiFeatureMatrix { bins: &u16_ids, features, bins_per_feature };
            DeviceHistogram::multi_feature(gpu, matrix, &gradients, &row_list, &offsets, h).expect("multi-feature")
        });
        time("multi_gpi64_packed9", &|h| {
            DeviceHistogram::multi_feature(gpu, packed, &gradients, &row_list, &offsets, h).expect("multi-feature")
        });
    }
}
