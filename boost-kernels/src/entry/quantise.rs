//! The `quantise` family: the gradient quantiser: the fixed-point sums and the gradients in fixed
//! point (all of them, or the rows a tree keeps, compacted).

use primitives_kernels::kernel;
use primitives_kernels::ops::GradientPair;

use crate::fixed_point::{GradientQuantiser, QuantiserSums};
use crate::quantise;

kernel! {
    /// Block sums of the quantiser's terms (and counts of the kept rows); see
    /// [`quantise::sums_kernel`].
    pub unsafe fn boost_quantise_sums(
        gradients: *const GradientPair<f32>,
        n: u64,
        block_sums: *mut QuantiserSums,
        kept_counts: *mut u32,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { quantise::sums_kernel(gradients, n, block_sums, kept_counts) }
    }
}

kernel! {
    /// Fixed-point gradients and their block sums; see [`quantise::quantise_kernel`].
    pub unsafe fn boost_quantise_fixed(
        gradients: *const GradientPair<f32>,
        n: u64,
        quantiser: *const GradientQuantiser,
        fixed: *mut GradientPair<i64>,
        block_totals: *mut GradientPair<i64>,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { quantise::quantise_kernel(gradients, n, quantiser, fixed, block_totals) }
    }
}

kernel! {
    /// The kept rows compacted, in fixed point, and their block sums; see [`quantise::kept_kernel`].
    pub unsafe fn boost_quantise_kept(
        gradients: *const GradientPair<f32>,
        n: u64,
        quantiser: *const GradientQuantiser,
        offsets: *const u32,
        rows: *mut u32,
        fixed: *mut GradientPair<i64>,
        block_totals: *mut GradientPair<i64>,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { quantise::kept_kernel(gradients, n, quantiser, offsets, rows, fixed, block_totals) }
    }
}

host_kernels! {
    boost_quantise_sums,
    boost_quantise_fixed,
    boost_quantise_kept,
}
