//! Device reduce against the CPU oracle, for every instantiated (type, operator), on the GPU with
//! `--features gpu`, else on the SIMT emulator (sizes capped by `tests::max_len`).
//! Integers must match exactly; float sums must lie within the stated rounding bound of an exact
//! (compensated) sum; float min/max exactly.

use primitives::ops::{Element, Max, Min, Sum};
use primitives::{cpu, DeviceReduce, Error, Gpu, ReduceKernel};
use rand::Rng;
use tests::{gpu, max_len, random_vec, uniform_f32, EDGE_SIZES};

/// Sizes for every (type, operator): the edge sizes, a few million, and 2^26 + 3 (those this device
/// takes).
fn sizes(gpu: &Gpu) -> Vec<usize> {
    EDGE_SIZES.iter().copied().chain([1 << 20, (1 << 22) + 5, (1 << 26) + 3]).filter(|&n| n <= max_len(gpu)).collect()
}

fn check_exact<T: Element + PartialEq + std::fmt::Debug, Op: ReduceKernel<T>>(gpu: &Gpu, values: &[T], what: &str) {
    let input = gpu.upload(values).unwrap();
    let got = gpu.reduce::<T, Op>(&input).unwrap();
    let want = cpu::reduce::<T, Op>(values);
    assert_eq!(got, want, "{what}, n = {}", values.len());
}

/// Rounding-error bound of the GPU reduce tree for `n` items: each thread sums its share
/// sequentially (at most ceil(n / threads) items plus a tail item), then 5 warp steps, 3 block steps
/// (8 warps), a sequential pass over ceil(grid / 256) block totals in the last block, and 8 more steps.
fn gpu_sum_depth(gpu: &Gpu, n: usize, element_bytes: usize) -> usize {
    let grid = DeviceReduce::grid_size(gpu, n, element_bytes) as usize;
    n.div_ceil(grid * 256) + 1 + 8 + grid.div_ceil(256) + 8
}

fn check_float_sum<T: Element + Into<f64>>(gpu: &Gpu, values: &[T], unit_roundoff: f64)
where
    Sum: ReduceKernel<T>,
{
    let input = gpu.upload(values).unwrap();
    let got: f64 = gpu.reduce::<T, Sum>(&input).unwrap().into();
    let exact = cpu::compensated_sum(values.iter().map(|&x| x.into()));
    let abs_sum: f64 = values.iter().map(|&x| Into::<f64>::into(x).abs()).sum();
    let depth = gpu_sum_depth(gpu, values.len(), size_of::<T>());
    let bound = cpu::pairwise_error_bound(depth, unit_roundoff, abs_sum) + unit_roundoff * exact.abs();
    assert!((got - exact).abs() <= bound, "n = {}: got {got}, exact {exact}, bound {bound}", values.len());
}

#[test]
fn f32_sum_within_bound() {
    let gpu = gpu();
    let beyond = [(1 << 28) + 1].into_iter().filter(|&n| n <= max_len(&gpu));
    for (i, n) in sizes(&gpu).into_iter().chain(beyond).enumerate() {
        check_float_sum(&gpu, &uniform_f32(n, 100 + i as u64), f32::EPSILON as f64 / 2.0);
    }
}

#[test]
fn f64_sum_within_bound() {
    let gpu = gpu();
    for (i, n) in sizes(&gpu).into_iter().enumerate() {
        let values = random_vec(n, 200 + i as u64, |r| r.gen_range(-1e3f64..1e3));
        check_float_sum(&gpu, &values, f64::EPSILON / 2.0);
    }
}

#[test]
fn float_min_max_exact() {
    let gpu = gpu();
    for (i, n) in sizes(&gpu).into_iter().enumerate() {
        let values = random_vec(n, 300 + i as u64, |r| r.gen_range(-1e30f32..1e30));
        check_exact::<f32, Min>(&gpu, &values, "f32 min");
        check_exact::<f32, Max>(&gpu, &values, "f32 max");
        let values: Vec<f64> = values.iter().map(|&x| x as f64 * 1e200).collect();
        check_exact::<f64, Min>(&gpu, &values, "f64 min");
        check_exact::<f64, Max>(&gpu, &values, "f64 max");
    }
}

