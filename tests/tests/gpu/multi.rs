//! Multireduce and multiscan against the CPU oracles: bucket counts 1, 2, 31, 32, 33, 64, skewed and
//! uniform bucket distributions, integers and fixed point exactly, integer-valued floats exactly.

use primitives::ops::{Element, GradientPair, Max, Min, Sum};
use primitives::{cpu, DeviceMulti, Error, Gpu, MultiKernel};
use rand::Rng;
use tests::{gpu, max_len, random_vec, EDGE_SIZES};

const BUCKET_COUNTS: [u32; 6] = [1, 2, 31, 32, 33, 64];

fn check<T: Element + PartialEq + std::fmt::Debug, Op: MultiKernel<T>>(
    gpu: &Gpu,
    values: &[T],
    buckets: &[u32],
    bucket_count: u32,
) {
    let n = values.len();
    let input = gpu.upload(values).unwrap();
    let bucket_buffer = gpu.upload(buckets).unwrap();
    let mut totals = gpu.alloc_zeroed::<T>(bucket_count as usize).unwrap();
    DeviceMulti::reduce::<T, Op>(gpu, &input, &bucket_buffer, bucket_count, &mut totals).unwrap();
    assert_eq!(
        totals.to_vec(gpu).unwrap(),
        cpu::multireduce::<T, Op>(values, buckets, bucket_count),
        "multireduce, n = {n}, B = {bucket_count}"
    );
    let mut output = gpu.alloc_zeroed::<T>(n).unwrap();
    for inclusive in [false, true] {
        if inclusive {
            DeviceMulti::inclusive_scan::<T, Op>(gpu, &input, &bucket_buffer, bucket_count, &mut output).unwrap();
        } else {
            DeviceMulti::exclusive_scan::<T, Op>(gpu, &input, &bucket_buffer, bucket_count, &mut output).unwrap();
        }
        let want = cpu::multiscan::<T, Op>(values, buckets, bucket_count, inclusive);
        let got = output.to_vec(gpu).unwrap();
        if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
            panic!(
                "multiscan inclusive {inclusive}, n = {n}, B = {bucket_count}: first difference at {i}: {:?} != {:?}",
                got[i], want[i]
            );
        }
    }
}

fn buckets_for(n: usize, bucket_count: u32, skewed: bool, seed: u64) -> Vec<u32> {
    random_vec(n, seed, |r| if skewed && r.gen_bool(0.9) { 0 } else { r.gen_range(0..bucket_count) })
}

#[test]
fn bucket_counts_and_sizes_exact() {
    let gpu = gpu();
    // Every live bucket costs a masked warp pass, each a few dozen coroutine switches per lane on the
    // emulator: it gets the smaller sizes.
    let cap = if gpu.is_emulated() { 1 << 13 } else { max_len(&gpu) };
    let sizes: Vec<usize> = EDGE_SIZES.iter().copied().chain([1 << 20, (1 << 24) + 3]).filter(|&n| n <= cap).collect();
    for (i, &n) in sizes.iter().enumerate() {
        for (j, bucket_count) in BUCKET_COUNTS.into_iter().enumerate() {
            if n > 100_003 && bucket_count != 64 && bucket_count != 2 {
                continue;
            }
            let seed = 4000 + (i * 10 + j) as u64;
            let buckets = buckets_for(n, bucket_count, j % 2 == 1, seed);
            let values: Vec<u64> = random_vec(n, seed + 1, |r| r.gen_range(0..1 << 40));
            check::<u64, Sum>(&gpu, &values, &buckets, bucket_count);
            let pairs = random_vec(n, seed + 2, |r| {
                GradientPair::<i64>::new(r.gen_range(-1 << 40..1 << 40), r.gen_range(0..1 << 40))
            });
            check::<GradientPair<i64>, Sum>(&gpu, &pairs, &buckets, bucket_count);
        }
    }
}

#[test]
fn every_type_and_operator() {
    let gpu = gpu();
    let n = if gpu.is_emulated() { 5_000 } else { 300_000 };
    let buckets = buckets_for(n, 33, false, 4100);
    macro_rules! each {
        ($($t:ty),*) => {$(
            let values: Vec<$t> = random_vec(n, 4101, |r| r.gen());
            check::<$t, Sum>(&gpu, &values, &buckets, 33);
            check::<$t, Min>(&gpu, &values, &buckets, 33);
            check::<$t, Max>(&gpu, &values, &buckets, 33);
        )*};
    }
    each!(i32, u32, i64, u64);
    // Integer-valued floats keep every partial sum exact, whatever the grouping.
    let floats: Vec<f32> = random_vec(n, 4102, |r| r.gen_range(-1000..1000) as f32);
    check::<f32, Sum>(&gpu, &floats, &buckets, 33);
    check::<f32, Min>(&gpu, &floats, &buckets, 33);
    check::<f32, Max>(&gpu, &floats, &buckets, 33);
    let doubles: Vec<f64> = floats.iter().map(|&x| x as f64).collect();
    check::<f64, Sum>(&gpu, &doubles, &buckets, 33);
    check::<f64, Min>(&gpu, &doubles, &buckets, 33);
    check::<f64, Max>(&gpu, &doubles, &buckets, 33);
    let pairs: Vec<GradientPair<f32>> = floats.iter().map(|&x| GradientPair::new(x, x.abs())).collect();
    check::<GradientPair<f32>, Sum>(&gpu, &pairs, &buckets, 33);
    let pairs: Vec<GradientPair<f64>> = doubles.iter().map(|&x| GradientPair::new(x, x.abs())).collect();
    check::<GradientPair<f64>, Sum>(&gpu, &pairs, &buckets, 33);
}

#[test]
fn bad_bucket_ids_and_counts_are_refused() {
    let gpu = gpu();
    let values = gpu.upload(&[1u32, 2, 3, 4]).unwrap();
    let mut output = gpu.alloc_zeroed::<u32>(65).unwrap();
    let buckets = gpu.upload(&[0u32, 1, 7, 1]).unwrap();
    let error = DeviceMulti::reduce::<u32, Sum>(&gpu, &values, &buckets, 4, &mut output).unwrap_err();
    match error {
        Error::InvalidArgument { name: "buckets", reason } => assert!(reason.starts_with("item 2 "), "{reason}"),
        other => panic!("{other:?}"),
    }
    for bad_count in [0, 65] {
        let error = DeviceMulti::reduce::<u32, Sum>(&gpu, &values, &buckets, bad_count, &mut output).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument { name: "bucket_count", .. }), "{error:?}");
    }
    let short = gpu.upload(&[0u32, 1]).unwrap();
    let error = DeviceMulti::exclusive_scan::<u32, Sum>(&gpu, &values, &short, 4, &mut output).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "buckets", .. }), "{error:?}");
}
