//! Segmented-reduce oracles.

use crate::ops::{AssociativeOp, Element};

/// `output[s]` = the reduction of `input[begin[s]..end[s]]` (the identity when empty).
pub fn segmented_reduce<T: Element, Op: AssociativeOp<T>>(input: &[T], begin: &[u32], end: &[u32]) -> Vec<T> {
    begin.iter().zip(end).map(|(&b, &e)| crate::cpu::reduce::<T, Op>(&input[b as usize..e as usize])).collect()
}

/// Segments start at item 0 and at every item with a non-zero head flag; one reduction per segment.
pub fn segmented_reduce_by_flags<T: Element, Op: AssociativeOp<T>>(input: &[T], head_flags: &[u8]) -> Vec<T> {
    let mut heads: Vec<u32> = (0..input.len()).filter(|&i| i == 0 || head_flags[i] != 0).map(|i| i as u32).collect();
    let ends: Vec<u32> = heads.iter().skip(1).copied().chain([input.len() as u32]).collect();
    if input.is_empty() {
        heads.clear();
    }
    segmented_reduce::<T, Op>(input, &heads, &ends)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Max, Sum};

    #[test]
    fn known_cases() {
        let input = [1u32, 2, 3, 4, 5, 6];
        assert_eq!(segmented_reduce::<u32, Sum>(&input, &[0, 2, 2, 1], &[2, 2, 6, 4]), [3, 0, 18, 9]);
        assert_eq!(segmented_reduce_by_flags::<u32, Max>(&input, &[0, 0, 1, 0, 1, 1]), [2, 4, 5, 6]);
        assert_eq!(segmented_reduce_by_flags::<u32, Sum>(&[], &[]), Vec::<u32>::new());
    }
}
