//! Select, partition and run-length encode against the CPU oracles, on the GPU with `--features gpu`,
//! else on the SIMT emulator (sizes capped). All exact.

use primitives::ops::{Element, GradientPair};
use primitives::{
    cpu, CompareKernel, Comparison, DevicePartition, DeviceRunLengthEncode, DeviceScan, DeviceSelect, Error, Gpu,
    SelectKernel, SelectPasses,
};
use rand::Rng;
use tests::{gpu, max_len, random_vec, EDGE_SIZES};

fn sizes<T>(gpu: &Gpu) -> Vec<usize> {
    let tile = DeviceScan::tile_items::<T>();
    // Select's tiles, and the partition's offsets pass (eight of them a block).
    let select_tile = DeviceSelect::tile_items::<T>();
    EDGE_SIZES
        .iter()
        .copied()
        .chain([tile - 1, tile, tile + 1, 40 * tile + 3, 1 << 20, (1 << 26) + 5])
        .chain([select_tile - 1, select_tile + 1, 8 * select_tile, 8 * select_tile + 1, 17 * select_tile - 5])
        .filter(|&n| n <= max_len(gpu))
        .collect()
}

/// Both ways of selecting, whatever the size (`Auto` picks one of them).
const PASSES: [SelectPasses; 2] = [SelectPasses::One, SelectPasses::Two];

/// Flag densities: none, sparse, half, dense, all.
const DENSITIES: [f64; 5] = [0.0, 0.01, 0.5, 0.97, 1.0];

fn check_flagged<T: SelectKernel + PartialEq + std::fmt::Debug>(gpu: &Gpu, values: &[T], flags: &[u8]) {
    let n = values.len();
    let input = gpu.upload(values).unwrap();
    let flag_buffer = gpu.upload(flags).unwrap();
    let mut output = gpu.alloc_zeroed::<T>(n).unwrap();
    let mut count = gpu.alloc_zeroed::<u64>(1).unwrap();

    let want = cpu::select_flagged(values, flags);
    for passes in PASSES {
        DeviceSelect::flagged_in(gpu, passes, &input, &flag_buffer, &mut output, &mut count).unwrap();
        assert_eq!(count.to_vec(gpu).unwrap()[0] as usize, want.len(), "select count, {passes:?}, n = {n}");
        assert!(output.to_vec(gpu).unwrap()[..want.len()] == want[..], "select, {passes:?}, n = {n}");
    }

    DevicePartition::flagged(gpu, &input, &flag_buffer, &mut output, &mut count).unwrap();
    let (want, selected) = cpu::partition(values, |i, _| flags[i] != 0);
    assert_eq!(count.to_vec(gpu).unwrap()[0] as usize, selected, "partition count, n = {n}");
    assert!(output.to_vec(gpu).unwrap() == want, "partition, n = {n}");
}

fn random_flags(n: usize, density: f64, seed: u64) -> Vec<u8> {
    random_vec(n, seed, |r| if r.gen_bool(density) { r.gen_range(1..=255) } else { 0 })
}

#[test]
fn flagged_select_and_partition_of_every_type() {
    let gpu = gpu();
    macro_rules! each {
        ($($t:ty, $draw:expr;)*) => {$(
            for (i, n) in sizes::<$t>(&gpu).into_iter().enumerate() {
                let values: Vec<$t> = random_vec(n, 1100 + i as u64, $draw);
                for (d, density) in DENSITIES.into_iter().enumerate() {
                    // The large sizes once, at density 1/2.
                    if n >= 1 << 20 && d != 2 {
                        continue;
                    }
                    check_flagged(&gpu, &values, &random_flags(n, density, 1200 + (i * 10 + d) as u64));
                }
            }
        )*};
    }
    each! {
        u32, |r| r.gen();
        f32, |r| r.gen_range(-1.0..1.0);
        i64, |r| r.gen();
        f64, |r| r.gen();
        GradientPair<f32>, |r| GradientPair::new(r.gen(), r.gen());
        GradientPair<i64>, |r| GradientPair::new(r.gen(), r.gen());
    }
    // The remaining types at a few sizes.
    for n in [0, 1, 1000, 100_003] {
        check_flagged(&gpu, &random_vec(n, 1300, |r| r.gen::<i32>()), &random_flags(n, 0.3, 1301));
        check_flagged(&gpu, &random_vec(n, 1302, |r| r.gen::<u64>()), &random_flags(n, 0.3, 1303));
        check_flagged(
            &gpu,
            &random_vec(n, 1304, |r| GradientPair::<f64>::new(r.gen(), r.gen())),
            &random_flags(n, 0.3, 1305),
        );
    }
}

fn check_compare<T: CompareKernel + PartialEq + std::fmt::Debug>(
    gpu: &Gpu,
    values: &[T],
    comparison: Comparison,
    threshold: T,
) {
    let n = values.len();
    let input = gpu.upload(values).unwrap();
    let mut output = gpu.alloc_zeroed::<T>(n).unwrap();
    let mut count = gpu.alloc_zeroed::<u64>(1).unwrap();
    let want = cpu::select_if(values, |x| comparison.holds(x, threshold));
    for passes in PASSES {
        DeviceSelect::compare_in(gpu, passes, &input, comparison, threshold, &mut output, &mut count).unwrap();
        assert_eq!(count.to_vec(gpu).unwrap()[0] as usize, want.len(), "{comparison:?}, {passes:?}, n = {n}");
        assert!(output.to_vec(gpu).unwrap()[..want.len()] == want[..], "{comparison:?}, {passes:?}, n = {n}");
    }
    DevicePartition::compare(gpu, &input, comparison, threshold, &mut output, &mut count).unwrap();
    let (want, selected) = cpu::partition(values, |_, x| comparison.holds(x, threshold));
    assert_eq!(count.to_vec(gpu).unwrap()[0] as usize, selected);
    assert!(output.to_vec(gpu).unwrap() == want, "partition {comparison:?}, n = {n}");
}

