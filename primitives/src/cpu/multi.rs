//! Multireduce and multiscan oracles.

use crate::ops::{AssociativeOp, Element};

/// `output[b]` = the reduction of the values whose bucket is `b`, in input order.
pub fn multireduce<T: Element, Op: AssociativeOp<T>>(values: &[T], buckets: &[u32], bucket_count: u32) -> Vec<T> {
    let mut totals = vec![Op::identity(); bucket_count as usize];
    for (&v, &b) in values.iter().zip(buckets) {
        totals[b as usize] = Op::combine(totals[b as usize], v);
    }
    totals
}

/// Each item's scan within its own bucket, in input order (exclusive or inclusive).
pub fn multiscan<T: Element, Op: AssociativeOp<T>>(
    values: &[T],
    buckets: &[u32],
    bucket_count: u32,
    inclusive: bool,
) -> Vec<T> {
    let mut running = vec![Op::identity(); bucket_count as usize];
    values
        .iter()
        .zip(buckets)
        .map(|(&v, &b)| {
            let before = running[b as usize];
            running[b as usize] = Op::combine(before, v);
            if inclusive {
                running[b as usize]
            } else {
                before
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Sum;

    #[test]
    fn known_cases() {
        let values = [1u32, 2, 3, 4, 5];
        let buckets = [0u32, 1, 0, 2, 1];
        assert_eq!(multireduce::<u32, Sum>(&values, &buckets, 4), [4, 7, 4, 0]);
        assert_eq!(multiscan::<u32, Sum>(&values, &buckets, 3, false), [0, 0, 1, 0, 2]);
        assert_eq!(multiscan::<u32, Sum>(&values, &buckets, 3, true), [1, 2, 4, 4, 7]);
    }
}
