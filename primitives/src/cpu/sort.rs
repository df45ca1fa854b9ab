//! Oracles of the radix sorts: a stable comparison sort by the same order-preserving key images.

use crate::device::{SortKey, SortOrder};

/// The bits `begin_bit..end_bit` of `key`'s image as a number (complemented when descending), the
/// sort key of the oracles.
fn sort_value<K: SortKey>(key: K, begin_bit: u32, end_bit: u32, descending: bool) -> u64 {
    let width = end_bit - begin_bit;
    let low_bits = width.min(32);
    let low = key.digit(begin_bit, low_bits, descending) as u64;
    if width > 32 {
        let high = key.digit(begin_bit + 32, width - 32, descending) as u64;
        high << 32 | low
    } else {
        low
    }
}

fn bit_range<K: SortKey>(order: &SortOrder) -> (u32, u32) {
    let end = order.end_bit.unwrap_or(K::BITS);
    assert!(
        order.begin_bit <= end && end <= K::BITS,
        "bit range {}..{end} outside a {}-bit key",
        order.begin_bit,
        K::BITS
    );
    (order.begin_bit, end)
}

/// The keys sorted stably by `order`.
pub fn sort_keys<K: SortKey>(keys: &[K], order: SortOrder) -> Vec<K> {
    let (begin, end) = bit_range::<K>(&order);
    let mut sorted = keys.to_vec();
    sorted.sort_by_key(|&k| sort_value(k, begin, end, order.descending));
    sorted
}

/// The pairs sorted stably by key.
pub fn sort_pairs<K: SortKey, V: Copy>(keys: &[K], values: &[V], order: SortOrder) -> (Vec<K>, Vec<V>) {
    segmented_sort_pairs(keys, values, &[0, keys.len() as u32], order)
}

/// Each segment `offsets[s]..offsets[s + 1]` sorted stably on its own; items outside every segment
/// stay where they are.
pub fn segmented_sort_pairs<K: SortKey, V: Copy>(
    keys: &[K],
    values: &[V],
    offsets: &[u32],
    order: SortOrder,
) -> (Vec<K>, Vec<V>) {
    let (begin, end) = bit_range::<K>(&order);
    let (mut out_keys, mut out_values) = (keys.to_vec(), values[..keys.len()].to_vec());
    for pair in offsets.windows(2) {
        let range = pair[0] as usize..pair[1] as usize;
        let mut items: Vec<(K, V)> =
            keys[range.clone()].iter().copied().zip(values[range.clone()].iter().copied()).collect();
        items.sort_by_key(|&(k, _)| sort_value(k, begin, end, order.descending));
        for (i, (k, v)) in items.into_iter().enumerate() {
            out_keys[range.start + i] = k;
            out_values[range.start + i] = v;
        }
    }
    (out_keys, out_values)
}

/// Each segment's keys sorted stably on its own.
pub fn segmented_sort_keys<K: SortKey>(keys: &[K], offsets: &[u32], order: SortOrder) -> Vec<K> {
    segmented_sort_pairs(keys, &vec![(); keys.len()], offsets, order).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn floats_sort_as_numbers_with_nan_last() {
        let keys = [2.0f32, f32::NAN, -0.0, 0.0, -f32::INFINITY, -f32::NAN, 1.0, -3.0];
        let sorted = sort_keys(&keys, SortOrder::ascending());
        let bits: Vec<u32> = sorted.iter().map(|k| k.to_bits()).collect();
        let want: Vec<u32> =
            [-f32::INFINITY, -3.0, -0.0, 0.0, 1.0, 2.0, f32::NAN, -f32::NAN].iter().map(|k| k.to_bits()).collect();
        assert_eq!(bits, want);
        let sorted = sort_keys(&keys, SortOrder::descending());
        let bits: Vec<u32> = sorted.iter().map(|k| k.to_bits()).collect();
        let want: Vec<u32> =
            [f32::NAN, -f32::NAN, 2.0, 1.0, -0.0, 0.0, -3.0, -f32::INFINITY].iter().map(|k| k.to_bits()).collect();
        assert_eq!(bits, want);
    }

    proptest! {
        #[test]
        fn integer_sorts_match_the_standard_sort(keys in proptest::collection::vec(any::<i64>(), 0..200)) {
            let mut want = keys.clone();
            want.sort();
            prop_assert_eq!(sort_keys(&keys, SortOrder::ascending()), want.clone());
            want.reverse();
            prop_assert_eq!(sort_keys(&keys, SortOrder::descending()), want);
        }

        #[test]
        fn partial_bit_ranges_are_stable(keys in proptest::collection::vec(any::<u32>(), 0..200), begin in 0u32..32, width in 0u32..12) {
            let end = (begin + width).min(32);
            let values: Vec<usize> = (0..keys.len()).collect();
            let (sorted, order) = sort_pairs(&keys, &values, SortOrder::ascending().bits(begin, end));
            let field = |k: u32| if end == begin { 0 } else { (k >> begin) & (u32::MAX >> (32 - (end - begin))) };
            for i in 1..sorted.len() {
                prop_assert!(field(sorted[i - 1]) <= field(sorted[i]));
                if field(sorted[i - 1]) == field(sorted[i]) {
                    prop_assert!(order[i - 1] < order[i]);
                }
            }
        }
    }
}
