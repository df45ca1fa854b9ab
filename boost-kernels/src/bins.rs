//! A value's bin among its feature's quantile cuts, written once: `boost`'s `QuantileCuts::search_bin`
//! (the CPU's ELLPACK matrix) calls [`local_bin`], and [`dense_kernel`] and [`csr_kernel`] run it on
//! the device to make the matrix the GPU builder reads from the features themselves: each row's
//! bins within their features bit-packed, `bits` bits a feature (primitives' [`PackedRows`],
//! XGBoost's ELLPACK layout), the all-ones id `2^bits - 1` where the value is missing (NaN, not
//! stored, or a feature without bins).
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;
pub use primitives_kernels::device::histogram::{packed_row_word, store_packed_id, PackedRows, MAX_PACKED_BITS};

use crate::evaluate::global_thread;

/// The bin of a present value `v` among `bins >= 1` increasing upper bounds (`bound(i)`): the first
/// bound above `v`, or the last bin for a value at or above every bound (which only data other than
/// the cuts' own can have).
///
/// The search halves a window of fixed length (`log2(bins)` steps whatever `v` is) and moves its
/// start with a select (a conditional move), not a branch: a CPU does not mispredict a step (the
/// branches were most of the quantisation's time) and a warp's lanes never diverge.
#[inline]
pub fn local_bin(bins: usize, bound: impl Fn(usize) -> f32, v: f32) -> usize {
    // `base` ends at the last bound at or below `v`, or at 0 when none is.
    let (mut base, mut size) = (0, bins);
    while size > 1 {
        let half = size / 2;
        base = core::hint::select_unpredictable(bound(base + half) <= v, base + half, base);
        size -= half;
    }
    // The bounds at or below `v` (the first bound above it), clamped to the last bin.
    let above = base + usize::from(bins > 0 && bound(base) <= v);
    above.min(bins.max(1) - 1)
}

/// The cuts as the kernels read them: `features + 1` offsets into the increasing bounds.
#[derive(Clone, Copy)]
pub struct Cuts {
    pub cut_ptrs: *const u32,
    pub cut_values: *const f32,
}

impl Cuts {
    /// Feature `f`'s bin of `v`, or `missing`.
    ///
    /// # Safety
    /// `f` is below the feature count and the offsets lie within the bounds.
    #[inline(always)]
    unsafe fn bin(self, f: usize, v: f32, missing: u32) -> u32 {
        if v.is_nan() {
            return missing;
        }
        // SAFETY: the contract.
        unsafe {
            let begin = arch::load(self.cut_ptrs.add(f)) as usize;
            let end = arch::load(self.cut_ptrs.add(f + 1)) as usize;
            if begin == end {
                return missing;
            }
            local_bin(end - begin, |i| arch::load(self.cut_values.add(begin + i)), v) as u32
        }
    }
}

/// The shape of the packed matrix the kernels write: `features` ids of `bits` bits a row,
/// `row_words` words a row.
#[derive(Clone, Copy)]
pub struct PackedShape {
    pub features: u64,
    pub bits: u32,
    pub row_words: u64,
}

impl PackedShape {
    /// The id of a missing value: all ones.
    pub const fn missing(self) -> u32 {
        (1u32 << self.bits) - 1
    }
}

/// Word `i` of the packed rows of the dense row-major `values` (`rows` rows of `shape.features`):
/// the bins of the features whose bits overlap it. One thread per word, so a warp writes
/// consecutive words and reads the values of about one row.
///
/// # Safety
/// `values` holds `rows * shape.features` values, `out` `rows * shape.row_words` words, `row_words`
/// at least `PackedRows::row_words(features, bits)`; `cuts` has `features` features whose bins
/// are fewer than `shape.missing()`.
pub unsafe fn dense_kernel(values: *const f32, rows: u64, shape: PackedShape, cuts: Cuts, out: *mut u32) {
    let i = global_thread();
    if i >= rows * shape.row_words {
        return;
    }
    let (row, w) = ((i / shape.row_words) as usize, (i % shape.row_words) as usize);
    let features = shape.features as usize;
    let word = packed_row_word(w, features, shape.bits, |f| {
        // SAFETY: `row < rows` and `f < features`: a value of the matrix and a feature of the cuts.
        unsafe { cuts.bin(f, arch::load(values.add(row * features + f)), shape.missing()) }
    });
    // SAFETY: `i < rows * row_words`.
    unsafe { arch::store(out.add(i as usize), word) };
}

