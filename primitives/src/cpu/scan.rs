//! Scan oracles.

use crate::ops::{AssociativeOp, Element};

/// `output[i] = input[0] ⊕ ... ⊕ input[i]`, sequentially. `output` must be at least as long.
pub fn inclusive_scan<T: Element, Op: AssociativeOp<T>>(input: &[T], output: &mut [T]) {
    let mut acc = Op::identity();
    for (out, &x) in output.iter_mut().zip(input) {
        acc = Op::combine(acc, x);
        *out = acc;
    }
}

/// `output[i] = initial ⊕ input[0] ⊕ ... ⊕ input[i - 1]`, sequentially.
pub fn exclusive_scan<T: Element, Op: AssociativeOp<T>>(input: &[T], output: &mut [T], initial: T) {
    let mut acc = initial;
    for (out, &x) in output.iter_mut().zip(input) {
        *out = acc;
        acc = Op::combine(acc, x);
    }
}

/// Segmented scan: the scan restarts at every item whose head flag is non-zero (and at item 0).
/// Inclusive: `output[i]` combines `i`'s segment up to `i`; exclusive: before `i` (identity at heads).
pub fn segmented_scan<T: Element, Op: AssociativeOp<T>>(
    input: &[T],
    head_flags: &[u8],
    output: &mut [T],
    exclusive: bool,
) {
    let mut acc = Op::identity();
    for (i, (out, &x)) in output.iter_mut().zip(input).enumerate() {
        if i == 0 || head_flags[i] != 0 {
            acc = Op::identity();
        }
        if exclusive {
            *out = acc;
            acc = Op::combine(acc, x);
        } else {
            acc = Op::combine(acc, x);
            *out = acc;
        }
    }
}

/// Head flags of a scan by key: 1 where a key differs from the one before it.
pub fn key_heads(keys: &[u32]) -> Vec<u8> {
    (0..keys.len()).map(|i| (i == 0 || keys[i] != keys[i - 1]) as u8).collect()
}

/// Head flags of CSR offsets (the first item of every non-empty segment).
pub fn offset_heads(offsets: &[u32], len: usize) -> Vec<u8> {
    let mut flags = vec![0u8; len];
    for w in offsets.windows(2) {
        if w[0] < w[1] {
            flags[w[0] as usize] = 1;
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Max, Sum};
    use proptest::prelude::*;

    #[test]
    fn known_scans() {
        let mut out = [0u32; 5];
        inclusive_scan::<u32, Sum>(&[3, 1, 4, 1, 5], &mut out);
        assert_eq!(out, [3, 4, 8, 9, 14]);
        exclusive_scan::<u32, Sum>(&[3, 1, 4, 1, 5], &mut out, 10);
        assert_eq!(out, [10, 13, 14, 18, 19]);
        let mut maxima = [0i32; 5];
        inclusive_scan::<i32, Max>(&[3, 1, 4, 1, 5], &mut maxima);
        assert_eq!(maxima, [3, 3, 4, 4, 5]);
    }

    proptest! {
        #[test]
        fn inclusive_is_exclusive_shifted(values in proptest::collection::vec(any::<i64>(), 0..500)) {
            let mut inclusive = vec![0; values.len()];
            let mut exclusive = vec![0; values.len()];
            inclusive_scan::<i64, Sum>(&values, &mut inclusive);
            exclusive_scan::<i64, Sum>(&values, &mut exclusive, 0);
            for i in 0..values.len() {
                prop_assert_eq!(inclusive[i], exclusive[i].wrapping_add(values[i]));
                if i + 1 < values.len() {
                    prop_assert_eq!(inclusive[i], exclusive[i + 1]);
                }
            }
            if let Some(&last) = inclusive.last() {
                prop_assert_eq!(last, crate::cpu::reduce::<i64, Sum>(&values));
            }
        }
    }
}
