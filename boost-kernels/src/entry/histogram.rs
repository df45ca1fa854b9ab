//! The `histogram` family: the histograms' sibling subtraction and the sum of several devices' parts.

use primitives_kernels::kernel;
use primitives_kernels::ops::GradientPair;

use crate::device_sum::{self, MAX_PARTS};
use crate::partition::SubtractionPlan;
use crate::subtract;

kernel! {
    /// The subtraction trick; see [`subtract::subtract_kernel`].
    pub unsafe fn boost_histogram_subtract(
        histograms: *mut GradientPair<i64>,
        slot_len: u64,
        plans: *const SubtractionPlan,
        num_plans: u64,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { subtract::subtract_kernel(histograms, slot_len, plans, num_plans) }
    }
}

kernel! {
    /// Several devices' histograms summed, read through their addresses; see
    /// [`device_sum::sum_parts_kernel`]. Parts past `count` are ignored (pass null).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn boost_histogram_sum_parts(
        sum: *mut GradientPair<i64>,
        len: u64,
        count: u64,
        p0: *const GradientPair<i64>,
        p1: *const GradientPair<i64>,
        p2: *const GradientPair<i64>,
        p3: *const GradientPair<i64>,
        p4: *const GradientPair<i64>,
        p5: *const GradientPair<i64>,
        p6: *const GradientPair<i64>,
        p7: *const GradientPair<i64>,
    ) {
        let parts: [*const GradientPair<i64>; MAX_PARTS] = [p0, p1, p2, p3, p4, p5, p6, p7];
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { device_sum::sum_parts_kernel(sum, len, parts, count) }
    }
}

host_kernels! {
    boost_histogram_subtract,
    boost_histogram_sum_parts,
}
