//! Device scan (inclusive and exclusive) against the CPU oracle for every instantiated (type,
//! operator), on the GPU with `--features gpu`, else on the SIMT emulator (sizes capped).
//! Integers and fixed-point pairs must match exactly, float min/max exactly, float sums within the
//! stated bound of an exact prefix sum at every position.

use primitives::ops::{AssociativeOp, Element, GradientPair, Max, Min, Sum};
use primitives::{cpu, DeviceScan, Error, Gpu, ScanKernel, ScanTile};
use rand::Rng;
use tests::{gpu, max_len, random_vec, EDGE_SIZES};

/// Sizes for `T`: the edge sizes, around one tile, past one look-back window (32 tiles), large.
fn sizes<T>(gpu: &Gpu) -> Vec<usize> {
    let tile = DeviceScan::tile_items::<T>();
    EDGE_SIZES
        .iter()
        .copied()
        .chain([tile - 1, tile, tile + 1, 2 * tile + 7, 33 * tile + 5, 1 << 20, (1 << 26) + 3])
        .filter(|&n| n <= max_len(gpu))
        .collect()
}

fn check_exact<T: Element + PartialEq + std::fmt::Debug, Op: ScanKernel<T>>(gpu: &Gpu, values: &[T], initial: T) {
    let n = values.len();
    let input = gpu.upload(values).unwrap();
    let mut output = gpu.alloc_zeroed::<T>(n).unwrap();
    let mut want = vec![T::zeroed(); n];

    DeviceScan::inclusive_scan::<T, Op>(gpu, &input, &mut output).unwrap();
    cpu::inclusive_scan::<T, Op>(values, &mut want);
    let got = output.to_vec(gpu).unwrap();
    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
        panic!(
            "inclusive {}, n = {n}: first difference at {i}: {:?} != {:?}",
            std::any::type_name::<Op>(),
            got[i],
            want[i]
        );
    }

    DeviceScan::exclusive_scan::<T, Op>(gpu, &input, &mut output, initial).unwrap();
    cpu::exclusive_scan::<T, Op>(values, &mut want, initial);
    let got = output.to_vec(gpu).unwrap();
    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
        panic!(
            "exclusive {}, n = {n}: first difference at {i}: {:?} != {:?}",
            std::any::type_name::<Op>(),
            got[i],
            want[i]
        );
    }
}

macro_rules! exact_tests {
    ($($name:ident: $t:ty, $draw:expr;)*) => {$(
        #[test]
        fn $name() {
            let gpu = gpu();
            for (i, n) in sizes::<$t>(&gpu).into_iter().enumerate() {
                let values: Vec<$t> = random_vec(n, 500 + i as u64, $draw);
                check_exact::<$t, Sum>(&gpu, &values, 7 as $t);
                check_exact::<$t, Min>(&gpu, &values, <Min as AssociativeOp<$t>>::identity());
                check_exact::<$t, Max>(&gpu, &values, <Max as AssociativeOp<$t>>::identity());
            }
        }
    )*};
}

exact_tests! {
    i32_scans_exact: i32, |r| r.gen();
    u32_scans_exact: u32, |r| r.gen();
    i64_scans_exact: i64, |r| r.gen();
    u64_scans_exact: u64, |r| r.gen();
}

#[test]
fn float_min_max_scans_exact() {
    let gpu = gpu();
    for (i, n) in sizes::<f32>(&gpu).into_iter().enumerate() {
        let values: Vec<f32> = random_vec(n, 600 + i as u64, |r| r.gen_range(-1e30..1e30));
        check_exact::<f32, Min>(&gpu, &values, f32::INFINITY);
        check_exact::<f32, Max>(&gpu, &values, 0.5);
        let values: Vec<f64> = values.iter().map(|&x| x as f64 * 1e100).collect();
        check_exact::<f64, Min>(&gpu, &values, 1e300);
        check_exact::<f64, Max>(&gpu, &values, f64::NEG_INFINITY);
    }
}

#[test]
fn fixed_point_gradient_pairs_exact() {
    let gpu = gpu();
    for (i, n) in sizes::<GradientPair<i64>>(&gpu).into_iter().enumerate() {
        let values = random_vec(n, 700 + i as u64, |r| {
            GradientPair::new(r.gen_range(-1i64 << 40..1 << 40), r.gen_range(0..1i64 << 40))
        });
        check_exact::<GradientPair<i64>, Sum>(&gpu, &values, GradientPair::new(5, 6));
    }
}