/// Every row's packed bins from its CSR entries (columns strictly increasing within the row):
/// the row's words written as all missing, then each stored value's bin set. One thread per row.
///
/// # Safety
/// `row_ptr` holds `rows + 1` non-decreasing offsets into `col_indices` and `values`, whose columns
/// are below `shape.features`; `out` and `cuts` as for [`dense_kernel`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn csr_kernel(
    row_ptr: *const u64,
    col_indices: *const u32,
    values: *const f32,
    rows: u64,
    shape: PackedShape,
    cuts: Cuts,
    out: *mut u32,
) {
    let row = global_thread();
    if row >= rows {
        return;
    }
    let (features, row_words, missing) = (shape.features as usize, shape.row_words as usize, shape.missing());
    let row = row as usize;
    // SAFETY: `row < rows`; the contract covers the entries and the row's words.
    unsafe {
        for w in 0..row_words {
            arch::store(out.add(row * row_words + w), packed_row_word(w, features, shape.bits, |_| missing));
        }
        let (begin, end) = (arch::load(row_ptr.add(row)), arch::load(row_ptr.add(row + 1)));
        for e in begin as usize..end as usize {
            let f = arch::load(col_indices.add(e)) as usize;
            let bin = cuts.bin(f, arch::load(values.add(e)), missing);
            store_packed_id(out, row_words, shape.bits, row, f, bin);
        }
    }
}

/// Rows `rows[0..count]` (each less `first`) of packed rows `words` (`row_words` words a row), in
/// order into `out`: a thread a word, so a warp reads and writes whole rows. External-memory
/// training gathers a tree's sampled rows so from a page's packed copy in host memory, mapped into
/// the device's address space: the bus carries those rows only.
///
/// # Safety
/// `rows` holds `count` indices of at least `first`, each less `first` a row of `words`; `out`
/// holds `count * row_words` words.
pub unsafe fn gather_rows_kernel(
    words: *const u32,
    row_words: u64,
    first: u64,
    rows: *const u32,
    count: u64,
    out: *mut u32,
) {
    let i = global_thread();
    if i >= count * row_words {
        return;
    }
    let (k, w) = (i / row_words, i % row_words);
    // SAFETY: `k < count`, whose row (less `first`) is one of `words` (the caller); `i` is a word
    // of `out`.
    unsafe {
        let row = arch::load(rows.add(k as usize)) as u64 - first;
        arch::store(out.add(i as usize), arch::load(words.add((row * row_words + w) as usize)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_falls_in_the_first_bin_whose_bound_is_above_it() {
        let bounds = [1.0f32, 2.0, 5.0];
        let bin = |v| local_bin(3, |i| bounds[i], v);
        assert_eq!([bin(-3.0), bin(0.999), bin(1.0), bin(1.5), bin(2.0), bin(4.9)], [0, 0, 1, 1, 2, 2]);
        assert_eq!(bin(5.0), 2, "at or above the last bound: the last bin");
        assert_eq!(bin(f32::INFINITY), 2);
        assert_eq!(local_bin(1, |_| 7.0, -1.0), 0);
        // Against a linear count, for every size up to 40 and values at, between and beyond bounds.
        for bins in 1..40usize {
            let bounds = |i: usize| i as f32 * 2.0;
            for v in -2..(2 * bins as i32 + 2) {
                let v = v as f32;
                let want = (0..bins).filter(|&i| bounds(i) <= v).count().min(bins - 1);
                assert_eq!(local_bin(bins, bounds, v), want, "bins {bins}, value {v}");
            }
        }
    }
}
