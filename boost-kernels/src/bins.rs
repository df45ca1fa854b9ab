//! A value's bin among its feature's quantile cuts, written once: `boost`'s `QuantileCuts::search_bin`
//! (the CPU's ELLPACK matrix) calls [`local_bin`], and [`dense_kernel`] and [`csr_kernel`] run it on
//! the device to make the matrix the GPU builder reads from the features themselves: a `u16` a row
//! and feature, row-major, the value's bin within its feature, `missing` where the value is missing
//! (NaN, not stored, or a feature without bins).
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;

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
    unsafe fn bin(self, f: usize, v: f32, missing: u16) -> u16 {
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
            local_bin(end - begin, |i| arch::load(self.cut_values.add(begin + i)), v) as u16
        }
    }
}

/// `out[i]`: the bin of dense row-major `values[i]`, whose feature is `i % features`. One thread per
/// value.
///
/// # Safety
/// `values` and `out` hold `n` values, a multiple of `features >= 1`; `cuts` has `features` features
/// whose bins are fewer than `missing`.
pub unsafe fn dense_kernel(values: *const f32, n: u64, features: u64, cuts: Cuts, missing: u32, out: *mut u16) {
    let i = global_thread();
    if i >= n {
        return;
    }
    // SAFETY: `i < n`; `i % features` is a feature.
    unsafe {
        let bin = cuts.bin((i % features) as usize, arch::load(values.add(i as usize)), missing as u16);
        arch::store(out.add(i as usize), bin);
    }
}

/// `out[row * features + f]`: every row's bins, from its CSR entries (columns strictly increasing
/// within the row); `missing` for the features it does not store. One thread per row.
///
/// # Safety
/// `row_ptr` holds `rows + 1` non-decreasing offsets into `col_indices` and `values`, whose columns
/// are below `features`; `out` holds `rows * features` values; `cuts` as for [`dense_kernel`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn csr_kernel(
    row_ptr: *const u64,
    col_indices: *const u32,
    values: *const f32,
    rows: u64,
    features: u64,
    cuts: Cuts,
    missing: u32,
    out: *mut u16,
) {
    let row = global_thread();
    if row >= rows {
        return;
    }
    let features = features as usize;
    // SAFETY: `row < rows`; the contract covers the entries and the row's bins.
    unsafe {
        let bins = out.add(row as usize * features);
        for f in 0..features {
            arch::store(bins.add(f), missing as u16);
        }
        let (begin, end) = (arch::load(row_ptr.add(row as usize)), arch::load(row_ptr.add(row as usize + 1)));
        for e in begin as usize..end as usize {
            let f = arch::load(col_indices.add(e)) as usize;
            arch::store(bins.add(f), cuts.bin(f, arch::load(values.add(e)), missing as u16));
        }
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
