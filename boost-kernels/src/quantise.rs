//! The gradient quantiser on the device: [`sums_kernel`] takes the blocked sums the quantiser is made
//! from (the host adds the block sums in order, as [`GradientQuantiser::new`] does), then
//! [`quantise_kernel`] converts every gradient to fixed point and sums each block's fixed-point
//! pairs (the root's sum, exact). One warp per block of [`reduce::SUM_BLOCK`] gradients.
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::fixed_point::{GradientQuantiser, QuantiserSums};
use crate::reduce;

/// The block this thread's warp sums, if any.
#[inline(always)]
fn warp_block(n: u64) -> Option<usize> {
    let block = (global_thread() / arch::WARP_SIZE as u64) as usize;
    (block < reduce::blocks(n as usize)).then_some(block)
}

/// `block_sums[b]`: block `b`'s [`QuantiserSums`] of the `n` gradients.
///
/// # Safety
/// `gradients` holds `n` pairs and `block_sums` room for `n.div_ceil(SUM_BLOCK)` sums; the grid has
/// whole warps.
pub unsafe fn sums_kernel(gradients: *const GradientPair<f32>, n: u64, block_sums: *mut QuantiserSums) {
    let Some(block) = warp_block(n) else {
        return;
    };
    // SAFETY: `lane_partial` reads only indices below `n`.
    let sum = reduce::warp_block_sum(n as usize, block, |i| QuantiserSums::of(unsafe { arch::load(gradients.add(i)) }));
    if arch::lane_id() == 0 {
        // SAFETY: `block` is below the block count.
        unsafe { arch::store(block_sums.add(block), sum) };
    }
}

/// `fixed[i]`: gradient `i` in fixed point; `block_totals[b]`: block `b`'s sum of them.
///
/// # Safety
/// `gradients` and `fixed` hold `n` pairs, `block_totals` room for a sum per block; the grid has
/// whole warps.
pub unsafe fn quantise_kernel(
    gradients: *const GradientPair<f32>,
    n: u64,
    quantiser: *const GradientQuantiser,
    fixed: *mut GradientPair<i64>,
    block_totals: *mut GradientPair<i64>,
) {
    let Some(block) = warp_block(n) else {
        return;
    };
    // SAFETY: one quantiser.
    let quantiser = unsafe { arch::load(quantiser) };
    let sum = reduce::warp_block_sum(n as usize, block, |i| {
        // SAFETY: `i < n`.
        unsafe {
            let value = quantiser.to_fixed(arch::load(gradients.add(i)));
            arch::store(fixed.add(i), value);
            value
        }
    });
    if arch::lane_id() == 0 {
        // SAFETY: `block` is below the block count.
        unsafe { arch::store(block_totals.add(block), sum) };
    }
}