/// Prefix sums of floats within `gamma_depth(i) * sum_{j<=i} |x_j|` of the exact prefix sums, where the
/// depth bounds the combination tree the GPU used for position `i`: the thread's items, the block's
/// warp scans (8 + 5 levels), and the look-back chain, at most 6 levels (a 32-wide window and the
/// inclusive prefix it found) per preceding tile.
fn check_float_sums<T: Element + Into<f64>>(gpu: &Gpu, values: &[T], unit_roundoff: f64)
where
    Sum: ScanKernel<T>,
{
    let n = values.len();
    let input = gpu.upload(values).unwrap();
    let mut output = gpu.alloc_zeroed::<T>(n).unwrap();
    DeviceScan::inclusive_sum(gpu, &input, &mut output).unwrap();
    let got = output.to_vec(gpu).unwrap();
    let tile = DeviceScan::tile_items::<T>();
    let items = tile / 256;
    let (mut exact, mut compensation, mut abs_sum) = (0.0f64, 0.0f64, 0.0f64);
    for i in 0..n {
        // Neumaier summation, incrementally.
        let x: f64 = values[i].into();
        let t = exact + x;
        compensation += if exact.abs() >= x.abs() { (exact - t) + x } else { (x - t) + exact };
        exact = t;
        abs_sum += x.abs();
        let depth = items + 13 + 6 * (i / tile + 1);
        let bound =
            cpu::pairwise_error_bound(depth, unit_roundoff, abs_sum) + unit_roundoff * (exact + compensation).abs();
        let g: f64 = got[i].into();
        assert!(
            (g - (exact + compensation)).abs() <= bound,
            "n = {n}, position {i}: got {g}, exact {}, bound {bound}",
            exact + compensation
        );
    }
}

#[test]
fn float_sums_within_bound() {
    let gpu = gpu();
    for (i, n) in sizes::<f32>(&gpu).into_iter().enumerate() {
        let values: Vec<f32> = random_vec(n, 800 + i as u64, |r| r.gen_range(-1.0..1.0));
        check_float_sums(&gpu, &values, f32::EPSILON as f64 / 2.0);
        let values: Vec<f64> = values.iter().map(|&x| x as f64).collect();
        check_float_sums(&gpu, &values, f64::EPSILON / 2.0);
    }
}

#[test]
fn float_gradient_pair_sums_within_bound() {
    let gpu = gpu();
    let n = ((1 << 20) + 17).min(max_len(&gpu));
    let values = random_vec(n, 900, |r| GradientPair::new(r.gen_range(-1.0f32..1.0), r.gen_range(0.0f32..0.25)));
    let input = gpu.upload(&values).unwrap();
    let mut output = gpu.alloc_zeroed::<GradientPair<f32>>(n).unwrap();
    DeviceScan::inclusive_sum(&gpu, &input, &mut output).unwrap();
    let got = output.to_vec(&gpu).unwrap();
    // The components must each be the f32 prefix sums of their own column.
    let grads: Vec<f32> = values.iter().map(|p| p.grad).collect();
    let hess: Vec<f32> = values.iter().map(|p| p.hess).collect();
    let (grad_input, hess_input) = (gpu.upload(&grads).unwrap(), gpu.upload(&hess).unwrap());
    let mut column = gpu.alloc_zeroed::<f32>(n).unwrap();
    DeviceScan::inclusive_sum(&gpu, &grad_input, &mut column).unwrap();
    let grad_scan = column.to_vec(&gpu).unwrap();
    DeviceScan::inclusive_sum(&gpu, &hess_input, &mut column).unwrap();
    let hess_scan = column.to_vec(&gpu).unwrap();
    let tolerance = |x: f32| 1e-3f32.max(x.abs() * 1e-4);
    for i in (0..n).step_by(97).chain([n - 1]) {
        assert!((got[i].grad - grad_scan[i]).abs() <= tolerance(grad_scan[i]), "grad at {i}");
        assert!((got[i].hess - hess_scan[i]).abs() <= tolerance(hess_scan[i]), "hess at {i}");
    }
    check_float_sums(&gpu, &hess, f32::EPSILON as f64 / 2.0);
}

