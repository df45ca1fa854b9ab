//! The subtraction trick on the device: a node's histogram is its parent's minus its sibling's, so
//! only the smaller child's is built from rows. Fixed-point sums subtract exactly, so the result is
//! the histogram the rows would give, bit for bit.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::fixed_point;

type Fixed = GradientPair<i64>;

/// `histograms[large] = parents[parent] - histograms[small]` for each `(small, large, parent)` slot
/// triple in `triples`, element by element over slots of `slot_len` sums. One thread per element of
/// each triple.
///
/// # Safety
/// `triples` holds `3 * num_triples` slot indices, the small and large ones within `histograms`, the
/// parent ones within `parents`, each slot `slot_len` sums; no large slot is another triple's small.
pub unsafe fn subtract_kernel(
    histograms: *mut Fixed,
    parents: *const Fixed,
    slot_len: u64,
    triples: *const u32,
    num_triples: u64,
) {
    let i = global_thread();
    let (t, j) = (i / slot_len.max(1), (i % slot_len.max(1)) as usize);
    if t >= num_triples {
        return;
    }
    let slot_len = slot_len as usize;
    // SAFETY: `t < num_triples`, `j < slot_len`; the contract covers the slots.
    unsafe {
        let small = arch::load(triples.add(3 * t as usize)) as usize;
        let large = arch::load(triples.add(3 * t as usize + 1)) as usize;
        let parent = arch::load(triples.add(3 * t as usize + 2)) as usize;
        let built = arch::load(histograms.add(small * slot_len + j));
        let whole = arch::load(parents.add(parent * slot_len + j));
        arch::store(histograms.add(large * slot_len + j), fixed_point::sub(whole, built));
    }
}
