//! The `quantise` family: the gradient quantiser: the fixed-point sums and the gradients in fixed point.

use primitives_kernels::kernel;
use primitives_kernels::ops::GradientPair;

use crate::fixed_point::{GradientQuantiser, QuantiserSums};
use crate::quantise;

kernel! {
    /// Block sums of the quantiser's terms; see [`quantise::sums_kernel`].
    pub unsafe fn boost_quantise_sums(gradients: *const GradientPair<f32>, n: u64, block_sums: *mut QuantiserSums) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { quantise::sums_kernel(gradients, n, block_sums) }
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

host_kernels! {
    boost_quantise_sums,
    boost_quantise_fixed,
}
