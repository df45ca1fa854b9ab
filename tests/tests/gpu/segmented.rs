//! Segmented reduce against the CPU oracle, on the GPU with `--features gpu`, else on the SIMT
//! emulator (sizes capped): segment layouts with empty, tiny, typical and huge segments, given as
//! begin/end offsets, CSR offsets and head flags. Integers and fixed point exactly; floats within a
//! bound.

use primitives::ops::{AssociativeOp, Element, GradientPair, Max, Min, Sum};
use primitives::{cpu, DeviceSegmentedReduce, Error, Gpu, SegmentedReduceKernel};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use tests::{gpu, max_len, random_vec};

/// Segment lengths for a layout, adding up to about `n`.
fn layout(name: &str, n: usize, rng: &mut SmallRng) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut total = 0;
    while total < n {
        let length = match name {
            "tiny" => rng.gen_range(0..8),
            "thousand" => 1000,
            "mixed" => match rng.gen_range(0..10) {
                0 => 0,
                1..=6 => rng.gen_range(1..40),
                7 | 8 => rng.gen_range(100..3000),
                _ => rng.gen_range(20_000..200_000),
            },
            "huge" => {
                if lengths.len() < 2 {
                    n / 3
                } else {
                    rng.gen_range(0..50)
                }
            }
            _ => unreachable!(),
        };
        let length = length.min(n - total);
        lengths.push(length);
        total += length;
        if length == 0 && total == n {
            break;
        }
    }
    lengths
}

fn csr(lengths: &[usize]) -> Vec<u32> {
    let mut offsets = vec![0u32];
    for &l in lengths {
        offsets.push(offsets.last().unwrap() + l as u32);
    }
    offsets
}

fn check_exact<T: Element + PartialEq + std::fmt::Debug, Op: SegmentedReduceKernel<T>>(
    gpu: &Gpu,
    values: &[T],
    offsets: &[u32],
) {
    let input = gpu.upload(values).unwrap();
    let segments = offsets.len() - 1;
    let mut output = gpu.alloc_zeroed::<T>(segments).unwrap();
    DeviceSegmentedReduce::reduce_csr::<T, Op>(gpu, &input, &gpu.upload(offsets).unwrap(), &mut output).unwrap();
    let want = cpu::segmented_reduce::<T, Op>(values, &offsets[..segments], &offsets[1..]);
    let got = output.to_vec(gpu).unwrap();
    if let Some(s) = (0..segments).find(|&s| got[s] != want[s]) {
        panic!("segment {s} of {segments} ({}..{}): {:?} != {:?}", offsets[s], offsets[s + 1], got[s], want[s]);
    }
}

fn n_for(gpu: &Gpu) -> usize {
    ((1 << 24) + 77).min(max_len(gpu))
}

#[test]
fn integer_segment_layouts_exact() {
    let gpu = gpu();
    let n = n_for(&gpu);
    for (i, name) in ["tiny", "thousand", "mixed", "huge"].into_iter().enumerate() {
        let mut rng = SmallRng::seed_from_u64(2000 + i as u64);
        let offsets = csr(&layout(name, n, &mut rng));
        let values: Vec<u32> = random_vec(n, 2100 + i as u64, |r| r.gen());
        check_exact::<u32, Sum>(&gpu, &values, &offsets);
        check_exact::<u32, Max>(&gpu, &values, &offsets);
        let values: Vec<i64> = random_vec(n, 2200 + i as u64, |r| r.gen());
        check_exact::<i64, Min>(&gpu, &values, &offsets);
        let values = random_vec(n, 2300 + i as u64, |r| {
            GradientPair::<i64>::new(r.gen_range(-1 << 40..1 << 40), r.gen_range(0..1 << 40))
        });
        check_exact::<GradientPair<i64>, Sum>(&gpu, &values, &offsets);
    }
}

#[test]
fn every_type_and_operator_on_a_mixed_layout() {
    let gpu = gpu();
    let n = 300_000.min(max_len(&gpu));
    let mut rng = SmallRng::seed_from_u64(2400);
    let offsets = csr(&layout("mixed", n, &mut rng));
    macro_rules! each {
        ($($t:ty),*) => {$(
            let values: Vec<$t> = random_vec(n, 2401, |r| r.gen());
            check_exact::<$t, Sum>(&gpu, &values, &offsets);
            check_exact::<$t, Min>(&gpu, &values, &offsets);
            check_exact::<$t, Max>(&gpu, &values, &offsets);
        )*};
    }
    each!(i32, u32, i64, u64);
    let floats: Vec<f32> = random_vec(n, 2402, |r| r.gen_range(-1.0..1.0));
    check_exact::<f32, Min>(&gpu, &floats, &offsets);
    check_exact::<f32, Max>(&gpu, &floats, &offsets);
    let doubles: Vec<f64> = floats.iter().map(|&x| x as f64).collect();
    check_exact::<f64, Min>(&gpu, &doubles, &offsets);
    check_exact::<f64, Max>(&gpu, &doubles, &offsets);
}