/// Exact types make a race visible: the same input must give the same output every time.
#[test]
fn look_back_gives_the_same_result_run_after_run() {
    let gpu = gpu();
    let n = ((1 << 26) + 1001).min(max_len(&gpu));
    let values: Vec<u32> = random_vec(n, 1000, |r| r.gen());
    let input = gpu.upload(&values).unwrap();
    let mut output = gpu.alloc_zeroed::<u32>(n).unwrap();
    let mut want = vec![0u32; n];
    cpu::inclusive_scan::<u32, Sum>(&values, &mut want);
    let runs = if gpu.is_emulated() { 3 } else { 50 };
    for run in 0..runs {
        DeviceScan::inclusive_sum(&gpu, &input, &mut output).unwrap();
        assert!(output.to_vec(&gpu).unwrap() == want, "run {run} differs");
    }
}

/// The scan variants kept for `bandwidth scan-variants` and `scan-timeline` (the warp-specialized
/// kernel at several look-back depths and sleeps, the staged kernel with rows of 8 and 9 vectors at
/// several block sizes, the timed kernels, the register tile) against the oracle, on small integers
/// as f32 (exact sums), around one tile, past one look-back window and large.
#[test]
fn scan_variants_match_the_oracle() {
    let gpu = gpu();
    let specialized = ScanTile::Specialized { row_vectors: 8 };
    let eight = ScanTile::Staged { row_vectors: 8 };
    let nine = ScanTile::Staged { row_vectors: 9 };
    let variants = [
        ("primitives_scanvariant_specialized_d1_b0_sum_f32", 544, specialized),
        ("primitives_scanvariant_specialized_d2_b64_sum_f32", 544, specialized),
        ("primitives_scanvariant_specialized_d4_b512_sum_f32", 544, specialized),
        ("primitives_scanvariant_specialized_timed_sum_f32", 544, specialized),
        ("primitives_scanvariant_timed_sum_f32", 256, nine),
        ("primitives_scanvariant_registers_sum_f32", 256, ScanTile::Registers),
        ("primitives_scanvariant_rows9_sum_f32", 512, nine),
        ("primitives_scanvariant_rows9_sum_f32", 384, nine),
        ("primitives_scanvariant_rows8_sum_f32", 512, eight),
        ("primitives_scanvariant_rows8_sum_f32", 256, eight),
    ];
    // Around the largest variant tile (512 rows of 8 or 9 vectors of 4 floats), past one look-back
    // window of it, and large.
    let tile = 512 * 9 * 4;
    for n in [1, tile - 1, tile + 1, 33 * tile + 5, (1 << 22) + 3].into_iter().filter(|&n| n <= max_len(&gpu)) {
        // Partial sums stay below 2^24 in magnitude: every f32 sum is exact.
        let values: Vec<f32> = random_vec(n, n as u64, |r| r.gen_range(-3i32..=3) as f32);
        let input = gpu.upload(&values).unwrap();
        let mut want = vec![0f32; n];
        cpu::inclusive_scan::<f32, Sum>(&values, &mut want);
        // Enough timeline for the smallest tile (256 rows of 9 vectors).
        let mut timeline = gpu.alloc_zeroed::<u64>(8 * n.div_ceil(256 * 9 * 4)).unwrap();
        for (name, threads, shape) in variants {
            let mut output = gpu.alloc_zeroed::<f32>(n).unwrap();
            let timed = name.contains("timed").then_some(&mut timeline);
            DeviceScan::inclusive_sum_variant(&gpu, name, threads, shape, 0, &input, &mut output, timed).unwrap();
            assert!(output.to_vec(&gpu).unwrap() == want, "{name} with {threads} threads at n = {n}");
        }
    }
}

#[test]
fn empty_input_and_short_output() {
    let gpu = gpu();
    let empty = gpu.upload::<f32>(&[]).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(0).unwrap();
    DeviceScan::inclusive_sum(&gpu, &empty, &mut out).unwrap();
    let input = gpu.upload(&[1u32, 2, 3]).unwrap();
    let mut short = gpu.alloc_zeroed::<u32>(2).unwrap();
    let error = DeviceScan::inclusive_sum(&gpu, &input, &mut short).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "output", .. }), "{error:?}");
}