#[test]
fn select_and_partition_by_comparison() {
    let gpu = gpu();
    let comparisons = [
        Comparison::Less,
        Comparison::LessEqual,
        Comparison::Greater,
        Comparison::GreaterEqual,
        Comparison::Equal,
        Comparison::NotEqual,
    ];
    for (i, n) in sizes::<f32>(&gpu).into_iter().enumerate() {
        let values: Vec<u32> = random_vec(n, 1400 + i as u64, |r| r.gen_range(0..100));
        let floats: Vec<f32> = values.iter().map(|&x| x as f32 - 50.0).collect();
        for (c, comparison) in comparisons.into_iter().enumerate() {
            if n >= 1 << 20 && c > 0 {
                continue;
            }
            check_compare(&gpu, &values, comparison, 37);
            check_compare(&gpu, &floats, comparison, -13.0);
        }
    }
    let values: Vec<i64> = random_vec(5000, 1500, |r| r.gen_range(-10..10));
    check_compare(&gpu, &values, Comparison::Less, 0);
    let values: Vec<f64> = random_vec(5000, 1501, |r| r.gen_range(-1.0..1.0));
    check_compare(&gpu, &values, Comparison::GreaterEqual, 0.25);
}

fn check_run_length<T: CompareKernel + PartialEq + std::fmt::Debug>(gpu: &Gpu, values: &[T]) {
    let n = values.len();
    let input = gpu.upload(values).unwrap();
    let mut unique = gpu.alloc_zeroed::<T>(n).unwrap();
    let mut lengths = gpu.alloc_zeroed::<u32>(n).unwrap();
    let mut runs = gpu.alloc_zeroed::<u64>(1).unwrap();
    DeviceRunLengthEncode::encode(gpu, &input, &mut unique, &mut lengths, &mut runs).unwrap();
    let (want_unique, want_lengths) = cpu::run_length_encode(values);
    let r = runs.to_vec(gpu).unwrap()[0] as usize;
    assert_eq!(r, want_unique.len(), "runs, n = {n}");
    let got: Vec<T> = unique.to_vec(gpu).unwrap()[..r].to_vec();
    assert!(bytemuck_eq(&got, &want_unique), "unique values, n = {n}");
    assert_eq!(lengths.to_vec(gpu).unwrap()[..r], want_lengths[..], "lengths, n = {n}");
}

fn bytemuck_eq<T: Element>(a: &[T], b: &[T]) -> bool {
    bytemuck::cast_slice::<T, u8>(a) == bytemuck::cast_slice::<T, u8>(b)
}

#[test]
fn run_length_encode_matches_the_oracle() {
    let gpu = gpu();
    for (i, n) in sizes::<u32>(&gpu).into_iter().enumerate() {
        // Runs of random lengths (mostly short, some long).
        let mut rng = tests::random_vec(1, 1600 + i as u64, |r| r.gen::<u64>());
        let mut state = rng.pop().unwrap_or(1) | 1;
        let mut values = Vec::with_capacity(n);
        while values.len() < n {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let length = if state >> 60 == 0 { (state >> 20) as usize % 5000 } else { 1 + (state >> 40) as usize % 4 };
            let value = (state >> 33) as u32 % 3;
            values.extend(std::iter::repeat_n(value, length.min(n - values.len())));
        }
        check_run_length(&gpu, &values);
        let floats: Vec<f32> = values.iter().map(|&v| if v == 2 { f32::NAN } else { v as f32 }).collect();
        check_run_length(&gpu, &floats);
    }
    check_run_length(&gpu, &[0.0f64, -0.0, -0.0, 1.0]);
    check_run_length(&gpu, &[5i64; 10_000]);
}

#[test]
fn bad_lengths_are_invalid_arguments() {
    let gpu = gpu();
    let input = gpu.upload(&[1u32, 2, 3]).unwrap();
    let flags = gpu.upload(&[1u8, 0]).unwrap();
    let mut output = gpu.alloc_zeroed::<u32>(3).unwrap();
    let mut count = gpu.alloc_zeroed::<u64>(1).unwrap();
    let error = DeviceSelect::flagged(&gpu, &input, &flags, &mut output, &mut count).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "flags", .. }), "{error:?}");
    let mut short = gpu.alloc_zeroed::<u32>(2).unwrap();
    let flags = gpu.upload(&[1u8, 0, 1]).unwrap();
    let error = DevicePartition::flagged(&gpu, &input, &flags, &mut short, &mut count).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "output", .. }), "{error:?}");
    let mut no_count = gpu.alloc_zeroed::<u64>(0).unwrap();
    let error = DeviceSelect::compare(&gpu, &input, Comparison::Less, 2, &mut output, &mut no_count).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "count", .. }), "{error:?}");
}
