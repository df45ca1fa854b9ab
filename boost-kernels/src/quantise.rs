//! The gradient quantiser on the device: [`sums_kernel`] takes the blocked sums the quantiser is made
//! from (the host adds the block sums in order, as [`GradientQuantiser::new`] does), then
//! [`quantise_kernel`] converts every gradient to fixed point and sums each block's fixed-point
//! pairs (the root's sum, exact). One warp per block of [`reduce::SUM_BLOCK`] gradients.
//!
//! External-memory training keeps only a tree's rows with a gradient ([`is_kept`]): the sums kernel
//! then also counts each block's, and [`kept_kernel`] writes them compacted in row order, in fixed
//! point, with their rows (the rows the host's `quantiser_and_kept_rows` gives).
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::fixed_point::{is_kept, GradientQuantiser, QuantiserSums};
use crate::reduce;

/// The block this thread's warp sums, if any.
#[inline(always)]
fn warp_block(n: u64) -> Option<usize> {
    let block = (global_thread() / arch::WARP_SIZE as u64) as usize;
    (block < reduce::blocks(n as usize)).then_some(block)
}

/// `block_sums[b]`: block `b`'s [`QuantiserSums`] of the `n` gradients; and, when `kept_counts` is
/// not null, `kept_counts[b]`: how many of the block's gradients [`is_kept`].
///
/// # Safety
/// `gradients` holds `n` pairs and `block_sums` (and `kept_counts` when given) room for
/// `n.div_ceil(SUM_BLOCK)` values; the grid has whole warps.
pub unsafe fn sums_kernel(
    gradients: *const GradientPair<f32>,
    n: u64,
    block_sums: *mut QuantiserSums,
    kept_counts: *mut u32,
) {
    let Some(block) = warp_block(n) else {
        return;
    };
    let mut kept = 0u32;
    let sum = reduce::warp_block_sum(n as usize, block, |i| {
        // SAFETY: `lane_partial` reads only indices below `n`.
        let g = unsafe { arch::load(gradients.add(i)) };
        kept += u32::from(is_kept(g));
        QuantiserSums::of(g)
    });
    let kept = reduce::warp_sum(kept);
    if arch::lane_id() == 0 {
        // SAFETY: `block` is below the block count.
        unsafe {
            arch::store(block_sums.add(block), sum);
            if !kept_counts.is_null() {
                arch::store(kept_counts.add(block), kept);
            }
        }
    }
}

/// The rows whose gradient [`is_kept`], compacted in row order: block `b`'s from `offsets[b]` (the
/// kept rows of the blocks before it), `rows[k]` the row and `fixed[k]` its gradient in fixed
/// point; `block_totals[b]`: the block's sum of them.
///
/// # Safety
/// `gradients` holds `n` pairs, `offsets` and `block_totals` a value per block (the offsets those
/// the counts of [`sums_kernel`] give), `rows` and `fixed` room for every kept row; whole warps.
pub unsafe fn kept_kernel(
    gradients: *const GradientPair<f32>,
    n: u64,
    quantiser: *const GradientQuantiser,
    offsets: *const u32,
    rows: *mut u32,
    fixed: *mut GradientPair<i64>,
    block_totals: *mut GradientPair<i64>,
) {
    let Some(block) = warp_block(n) else {
        return;
    };
    let lane = arch::lane_id();
    let below = (1u32 << lane) - 1;
    // SAFETY: one quantiser; `block` is below the block count.
    let (quantiser, mut at) = unsafe { (arch::load(quantiser), arch::load(offsets.add(block))) };
    let end = ((block + 1) * reduce::SUM_BLOCK).min(n as usize);
    let mut sum = GradientPair::new(0i64, 0i64);
    let mut first = block * reduce::SUM_BLOCK;
    // Every lane takes every step (the ballot needs the whole warp); a step is 32 rows.
    while first < end {
        let row = first + lane as usize;
        // SAFETY: `row < n`.
        let g = (row < end).then(|| unsafe { arch::load(gradients.add(row)) });
        let keep = g.is_some_and(is_kept);
        let mask = arch::ballot_sync(arch::FULL_MASK, keep);
        if let (true, Some(g)) = (keep, g) {
            let value = quantiser.to_fixed(g);
            let k = (at + (mask & below).count_ones()) as usize;
            // SAFETY: `k` is below the kept rows' count (the offsets and counts agree).
            unsafe {
                arch::store(rows.add(k), row as u32);
                arch::store(fixed.add(k), value);
            }
            sum = crate::fixed_point::add(sum, value);
        }
        at += mask.count_ones();
        first += arch::WARP_SIZE as usize;
    }
    let sum = reduce::warp_sum(sum);
    if arch::lane_id() == 0 {
        // SAFETY: `block` is below the block count.
        unsafe { arch::store(block_totals.add(block), sum) };
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
