//! Select, partition and run-length-encode oracles.

/// The items whose flag is non-zero, in order.
pub fn select_flagged<T: Copy>(input: &[T], flags: &[u8]) -> Vec<T> {
    input.iter().zip(flags).filter(|(_, &f)| f != 0).map(|(&x, _)| x).collect()
}

/// The items for which `keep` holds, in order.
pub fn select_if<T: Copy>(input: &[T], mut keep: impl FnMut(T) -> bool) -> Vec<T> {
    input.iter().copied().filter(|&x| keep(x)).collect()
}

/// Stable two-way partition: the items for which `first` holds, then the others, each in input order;
/// and the number of the first group.
pub fn partition<T: Copy>(input: &[T], mut first: impl FnMut(usize, T) -> bool) -> (Vec<T>, usize) {
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for (i, &x) in input.iter().enumerate() {
        if first(i, x) {
            yes.push(x)
        } else {
            no.push(x)
        }
    }
    let count = yes.len();
    yes.extend(no);
    (yes, count)
}

/// Runs of bitwise-equal consecutive items: the value of each run and its length.
pub fn run_length_encode<T: bytemuck::Pod>(input: &[T]) -> (Vec<T>, Vec<u32>) {
    let (mut unique, mut lengths) = (Vec::new(), Vec::<u32>::new());
    for &x in input {
        match unique.last() {
            Some(last) if bytemuck::bytes_of(last) == bytemuck::bytes_of(&x) => {
                *lengths.last_mut().expect("a run") += 1
            }
            _ => {
                unique.push(x);
                lengths.push(1);
            }
        }
    }
    (unique, lengths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_cases() {
        assert_eq!(select_flagged(&[1, 2, 3, 4], &[1, 0, 0, 7]), [1, 4]);
        assert_eq!(partition(&[1, 2, 3, 4, 5], |_, x| x % 2 == 0), (vec![2, 4, 1, 3, 5], 2));
        let (unique, lengths) = run_length_encode(&[7u32, 7, 1, 1, 1, 7, 2]);
        assert_eq!((unique, lengths), (vec![7, 1, 7, 2], vec![2, 3, 1, 1]));
        // Bitwise: NaN runs merge, +0.0 and -0.0 do not.
        let (unique, lengths) = run_length_encode(&[f32::NAN, f32::NAN, 0.0, -0.0]);
        assert_eq!((unique.len(), lengths), (3, vec![2, 1, 1]));
    }
}