#[test]
fn float_sums_within_bound() {
    let gpu = gpu();
    let n = n_for(&gpu);
    let mut rng = SmallRng::seed_from_u64(2500);
    let offsets = csr(&layout("mixed", n, &mut rng));
    let values: Vec<f32> = random_vec(n, 2501, |r| r.gen_range(-1.0..1.0));
    let segments = offsets.len() - 1;
    let input = gpu.upload(&values).unwrap();
    let mut output = gpu.alloc_zeroed::<f32>(segments).unwrap();
    DeviceSegmentedReduce::reduce_csr::<f32, Sum>(&gpu, &input, &gpu.upload(&offsets).unwrap(), &mut output).unwrap();
    let got = output.to_vec(&gpu).unwrap();
    let pairs = random_vec(n, 2502, |r| GradientPair::new(r.gen_range(-1.0f64..1.0), r.gen_range(0.0..1.0)));
    let pair_input = gpu.upload(&pairs).unwrap();
    let mut pair_output = gpu.alloc_zeroed::<GradientPair<f64>>(segments).unwrap();
    DeviceSegmentedReduce::reduce_csr::<GradientPair<f64>, Sum>(
        &gpu,
        &pair_input,
        &gpu.upload(&offsets).unwrap(),
        &mut pair_output,
    )
    .unwrap();
    let pair_got = pair_output.to_vec(&gpu).unwrap();
    for s in 0..segments {
        let (b, e) = (offsets[s] as usize, offsets[s + 1] as usize);
        let exact = cpu::compensated_sum(values[b..e].iter().map(|&x| x as f64));
        let abs: f64 = values[b..e].iter().map(|&x| (x as f64).abs()).sum();
        // Any summation order of m items: at most (m - 1) u sum|x| (plus a little for the f32 output).
        let bound = (e - b) as f64 * f32::EPSILON as f64 / 2.0 * abs + f32::EPSILON as f64 * exact.abs();
        assert!((got[s] as f64 - exact).abs() <= bound, "segment {s}: {} vs {exact}", got[s]);
        let exact = cpu::compensated_sum(pairs[b..e].iter().map(|p| p.grad));
        assert!((pair_got[s].grad - exact).abs() <= 1e-9 * (1.0 + (e - b) as f64), "pair segment {s}");
    }
}

#[test]
fn begin_end_offsets_may_overlap_and_leave_gaps() {
    let gpu = gpu();
    let n = 50_000.min(max_len(&gpu));
    let values: Vec<u64> = random_vec(n, 2600, |r| r.gen_range(0..1 << 40));
    let mut rng = SmallRng::seed_from_u64(2601);
    let segments = 3000;
    let mut begin = Vec::new();
    let mut end = Vec::new();
    for _ in 0..segments {
        let b = rng.gen_range(0..n);
        let reach = if rng.gen_bool(0.01) { n } else { 200 };
        let e = (b + rng.gen_range(0..reach)).min(n);
        begin.push(b as u32);
        end.push(e as u32);
    }
    let mut output = gpu.alloc_zeroed::<u64>(segments).unwrap();
    let input = gpu.upload(&values).unwrap();
    DeviceSegmentedReduce::reduce::<u64, Sum>(
        &gpu,
        &input,
        &gpu.upload(&begin).unwrap(),
        &gpu.upload(&end).unwrap(),
        &mut output,
    )
    .unwrap();
    assert_eq!(output.to_vec(&gpu).unwrap(), cpu::segmented_reduce::<u64, Sum>(&values, &begin, &end));
}

#[test]
fn segments_by_head_flags() {
    let gpu = gpu();
    for (i, n) in [0usize, 1, 5, 1000, 100_003, (1 << 22) + 9].into_iter().filter(|&n| n <= max_len(&gpu)).enumerate() {
        let values: Vec<i32> = random_vec(n, 2700 + i as u64, |r| r.gen());
        let flags: Vec<u8> = random_vec(n, 2800 + i as u64, |r| r.gen_bool(0.02) as u8);
        let input = gpu.upload(&values).unwrap();
        let mut output = gpu.alloc_zeroed::<i32>(n.max(1)).unwrap();
        let mut count = gpu.alloc_zeroed::<u64>(1).unwrap();
        DeviceSegmentedReduce::reduce_by_flags::<i32, Sum>(
            &gpu,
            &input,
            &gpu.upload(&flags).unwrap(),
            &mut output,
            &mut count,
        )
        .unwrap();
        let want = cpu::segmented_reduce_by_flags::<i32, Sum>(&values, &flags);
        let segments = count.to_vec(&gpu).unwrap()[0] as usize;
        assert_eq!(segments, want.len(), "n = {n}");
        assert_eq!(output.to_vec(&gpu).unwrap()[..segments], want[..], "n = {n}");
    }
}

#[test]
fn bad_offsets_are_reported_not_read() {
    let gpu = gpu();
    let input = gpu.upload(&[1u32; 100]).unwrap();
    let mut output = gpu.alloc_zeroed::<u32>(3).unwrap();
    let begin = gpu.upload(&[0u32, 50, 90]).unwrap();
    let end = gpu.upload(&[10u32, 40, 130]).unwrap();
    let error = DeviceSegmentedReduce::reduce::<u32, Sum>(&gpu, &input, &begin, &end, &mut output).unwrap_err();
    match error {
        Error::InvalidArgument { name: "offsets", reason } => assert!(reason.starts_with("segment 1:"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let short_end = gpu.upload(&[10u32, 40]).unwrap();
    let error = DeviceSegmentedReduce::reduce::<u32, Sum>(&gpu, &input, &begin, &short_end, &mut output).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "end", .. }), "{error:?}");
    let mut small_output = gpu.alloc_zeroed::<u32>(2).unwrap();
    let error = DeviceSegmentedReduce::reduce::<u32, Sum>(&gpu, &input, &begin, &end, &mut small_output).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "output", .. }), "{error:?}");
    // Empty segments give the identity.
    let begin = gpu.upload(&[5u32, 7]).unwrap();
    let mut output = gpu.alloc_zeroed::<u32>(2).unwrap();
    DeviceSegmentedReduce::reduce::<u32, Min>(&gpu, &input, &begin, &begin, &mut output).unwrap();
    assert_eq!(output.to_vec(&gpu).unwrap(), [<Min as AssociativeOp<u32>>::identity(); 2]);
}