#[test]
fn a_prefix_of_the_buffers_is_scanned_and_the_rest_left_alone() {
    let gpu = gpu();
    let n = 3 * DeviceScan::tile_items::<u32>() + 17;
    let values: Vec<u32> = (0..n as u32 + 1000).map(|i| i.wrapping_mul(2654435761) % 7).collect();
    let input = gpu.upload(&values).unwrap();
    let mut output = gpu.upload(&vec![u32::MAX; values.len()]).unwrap();
    // After a scan from another initial value, so the cached initial value is exercised too.
    DeviceScan::exclusive_scan::<u32, Sum>(&gpu, &input, &mut output, 5).unwrap();
    let mut output = gpu.upload(&vec![u32::MAX; values.len()]).unwrap();
    DeviceScan::exclusive_sum_n(&gpu, &input, &mut output, n).unwrap();
    let mut want = vec![u32::MAX; values.len()];
    cpu::exclusive_scan::<u32, Sum>(&values[..n], &mut want[..n], 0);
    assert!(output.to_vec(&gpu).unwrap() == want);
    let error = DeviceScan::exclusive_sum_n(&gpu, &input, &mut output, values.len() + 1).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "num_items", .. }), "{error:?}");
    let mut short = gpu.alloc_zeroed::<u32>(4).unwrap();
    let error = DeviceScan::exclusive_sum_n(&gpu, &input, &mut short, 5).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "output", .. }), "{error:?}");
}

mod segmented {
    use super::*;
    use primitives::{SegmentHeads, SegmentedScanKernel};