#[test]
fn float_min_max_ignore_nan() {
    let gpu = gpu();
    let mut values = uniform_f32((1 << 20).min(max_len(&gpu)), 7);
    for i in (0..values.len()).step_by(97) {
        values[i] = f32::NAN;
    }
    check_exact::<f32, Min>(&gpu, &values, "f32 min with NaN");
    check_exact::<f32, Max>(&gpu, &values, "f32 max with NaN");
    // All NaN: every operand is ignored, leaving the identity, as on the CPU.
    let all_nan = [f32::NAN; 5];
    assert_eq!(gpu.reduce::<f32, Min>(&gpu.upload(&all_nan).unwrap()).unwrap(), f32::INFINITY);
    assert_eq!(cpu::reduce::<f32, Min>(&all_nan), f32::INFINITY);
}

macro_rules! integer_tests {
    ($($name:ident: $t:ty;)*) => {$(
        #[test]
        fn $name() {
            let gpu = gpu();
            for (i, n) in sizes(&gpu).into_iter().enumerate() {
                // Full-range values: sums wrap, and must wrap exactly as on the CPU.
                let values: Vec<$t> = random_vec(n, 400 + i as u64, |r| r.gen());
                check_exact::<$t, Sum>(&gpu, &values, concat!(stringify!($t), " sum"));
                check_exact::<$t, Min>(&gpu, &values, concat!(stringify!($t), " min"));
                check_exact::<$t, Max>(&gpu, &values, concat!(stringify!($t), " max"));
            }
        }
    )*};
}

integer_tests! {
    i32_sum_min_max_exact: i32;
    u32_sum_min_max_exact: u32;
    i64_sum_min_max_exact: i64;
    u64_sum_min_max_exact: u64;
}

#[test]
fn empty_input_gives_identity() {
    let gpu = gpu();
    let empty = gpu.upload::<f32>(&[]).unwrap();
    assert_eq!(gpu.reduce::<f32, Sum>(&empty).unwrap(), 0.0);
    assert_eq!(gpu.reduce::<f32, Min>(&empty).unwrap(), f32::INFINITY);
    let empty = gpu.upload::<i64>(&[]).unwrap();
    assert_eq!(gpu.reduce::<i64, Max>(&empty).unwrap(), i64::MIN);
}

#[test]
fn same_result_run_after_run() {
    let gpu = gpu();
    let values = uniform_f32(((1 << 26) + 11).min(max_len(&gpu)), 9);
    let input = gpu.upload(&values).unwrap();
    let first = gpu.reduce::<f32, Sum>(&input).unwrap();
    for _ in 0..20 {
        assert_eq!(gpu.reduce::<f32, Sum>(&input).unwrap().to_bits(), first.to_bits());
    }
}

#[test]
fn device_api_writes_into_the_output_buffer_without_waiting() {
    let gpu = gpu();
    let input = gpu.upload(&[5u32, 7, 11]).unwrap();
    let mut out = gpu.upload(&[0u32, 99]).unwrap();
    DeviceReduce::sum(&gpu, &input, &mut out).unwrap();
    DeviceReduce::max(&gpu, &input, &mut out).unwrap(); // stream order: max overwrites sum
    assert_eq!(out.to_vec(&gpu).unwrap(), [11, 99]);
}

#[test]
fn empty_output_is_an_invalid_argument() {
    let gpu = gpu();
    let input = gpu.upload(&[1.0f32]).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(0).unwrap();
    let error = DeviceReduce::sum(&gpu, &input, &mut out).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { name: "output", .. }), "{error:?}");
}

#[test]
fn impossible_allocation_is_out_of_memory() {
    let gpu = gpu();
    let error = gpu.alloc_zeroed::<u8>(1 << 50).unwrap_err();
    assert!(matches!(error, Error::OutOfMemory { bytes } if bytes == 1 << 50), "{error:?}");
}
