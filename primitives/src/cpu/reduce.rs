//! Reduce oracle and the float-summation reference the tests need.

use crate::ops::{AssociativeOp, Element};

/// Items combined sequentially at the leaves of [`reduce`]'s pairwise tree.
pub const PAIRWISE_LEAF: usize = 8;

/// Reduces `input` with `Op` by pairwise (recursive halving) combination, keeping operand order: the
/// same shape of summation tree as a parallel reduce, and so the same O(log n) rounding-error growth
/// for floats. An empty input gives `Op::identity()`.
pub fn reduce<T: Element, Op: AssociativeOp<T>>(input: &[T]) -> T {
    if input.len() <= PAIRWISE_LEAF {
        return input.iter().fold(Op::identity(), |acc, &x| Op::combine(acc, x));
    }
    let (left, right) = input.split_at(input.len() / 2);
    Op::combine(reduce::<T, Op>(left), reduce::<T, Op>(right))
}

/// Neumaier's compensated sum in f64: the reference for float sums. Its error is at most about
/// `2^-53 * |sum| + n * 2^-106 * sum(|x|)`, far below the f32 and f64 errors being checked.
pub fn compensated_sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut sum = 0.0f64;
    let mut compensation = 0.0f64;
    for x in values {
        let t = sum + x;
        compensation += if sum.abs() >= x.abs() { (sum - t) + x } else { (x - t) + sum };
        sum = t;
    }
    sum + compensation
}

/// Bound on the rounding error of a summation tree of depth `depth` in a format with unit roundoff
/// `unit_roundoff`: `gamma_depth * sum(|x|)` with `gamma_k = k u / (1 - k u)` (Higham, eq. 4.6).
/// For [`reduce`] over `n` items the depth is `PAIRWISE_LEAF - 1 + ceil(log2(n / PAIRWISE_LEAF))`.
pub fn pairwise_error_bound(depth: usize, unit_roundoff: f64, abs_sum: f64) -> f64 {
    let ku = depth as f64 * unit_roundoff;
    ku / (1.0 - ku) * abs_sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Max, Min, Sum};
    use proptest::prelude::*;

    fn pairwise_depth(n: usize) -> usize {
        let leaves = n.div_ceil(PAIRWISE_LEAF).max(1);
        PAIRWISE_LEAF - 1 + (usize::BITS - (leaves - 1).leading_zeros()) as usize
    }

    #[test]
    fn empty_input_gives_identity() {
        assert_eq!(reduce::<f32, Sum>(&[]), 0.0);
        assert_eq!(reduce::<i32, Min>(&[]), i32::MAX);
        assert_eq!(reduce::<u64, Max>(&[]), 0);
    }

    #[test]
    fn compensated_sum_is_exact_on_cancellation() {
        // 1e16 + 1 - 1e16 loses the 1 in plain f64 summation.
        assert_eq!(compensated_sum([1e16, 1.0, -1e16]), 1.0);
        let values: Vec<f64> = (0..1000).flat_map(|i| [1e10 + i as f64, 0.5, -(1e10 + i as f64)]).collect();
        assert_eq!(compensated_sum(values), 500.0);
    }

    #[test]
    fn order_of_non_commutative_operands_is_kept() {
        // Concatenation of digits: associative, not commutative (base-10 values of at most 18 digits).
        #[derive(Clone, Copy, Default)]
        struct Concat;
        impl AssociativeOp<[u64; 2]> for Concat {
            fn identity() -> [u64; 2] {
                [0, 1]
            }
            fn combine(a: [u64; 2], b: [u64; 2]) -> [u64; 2] {
                [a[0] * b[1] + b[0], a[1] * b[1]]
            }
        }
        let digits: Vec<[u64; 2]> = (1..=9).map(|d| [d, 10]).chain((0..9).map(|d| [d, 10])).collect();
        assert_eq!(reduce::<[u64; 2], Concat>(&digits)[0], 123_456_789_012_345_678);
    }

    proptest! {
        #[test]
        fn integer_reduce_equals_fold(values in proptest::collection::vec(any::<i64>(), 0..2000)) {
            prop_assert_eq!(reduce::<i64, Sum>(&values), values.iter().fold(0i64, |a, &b| a.wrapping_add(b)));
            prop_assert_eq!(reduce::<i64, Min>(&values), values.iter().copied().min().unwrap_or(i64::MAX));
            prop_assert_eq!(reduce::<i64, Max>(&values), values.iter().copied().max().unwrap_or(i64::MIN));
        }

        #[test]
        fn unsigned_reduce_equals_fold(values in proptest::collection::vec(any::<u32>(), 0..2000)) {
            prop_assert_eq!(reduce::<u32, Sum>(&values), values.iter().fold(0u32, |a, &b| a.wrapping_add(b)));
            prop_assert_eq!(reduce::<u32, Min>(&values), values.iter().copied().min().unwrap_or(u32::MAX));
            prop_assert_eq!(reduce::<u32, Max>(&values), values.iter().copied().max().unwrap_or(0));
        }

        #[test]
        fn f32_sum_within_pairwise_bound(values in proptest::collection::vec(-1e6f32..1e6, 0..5000)) {
            let exact = compensated_sum(values.iter().map(|&x| x as f64));
            let abs_sum: f64 = values.iter().map(|&x| (x as f64).abs()).sum();
            let bound = pairwise_error_bound(pairwise_depth(values.len()), f32::EPSILON as f64 / 2.0, abs_sum);
            let error = (reduce::<f32, Sum>(&values) as f64 - exact).abs();
            prop_assert!(error <= bound, "error {} > bound {}", error, bound);
        }

        #[test]
        fn f64_sum_within_pairwise_bound(values in proptest::collection::vec(-1e12f64..1e12, 0..5000)) {
            let exact = compensated_sum(values.iter().copied());
            let abs_sum: f64 = values.iter().map(|x| x.abs()).sum();
            let bound = pairwise_error_bound(pairwise_depth(values.len()), f64::EPSILON / 2.0, abs_sum)
                + f64::EPSILON * exact.abs();
            let error = (reduce::<f64, Sum>(&values) - exact).abs();
            prop_assert!(error <= bound, "error {} > bound {}", error, bound);
        }

        #[test]
        fn float_min_max_match_iterators(values in proptest::collection::vec(proptest::num::f32::ANY, 1..500)) {
            let numbers: Vec<f32> = values.iter().copied().filter(|x| !x.is_nan()).collect();
            let expected_min = numbers.iter().copied().fold(f32::INFINITY, f32::min);
            let expected_max = numbers.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            prop_assert_eq!(reduce::<f32, Min>(&values), expected_min);
            prop_assert_eq!(reduce::<f32, Max>(&values), expected_max);
        }
    }
}