    fn check<T: Element + PartialEq + std::fmt::Debug, Op: SegmentedScanKernel<T>>(
        gpu: &Gpu,
        values: &[T],
        flags: &[u8],
    ) {
        let n = values.len();
        let input = gpu.upload(values).unwrap();
        let heads = gpu.upload(flags).unwrap();
        let mut output = gpu.alloc_zeroed::<T>(n).unwrap();
        let mut want = vec![T::zeroed(); n];
        for exclusive in [false, true] {
            if exclusive {
                DeviceScan::exclusive_segmented_scan::<T, Op>(gpu, &input, SegmentHeads::Flags(&heads), &mut output)
                    .unwrap();
            } else {
                DeviceScan::inclusive_segmented_scan::<T, Op>(gpu, &input, SegmentHeads::Flags(&heads), &mut output)
                    .unwrap();
            }
            cpu::segmented_scan::<T, Op>(values, flags, &mut want, exclusive);
            let got = output.to_vec(gpu).unwrap();
            if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                panic!("exclusive {exclusive}, n = {n}: first difference at {i}: {:?} != {:?}", got[i], want[i]);
            }
        }
    }

    #[test]
    fn segmented_scans_by_flags_exact() {
        let gpu = gpu();
        for (i, n) in sizes::<u64>(&gpu).into_iter().enumerate() {
            for density in [0.0, 0.001, 0.3] {
                let flags: Vec<u8> = random_vec(n, 3000 + i as u64, |r| r.gen_bool(density) as u8);
                let values: Vec<u32> = random_vec(n, 3100 + i as u64, |r| r.gen());
                check::<u32, Sum>(&gpu, &values, &flags);
                check::<u32, Max>(&gpu, &values, &flags);
                if n <= 1 << 20 {
                    let values: Vec<i64> = random_vec(n, 3200 + i as u64, |r| r.gen());
                    check::<i64, Min>(&gpu, &values, &flags);
                    let pairs = random_vec(n, 3300 + i as u64, |r| {
                        GradientPair::<i64>::new(r.gen_range(-1 << 40..1 << 40), r.gen_range(0..1 << 40))
                    });
                    check::<GradientPair<i64>, Sum>(&gpu, &pairs, &flags);
                }
            }
        }
    }

    #[test]
    fn every_type_and_operator() {
        let gpu = gpu();
        let n = 50_000;
        let flags: Vec<u8> = random_vec(n, 3400, |r| r.gen_bool(0.01) as u8);
        macro_rules! each {
            ($($t:ty),*) => {$(
                let values: Vec<$t> = random_vec(n, 3401, |r| r.gen());
                check::<$t, Sum>(&gpu, &values, &flags);
                check::<$t, Min>(&gpu, &values, &flags);
                check::<$t, Max>(&gpu, &values, &flags);
            )*};
        }
        each!(i32, u32, i64, u64);
        let floats: Vec<f32> = random_vec(n, 3402, |r| r.gen_range(-1.0..1.0));
        check::<f32, Min>(&gpu, &floats, &flags);
        check::<f32, Max>(&gpu, &floats, &flags);
        let doubles: Vec<f64> = floats.iter().map(|&x| x as f64).collect();
        check::<f64, Max>(&gpu, &doubles, &flags);
        // Float sums: integers-valued floats keep every partial sum exact.
        let whole: Vec<f32> = random_vec(n, 3403, |r| r.gen_range(-100..100) as f32);
        check::<f32, Sum>(&gpu, &whole, &flags);
        let whole: Vec<f64> = whole.iter().map(|&x| x as f64).collect();
        check::<f64, Sum>(&gpu, &whole, &flags);
        let pairs: Vec<GradientPair<f32>> =
            random_vec(n, 3404, |r| GradientPair::new(r.gen_range(-100..100) as f32, r.gen_range(0..100) as f32));
        check::<GradientPair<f32>, Sum>(&gpu, &pairs, &flags);
        let pairs: Vec<GradientPair<f64>> =
            pairs.iter().map(|p| GradientPair::new(p.grad as f64, p.hess as f64)).collect();
        check::<GradientPair<f64>, Sum>(&gpu, &pairs, &flags);
    }

    #[test]
    fn scan_by_key_and_by_offsets() {
        let gpu = gpu();
        let n = (1 << 20).min(max_len(&gpu)) + 3;
        let mut keys = Vec::with_capacity(n);
        let mut key = 0u32;
        let mut rng = tests::random_vec(n, 3500, |r| r.gen_bool(0.002));
        for (i, change) in rng.drain(..).enumerate() {
            if change || i == 7 {
                key = key.wrapping_add(1 + (i as u32 % 3));
            }
            keys.push(key);
        }
        let values: Vec<u64> = random_vec(n, 3501, |r| r.gen_range(0..1 << 40));
        let input = gpu.upload(&values).unwrap();
        let key_buffer = gpu.upload(&keys).unwrap();
        let mut output = gpu.alloc_zeroed::<u64>(n).unwrap();
        DeviceScan::inclusive_segmented_scan::<u64, Sum>(&gpu, &input, SegmentHeads::Keys(&key_buffer), &mut output)
            .unwrap();
        let mut want = vec![0u64; n];
        cpu::segmented_scan::<u64, Sum>(&values, &cpu::key_heads(&keys), &mut want, false);
        assert!(output.to_vec(&gpu).unwrap() == want, "scan by key");

        // The same segments as CSR offsets, with an empty segment in the middle.
        let heads = cpu::key_heads(&keys);
        let mut offsets: Vec<u32> = (0..n).filter(|&i| heads[i] != 0).map(|i| i as u32).collect();
        offsets.insert(offsets.len() / 2, offsets[offsets.len() / 2]);
        offsets.push(n as u32);
        let offset_buffer = gpu.upload(&offsets).unwrap();
        DeviceScan::exclusive_segmented_scan::<u64, Sum>(
            &gpu,
            &input,
            SegmentHeads::Offsets(&offset_buffer),
            &mut output,
        )
        .unwrap();
        cpu::segmented_scan::<u64, Sum>(&values, &cpu::offset_heads(&offsets, n), &mut want, true);
        assert!(output.to_vec(&gpu).unwrap() == want, "scan by offsets");

        // Offsets that do not cover the input, or go backwards, are refused.
        for bad in [vec![0u32, 5, 3, n as u32], vec![0u32, 10], vec![1u32, n as u32]] {
            let error = DeviceScan::inclusive_segmented_scan::<u64, Sum>(
                &gpu,
                &input,
                SegmentHeads::Offsets(&gpu.upload(&bad).unwrap()),
                &mut output,
            )
            .unwrap_err();
            assert!(matches!(error, Error::InvalidArgument { name: "offsets", .. }), "{bad:?}: {error:?}");
        }
    }
}
