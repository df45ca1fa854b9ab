//! The subtraction trick on the device: a node's histogram is its parent's minus its sibling's, so
//! only the smaller child's is built from rows. Fixed-point sums subtract exactly, so the result is
//! the histogram the rows would give, bit for bit.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::fixed_point;
use crate::partition::SubtractionPlan;

type Fixed = GradientPair<i64>;

/// `histograms[large] = parent - histograms[small]` for each [`SubtractionPlan`], element by element
/// over slots of `slot_len` sums. One thread per element of each plan.
///
/// # Safety
/// `plans` holds `num_plans` plans, their small and large slots within `histograms` and their
/// parents addresses of `slot_len` sums; no large slot is another plan's small.
pub unsafe fn subtract_kernel(histograms: *mut Fixed, slot_len: u64, plans: *const SubtractionPlan, num_plans: u64) {
    let i = global_thread();
    let (t, j) = (i / slot_len.max(1), (i % slot_len.max(1)) as usize);
    if t >= num_plans {
        return;
    }
    let slot_len = slot_len as usize;
    // SAFETY: `t < num_plans`, `j < slot_len`; the contract covers the slots.
    unsafe {
        let plan = arch::load(plans.add(t as usize));
        let parent = plan.parent as usize as *const Fixed;
        let built = arch::load(histograms.add(plan.small as usize * slot_len + j));
        let whole = arch::load(parent.add(j));
        arch::store(histograms.add(plan.large as usize * slot_len + j), fixed_point::sub(whole, built));
    }
}
